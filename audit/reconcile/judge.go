package reconcile

// Judging one key of a table: its inputs against its history, with the cause of each loss.

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// judgeKey judges one key of a table against the store: it builds what the
// evidence allows of each input (explain.go), explains the changelog
// history, and returns the inputs lost for certain, each with how
// (in.how) and what it was (in.kind). A loss proven without knowing which
// input it is becomes an undecided finding of the key; a state no input
// explains, a divergence of the key.
func (r *run) judgeKey(ts *tableState, key string, ks *keyState) []*input {
	t := ts.t
	cl := ts.clOf(key, ks)
	exact := ts.exactFor(cl)
	if ts.win != nil && ts.win.nulls[key] {
		ts.win.nullJudged++ // a null value reached its aggregator: not modelled
		return nil
	}
	if r.windowExpired(ts, ks, cl) || !exact && ts.cleanLatest(key, ks, cl) {
		return nil
	}
	ins := ts.materialize(key, ks.inputs, ks.values)
	pend := ts.materialize(key, ks.pending, ks.pvalues)
	x := &explainer{t: t, latest: t.Latest, exact: exact}
	if cl != nil {
		x.hist = cl.history
	}
	x.final, x.present = cl.final()
	els := r.elements(ts, x, ins, pend)
	defer r.judgeLate(ts, key, x, els)
	// An input deleted from the source by retention may be the state: for
	// latest tables, one such input per partition with deletions may be
	// applied (first in its partition), and only the final state binds.
	if t.Latest && len(ts.deletedFrom) > 0 {
		for _, p := range slices.Sorted(maps.Keys(ts.deletedFrom)) {
			if !x.present {
				break
			}
			e := &elem{kind: elemOptional, digest: x.final.digest, ts: x.final.ts, id: len(els)}
			has := slices.ContainsFunc(els, func(o *elem) bool { return o.in != nil && o.in.part == p })
			els = append(els, e)
			idx := slices.IndexFunc(x.seqs, func(seq []*elem) bool { return len(seq) > 0 && seq[0].in != nil && seq[0].in.part == p })
			switch {
			case !has:
				// no readable input of the key there: its copy, readable or
				// not, may come after every other
				e.pos = 1<<63 - 1
				x.fixed = append(x.fixed, e)
			case idx < 0:
				x.seqs = append(x.seqs, []*elem{e})
			default:
				x.seqs[idx] = append([]*elem{e}, x.seqs[idx]...)
			}
		}
		if x.present {
			x.hist = []clEntry{x.final}
		}
	}
	r.expectation(ts, key, x, ins)
	if !exact && r.natural(x) {
		ts.noteDeleted(x, els)
		return nil
	}
	v := x.judge()
	if x.failed != nil {
		ts.failed++
		if len(ts.failedKeys) < 3 {
			ts.failedKeys = append(ts.failedKeys, fmt.Sprintf("key %s: %v", key, x.failed))
		}
		return nil
	}
	if !v.explained {
		if v.bounded {
			ts.bounded++
			return r.provenWithout(ts, x, els)
		}
		if ts.atLeastOnce {
			// at-least-once applies again, after a restart, what it
			// processed since its last commit, as often as it restarts:
			// more states than one application of each input is no loss
			ts.reapplied++
			return r.provenWithout(ts, x, els)
		}
		if t.Latest && x.present && ts.maybeDeleted(x) {
			ts.deletedState++
			return nil
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseStateDiverged, audit.TopicPartition{Topic: t.Changelog, Partition: keyPartition(cl)}, finalOffset(cl))
		f.Key = key
		f.Detail = fmt.Sprintf("table %s: no order of the key's %d consumed inputs, with any of them left out, gives the store's history (%d states) and final state", t.Name, len(ins), len(x.hist))
		if !t.Latest {
			f.Expected = codec.Text(ts.expected[key])
		}
		ts.diverged = append(ts.diverged, divergence{f: f, want: x.present})
		return nil
	}
	if v.reset != nil && ts.atLeastOnce && t.Latest {
		// at-least-once applies again, after a restart, what it processed
		// since its last commit: for latest, a history that starts over
		// from an earlier input (a, b, a, b) is that as well as a wiped
		// store, and nothing here proves a wipe (AB's V15); an aggregate
		// applied again only grows, so its drop stays a state-reset
		ts.reapplied++
		return r.provenWithout(ts, x, els)
	}
	if len(v.doubled) > 0 && ts.atLeastOnce {
		ts.reappliedInputs += len(v.doubled) // by design under at-least-once
	} else if len(v.doubled) > 0 {
		ts.doubled = append(ts.doubled, r.doubledFinding(ts, key, v.doubled))
	}
	if v.ok {
		ts.noteDeleted(x, els)
		return nil
	}
	// Under latest, an input that a later input of its source partition
	// overwrote (applied in the explanation) is not a loss: its effect is
	// missing from no state.
	undecided := map[int]bool{}
	for _, e := range v.undecided {
		undecided[e.id] = true
	}
	lastKept := map[int32]int64{}
	for _, e := range els {
		if _, lost := v.certain[e.id]; e.in != nil && e.kind != elemOptional && !lost && !undecided[e.id] {
			lastKept[e.in.part] = max(lastKept[e.in.part], e.in.offset+1)
		}
	}
	var lost []*input
	for _, e := range els {
		how, ok := v.certain[e.id]
		if !ok || e.in == nil {
			continue
		}
		if t.Latest && how == lostSkipped && e.in.offset < lastKept[e.in.part] {
			continue
		}
		e.in.how, e.in.kind = how, e.kind
		if how == lostReset && v.reset != nil {
			e.in.detail = append(e.in.detail, resetText(t, key, cl, v.reset))
			ts.addReset(keyPartition(cl), key, v.reset)
		}
		lost = append(lost, e.in)
	}
	if len(v.undecided) > 0 && v.missing > 0 {
		ts.undecided = append(ts.undecided, r.undecidedFinding(ts, key, v))
	}
	return lost
}

