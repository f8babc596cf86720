package reconcile

// A KTable groupBy: each group's aggregate against the table's rows in it.

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// Regroup is what a table needs beyond Table's fields to be
// KTable#groupBy(mapper).count() / .aggregate(init, adder, subtractor) /
// .reduce(adder, subtractor) of the table whose rows Table.Source holds
// (Kafka Streams 3.6.2's KTableRepartitionMap and KTableAggregate /
// KTableReduce). Table.Repartition holds the changes, Table.Store and
// Table.Changelog the aggregates.
type Regroup struct {
	// TableSource says the rows are builder.table()'s: a tombstone
	// deletes a row.
	TableSource bool
	// GroupOf is the mapper: a row's group key and value (either nil:
	// Streams skips the pair).
	GroupOf func(key, value audit.Value) (gk, gv audit.Value, err error)
	// Add and Sub are the adder and the subtractor.
	Add func(agg, v audit.Value, first bool) (audit.Value, error)
	Sub func(agg, v audit.Value) (audit.Value, error)
	// Empty is what the store holds for a group all of whose rows left
	// it (HasEmpty false: the reducer does not say).
	Empty    audit.Value
	HasEmpty bool
}

// change is one record of a KTable groupBy's repartition topic: the
// group's new value and old value (either nil), as Streams'
// ChangedSerializer writes them.
type change struct{ newV, oldV []byte }

// decodeChange splits a ChangedSerializer record (Kafka Streams 3.6):
// {old}{0}, {new}{1}, or {varint len(new)}{new}{old}{2}.
func decodeChange(b []byte) (change, error) {
	if len(b) == 0 {
		return change{}, errors.New("an empty change record")
	}
	body, flag := b[:len(b)-1], b[len(b)-1]
	switch flag {
	case 0:
		return change{oldV: body}, nil
	case 1:
		return change{newV: body}, nil
	case 2:
		// the length is a zig-zag varint (ByteUtils.writeVarint)
		u, n := binary.Uvarint(body)
		if n <= 0 {
			return change{}, errors.New("a change record with a bad length")
		}
		l := int64(u>>1) ^ -int64(u&1)
		if l < 0 || int64(len(body)-n) < l {
			return change{}, fmt.Errorf("a change record whose new value's length %d exceeds it", l)
		}
		return change{newV: body[n : n+int(l)], oldV: body[n+int(l):]}, nil
	}
	return change{}, fmt.Errorf("a change record with flag %d (want 0, 1 or 2: upgrade.from before 3.4 writes another format)", flag)
}

// groupState is what the check works out of one group.
type groupState struct {
	key      audit.Value
	rows     []rowRef
	expected audit.Value
	has      bool
	// applied is how many rows' values the store's aggregate should hold:
	// the rows in the group less the pending changes adding one, plus
	// those taking one out
	applied int
	pending int // its changes at or above the committed offset
}

// rowRef is one row of the re-grouped table at the cut: its last record.
type rowRef struct {
	tp     audit.TopicPartition
	offset int64
	ts     int64
	gv     audit.Value
}

