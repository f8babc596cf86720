package infer

import (
	"fmt"
	"slices"

	"github.com/kaudit/kaudit/audit/spec"
)

// CheckSteps measures how many repartition copies a table's steps
// explain: the copies that are, by key, value and timestamp, an element
// the steps emit for a source record read. Steps that fail on the data
// leave the table unjudged; the share explained is said, not judged here
// (copies of source records not read, by sampling or retention, explain
// nothing either way): the audit's own check of the copies against the
// inputs does that on every record.
func CheckSteps(pt spec.PlannedTable, ev *Evidence) Verdict {
	v := Verdict{Name: pt.Name, Explained: map[string]int{}, of: "repartition copies matched to source records"}
	src, cps := ev.Topics[pt.Source], ev.Topics[pt.Repartition]
	if pt.Spec == nil || pt.Repartition == "" || src == nil || cps == nil {
		return v
	}
	chain := pt.Spec.Chain()
	v.Spec = "steps"
	keyed := pt.Spec.SelectKeyExpr != "" && len(chain) > 0
	if keyed {
		v.Spec = pt.Spec.SelectKeyExpr // the steps are the same but for the key
	}
	failed, fail := 0, error(nil)
	apply := pt.Spec.Apply
	if pt.Unsure != "" {
		apply = pt.Spec.ApplyUnsure // the copies tell what a TODO filter kept
	}
	for r := range src.each() {
		if r.Undecodable {
			continue
		}
		if _, err := apply(spec.RecordEnv{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}); err != nil {
			fail, failed = err, failed+1
		}
	}
	n, total := explainedBy(src, cps, chain, pt.Unsure != "")
	v.Keys, v.Explained[v.Spec] = total, n
	if keyed {
		// the alternative: the key the copies matched to their source records say
		if g := GuessSelectKey(MatchCopies(src, cps), true); g.Value != "" && g.Value != v.Spec {
			alt := slices.Clone(chain[:len(chain)-1])
			if g.Value != "key" {
				st, err := spec.NewStep(spec.StepSelectKey, g.Value, "")
				if err == nil {
					alt = append(alt, st)
				}
			}
			v.Explained[g.Value], _ = ExplainedBy(src, cps, alt)
		}
	}
	v.decide("table")
	if fail != nil {
		v.Unjudged = fmt.Sprintf("table %s is not judged: its steps fail on %d source records read: %v (%s)", pt.Name, failed, fail, v.Summary())
	}
	return v
}

// elementsOf is a source topic as a table's steps turn it into inputs:
// each record replaced by the elements the steps emit for it (their key
// and value, the record's place and timestamp).
func elementsOf(src *Topic, steps []*spec.Step) (*Topic, error) {
	out := *src
	out.Parts = make(map[int32][]Rec, len(src.Parts))
	for p, rs := range src.Parts {
		var els []Rec
		for i := range rs {
			r := &rs[i]
			if r.Undecodable {
				els = append(els, *r)
				continue
			}
			es, err := spec.ApplySteps(steps, spec.RecordEnv{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
			if err != nil {
				return nil, fmt.Errorf("%s/%d@%d: %w", src.Name, r.Partition, r.Offset, err)
			}
			for _, e := range es {
				els = append(els, Rec{Partition: r.Partition, Offset: r.Offset, RawKey: r.RawKey, RawValue: r.RawValue, Key: e.Key, Value: e.Value, Timestamp: r.Timestamp})
			}
		}
		out.Parts[p] = els
	}
	return &out, nil
}
