package reconcile

// Signatures of known Kafka Streams bugs in the findings.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/kaudit/kaudit/audit"
)

// signatures ties the findings that rest on one piece of evidence to the
// known Kafka Streams bug it is the signature of:
//
//   - KAFKA-17635 (3.6.x, fixed in 3.7.2, 3.8.1, 3.9.0): a repartition
//     partition whose log start S is above the group's committed offset C:
//     Streams purged [C, S) before it had applied it. Its inputs are the
//     purged-before-commit findings of that partition.
//   - KAFKA-16017 (3.6.0, 3.6.1; fixed in 3.6.2, 3.7.0): keys of one
//     changelog partition whose histories restart, each losing states of one
//     offset range: the store was restored short of the range (R, L] and
//     carried on. Its inputs are the state-reset findings of those keys.
//
// A signature is evidence, not a diagnosis: docs/how-it-decides.md
// ("Signatures of known bugs") says what else can leave the same.
func (r *run) signatures() {
	for _, t := range r.p.Tables {
		ts := r.tables[t.Name]
		if ts == nil {
			continue
		}
		for _, p := range slices.Sorted(maps.Keys(ts.purgedRange)) {
			pr := ts.purgedRange[p]
			sig := audit.Signature{Issue: "KAFKA-17635", Topic: t.Repartition, Partition: p, From: pr[0], To: pr[1] - 1,
				FixedIn: []string{"3.7.2", "3.8.1", "3.9.0"}}
			keys := map[string]bool{}
			for _, in := range r.losses {
				if in.table == ts && in.loss != nil && in.loss.cause == audit.CausePurgedBeforeCommit && in.r == p {
					sig.Findings++
					keys[in.key] = true
				}
			}
			sig.Keys = firstKeys(keys)
			sig.Detail = fmt.Sprintf("table %s: the log start %d of %s/%d is above the group's committed offset %d: Streams purged offsets %d-%d before it applied them (KAFKA-17635: StreamTask.purgeableOffsets returned consumed offsets + 1 in 3.6.x); %d vanished inputs of the table rest on it",
				t.Name, pr[1], t.Repartition, p, pr[0], pr[0], pr[1]-1, sig.Findings)
			r.rep.Signatures = append(r.rep.Signatures, sig)
		}
		// After the app recovered (its committed offset moved past the
		// purge), what KAFKA-17635 leaves is inputs consumed and never
		// applied, their copies' range purged: consistent with it, not proof.
		unapplied := map[int32][]*input{}
		for _, in := range r.losses {
			if in.table == ts && in.loss != nil && in.loss.cause == audit.CauseUnapplied && in.r >= 0 && ts.purgedRange[in.r] == ([2]int64{}) && in.status != copyDirect {
				unapplied[in.r] = append(unapplied[in.r], in)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(unapplied)) {
			ins := unapplied[p]
			keys := map[string]bool{}
			from, to := ins[0].ts, ins[0].ts
			for _, in := range ins {
				keys[in.key] = true
				from, to = min(from, in.ts), max(to, in.ts)
			}
			sig := audit.Signature{Issue: "KAFKA-17635", Topic: t.Repartition, Partition: p, From: ts.rLogStart[p], To: ts.rLogStart[p],
				Findings: int64(len(ins)), Keys: firstKeys(keys), FixedIn: []string{"3.7.2", "3.8.1", "3.9.0"}, Candidate: true}
			sig.Detail = fmt.Sprintf("table %s: %d inputs (timestamps %d-%d) were consumed and never applied, and the range of %s/%d that held their copies is purged (log start %d): consistent with KAFKA-17635 (repartition records purged before their commit, then skipped when the app resumed at the log start) on Streams before 3.7.2, 3.8.1, 3.9.0; also with a processor that dropped them",
				t.Name, len(ins), from, to, t.Repartition, p, ts.rLogStart[p])
			r.rep.Signatures = append(r.rep.Signatures, sig)
		}
		for _, p := range slices.Sorted(maps.Keys(ts.resets)) {
			lr := ts.resets[p]
			sig := audit.Signature{Issue: "KAFKA-16017", Topic: t.Changelog, Partition: p, From: lr.from, To: lr.to,
				Findings: lr.inputs, Keys: firstKeys(lr.keys), FixedIn: []string{"3.6.2", "3.7.0"}}
			sig.Detail = fmt.Sprintf("table %s: the histories of %d keys of %s/%d restart, the store having lost their states at offsets %d-%d: a restore that stopped short of one changelog range and carried on (KAFKA-16017: a clean close mid-restoration checkpointed the written offsets); %d inputs were lost to it",
				t.Name, len(lr.keys), t.Changelog, p, lr.from, lr.to, lr.inputs)
			r.rep.Signatures = append(r.rep.Signatures, sig)
		}
	}
	slices.SortFunc(r.rep.Signatures, func(a, b audit.Signature) int {
		return cmp.Or(cmp.Compare(a.Issue, b.Issue), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

func firstKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if len(keys) > 10 {
		keys = keys[:10]
	}
	return keys
}
