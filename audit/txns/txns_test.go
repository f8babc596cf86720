package txns

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/golden"
)

var txnsTestNow = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return txnsTestNow.Add(-d).UnixMilli() }

// txnsMemory is an app "shop" with:
//
//	shop-0_0: open 20 minutes on shop-repartition/0 and out/0 (hanging: timeout)
//	shop-0_1: open 1 minute on shop-repartition/1 (fine)
//	shop-1_0: complete, yet shop-store-changelog/0 holds its producer's
//	          transaction open (hanging: KIP-664, coordinator state)
//	a producer with no transactional id holding orders/0 open (KIP-664)
//	an idempotent producer on orders/1 with nothing open
func txnsMemory() *fakeapp.Memory {
	m := fakeapp.NewMemory(txnsTestNow)
	for _, ti := range []audit.TopicInfo{
		{Name: "orders", Partitions: 2, ReplicationFactor: 3},
		{Name: "out", Partitions: 1, ReplicationFactor: 3},
		{Name: "unrelated", Partitions: 1, ReplicationFactor: 3},
		{Name: "shop-repartition", Partitions: 2, ReplicationFactor: 3},
		{Name: "shop-store-changelog", Partitions: 1, ReplicationFactor: 3},
	} {
		m.AddTopic(ti)
	}
	m.SetGroup(audit.GroupOffsets{Group: "shop", State: "Stable", Members: 2, Offsets: map[audit.TopicPartition]int64{
		{Topic: "orders", Partition: 0}: 40, {Topic: "orders", Partition: 1}: 7,
		{Topic: "shop-repartition", Partition: 0}: 9, {Topic: "shop-repartition", Partition: 1}: 3,
	}})
	rep0, rep1 := audit.TopicPartition{Topic: "shop-repartition", Partition: 0}, audit.TopicPartition{Topic: "shop-repartition", Partition: 1}
	out0, cl0 := audit.TopicPartition{Topic: "out", Partition: 0}, audit.TopicPartition{Topic: "shop-store-changelog", Partition: 0}
	m.SetTransactions([]audit.Transaction{
		{TransactionalID: "shop-0_0", State: "Ongoing", ProducerID: 100, ProducerEpoch: 4, TimeoutMillis: 60000,
			StartTimestamp: ms(20 * time.Minute), Partitions: []audit.TopicPartition{out0, rep0}},
		{TransactionalID: "shop-0_1", State: "Ongoing", ProducerID: 101, ProducerEpoch: 2, TimeoutMillis: 60000,
			StartTimestamp: ms(time.Minute), Partitions: []audit.TopicPartition{rep1}},
		{TransactionalID: "shop-1_0", State: "CompleteCommit", ProducerID: 102, ProducerEpoch: 7, TimeoutMillis: 60000, StartTimestamp: -1},
		{TransactionalID: "other-0", State: "Empty", ProducerID: 300, ProducerEpoch: 0, TimeoutMillis: 60000, StartTimestamp: -1},
	})
	m.SetProducers(rep0, []audit.Producer{{ProducerID: 100, ProducerEpoch: 4, LastSequence: 12, LastTimestamp: ms(19 * time.Minute), CoordinatorEpoch: 1, CurrentTxnStartOffset: 10}})
	m.SetProducers(rep1, []audit.Producer{{ProducerID: 101, ProducerEpoch: 2, LastSequence: 3, LastTimestamp: ms(50 * time.Second), CoordinatorEpoch: 1, CurrentTxnStartOffset: 4}})
	m.SetProducers(out0, []audit.Producer{{ProducerID: 100, ProducerEpoch: 4, LastSequence: 0, LastTimestamp: ms(19 * time.Minute), CoordinatorEpoch: 1, CurrentTxnStartOffset: 5}})
	m.SetProducers(cl0, []audit.Producer{{ProducerID: 102, ProducerEpoch: 7, LastSequence: 8, LastTimestamp: ms(2 * time.Minute), CoordinatorEpoch: 1, CurrentTxnStartOffset: 77}})
	m.SetProducers(audit.TopicPartition{Topic: "orders", Partition: 0}, []audit.Producer{{ProducerID: 200, ProducerEpoch: 0, LastSequence: 5, LastTimestamp: ms(3 * time.Hour), CoordinatorEpoch: 0, CurrentTxnStartOffset: 41}})
	m.SetProducers(audit.TopicPartition{Topic: "orders", Partition: 1}, []audit.Producer{{ProducerID: 201, ProducerEpoch: 0, LastSequence: 99, LastTimestamp: ms(time.Hour), CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}})
	m.SetProducers(audit.TopicPartition{Topic: "unrelated", Partition: 0}, []audit.Producer{{ProducerID: 999, CurrentTxnStartOffset: 1}})
	return m
}

