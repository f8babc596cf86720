package kafka

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
)

// benchRecords is the size of the benchmarks' partition: records of 100
// bytes, written in batches of about 1,000.
const benchRecords = 200_000

// fillBench writes benchRecords records to partition 0 of topic through a
// new client. With txnID set, every 1,000 records are one transaction and
// every fifth transaction aborts. opts add to the writer's options.
func fillBench(b *testing.B, c *kfake.Cluster, topic, txnID string, opts ...kgo.Opt) {
	opts = append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.ProducerBatchMaxBytes(1 << 20)}, opts...)
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	createTopic(b, cl, topic, 1, nil)
	val := make([]byte, 100)
	for i := 0; i < benchRecords; i += 1000 {
		rs := make([]*kgo.Record, 1000)
		for j := range rs {
			rs[j] = &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i + j)), Value: val}
		}
		if txnID != "" {
			if err := cl.BeginTransaction(); err != nil {
				b.Fatal(err)
			}
		}
		if err := cl.ProduceSync(b.Context(), rs...).FirstErr(); err != nil {
			b.Fatal(err)
		}
		if txnID != "" {
			if err := cl.EndTransaction(b.Context(), kgo.TransactionEndTry(i/1000%5 != 4)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// countFetches counts the Fetch requests c serves, and those of them that
// are read_committed.
func countFetches(c *kfake.Cluster) (fetches, committed *atomic.Int64) {
	fetches, committed = new(atomic.Int64), new(atomic.Int64)
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		fetches.Add(1)
		if req.(*kmsg.FetchRequest).IsolationLevel == 1 {
			committed.Add(1)
		}
		return nil, nil, false
	})
	return fetches, committed
}

// BenchmarkRecords reads one partition of 200,000 records of 100 bytes
// (written in batches of about 1,000) through kfake on loopback.
func BenchmarkRecords(b *testing.B) {
	c := newCluster(b)
	fillBench(b, c, "bench", "")
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
		if got != benchRecords {
			b.Fatalf("read %d records, want %d", got, benchRecords)
		}
	}
	b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkLedger builds the ledger of one partition of 200,000
// transactional records (200 transactions, every fifth aborted; batches
// uncompressed, about 23 MB) as `kaudit ledger` does, with and without the
// cross-check against the broker's read_committed view, and reports the
// Fetch requests each costs.
func BenchmarkLedger(b *testing.B) {
	c := newCluster(b)
	fillBench(b, c, "bench", "bench-0", kgo.ProducerBatchCompression(kgo.NoCompression()))
	s, err := Open(b.Context(), Config{Bootstrap: c.ListenAddrs(), Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fetches, committed := countFetches(c)
	tp := audit.TopicPartition{Topic: "bench"}
	for _, cross := range []bool{true, false} {
		name := "cross-check"
		if !cross {
			name = "no-cross-check"
		}
		b.Run(name, func(b *testing.B) {
			fetches.Store(0)
			committed.Store(0)
			for b.Loop() {
				l, err := ledger.Build(b.Context(), s, tp, ledger.Options{CrossCheck: cross})
				if err != nil {
					b.Fatal(err)
				}
				if l.Counts.Committed+l.Counts.Aborted != benchRecords || len(l.Findings) != 0 {
					b.Fatalf("counts %+v, findings %v", l.Counts, l.Findings)
				}
			}
			b.ReportMetric(float64(benchRecords)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(fetches.Load())/float64(b.N), "fetches/op")
			b.ReportMetric(float64(committed.Load())/float64(b.N), "committed-fetches/op")
		})
	}
}
