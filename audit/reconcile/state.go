package reconcile

// A table's check: which keys can be judged, and the losses' attribution.

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

// checkTable checks the table's inputs against its repartition copies
// and its store, and attributes the inputs whose effect is missing. A
// spilled table is checked a bucket of keys at a time; what needs every
// key waits until all are checked: the keys with an input without a copy
// are judged in a second pass over their buckets, and the vanished inputs
// are attributed after (whether the copies of an input's neighbours are
// readable depends on them all), and the keys' findings stand only if
// some key is the store's (keysMismatch).
func (r *run) checkTable(ctx context.Context, ts *tableState) error {
	if err := r.ready(); err != nil {
		return err
	}
	r.exactHistories(ts)
	if ts.spill == nil {
		ts.addFound(ts.copies) // every input matched (a spilled table's, a bucket at a time)
	}
	check, foldIncomplete := r.checkable(ts)
	if check == checkPresence && ts.spill != nil {
		// the check picks inputs by their neighbours' copies: match every bucket first
		if err := r.matchBuckets(ctx, ts); err != nil {
			return err
		}
	}
	if check == checkKeys && ts.spill != nil {
		// only a key with an input without a copy needs its neighbours'
		// copies (ts.found): its buckets are checked again for it, after all
		ts.pass = passFound
	}
	var st keyStats
	var dups []copyInfo
	var lost []*input
	var again []int // the buckets of keys put off by passFound
	err := r.eachBucket(ctx, ts, nil, func(b int) {
		nl, nd := len(lost), len(ts.diverged)
		defer func() { ts.retainFor(lost[nl:], ts.diverged[nd:]) }()
		st.add(ts.keyStats())
		dups = append(dups, ts.dups()...)
		switch check {
		case checkKeys:
			lost = append(lost, r.checkKeys(ctx, ts)...)
		case checkPresence:
			lost = append(lost, r.presenceOnly(ts)...)
		}
		r.countInputs(ts)
		if ts.putOff {
			again, ts.putOff = append(again, b), false
		}
	})
	if err == nil && len(again) > 0 {
		ts.pass = passPutOff
		err = r.eachBucket(ctx, ts, again, func(int) {
			nl, nd := len(lost), len(ts.diverged)
			lost = append(lost, r.checkKeys(ctx, ts)...)
			ts.retainFor(lost[nl:], ts.diverged[nd:])
		})
	}
	ts.pass = passAll
	if err != nil {
		return err
	}
	if check == checkNone {
		ts.forget()
		r.specFree(ts)
		return nil
	}
	if check == checkPresence {
		// the inputs of a range purged before commit are not named without
		// a state check: the range is (the keyless check runs whatever the
		// table's judgement)
		defer r.specFree(ts)
	}
	if msg := keysMismatch(ts, st); msg != "" {
		what := "select_key does"
		if ts.t.Steps != nil {
			what = "steps do"
		}
		r.missing("table %s: %s: the spec's %s not describe the app, so the table is not judged", ts.t.Name, msg, what)
		ts.forget()
		r.specFree(ts)
		return nil
	}
	if ts.failed > 0 {
		r.missing("table %s: the reducer failed on the inputs of %d keys (%s), so the table is not judged", ts.t.Name, ts.failed, strings.Join(ts.failedKeys, "; "))
		ts.forget()
		r.specFree(ts)
		return nil
	}
	r.duplicates(ctx, ts, dups)
	if foldIncomplete {
		r.missing("table %s: its reducer folds every input, but the source history is not readable from offset 0 (retention or an unreadable partition), so its expected state cannot be rebuilt", ts.t.Name)
	}
	for _, f := range ts.undecided {
		r.add(f)
		r.rep.Summary.Undecided++
	}
	for _, f := range ts.doubled {
		r.add(f)
	}
	for _, d := range ts.diverged {
		f := r.add(d.f)
		if d.want {
			ts.wantActual(d.f.Key, f)
		}
	}
	start := len(r.losses)
	for _, in := range lost {
		r.attribute(ctx, ts, in)
	}
	r.sortLosses(ts, start)
	if check == checkKeys {
		r.reportLate(ts) // only the explanations tell a late input from one a restart let in
	}
	slices.Sort(ts.keyNotes)
	for _, n := range ts.keyNotes {
		r.note("%s", n)
	}
	if ts.deletedState > 0 {
		r.note("table %s: for %d keys the store holds a value that no readable input has; it may be that of an input deleted from %s by retention, so they are not judged",
			ts.t.Name, ts.deletedState, ts.partList(ts.deletedFrom))
	}
	if ts.reapplied > 0 {
		r.missing("table %s: for %d keys no order of their inputs, each applied once (or twice), gives the store's history: its changelog is written outside transactions, so the app runs at-least-once and applies again, after each restart, what it processed since its last commit; only the inputs that cannot have been applied, or that are newer than the key's state, are judged for them", ts.t.Name, ts.reapplied)
	}
	if ts.reappliedInputs > 0 {
		r.note("table %s: %d inputs are applied twice in the store's history; its changelog is written outside transactions: under at-least-once an input processed again after a restart is applied again, by design (under exactly-once it would be a duplicate)", ts.t.Name, ts.reappliedInputs)
	}
	if ts.bounded > 0 {
		r.missing("table %s: for %d keys the explanation of their history gave up (too many orders to try); only the inputs that cannot have been applied, or that are newer than the key's state, are reported for them", ts.t.Name, ts.bounded)
	}
	r.reportUnsure(ts)
	r.reportUnnamedPurges(ts)
	return ctx.Err()
}

