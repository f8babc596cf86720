package main

import (
	"strings"
	"testing"

	"github.com/kaudit/kaudit/testdata/kafka/fuzzapps"
)

// TestEssentialsDiff: two reports differ by verdict, a finding or missing evidence, not by when
// each source read a partition, the line numbers of a spec inferred from each, or how each
// source says a schema is unknown.
func TestEssentialsDiff(t *testing.T) {
	a := kauditReport{Summary: kauditSummary{Verdict: "incomplete", Missing: []string{
		"p/1 offsets 3-9: the log start passed 3 before 2026-12-04T18:54:27.506Z (401 at 2026-12-04T18:54:48.968Z)",
		"table t: its chain holds (flatMapValues X (TODO) at line 12)",
		"table u: the spec's step 3 (selectKey, line 14) has no node in the topology",
		"table r: a change record could not be read (r/0@0: decode value (schema id 0): unknown schema: schema registry http://x/schemas/ids/0: HTTP 404), so not judged",
	}}, Findings: []finding{{Stage: "store", Cause: "pending", Severity: "info", Topic: "t", Offset: 3}}}
	b := a
	b.Summary.Missing = []string{
		"p/1 offsets 3-9: the log start passed 3 before 2026-12-04T18:54:27.506Z (401 at 2026-12-04T18:55:06.278Z)",
		"table t: its chain holds (flatMapValues X (TODO) at line 11)",
		"table u: the spec's step 3 (selectKey, line 13) has no node in the topology",
		"table r: a change record could not be read (r/0@0: decode value (schema id 0): unknown schema: id 0 is not in the schemas dir), so not judged",
	}
	if d := essentialsDiff(a, b); d != "" {
		t.Fatalf("the same report differs: %s", d)
	}
	c := b
	c.Findings = append([]finding{{Stage: "store", Cause: "state-diverged", Severity: "loss", Topic: "t", Offset: 4}}, b.Findings...)
	if d := essentialsDiff(a, c); !strings.Contains(d, "state-diverged") {
		t.Fatalf("a finding more is no difference: %q", d)
	}
	c = b
	c.Summary.Verdict = "clean"
	if essentialsDiff(a, c) == "" {
		t.Fatal("another verdict is no difference")
	}
}

// TestCoveredBy: an inferred audit's loss is the spec's when it covers one of its offsets or
// names one of its keys.
func TestCoveredBy(t *testing.T) {
	spec := kauditReport{Findings: []finding{
		{Severity: "loss", Cause: "purged-before-commit", Topic: "r", Partition: 1, Offset: 396, Key: []byte(`"k-01"`)},
		{Severity: "loss", Cause: "purged-before-commit", Topic: "r", Partition: 1, Offset: 398},
	}}
	for _, c := range []struct {
		f    finding
		want bool
	}{
		{finding{Severity: "loss", Cause: "purged-before-commit", Topic: "r", Partition: 1, Offset: 396, Count: 5}, true},
		{finding{Severity: "loss", Cause: "unapplied", Topic: "s", Partition: 0, Offset: 7, Key: []byte(`"k-01"`)}, true},
		{finding{Severity: "loss", Cause: "purged-before-commit", Topic: "r", Partition: 1, Offset: 400, Count: 2}, false},
		{finding{Severity: "loss", Cause: "state-diverged", Topic: "r", Partition: 0, Offset: 396}, false},
		{finding{Severity: "anomaly", Cause: "undecodable", Topic: "r", Partition: 1, Offset: 396}, false},
	} {
		if got := coveredBy(c.f, spec); got != c.want {
			t.Errorf("coveredBy(%s) = %v, want %v", c.f, got, c.want)
		}
	}
}

