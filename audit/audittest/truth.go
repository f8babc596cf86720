package audittest

import (
	"encoding/json"
	"fmt"
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
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageSource, Cause: audit.CauseRetentionGap, Topic: tp.Topic, Partition: tp.Partition, Offset: c})
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
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageTransactions, Cause: audit.CauseHangingTransaction, Topic: tp.Topic, Partition: 0, Offset: offs[0]})
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
// audit must report, by DESIGN.md's rules.
func (g *gen) groundTruth() {
	s := g.s
	purged := map[audit.TopicPartition]bool{}
	for _, tp := range g.purgedRepr {
		purged[tp] = true
	}
	for ti, t := range s.Tables {
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
		found := map[[2]int32][]int64{}
		consumed := g.consumedOf(ti)
		for _, r := range consumed {
			if r.key == "" {
				continue
			}
			rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
			if offs := committed[r]; len(offs) > 0 && readable(rp, offs[0]) {
				found[[2]int32{r.tp.Partition, rp}] = append(found[[2]int32{r.tp.Partition, rp}], r.offset)
			}
		}
		posReadable := func(r *srcRec, rp int32) bool {
			offs := found[[2]int32{r.tp.Partition, rp}]
			i := sort.Search(len(offs), func(i int) bool { return offs[i] > r.offset })
			return i > 0 && i < len(offs)
		}
		byKey := map[string][]*srcRec{}
		for _, r := range consumed {
			if r.key != "" {
				byKey[r.key] = append(byKey[r.key], r)
			}
		}
		resetKeys := map[string]bool{}
		for k, rs := range byKey {
			wiped, after := false, false
			for _, r := range rs {
				if r.wiped {
					wiped = true
				} else if wiped && r.shown {
					after = true
				}
			}
			if wiped && after {
				resetKeys[k] = true
			}
		}
		for _, k := range sortedKeysOf(byKey) {
			rs := byKey[k]
			lastShown := -1
			for i, r := range rs {
				if r.shown && !r.wiped {
					lastShown = i
				}
			}
			for i, r := range rs {
				if r.pending && !r.purged || r.offset < g.starts[r.tp] {
					continue // in flight, or deleted from the source: nothing to judge
				}
				lost := r.purged || !r.shown || (r.wiped && resetKeys[k])
				if !lost {
					continue
				}
				if r.wiped && !resetKeys[k] {
					continue // the changelog never showed the wipe for this key
				}
				if t.Reducer == ReduceLatest && i < lastShown {
					continue // a later input overwrote it anyway
				}
				rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
				e := Expected{Topic: r.tp.Topic, Partition: r.tp.Partition, Offset: r.offset, Key: jsonText(k)}
				offs := committed[r]
				switch {
				case resetKeys[k]:
					e.Stage, e.Cause = audit.StageStore, audit.CauseStateReset
				case r.applied && !r.shown && len(offs) > 0 && readable(rp, offs[0]):
					e.Stage, e.Cause = audit.StageStore, audit.CauseStateDiverged
				case len(offs) == 0 && r.fault == FaultAbortNotReplayed && readable(rp, aborted[r]):
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseAbortedNotReplayed
				case posReadable(r, rp):
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseDropped
				case purged[audit.TopicPartition{Topic: rtopic, Partition: rp}]:
					e.Stage, e.Cause = audit.StageRepartition, audit.CausePurgedBeforeCommit
				default:
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseUnapplied
				}
				g.truth.Findings = append(g.truth.Findings, e)
			}
		}
		for _, r := range consumed {
			if r.fault != FaultDuplicate || r.offset < g.starts[r.tp] {
				continue // a deleted input accounts for no copy
			}
			offs := committed[r]
			rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
			if len(offs) == 2 && readable(rp, offs[0]) {
				g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageRepartition, Cause: audit.CauseDuplicate,
					Topic: rtopic, Partition: rp, Offset: offs[0], Key: jsonText(r.key)})
			}
		}
	}
	held := false // the left table holds the key at the cut
	for _, r := range g.srcs[0] {
		held = held || (r.key == g.joinMissingKey && r.shown && !r.wiped)
	}
	if k := g.joinMissingKey; k != "" && held {
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: s.Output,
			Partition: audit.DefaultPartition([]byte(k), s.outputPartitions()), Offset: -1, Key: jsonText(k)})
	}
	sort.Slice(g.truth.Findings, func(i, j int) bool { return g.truth.Findings[i].String() < g.truth.Findings[j].String() })
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
