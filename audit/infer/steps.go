package infer

import (
	"fmt"

	"github.com/kaudit/kaudit/audit/codec"
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
	v := Verdict{Name: pt.Name, Explained: map[string]int{}, of: "repartition copies"}
	src, cps := ev.Topics[pt.Source], ev.Topics[pt.Repartition]
	if pt.Spec == nil || pt.Repartition == "" || src == nil || cps == nil {
		return v
	}
	v.Spec = "steps"
	type fp struct {
		k, v codec.Digest
		ts   int64
	}
	idx := map[fp]int{}
	for r := range cps.each() {
		if r.Value == nil || r.Undecodable {
			continue
		}
		idx[fp{r.key().d, r.value().d, r.Timestamp}]++
		v.Keys++
	}
	var fail error
	failed := 0
	for r := range src.each() {
		if r.Undecodable {
			continue
		}
		els, err := pt.Spec.Apply(spec.RecordEnv{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
		if err != nil {
			fail, failed = err, failed+1
			continue
		}
		for _, e := range els {
			if e.Key == nil || e.Value == nil {
				continue
			}
			f := fp{valOf(e.Key).d, valOf(e.Value).d, r.Timestamp}
			if idx[f] > 0 {
				idx[f]--
				v.Explained[v.Spec]++
			}
		}
	}
	if _, ok := v.Explained[v.Spec]; !ok {
		v.Explained[v.Spec] = 0
	}
	v.decide("table")
	if fail != nil {
		v.Unjudged = fmt.Sprintf("table %s is not judged: its steps fail on %d source records read: %v (%s)", pt.Name, failed, fail, v.Summary())
	}
	return v
}