// retainFor keeps the states a bucket's check found vanished inputs and
// diverged keys in, for their attribution and actual states after every
// bucket is checked (a store rebuilt a bucket at a time).
func (ts *tableState) retainFor(lost []*input, diverged []divergence) {
	for _, in := range lost {
		ts.retain(in.key)
	}
	for _, d := range diverged {
		ts.retain(d.f.Key)
	}
}

// storeSize is how many keys the store holds.
func (ts *tableState) storeSize() int {
	if ts.spill != nil && ts.spill.states != nil {
		return int(ts.storeKeys) // counted a bucket at a time
	}
	return len(ts.changelog)
}

// forget drops what checking the keys concluded, when it turns out the
// spec's keys are not the store's.
func (ts *tableState) forget() {
	ts.diverged, ts.keyNotes, ts.deletedState, ts.undecided, ts.doubled, ts.bounded = nil, nil, 0, nil, nil, 0
	ts.reapplied, ts.reappliedInputs = 0, 0
	clear(ts.expected)
	clear(ts.expIn)
}

// checkPass says which keys checkKeys judges, for a spilled table.
type checkPass uint8

const (
	passAll    checkPass = iota // every key
	passFound                   // the keys whose inputs all have copies; ts.putOff: some were not
	passPutOff                  // the others, once every bucket is matched (ts.found is whole)
)

// howChecked is what checkTable can judge of a table.
type howChecked uint8

const (
	checkNone     howChecked = iota // nothing: the evidence or the spec cannot support it
	checkPresence                   // only inputs proven lost without a state check
	checkKeys                       // each key's state against its inputs
)

// checkable says how far the table can be judged, and why not further;
// whether the keys are the store's is known only once all are read.
// foldIncomplete: only presence, because a fold's history is not all
// readable (said once the keys are known to be the store's).
func (r *run) checkable(ts *tableState) (how howChecked, foldIncomplete bool) {
	t := ts.t
	if t.Unjudged != "" {
		if strings.HasPrefix(t.Unjudged, "table "+t.Name+" ") || strings.HasPrefix(t.Unjudged, "table "+t.Name+":") {
			r.missing("%s", t.Unjudged) // it names the table itself
		} else {
			r.missing("table %s is not judged: %s", t.Name, t.Unjudged)
		}
		return checkNone, false
	}
	if why := ts.steps.unjudged(t); why != "" {
		r.missing("table %s is not judged: %s", t.Name, why)
		return checkNone, false
	}
	if len(ts.absent) > 0 {
		r.missing("table %s: its topic %s is not visible (deleted, or hidden from this client), so no input of the table is judged", t.Name, strings.Join(ts.absent, ", "))
		return checkNone, false
	}
	if len(ts.unreadable) > 0 {
		r.missing("table %s: %s could not be read, so no input of the table is judged (a conclusion could rest on what is missing)", t.Name, tpList(ts.unreadable))
		return checkNone, false
	}
	if ts.unplaced {
		r.missing("table %s: --partitions keeps the inputs whose keys the shard's partitions hold, but the key serde %q cannot place some keys in a partition, so the table is not judged (run without --partitions)", t.Name, r.p.KeySerde)
		return checkNone, false
	}
	if t.Reduce == nil && !t.Latest {
		r.skipped("table %s: no reducer in the spec, so its store is not checked; only inputs proven lost on the repartition topic are reported", t.Name)
		return checkPresence, false
	}
	if t.Changelog == "" {
		r.skipped("table %s: no changelog topic known, so its store is not checked", t.Name)
		return checkPresence, false
	}
	if !t.Latest && !ts.complete {
		return checkPresence, true
	}
	return checkKeys, false
}

