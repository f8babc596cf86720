package ledger

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// maxReasons bounds how many disagreements a finding's detail names.
const maxReasons = 3

// disagreement is where the broker's read_committed view and the one the
// markers give differ, below the LSO.
type disagreement struct {
	extra  int64 // records the broker returns that the markers do not commit
	hidden int64 // committed records the broker does not return
	first  int64 // the first offset that differs; -1 when none
	run    Run   // the run holding first
	why    []string
	named  map[string]bool
}

func newDisagreement() *disagreement {
	return &disagreement{first: -1, named: map[string]bool{}}
}

// add notes n offsets from off of run r on which the views differ.
func (d *disagreement) add(off, n int64, returned bool, r Run) {
	if returned {
		d.extra += n
	} else {
		d.hidden += n
	}
	if d.first < 0 || off < d.first {
		d.first, d.run = off, r
	}
}

// because names the cause of a disagreement, once per cause.
func (d *disagreement) because(reason string) {
	if d.named[reason] {
		return
	}
	d.named[reason] = true
	if len(d.named) <= maxReasons {
		d.why = append(d.why, reason)
	}
}

// report turns a disagreement into a finding.
func (w *walker) report(d *disagreement) {
	if d.extra+d.hidden == 0 {
		return
	}
	f := audit.NewFinding(audit.StageTransactions, audit.CauseTransactionInconsistent, w.tp, d.first)
	f.Count = d.extra + d.hidden
	if d.run.Transactional {
		f.ProducerID, f.ProducerEpoch = d.run.ProducerID, d.run.ProducerEpoch
		f.TransactionalID = w.opts.TxnIDs[d.run.ProducerID]
	}
	f.Detail = fmt.Sprintf("the broker's read_committed view disagrees with the markers: %d records it returns are not committed by the markers, %d committed records it does not return (first at offset %d)", d.extra, d.hidden, d.first)
	if len(d.why) > 0 {
		f.Detail += ": " + strings.Join(d.why, "; ")
		if more := len(d.named) - len(d.why); more > 0 {
			f.Detail += fmt.Sprintf("; and %d more", more)
		}
	}
	w.findings = append(w.findings, f)
}

// checkIndex compares the derived committed view below the LSO with the
// broker's, as its LSO and aborted-transaction index define it. The
// batches the broker's view filters are the ones the ledger read, so no
// second read is needed: the ledger keeps what a read_committed consumer
// of them keeps (the Java client's and franz-go's rule: a producer's
// transactional data is dropped from the first offset of one of its
// aborted transactions up to its next ABORT marker, and nothing at or
// above the LSO is returned) and compares that with the markers' fates.
func (w *walker) checkIndex(idx audit.CommittedIndex) {
	lo, hi := w.l.Offsets.LogStart, w.l.Offsets.LSO
	end := hi // the broker's view returns nothing from here on
	if idx.LSO >= 0 {
		end = min(hi, idx.LSO)
	}
	// per producer, the first offsets of its listed aborted transactions
	// that no ABORT marker has ended yet, ascending
	aborting := map[int64][]int64{}
	for _, a := range idx.Aborted {
		aborting[a.ProducerID] = append(aborting[a.ProducerID], a.FirstOffset)
	}
	for _, fs := range aborting {
		slices.Sort(fs)
	}
	abortMarker := map[int64]bool{}
	for _, t := range w.l.Txns {
		if t.Outcome == audit.OutcomeAborted && t.MarkerOffset >= 0 {
			abortMarker[t.MarkerOffset] = true
		}
	}
	d := newDisagreement()
	txnOf := w.txnFinder()
	for _, r := range w.l.Runs {
		if r.Start >= hi {
			break
		}
		if r.Control {
			for o := r.Start; o < r.End; o++ {
				if fs := aborting[r.ProducerID]; abortMarker[o] && len(fs) > 0 && fs[0] <= o {
					aborting[r.ProducerID] = fs[1:]
				}
			}
			continue
		}
		switch r.Fate {
		case audit.FatePurged, audit.FateGap, audit.FateCompacted:
			continue // no record holds these offsets
		}
		committed := r.Fate == audit.FateCommitted
		for a, b := max(r.Start, lo), min(r.End, hi); a < b; {
			next, returned := b, a < end
			if returned {
				next = min(next, end)
			}
			listed := int64(-1) // the first offset of the listed aborted transaction that drops a
			if fs := aborting[r.ProducerID]; r.Transactional && len(fs) > 0 {
				if fs[0] <= a {
					returned, listed = false, fs[0]
				} else {
					next = min(next, fs[0])
				}
			}
			if returned != committed {
				d.add(a, next-a, returned, r)
				switch {
				case returned:
					t := txnOf(r.ProducerID, a)
					d.because(fmt.Sprintf("producer %d's transaction from offset %d is aborted by the markers (ABORT at %d) and not in the broker's aborted-transaction index",
						r.ProducerID, t.FirstOffset, t.MarkerOffset))
				case listed >= 0:
					d.because(fmt.Sprintf("the broker's aborted-transaction index lists producer %d's transaction from offset %d as aborted, and the markers commit that producer's data from offset %d",
						r.ProducerID, listed, txnOf(r.ProducerID, a).FirstOffset))
				default:
					d.because(fmt.Sprintf("the broker's LSO %d is below the LSO %d, and its view returns nothing from there", idx.LSO, hi))
				}
			}
			a = next
		}
	}
	w.report(d)
}

