package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/kaudit/kaudit/audit"
)

// Baseline compares an earlier capture with a later source, partition by
// partition: every record the earlier one holds must still be in the later
// one, identical, at the same offset. Records now below the later log start
// give retention-gap findings (stage source): deleted by retention or
// DeleteRecords, candidates for records never read. Records missing above
// the later log start (outside a compacted topic, where the cleaner removes
// records by design) or holding different content give truncated findings.
// Each contiguous run of offsets of one kind is one finding, Offset its
// first offset and Count its records.
func Baseline(ctx context.Context, earlier, later audit.Source, tps []audit.TopicPartition) ([]audit.Finding, error) {
	compacted := map[string]bool{}
	if ts, err := later.Topics(ctx); err == nil {
		for _, t := range ts {
			compacted[t.Name] = t.Compacted()
		}
	}
	var out []audit.Finding
	for _, tp := range tps {
		fs, err := baselinePartition(ctx, earlier, later, tp, compacted[tp.Topic])
		if err != nil {
			return out, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

type baselineKind int

const (
	belowLogStart baselineKind = iota
	missing
	beyondEnd
	changed
)

func baselinePartition(ctx context.Context, earlier, later audit.Source, tp audit.TopicPartition, compacted bool) ([]audit.Finding, error) {
	lo, err := later.Offsets(ctx, tp)
	gone := errors.Is(err, audit.ErrPartitionNotFound) || errors.Is(err, audit.ErrTopicNotFound)
	if err != nil && !gone {
		return nil, fmt.Errorf("baseline %s: %w", tp, err)
	}
	var (
		out []audit.Finding
		cur struct {
			on    bool
			kind  baselineKind
			first audit.Record
			last  int64
			count int64
		}
	)
	emit := func() {
		if !cur.on {
			return
		}
		cause, stage := audit.CauseTruncated, audit.StageOffsets
		span := fmt.Sprintf("offsets %d-%d (%d records)", cur.first.Offset, cur.last, cur.count)
		var detail string
		switch cur.kind {
		case belowLogStart:
			cause, stage = audit.CauseRetentionGap, audit.StageSource
			detail = fmt.Sprintf("%s of the earlier capture are below the log start %d now: deleted by retention or DeleteRecords", span, lo.LogStart)
		case missing:
			detail = fmt.Sprintf("%s of the earlier capture are gone above the log start %d", span, lo.LogStart)
		case beyondEnd:
			detail = fmt.Sprintf("%s of the earlier capture are beyond the high watermark %d now: the log was truncated", span, lo.HW)
			if gone {
				detail = fmt.Sprintf("%s of the earlier capture: the partition no longer exists", span)
			}
		case changed:
			detail = fmt.Sprintf("%s hold different records than in the earlier capture", span)
		}
		f := audit.NewFinding(stage, cause, tp, cur.first.Offset)
		f.Count = cur.count
		f.Timestamp = cur.first.Timestamp
		f.ProducerID, f.ProducerEpoch = cur.first.Batch.ProducerID, cur.first.Batch.ProducerEpoch
		f.Detail = detail
		out = append(out, f)
		cur.on = false
	}
	add := func(kind baselineKind, r audit.Record) {
		if cur.on && cur.kind != kind {
			emit()
		}
		if !cur.on {
			cur.on, cur.kind, cur.first, cur.count = true, kind, r, 0
		}
		cur.last = r.Offset
		cur.count++
	}

	var next func() (audit.Record, error, bool)
	if !gone {
		n, stop := iter.Pull2(later.Records(ctx, tp, lo.LogStart, -1))
		defer stop()
		next = n
	}
	var (
		l    audit.Record
		lErr error
		lOK  bool
	)
	if next != nil {
		l, lErr, lOK = next()
	}
	for e, err := range earlier.Records(ctx, tp, 0, -1) {
		if err != nil {
			return out, fmt.Errorf("baseline %s: earlier: %w", tp, err)
		}
		if gone {
			add(beyondEnd, e)
			continue
		}
		if e.Offset < lo.LogStart {
			add(belowLogStart, e)
			continue
		}
		for lOK && lErr == nil && l.Offset < e.Offset {
			l, lErr, lOK = next()
		}
		if lErr != nil {
			return out, fmt.Errorf("baseline %s: later: %w", tp, lErr)
		}
		switch {
		case lOK && l.Offset == e.Offset:
			if sameRecord(&e, &l) {
				emit()
			} else {
				add(changed, e)
			}
		case e.Offset >= lo.HW:
			add(beyondEnd, e)
		case compacted:
			emit() // the cleaner removes records by design
		default:
			add(missing, e)
		}
	}
	emit()
	return out, nil
}

// sameRecord compares what must not change at an offset.
func sameRecord(a, b *audit.Record) bool {
	if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || a.Timestamp != b.Timestamp ||
		(a.Key == nil) != (b.Key == nil) || (a.Value == nil) != (b.Value == nil) ||
		a.Batch.ProducerID != b.Batch.ProducerID || a.Batch.ProducerEpoch != b.Batch.ProducerEpoch ||
		a.Batch.Control != b.Batch.Control || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}