// checkKeys judges each key's state against its inputs and returns the
// inputs whose effect is missing, to be attributed.
func (r *run) checkKeys(ctx context.Context, ts *tableState) []*input {
	var out []*input
	ts.leftover = map[fingerprint]bool{}
	for f, ci := range ts.copies {
		if ci.applied > 0 {
			ts.leftover[f] = true
		}
	}
	defer func() { ts.leftover = nil }()
	for key, ks := range ts.keys { // in any order: the notes and losses are sorted after
		if err := ctx.Err(); err != nil {
			return out
		}
		if len(ks.inputs) == 0 {
			continue
		}
		if ts.pass != passAll {
			none := slices.ContainsFunc(ks.inputs, func(x inputRec) bool { return x.status == copyNone })
			if ts.pass == passFound && none {
				ts.putOff = true
				continue
			}
			if ts.pass == passPutOff && !none {
				continue
			}
		}
		for _, in := range r.judgeKey(ts, key, ks) {
			ts.copyOf(in) // while the copies of its bucket are at hand
			out = append(out, in)
		}
	}
	return out
}

// countInputs counts the inputs checked against the store, for the
// report's lineage and timeline.
func (r *run) countInputs(ts *tableState) {
	for _, ks := range ts.keys {
		ts.inputs += int64(len(ks.inputs))
		for _, x := range ks.inputs {
			r.produced[x.ts/60000*60000]++
			if x.unsure && x.status == copyNone && r.inWindow(x.ts) {
				// no copy behind a filter whose predicate is not known: not
				// judged (reportUnsure)
				ts.unsureLeft++
				ts.unsureAt = firstOffsets(ts.unsureAt, ts.tpOf(x.part), x.offset, 5)
				if _, purged := ts.purgedRange[x.r]; purged {
					ts.unsurePurged[x.r] = true
				}
			}
		}
	}
}

// sortLosses puts the table's vanished inputs found since start in the
// order of their keys, partitions and offsets: the keys are checked in
// map order, and the report's lineage samples the first ones.
func (r *run) sortLosses(ts *tableState, start int) {
	slices.SortFunc(r.losses[start:], func(a, b *input) int {
		return cmp.Or(strings.Compare(a.key, b.key), cmp.Compare(a.part, b.part), cmp.Compare(a.offset, b.offset))
	})
}

// presenceOnly reports the inputs proven lost without a state check: no
// copy where the copies of their neighbours are readable, or copies only in
// aborted transactions.
func (r *run) presenceOnly(ts *tableState) []*input {
	var out []*input
	for _, ks := range ts.keys { // in any order: the losses are sorted after
		for _, in := range ts.materialize(ks.key, ks.inputs, ks.values) {
			if in.status == copyAborted || (in.status == copyNone && (r.positionReadable(ts, in) || ts.neverPurged(in.r))) {
				ts.copyOf(in)
				out = append(out, in)
			}
		}
	}
	return out
}

// foldOrder sorts inputs the way a single repartition partition most
// likely interleaved them: by timestamp, then source partition and offset.
func foldOrder(ins []*input) []*input {
	out := append([]*input(nil), ins...)
	slices.SortStableFunc(out, func(a, b *input) int { return foldCmp(a.part, a.offset, a.ts, b.part, b.offset, b.ts) })
	return out
}

// foldCmp is foldOrder's order of two inputs by source partition, offset
// and timestamp.
func foldCmp(ap int32, ao, at int64, bp int32, bo, bt int64) int {
	if ap == bp {
		return cmp.Compare(ao, bo)
	}
	if at != bt {
		return cmp.Compare(at, bt)
	}
	return cmp.Compare(ap, bp)
}

