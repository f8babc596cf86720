package ledger

import (
	"context"
	"fmt"
	"iter"
	"sort"

	"github.com/kaudit/kaudit/audit"
)

// openTxn is a transaction whose marker has not been read yet.
type openTxn struct {
	txn  audit.Txn
	runs []int // indices into Ledger.Runs holding its data
	// snap is the ended transaction as its records' entries share it:
	// one copy per transaction, not per record
	snap *audit.Txn
}

type pending struct {
	rec audit.Record
	txn *openTxn // nil: fate already known
	fat audit.Fate
}

type walker struct {
	tp       audit.TopicPartition
	opts     Options
	l        *Ledger
	next     int64
	open     map[int64]*openTxn
	runTxn   []*openTxn // parallel to l.Runs: the open transaction a run waits on
	queue    []pending  // queue[qhead:] waits for a marker
	qhead    int
	spilled  bool
	spillAt  int64
	seenPID  map[int64]bool
	findings []audit.Finding
}

func newWalker(tp audit.TopicPartition, offs audit.PartitionOffsets, opts Options) *walker {
	if opts.Buffer <= 0 {
		opts.Buffer = 200_000
	}
	w := &walker{tp: tp, opts: opts, l: &Ledger{TP: tp, Offsets: offs}, open: map[int64]*openTxn{},
		seenPID: map[int64]bool{}}
	if offs.LogStart > 0 {
		w.addRun(Run{Start: 0, End: offs.LogStart, Fate: audit.FatePurged, ProducerID: -1, ProducerEpoch: -1}, nil)
		w.l.Counts.Add(audit.FatePurged, offs.LogStart)
	}
	w.next = offs.LogStart
	return w
}

// addRun appends a run, merging it into the previous one when they are
// contiguous and alike.
func (w *walker) addRun(r Run, t *openTxn) {
	if n := len(w.l.Runs); n > 0 {
		p := &w.l.Runs[n-1]
		if p.End == r.Start && p.Fate == r.Fate && p.ProducerID == r.ProducerID && p.ProducerEpoch == r.ProducerEpoch &&
			p.Transactional == r.Transactional && p.Control == r.Control && w.runTxn[n-1] == t {
			p.End = r.End
			return
		}
	}
	w.l.Runs = append(w.l.Runs, r)
	w.runTxn = append(w.runTxn, t)
	if t != nil {
		t.runs = append(t.runs, len(w.l.Runs)-1)
	}
}

// missing classifies offsets [w.next, upTo) that no record holds.
func (w *walker) missing(upTo int64) {
	if upTo <= w.next {
		return
	}
	fate := audit.FateGap
	if w.opts.Compacted {
		fate = audit.FateCompacted
	} else {
		f := audit.NewFinding(audit.StageOffsets, audit.CauseOffsetGap, w.tp, w.next)
		f.Count = upTo - w.next
		f.Detail = fmt.Sprintf("offsets %d-%d are missing from a non-compacted partition above its log start %d", w.next, upTo-1, w.l.Offsets.LogStart)
		w.findings = append(w.findings, f)
	}
	w.addRun(Run{Start: w.next, End: upTo, Fate: fate, ProducerID: -1, ProducerEpoch: -1}, nil)
	w.l.Counts.Add(fate, upTo-w.next)
	w.next = upTo
}

// read classifies the records of [log start, HW) that recs yields.
func (w *walker) read(recs iter.Seq2[audit.Record, error], yield func(Entry, error) bool) bool {
	hw := w.l.Offsets.HW
	for rec, err := range recs {
		if err != nil {
			yield(Entry{}, fmt.Errorf("read %s at %d: %w", w.tp, w.next, err))
			return false
		}
		switch {
		case rec.Offset < w.l.Offsets.LogStart || rec.Offset >= hw:
			continue // a batch straddling the log start, or beyond the HW
		case rec.Offset < w.next:
			yield(Entry{}, fmt.Errorf("read %s: offset %d comes after %d: offsets go backwards: %w", w.tp, rec.Offset, w.next-1, audit.ErrCorrupt))
			return false
		}
		w.missing(rec.Offset)
		if !w.add(rec, yield) {
			return false
		}
		w.next = rec.Offset + 1
	}
	w.missing(hw)
	return true
}