// elements makes the elements of an explanation from a key's inputs.
func (r *run) elements(ts *tableState, x *explainer, ins, pend []*input) []*elem {
	ts.laterClaims(ins)
	var els []*elem
	seqIdx := map[int32]int{}
	add := func(e *elem) {
		e.id = len(els)
		els = append(els, e)
	}
	firstFixed := map[int32]int64{} // source partition → offset of its first input with a readable copy
	for _, in := range ins {
		if in.status == copyApplied {
			if o, ok := firstFixed[in.part]; !ok || in.offset < o {
				firstFixed[in.part] = in.offset
			}
		}
	}
	seq := func(p int32) int {
		i, ok := seqIdx[p]
		if !ok {
			i = len(x.seqs)
			seqIdx[p] = i
			x.seqs = append(x.seqs, nil)
		}
		return i
	}
	handled := map[fingerprint]bool{}
	taken := map[fingerprint]int{} // copies of a fingerprint taken by the inputs alike so far
	type extra struct {
		e  *elem
		fp fingerprint
	}
	var extras []extra // copies no input accounts for: at the places the inputs alike left
	for _, in := range ins {
		e := &elem{in: in, digest: in.digest, ts: in.ts, value: in.value}
		ff, hasFixed := firstFixed[in.part]
		switch {
		case in.status == copyApplied:
			e.kind = elemFixed
			if ci := ts.copyOf(in); ci != nil {
				if in.late {
					e.kind = elemOptional // late for its window: applied only after a restart lowered stream time
				}
				e.pos = ci.offset
				if offs := ts.copyOffs[fingerprintOf(ts.fpKey(in.key), in.digest, in.ts)]; len(offs) > 1 {
					// inputs alike (one key, value and timestamp) take one
					// copy each, in order: which input a copy is of is not
					// known, and they fold alike; each is applied at its
					// copy's own place
					fp := fingerprintOf(ts.fpKey(in.key), in.digest, in.ts)
					e.pos = offs[min(taken[fp], len(offs)-1)]
					taken[fp]++
				}
				add(e)
				x.fixed = append(x.fixed, e)
				// copies beyond those the inputs account for: applied again
				if fp := fingerprintOf(ts.fpKey(in.key), in.digest, in.ts); ci.applied > 0 && !handled[fp] {
					handled[fp] = true
					for range ci.applied {
						d := &elem{in: in, kind: elemOptional, digest: in.digest, ts: in.ts, value: in.value, pos: ci.offset}
						add(d)
						x.fixed = append(x.fixed, d)
						extras = append(extras, extra{d, fp})
					}
				}
				continue
			}
			e.kind = elemFree
		case in.status == copyAborted:
			e.kind = elemBlocked
		case in.status == copyNone && in.unsure:
			// a filter whose predicate is not known may have removed it
			e.kind = elemOptional
		case in.status == copyNone && (r.positionReadable(ts, in) || ts.neverPurged(in.r)):
			e.kind = elemBlocked
		case hasFixed && in.offset > ff:
			// its copy would follow a readable copy of its partition's: readable too
			e.kind = elemBlocked
		default:
			e.kind = elemFree
		}
		if in.late && e.kind == elemFree {
			e.kind = elemOptional
		}
		add(e)
		if e.kind == elemBlocked {
			x.blocked = append(x.blocked, e)
			continue
		}
		i := seq(in.part)
		x.seqs[i] = append(x.seqs[i], e)
	}
	for _, ex := range extras {
		if offs := ts.copyOffs[ex.fp]; taken[ex.fp] < len(offs) {
			ex.e.pos = offs[taken[ex.fp]]
			taken[ex.fp]++
		}
	}
	// in flight, yet maybe applied through an earlier copy that is purged now
	for _, in := range pend {
		if ts.maybeApplied(in) {
			// in flight at the cut, and maybe applied in the changelog read
			// (the app committed meanwhile): at its copy's place, applied or
			// not
			e := &elem{in: in, kind: elemOptional, digest: in.digest, ts: in.ts, value: in.value, pos: in.cpos}
			add(e)
			x.fixed = append(x.fixed, e)
			continue
		}
		if ff, ok := firstFixed[in.part]; ok && in.offset > ff {
			continue
		}
		e := &elem{in: in, kind: elemOptional, digest: in.digest, ts: in.ts, value: in.value}
		add(e)
		i := seq(in.part)
		x.seqs[i] = append(x.seqs[i], e)
	}
	for _, s := range x.seqs {
		slices.SortStableFunc(s, func(a, b *elem) int { return int(a.in.offset - b.in.offset) })
	}
	slices.SortStableFunc(x.fixed, func(a, b *elem) int { return int(a.pos - b.pos) })
	return els
}

