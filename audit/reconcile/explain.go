package reconcile

// The explainer: the orders and losses of a key's inputs that give its changelog history.

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// This file judges one key of a table: it explains the key's changelog
// history with its inputs, the way Kafka Streams applied them.
//
// What Streams leaves, and what the explanation rests on:
//
//   - A key's copies all go to one repartition partition, and the store
//     applies them in that partition's offset order. The copies still
//     readable (at or above the partition's log start, below the group's
//     committed offset) are therefore applied in their offset order, after
//     every copy that was purged below the log start.
//   - A source partition's inputs reach the repartition topic in offset
//     order (one task, one producer): the applied order of a key keeps each
//     source partition's order, and interleaves the partitions somehow.
//   - Every state of the store is a fold of the inputs applied so far, and
//     its timestamp is the maximum of their timestamps (KIP-258: reduce and
//     aggregate stamp the new aggregate max(input ts, old aggregate ts); a
//     fresh state takes the input's). The changelog records each state with
//     that timestamp.
//   - The committed changelog records of a key are states the store held,
//     in order; caching and compaction drop some, never reorder them, and
//     the last one is the state at the cut.
//
// An explanation chooses which inputs were applied and in which order, such
// that the changelog history is a subsequence of the fold's states ending
// in the last one. The inputs it leaves out are the vanished ones. kaudit
// takes the explanations that leave out the fewest inputs: an input is lost
// for certain when every such explanation leaves it out; when they differ,
// the loss is proven but not which input it is (undecided, with the
// candidates). An explanation may also restart the state once (the store
// lost what it held, KAFKA-16017): it is taken only when it leaves out
// strictly fewer inputs than any explanation without a restart.

// elemKind says what the evidence allows of one application.
type elemKind uint8

const (
	elemFixed    elemKind = iota // a readable committed copy below the cut: applied at its position; leaving it out is state-diverged
	elemFree                     // no readable copy, the copy may have been purged: applied before the readable copies, or lost
	elemBlocked                  // cannot have been applied (only aborted copies, or no copy where its neighbours' are readable): lost
	elemOptional                 // in flight, an extra copy, or an input retention deleted: applied or not, never a loss
	elemTwin                     // a second application of the element before it, whose copies are purged: a duplicate if applied
)

// elem is one possible application of an input.
type elem struct {
	in     *input // nil for an input retention deleted (virtual)
	kind   elemKind
	digest codec.Digest
	ts     int64
	value  audit.Value
	pos    int64 // the copy's repartition offset, for fixed elements
	id     int
}

// lostHow is why an explanation leaves an element out.
type lostHow uint8

const (
	lostSkipped lostHow = iota + 1 // never applied (or never reflected, for fixed elements)
	lostReset                      // applied, then lost when the state restarted
	lostDoubled                    // applied twice (a twin applied): a duplicate, not a loss
)

// agg is a fold state.
type aggState struct {
	has    bool
	value  audit.Value
	digest codec.Digest
	ts     int64
}

// explanation is one way the evidence is explained: the elements it leaves
// out and how; the restart, if any, with the changelog offsets of the
// states the store lost.
type explanation struct {
	cost  int
	lost  map[int]lostHow
	reset *resetInfo
}

type resetInfo struct {
	lostStates [2]int64 // first and last changelog offsets of the states the store lost (-1 when none)
	toState    int64    // changelog offset of the state it fell back to, -1 for an empty store
}

// explainer searches the explanations of one key.
type explainer struct {
	t      *Table
	latest bool
	// exact says the history holds every state (no cache, nothing
	// compacted): each application must produce the next history state.
	exact bool
	// seqs holds, per source partition, the elements that may be applied
	// before the readable copies, in offset order; fixed the elements with
	// readable copies, in copy offset order.
	seqs    [][]*elem
	fixed   []*elem
	blocked []*elem
	hist    []clEntry
	final   clEntry
	present bool
	budget  int
	// search state
	allowReset bool
	forbid     map[int]bool // elements that must not be left out (checking whether a loss is certain)
	mustLose   int          // an element that must be left out (finding the candidates), -1 none
	memo       map[string]int
	best       *explanation
	bound      int
	exhausted  bool
	failed     error // the reducer failed
}

// maxNodes bounds the search of one key.
var maxNodes = 200_000 // a var: a test lowers it

// An explanation's cost is the inputs it loses, then the events that lose
// them: a skipped input is one event, a restart one event however many
// inputs it loses. Of two explanations that lose as many inputs, the one
// with fewer events is the likelier.
const (
	lossUnit  = 1 << 10
	skipCost  = lossUnit + 1
	resetCost = 1
)

