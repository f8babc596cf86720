package segment

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// txnState is what one scan of a partition's batch headers and markers
// tells about its transactions.
type txnState struct {
	lso     int64
	aborted []AbortedTxn // sorted by first offset
}

// txnState scans the replica once: transactional data batches open a
// transaction per producer, markers end it. The LSO is the first offset of
// the earliest transaction still open below the HW. The aborted
// transactions are those the scan saw end in ABORT, plus the .txnindex
// entries (whose data may lie below the log start).
func (r *replica) txnState(ctx context.Context) (*txnState, error) {
	r.stateMu.Lock()
	defer r.stateMu.Unlock()
	if r.state != nil || r.stateErr != nil {
		return r.state, r.stateErr
	}
	st, err := r.scanTxns(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.stateErr = err // a cancellation is not cached
		}
		return nil, err
	}
	r.state = st
	return st, nil
}

func (r *replica) scanTxns(ctx context.Context) (*txnState, error) {
	open := map[int64]int64{} // producer id → first offset of its open transaction
	type key struct{ pid, first int64 }
	seen := map[key]bool{}
	st := &txnState{}
	var scanErr error
	r.batches(ctx, r.logStart, r.hw, false, func(h audit.Batch, recs []audit.Record, err error) bool {
		if err != nil {
			scanErr = err
			return false
		}
		if !h.Control {
			if h.Transactional {
				if _, ok := open[h.ProducerID]; !ok {
					open[h.ProducerID] = h.BaseOffset
				}
			}
			return true
		}
		for _, rec := range recs {
			if rec.Offset >= r.hw {
				return false
			}
			if rec.Marker == nil {
				continue
			}
			first, ok := open[h.ProducerID]
			delete(open, h.ProducerID)
			if ok && rec.Marker.Type == audit.MarkerAbort {
				st.aborted = append(st.aborted, AbortedTxn{ProducerID: h.ProducerID, FirstOffset: first, LastOffset: rec.Offset, LSO: -1})
				seen[key{h.ProducerID, first}] = true
			}
		}
		return true
	})
	if scanErr != nil {
		return nil, scanErr
	}
	st.lso = r.hw
	for _, first := range open {
		st.lso = min(st.lso, first)
	}
	for _, s := range r.segments {
		path := strings.TrimSuffix(s.path, ".log") + ".txnindex"
		b, err := ReadRegular(path, MaxMetaFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read transaction index: %w", err)
		}
		txns, n, err := ParseTxnIndex(b)
		if err != nil {
			return nil, &FileError{File: path, Pos: int64(n), Err: err}
		}
		for _, t := range txns {
			if !seen[key{t.ProducerID, t.FirstOffset}] {
				seen[key{t.ProducerID, t.FirstOffset}] = true
				st.aborted = append(st.aborted, t)
			}
		}
	}
	slices.SortFunc(st.aborted, func(a, b AbortedTxn) int {
		return cmp.Or(cmp.Compare(a.FirstOffset, b.FirstOffset), cmp.Compare(a.ProducerID, b.ProducerID))
	})
	return st, nil
}

// AbortedTxns returns the partition's aborted transactions: those whose
// ABORT marker is in the log, and the .txnindex entries.
func (d *Dir) AbortedTxns(ctx context.Context, tp audit.TopicPartition) ([]AbortedTxn, error) {
	r, err := d.primary(tp)
	if err != nil {
		return nil, err
	}
	st, err := r.txnState(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(st.aborted), nil
}

// RecordsIndexed yields what Records yields, and fills *idx with the
// read_committed view a broker serving this replica would give of
// [from, to): the LSO and the aborted transactions whose ABORT marker is at
// or above from, as the broker's transaction index lists them. Both come
// from the scan Offsets already made, so nothing is read twice.
func (d *Dir) RecordsIndexed(ctx context.Context, tp audit.TopicPartition, from, to int64, idx *audit.CommittedIndex) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		*idx = audit.CommittedIndex{LSO: -1}
		r, err := d.primary(tp)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		st, err := r.txnState(ctx)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		idx.LSO = st.lso
		for _, t := range st.aborted {
			if t.LastOffset >= from {
				idx.Aborted = append(idx.Aborted, audit.AbortedTxn{ProducerID: t.ProducerID, FirstOffset: t.FirstOffset})
			}
		}
		for rec, err := range r.records(ctx, from, to) {
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

// ReadCommitted yields what a read_committed consumer sees of [from, to):
// no control records, no data of aborted transactions, nothing at or above
// the LSO (to < 0 means up to the LSO). It filters the way the Java consumer
// does: a producer enters the aborted set at the first offset of one of its
// aborted transactions and leaves it at its ABORT marker.
func (d *Dir) ReadCommitted(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		r, err := d.primary(tp)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		st, err := r.txnState(ctx)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		if to < 0 || to > st.lso {
			to = st.lso
		}
		pending := slices.DeleteFunc(slices.Clone(st.aborted), func(t AbortedTxn) bool { return t.LastOffset < from })
		aborting := map[int64]bool{}
		for rec, err := range r.records(ctx, from, to) {
			if err != nil {
				yield(rec, err)
				return
			}
			for len(pending) > 0 && pending[0].FirstOffset <= rec.Offset {
				aborting[pending[0].ProducerID] = true
				pending = pending[1:]
			}
			if rec.Batch.Control {
				if rec.Marker != nil && rec.Marker.Type == audit.MarkerAbort {
					delete(aborting, rec.Batch.ProducerID)
				}
				continue
			}
			if rec.Batch.Transactional && aborting[rec.Batch.ProducerID] {
				continue
			}
			if !yield(rec, nil) {
				return
			}
		}
	}
}