// positionReadable reports whether the repartition topic still holds
// copies of an earlier and a later input of the same source partition that
// went to the same repartition partition: the input's copy would have been
// between them.
func (r *run) positionReadable(ts *tableState, in *input) bool {
	if in.r < 0 {
		return false
	}
	mm, ok := ts.found[[2]int32{in.part, in.r}]
	if !ok {
		return false
	}
	if ci := ts.copyOf(in); ci != nil && ci.claims > 1 {
		// inputs alike (key, value, timestamp) share their copies: which one
		// lacks its copy is not known, so each must have been readable
		return !ci.claimMixed && mm[0] < ci.claimMin && ci.claimMax < mm[1]
	}
	return mm[0] < in.offset && in.offset < mm[1]
}

// attribute gives a vanished input its stage and cause from the evidence
// and reports it.
func (r *run) attribute(ctx context.Context, ts *tableState, in *input) {
	if in.f != nil || !r.inWindow(in.ts) {
		return
	}
	if in.unsure && in.status == copyNone {
		// a filter whose predicate is not known stands before its copy:
		// filtered on purpose, or lost, the evidence cannot tell (counted
		// by countInputs)
		return
	}
	t := ts.t
	in.loss = &loss{}
	ts.copyOf(in)
	r.reread(ctx, in)
	var candidates []string
	pr, purged := ts.purgedRange[in.r]
	switch {
	case in.how == lostReset:
		// the changelog history proves the state was lost after these
		// inputs were applied, whatever is left of their copies
		in.loss.stage, in.loss.cause = audit.StageStore, audit.CauseStateReset
	case in.status == copyApplied:
		in.loss.stage = audit.StageStore
		in.loss.cause = audit.CauseStateDiverged
		in.detail = append(in.detail, fmt.Sprintf("its repartition copy %s/%d@%d is committed and below the group's committed offset, so it was applied", t.Repartition, in.cpy.partition, in.cpy.offset))
	case in.status == copyDirect:
		in.loss.stage = audit.StageStore
		in.loss.cause = audit.CauseUnapplied
		candidates = []string{"dropped by a processor before the store", "lost from the store after it was applied"}
	case in.status == copyAborted:
		in.loss.stage = audit.StageRepartition
		in.loss.cause = audit.CauseAbortedNotReplayed
		in.detail = append(in.detail, fmt.Sprintf("its only repartition copy %s/%d@%d is in an aborted transaction and no committed copy exists", t.Repartition, in.cpy.partition, in.cpy.abortedAt))
	case r.positionReadable(ts, in):
		in.loss.stage, in.loss.cause = audit.StageRepartition, audit.CauseDropped
		in.detail = append(in.detail, fmt.Sprintf("no copy of it exists on %s, where the copies of earlier and later inputs of %s are readable in partition %d: it was dropped before the repartition sink", t.Repartition, in.tp, in.r))
	case ts.neverPurged(in.r):
		in.loss.stage, in.loss.cause = audit.StageRepartition, audit.CauseDropped
		in.detail = append(in.detail, fmt.Sprintf("no copy of it exists on %s partition %d, which holds every record written to it (log start 0): it was dropped before the repartition sink", t.Repartition, in.r))
	case purged:
		in.loss.stage, in.loss.cause = audit.StageRepartition, audit.CausePurgedBeforeCommit
		in.detail = append(in.detail, fmt.Sprintf("repartition partition %s/%d was purged to offset %d above the group's committed offset %d (the KAFKA-17635 signature): offsets %d-%d were deleted before the app applied them",
			t.Repartition, in.r, pr[1], pr[0], pr[0], pr[1]-1))
	default:
		in.loss.stage, in.loss.cause = audit.StageRepartition, audit.CauseUnapplied
		candidates = []string{"dropped before the repartition sink", "its copy was purged after it was applied and its effect lost from the store"}
		if in.r >= 0 {
			in.detail = append(in.detail, fmt.Sprintf("no copy of it is readable on %s; the range of partition %d that would hold it is purged", t.Repartition, in.r))
		}
	}
	if _, ok := ts.purgedRange[in.r]; ok && in.r >= 0 && (in.loss.cause == audit.CausePurgedBeforeCommit || in.loss.cause == audit.CauseUnapplied) {
		ts.namedPurge[in.r] = true
	}
	f := audit.NewFinding(in.loss.stage, in.loss.cause, in.tp, in.offset)
	f.Key = in.key
	f.Timestamp = in.ts
	f.Expected = codec.Text(in.value)
	if txn := ts.aborts[fingerprintOf(ts.fpKey(in.key), in.digest, in.ts)]; in.cpy != nil && txn != nil {
		f.ProducerID, f.ProducerEpoch, f.TransactionalID = txn.ProducerID, txn.ProducerEpoch, txn.TransactionalID
		in.detail = append(in.detail, fmt.Sprintf("aborted transaction: producer %d epoch %d, offsets %d-%d, ABORT marker at %d", txn.ProducerID, txn.ProducerEpoch, txn.FirstOffset, txn.LastOffset, txn.MarkerOffset))
	}
	detail := []string{fmt.Sprintf("table %s", t.Name)}
	if len(in.loss.rawKey) > 0 {
		detail = append(detail, "record key "+r.text(ctx, in.tp.Topic, true, in.loss.rawKey))
	}
	if ts.multiElem {
		detail = append(detail, fmt.Sprintf("element %d of what the table's steps emit for the record", in.elem+1))
	}
	detail = append(detail, in.detail...)
	if len(candidates) > 0 {
		detail = append(detail, "the evidence cannot tell: "+strings.Join(candidates, " or "))
	}
	f.Detail = strings.Join(detail, "; ")
	in.f = r.add(f)
	if _, ok := ts.changelog[in.key].final(); ok {
		ts.wantActual(in.key, in.f)
	}
	r.losses = append(r.losses, in)
}

