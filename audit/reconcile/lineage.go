package reconcile

// The report's lineage of vanished inputs, its timeline and the pipeline's edges.

import (
	"cmp"
	"context"
	"sort"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// lineage follows sample vanished inputs hop by hop.
func (r *run) lineage(ctx context.Context) {
	r.rep.Finish()
	pos := map[[3]any]int{}
	for i, f := range r.rep.Findings {
		pos[[3]any{f.Topic, f.Partition, f.Offset}] = i
	}
	for _, in := range r.losses {
		if len(r.rep.Lineage) >= r.opts.LineageSamples {
			break
		}
		idx, ok := pos[[3]any{in.tp.Topic, in.tp.Partition, in.offset}]
		if !ok {
			continue
		}
		t := in.table.t
		hops := []audit.Hop{{Stage: audit.StageSource, Topic: in.tp.Topic, Partition: in.tp.Partition, Offset: in.offset,
			Expected: codec.Text(in.value), Actual: codec.Text(in.value), Note: "committed input, below the group's committed offset: consumed"}}
		if t.Repartition != "" {
			h := audit.Hop{Stage: audit.StageRepartition, Topic: t.Repartition, Partition: in.r, Offset: -1, Expected: "a committed copy"}
			switch in.status {
			case copyApplied:
				h.Offset, h.Actual, h.Note = in.cpy.offset, "committed copy", "applied (below the committed offset)"
			case copyAborted:
				h.Offset, h.Actual, h.Note = in.cpy.abortedAt, "aborted copy only", "its transaction was aborted and never replayed"
			default:
				h.Actual, h.Note = "no copy", string(in.loss.cause)
			}
			hops = append(hops, h)
		}
		if t.Changelog != "" {
			h := audit.Hop{Stage: audit.StageStore, Topic: t.Changelog, Partition: -1, Offset: -1, Expected: codec.Text(r.expectedOf(ctx, in.table, in.key, r.storeSide).value), Actual: "absent"}
			if cl := in.table.changelog[in.key]; cl != nil {
				h.Partition = cl.partition
				if fin, ok := cl.final(); ok {
					h.Offset, h.Actual = fin.offset, codec.Text(in.table.finals[in.key])
				}
			}
			hops = append(hops, h)
		}
		r.rep.Lineage = append(r.rep.Lineage, audit.Lineage{Finding: idx, Hops: hops})
	}
}

// timeline counts source records, transactions and vanished inputs per
// minute.
func (r *run) timeline() {
	mins := map[int64]*audit.Minute{}
	at := func(ms int64) *audit.Minute {
		k := ms / 60000 * 60000
		m := mins[k]
		if m == nil {
			m = &audit.Minute{Start: k}
			mins[k] = m
		}
		return m
	}
	for _, l := range r.ledgers {
		for _, t := range l.Txns {
			if t.MarkerTimestamp < 0 {
				continue
			}
			switch t.Outcome {
			case audit.OutcomeCommitted:
				at(t.MarkerTimestamp).Committed++
			case audit.OutcomeAborted:
				at(t.MarkerTimestamp).Aborted++
			}
		}
	}
	for m, n := range r.produced {
		at(m).Produced += n
	}
	for _, in := range r.losses {
		at(in.ts).Vanished++
	}
	keys := make([]int64, 0, len(mins))
	for k := range mins {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		r.rep.Timeline = append(r.rep.Timeline, *mins[k])
	}
	// Edges of the pipeline with counts.
	for _, t := range r.p.Tables {
		ts := r.tables[t.Name]
		if ts == nil {
			continue
		}
		// each loss counts once, on the edge where it stopped: before the
		// repartition topic (the repartition stage) or before the store
		n := ts.inputs
		var beforeRepartition, beforeStore int64
		for _, in := range r.losses {
			if in.table != ts || in.loss == nil {
				continue
			}
			if in.loss.stage == audit.StageRepartition && t.Repartition != "" {
				beforeRepartition++
			} else {
				beforeStore++
			}
		}
		to := cmp.Or(t.Changelog, t.Store)
		if t.Repartition != "" {
			r.rep.Edges = append(r.rep.Edges, audit.Edge{From: t.Source, To: t.Repartition, Records: n, Vanished: beforeRepartition})
			r.rep.Edges = append(r.rep.Edges, audit.Edge{From: t.Repartition, To: to, Records: n - beforeRepartition, Vanished: beforeStore})
		} else {
			r.rep.Edges = append(r.rep.Edges, audit.Edge{From: t.Source, To: to, Records: n, Vanished: beforeStore})
		}
	}
	// a join's losses (and a table output's) on the edge into its output
	joinLost := map[string]int64{}
	for _, f := range r.rep.Findings {
		if f.Stage == audit.StageJoin && f.Severity == audit.SeverityLoss {
			joinLost[f.Topic]++
		}
	}
	for _, j := range r.p.Joins {
		for _, name := range append([]string{j.Left}, j.Right...) {
			t := r.p.table(name)
			if t == nil {
				continue
			}
			var n int64
			if ts := r.tables[name]; ts != nil {
				n = ts.storeKeys
			}
			e := audit.Edge{From: cmp.Or(t.Changelog, t.Store), To: j.Output, Records: n}
			if name == j.Left {
				e.Vanished = joinLost[j.Output]
			}
			r.rep.Edges = append(r.rep.Edges, e)
		}
	}
	for _, t := range r.p.Tables {
		if ts := r.tables[t.Name]; ts != nil && t.Output != "" {
			r.rep.Edges = append(r.rep.Edges, audit.Edge{From: cmp.Or(t.Changelog, t.Store), To: t.Output, Records: ts.storeKeys, Vanished: joinLost[t.Output]})
		}
	}
}