func lossesOf(cost int) int { return cost / lossUnit }

type frame struct {
	agg     aggState
	hi      int
	applied []*elem // applied since the state's start, for a restart
	matched []match // history states matched, for a restart
	reset   *resetInfo
	resetN  int // elements lost to the restart
}

type match struct {
	n   int // len(applied) when matched
	agg aggState
	off int64
	hi  int
}

func (x *explainer) apply(a aggState, e *elem) (aggState, bool) {
	if x.latest {
		out := aggState{has: true, digest: e.digest, ts: e.ts}
		if x.t.TableSource {
			if e.digest == tombDigest {
				return aggState{}, true // a tombstone deletes the key
			}
			return out, true // KTableSource stores the record's own timestamp
		}
		if a.has {
			out.ts = max(a.ts, e.ts)
		}
		return out, true
	}
	v, err := x.t.Reduce(a.value, e.value, !a.has)
	if err != nil {
		if x.failed == nil {
			x.failed = err
		}
		return aggState{}, false
	}
	if v == nil {
		return aggState{}, true // the reducer deleted the key
	}
	out := aggState{has: true, value: v, digest: codec.DigestOf(v), ts: e.ts}
	if a.has {
		out.ts = max(a.ts, e.ts)
	}
	return out, true
}

func sameState(h clEntry, a aggState) bool {
	if h.null {
		return !a.has
	}
	return a.has && a.digest == h.digest && a.ts == h.ts
}

// finalOK reports whether a is the state at the cut.
func (x *explainer) finalOK(a aggState) bool {
	if !x.present {
		return !a.has
	}
	return a.has && a.digest == x.final.digest && a.ts == x.final.ts
}

// search finds the explanations of least cost; it returns the best, or
// nil when none exists within the budget.
func (x *explainer) search(allowReset bool, forbid map[int]bool, bound int) *explanation {
	return x.searchLosing(allowReset, forbid, -1, bound)
}

// searchLosing is search with element lose left out.
func (x *explainer) searchLosing(allowReset bool, forbid map[int]bool, lose, bound int) *explanation {
	x.allowReset, x.forbid, x.bound, x.mustLose = allowReset, forbid, bound, lose
	x.budget = maxNodes // each search its own budget: a fruitless one must not starve the next
	x.memo = map[string]int{}
	x.best = nil
	pos := make([]int, len(x.seqs))
	cost := 0
	lost := map[int]lostHow{}
	for _, e := range x.blocked {
		if forbid[e.id] {
			return nil
		}
		lost[e.id] = lostSkipped
		cost += skipCost
	}
	x.walk(frame{}, pos, cost, lost)
	return x.best
}

func (x *explainer) record(cost int, lost map[int]lostHow, reset *resetInfo) {
	if x.best != nil && cost >= x.best.cost {
		return
	}
	x.best = &explanation{cost: cost, lost: maps.Clone(lost), reset: reset}
	x.bound = cost
}

func (x *explainer) memoKey(f *frame, pos []int, fixedAt int) string {
	var b strings.Builder
	for _, p := range pos {
		b.WriteString(strconv.Itoa(p))
		b.WriteByte(',')
	}
	b.WriteString(strconv.Itoa(fixedAt))
	b.WriteByte('|')
	b.WriteString(strconv.Itoa(f.hi))
	b.WriteByte('|')
	if f.agg.has {
		b.Write(f.agg.digest[:])
		b.WriteString(strconv.FormatInt(f.agg.ts, 10))
	}
	if f.reset != nil {
		b.WriteString("|r")
	}
	return b.String()
}

// visit says whether the search should go on from this state.
func (x *explainer) visit(f *frame, pos []int, fixedAt, cost int) bool {
	if x.budget <= 0 {
		x.exhausted = true
		return false
	}
	x.budget--
	if x.bound >= 0 && cost > x.bound || x.best != nil && cost >= x.best.cost {
		return false
	}
	// a state whose timestamp passed the next history state's (or the
	// final one's) can never reach it: timestamps only grow, and a restart
	// happens only right after a history state is matched (a table
	// source's state carries its record's own timestamp, which may fall)
	if f.agg.has && !x.t.TableSource {
		if f.hi < len(x.hist) && !x.hist[f.hi].null && f.agg.ts > x.hist[f.hi].ts {
			return false
		}
		// (the final state's, once no restart can come: one may still
		// bring the timestamp down)
		if x.present && f.agg.ts > x.final.ts && (!x.allowReset || f.reset != nil) {
			return false
		}
	}
	k := x.memoKey(f, pos, fixedAt)
	if c, ok := x.memo[k]; ok && c <= cost {
		return false
	}
	x.memo[k] = cost
	return true
}

