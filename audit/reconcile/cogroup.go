package reconcile

// A cogroup: each key's final state against its members' aggregators over its inputs.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// Cogroup is what a table needs beyond Table's fields to be a cogroup
// (Kafka Streams 3.6.2's CogroupedStreamAggregateBuilder): grouped
// streams, each with its own steps, key and aggregator, folded into one
// store (Table.Store, Table.Changelog) from the cogroup's initializer.
type Cogroup struct {
	Members []CogroupMember
	// Add is member i's aggregator; first says the key has no aggregate
	// yet (the initializer's value is then the aggregate).
	Add func(member int, agg, v audit.Value, first bool) (audit.Value, error)
}

// CogroupMember is one grouped stream of a cogroup.
type CogroupMember struct {
	Source string
	// Repartition is the topic Streams re-keys it through, "" for
	// groupByKey.
	Repartition string
	// Steps runs its steps and key on one record (nil: the record as it
	// is); ValueChanging says they may change values.
	Steps         func(Env) ([]Element, error)
	ValueChanging bool
}

// cgInput is one input of a cogroup's key: an element of a consumed
// record of a member.
type cgInput struct {
	member int
	value  audit.Value
	tp     audit.TopicPartition
	offset int64
	ts     int64
	// noCopy: its member repartitions and no copy of it is there;
	// whole: that repartition partition was never purged; pastCommit: it
	// was purged above the group's committed offset (KAFKA-17635), so the
	// copy may be among what the purge took before the store applied it
	noCopy, whole, pastCommit bool
}

// checkCogroup judges a cogroup by each key's final state: the members'
// aggregators folded over the key's consumed inputs (those that reached
// the store: a copy the store's task has not consumed yet is pending)
// from the initializer. It holds for aggregators whose result does not
// depend on the order of the inputs (counts, sums, the usual
// aggregates): kaudit tries both orders on the data and otherwise leaves
// the table unjudged. A key that breaks it names the inputs whose
// removal explains its state: dropped where its copy is missing from a
// repartition partition never purged, else unapplied with the candidates;
// none: state-diverged.
func (r *run) checkCogroup(ctx context.Context, t *Table) {
	cg := t.Cogroup
	if t.Unjudged != "" {
		r.missing("%s", unjudgedText(t))
		return
	}
	inputs := map[string][]cgInput{}
	var failed []string
	for i, m := range cg.Members {
		ok := r.cogroupMember(ctx, t, i, m, func(key audit.Value, in cgInput) {
			text := codec.Text(key)
			inputs[text] = append(inputs[text], in)
		}, &failed)
		if !ok {
			return
		}
	}
	if len(failed) > 0 {
		r.missing("table %s is not judged: its members' steps failed on %d records (the first: %s)", t.Name, len(failed), failed[0])
		return
	}
	finals, ok := r.storeFinals(ctx, t)
	if !ok {
		return
	}
	fold := func(ins []cgInput) (audit.Value, error) {
		var agg audit.Value
		for i, in := range ins {
			next, err := cg.Add(in.member, agg, in.value, i == 0)
			if err != nil {
				return nil, err
			}
			agg = next
		}
		return agg, nil
	}
	type broken struct {
		text string
		ins  []cgInput
		fin  finalState
		have bool
		want audit.Value
	}
	// a running app applies inputs between the reads of its members and of
	// its store: where the group's offsets on them moved while the audit
	// read, a topic grew after it was read, or the store is written outside
	// transactions (at-least-once applies before it commits) with input not
	// consumed yet, a key whose state differs is in flight
	var topics []string
	for _, m := range cg.Members {
		topics = append(topics, m.Source, m.Repartition)
	}
	racing := r.movedOn(ctx, topics) || r.grew(ctx, append(topics, t.Changelog)...) ||
		slices.ContainsFunc(slices.Collect(maps.Values(finals)), func(f finalState) bool { return f.plain }) && r.lagOn(topics...)
	inFlight := 0
	defer func() {
		if inFlight > 0 {
			r.note("table %s: %d keys' aggregates differ from their members' consumed inputs where the app applied inputs between the reads of its members and its store (the group's offsets moved, a topic grew, or an at-least-once app has input not consumed): in flight, not judged", t.Name, inFlight)
		}
	}()
	var bad []broken
	for _, text := range slices.Sorted(maps.Keys(inputs)) {
		ins := inputs[text]
		slices.SortStableFunc(ins, func(a, b cgInput) int {
			return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.member, b.member), cmp.Compare(a.offset, b.offset))
		})
		want, err := fold(ins)
		if err != nil {
			r.missing("table %s is not judged: an aggregator failed on key %s: %v", t.Name, text, err)
			return
		}
		rev := slices.Clone(ins)
		slices.Reverse(rev)
		if want2, err := fold(rev); err != nil || !sameValue(want, want2) {
			r.missing("table %s is not judged: its aggregators' result depends on the order of the inputs (key %s: %s one way, %s the other), which kaudit does not know across members", t.Name, text, codec.Text(want), codec.Text(want2))
			return
		}
		fin, have := finals[text]
		if have && fin.value != nil && sameValue(fin.value, want) {
			continue
		}
		if racing {
			inFlight++
			continue
		}
		bad = append(bad, broken{text: text, ins: ins, fin: fin, have: have && fin.value != nil, want: want})
	}
	whole := 0 // broken keys every input of which has its copy (or needs none)
	for _, b := range bad {
		if !slices.ContainsFunc(b.ins, func(in cgInput) bool { return in.noCopy }) {
			whole++
		}
	}
	if whole >= 3 && 2*whole > len(inputs) {
		// most keys break it: the spec's aggregators are not the app's
		r.missing("table %s is not judged: its members' aggregators explain the aggregates of only %d of %d keys (key %s: the inputs give %s, the store holds %s), so the spec does not describe the app", t.Name,
			len(inputs)-len(bad), len(inputs), bad[0].text, codec.Text(bad[0].want), codec.Text(bad[0].fin.value))
		return
	}
	for _, b := range bad {
		r.cogroupFinding(t, b.text, b.ins, b.fin, b.have, b.want, fold)
	}
	for _, text := range slices.Sorted(maps.Keys(finals)) {
		if _, ok := inputs[text]; ok || finals[text].value == nil {
			continue
		}
		if racing {
			inFlight++
			continue
		}
		fin := finals[text]
		f := audit.NewFinding(audit.StageStore, audit.CauseStateDiverged, fin.tp, fin.offset)
		f.Key, f.Actual = text, codec.Text(fin.value)
		f.Detail = fmt.Sprintf("table %s: the store holds %s for key %s, which no consumed input of its members has", t.Name, codec.Text(fin.value), text)
		r.add(f)
	}
	if t.Output != "" {
		r.finalOutput(ctx, t, finals)
	}
}