// laterClaims gives the readable copies of inputs alike (one source
// partition, one value and timestamp: two orders a mapValues leaves as
// one customer and amount) to the later of them. match hands a copy to
// the first input that claims it, which is right while every copy is
// readable; on a purged repartition partition the readable copies are
// the last ones (one task writes a source partition's copies in order and
// a purge removes a prefix), so the earlier inputs are those whose copies
// are gone. Taking the first would pin an applied input where a later
// one's copy is, and leave the later one blocked: a false divergence.
func (ts *tableState) laterClaims(ins []*input) {
	// most keys have no input without a copy beside one with: nothing to
	// move, and no map to build per key
	if !slices.ContainsFunc(ins, func(in *input) bool { return in.status == copyNone }) ||
		!slices.ContainsFunc(ins, func(in *input) bool { return in.status == copyApplied }) {
		return
	}
	type alike struct {
		part   int32
		digest codec.Digest
		ts     int64
	}
	groups := map[alike][]*input{}
	for _, in := range ins {
		k := alike{in.part, in.digest, in.ts}
		groups[k] = append(groups[k], in)
	}
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		var claimed []*input
		rNone, other := int32(-1), false
		for _, in := range g {
			switch in.status {
			case copyApplied:
				claimed = append(claimed, in)
			case copyNone:
				rNone = in.r
			default:
				other = true // a copy in flight or aborted: left as matched
			}
		}
		if other || len(claimed) == 0 || len(claimed) == len(g) || ts.neverPurged(claimed[0].r) {
			continue
		}
		rApplied := claimed[0].r
		slices.SortFunc(g, func(a, b *input) int { return cmp.Compare(a.offset, b.offset) })
		for i, in := range g {
			in.cpy = nil
			if i < len(g)-len(claimed) {
				in.status, in.r = copyNone, rNone
			} else {
				in.status, in.r = copyApplied, rApplied
			}
		}
	}
}

