package reconcile

// A table's own output (toStream().to()): each key's states and last record.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

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
//
// The same flush writes the changelog and forwards downstream (with caching
// the flushed states only, without it every state), so each committed state
// of a key's changelog is also one of its output records, in the same
// order. Where the output is readable from offset 0 and not compacted, a
// committed state the output lacks is a state that vanished on the way to
// the output: a join-missing finding of that state, at the output.
func (r *run) checkOutput(ctx context.Context, ts *tableState) {
	t := ts.t
	parts, ok := r.partitionsOf(ctx, t.Output, "output")
	if !ok {
		return
	}
	if len(ts.unreadable) > 0 || len(ts.absent) > 0 || t.Unjudged != "" || t.Changelog == "" || ts.steps.failures > 0 {
		r.walkAll(ctx, tpsOf(t.Output, parts), "output", func(*item) {})
		r.missing("table %s: its output %s is not judged, since the table's own evidence is incomplete", t.Name, t.Output)
		return
	}
	if t.OutputUnjudged != "" {
		r.walkAll(ctx, tpsOf(t.Output, parts), "output", func(*item) {})
		r.missing("table %s: its output %s is not judged: %s", t.Name, t.Output, strings.TrimPrefix(t.OutputUnjudged, "table "+t.Name+": "))
		return
	}
	var expect map[string][]clEntry // the output steps applied to each state, where the table has them
	var outKeys map[string]string   // table key → output key, where the output steps re-key
	if t.OutputSteps != nil {
		var ok bool
		if expect, outKeys, ok = r.expectedOutputs(ctx, ts); !ok {
			r.walkAll(ctx, tpsOf(t.Output, parts), "output", func(*item) {})
			return
		}
	}
	subjects, spread := r.outputSubjects(ts, expect, outKeys)
	window := t.Window
	if t.OutputRekeys {
		window = nil // the output's keys are the steps', not the store's windowed ones
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
	// states holds each key's output records in order, where the output's
	// partitions are whole (nothing deleted, nothing compacted away); a
	// suppressed window's output holds its final state only
	states := map[string][]clEntry{}
	whole := !r.topics[t.Output].Compacted() && (t.Window == nil || !t.Window.Suppress)
	rd := r.startReads(ctx, &reads{r: r, role: "output", decode: decodeDigest, window: window}, tpsOf(t.Output, parts))
	defer rd.stop()
	var unreadable []audit.TopicPartition
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: t.Output, Partition: p}
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			rec := &it.Record
			r.count("output", 1)
			out[it.keyText] = last{tp: tp, offset: rec.Offset, ts: rec.Timestamp, digest: it.digest, null: rec.Value == nil, raw: rec.Value}
			if whole {
				e := clEntry{offset: rec.Offset, ts: rec.Timestamp, null: rec.Value == nil}
				if !e.null {
					e.digest = it.digest
				}
				states[it.keyText] = append(states[it.keyText], e)
			}
		})
		if !ok {
			unreadable = append(unreadable, tp)
		}
		if l == nil || l.Offsets.LogStart > 0 {
			whole = false // retention deleted the output's first records: their states cannot be looked for
		}
	}
	if ctx.Err() != nil {
		return
	}
	if len(unreadable) > 0 {
		r.missing("table %s: its output %s could not be read (%s), so it is not judged", t.Name, t.Output, tpList(unreadable))
		return
	}
	if spread > 0 {
		r.missing("table %s: its output steps write the states of keys of different tasks under one key for %d keys of %s, whose order the offsets do not tell: those keys are not judged", t.Name, spread, t.Output)
	}
	unknown := 0 // keys whose last output the output steps leave unknown
	// a running app writes between the reads of its changelog and of its
	// output: where the group's offsets moved while the audit read, or the
	// changelog or the output grew since they were read, what differs
	// between them is in flight; so it is where the app runs at-least-once
	// with input not consumed yet (it writes its changelog and its output
	// outside transactions, the one before the other)
	racing, inFlight := r.movedSince(ctx, []*tableState{ts}) || r.grew(ctx, t.Changelog, t.Output) || ts.atLeastOnce && ts.lagged, 0
	for _, sub := range subjects {
		key, cs := sub.key, sub.cl
		fin, present := cs.final()
		o, have := out[key]
		if t.Window != nil && t.Window.Suppress && !r.windowClosed(ts, sub.member) {
			continue // suppressed until the window closes: an open window's output is not due
		}
		hist := cs.history
		if expect != nil {
			// the output holds the states the steps pass, as they map them:
			// its last record is the last state that passes
			exp := sub.exp
			switch {
			case len(exp) > 0 && !sub.lastFiltered:
				fin, present = exp[len(exp)-1], !exp[len(exp)-1].null
			case t.Window != nil && t.Window.Suppress:
				continue // suppress forwards the final state only: the steps reject it, nothing is due
			case !sub.whole:
				unknown++ // the state the output last holds may be compacted away
				continue
			case len(exp) > 0:
				fin, present = exp[len(exp)-1], !exp[len(exp)-1].null
			default:
				continue // no state of the key passes the steps: the output need not hold it
			}
			hist = exp
		}
		if whole && have {
			r.vanishedOnTheWay(ctx, ts, sub, o.tp, hist, states[key])
		}
		if racing && (present != (have && !o.null) || have && present && (o.digest != fin.digest || o.ts != fin.ts)) {
			inFlight++
			continue
		}
		switch {
		case present && !have:
			pkey := ts.fpKey(key)
			if t.OutputRekeys {
				pkey = key
			}
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, audit.TopicPartition{Topic: t.Output, Partition: r.outPartition(t.Output, pkey, outRecord{}, false)}, -1)
			f.Key, f.Timestamp = key, fin.ts
			f.Detail = fmt.Sprintf("table %s holds key %s at the cut (changelog %s/%d@%d), its output %s has no record for it", t.Name, sub.member, t.Changelog, cs.partition, fin.offset, t.Output)
			if t.OutputRekeys {
				f.Detail += fmt.Sprintf(" (under key %s, as its output steps write it)", key)
			}
			r.add(f)
		case have && present && (o.null || o.digest != fin.digest || o.ts != fin.ts):
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Timestamp, f.Actual = key, o.ts, r.text(ctx, t.Output, false, o.raw)
			f.Detail = fmt.Sprintf("table %s: the output's last record for key %s (timestamp %d) is not the store's final state (changelog %s/%d@%d, timestamp %d)", t.Name, key, o.ts, t.Changelog, cs.partition, fin.offset, fin.ts)
			r.add(f)
		case have && !present && !o.null && len(hist) > 0:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Timestamp, f.Actual, f.Expected = key, o.ts, r.text(ctx, t.Output, false, o.raw), "absent"
			f.Detail = fmt.Sprintf("table %s deleted key %s (a tombstone in its changelog), its output still holds a value for it", t.Name, sub.member)
			r.add(f)
		}
	}
	if unknown > 0 {
		r.note("table %s: for %d keys the last state passes no output step and the changelog is compacted, so what the output last holds of them is not known and not judged", t.Name, unknown)
	}
	if inFlight > 0 {
		r.note("table %s: for %d keys its output %s and its store differ where the app wrote between their reads (the group's offsets moved while the audit read, a topic grew after it was read, or an at-least-once app had input not consumed): in flight, not judged", t.Name, inFlight, t.Output)
	}
}