// checkRegroup judges a KTable groupBy by the equation its store must
// satisfy at the cut: each group's aggregate is the adder folded over the
// table's rows in the group (the rows as of the group's committed offset
// on the table's topic), less the changes still pending on the
// repartition topic. It holds for any adder whose result does not depend
// on the rows' order and whose subtractor undoes it (count, sum, and the
// usual aggregates; the check tries both on the data and is not made
// otherwise). A group that breaks it names the rows whose change the
// repartition topic lacks: dropped where it was never purged, else the
// candidates of one unapplied finding; none, on a partition purged past
// its committed offset: the purged-before-commit finding explains it
// (noted); otherwise state-diverged.
func (r *run) checkRegroup(ctx context.Context, t *Table) {
	g := t.Regroup
	if t.Unjudged != "" {
		r.missing("%s", unjudgedText(t))
		return
	}
	rows, ok := r.regroupRows(ctx, t)
	if !ok {
		return
	}
	groups := map[string]*groupState{}
	var failed []string
	for _, row := range slices.Sorted(maps.Keys(rows)) {
		rw := rows[row]
		gk, gv, err := g.GroupOf(rw.key, rw.value)
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s@%d: %v", rw.ref.tp, rw.ref.offset, err))
			continue
		}
		if gk == nil || gv == nil {
			continue // KTableRepartitionMap skips a null key or value
		}
		text := codec.Text(gk)
		gs := groups[text]
		if gs == nil {
			gs = &groupState{key: gk}
			groups[text] = gs
		}
		ref := rw.ref
		ref.gv = gv
		gs.rows = append(gs.rows, ref)
		gs.applied++
	}
	if len(failed) > 0 {
		r.missing("table %s is not judged: its select_key or group_value failed on %d rows (the first: %s)", t.Name, len(failed), failed[0])
		return
	}
	if !r.shardGroups(t, groups) {
		return
	}
	if why := r.foldGroups(g, groups); why != "" {
		r.missing("table %s: %s, so its groups' aggregates are not judged", t.Name, why)
		return
	}
	seen, logStart, ok := r.regroupChanges(ctx, t, groups)
	if !ok {
		return
	}
	finals, ok := r.storeFinals(ctx, t)
	if !ok {
		return
	}
	type broken struct {
		text string
		fin  finalState
		have bool
		want audit.Value
	}
	// a running app applies changes between the reads of its rows, its
	// changes and its store: where the group's offsets on them moved while
	// the audit read, or its changes or its store grew since they were
	// read, a group that breaks the equation is in flight; so is one with
	// pending changes whose store writes outside transactions
	// (at-least-once applies before it commits)
	racing, inFlight := r.movedOn(ctx, []string{t.Source, t.Repartition}) || r.grew(ctx, t.Repartition, t.Changelog), 0
	defer func() {
		if inFlight > 0 {
			r.note("table %s: %d groups' aggregates differ from their rows where the app applied changes between the reads of its rows and its store (the group's offsets moved while the audit read): in flight, not judged", t.Name, inFlight)
		}
	}()
	var bad []broken
	for _, text := range slices.Sorted(maps.Keys(groups)) {
		gs := groups[text]
		fin, have := finals[text]
		var want audit.Value
		switch {
		case gs.has:
			want = gs.expected
		case g.HasEmpty:
			want = g.Empty
		default:
			continue // the reducer does not say what an emptied group holds
		}
		if have && fin.value == nil {
			have = false
		}
		if have && sameValue(fin.value, want) || !have && (!gs.has || gs.applied <= 0) {
			continue // (no state: the store applied none of its rows yet)
		}
		if racing || fin.plain && gs.pending > 0 {
			inFlight++
			continue
		}
		bad = append(bad, broken{text: text, fin: fin, have: have, want: want})
	}
	explained := 0 // broken groups every row's change of which is on the repartition topic
	for _, b := range bad {
		if !slices.ContainsFunc(groups[b.text].rows, func(row rowRef) bool {
			return !seen[changeKey{group: b.text, value: codec.DigestOf(row.gv), ts: row.ts}]
		}) {
			explained++
		}
	}
	if explained >= 3 && 2*explained > len(groups) {
		// most groups break it: the spec's reducer is not the app's (a
		// loss spares most groups)
		r.missing("table %s is not judged: its reducer explains the aggregates of only %d of %d groups (group %s: the rows give %s, the store holds %s), so the spec does not describe the app", t.Name,
			len(groups)-len(bad), len(groups), bad[0].text, codec.Text(bad[0].want), codec.Text(bad[0].fin.value))
		return
	}
	for _, b := range bad {
		r.regroupFinding(t, b.text, groups[b.text], b.fin, b.have, b.want, seen, logStart)
	}
	for _, text := range slices.Sorted(maps.Keys(finals)) {
		if _, ok := groups[text]; ok {
			continue
		}
		fin := finals[text]
		if fin.value == nil || g.HasEmpty && sameValue(fin.value, g.Empty) {
			continue // a group whose rows all left it
		}
		if racing {
			inFlight++
			continue
		}
		if purged := r.purgedChanges(t, text, logStart); purged != "" {
			r.note("table %s: the store holds %s for group %s, which no row of the table is in now; the changes %s, purged before the store applied them (the purged-before-commit finding), explain it", t.Name, codec.Text(fin.value), text, purged)
			continue
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseStateDiverged, fin.tp, fin.offset)
		f.Key, f.Actual = text, codec.Text(fin.value)
		f.Detail = fmt.Sprintf("table %s: the store holds %s for group %s, which no row of the table is in now (and no pending change explains)", t.Name, codec.Text(fin.value), text)
		r.add(f)
	}
	if t.Output != "" {
		r.finalOutput(ctx, t, finals)
	}
}

