package segment

import (
	"fmt"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// BenchmarkGroupLog replays a __consumer_offsets partition of 100,000
// offset commits (batches of 10, 50 groups, each committing 10 of 20 partitions, the
// shape of a busy coordinator) for one group.
func BenchmarkGroupLog(b *testing.B) {
	root := b.TempDir()
	tp := audit.TopicPartition{Topic: ConsumerOffsetsTopic, Partition: 0}
	var recs []audit.Record
	for i := range int64(100_000) {
		base := i - i%10
		g := fmt.Sprintf("group-%d", (i/10)%50)
		recs = append(recs, audit.Record{Topic: tp.Topic, Offset: i, Key: offsetKey(1, g, "orders-v1", int32(i%20)),
			Value: offsetValue(3, i, "{\"partitionTime\":1700000000000}"), Timestamp: 1_700_000_000_000 + i,
			Batch: audit.Batch{BaseOffset: base, LastOffsetDelta: 9, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1,
				MaxTimestamp: 1_700_000_000_000 + base + 9, Compression: "none"}})
	}
	writeLogDir(b, root, recs)
	d := mustOpen(b, root)
	b.ResetTimer()
	for range b.N {
		gl, err := d.GroupLog(b.Context(), "group-7")
		if err != nil || len(gl.Offsets) != 10 {
			b.Fatalf("%+v, %v", gl.Offsets, err)
		}
	}
	b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
}