// reread reads a vanished input's record again for its key and value:
// the audit keeps neither for inputs that end in no finding.
func (r *run) reread(ctx context.Context, in *input) {
	if rec, ok := r.record(ctx, in); ok {
		in.loss.rawKey = rec.Key
	}
}

// valueOf returns an input's decoded value, re-reading it if the audit did
// not keep it.
func (r *run) valueOf(ctx context.Context, in *input) audit.Value {
	r.record(ctx, in)
	return in.value
}

// record reads an input's record again and decodes its value into
// in.value if it is not there.
func (r *run) record(ctx context.Context, in *input) (audit.Record, bool) {
	rec, ok := r.recordAt(ctx, in.tp, in.offset)
	if !ok || in.value != nil || rec.Value == nil {
		return rec, ok
	}
	v, err := r.opts.Decoder.Decode(ctx, rec.Topic, false, rec.Value)
	if err != nil {
		return rec, ok
	}
	if t := in.table.t; t.Steps != nil && t.ValueChanging {
		// the input's value is the element its steps emit, not the record's
		var k audit.Value
		if rec.Key != nil {
			if k, err = r.opts.Decoder.Decode(ctx, rec.Topic, true, rec.Key); err != nil {
				return rec, ok
			}
		}
		els, err := t.Steps(Env{Key: k, Value: v, Headers: rec.Headers, Timestamp: rec.Timestamp})
		if err != nil || in.elem >= len(els) {
			return rec, ok
		}
		v = els[in.elem].Value
	}
	in.value = v
	return rec, ok
}

// expectedOf is a key's expected value in a table: where the inputs say
// otherwise than the store, theirs; else the store's, as actual gives it.
func (r *run) expectedOf(ctx context.Context, ts *tableState, key string, actual func(*tableState, string) side) side {
	if ref, ok := ts.expIn[key]; ok {
		// read again: latest tables keep no value (the same as the input's own, if a finding read it)
		in := &input{table: ts, tp: ts.tpOf(ref.part), part: ref.part, offset: ref.offset, key: key, r: -1, elem: ref.elem}
		v := r.valueOf(ctx, in)
		return side{value: v, present: v != nil}
	}
	if v, ok := ts.expected[key]; ok {
		return side{value: v, present: v != nil}
	}
	return actual(ts, key)
}

// storeSide is a key's final state as the table's check left it: kept
// for the keys that ended in a finding (see fillActuals).
func (r *run) storeSide(ts *tableState, key string) side {
	v, ok := ts.finals[key]
	if !ok || v == nil {
		return side{}
	}
	fin, _ := ts.changelog[key].final()
	return side{value: v, ts: fin.ts, present: true}
}

// wantActual asks fillActuals for the store's final value of key as the
// Actual of finding idx.
func (ts *tableState) wantActual(key string, f *audit.Finding) {
	ts.want[key] = append(ts.want[key], f)
}