// rowAt is a row of the re-grouped table at the cut.
type rowAt struct {
	key, value audit.Value
	ref        rowRef
}

// regroupRows reads the re-grouped table's rows at the group's committed
// offsets on its topic: each key's last record below them (a tombstone
// of a builder.table deletes the row).
func (r *run) regroupRows(ctx context.Context, t *Table) (map[string]rowAt, bool) {
	parts, ok := r.partitionsOf(ctx, t.Source, "source")
	if !ok {
		return nil, false
	}
	if r.opts.Partitions != nil {
		// a shard's groups take rows of every partition: it reads them all
		// and keeps its groups (shardGroups)
		parts = allPartitions(r.topics[t.Source].Partitions)
	}
	rows := map[string]rowAt{}
	tps := tpsOf(t.Source, parts)
	rd := r.readAgain(ctx, tps, "source", decodeAll)
	defer rd.stop()
	for _, tp := range tps {
		c := r.committed(tp)
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			rec := &it.Record
			if it.Fate != audit.FateCommitted || c < 0 || rec.Offset >= c || it.decErr != nil || it.key == nil {
				return
			}
			text := codec.Text(it.key)
			if it.value == nil {
				if t.Regroup.TableSource {
					delete(rows, text)
				}
				return
			}
			rows[text] = rowAt{key: it.key, value: it.value, ref: rowRef{tp: tp, offset: rec.Offset, ts: rec.Timestamp}}
		})
		if !ok || l == nil {
			r.missing("table %s: %s is unreadable, so the rows it re-groups are not known and its groups are not judged", t.Name, tp)
			return nil, false
		}
		if r.clusterLogStart(tp, l.Offsets.LogStart) > 0 {
			r.missing("table %s: %s's first records are deleted (log start %d), so the rows it re-groups are not known and its groups are not judged", t.Name, tp, l.Offsets.LogStart)
			return nil, false
		}
	}
	return rows, true
}

// foldGroups folds each group's rows with the adder, and checks on the
// data that the fold does not depend on the rows' order and that the
// subtractor undoes the adder; it says why not, "" when it does.
func (r *run) foldGroups(g *Regroup, groups map[string]*groupState) string {
	fold := func(rows []rowRef) (audit.Value, error) {
		var agg audit.Value
		for i, row := range rows {
			next, err := g.Add(agg, row.gv, i == 0)
			if err != nil {
				return nil, err
			}
			agg = next
		}
		return agg, nil
	}
	for _, text := range slices.Sorted(maps.Keys(groups)) {
		gs := groups[text]
		if len(gs.rows) == 0 {
			continue
		}
		agg, err := fold(gs.rows)
		if err != nil {
			return fmt.Sprintf("the adder failed on group %s: %v", text, err)
		}
		gs.expected, gs.has = agg, true
		if len(gs.rows) < 2 {
			continue
		}
		rev := slices.Clone(gs.rows)
		slices.Reverse(rev)
		if agg2, err := fold(rev); err != nil || !sameValue(agg, agg2) {
			return fmt.Sprintf("the adder's result depends on the order of the rows (group %s: %s one way, %s the other)", text, codec.Text(agg), codec.Text(agg2))
		}
		prefix, err := fold(gs.rows[:len(gs.rows)-1])
		if err != nil {
			return fmt.Sprintf("the adder failed on group %s: %v", text, err)
		}
		if back, err := g.Sub(agg, gs.rows[len(gs.rows)-1].gv); err != nil || !sameValue(back, prefix) {
			return fmt.Sprintf("the subtractor does not undo the adder on group %s (%s less its last row gives %s, not %s)", text, codec.Text(agg), codec.Text(back), codec.Text(prefix))
		}
	}
	return ""
}

// changeKey is what a row's change is found by on the repartition topic:
// the group, the new value and the timestamp.
type changeKey struct {
	group string
	value codec.Digest
	ts    int64
}