// TestGolden is the census of the fixture as kaudit txns --format json
// writes it.
func TestGolden(t *testing.T) {
	c, err := Audit(t.Context(), txnsMemory(), Options{AppID: "shop", MaxTxnTimeout: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "shop.json"), append(b, '\n'))
}

func TestTxnsFindings(t *testing.T) {
	doc, err := Audit(t.Context(), txnsMemory(), Options{AppID: "shop", MaxTxnTimeout: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		where string
		id    string
	}
	got := map[key]string{}
	for _, f := range doc.Findings {
		if f.Stage != audit.StageTransactions || f.Cause != audit.CauseHangingTransaction || f.Severity != audit.SeverityAnomaly {
			t.Errorf("finding %+v", f)
		}
		got[key{audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}.String() + "@" + itoa(f.Offset), f.TransactionalID}] = f.Detail
	}
	want := map[key]string{
		{"shop-repartition/0@10", "shop-0_0"}:     "open for 20m0s, longer than --max-transaction-timeout 15m0s",
		{"out/0@5", "shop-0_0"}:                   "open for 20m0s",
		{"shop-store-changelog/0@77", "shop-1_0"}: "the coordinator's transaction is CompleteCommit (KIP-664)",
		{"orders/0@41", ""}:                       "no transaction of this producer id on the coordinator (KIP-664)",
	}
	for k, sub := range want {
		if d, ok := got[k]; !ok || !strings.Contains(d, sub) {
			t.Errorf("finding %v: detail %q, want one containing %q", k, d, sub)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings = %v, want %d", got, len(want))
	}
	if doc.Verdict != audit.VerdictAnomaly || len(doc.Open) != 5 {
		t.Errorf("verdict %s, %d open, want anomaly and 5", doc.Verdict, len(doc.Open))
	}

	t.Run("longer timeout", func(t *testing.T) {
		doc, err := Audit(t.Context(), txnsMemory(), Options{AppID: "shop", MaxTxnTimeout: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Findings) != 2 {
			t.Errorf("findings = %+v, want only the two KIP-664 ones", doc.Findings)
		}
	})
	t.Run("coordinator-only timeout", func(t *testing.T) {
		// No producer state anywhere: the coordinator's start time alone
		// shows shop-0_0 hanging, on each partition it holds.
		m := txnsMemory()
		for _, tp := range []audit.TopicPartition{{Topic: "shop-repartition"}, {Topic: "out"}} {
			m.SetProducers(tp, nil)
		}
		doc, err := Audit(t.Context(), m, Options{AppID: "shop", MaxTxnTimeout: 15 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range doc.Findings {
			if f.TransactionalID == "shop-0_0" {
				n++
				if f.Offset != -1 || !strings.Contains(f.Detail, "coordinator's transaction has been open for 20m0s") {
					t.Errorf("finding %+v", f)
				}
			}
		}
		if n != 2 {
			t.Errorf("%d findings for shop-0_0, want 2 (out/0, shop-repartition/0)", n)
		}
	})
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }
