package kafka

import (
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

// BenchmarkRecords reads one partition of 200,000 records of 100 bytes
// (written in batches of about 1,000) through kfake on loopback.
func BenchmarkRecords(b *testing.B) {
	c := newCluster(b)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	createTopic(b, cl, "bench", 1, nil)
	const n = 200_000
	val := make([]byte, 100)
	for i := 0; i < n; i += 1000 {
		rs := make([]*kgo.Record, 1000)
		for j := range rs {
			rs[j] = &kgo.Record{Topic: "bench", Key: []byte(strconv.Itoa(i + j)), Value: val}
		}
		if err := cl.ProduceSync(b.Context(), rs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
	s, err := Open(b.Context(), Config{Bootstrap: c.ListenAddrs(), Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for b.Loop() {
		got := 0
		for _, err := range s.Records(b.Context(), audit.TopicPartition{Topic: "bench"}, 0, -1) {
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != n {
			b.Fatalf("read %d records, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
