package fakeapp

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/kaudit/kaudit/audit"
)

// postFaults injects the faults that act after processing: deletes past
// the committed offsets and a hanging transaction.
func (g *gen) postFaults() error {
	s := g.s
	for _, f := range g.faultOf[FaultRetentionGap] {
		t := s.Tables[f.Table]
		tp := audit.TopicPartition{Topic: t.Source, Partition: f.Partition}
		c := g.offsets[tp]
		if err := g.b.DeleteRecords(tp, c+int64(max(s.Lag, 1))); err != nil {
			return err
		}
		g.logStart(tp, c+int64(max(s.Lag, 1)))
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageSource, Cause: audit.CauseRetentionGap, Topic: tp.Topic, Partition: tp.Partition, Offset: c, Evident: true})
	}
	for _, f := range g.faultOf[FaultPurgeBeforeCommit] {
		t := s.Tables[f.Table]
		tp := audit.TopicPartition{Topic: s.Repartition(t), Partition: f.Partition}
		recs := g.repr[f.Table][f.Partition]
		if len(recs) == 0 {
			continue
		}
		end := recs[len(recs)-1].offset + 2 // past the last copy and its marker
		if err := g.b.DeleteRecords(tp, end); err != nil {
			return err
		}
		g.logStart(tp, end)
		for _, rr := range recs {
			if rr.src.pending && !rr.dup {
				rr.src.purged = true
			}
		}
		g.purgedRepr = append(g.purgedRepr, tp)
	}
	for range g.faultOf[FaultHangingTransaction] {
		prod := fmt.Sprintf("%s-stuck-%d", g.s.AppID, len(g.truth.Findings))
		if err := g.b.Begin(prod); err != nil {
			return err
		}
		tp := audit.TopicPartition{Topic: s.Output, Partition: 0}
		offs, err := g.b.TxnProduce(prod, tp, []Out{{Key: []byte("stuck"), Value: []byte(`{"orderId":"stuck"}`), Timestamp: s.Now - 3_600_000}})
		if err != nil {
			return err
		}
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageTransactions, Cause: audit.CauseHangingTransaction, Topic: tp.Topic, Partition: 0, Offset: offs[0], Evident: true})
	}
	return nil
}

// pickJoinMissing chooses the key the join never emits: one the left
// table holds and no other fault touches.
func (g *gen) pickJoinMissing() {
	if len(g.faultOf[FaultJoinMissing]) == 0 {
		return
	}
	faulted := map[string]bool{}
	for ti := range g.srcs {
		for _, r := range g.srcs[ti] {
			if r.fault != "" {
				faulted[r.key] = true
			}
		}
	}
	recs := g.consumedOf(0)
	for i := len(recs) / 2; i < len(recs); i++ {
		if k := recs[i].key; k != "" && !faulted[k] {
			g.joinMissingKey = k
			return
		}
	}
}