// regroupChanges reads the repartition topic: the committed changes by
// group, new value and timestamp, each partition's log start, and the
// pending changes (at or above the group's committed offset), whose
// effect it takes out of the groups' expected aggregates.
func (r *run) regroupChanges(ctx context.Context, t *Table, groups map[string]*groupState) (map[changeKey]bool, map[int32]int64, bool) {
	g := t.Regroup
	parts, ok := r.partitionsOf(ctx, t.Repartition, "repartition")
	if !ok {
		return nil, nil, false
	}
	seen := map[changeKey]bool{}
	logStart := map[int32]int64{}
	tps := tpsOf(t.Repartition, parts)
	rd := r.read(ctx, tps, "repartition", decodeNone)
	defer rd.stop()
	var bad error
	for _, tp := range tps {
		c := r.committed(tp)
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			rec := &it.Record
			if it.Fate != audit.FateCommitted || bad != nil {
				return
			}
			r.count("repartition", 1)
			ch, err := decodeChange(rec.Value)
			var key, nv, ov audit.Value
			if err == nil {
				key, err = r.opts.Decoder.Decode(ctx, t.Repartition, true, rec.Key)
			}
			if err == nil && ch.newV != nil {
				nv, err = r.opts.Decoder.Decode(ctx, t.Repartition, false, ch.newV)
			}
			if err == nil && ch.oldV != nil {
				ov, err = r.opts.Decoder.Decode(ctx, t.Repartition, false, ch.oldV)
			}
			if err != nil {
				bad = fmt.Errorf("%s@%d: %w", tp, rec.Offset, err)
				return
			}
			text := codec.Text(key)
			if nv != nil {
				seen[changeKey{group: text, value: codec.DigestOf(nv), ts: rec.Timestamp}] = true
			}
			if c >= 0 && rec.Offset < c {
				return
			}
			// pending: the store has not applied it, so the equation
			// holds without it
			gs := groups[text]
			if gs == nil {
				gs = &groupState{key: key}
				groups[text] = gs
			}
			gs.pending++
			var err2 error
			if nv != nil {
				gs.applied--
			}
			if ov != nil {
				gs.applied++
			}
			if nv != nil && gs.has {
				gs.expected, err2 = g.Sub(gs.expected, nv)
			}
			if ov != nil && err2 == nil {
				gs.expected, err2 = g.Add(gs.expected, ov, !gs.has)
				gs.has = true
			}
			if err2 != nil {
				bad = fmt.Errorf("%s@%d (pending): %w", tp, rec.Offset, err2)
			}
		})
		if !ok || l == nil {
			r.missing("table %s: the repartition partition %s is unreadable, so its groups are not judged", t.Name, tp)
			return nil, nil, false
		}
		logStart[tp.Partition] = r.clusterLogStart(tp, l.Offsets.LogStart)
		r.purgedPastCommit(tp, logStart[tp.Partition], c, "table "+t.Name, "changes", "the store applied them")
	}
	if bad != nil {
		r.missing("table %s: a change record of %s could not be read (%v), so its groups are not judged", t.Name, t.Repartition, bad)
		return nil, nil, false
	}
	return seen, logStart, true
}

// finalState is a group's last committed state on the changelog.
type finalState struct {
	tp     audit.TopicPartition
	offset int64
	value  audit.Value
	plain  bool // written outside a transaction (at-least-once)
}

// storeFinals reads each key's last committed state on the changelog.
func (r *run) storeFinals(ctx context.Context, t *Table) (map[string]finalState, bool) {
	parts, ok := r.partitionsOf(ctx, t.Changelog, "changelog")
	if !ok {
		return nil, false
	}
	finals := map[string]finalState{}
	tps := tpsOf(t.Changelog, parts)
	rd := r.read(ctx, tps, "changelog", decodeAll)
	defer rd.stop()
	for _, tp := range tps {
		if !r.walk(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			r.count("changelog", 1)
			finals[codec.Text(it.key)] = finalState{tp: tp, offset: it.Record.Offset, value: it.value, plain: it.Txn == nil}
		}) {
			r.missing("table %s: changelog partition %s is unreadable, so its groups are not judged", t.Name, tp)
			return nil, false
		}
	}
	return finals, true
}