// cogroupMember reads one member's source (and repartition topic) and
// hands each consumed element that reached the store, or would have,
// to add; an element whose copy the store's task has not consumed yet is
// left out. It reports false when the member cannot be read whole.
func (r *run) cogroupMember(ctx context.Context, t *Table, i int, m CogroupMember, add func(audit.Value, cgInput), failed *[]string) bool {
	var copies map[fingerprint][]sjCopy
	var logStart map[int32]int64
	var nparts int32
	if m.Repartition != "" {
		parts, ok := r.partitionsOf(ctx, m.Repartition, "repartition")
		if !ok {
			return false
		}
		copies, logStart = map[fingerprint][]sjCopy{}, map[int32]int64{}
		nparts = r.topics[m.Repartition].Partitions
		tps := tpsOf(m.Repartition, parts)
		rd := r.read(ctx, tps, "repartition", decodeDigest)
		for _, tp := range tps {
			l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
				if it.Fate != audit.FateCommitted || !r.decoded(it) {
					return
				}
				r.count("repartition", 1)
				f := fingerprintOf(it.keyText, it.digest, it.Record.Timestamp)
				copies[f] = append(copies[f], sjCopy{partition: tp.Partition, offset: it.Record.Offset})
			})
			if !ok || l == nil {
				rd.stop()
				r.missing("table %s: the repartition partition %s is unreadable, so the table is not judged", t.Name, tp)
				return false
			}
			logStart[tp.Partition] = r.clusterLogStart(tp, l.Offsets.LogStart)
			r.purgedPastCommit(tp, logStart[tp.Partition], r.committed(tp), "table "+t.Name, "copies", "the store applied them")
		}
		rd.stop()
	}
	parts, ok := r.partitionsOf(ctx, m.Source, "source")
	if !ok {
		return false
	}
	// A shard of a member that repartitions takes inputs from every
	// source partition, as a table's (readSourceTopic): it reads them all
	// and keeps the elements of its keys; a partition's own findings
	// belong to the shard of its number.
	byKey := r.opts.Partitions != nil && m.Repartition != ""
	tps := tpsOf(m.Source, parts)
	if byKey {
		tps = tpsOf(m.Source, allPartitions(r.topics[m.Source].Partitions))
	}
	rd, first, foreign := r.readSourceShard(ctx, tps, byKey)
	defer rd.stop()
	for _, tp := range tps {
		c := r.committed(tp)
		own := !foreign[tp]
		var lag, nulls, filtered int64
		var firstNull, firstFiltered []int64
		var unplaced string
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			rec := &it.Record
			if it.Fate != audit.FateCommitted {
				return
			}
			if c < 0 || rec.Offset >= c {
				lag++
				return
			}
			if !r.inputOutsideSkips(tp, rec.Offset) || first && own && !r.decoded(it) || it.decErr != nil {
				return
			}
			els := []Element{{Key: it.key, Value: it.value}}
			if m.Steps != nil {
				var err error
				if els, err = m.Steps(Env{Key: it.key, Value: it.value, Headers: rec.Headers, Timestamp: rec.Timestamp}); err != nil {
					if own {
						*failed = append(*failed, fmt.Sprintf("%s@%d: %v", tp, rec.Offset, err))
					}
					return
				}
			}
			if byKey && len(els) > 0 {
				els = slices.DeleteFunc(els, func(e Element) bool {
					if e.Key == nil || e.Value == nil {
						return !own // counted by the partition's own shard
					}
					p := partitionOfKey(r.keySerde(t), codec.Text(e.Key), nparts)
					if p < 0 {
						unplaced = codec.Text(e.Key)
						return true
					}
					return !containsPartition(r.opts.Partitions, p)
				})
				if len(els) == 0 {
					return // another shard's keys (a filtered input is its own shard's)
				}
			}
			if len(els) == 0 {
				filtered++
				if len(firstFiltered) < 10 {
					firstFiltered = append(firstFiltered, rec.Offset)
				}
			}
			for _, e := range els {
				if e.Key == nil || e.Value == nil {
					nulls++ // the aggregate (or the repartition's filter) skips it
					if len(firstNull) < 10 {
						firstNull = append(firstNull, rec.Offset)
					}
					continue
				}
				in := cgInput{member: i, value: e.Value, tp: tp, offset: rec.Offset, ts: rec.Timestamp}
				if m.Repartition != "" {
					dg := it.digest
					if m.ValueChanging || len(els) > 1 {
						dg = codec.DigestOf(e.Value)
					}
					text := codec.Text(e.Key)
					f := fingerprintOf(text, dg, rec.Timestamp)
					if cs := copies[f]; len(cs) > 0 {
						copies[f] = cs[1:]
						rtp := audit.TopicPartition{Topic: m.Repartition, Partition: cs[0].partition}
						if cut := r.committed(rtp); cut < 0 || cs[0].offset >= cut {
							continue // pending: the store's task has not consumed it
						}
					} else {
						in.noCopy = true
						if p := partitionOfKey(r.keySerde(t), text, nparts); p >= 0 {
							in.whole = logStart[p] == 0
							rtp := audit.TopicPartition{Topic: m.Repartition, Partition: p}
							c := r.committed(rtp)
							in.pastCommit = c >= 0 && logStart[p] > c || r.heldPurged(rtp)
						}
					}
				}
				add(e.Key, in)
			}
		})
		if !ok || l == nil {
			r.missing("table %s: source partition %s is unreadable, so the table is not judged", t.Name, tp)
			return false
		}
		if unplaced != "" {
			r.missing("table %s: --partitions keeps the inputs whose keys the shard's partitions hold, but the key serde %q cannot place key %s in a partition, so the table is not judged (run without --partitions)", t.Name, r.p.KeySerde, unplaced)
			return false
		}
		if first && own {
			r.lagFinding(tp, l, c, lag)
			r.gapFindings(tp, l, c)
		}
		if r.clusterLogStart(tp, l.Offsets.LogStart) > 0 {
			r.missing("table %s: %s's first records are deleted (log start %d), so its keys' aggregates cannot be rebuilt and the table is not judged", t.Name, tp, l.Offsets.LogStart)
			return false
		}
		if !own {
			continue // its own findings are its shard's
		}
		if filtered > 0 {
			f := audit.NewFinding(audit.StageSource, audit.CauseFiltered, tp, firstFiltered[0])
			f.Count = filtered
			f.Detail = fmt.Sprintf("table %s: its member's steps emit nothing for %d consumed records, as the spec says the app does (offsets %s)", t.Name, filtered, joinOffsets(firstFiltered, filtered))
			r.add(f)
		}
		if nulls > 0 {
			f := audit.NewFinding(audit.StageSource, audit.CauseNullKey, tp, firstNull[0])
			f.Count = nulls
			f.Detail = fmt.Sprintf("table %s: %d consumed records have a null key or value where they reach the cogroup, which Kafka Streams skips by design (offsets %s)", t.Name, nulls, joinOffsets(firstNull, nulls))
			r.add(f)
		}
	}
	return ctx.Err() == nil
}