// natural reports whether applying every input that can have been applied,
// in the likeliest order, gives the state at the cut: nothing of the key
// was lost.
func (r *run) natural(x *explainer) bool {
	if len(x.blocked) > 0 || !x.present {
		return len(x.blocked) == 0 && len(x.seqs) == 0 && len(x.fixed) == 0 && !x.present
	}
	var free []*elem
	for _, s := range x.seqs {
		for _, e := range s {
			if e.kind == elemFree {
				free = append(free, e)
			}
		}
	}
	var fixed []*elem
	for _, e := range x.fixed {
		if e.kind == elemFixed {
			fixed = append(fixed, e)
		}
	}
	slices.SortStableFunc(free, func(a, b *elem) int {
		if a.in.part == b.in.part {
			return int(a.in.offset - b.in.offset)
		}
		if a.ts != b.ts {
			return int(a.ts - b.ts)
		}
		return int(a.in.part - b.in.part)
	})
	if len(free)+len(fixed) == 0 {
		return false
	}
	maxTs := int64(-1 << 63)
	for _, e := range append(append([]*elem(nil), free...), fixed...) {
		maxTs = max(maxTs, e.ts)
	}
	if x.latest {
		if maxTs != x.final.ts {
			return false
		}
		if len(fixed) > 0 {
			return fixed[len(fixed)-1].digest == x.final.digest
		}
		for _, s := range x.seqs {
			for i := len(s) - 1; i >= 0; i-- {
				if s[i].kind == elemFree {
					if s[i].digest == x.final.digest {
						return true
					}
					break
				}
			}
		}
		return false
	}
	var a aggState
	for _, e := range append(free, fixed...) {
		var ok bool
		if a, ok = x.apply(a, e); !ok {
			return false
		}
	}
	return x.finalOK(a)
}

// expectation records the key's expected final value (every input
// applied, in the likeliest order) for the join's end-to-end detail.
func (r *run) expectation(ts *tableState, key string, x *explainer, ins []*input) {
	if len(ins) == 0 {
		return
	}
	if ts.t.Latest {
		exp := expectedLatest(ins)
		if !x.present || exp.digest != x.final.digest {
			// only where it says otherwise than the store: else the store's
			// state is the expected one, and the join has it at hand
			ts.expIn[key] = inputRef{part: exp.part, offset: exp.offset, elem: exp.elem}
		}
		return
	}
	order := foldOrder(ins)
	var a aggState
	for _, in := range order {
		var ok bool
		if a, ok = x.apply(a, &elem{value: in.value, ts: in.ts, digest: in.digest}); !ok {
			return
		}
	}
	x.failed = nil
	ts.expected[key] = a.value
}

// expectedLatest is the input a latest table's key is expected to hold:
// the last in fold order, unless a later one is newer.
func expectedLatest(ins []*input) *input {
	order := foldOrder(ins)
	exp := order[len(order)-1]
	for _, in := range ins {
		if in.ts > exp.ts {
			exp = in
		}
	}
	return exp
}