// regroupFinding reports a group whose state breaks the equation.
func (r *run) regroupFinding(t *Table, text string, gs *groupState, fin finalState, have bool, want audit.Value, seen map[changeKey]bool, logStart map[int32]int64) {
	actual := "no state"
	if have {
		actual = codec.Text(fin.value)
	}
	// the rows of the group whose change never reached the repartition
	// topic
	var missingRows []rowRef
	for _, row := range gs.rows {
		if !seen[changeKey{group: text, value: codec.DigestOf(row.gv), ts: row.ts}] {
			missingRows = append(missingRows, row)
		}
	}
	p := r.groupPartition(t, text)
	whole := p >= 0 && logStart[p] == 0
	purged := r.purgedChanges(t, text, logStart)
	switch {
	case purged != "":
		r.note("table %s: group %s's aggregate is %s, its rows give %s; the changes %s, purged before the store applied them (the purged-before-commit finding), explain it (a row's change, a row leaving the group, or a version since replaced)", t.Name, text, actual, codec.Text(want), purged)
	case len(missingRows) > 0 && whole:
		for _, row := range missingRows {
			f := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, row.tp, row.offset)
			f.Key, f.Timestamp, f.Expected, f.Actual = text, row.ts, codec.Text(want), actual
			f.Detail = fmt.Sprintf("table %s: the row's change to group %s is not on %s, never purged, and the group's aggregate lacks it (the table's rows give %s, the store holds %s): the app consumed it and wrote nothing for it", t.Name, text, t.Repartition, codec.Text(want), actual)
			r.add(f)
		}
	case len(missingRows) > 0:
		var cands []string
		for _, row := range missingRows {
			cands = append(cands, fmt.Sprintf("%s@%d", row.tp, row.offset))
		}
		tp, off := fin.tp, fin.offset
		if !have {
			tp, off = missingRows[0].tp, missingRows[0].offset
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseUnapplied, tp, off)
		f.Key, f.Expected, f.Actual, f.Count = text, codec.Text(want), actual, 1
		f.Candidates = strings.Join(cands, ", ")
		f.Detail = fmt.Sprintf("table %s: group %s's aggregate is %s, its rows give %s; the repartition topic, purged, holds no change of the rows listed: dropped, or applied and lost, the evidence cannot tell which", t.Name, text, actual, codec.Text(want))
		r.add(f)
	case p >= 0 && len(r.unknown[audit.TopicPartition{Topic: t.Repartition, Partition: p}]) > 0:
		// changes purged where the history cannot tell whether the app
		// consumed them: the one the group lacks may be among them
		tp, off := fin.tp, fin.offset
		if !have {
			tp, off = audit.TopicPartition{Topic: t.Changelog, Partition: p}, -1
		}
		var ranges []string
		for _, g := range r.unknown[audit.TopicPartition{Topic: t.Repartition, Partition: p}] {
			if g.From >= 0 {
				ranges = append(ranges, fmt.Sprintf("%d-%d", g.From, g.To-1))
			}
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseUnapplied, tp, off)
		f.Key, f.Expected, f.Actual = text, codec.Text(want), actual
		f.Detail = fmt.Sprintf("table %s: group %s's aggregate is %s, its rows give %s; the changes of %s/%d offsets %s are purged, and nothing tells whether the app consumed them before its committed offset moved past them (missing evidence): the change the group lacks (a row's, or a row leaving the group) may be among them, dropped or applied and lost", t.Name, text, actual, codec.Text(want), t.Repartition, p, cmp.Or(strings.Join(ranges, ", "), "not known"))
		r.add(f)
	default:
		tp, off := fin.tp, fin.offset
		if !have {
			tp, off = audit.TopicPartition{Topic: t.Changelog, Partition: max(p, 0)}, -1
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseStateDiverged, tp, off)
		f.Key, f.Expected, f.Actual = text, codec.Text(want), actual
		f.Detail = fmt.Sprintf("table %s: group %s's aggregate is %s, but its rows as the table holds them give %s, and every row's change is on %s: the store lost or never applied a change", t.Name, text, actual, codec.Text(want), t.Repartition)
		r.add(f)
	}
}

// purgedChanges names the changes of group text's repartition partition
// purged before the store applied them ("" if none), past the committed
// offset now or, by the commit history, before a restart: a row that left the
// group (its subtraction), or a version the table no longer holds, may be
// among them.
func (r *run) purgedChanges(t *Table, text string, logStart map[int32]int64) string {
	p := r.groupPartition(t, text)
	if p < 0 {
		return ""
	}
	rtp := audit.TopicPartition{Topic: t.Repartition, Partition: p}
	if c := r.committed(rtp); c >= 0 && logStart[p] > c {
		return fmt.Sprintf("%s@%d-%d", rtp, c, logStart[p]-1)
	}
	// the app committed past the purge since: the commit history proves it
	var ranges []string
	for _, s := range r.skips[rtp] {
		if s.Cause == audit.CausePurgedBeforeCommit {
			ranges = append(ranges, fmt.Sprintf("%s@%d-%d", rtp, s.From, s.To-1))
		}
	}
	return strings.Join(ranges, ", ")
}