func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// groundTruth derives, from what the simulation did, the findings an
// audit must report, by the rules of docs/how-it-decides.md.
func (g *gen) groundTruth() {
	s := g.s
	purged := map[audit.TopicPartition]bool{}
	for _, tp := range g.purgedRepr {
		purged[tp] = true
	}
	for ti, t := range s.Tables {
		g.filteredTruth(ti)
		if g.unjudged(ti) {
			g.truth.Unjudged = append(g.truth.Unjudged, t.Name)
			g.specFreeTruth(ti)
			continue
		}
		rtopic := s.Repartition(t)
		readable := func(rp int32, off int64) bool {
			return off >= g.starts[audit.TopicPartition{Topic: rtopic, Partition: rp}]
		}
		// copies per input
		committed := map[*srcRec][]int64{}
		aborted := map[*srcRec]int64{}
		for rp := int32(0); rp < s.Partitions; rp++ {
			for _, rr := range g.repr[ti][rp] {
				if rr.dup && rr.src.fault == FaultAbortNotReplayed {
					aborted[rr.src] = rr.offset
					continue
				}
				committed[rr.src] = append(committed[rr.src], rr.offset)
			}
		}
		type tpr struct {
			tp audit.TopicPartition
			rp int32
		}
		found := map[tpr][]int64{}
		consumed := g.consumedOf(ti)
		for _, r := range consumed {
			if r.key == "" {
				continue
			}
			rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
			if offs := committed[r]; len(offs) > 0 && readable(rp, offs[0]) {
				found[tpr{r.tp, rp}] = append(found[tpr{r.tp, rp}], r.offset)
			}
		}
		// copies of an earlier and of a later input of its source
		// partition (not of another element of its own input) are readable
		posReadable := func(r *srcRec, rp int32) bool {
			offs := found[tpr{r.tp, rp}]
			i := sort.Search(len(offs), func(i int) bool { return offs[i] > r.offset })
			j := sort.Search(len(offs), func(i int) bool { return offs[i] >= r.offset })
			return j > 0 && i < len(offs)
		}
		byKey := map[string][]*srcRec{}
		for _, r := range consumed {
			if r.key != "" {
				byKey[r.key] = append(byKey[r.key], r)
			}
		}
		latest := t.Reducer == ReduceLatest
		// a fold whose source lost consumed records to retention cannot be
		// rebuilt: only the losses its copies prove are judged
		partial := false
		for _, f := range g.faultOf[FaultRetentionGap] {
			// the gap is in its table's source, which a split's other
			// tables read too
			partial = partial || (slices.Contains(t.topics(), s.Tables[f.Table].Source) && !latest)
		}
		resetKeys := map[string]bool{}
		if !latest {
			for k, rs := range byKey {
				// wiped, then an input applied after the wipe shows it
				lastWiped := 0
				for _, r := range rs {
					if r.wiped {
						lastWiped = max(lastWiped, r.order)
					}
				}
				for _, r := range rs {
					if lastWiped > 0 && r.shown && !r.wiped && r.order > lastWiped {
						resetKeys[k] = true
					}
				}
			}
		}
		for _, k := range sortedKeysOf(byKey) {
			rs := byKey[k]
			rp := audit.DefaultPartition([]byte(k), s.Partitions)
			rtp := audit.TopicPartition{Topic: rtopic, Partition: rp}
			// kept: applied and still in the state; the state's timestamp is
			// the largest of theirs
			kept := func(r *srcRec) bool { return r.shown && !(r.wiped && resetKeys[k]) }
			finalTs := int64(-1)
			parts := map[audit.TopicPartition]bool{}
			for _, r := range rs {
				parts[r.tp] = true
				if kept(r) && !r.wiped {
					finalTs = max(finalTs, r.ts)
				}
			}
			for _, r := range rs {
				if r.pending && !r.purged || r.offset < g.starts[r.tp] {
					continue // in flight, or deleted from the source: nothing to judge
				}
				lost := r.purged || !r.shown || (r.wiped && resetKeys[k])
				if !lost {
					continue
				}
				if latest && !g.blocked(r, rs, rp, committed, aborted, readable, posReadable) {
					// overwritten anyway by an input its task processed later
					// (a later one of its partition, or of the same partition
					// of a topic merged in, or a later element of its own), or
					// by an input applied after it, both copies readable
					overwritten := false
					fixed := func(y *srcRec) bool { return len(committed[y]) > 0 && readable(rp, committed[y][0]) }
					for _, y := range rs {
						later := y.in.seq > r.in.seq || y.in == r.in && y.elem > r.elem
						overwritten = overwritten || y.tp.Partition == r.tp.Partition && later && kept(y) && !(y.pending && !y.purged)
						overwritten = overwritten || r.applied && y.appliedAt > r.appliedAt && fixed(r) && fixed(y) && kept(y)
					}
					if overwritten {
						continue
					}
				}
				e := Expected{Topic: r.tp.Topic, Partition: r.tp.Partition, Offset: r.offset, Key: jsonText(k), Evident: true}
				offs := committed[r]
				switch {
				case resetKeys[k] && r.wiped:
					e.Stage, e.Cause = audit.StageStore, audit.CauseStateReset
					// the history may explain the restart as well as an
					// input left out: reported, or a candidate
					e.Evident, e.Flagged = false, true
				case r.applied && !r.shown && len(offs) > 0 && readable(rp, offs[0]):
					e.Stage, e.Cause = audit.StageStore, audit.CauseStateDiverged
				case len(offs) == 0 && r.fault == FaultAbortNotReplayed && readable(rp, aborted[r]):
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseAbortedNotReplayed
				case len(offs) == 0 && (posReadable(r, rp) || g.starts[rtp] == 0):
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseDropped
				case purged[rtp]:
					e.Stage, e.Cause = audit.StageRepartition, audit.CausePurgedBeforeCommit
					// a latest input without a readable copy may have been
					// applied before the readable ones: only its timestamp,
					// or a key read from one partition, proves it missing
					e.Evident = !latest || r.ts > finalTs || len(parts) == 1
				default:
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseUnapplied
					// no copy names it: the state alone must prove it
					e.Evident = latest && (r.ts > finalTs || len(parts) == 1)
					e.Flagged = !latest
				}
				if partial && e.Cause != audit.CauseDropped && e.Cause != audit.CauseAbortedNotReplayed {
					e.Evident, e.Flagged = false, false
				}
				g.truth.Findings = append(g.truth.Findings, e)
			}
		}
		if partial {
			// the inputs of a range purged before commit are not named
			// without the state check: the range is, as for a table not
			// judged (the checks that need no key run whatever the
			// table's judgement)
			g.specFreeTruth(ti)
		}
		for _, r := range consumed {
			if r.fault != FaultDuplicate || r.offset < g.starts[r.tp] {
				continue // a deleted input accounts for no copy
			}
			offs := committed[r]
			rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
			if len(offs) == 2 && readable(rp, offs[0]) {
				g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageRepartition, Cause: audit.CauseDuplicate,
					Topic: rtopic, Partition: rp, Offset: offs[0], Key: jsonText(r.key), Evident: true})
			} else if t.Reducer != ReduceLatest {
				// applied twice with its copies purged: the state may show it
				if g.truth.Doubled == nil {
					g.truth.Doubled = map[string]bool{}
				}
				g.truth.Doubled[r.tp.Topic+" "+jsonText(r.key)] = true
			}
		}
	}
	// The join, judged from what the topics hold: for each key the left
	// table's changelog holds, the output's last record must carry the
	// tables' latest timestamp (the joiner is not in the spec). A store
	// wiped under its changelog (a restart) leaves the output stale, or
	// without the key, when the app's next emits read the empty store.
	for _, k := range sortedKeysOf(g.lastState(0)) {
		want := int64(-1)
		for ti := range s.Tables {
			if ts, ok := g.lastState(ti)[k]; ok {
				want = max(want, ts)
			}
		}
		o, ok := g.lastOut[k]
		switch {
		case !ok:
			g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: s.Output,
				Partition: audit.DefaultPartition([]byte(k), s.outputPartitions()), Offset: -1, Key: jsonText(k), Evident: true})
		case o.ts != want:
			g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinStale, Topic: o.tp.Topic,
				Partition: o.tp.Partition, Offset: o.offset, Key: jsonText(k), Evident: true})
		}
	}
	for ti := range s.Tables {
		if s.Tables[ti].Output != "" && !slices.Contains(g.truth.Unjudged, s.Tables[ti].Name) {
			g.outputTruth(ti)
		}
	}
	sort.Slice(g.truth.Findings, func(i, j int) bool { return g.truth.Findings[i].String() < g.truth.Findings[j].String() })
}

// blocked reports whether the evidence proves input r was never applied,
// whatever the key's state: its only copy is aborted; or it has none where
// the copies of its partition's earlier and later inputs are readable, or
// where nothing was ever purged; or it has none, and an earlier input of
// the key from its source partition has a readable applied copy (its own
// would follow it). Such an input is lost even where a later input
// overwrote the key's state.
func (g *gen) blocked(r *srcRec, rs []*srcRec, rp int32, committed map[*srcRec][]int64, aborted map[*srcRec]int64,
	readable func(int32, int64) bool, posReadable func(*srcRec, int32) bool) bool {
	if len(committed[r]) > 0 {
		return false
	}
	rtp := audit.TopicPartition{Topic: g.s.Repartition(g.s.Tables[r.table]), Partition: rp}
	if r.fault == FaultAbortNotReplayed && readable(rp, aborted[r]) || posReadable(r, rp) || g.starts[rtp] == 0 {
		return true
	}
	for _, y := range rs {
		if y.tp == r.tp && y.offset < r.offset && y.applied && len(committed[y]) > 0 && readable(rp, committed[y][0]) {
			return true
		}
	}
	return false
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