// expectedLatestRec is expectedLatest of the inputs recs, without
// materializing them.
func expectedLatestRec(recs []inputRec) inputRec {
	var buf [16]inputRec
	order := append(buf[:0], recs...)
	slices.SortStableFunc(order, func(a, b inputRec) int { return foldCmp(a.part, a.offset, a.ts, b.part, b.offset, b.ts) })
	exp := order[len(order)-1]
	for _, x := range recs {
		if x.ts > exp.ts {
			exp = x
		}
	}
	return exp
}

// provenWithout returns the losses the evidence proves without an
// explanation (the search gave up): inputs that cannot have been applied,
// and inputs newer than the state (the timestamp rule).
func (r *run) provenWithout(ts *tableState, x *explainer, els []*elem) []*input {
	var out []*input
	for _, e := range els {
		if e.in == nil || e.kind == elemOptional {
			continue
		}
		if e.kind == elemBlocked || (x.present && e.ts > x.final.ts && e.kind == elemFree) {
			e.in.how, e.in.kind = lostSkipped, e.kind
			out = append(out, e.in)
		}
	}
	return out
}

// maybeDeleted reports whether the state may be that of an input retention
// deleted, from a source partition that holds no readable input of the key.
func (ts *tableState) maybeDeleted(x *explainer) bool {
	for p := range ts.deletedFrom {
		has := false
		for _, s := range x.seqs {
			for _, e := range s {
				has = has || e.in != nil && e.in.part == p
			}
		}
		if !has {
			return true
		}
	}
	return false
}

// neverPurged reports whether repartition partition p still holds every
// record ever written to it: an input with no copy there never had one.
func (ts *tableState) neverPurged(p int32) bool {
	ls, ok := ts.rLogStart[p]
	return ok && ls == 0
}

func resetText(t *Table, key string, cl *clState, ri *resetInfo) string {
	from := "an empty store"
	if ri.toState >= 0 {
		from = fmt.Sprintf("its earlier state at changelog offset %d", ri.toState)
	}
	lostStates := ""
	if ri.lostStates[0] >= 0 {
		lostStates = fmt.Sprintf(" (the states at %s/%d offsets %d-%d are gone from the store)", t.Changelog, keyPartition(cl), ri.lostStates[0], ri.lostStates[1])
	}
	return fmt.Sprintf("the changelog history of key %s shows the aggregate continuing, then restarting from %s%s: the inputs applied in between are gone from the state (the KAFKA-16017 signature)", key, from, lostStates)
}

// undecidedFinding is the finding of a key that lost inputs the evidence
// cannot name: the candidates and how many of them are missing.
func (r *run) undecidedFinding(ts *tableState, key string, v verdict) audit.Finding {
	first := v.undecided[0]
	for _, e := range v.undecided {
		if e.in != nil && (first.in == nil || e.in.part < first.in.part || e.in.part == first.in.part && e.in.offset < first.in.offset) {
			first = e
		}
	}
	stage := audit.StageRepartition
	var cands []string
	for _, e := range v.undecided {
		if e.in == nil {
			continue
		}
		cands = append(cands, fmt.Sprintf("%s@%d", e.in.tp, e.in.offset))
		if e.kind == elemFixed {
			stage = audit.StageStore
		}
	}
	slices.Sort(cands)
	f := audit.NewFinding(stage, audit.CauseUnapplied, first.in.tp, first.in.offset)
	f.Key = key
	f.Count = int64(v.missing)
	f.Candidates = strings.Join(cands, ", ")
	f.Timestamp = first.in.ts
	f.Detail = fmt.Sprintf("table %s: undecided: %d of the key's inputs %s are missing from its state and the evidence cannot tell which (several orders and choices explain the changelog history equally well)",
		ts.t.Name, v.missing, strings.Join(cands, ", "))
	return f
}

func keyPartition(cl *clState) int32 {
	if cl == nil {
		return -1
	}
	return cl.partition
}

func finalOffset(cl *clState) int64 {
	if cl == nil || len(cl.history) == 0 {
		return -1
	}
	return cl.history[len(cl.history)-1].offset
}

