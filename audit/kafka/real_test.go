package kafka

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// TestRealCompaction lets a real broker's log cleaner compact a topic that
// holds aborted transactions (KAUDIT_TEST_BROKERS; about 30 s): the cleaner
// removes the aborted data and superseded keys but keeps batches, emptied,
// where producer state needs them. Records must step over them.
func TestRealCompaction(t *testing.T) {
	brokers := os.Getenv("KAUDIT_TEST_BROKERS")
	if brokers == "" {
		t.Skip("KAUDIT_TEST_BROKERS is not set")
	}
	seeds := strings.Split(brokers, ",")
	topic := fmt.Sprint("kaudit-real-cmp-", time.Now().UnixNano())
	p, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.TransactionalID(topic+"-0"), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := func(s string) *string { return &s }
	createTopic(t, p, topic, 1, map[string]*string{
		"cleanup.policy": cfg("compact"), "segment.ms": cfg("100"), "min.cleanable.dirty.ratio": cfg("0.001"),
		"delete.retention.ms": cfg("0"), "min.compaction.lag.ms": cfg("0"), "segment.bytes": cfg("1024"),
	})
	txn := func(commit kgo.TransactionEndTry, kvs ...string) {
		begin(t, p)
		produce(t, p, topic, 0, kvs...)
		end(t, p, commit)
	}
	// An idempotent producer whose only batch a later record supersedes:
	// the cleaner keeps that batch, emptied, to keep the producer's state.
	idem, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	produce(t, idem, topic, 0, "k5", "only")
	txn(kgo.TryCommit, "k1", "a", "k2", "b", "k5", "newer")
	txn(kgo.TryAbort, "k1", "x", "k3", "y")
	txn(kgo.TryCommit, "k1", "c")
	for i := range 30 { // roll segments so the cleaner may clean the first ones
		txn(kgo.TryCommit, "k9", fmt.Sprint(i))
		time.Sleep(20 * time.Millisecond)
	}

	s, err := Open(t.Context(), Config{Bootstrap: seeds, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := audit.TopicPartition{Topic: topic}
	deadline := time.Now().Add(60 * time.Second)
	for {
		recs := collect(t, s.Records(t.Context(), tp, 0, -1))
		var keys []string
		for _, r := range recs {
			if !r.IsControl() {
				keys = append(keys, string(r.Key))
			}
		}
		if !slices.Contains(keys, "k3") && len(keys) > 1 && keys[0] == "k2" && keys[1] == "k5" {
			t.Logf("compacted after %s: %d records, keys %v", 60*time.Second-time.Until(deadline), len(recs), keys)
			// Count emptied batches in the raw log.
			li, err := s.leaderOf(t.Context(), tp)
			if err != nil {
				t.Fatal(err)
			}
			empty, all, fetches := 0, 0, 0
			for off := int64(0); fetches < 100; fetches++ {
				rp, err := s.fetch(t.Context(), tp, li, off, false, fetchMaxWait)
				if err != nil {
					t.Fatal(err)
				}
				if off >= rp.HighWatermark {
					break
				}
				b := rp.RecordBatches
				for len(b) >= 12 {
					var rb kmsg.RecordBatch
					n := 12 + int(int32(uint32(b[8])<<24|uint32(b[9])<<16|uint32(b[10])<<8|uint32(b[11])))
					if n > len(b) || rb.ReadFrom(b[:n]) != nil {
						break
					}
					all++
					if rb.NumRecords == 0 {
						empty++
					}
					off = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
					b = b[n:]
				}
			}
			t.Logf("raw log: %d batches in %d fetches, %d empty", all, fetches, empty)
			if empty == 0 {
				t.Error("the cleaner left no emptied batch: the test did not exercise what it is for")
			}
			if recs[0].Offset != 2 {
				t.Errorf("first record at %d, want 2 (offset 0 emptied, 1 superseded)", recs[0].Offset)
			}
			if got := offsetsOf(recs); !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
				t.Errorf("offsets not strictly increasing: %v", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Skipf("the log cleaner did not run within 60 s; keys %v", keys)
		}
		time.Sleep(2 * time.Second)
	}
}