// step applies e to the frame, matching the next history state greedily.
func (x *explainer) step(f frame, e *elem) (frame, bool) {
	a, ok := x.apply(f.agg, e)
	if !ok {
		return f, false
	}
	out := f
	out.agg = a
	out.applied = append(slices.Clip(f.applied), e)
	if out.hi < len(x.hist) && sameState(x.hist[out.hi], a) {
		out.matched = append(slices.Clip(f.matched), match{n: len(out.applied), agg: a, off: x.hist[out.hi].offset, hi: out.hi})
		out.hi++
	} else if x.exact {
		return f, false // every application writes the next state: this one is not there
	}
	return out, true
}

func (x *explainer) walk(f frame, pos []int, cost int, lost map[int]lostHow) {
	if !x.visit(&f, pos, -1, cost) {
		return
	}
	done := true
	for p, seq := range x.seqs {
		if pos[p] == len(seq) {
			continue
		}
		done = false
		e := seq[pos[p]]
		pos[p]++
		if nf, ok := x.step(f, e); ok && e.id != x.mustLose {
			if e.kind == elemTwin {
				lost[e.id] = lostDoubled
				x.walk(nf, pos, cost+resetCost, lost)
				delete(lost, e.id)
			} else {
				x.walk(nf, pos, cost, lost)
			}
			if x.allowReset && nf.reset == nil && nf.hi > f.hi {
				x.restarts(nf, func(rf frame, n int, lostEls []*elem) {
					for _, le := range lostEls {
						lost[le.id] = lostReset
					}
					x.walk(rf, pos, cost+n, lost)
					for _, le := range lostEls {
						delete(lost, le.id)
					}
				})
			}
		}
		switch {
		case e.kind == elemOptional || e.kind == elemTwin:
			x.walk(f, pos, cost, lost)
		case !x.forbid[e.id]:
			lost[e.id] = lostSkipped
			x.walk(f, pos, cost+skipCost, lost)
			delete(lost, e.id)
		}
		pos[p]--
	}
	if done {
		x.walkFixed(f, pos, 0, cost, lost)
	}
}

// walkFixed applies the readable copies in their order.
func (x *explainer) walkFixed(f frame, pos []int, i, cost int, lost map[int]lostHow) {
	if i == len(x.fixed) {
		if f.hi == len(x.hist) && x.finalOK(f.agg) {
			x.record(cost, lost, f.reset)
		} else if !x.exact && len(x.hist) > 0 && f.hi == len(x.hist)-1 && x.finalOK(f.agg) {
			// the final state was reached, matched earlier by an equal state
			x.record(cost, lost, f.reset)
		}
		return
	}
	if !x.visit(&f, pos, i, cost) {
		return
	}
	e := x.fixed[i]
	if nf, ok := x.step(f, e); ok && e.id != x.mustLose {
		x.walkFixed(nf, pos, i+1, cost, lost)
		if x.allowReset && nf.reset == nil && nf.hi > f.hi {
			x.restarts(nf, func(rf frame, n int, lostEls []*elem) {
				for _, le := range lostEls {
					lost[le.id] = lostReset
				}
				x.walkFixed(rf, pos, i+1, cost+n, lost)
				for _, le := range lostEls {
					delete(lost, le.id)
				}
			})
		}
	}
	if e.kind == elemOptional {
		x.walkFixed(f, pos, i+1, cost, lost)
	} else if !x.forbid[e.id] {
		lost[e.id] = lostSkipped
		x.walkFixed(f, pos, i+1, cost+skipCost, lost)
		delete(lost, e.id)
	}
}

