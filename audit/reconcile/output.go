package reconcile

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// checkOutput checks a table's own output topic (toStream().to(t)) against
// its store: Streams' cache flush writes each dirty key's state to the
// changelog and forwards the same state downstream in one transaction, so
// at the cut each key's last output record is the store's final state,
// value and timestamp (a tombstone for a deleted key). A key the store holds
// whose output lacks it, or shows another state, is a join-stage finding
// (the output is the table joined with nothing): the store is right, the
// output is not. What the store itself lost is the table's own findings.
func (r *run) checkOutput(ctx context.Context, ts *tableState) {
	t := ts.t
	parts, ok := r.partitionsOf(t.Output, "output")
	if !ok {
		return
	}
	if len(ts.unreadable) > 0 || len(ts.absent) > 0 || t.Unjudged != "" || t.Changelog == "" {
		r.walkAll(ctx, tpsOf(t.Output, parts), "output", func(*item) {})
		r.missing("table %s: its output %s is not judged, since the table's own evidence is incomplete", t.Name, t.Output)
		return
	}
	type last struct {
		tp     audit.TopicPartition
		offset int64
		ts     int64
		digest codec.Digest
		null   bool
		raw    []byte
	}
	out := map[string]last{}
	rd := r.startReads(ctx, &reads{r: r, role: "output", decode: decodeDigest, window: t.Window}, tpsOf(t.Output, parts))
	defer rd.stop()
	var unreadable []audit.TopicPartition
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: t.Output, Partition: p}
		if !r.walk(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			rec := &it.Record
			r.count("output", 1)
			out[it.keyText] = last{tp: tp, offset: rec.Offset, ts: rec.Timestamp, digest: it.digest, null: rec.Value == nil, raw: rec.Value}
		}) {
			unreadable = append(unreadable, tp)
		}
	}
	if ctx.Err() != nil {
		return
	}
	if len(unreadable) > 0 {
		r.missing("table %s: its output %s could not be read (%s), so it is not judged", t.Name, t.Output, tpList(unreadable))
		return
	}
	for _, key := range slices.Sorted(maps.Keys(ts.changelog)) {
		fin, present := ts.changelog[key].final()
		o, have := out[key]
		if t.Window != nil && t.Window.Suppress && !r.windowClosed(ts, key) {
			continue // suppressed until the window closes: an open window's output is not due
		}
		switch {
		case present && !have:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, audit.TopicPartition{Topic: t.Output, Partition: r.outPartition(t.Output, ts.fpKey(key), outRecord{}, false)}, -1)
			f.Key, f.Timestamp = key, fin.ts
			f.Detail = fmt.Sprintf("table %s holds key %s at the cut (changelog %s/%d@%d), its output %s has no record for it", t.Name, key, t.Changelog, ts.changelog[key].partition, fin.offset, t.Output)
			r.add(f)
		case have && present && (o.null || o.digest != fin.digest || o.ts != fin.ts):
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Timestamp, f.Actual = key, o.ts, r.text(ctx, t.Output, false, o.raw)
			f.Detail = fmt.Sprintf("table %s: the output's last record for key %s (timestamp %d) is not the store's final state (changelog %s/%d@%d, timestamp %d)", t.Name, key, o.ts, t.Changelog, ts.changelog[key].partition, fin.offset, fin.ts)
			r.add(f)
		case have && !present && !o.null && len(ts.changelog[key].history) > 0:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Timestamp, f.Actual, f.Expected = key, o.ts, r.text(ctx, t.Output, false, o.raw), "absent"
			f.Detail = fmt.Sprintf("table %s deleted key %s (a tombstone in its changelog), its output still holds a value for it", t.Name, key)
			r.add(f)
		}
	}
}