// shardGroups keeps, in a shard (--partitions), the groups whose
// repartition partition is the shard's; it reports false, the table not
// judged, where the key serde cannot place a group.
func (r *run) shardGroups(t *Table, groups map[string]*groupState) bool {
	if r.opts.Partitions == nil {
		return true
	}
	for text := range groups {
		p := r.groupPartition(t, text)
		if p < 0 {
			r.missing("table %s: --partitions keeps the groups the shard's partitions hold, but the key serde %q cannot place group %s in a partition, so the table is not judged (run without --partitions)", t.Name, r.p.KeySerde, text)
			return false
		}
		if !containsPartition(r.opts.Partitions, p) {
			delete(groups, text)
		}
	}
	return true
}

// groupPartition is the repartition partition of a group key, -1 when
// the key serde cannot place it.
func (r *run) groupPartition(t *Table, text string) int32 {
	return partitionOfKey(r.keySerde(t), text, r.topics[t.Repartition].Partitions)
}

// finalOutput checks the table's own output: each group's last record
// there is its final state (toStream().to() forwards every flushed
// state).
func (r *run) finalOutput(ctx context.Context, t *Table, finals map[string]finalState) {
	if t.OutputUnjudged != "" {
		r.missing("%s", t.OutputUnjudged)
		return
	}
	parts, ok := r.partitionsOf(ctx, t.Output, "output")
	if !ok {
		return
	}
	last := map[string]finalState{}
	tps := tpsOf(t.Output, parts)
	rd := r.read(ctx, tps, "output", decodeAll)
	defer rd.stop()
	for _, tp := range tps {
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			r.count("output", 1)
			last[codec.Text(it.key)] = finalState{tp: tp, offset: it.Record.Offset, value: it.value}
		})
		if !ok || l == nil || r.clusterLogStart(tp, l.Offsets.LogStart) > 0 {
			r.missing("table %s: output partition %s is unreadable or its first records deleted, so the output is not judged", t.Name, tp)
			return
		}
	}
	// a running app writes between the reads of its store and its output
	racing, inFlight := r.movedOn(ctx, []string{t.Source, t.Repartition}) || r.grew(ctx, t.Changelog, t.Output), 0
	for _, text := range slices.Sorted(maps.Keys(finals)) {
		fin := finals[text]
		o, ok := last[text]
		if racing && (!ok && fin.value != nil || ok && !sameValue(o.value, fin.value)) {
			inFlight++
			continue
		}
		switch {
		case !ok && fin.value != nil:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, fin.tp, fin.offset)
			f.Key, f.Expected = text, codec.Text(fin.value)
			f.Detail = fmt.Sprintf("table %s: the output %s holds no record of group %s, whose state is %s", t.Name, t.Output, text, codec.Text(fin.value))
			r.add(f)
		case ok && !sameValue(o.value, fin.value):
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Expected, f.Actual = text, codec.Text(fin.value), codec.Text(o.value)
			f.Detail = fmt.Sprintf("table %s: the output's last record of group %s is %s, the store's final state %s", t.Name, text, codec.Text(o.value), codec.Text(fin.value))
			r.add(f)
		}
	}
	if inFlight > 0 {
		r.note("table %s: for %d groups its output %s and its store differ where the app wrote between their reads (the group's offsets moved while the audit read): in flight, not judged", t.Name, inFlight, t.Output)
	}
}

// sameValue compares two decoded values, numbers by value (a Long 3 is
// the fold's 3, an Integer 3.0 the same).
func sameValue(a, b audit.Value) bool {
	if codec.DigestOf(a) == codec.DigestOf(b) {
		return true
	}
	x, ok1 := numberOf(a)
	y, ok2 := numberOf(b)
	return ok1 && ok2 && x.Cmp(y) == 0
}

// numberOf reads a decoded number exactly.
func numberOf(v audit.Value) (*big.Rat, bool) {
	s := strings.TrimSpace(codec.Text(v))
	if s == "" || strings.ContainsAny(s, "\"{[tfn") {
		return nil, false
	}
	x, ok := new(big.Rat).SetString(s)
	return x, ok
}