func (w *walker) add(rec audit.Record, yield func(Entry, error) bool) bool {
	b := rec.Batch
	run := Run{Start: rec.Offset, End: rec.Offset + 1, ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch,
		Transactional: b.Transactional, Control: b.Control}
	switch {
	case b.Control:
		run.Fate = audit.FateMarker
		w.addRun(run, nil)
		w.l.Counts.Add(audit.FateMarker, 1)
		return w.marker(rec, yield)
	case !b.Transactional:
		run.Fate = audit.FateCommitted
		w.addRun(run, nil)
		return w.emit(pending{rec: rec, fat: audit.FateCommitted}, yield)
	}
	w.seenPID[b.ProducerID] = true
	t := w.open[b.ProducerID]
	if t == nil {
		t = &openTxn{txn: audit.Txn{ProducerID: b.ProducerID, ProducerEpoch: b.ProducerEpoch, FirstOffset: rec.Offset,
			MarkerOffset: -1, Outcome: audit.OutcomeOpen, FirstTimestamp: rec.Timestamp, MarkerTimestamp: -1,
			TransactionalID: w.opts.TxnIDs[b.ProducerID]}}
		w.open[b.ProducerID] = t
	}
	t.txn.LastOffset = rec.Offset
	t.txn.Records++
	run.Fate = audit.FateOpen
	w.addRun(run, t)
	return w.emit(pending{rec: rec, txn: t}, yield)
}

// marker closes the producer's open transaction.
func (w *walker) marker(rec audit.Record, yield func(Entry, error) bool) bool {
	pid := rec.Batch.ProducerID
	typ := audit.MarkerAbort
	if rec.Marker != nil {
		typ = rec.Marker.Type
	}
	outcome := audit.OutcomeAborted
	if typ == audit.MarkerCommit {
		outcome = audit.OutcomeCommitted
	}
	t := w.open[pid]
	if t == nil {
		// A marker with no data on this partition. Normal for an ABORT (the
		// partition was added to the transaction but the produce never
		// landed, as in a broker outage), and after compaction or a purge.
		// A COMMIT of nothing on a partition that lost nothing is not.
		if typ == audit.MarkerCommit && !w.opts.Compacted && w.l.Offsets.LogStart == 0 && !w.seenPID[pid] {
			f := audit.NewFinding(audit.StageTransactions, audit.CauseTransactionInconsistent, w.tp, rec.Offset)
			f.ProducerID, f.ProducerEpoch = pid, rec.Batch.ProducerEpoch
			f.TransactionalID = w.opts.TxnIDs[pid]
			f.Timestamp = rec.Timestamp
			f.Detail = "a COMMIT marker with no transactional data of its producer before it on this partition"
			w.findings = append(w.findings, f)
		}
		w.l.Txns = append(w.l.Txns, audit.Txn{ProducerID: pid, ProducerEpoch: rec.Batch.ProducerEpoch, FirstOffset: -1,
			LastOffset: -1, MarkerOffset: rec.Offset, Outcome: outcome, FirstTimestamp: -1, MarkerTimestamp: rec.Timestamp,
			TransactionalID: w.opts.TxnIDs[pid]})
		return true
	}
	delete(w.open, pid)
	t.txn.MarkerOffset, t.txn.Outcome, t.txn.MarkerTimestamp = rec.Offset, outcome, rec.Timestamp
	fate := audit.FateCommitted
	if outcome == audit.OutcomeAborted {
		fate = audit.FateAborted
	}
	w.resolve(t, fate)
	return w.flush(yield, false)
}

// resolve gives an ended transaction's runs their fate and records it.
func (w *walker) resolve(t *openTxn, fate audit.Fate) {
	for _, i := range t.runs {
		r := &w.l.Runs[i]
		r.Fate = fate
		w.l.Counts.Add(fate, r.End-r.Start)
		w.runTxn[i] = nil
	}
	t.runs = nil
	w.l.Txns = append(w.l.Txns, t.txn)
}

func (w *walker) emit(p pending, yield func(Entry, error) bool) bool {
	if p.txn == nil {
		w.l.Counts.Add(p.fat, 1)
	}
	if w.spilled {
		return true
	}
	if p.txn == nil && len(w.queue) == w.qhead {
		return yield(Entry{Record: p.rec, Fate: p.fat}, nil)
	}
	if w.qhead > 0 && len(w.queue) == cap(w.queue) && w.qhead >= len(w.queue)/2 {
		// reuse the array rather than grow it: what is flushed is gone
		n := copy(w.queue, w.queue[w.qhead:])
		clear(w.queue[n:])
		w.queue, w.qhead = w.queue[:n], 0
	}
	w.queue = append(w.queue, p)
	if len(w.queue)-w.qhead > w.opts.Buffer {
		// Too much waits on an open transaction: stop buffering and read
		// the rest again once every fate is known.
		w.spilled, w.spillAt, w.queue, w.qhead = true, w.queue[w.qhead].rec.Offset, nil, 0
	}
	return true
}

