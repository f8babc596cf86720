package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

// TestLedgerDoneWhen: a 3-partition topic holding 1,000 transactional
// records in 40 transactions (7 aborted, 1 left open) plus 30
// non-transactional records; kaudit ledger --format json reports exactly
// those counts per partition and fate, and names the open transaction's
// producer.
func TestLedgerDoneWhen(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	ctx := t.Context()
	type want struct{ committed, aborted, open, markers, plain int64 }
	per := map[int32]*want{0: {}, 1: {}, 2: {}}
	var openPID int64 = -1
	for i := range 40 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(fmt.Sprintf("tx-%d", i)),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("events"))
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		touched := map[int32]bool{}
		for j := range 25 {
			p := int32((i + j) % 3)
			touched[p] = true
			r := &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("%d-%d", i, j))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if i == 39 {
				openPID = r.ProducerID
			}
		}
		for p := range touched {
			switch {
			case i == 39:
				per[p].open += int64(countFor(i, p))
			case i%6 == 5: // 5, 11, 17, 23, 29, 35: six aborted
				per[p].aborted += int64(countFor(i, p))
				per[p].markers++
			case i == 38: // the seventh
				per[p].aborted += int64(countFor(i, p))
				per[p].markers++
			default:
				per[p].committed += int64(countFor(i, p))
				per[p].markers++
			}
		}
		switch {
		case i == 39:
			// left open: the client stays alive until the audit is done
			defer cl.Close()
			continue
		case i%6 == 5 || i == 38:
			err = cl.EndTransaction(ctx, kgo.TryAbort)
		default:
			err = cl.EndTransaction(ctx, kgo.TryCommit)
		}
		if err != nil {
			t.Fatal(err)
		}
		cl.Close()
	}
	plain, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("events"))
	if err != nil {
		t.Fatal(err)
	}
	for j := range 30 {
		p := int32(j % 3)
		if err := plain.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("plain")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		per[p].plain++
	}
	plain.Close()

	out, errOut, code := runCLI(t, "ledger", "--bootstrap-server", addr, "--topic", "events", "--format", "json")
	if code != exitFindings { // the open transaction is young: no hanging finding, but…
		t.Logf("exit %d: %s", code, errOut)
	}
	var doc audit.TopicLedger
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("parse %q: %v", out, err)
	}
	var total, txnsC, txnsA, txnsO int64
	for _, pl := range doc.Partitions {
		w := per[pl.Partition]
		f := pl.Fates
		// plain records land after the open transaction: committed (they
		// are not transactional), though beyond the LSO
		if f.Committed != w.committed+w.plain || f.Aborted != w.aborted || f.Open != w.open || f.Marker != w.markers ||
			f.Purged != 0 || f.Compacted != 0 || f.Gap != 0 {
			t.Errorf("partition %d: fates %+v, want committed %d aborted %d open %d markers %d", pl.Partition, f, w.committed+w.plain, w.aborted, w.open, w.markers)
		}
		if f.Total() != pl.HW {
			t.Errorf("partition %d: %d offsets classified, HW %d", pl.Partition, f.Total(), pl.HW)
		}
		total += f.Committed + f.Aborted + f.Open
		txnsC += pl.Transactions.Committed
		txnsA += pl.Transactions.Aborted
		txnsO += pl.Transactions.Open
		for _, fd := range pl.Findings {
			if fd.Cause != audit.CauseHangingTransaction {
				t.Errorf("partition %d: unexpected finding %+v", pl.Partition, fd)
			}
		}
	}
	if total != 1030 {
		t.Errorf("%d data records classified, want 1030", total)
	}
	if txnsO != 3 || txnsA != 7*3 || txnsC != 32*3 {
		t.Errorf("transactions per partition summed: committed %d aborted %d open %d, want 96, 21, 3", txnsC, txnsA, txnsO)
	}
	// The open transaction's producer is named.
	var named bool
	for _, pl := range doc.Partitions {
		for _, tx := range pl.Txns {
			if tx.Outcome == audit.OutcomeOpen && tx.ProducerID == openPID {
				named = true
			}
		}
	}
	if !named {
		t.Errorf("the open transaction's producer %d is not named in %s", openPID, strings.TrimSpace(out)[:min(len(out), 400)])
	}
}

// countFor is how many of transaction i's 25 records go to partition p.
func countFor(i int, p int32) int {
	n := 0
	for j := range 25 {
		if int32((i+j)%3) == p {
			n++
		}
	}
	return n
}