// outSubject is what one key of a table's output holds: the states of
// the table key it is (member), or, where the output steps re-key, of
// every table key written under it, merged in changelog order (one task
// writes them all, in that order, to its changelog and its output).
type outSubject struct {
	key    string   // the output's key text
	member string   // a table key written under it (the first), for details
	cl     *clState // the members' committed states, in offset order
	exp    []clEntry
	// lastFiltered: the last committed state of some member passes no
	// output step; whole: every member's changelog partition is whole
	lastFiltered, whole bool
}

// outputSubjects lists the output's keys to judge, in order: the table's
// keys, or the output keys the steps write them under (outKeys), each
// with its members' states merged; spread counts the output keys whose
// members are in different changelog partitions (tasks), which are left
// out, and suppressed windows written under one key, which are too (the
// buffer emits a window at its close, not in changelog order).
func (r *run) outputSubjects(ts *tableState, expect map[string][]clEntry, outKeys map[string]string) (subs []outSubject, spread int) {
	lastFiltered := func(key string) bool {
		cs, exp := ts.changelog[key], expect[key]
		return len(exp) == 0 || exp[len(exp)-1].offset != cs.history[len(cs.history)-1].offset
	}
	if !ts.t.OutputRekeys {
		for _, key := range slices.Sorted(maps.Keys(ts.changelog)) {
			cs := ts.changelog[key]
			subs = append(subs, outSubject{key: key, member: key, cl: cs, exp: expect[key], lastFiltered: expect != nil && lastFiltered(key), whole: ts.clWhole[cs.partition]})
		}
		return subs, 0
	}
	groups := map[string][]string{}
	for key := range ts.changelog {
		if o, ok := outKeys[key]; ok {
			groups[o] = append(groups[o], key)
		}
	}
	for _, o := range slices.Sorted(maps.Keys(groups)) {
		members := groups[o]
		slices.Sort(members)
		first := ts.changelog[members[0]]
		sub := outSubject{key: o, member: members[0], cl: first, exp: expect[members[0]], lastFiltered: lastFiltered(members[0]), whole: ts.clWhole[first.partition]}
		if len(members) > 1 {
			suppressed := ts.t.Window != nil && ts.t.Window.Suppress
			if suppressed || slices.ContainsFunc(members, func(k string) bool { return ts.changelog[k].partition != first.partition }) {
				spread++
				continue
			}
			cl := &clState{partition: first.partition, txn: -1}
			var exp []clEntry
			for _, k := range members {
				cl.history = append(cl.history, ts.changelog[k].history...)
				exp = append(exp, expect[k]...)
			}
			byOffset := func(a, b clEntry) int { return cmp.Compare(a.offset, b.offset) }
			slices.SortFunc(cl.history, byOffset)
			slices.SortFunc(exp, byOffset)
			sub.cl, sub.exp = cl, exp
			sub.lastFiltered = len(exp) == 0 || exp[len(exp)-1].offset != cl.history[len(cl.history)-1].offset
		}
		subs = append(subs, sub)
	}
	return subs, spread
}