// restarts tries each way the state could restart right after the history
// state f just matched: from an empty store, or from an earlier state the
// history showed. The elements applied since that state are lost.
func (x *explainer) restarts(f frame, try func(frame, int, []*elem)) {
	last := f.matched[len(f.matched)-1]
	targets := append([]match{{n: 0, off: -1, hi: -1}}, f.matched[:len(f.matched)-1]...)
	for _, m := range targets {
		var lostEls []*elem
		for _, e := range f.applied[m.n:] {
			// (a windowed input late under the stream time bound is optional,
			// yet once applied a restart loses it as any other)
			if (e.kind != elemOptional || e.in != nil && e.in.late) && !x.forbid[e.id] {
				lostEls = append(lostEls, e)
			} else if x.forbid[e.id] {
				lostEls = nil
				break
			}
		}
		if len(lostEls) == 0 {
			continue
		}
		rf := f
		rf.agg = m.agg
		rf.applied = slices.Clip(f.applied[:m.n])
		rf.matched = slices.Clip(f.matched)
		first := int64(-1)
		if m.hi+1 < len(x.hist) {
			first = x.hist[m.hi+1].offset
		}
		rf.reset = &resetInfo{lostStates: [2]int64{first, last.off}, toState: m.off}
		try(rf, len(lostEls)*lossUnit+resetCost, lostEls)
	}
}

// verdict is what the explanations say of a key.
type verdict struct {
	ok        bool            // an explanation with no loss exists
	certain   map[int]lostHow // lost in every least explanation
	undecided []*elem         // lost in some least explanations only
	missing   int             // losses among undecided
	reset     *resetInfo
	explained bool    // some explanation exists
	bounded   bool    // the search gave up
	doubled   []*elem // inputs the explanation applies twice
}

// judge explains the key.
func (x *explainer) judge() verdict {
	ex := x.search(false, nil, -1)
	if ex != nil && ex.cost == 0 {
		return verdict{ok: true, explained: true}
	}
	if rx := x.search(true, nil, -1); rx != nil && rx.reset != nil && (ex == nil || lossesOf(rx.cost) < lossesOf(ex.cost)) {
		ex = rx
		x.allowReset = true
	} else {
		x.allowReset = false
	}
	if ex == nil && x.twin() {
		// an input applied twice with its copies purged (a duplicate the
		// state shows): a third try lets each be applied again
		if dx := x.search(false, nil, -1); dx != nil {
			ex = dx
		}
	}
	if ex == nil {
		return verdict{bounded: x.exhausted}
	}
	v := verdict{explained: true, certain: map[int]lostHow{}, reset: ex.reset}
	// an explanation as good may restart the state where this one does not
	allowReset := true
	byID := x.elems()
	seen := map[int]bool{}
	for id, how := range ex.lost {
		if how == lostDoubled {
			v.doubled = append(v.doubled, byID[id])
			continue
		}
		// is there an explanation as good in which id is not lost?
		alt := x.search(allowReset, map[int]bool{id: true}, ex.cost)
		if alt == nil || alt.cost > ex.cost {
			v.certain[id] = how
			continue
		}
		for aid := range alt.lost {
			if _, c := ex.lost[aid]; !c && !seen[aid] {
				seen[aid] = true
				v.undecided = append(v.undecided, byID[aid])
			}
		}
		if !seen[id] {
			seen[id] = true
			v.undecided = append(v.undecided, byID[id])
		}
	}
	if len(v.undecided) > 0 {
		// every input some explanation as good leaves out is a candidate
		for id, e := range byID {
			if _, lost := ex.lost[id]; lost || seen[id] || e.kind == elemOptional || e.kind == elemTwin || e.in == nil {
				continue
			}
			if alt := x.searchLosing(allowReset, nil, id, ex.cost); alt != nil && alt.cost <= ex.cost {
				seen[id] = true
				v.undecided = append(v.undecided, e)
			}
		}
	}
	v.missing = lossesOf(ex.cost) - len(v.certain)
	v.ok = lossesOf(ex.cost) == 0
	slices.SortFunc(v.doubled, func(a, b *elem) int { return a.id - b.id })
	v.bounded = x.exhausted
	slices.SortFunc(v.undecided, func(a, b *elem) int { return a.id - b.id })
	return v
}

func (x *explainer) elems() map[int]*elem {
	out := map[int]*elem{}
	for _, seq := range x.seqs {
		for _, e := range seq {
			out[e.id] = e
		}
	}
	for _, e := range x.fixed {
		out[e.id] = e
	}
	for _, e := range x.blocked {
		out[e.id] = e
	}
	return out
}

// twin adds, after each element with no readable copy, its second
// application; it reports whether it added any.
func (x *explainer) twin() bool {
	n := len(x.elems())
	added := false
	for i, seq := range x.seqs {
		var out []*elem
		for _, e := range seq {
			out = append(out, e)
			if e.kind == elemFree || e.kind == elemOptional && e.in != nil && e.in.late {
				out = append(out, &elem{in: e.in, kind: elemTwin, digest: e.digest, ts: e.ts, value: e.value, id: n})
				n++
				added = true
			}
		}
		x.seqs[i] = out
	}
	return added
}