// noteDeleted counts a key whose state no readable input has, explained by
// an input retention deleted.
func (ts *tableState) noteDeleted(x *explainer, els []*elem) {
	if !ts.t.Latest || len(ts.deletedFrom) == 0 || !x.present {
		return
	}
	for _, e := range els {
		if e.in != nil && e.digest == x.final.digest {
			return
		}
	}
	ts.deletedState++
}

// doubledFinding is the duplicate a fold's state shows: an input applied
// twice whose copies are purged.
func (r *run) doubledFinding(ts *tableState, key string, doubled []*elem) audit.Finding {
	in := doubled[0].in
	f := audit.NewFinding(audit.StageStore, audit.CauseDuplicate, in.tp, in.offset)
	f.Key, f.Timestamp = key, in.ts
	f.Detail = fmt.Sprintf("table %s: the store's state counts the input %s@%d twice (its repartition copies are purged): only applying it again explains the key's history", ts.t.Name, in.tp, in.offset)
	if len(doubled) > 1 {
		f.Detail += fmt.Sprintf(", with %d more inputs applied twice", len(doubled)-1)
	}
	return f
}

// lostRange is one changelog partition's states a store lost, over the keys
// whose history restarted.
type lostRange struct {
	from, to int64
	keys     map[string]bool
	inputs   int64
}

// addReset records that key's store lost the states of ri.
func (ts *tableState) addReset(p int32, key string, ri *resetInfo) {
	if ri.lostStates[0] < 0 {
		return
	}
	if ts.resets == nil {
		ts.resets = map[int32]*lostRange{}
	}
	lr := ts.resets[p]
	if lr == nil {
		lr = &lostRange{from: ri.lostStates[0], to: ri.lostStates[1], keys: map[string]bool{}}
		ts.resets[p] = lr
	}
	lr.from, lr.to = min(lr.from, ri.lostStates[0]), max(lr.to, ri.lostStates[1])
	lr.keys[key] = true
	lr.inputs++
}

// noCleanLatest turns cleanLatest off (a test compares the reports).
var noCleanLatest bool

// cleanLatest answers judgeKey, without building the key's explanation,
// for the common key of a latest table whose state the inputs explain
// plainly: no source partition lost records, nothing in flight, every
// input applied through a copy of its own and no copy left over, and the
// store's state the input with the last copy, at the newest timestamp
// (the copies are those match found, and checkKeys lists the ones left
// over in ts.leftover).
// natural says so of such a key: elements makes every input fixed at its
// copy's offset (stably sorted, so the last of the highest offset is
// last), nothing blocked and nothing free. It records what expectation
// records, and reports false (judgeKey decides) for any other key.
func (ts *tableState) cleanLatest(key string, ks *keyState, cl *clState) bool {
	if noCleanLatest || !ts.t.Latest || ts.win != nil || len(ts.deletedFrom) > 0 || len(ks.pending) > 0 || len(ks.inputs) == 0 || ts.copies == nil || ts.leftover == nil {
		return false
	}
	fin, present := cl.final()
	if !present {
		return false
	}
	maxTs, lastPos := int64(math.MinInt64), int64(math.MinInt64)
	var last inputRec
	for _, x := range ks.inputs {
		if x.status != copyApplied { // matched a copy, whose offset is x.pos
			return false
		}
		if len(ts.leftover) > 0 && ts.leftover[fingerprintOf(key, x.digest, x.ts)] {
			return false
		}
		maxTs = max(maxTs, x.ts)
		if x.pos >= lastPos {
			lastPos, last = x.pos, x
		}
	}
	if maxTs != fin.ts || last.digest != fin.digest {
		return false
	}
	if len(ks.inputs) > 1 {
		// the expected state is the store's unless the likeliest order
		// says otherwise (expectation)
		if exp := expectedLatestRec(ks.inputs); exp.digest != fin.digest {
			ts.expIn[key] = inputRef{part: exp.part, offset: exp.offset, elem: int(exp.elem)}
		}
	}
	return true
}