// expectedOutputs applies the table's output steps (toStream() then
// filter, mapValues…) to every committed state of its changelog, read
// again with values: per key, in order, what the output holds of each
// state that passes (its digest as the steps map it, the state's
// timestamp and offset) and, where the steps re-key (OutputRekeys), each
// table key's output key. false: the steps could not be evaluated on some
// state, or write a table key's states under different keys, and the
// output is not judged (said in missing evidence).
func (r *run) expectedOutputs(ctx context.Context, ts *tableState) (map[string][]clEntry, map[string]string, bool) {
	t := ts.t
	parts, ok := r.partitionsOf(ctx, t.Changelog, "changelog")
	if !ok {
		return nil, nil, false
	}
	var outKeys map[string]string
	var rekeyErr string
	if t.OutputRekeys {
		outKeys = map[string]string{}
	}
	tps := tpsOf(t.Changelog, parts)
	rd := r.startReads(ctx, &reads{r: r, role: "changelog", decode: decodeAll, window: t.Window, withSeq: true, again: true}, tps)
	defer rd.stop()
	out := map[string][]clEntry{}
	var failures int64
	var first string
	for _, tp := range tps {
		_, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || it.decErr != nil {
				return
			}
			rec := &it.Record
			var v audit.Value
			if rec.Value != nil {
				v = it.value
			}
			els, err := t.OutputSteps(Env{Key: it.key, Value: v, Headers: rec.Headers, Timestamp: rec.Timestamp})
			if err == nil && len(els) > 1 {
				err = fmt.Errorf("the output steps emit %d records for one state", len(els))
			}
			if err != nil {
				failures++
				if first == "" {
					first = fmt.Sprintf("%s@%d: %v", tp, rec.Offset, err)
				}
				return
			}
			if len(els) == 0 {
				return
			}
			e := clEntry{offset: rec.Offset, ts: rec.Timestamp, null: els[0].Value == nil}
			if !e.null {
				e.digest = codec.DigestOf(els[0].Value)
			}
			key := it.keyText
			if key == "" {
				key = codec.Text(it.key)
			}
			if outKeys != nil {
				okey := codec.Text(els[0].Key)
				if prev, seen := outKeys[key]; seen && prev != okey {
					rekeyErr = fmt.Sprintf("the states of key %s are written under keys %s and %s (the output key depends on the state)", key, prev, okey)
				}
				outKeys[key] = okey
			}
			out[key] = append(out[key], e)
		})
		if !ok {
			r.missing("table %s: its output %s is not judged: changelog %s could not be read again for its states", t.Name, t.Output, tp)
			return nil, nil, false
		}
	}
	if failures > 0 {
		r.missing("table %s: its output %s is not judged: the output steps failed on %d states of the store (the first: %s)", t.Name, t.Output, failures, first)
		return nil, nil, false
	}
	if rekeyErr != "" {
		r.missing("table %s: its output %s is not judged: its output steps change the key, and %s, so an output record cannot be told from the state it holds", t.Name, t.Output, rekeyErr)
		return nil, nil, false
	}
	return out, outKeys, true
}

// vanishedOnTheWay reports the committed states of a key's changelog, before
// its last, that the key's output records (outs, in order) do not hold: the
// states are found in the output in the changelog's order (a subsequence),
// and each one not found is a state the flush wrote to the changelog and
// never forwarded to the output. The last state is checkOutput's own check.
func (r *run) vanishedOnTheWay(ctx context.Context, ts *tableState, sub outSubject, tp audit.TopicPartition, hist, outs []clEntry) {
	t, cs := ts.t, sub.cl
	if len(hist) < 2 {
		return
	}
	j := 0
	for _, c := range hist[:len(hist)-1] {
		k := j
		judged := r.inWindow(c.ts) // --since/--until: a state of the window's inputs
		for k < len(outs) && (outs[k].null != c.null || outs[k].digest != c.digest || outs[k].ts != c.ts) {
			k++
		}
		if k < len(outs) {
			j = k + 1
			continue
		}
		if !judged {
			continue
		}
		f := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, tp, -1)
		f.Key, f.Timestamp = sub.key, c.ts
		if c.null {
			f.Expected = "absent"
		} else if rec, ok := r.recordAt(ctx, audit.TopicPartition{Topic: t.Changelog, Partition: cs.partition}, c.offset); ok && t.OutputSteps == nil {
			f.Expected = r.text(ctx, t.Changelog, false, rec.Value)
		}
		f.Detail = fmt.Sprintf("table %s's state of key %s at changelog %s/%d@%d (timestamp %d) is not among its output %s's records for the key: the flush that wrote it to the changelog forwarded it, and it vanished on the way to the output", t.Name, sub.member, t.Changelog, cs.partition, c.offset, c.ts, t.Output)
		r.add(f)
	}
}
