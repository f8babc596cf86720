package audit

import "testing"

// TestLineageFollowsItsFinding: a lineage names its finding by identity,
// so findings appended and sorted after it was made (as the audit use
// case adds the source's problems and config risks after the engine's
// Finish) leave it on the same finding, and a finding no longer in the
// report is -1, never another one.
func TestLineageFollowsItsFinding(t *testing.T) {
	loss := NewFinding(StageRepartition, CauseDropped, TopicPartition{Topic: "orders", Partition: 2}, 41)
	loss.Key = "k41"
	r := &Report{Findings: []Finding{loss}}
	r.Finish()
	r.Lineage = []Lineage{{Finding: 0, Hops: []Hop{{Stage: StageSource, Topic: "orders", Partition: 2, Offset: 41}}}}
	r.Finish() // binds the lineage to the finding at 0

	for _, f := range []Finding{
		NewFinding(StageOffsets, CauseUnreadable, TopicPartition{Topic: "a", Partition: 0}, -1),
		NewFinding(StageSource, CauseRetentionGap, TopicPartition{Topic: "orders", Partition: 0}, 3),
		NewFinding(StageRepartition, CauseDropped, TopicPartition{Topic: "orders", Partition: 1}, 7),
	} {
		r.Findings = append(r.Findings, f)
	}
	r.Finish()
	if i := r.Lineage[0].Finding; i < 0 || r.Findings[i] != loss {
		t.Fatalf("lineage points at finding %d (%+v), want the dropped input orders/2@41", i, r.Findings[max(i, 0)])
	}
	if r.Lineage[0].Finding == 0 {
		t.Fatal("the test does not move the finding: it cannot fail")
	}

	r.Findings = r.Findings[:0]
	r.Finish()
	if i := r.Lineage[0].Finding; i != -1 {
		t.Errorf("lineage of a finding the report no longer holds points at %d, want -1", i)
	}
}

// TestBaselineFollowsItsFindings: the findings new since a baseline are
// named by identity, as a lineage is: findings added and sorted after the
// judgement leave them on the same findings, and their verdict is judged
// again by every Finish.
func TestBaselineFollowsItsFindings(t *testing.T) {
	old := NewFinding(StageRepartition, CauseDropped, TopicPartition{Topic: "orders", Partition: 2}, 41)
	fresh := NewFinding(StageTransactions, CauseHangingTransaction, TopicPartition{Topic: "out", Partition: 0}, 7)
	r := &Report{Findings: []Finding{old, fresh}}
	r.Finish()
	i := 0
	for r.Findings[i] != fresh {
		i++
	}
	r.Baseline = &Baseline{Report: "last.json", New: []int{i}}
	r.Finish()
	if r.Summary.Verdict != VerdictLoss || r.ExitVerdict() != VerdictAnomaly {
		t.Fatalf("verdict %s, exit verdict %s: want loss and anomaly (only the hanging transaction is new)", r.Summary.Verdict, r.ExitVerdict())
	}
	r.Findings = append([]Finding{NewFinding(StageSource, CauseRetentionGap, TopicPartition{Topic: "a", Partition: 0}, 0)}, r.Findings...)
	r.Finish()
	if got := r.NewFindings(); len(got) != 1 || got[0] != fresh {
		t.Fatalf("new findings %+v, want the hanging transaction alone", got)
	}
	r.Summary.Missing = []string{"a partition"}
	r.Finish()
	if r.ExitVerdict() != VerdictAnomaly {
		t.Errorf("exit verdict %s, want anomaly", r.ExitVerdict())
	}
	r.Findings = []Finding{old}
	r.Finish()
	if len(r.Baseline.New) != 0 || r.ExitVerdict() != VerdictIncomplete {
		t.Errorf("new %v, exit verdict %s: want none new and incomplete (the evidence missing)", r.Baseline.New, r.ExitVerdict())
	}
}
