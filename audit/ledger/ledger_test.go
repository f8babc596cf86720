package ledger_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

var (
	testNow = time.UnixMilli(1_700_000_000_000)
	tp      = audit.TopicPartition{Topic: "t", Partition: 0}
)

func newMem() *fakeapp.Memory {
	m := fakeapp.NewMemory(testNow)
	m.AddTopic(audit.TopicInfo{Name: "t", Partitions: 1})
	return m
}

func TestFates(t *testing.T) {
	for _, tt := range []struct {
		name      string
		compacted bool
		// starts are the coordinator's start times of the open
		// transactions, by producer id (Options.TxnStarts)
		starts  map[int64]int64
		write   func(m *fakeapp.Memory, w *fakeapp.PartitionWriter)
		want    audit.FateCounts
		txns    audit.TxnCounts
		causes  []audit.Cause
		yielded []audit.Fate // fates Walk yields, in offset order
	}{
		{
			name: "plain",
			write: func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Plain(fakeapp.KVs(3)...)
			},
			want:    audit.FateCounts{Committed: 3},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateCommitted, audit.FateCommitted},
		},
		{
			name: "committed and aborted interleaved producers",
			write: func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Txn(1, 0, fakeapp.KVs(2)...) // 0,1
				w.Txn(2, 0, fakeapp.KVs(1)...) // 2
				w.Plain(fakeapp.KVs(1)...)     // 3
				w.Txn(1, 0, fakeapp.KVs(1)...) // 4
				w.Marker(2, 0, false)          // 5 abort 2
				w.Marker(1, 0, true)           // 6 commit 1
			},
			want: audit.FateCounts{Committed: 4, Aborted: 1, Marker: 2},
			txns: audit.TxnCounts{Committed: 1, Aborted: 1},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateCommitted, audit.FateAborted,
				audit.FateCommitted, audit.FateCommitted},
		},
		{
			name: "epoch bump per transaction",
			write: func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Txn(7, 0, fakeapp.KVs(1)...)
				w.Marker(7, 1, true)
				w.Txn(7, 1, fakeapp.KVs(1)...)
				w.Marker(7, 2, false)
			},
			want:    audit.FateCounts{Committed: 1, Aborted: 1, Marker: 2},
			txns:    audit.TxnCounts{Committed: 1, Aborted: 1},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateAborted},
		},
		{
			name:   "open transaction at the end holds the LSO",
			starts: map[int64]int64{3: testNow.Add(-time.Hour).UnixMilli()},
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Plain(fakeapp.KVs(1)...)     // 0
				w.Txn(3, 0, fakeapp.KVs(2)...) // 1,2 open
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 0, LSO: 1, HW: 3})
			},
			want:    audit.FateCounts{Committed: 1, Open: 2},
			txns:    audit.TxnCounts{Open: 1},
			causes:  []audit.Cause{audit.CauseHangingTransaction},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateOpen, audit.FateOpen},
		},
		{
			// a running app's transaction of records whose event times are an
			// hour old: its coordinator says it began a second ago
			name:   "open transaction of old event times, begun now",
			starts: map[int64]int64{3: testNow.Add(-time.Second).UnixMilli()},
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Plain(fakeapp.KVs(1)...)
				w.Txn(3, 0, fakeapp.KVs(2)...)
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 0, LSO: 1, HW: 3})
			},
			want:    audit.FateCounts{Committed: 1, Open: 2},
			txns:    audit.TxnCounts{Open: 1},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateOpen, audit.FateOpen},
		},
		{
			// no coordinator start: the records' timestamps are event times,
			// no age
			name: "open transaction whose start is not known",
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Plain(fakeapp.KVs(1)...)
				w.Txn(3, 0, fakeapp.KVs(2)...)
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 0, LSO: 1, HW: 3})
			},
			want:    audit.FateCounts{Committed: 1, Open: 2},
			txns:    audit.TxnCounts{Open: 1},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateOpen, audit.FateOpen},
		},
		{
			name: "data with no marker below the LSO",
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Txn(3, 0, fakeapp.KVs(2)...)
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 0, LSO: 2, HW: 2})
			},
			want:    audit.FateCounts{Committed: 2},
			txns:    audit.TxnCounts{Committed: 1},
			causes:  []audit.Cause{audit.CauseTransactionInconsistent},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateCommitted},
		},
		{
			name: "purged and gap",
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Skip(4)
				w.Plain(fakeapp.KVs(2)...) // 4,5
				w.Skip(3)                  // 6,7,8 gap
				w.Plain(fakeapp.KVs(1)...) // 9
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 4, LSO: 10, HW: 10})
			},
			want:    audit.FateCounts{Committed: 3, Purged: 4, Gap: 3},
			causes:  []audit.Cause{audit.CauseOffsetGap},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateCommitted, audit.FateCommitted},
		},
		{
			name:      "compacted",
			compacted: true,
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Plain(fakeapp.KVs(1)...)
				w.Skip(3)
				w.Plain(fakeapp.KVs(1)...)
			},
			want:    audit.FateCounts{Committed: 2, Compacted: 3},
			yielded: []audit.Fate{audit.FateCommitted, audit.FateCommitted},
		},
		{
			name: "commit marker with no data",
			write: func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Marker(9, 0, true)
				w.Marker(8, 0, false) // an abort of nothing is normal
			},
			want:   audit.FateCounts{Marker: 2},
			txns:   audit.TxnCounts{Committed: 1, Aborted: 1},
			causes: []audit.Cause{audit.CauseTransactionInconsistent},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, buffer := range []int{0, 1} { // 1 forces the second read
				m := newMem()
				w := m.Writer(tp, testNow.Add(-time.Hour).UnixMilli())
				tt.write(m, w)
				var l *ledger.Ledger
				var got []audit.Fate
				var last int64 = -1
				opts := ledger.Options{Compacted: tt.compacted, MaxTxnTimeout: 15 * time.Minute, Now: testNow, Buffer: buffer, TxnStarts: tt.starts}
				for e, err := range ledger.Walk(t.Context(), m, tp, opts, &l) {
					if err != nil {
						t.Fatal(err)
					}
					if e.Record.Offset <= last {
						t.Fatalf("buffer %d: offset %d after %d", buffer, e.Record.Offset, last)
					}
					last = e.Record.Offset
					got = append(got, e.Fate)
				}
				if l.Counts != tt.want {
					t.Errorf("buffer %d: counts %+v, want %+v", buffer, l.Counts, tt.want)
				}
				if l.Counts.Total() != l.Offsets.HW {
					t.Errorf("buffer %d: %d offsets classified, HW %d", buffer, l.Counts.Total(), l.Offsets.HW)
				}
				if s := l.Summary(opts); s.Transactions != tt.txns {
					t.Errorf("buffer %d: txns %+v, want %+v", buffer, s.Transactions, tt.txns)
				}
				if !equalFates(got, tt.yielded) {
					t.Errorf("buffer %d: yielded %v, want %v", buffer, got, tt.yielded)
				}
				var causes []audit.Cause
				for _, f := range l.Findings {
					causes = append(causes, f.Cause)
				}
				if len(causes) != len(tt.causes) || (len(causes) > 0 && causes[0] != tt.causes[0]) {
					t.Errorf("buffer %d: findings %v, want %v", buffer, l.Findings, tt.causes)
				}
				for o := int64(0); o < l.Offsets.HW; o++ {
					_ = l.Fate(o) // every offset has a fate
				}
			}
		})
	}
}

func equalFates(a, b []audit.Fate) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// brokerView is a source whose read_committed view can be made to lie.
type brokerView struct {
	*fakeapp.Memory
	hide int64
}

func (b brokerView) ReadCommitted(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		for r, err := range b.Records(ctx, tp, from, to) {
			if err != nil || r.Offset == b.hide || r.Batch.Transactional {
				if err != nil {
					yield(r, err)
					return
				}
				continue
			}
			if !yield(r, nil) {
				return
			}
		}
	}
}

func TestCrossCheck(t *testing.T) {
	m := newMem()
	w := m.Writer(tp, 0)
	w.Plain(fakeapp.KVs(5)...)
	opts := ledger.Options{CrossCheck: true}
	l, err := ledger.Build(t.Context(), brokerView{Memory: m, hide: -1}, tp, opts)
	if err != nil || len(l.Findings) != 0 {
		t.Fatalf("agreeing views: %v %v", err, l.Findings)
	}
	l, err = ledger.Build(t.Context(), brokerView{Memory: m, hide: 2}, tp, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Findings) != 1 || l.Findings[0].Cause != audit.CauseTransactionInconsistent || l.Findings[0].Offset != 2 {
		t.Fatalf("hidden offset 2: findings %+v", l.Findings)
	}
}
