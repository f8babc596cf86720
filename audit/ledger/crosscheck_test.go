package ledger_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// reads counts how a source was read.
type reads struct{ raw, indexed, committed int }

// indexedBroker reports the broker's read_committed view with its reads,
// as a live cluster does (audit.IndexedReader); view is what it reports.
type indexedBroker struct {
	*fakeapp.Memory
	view audit.CommittedIndex
	n    *reads
}

func (b indexedBroker) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	b.n.raw++
	return b.Memory.Records(ctx, tp, from, to)
}

func (b indexedBroker) RecordsIndexed(ctx context.Context, tp audit.TopicPartition, from, to int64, idx *audit.CommittedIndex) iter.Seq2[audit.Record, error] {
	b.n.indexed++
	*idx = audit.CommittedIndex{LSO: b.view.LSO, Aborted: slices.Clone(b.view.Aborted)}
	return b.Memory.Records(ctx, tp, from, to)
}

func (b indexedBroker) ReadCommitted(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	b.n.committed++
	return consumer(b.Memory.Records(ctx, tp, from, min(to, b.view.LSO)), b.view)
}

// committedBroker can only be read a second time through the broker's
// filtering (audit.CommittedReader), which it does as a read_committed
// consumer does with view.
type committedBroker struct {
	*fakeapp.Memory
	view audit.CommittedIndex
	n    *reads
}

func (b committedBroker) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	b.n.raw++
	return b.Memory.Records(ctx, tp, from, to)
}

func (b committedBroker) ReadCommitted(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	b.n.committed++
	return consumer(b.Memory.Records(ctx, tp, from, min(to, b.view.LSO)), b.view)
}

// consumer filters raw records as franz-go and the Java client do under
// read_committed: a transactional batch of a producer is dropped from the
// first offset of one of its listed aborted transactions on, and an ABORT
// marker of a dropped batch ends that transaction; control records are
// never returned.
func consumer(raw iter.Seq2[audit.Record, error], view audit.CommittedIndex) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		aborts := map[int64][]int64{}
		for _, a := range view.Aborted {
			aborts[a.ProducerID] = append(aborts[a.ProducerID], a.FirstOffset)
		}
		for _, fs := range aborts {
			slices.Sort(fs)
		}
		for r, err := range raw {
			if err != nil {
				yield(r, err)
				return
			}
			b := r.Batch
			fs := aborts[b.ProducerID]
			dropped := b.Transactional && len(fs) > 0 && fs[0] <= b.BaseOffset
			if b.Control {
				if dropped && r.Marker != nil && r.Marker.Type == audit.MarkerAbort {
					aborts[b.ProducerID] = fs[1:]
				}
				continue
			}
			if !dropped && !yield(r, nil) {
				return
			}
		}
	}
}