// cogroupFinding reports a key whose state is not its inputs' fold: the
// inputs whose removal alone explains the state are the candidates.
func (r *run) cogroupFinding(t *Table, text string, ins []cgInput, fin finalState, have bool, want audit.Value, fold func([]cgInput) (audit.Value, error)) {
	actual := "no state"
	if have {
		actual = codec.Text(fin.value)
	}
	// the inputs whose copies are missing from partitions never purged,
	// all left out together, explain the state: each of them was dropped
	// (a key can lose several)
	var noCopy, kept []cgInput
	for _, in := range ins {
		if in.noCopy && in.whole {
			noCopy = append(noCopy, in)
		} else {
			kept = append(kept, in)
		}
	}
	if len(noCopy) > 0 {
		explained := len(kept) == 0 && !have
		if len(kept) > 0 && have {
			v, err := fold(kept)
			explained = err == nil && sameValue(v, fin.value)
		}
		if explained {
			for _, c := range noCopy {
				r.cogroupDropped(t, text, c, want, actual, len(noCopy))
			}
			return
		}
	}
	// the inputs whose copies a purge past the commit may have taken: a
	// set of them left out together explains the state, the purge's
	// finding names their range, and the key lacks them (AB's V17: two of
	// one key). Copies purged after the store applied them are missing
	// too, so every subset is tried, the smallest first (up to 12 such
	// inputs: 4,095 folds)
	var purged []cgInput
	for _, in := range ins {
		if in.noCopy && in.pastCommit {
			purged = append(purged, in)
		}
	}
	if n := len(purged); n > 1 && n <= 12 {
		if lost := r.purgedSubsets(ins, purged, fin, have, fold); len(lost) > 0 {
			r.cogroupLost(t, text, lost, want, actual, "where the repartition topic was purged above the group's committed offset (purged-before-commit)", "the purge took them before the store applied them")
			return
		}
	}
	// the same over the inputs whose copies are missing where the
	// repartition topic was purged at all: after a restart that committed
	// past a purge the evidence does not date, a set of them left out
	// explains the state, dropped or purged before they were applied
	// (never state-diverged: each is a candidate)
	purged = purged[:0]
	for _, in := range ins {
		if in.noCopy && !in.whole {
			purged = append(purged, in)
		}
	}
	if n := len(purged); n > 1 && n <= 12 {
		if lost := r.purgedSubsets(ins, purged, fin, have, fold); len(lost) > 0 && len(lost[0]) > 1 {
			r.cogroupLost(t, text, lost, want, actual, "where the repartition topic is purged", "dropped before the repartition or purged before the store applied them, the evidence cannot tell")
			return
		}
	}
	var cands []cgInput
	if have && len(ins) <= 500 {
		for i := range ins {
			rest := slices.Concat(ins[:i], ins[i+1:])
			if len(rest) == 0 {
				continue
			}
			if v, err := fold(rest); err == nil && sameValue(v, fin.value) {
				cands = append(cands, ins[i])
			}
		}
	} else if !have && len(ins) == 1 {
		cands = ins
	}
	// a candidate whose copy is missing from a partition never purged is
	// the one: dropped
	var dropped []cgInput
	for _, c := range cands {
		if c.noCopy && c.whole {
			dropped = append(dropped, c)
		}
	}
	switch {
	case len(dropped) == 1 || len(dropped) > 0 && len(dropped) == len(cands):
		r.cogroupDropped(t, text, dropped[0], want, actual, 1)
	case len(cands) > 0:
		var names []string
		for _, c := range cands {
			names = append(names, fmt.Sprintf("%s@%d", c.tp, c.offset))
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseUnapplied, fin.tp, fin.offset)
		f.Key, f.Expected, f.Actual, f.Count = text, codec.Text(want), actual, 1
		f.Candidates = strings.Join(names, ", ")
		f.Detail = fmt.Sprintf("table %s: key %s's aggregate is %s, its consumed inputs give %s; leaving out any one of the candidates gives the store's state: one of them was dropped, or applied and lost, the evidence cannot tell which", t.Name, text, actual, codec.Text(want))
		r.add(f)
	default:
		tp, off := fin.tp, fin.offset
		if !have {
			tp, off = ins[0].tp, ins[0].offset
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseStateDiverged, tp, off)
		f.Key, f.Expected, f.Actual = text, codec.Text(want), actual
		f.Detail = fmt.Sprintf("table %s: key %s's aggregate is %s, but its %d consumed inputs give %s, and no one input left out explains it", t.Name, text, actual, len(ins), codec.Text(want))
		r.add(f)
	}
}