// fillActuals reads again the changelog partitions that hold the final
// states the table's findings name, and decodes those states: the audit
// keeps only their digests.
func (r *run) fillActuals(ctx context.Context, ts *tableState) {
	if len(ts.want) == 0 {
		return
	}
	byPart := map[int32]bool{}
	for key := range ts.want {
		if cl := ts.changelog[key]; cl != nil {
			byPart[cl.partition] = true
		}
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	tps := tpsOf(ts.t.Changelog, parts)
	rd := r.readAgain(ctx, tps, "changelog", decodeKey)
	defer rd.stop()
	for _, tp := range tps {
		r.walk(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || it.decErr != nil || ts.want[it.keyText] == nil {
				return
			}
			fin, ok := ts.changelog[it.keyText].final()
			if !ok || fin.offset != it.Record.Offset {
				return
			}
			v, err := r.opts.Decoder.Decode(ctx, tp.Topic, false, it.Record.Value)
			if err != nil {
				return
			}
			ts.finals[it.keyText] = v
			for _, f := range ts.want[it.keyText] {
				f.Actual = codec.Text(v)
			}
		})
	}
	ts.want = nil
}

func (r *run) inWindow(ts int64) bool {
	if !r.opts.Since.IsZero() && ts < r.opts.Since.UnixMilli() {
		return false
	}
	if !r.opts.Until.IsZero() && ts >= r.opts.Until.UnixMilli() {
		return false
	}
	return true
}

// partList names the partitions of topic in set, in order.
func (ts *tableState) partList(set map[int32]bool) string {
	var tps []audit.TopicPartition
	for _, p := range slices.Sorted(maps.Keys(set)) {
		tps = append(tps, ts.tpOf(p))
	}
	return tpList(tps)
}

func tpList(tps []audit.TopicPartition) string {
	out := make([]string, len(tps))
	for i, tp := range tps {
		out[i] = tp.String()
	}
	if len(out) > 5 {
		return strings.Join(out[:5], ", ") + fmt.Sprintf(" and %d more", len(out)-5)
	}
	return strings.Join(out, ", ")
}

// keyStats is what keysMismatch needs to know of a table's keys.
type keyStats struct {
	keys    int  // keys with consumed inputs
	applied int  // keys with inputs that are not in flight
	inStore bool // one of those is a key of the store
	// copies counts the committed repartition copies, matched those an
	// input accounts for
	copies, matched int64
}

func (a *keyStats) add(b keyStats) {
	a.keys += b.keys
	a.applied += b.applied
	a.inStore = a.inStore || b.inStore
	a.copies += b.copies
	a.matched += b.matched
}

// keyStats counts the keys in ts.keys and the copies in ts.copies.
func (ts *tableState) keyStats() keyStats {
	var st keyStats
	for _, ci := range ts.copies {
		st.copies += int64(ci.applied + ci.pending + ci.matched)
		st.matched += int64(ci.matched)
	}
	for k, ks := range ts.keys {
		if len(ks.inputs)+len(ks.pending) > 0 {
			st.keys++ // a key of the store's that no input has is in ts.keys too
		}
		if len(ks.inputs) == 0 {
			continue
		}
		st.applied++
		if ts.clOf(k, ks) != nil {
			st.inStore = true
		}
	}
	return st
}

// keysMismatch says why the inputs' selected keys cannot be the store's
// keys, or "": every consumed input has a null key while the store holds
// keys, or no selected key is a key of the store.
func keysMismatch(ts *tableState, st keyStats) string {
	if ts.storeSize() == 0 {
		return ""
	}
	if ts.consumed > 0 && st.keys == 0 {
		return fmt.Sprintf("select_key is null for all %d consumed inputs, yet the store holds %d keys", ts.consumed, ts.storeSize())
	}
	// Streams passes the selected key, the value and the timestamp through
	// to the repartition topic: copies no input accounts for mean the app
	// changes the value or the timestamp on the way (a mapValues, a
	// timestamp extractor), which the spec does not say
	// copies of the inputs retention deleted from the source match none:
	// at most one a deleted offset (elements, where the steps emit several)
	copies := st.copies
	if ts.deletedOffsets > 0 {
		per := 1.0
		if n := ts.consumedWithKey; n > 0 && ts.elements > n {
			per = float64(ts.elements) / float64(n)
		}
		copies -= int64(float64(ts.deletedOffsets)*per + 0.5)
	}
	if copies >= 20 && st.matched*2 < copies {
		return fmt.Sprintf("only %d of the %d committed repartition copies match a consumed input by key, value and timestamp (a processor that changes values, or a timestamp extractor, between the source and the repartition topic)", st.matched, st.copies)
	}
	if st.inStore || st.applied == 0 {
		return ""
	}
	return fmt.Sprintf("none of the %d keys select_key gives the inputs is among the store's %d keys", st.applied, ts.storeSize())
}