// TestCheckFlips: consecutive audits of one mode going clean → loss (or back) is a violation;
// incomplete in between, or another mode's verdicts, are not.
func TestCheckFlips(t *testing.T) {
	for _, c := range []struct {
		during []string
		flips  int
	}{
		{[]string{"w1 spec clean", "w1 app-id incomplete", "w2 spec clean", "w2 app-id loss"}, 0},
		{[]string{"w1 spec clean", "w1 app-id loss", "w2 spec loss", "w2 app-id clean"}, 2},
		{[]string{"w1 spec clean", "w2 spec incomplete", "w3 spec loss"}, 0},
		{[]string{"w1 spec loss", "w2 spec clean"}, 1},
	} {
		a := &genApp{d: &fuzzapps.Desc{AppID: "x"}, during: c.during}
		a.checkFlips()
		if len(a.viol) != c.flips {
			t.Errorf("%v: %d violations, want %d: %v", c.during, len(a.viol), c.flips, a.viol)
		}
	}
}

// TestJudgeFault: a source gap is found only by retention-gap findings covering exactly its
// range; another loss is a violation; a dropped record not named is one.
func TestJudgeFault(t *testing.T) {
	gap := &fault{Topic: "s", Partition: 0, From: 10, To: 14}
	a := &genApp{d: &fuzzapps.Desc{AppID: "x", Fault: fuzzapps.FaultSourceGap}, truth: genTruth{Gap: gap, Injected: true}}
	a.judgeFault(genAudit{name: "final/live-spec", phase: "final", rep: kauditReport{Summary: kauditSummary{Verdict: "loss"},
		Findings: []finding{{Severity: "loss", Cause: "retention-gap", Topic: "s", Offset: 10, Count: 4}}}})
	if len(a.viol) != 0 {
		t.Fatalf("the exact gap is a violation: %v", a.viol)
	}
	a.judgeFault(genAudit{name: "final/live-spec", phase: "final", rep: kauditReport{Summary: kauditSummary{Verdict: "loss"},
		Findings: []finding{{Severity: "loss", Cause: "retention-gap", Topic: "s", Offset: 10, Count: 3},
			{Severity: "loss", Cause: "state-diverged", Topic: "c", Offset: 1}}}})
	props := map[string]bool{}
	for _, v := range a.viol {
		props[v.Property] = true
	}
	if !props[propFaultMissed] || !props[propFaultExtra] {
		t.Fatalf("a short gap and another loss: %v", a.viol)
	}
	d := &genApp{d: &fuzzapps.Desc{AppID: "y", Fault: fuzzapps.FaultDropped},
		truth: genTruth{Dropped: []string{recordID("s", 1, 5), recordID("s", 0, 9)}, DropKeys: []string{"k-01"}, Injected: true}}
	d.judgeFault(genAudit{name: "final/live-spec", phase: "final", rep: kauditReport{Summary: kauditSummary{Verdict: "loss"},
		Findings: []finding{{Severity: "loss", Cause: "dropped", Topic: "s", Partition: 1, Offset: 5, Key: []byte(`"k-01"`)}}}})
	if len(d.viol) != 1 || d.viol[0].Property != propFaultMissed || !strings.Contains(d.viol[0].Detail, "s/0@9") {
		t.Fatalf("one of two swallowed records named: %v", d.viol)
	}
}

// TestNamesKey: a finding names a key by its own key or, for a window, by the window's key.
func TestNamesKey(t *testing.T) {
	keys := []string{"K-11", "3"}
	for _, c := range []struct {
		key  string
		want bool
	}{
		{`"K-11"`, true},
		{`{"end":1796417800000,"key":"K-11","start":1796417780000}`, true},
		{`{"end":1796417800000,"key":3,"start":1796417780000}`, true},
		{`{"end":1796417800000,"key":"K-12","start":1796417780000}`, false},
		{`"k-11"`, false},
	} {
		if got := namesKey(finding{Key: []byte(c.key)}, keys); got != c.want {
			t.Errorf("namesKey(%s) = %v, want %v", c.key, got, c.want)
		}
	}
}
