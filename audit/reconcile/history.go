package reconcile

// The commit history's proven skips on the source and repartition partitions.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/history"
)

// judgeHistory judges, before the tables are audited, the commit history
// of every source partition the audit covers (and the repartition
// partitions of the tables not judged by key, and of KTable groupBys;
// those of a table judged by key are held for namePurgesUnseen):
// the skips it proves past
// a restart are findings, said once however many tables read the
// partition; what it cannot settle is missing evidence; and the inputs of
// a range the committed offset was moved past by hand are no inputs (the
// app never consumed them: inputOutsideSkips). The results are read by
// the tables' runs, never written.
func (r *run) judgeHistory(ctx context.Context) {
	h := r.opts.History
	if h == nil || h.History == nil {
		return // no history: the report's note says why, once
	}
	r.skips = map[audit.TopicPartition][]history.Skip{}
	r.unknown = map[audit.TopicPartition][]history.Gap{}
	done := map[audit.TopicPartition]bool{}
	judge := func(topic string, role history.Role) {
		r.judgeTopicHistory(ctx, topic, role, done, nil)
	}
	r.heldPurges = map[string][]audit.Finding{}
	hold := func(name, repartition string) {
		r.judgeTopicHistory(ctx, repartition, history.Repartition, done, func(f audit.Finding) {
			if f.Cause == audit.CausePurgedBeforeCommit {
				r.heldPurges[name] = append(r.heldPurges[name], f)
			}
		})
	}
	for _, j := range r.p.StreamJoins {
		for _, s := range j.Sources {
			judge(s, history.Source)
		}
		hold(j.Name, j.Repartition)
	}
	for _, c := range r.p.Copies {
		judge(c.Source, history.Source)
	}
	for i := range r.p.Tables {
		t := r.p.Tables[i]
		for _, s := range append([]string{t.Source}, t.Merged...) {
			judge(s, history.Source)
		}
		if t.Cogroup != nil {
			for _, m := range t.Cogroup.Members {
				judge(m.Source, history.Source)
				if t.Unjudged == "" && !r.p.Keyless {
					// its keys name what a purge took; after a restart
					// the purge is the history's (heldPurged)
					hold(t.Name, m.Repartition)
				}
			}
		}
		if r.p.Keyless || t.Unjudged != "" || t.Regroup != nil {
			// a table judged by key finds a purged input's effect missing
			// from its store; one that is not, and a KTable groupBy (judged
			// by group, its changes' purge past the commit unreadable once
			// the app committed past it), has only the history
			judge(t.Repartition, history.Repartition)
		} else if t.Repartition != "" {
			hold(t.Name, t.Repartition)
		}
	}
	// every other topic the group commits offsets on: what no table, join
	// or copy reads still lost what the history proves skipped (AB's V18)
	// (a table's or a stream join's own repartition topic is not one: judged
	// by key, its purged copies are named, or, above, by its history)
	modelled := map[string]bool{}
	for _, t := range r.p.Tables {
		modelled[t.Repartition] = true
	}
	for _, j := range r.p.StreamJoins {
		modelled[j.Repartition] = true
	}
	others := map[string]bool{}
	for tp := range r.group.Offsets {
		if !done[tp] && tp.Topic != "" && !modelled[tp.Topic] {
			others[tp.Topic] = true
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(others)) {
		if _, listed := r.topics[topic]; !listed {
			continue // not in the evidence: unreadCommitted notes it
		}
		if r.internal(topic) {
			judge(topic, history.Repartition)
		} else {
			judge(topic, history.Source)
		}
	}
}

// judgeTopicHistory judges the group's commit history on each partition of
// topic not done yet: its findings, missing evidence and skips, or, with
// held, only its findings, handed to held.
func (r *run) judgeTopicHistory(ctx context.Context, topic string, role history.Role, done map[audit.TopicPartition]bool, held func(audit.Finding)) {
	h := r.opts.History
	if topic == "" {
		return
	}
	parts, ok := r.partitionsOf(ctx, topic, role.String())
	if !ok {
		return
	}
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: topic, Partition: p}
		if done[tp] || ctx.Err() != nil {
			continue
		}
		done[tp] = true
		o, err := r.src.Offsets(ctx, tp)
		if err != nil {
			continue // the table's own read says what is wrong with it
		}
		committed, ok := r.group.Offsets[tp]
		if !ok {
			committed = -1
		}
		res := h.Analyze(history.Partition{TP: tp, Role: role, LogStart: r.clusterLogStart(tp, o.LogStart), Now: r.opts.Now, Committed: committed})
		if held != nil {
			// a table judged by key: its purges wait for the judgement,
			// which its skips must not change
			for _, f := range res.Findings() {
				held(f)
			}
			continue
		}
		for _, f := range res.Findings() {
			r.add(f)
		}
		for _, m := range res.Missing() {
			r.missing("%s", m)
		}
		for _, n := range res.Notes {
			if !strings.Contains(n, "holds no commit of it") {
				r.note("%s", n)
			}
		}
		r.skips[tp], r.unknown[tp] = res.Skips, res.Unknown
	}
}

// namePurgesUnseen reports each purge before commit the commit history
// proves on the repartition topic of a table judged by key, or of a
// stream join, whose inputs the judgement named none of: after the app
// committed past the purge, the inputs' effects overwritten by later
// ones (a latest reducer, a max), or an inner join's records whose key
// the table may not have held, leave no key showing them, and the range
// is the loss to report (AB's V11). A range whose partition's inputs the
// judgement named, or that a finding already names, is theirs.
func (r *run) namePurgesUnseen() {
	for _, name := range slices.Sorted(maps.Keys(r.heldPurges)) {
		ts := r.tables[name]
		for _, f := range r.heldPurges[name] {
			tp := audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}
			named := r.purgeNamed[tp] || ts != nil && slices.ContainsFunc(r.losses, func(in *input) bool {
				return in.table == ts && in.loss != nil && in.r == f.Partition &&
					(in.loss.cause == audit.CausePurgedBeforeCommit || in.loss.cause == audit.CauseUnapplied)
			}) || slices.ContainsFunc(r.found, func(g *audit.Finding) bool {
				return g.Cause == audit.CausePurgedBeforeCommit && g.Topic == f.Topic && g.Partition == f.Partition
			})
			if named {
				continue
			}
			f.Detail += fmt.Sprintf("; %s's judgement by key names none of the inputs the range held (later inputs of their keys may have overwritten their effects, an inner join's table may not have held their keys)", name)
			r.add(f)
		}
	}
}

// heldPurged reports whether the commit history proves a purge before
// commit on repartition partition tp of a table judged by key (held for
// namePurgesUnseen): an input whose copy is missing there may be one the
// purge took, after a restart as before it.
func (r *run) heldPurged(tp audit.TopicPartition) bool {
	for _, fs := range r.heldPurges {
		if slices.ContainsFunc(fs, func(f audit.Finding) bool { return f.Topic == tp.Topic && f.Partition == tp.Partition }) {
			return true
		}
	}
	return false
}

// inputOutsideSkips reports whether a consumed record is an input: not
// inside a range the history proves the committed offset moved past
// without the app consuming it.
func (r *run) inputOutsideSkips(tp audit.TopicPartition, offset int64) bool {
	for _, s := range r.skips[tp] {
		if s.From <= offset && offset < s.To {
			return false
		}
	}
	return true
}