// TestCrossCheckIndex checks the comparison with the broker's
// read_committed view as its LSO and aborted-transaction index define it,
// and that it finds what a second read through the broker's filtering
// finds, without that read.
func TestCrossCheckIndex(t *testing.T) {
	// the log most cases share:
	//
	//	0-1 producer 1, committed (COMMIT at 2)
	//	3   plain
	//	4,5 producer 2 in two batches, aborted (ABORT at 6)
	//	7-8 producer 1, committed (COMMIT at 9)
	//	10  plain
	shared := func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
		w.Txn(1, 0, fakeapp.KVs(2)...)
		w.Marker(1, 0, true)
		w.Plain(fakeapp.KVs(1)...)
		w.Txn(2, 0, fakeapp.KVs(1)...)
		w.Txn(2, 0, fakeapp.KVs(1)...)
		w.Marker(2, 0, false)
		w.Txn(1, 0, fakeapp.KVs(2)...)
		w.Marker(1, 0, true)
		w.Plain(fakeapp.KVs(1)...)
	}
	for _, tt := range []struct {
		name    string
		write   func(m *fakeapp.Memory, w *fakeapp.PartitionWriter)
		lso     int64 // the broker's
		aborted []audit.AbortedTxn
		// the disagreement: 0, 0 when the views agree
		extra, hidden, first int64
		why                  string // the reason the detail names
	}{
		{name: "agrees", write: shared, lso: 11, aborted: []audit.AbortedTxn{{ProducerID: 2, FirstOffset: 4}}},
		{
			name: "index lost an aborted transaction", write: shared, lso: 11,
			extra: 2, first: 4,
			why: "producer 2's transaction from offset 4 is aborted by the markers (ABORT at 6) and not in the broker's aborted-transaction index",
		},
		{
			name: "index aborts a committed transaction", write: shared, lso: 11,
			aborted: []audit.AbortedTxn{{ProducerID: 2, FirstOffset: 4}, {ProducerID: 1, FirstOffset: 7}},
			hidden:  2, first: 7,
			why: "the broker's aborted-transaction index lists producer 1's transaction from offset 7 as aborted, and the markers commit that producer's data from offset 7",
		},
		{
			name: "index starts an aborted transaction late", write: shared, lso: 11,
			aborted: []audit.AbortedTxn{{ProducerID: 2, FirstOffset: 5}},
			extra:   1, first: 4,
			why: "producer 2's transaction from offset 4 is aborted by the markers",
		},
		{
			name: "broker's LSO below the listed one", write: shared, lso: 8,
			aborted: []audit.AbortedTxn{{ProducerID: 2, FirstOffset: 4}},
			hidden:  2, first: 8, // 8 and 10; 9 is a marker
			why: "the broker's LSO 8 is below the LSO 11, and its view returns nothing from there",
		},
		{
			name: "empty abort before a listed transaction",
			write: func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Marker(3, 0, false) // 0: ends nothing
				w.Txn(3, 1, fakeapp.KVs(2)...)
				w.Marker(3, 1, false) // 3
				w.Plain(fakeapp.KVs(1)...)
			},
			lso: 5, aborted: []audit.AbortedTxn{{ProducerID: 3, FirstOffset: 1}},
		},
		{
			name: "aborted transaction partly purged",
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Txn(5, 0, fakeapp.KVs(2)...) // 0-1, below the log start
				w.Txn(5, 0, fakeapp.KVs(2)...) // 2-3
				w.Marker(5, 0, false)          // 4
				w.Plain(fakeapp.KVs(1)...)
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 2, LSO: 6, HW: 6})
			},
			lso: 6, aborted: []audit.AbortedTxn{{ProducerID: 5, FirstOffset: 0}},
		},
		{
			name: "one of a producer's two aborted transactions listed",
			write: func(_ *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Txn(6, 0, fakeapp.KVs(1)...) // 0
				w.Marker(6, 0, false)          // 1
				w.Txn(6, 1, fakeapp.KVs(1)...) // 2
				w.Marker(6, 1, false)          // 3
				w.Plain(fakeapp.KVs(1)...)
			},
			lso: 5, aborted: []audit.AbortedTxn{{ProducerID: 6, FirstOffset: 0}},
			extra: 1, first: 2,
			why: "producer 6's transaction from offset 2 is aborted by the markers (ABORT at 3)",
		},
		{
			name: "open transaction above the LSO, broker's LSO moved on",
			write: func(m *fakeapp.Memory, w *fakeapp.PartitionWriter) {
				w.Txn(7, 0, fakeapp.KVs(1)...) // 0
				w.Marker(7, 0, false)          // 1
				w.Txn(8, 0, fakeapp.KVs(2)...) // 2-3, open when listed
				m.SetOffsets(tp, audit.PartitionOffsets{LogStart: 0, LSO: 2, HW: 4})
			},
			lso: 4, aborted: []audit.AbortedTxn{{ProducerID: 7, FirstOffset: 0}, {ProducerID: 8, FirstOffset: 2}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := newMem()
			tt.write(m, m.Writer(tp, 0))
			view := audit.CommittedIndex{LSO: tt.lso, Aborted: tt.aborted}
			want := ""
			if tt.extra+tt.hidden > 0 {
				want = fmt.Sprintf("%d records it returns are not committed by the markers, %d committed records it does not return (first at offset %d)", tt.extra, tt.hidden, tt.first)
			}
			opts := ledger.Options{CrossCheck: true}

			var n reads
			l, err := ledger.Build(t.Context(), indexedBroker{Memory: m, view: view, n: &n}, tp, opts)
			if err != nil {
				t.Fatal(err)
			}
			if n != (reads{indexed: 1}) {
				t.Errorf("read %+v, want one indexed read and nothing else", n)
			}
			checkDisagreement(t, "from the index", l, want, tt.first, tt.why)

			// the second read through the broker's filtering finds the same
			n = reads{}
			l, err = ledger.Build(t.Context(), committedBroker{Memory: m, view: view, n: &n}, tp, opts)
			if err != nil {
				t.Fatal(err)
			}
			if n != (reads{raw: 1, committed: 1}) {
				t.Errorf("read %+v, want one raw and one read_committed read", n)
			}
			checkDisagreement(t, "from a second read", l, want, tt.first, "")
		})
	}
}

// checkDisagreement checks that l holds exactly the cross-check finding
// want describes (none when want is empty), naming why.
func checkDisagreement(t *testing.T, how string, l *ledger.Ledger, want string, first int64, why string) {
	t.Helper()
	var got []audit.Finding
	for _, f := range l.Findings {
		if strings.Contains(f.Detail, "read_committed view") {
			got = append(got, f)
		}
	}
	if want == "" {
		if len(l.Findings) != 0 {
			t.Errorf("%s: findings %+v, want none", how, l.Findings)
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("%s: findings %+v, want one cross-check finding", how, l.Findings)
	}
	f := got[0]
	if f.Cause != audit.CauseTransactionInconsistent || f.Offset != first || !strings.Contains(f.Detail, want) || !strings.Contains(f.Detail, why) {
		t.Errorf("%s: finding %s at %d: %q; want %s at %d: %q naming %q", how, f.Cause, f.Offset, f.Detail,
			audit.CauseTransactionInconsistent, first, want, why)
	}
}