// cogroupLost reports the inputs of lost[0] (the smallest sets of inputs
// whose copies are missing where, that explain key text's state) unapplied.
func (r *run) cogroupLost(t *Table, text string, lost [][]cgInput, want audit.Value, actual, where, why string) {
	var names []string
	for _, c := range lost[0] {
		names = append(names, fmt.Sprintf("%s@%d", c.tp, c.offset))
	}
	f := audit.NewFinding(audit.StageRepartition, audit.CauseUnapplied, lost[0][0].tp, lost[0][0].offset)
	f.Key, f.Expected, f.Actual, f.Count = text, codec.Text(want), actual, int64(len(lost[0]))
	f.Candidates = strings.Join(names, ", ")
	which := fmt.Sprintf("it lacks exactly the %d inputs %s", len(lost[0]), f.Candidates)
	if len(lost) > 1 {
		which = fmt.Sprintf("it lacks %d of them (%d sets of that size explain it; the first: %s)", len(lost[0]), len(lost), f.Candidates)
	}
	f.Detail = fmt.Sprintf("table %s: key %s's aggregate is %s, its consumed inputs give %s; of its inputs whose copies are missing %s, %s: %s", t.Name, text, actual, codec.Text(want), where, which, why)
	r.add(f)
}

// purgedSubsets returns the smallest sets of purged (inputs of ins whose
// copies a purge past the commit may have taken) that, left out of ins,
// fold to the key's state; none when no set does.
func (r *run) purgedSubsets(ins, purged []cgInput, fin finalState, have bool, fold func([]cgInput) (audit.Value, error)) [][]cgInput {
	// the latest first: a purge takes a partition's newest copies, so of
	// sets that explain alike (inputs alike), the one of the latest inputs
	// is found first
	purged = slices.Clone(purged)
	slices.SortStableFunc(purged, func(a, b cgInput) int { return cmp.Or(cmp.Compare(b.ts, a.ts), cmp.Compare(b.offset, a.offset)) })
	n := len(purged)
	isPurged := func(in cgInput) int {
		return slices.IndexFunc(purged, func(p cgInput) bool { return p.tp == in.tp && p.offset == in.offset && p.member == in.member })
	}
	var found [][]cgInput
	for size := 1; size <= n && len(found) == 0; size++ {
		for mask := 1; mask < 1<<n; mask++ {
			if bits.OnesCount(uint(mask)) != size {
				continue
			}
			var kept, lost []cgInput
			for _, in := range ins {
				if i := isPurged(in); i >= 0 && mask&(1<<i) != 0 {
					lost = append(lost, in)
				} else {
					kept = append(kept, in)
				}
			}
			explained := len(kept) == 0 && !have
			if len(kept) > 0 && have {
				v, err := fold(kept)
				explained = err == nil && sameValue(v, fin.value)
			}
			if explained {
				slices.SortFunc(lost, func(a, b cgInput) int { return cmp.Or(cmp.Compare(a.ts, b.ts), cmp.Compare(a.offset, b.offset)) })
				found = append(found, lost)
			}
		}
	}
	return found
}

// cogroupDropped reports input c of key text dropped: its copy is
// missing from a repartition partition never purged and the key's
// aggregate lacks it (with n such inputs of the key).
func (r *run) cogroupDropped(t *Table, text string, c cgInput, want audit.Value, actual string, n int) {
	f := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, c.tp, c.offset)
	f.Key, f.Timestamp, f.Expected, f.Actual = text, c.ts, codec.Text(want), actual
	lacks := "lacks it"
	if n > 1 {
		lacks = fmt.Sprintf("lacks exactly the %d inputs whose copies are missing, this one among them", n)
	}
	f.Detail = fmt.Sprintf("table %s: consumed, its copy is missing from the repartition topic (never purged), and key %s's aggregate %s (%s with them, %s held): the app consumed it and wrote nothing for it", t.Name, text, lacks, codec.Text(want), actual)
	r.add(f)
}

// unjudgedText is why a table is not judged, naming it once.
func unjudgedText(t *Table) string {
	if strings.HasPrefix(t.Unjudged, "table "+t.Name) {
		return t.Unjudged
	}
	return fmt.Sprintf("table %s is not judged: %s", t.Name, t.Unjudged)
}
