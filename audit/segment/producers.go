package segment

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/kaudit/kaudit/audit"
)

// Producers returns the producers of each partition as its leader would
// rebuild them on start: the read replica's latest producer .snapshot file
// at or below its log end, then the batches after the snapshot's offset
// (each data batch sets its producer's epoch, last sequence and timestamp,
// and a transactional one opens a transaction at its base offset; a marker
// closes it and sets the coordinator epoch). Without a snapshot the whole
// log is replayed; producers whose batches were all deleted are then
// unknown. Producers are sorted by id.
func (d *Dir) Producers(ctx context.Context, tps []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	out := map[audit.TopicPartition][]audit.Producer{}
	for _, tp := range tps {
		ps, err := d.producers(ctx, tp)
		if err != nil {
			return out, fmt.Errorf("producers from log dirs: %w", err)
		}
		out[tp] = ps
	}
	return out, nil
}

func (d *Dir) producers(ctx context.Context, tp audit.TopicPartition) ([]audit.Producer, error) {
	r, err := d.primary(tp)
	if err != nil {
		return nil, err
	}
	at, entries, err := d.ProducerSnapshot(tp)
	if err != nil {
		return nil, err
	}
	state := map[int64]*audit.Producer{}
	from := r.logStart
	if at >= 0 && at <= r.logEnd {
		for _, e := range entries {
			state[e.ProducerID] = &audit.Producer{ProducerID: e.ProducerID, ProducerEpoch: e.ProducerEpoch, LastSequence: e.LastSequence,
				LastTimestamp: e.Timestamp, CoordinatorEpoch: e.CoordinatorEpoch, CurrentTxnStartOffset: e.CurrentTxnFirstOffset}
		}
		from = max(from, at)
	}
	var scanErr error
	r.batches(ctx, from, r.logEnd, false, func(h audit.Batch, recs []audit.Record, err error) bool {
		if err != nil {
			scanErr = err
			return false
		}
		if h.BaseOffset < from || h.ProducerID < 0 {
			return true
		}
		p := state[h.ProducerID]
		if p == nil {
			p = &audit.Producer{ProducerID: h.ProducerID, LastSequence: -1, CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}
			state[h.ProducerID] = p
		}
		p.ProducerEpoch = h.ProducerEpoch
		if h.Control {
			for _, rec := range recs {
				if rec.Marker != nil && (rec.Marker.Type == audit.MarkerCommit || rec.Marker.Type == audit.MarkerAbort) {
					p.CurrentTxnStartOffset, p.CoordinatorEpoch = -1, rec.Marker.CoordinatorEpoch
				}
			}
			return true
		}
		if h.BaseSequence >= 0 {
			p.LastSequence = h.BaseSequence + h.LastOffsetDelta
		}
		p.LastTimestamp = h.MaxTimestamp
		if h.Transactional && p.CurrentTxnStartOffset < 0 {
			p.CurrentTxnStartOffset = h.BaseOffset
		}
		return true
	})
	if scanErr != nil {
		return nil, scanErr
	}
	out := make([]audit.Producer, 0, len(state))
	for _, p := range state {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b audit.Producer) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	return out, nil
}
