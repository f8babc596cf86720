package fakeapp

import (
	"bytes"
	"sort"

	"github.com/kaudit/kaudit/audit"
)

// written is one committed record of a key: a changelog state with what
// the output steps make of it (pass: they forward it), or an output
// record.
type written struct {
	partition int32
	offset    int64
	ts        int64
	value     []byte
	pass      bool
}

// writeOutput forwards one flushed state of table ti to its output, as
// toStream(), the output steps and to(output) do in the flush's
// transaction, unless a fault swallows it; commit says the attempt
// commits.
func (g *gen) writeOutput(ti int, p int32, prod, k string, st *state, commit bool) error {
	t := g.s.Tables[ti]
	if g.clHist == nil {
		g.clHist = make([]map[string][]written, len(g.s.Tables))
		g.outHist = make([]map[string][]written, len(g.s.Tables))
	}
	if g.clHist[ti] == nil {
		g.clHist[ti], g.outHist[ti] = map[string][]written{}, map[string][]written{}
	}
	v := st.value
	if t.Reducer == ReduceCount {
		v = st.count
	}
	els := runApp(t.outputSteps(), Elem{Key: k, Value: v})
	var val []byte
	if len(els) > 0 {
		var err error
		if val, err = g.encode(t.Output, els[0].Value); err != nil {
			return err
		}
	}
	if commit {
		g.clHist[ti][k] = append(g.clHist[ti][k], written{partition: p, ts: st.ts, value: val, pass: len(els) > 0})
	}
	if len(els) == 0 || g.swallowed(ti, k) {
		return nil
	}
	tp := audit.TopicPartition{Topic: t.Output, Partition: p}
	offs, err := g.b.TxnProduce(prod, tp, []Out{{Key: []byte(k), Value: val, Timestamp: st.ts}})
	if err != nil {
		return err
	}
	if commit {
		g.outHist[ti][k] = append(g.outHist[ti][k], written{partition: p, offset: offs[0], ts: st.ts, value: val, pass: true})
	}
	return nil
}

// swallowed reports whether a fault swallows key k's next output record
// of table ti: every one (output-missing), or every one after the first
// committed (output-stale).
func (g *gen) swallowed(ti int, k string) bool {
	if g.outKeys[FaultOutputMissing][ti] == k {
		return true
	}
	return g.outKeys[FaultOutputStale][ti] == k && len(g.outHist[ti][k]) > 0
}

// pickOutputFaults picks the keys whose output records the output faults
// swallow: the keys with the most inputs, which no other fault touches.
func (g *gen) pickOutputFaults() {
	g.outKeys = map[FaultKind]map[int]string{FaultOutputMissing: {}, FaultOutputStale: {}}
	for ti := range g.s.Tables {
		n := map[string]int{}
		faulted := map[string]bool{}
		for _, r := range g.consumedOf(ti) {
			if r.key == "" {
				continue
			}
			n[r.key]++
			faulted[r.key] = faulted[r.key] || r.fault != ""
		}
		keys := sortedKeysOf(n)
		sort.SliceStable(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] })
		used := map[string]bool{}
		for _, kind := range []FaultKind{FaultOutputMissing, FaultOutputStale} {
			for _, f := range g.faultOf[kind] {
				if f.Table != ti {
					continue
				}
				for _, k := range keys {
					if !faulted[k] && !used[k] {
						g.outKeys[kind][ti], used[k] = k, true
						break
					}
				}
			}
		}
	}
}

// unjudged reports whether kaudit cannot judge table ti: a step TODO or a
// Processor API node, or a step whose expression fails on a consumed
// input it reads.
func (g *gen) unjudged(ti int) bool {
	t := g.s.Tables[ti]
	if t.Unmodelled() {
		return true
	}
	chain := t.chain()
	for _, topic := range t.topics() {
		for _, in := range g.ins[topic] {
			if in.consumed && in.offset >= g.starts[in.tp] {
				if _, unknown := specEval(chain, Elem{Key: in.key, Value: in.value}); unknown {
					return true
				}
			}
		}
	}
	return false
}

