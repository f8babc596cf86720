package segment

import (
	"fmt"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// BenchmarkRecords reads a 100,000-record partition (batches of 100
// records of ~100 bytes) written with codec c.
func BenchmarkRecords(b *testing.B) {
	for _, c := range []string{"none", "zstd"} {
		b.Run(c, func(b *testing.B) {
			root := b.TempDir()
			tp := audit.TopicPartition{Topic: "bench", Partition: 0}
			var recs []audit.Record
			for i := range int64(100_000) {
				base := i - i%100
				recs = append(recs, audit.Record{Topic: tp.Topic, Offset: i, Key: []byte(fmt.Sprintf("key-%d", i%977)),
					Value:     []byte(fmt.Sprintf(`{"orderId":"o-%d","amount":%d,"note":"some text to make it longer"}`, i, i%1000)),
					Timestamp: 1_700_000_000_000 + i,
					Batch: audit.Batch{BaseOffset: base, LastOffsetDelta: 99, ProducerID: 7, BaseSequence: int32(base),
						MaxTimestamp: 1_700_000_000_000 + base + 99, Compression: c}})
			}
			writeLogDir(b, root, recs, 50_000)
			d := mustOpen(b, root)
			b.ResetTimer()
			for range b.N {
				n := 0
				for _, err := range d.Records(b.Context(), tp, 0, -1) {
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != len(recs) {
					b.Fatalf("%d records", n)
				}
			}
			b.ReportMetric(float64(len(recs)*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
