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