// filteredTruth counts, per source partition of table ti, the consumed
// inputs its steps, as the spec states them, emit nothing for, and the
// elements they emit with a null key.
func (g *gen) filteredTruth(ti int) {
	t := g.s.Tables[ti]
	chain := t.chain()
	for _, topic := range t.topics() {
		filtered, nulls := map[int32]*Filtered{}, map[int32]*Filtered{}
		count := func(m map[int32]*Filtered, in *srcIn, n int64) {
			if m[in.tp.Partition] == nil {
				m[in.tp.Partition] = &Filtered{Table: t.Name, Topic: topic, Partition: in.tp.Partition, First: in.offset}
			}
			m[in.tp.Partition].Count += n
		}
		for _, in := range g.ins[topic] {
			if !in.consumed || in.offset < g.starts[in.tp] {
				continue
			}
			n, unknown := specEval(chain, Elem{Key: in.key, Value: in.value})
			switch {
			case unknown:
			case n == 0 && len(t.Steps) > 0:
				count(filtered, in, 1)
			default:
				nk := int64(0)
				for _, r := range in.elems[ti] {
					if r.key == "" {
						nk++
					}
				}
				if nk > 0 {
					count(nulls, in, nk)
				}
			}
		}
		for p := range g.s.Partitions {
			if f := filtered[p]; f != nil {
				g.truth.Filtered = append(g.truth.Filtered, *f)
			}
			if f := nulls[p]; f != nil {
				g.truth.NullKeys = append(g.truth.NullKeys, *f)
			}
		}
	}
}

// specFreeTruth is what an audit finds of a table it cannot judge by key:
// each repartition partition purged above the group's committed offset,
// one finding for the range (the source's retention gaps are postFaults').
func (g *gen) specFreeTruth(ti int) {
	s := g.s
	rtopic := s.Repartition(s.Tables[ti])
	for _, tp := range g.purgedRepr {
		c, ok := g.offsets[tp]
		if tp.Topic != rtopic || !ok || g.starts[tp] <= c {
			continue
		}
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageRepartition, Cause: audit.CausePurgedBeforeCommit,
			Topic: tp.Topic, Partition: tp.Partition, Offset: c, Evident: true})
	}
}

// outputTruth judges table ti's own output from what the topics hold:
// for each key of its changelog, the output holds, in order, every
// committed state its output steps forward (as they map it); its last
// record is the last of them. A key without output records is
// join-missing; a state the output lacks before the last, join-missing at
// the output; a last record that is not the last state, join-stale.
func (g *gen) outputTruth(ti int) {
	s := g.s
	t := s.Tables[ti]
	if g.clHist == nil || g.clHist[ti] == nil {
		return
	}
	for _, k := range sortedKeysOf(g.clHist[ti]) {
		var exp []written
		for _, w := range g.clHist[ti][k] {
			if w.pass {
				exp = append(exp, w)
			}
		}
		if len(exp) == 0 {
			continue // no state passes: the output need not hold the key
		}
		fin := exp[len(exp)-1]
		outs := g.outHist[ti][k]
		if len(outs) == 0 {
			g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: t.Output,
				Partition: audit.DefaultPartition([]byte(k), s.Partitions), Offset: -1, Key: jsonText(k), Evident: true})
			continue
		}
		o := outs[len(outs)-1]
		same := func(a, b written) bool { return a.ts == b.ts && bytes.Equal(a.value, b.value) }
		j := 0
		for _, c := range exp[:len(exp)-1] {
			i := j
			for i < len(outs) && !same(outs[i], c) {
				i++
			}
			if i < len(outs) {
				j = i + 1
				continue
			}
			g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: t.Output,
				Partition: o.partition, Offset: -1, Key: jsonText(k), Evident: true})
		}
		if !same(o, fin) {
			g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinStale, Topic: t.Output,
				Partition: o.partition, Offset: o.offset, Key: jsonText(k), Evident: true})
		}
	}
}