// flush yields queued records whose fate is known, in offset order.
func (w *walker) flush(yield func(Entry, error) bool, all bool) bool {
	i := w.qhead
	for ; i < len(w.queue); i++ {
		p := &w.queue[i]
		e := Entry{Record: p.rec, Fate: p.fat}
		if t := p.txn; t != nil {
			if t.txn.Outcome == audit.OutcomeOpen && !all {
				break
			}
			e.Fate = fateOf(t.txn.Outcome)
			if t.snap == nil { // its outcome is final now (drain runs after finish)
				tx := t.txn
				t.snap = &tx
			}
			e.Txn = t.snap
		}
		if !yield(e, nil) {
			return false
		}
	}
	if i == len(w.queue) {
		clear(w.queue) // the records' bytes are the consumer's now
		w.queue, w.qhead = w.queue[:0], 0
	} else {
		w.qhead = i
	}
	return true
}

func fateOf(o audit.Outcome) audit.Fate {
	switch o {
	case audit.OutcomeCommitted:
		return audit.FateCommitted
	case audit.OutcomeAborted:
		return audit.FateAborted
	}
	return audit.FateOpen
}

// finish settles transactions still open at the high watermark.
func (w *walker) finish() {
	lso := w.l.Offsets.LSO
	for _, pid := range sortedPIDs(w.open) {
		t := w.open[pid]
		if t.txn.FirstOffset < lso {
			// Data below the LSO with no marker: the broker considers the
			// transaction ended, the log holds no marker for it.
			f := audit.NewFinding(audit.StageTransactions, audit.CauseTransactionInconsistent, w.tp, t.txn.FirstOffset)
			f.Count = t.txn.Records
			f.ProducerID, f.ProducerEpoch, f.TransactionalID = pid, t.txn.ProducerEpoch, t.txn.TransactionalID
			f.Timestamp = t.txn.FirstTimestamp
			f.Detail = fmt.Sprintf("transactional data from offset %d with no COMMIT or ABORT marker, below the LSO %d: read_committed readers see it as committed", t.txn.FirstOffset, lso)
			w.findings = append(w.findings, f)
			t.txn.Outcome = audit.OutcomeCommitted
			w.resolve(t, audit.FateCommitted)
			continue
		}
		w.resolve(t, audit.FateOpen)
		start, known := w.opts.TxnStarts[pid]
		age := w.opts.Now.UnixMilli() - start
		if known && start > 0 && w.opts.MaxTxnTimeout > 0 && !w.opts.Now.IsZero() && age > w.opts.MaxTxnTimeout.Milliseconds() {
			f := audit.NewFinding(audit.StageTransactions, audit.CauseHangingTransaction, w.tp, t.txn.FirstOffset)
			f.Count = t.txn.Records
			f.ProducerID, f.ProducerEpoch, f.TransactionalID = pid, t.txn.ProducerEpoch, t.txn.TransactionalID
			f.Timestamp = t.txn.FirstTimestamp
			f.Detail = fmt.Sprintf("transaction open since offset %d for %s, longer than the maximum transaction timeout %s; it holds the LSO at %d (HW %d)",
				t.txn.FirstOffset, fmtAge(age), w.opts.MaxTxnTimeout, lso, w.l.Offsets.HW)
			w.findings = append(w.findings, f)
		}
	}
	w.open = map[int64]*openTxn{}
	sort.SliceStable(w.l.Txns, func(i, j int) bool { return txnKey(w.l.Txns[i]) < txnKey(w.l.Txns[j]) })
}

func txnKey(t audit.Txn) int64 {
	if t.FirstOffset >= 0 {
		return t.FirstOffset
	}
	return t.MarkerOffset
}

func sortedPIDs(m map[int64]*openTxn) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func fmtAge(ms int64) string {
	if ms < 0 {
		return "an unknown time"
	}
	return fmt.Sprintf("%dm%02ds", ms/60000, ms/1000%60)
}

// TxnAt returns the transaction of producer pid that holds offset off.
func (l *Ledger) TxnAt(pid, off int64) *audit.Txn {
	for i := range l.Txns {
		t := &l.Txns[i]
		if t.ProducerID == pid && t.FirstOffset <= off && off <= t.LastOffset {
			return t
		}
	}
	return nil
}

// drain yields what is still queued, then, after a spill, reads the rest
// again with the fates now known.
func (w *walker) drain(ctx context.Context, src audit.RecordSource, yield func(Entry, error) bool) bool {
	if !w.spilled {
		return w.flush(yield, true)
	}
	for rec, err := range src.Records(ctx, w.tp, w.spillAt, w.l.Offsets.HW) {
		if err != nil {
			yield(Entry{}, fmt.Errorf("read %s again at %d: %w", w.tp, w.spillAt, err))
			return false
		}
		if rec.Offset < w.spillAt || rec.Batch.Control {
			continue
		}
		e := Entry{Record: rec, Fate: w.l.Fate(rec.Offset)}
		if rec.Batch.Transactional {
			e.Txn = w.l.TxnAt(rec.Batch.ProducerID, rec.Offset)
		}
		if !yield(e, nil) {
			return false
		}
	}
	return true
}