// txnFinder returns a lookup of the transaction of a producer holding an
// offset, built on first use; an unknown offset gets an empty transaction.
func (w *walker) txnFinder() func(pid, off int64) audit.Txn {
	var byPID map[int64][]audit.Txn
	return func(pid, off int64) audit.Txn {
		if byPID == nil {
			byPID = map[int64][]audit.Txn{}
			for _, t := range w.l.Txns { // ordered by first offset
				if t.FirstOffset >= 0 {
					byPID[t.ProducerID] = append(byPID[t.ProducerID], t)
				}
			}
		}
		ts := byPID[pid]
		i := sort.Search(len(ts), func(i int) bool { return ts[i].FirstOffset > off }) - 1
		if i >= 0 && ts[i].LastOffset >= off {
			return ts[i]
		}
		return audit.Txn{ProducerID: pid, FirstOffset: -1, LastOffset: -1, MarkerOffset: -1}
	}
}

// crossCheck compares the derived committed view below the LSO with the
// broker's read_committed fetch: a second read of the partition, for
// sources that cannot give the broker's view from the first.
func (w *walker) crossCheck(ctx context.Context, cr audit.CommittedReader) error {
	lo, hi := w.l.Offsets.LogStart, w.l.Offsets.LSO
	next, stop := iter.Pull2(cr.ReadCommitted(ctx, w.tp, lo, hi))
	defer stop()
	d := newDisagreement()
	b, err, ok := next()
	adv := func() bool {
		for ok && err == nil && (b.Batch.Control || b.Offset < lo) {
			b, err, ok = next()
		}
		return ok
	}
	for _, r := range w.l.Runs {
		if r.Fate != audit.FateCommitted || r.Control {
			continue
		}
		for o := max(r.Start, lo); o < min(r.End, hi); o++ {
			adv()
			if err != nil {
				return fmt.Errorf("read %s committed at %d: %w", w.tp, o, err)
			}
			for ok && b.Offset < o {
				d.add(b.Offset, 1, true, w.runAt(b.Offset))
				b, err, ok = next()
				adv()
			}
			if ok && b.Offset == o {
				b, err, ok = next()
				continue
			}
			d.add(o, 1, false, r)
		}
	}
	for adv() && err == nil && b.Offset < hi {
		d.add(b.Offset, 1, true, w.runAt(b.Offset))
		b, err, ok = next()
	}
	if err != nil {
		return fmt.Errorf("read %s committed: %w", w.tp, err)
	}
	w.report(d)
	return nil
}

// runAt returns the run holding off, or a run of no producer.
func (w *walker) runAt(off int64) Run {
	i := sort.Search(len(w.l.Runs), func(i int) bool { return w.l.Runs[i].End > off })
	if i < len(w.l.Runs) && w.l.Runs[i].Start <= off {
		return w.l.Runs[i]
	}
	return Run{Start: off, End: off + 1, ProducerID: -1, ProducerEpoch: -1}
}
