package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// TestMutationsDeterministic: the same seed gives the same mutations, and
// every target gets some.
func TestMutationsDeterministic(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	a, err := mutations(root, 7, 120, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mutations(root, 7, 120, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) < 120 || len(a) != len(b) {
		t.Fatalf("%d and %d mutations, want the same, at least 120", len(a), len(b))
	}
	per := map[string]int{}
	for i := range a {
		if fmt.Sprint(a[i].target.name, a[i].kind, a[i].file, a[i].desc) != fmt.Sprint(b[i].target.name, b[i].kind, b[i].file, b[i].desc) {
			t.Fatalf("mutation %d differs: %s %s / %s %s", i, a[i].file, a[i].desc, b[i].file, b[i].desc)
		}
		per[a[i].target.name]++
	}
	for _, tg := range targets() {
		if per[tg.name] == 0 {
			t.Errorf("no mutation of %s", tg.name)
		}
	}
}

// TestJudge: the oracle on hand-written outcomes.
func TestJudge(t *testing.T) {
	base := `{"summary":{"verdict":"loss"},"findings":[{"stage":"repartition","cause":"dropped","severity":"loss","topic":"orders","partition":0,"offset":23,"key":"k"}]}`
	ev := &mutation{kind: "flip-record", class: classEvidence}
	for _, tc := range []struct {
		name        string
		m           *mutation
		stdout      string
		code        int
		wrong, misl bool
	}{
		{"same", ev, base, 1, false, false},
		{"clean on broken evidence", ev, `{"summary":{"verdict":"clean"},"findings":[]}`, 0, true, false},
		{"offset-gap for a flipped byte", ev, `{"summary":{"verdict":"loss"},"findings":[{"stage":"offsets","cause":"offset-gap","severity":"loss","topic":"orders","partition":0,"offset":5,"key":null}]}`, 1, true, true},
		{"said incomplete", ev, `{"summary":{"verdict":"incomplete","missing_evidence":["x"]},"findings":[]}`, 3, false, false},
		{"loss beside missing evidence, new cause", ev, `{"summary":{"verdict":"loss","missing_evidence":["x"]},"findings":[{"stage":"store","cause":"state-diverged","severity":"loss","topic":"t","partition":1,"offset":"7","key":"k"}]}`, 1, false, true},
		{"offset-gap for a cut", &mutation{kind: "truncate-mid", class: classEvidence}, `{"summary":{"verdict":"incomplete","missing_evidence":["x"]},"findings":[{"stage":"offsets","cause":"offset-gap","severity":"loss","topic":"t","partition":1,"offset":7}]}`, 3, false, false},
		{"plausible change", &mutation{kind: "truncate-boundary", class: classPlausible}, `{"summary":{"verdict":"clean"},"findings":[]}`, 0, false, false},
		{"ledger clean", ev, `{"topic":"orders","partitions":[{"findings":[]}]}`, 0, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judge(tc.m, parseOutcome(base, 1), result{code: tc.code, stdout: tc.stdout}, nil)
			if v.wrong != tc.wrong || (len(v.misleading) > 0) != tc.misl {
				t.Errorf("wrong %v, misleading %v; want %v, %v", v.wrong, v.misleading, tc.wrong, tc.misl)
			}
		})
	}
}

// TestBatches: batchesOf splits a real segment into whole batches.
func TestBatches(t *testing.T) {
	root, _ := filepath.Abs("../..")
	tg := targets()[4]
	fx, err := loadFixture(root, &tg)
	if err != nil {
		t.Fatal(err)
	}
	b := fx.data[fx.logs[0]]
	spans := batchesOf(b)
	if len(spans) != 3 || spans[len(spans)-1].end != len(b) {
		t.Errorf("batches %v of a %d-byte log, want 3 ending at its end", spans, len(b))
	}
}

// TestDamagedBundles: 30 damaged bundles per segment of the incident
// bundle (20 segments) and of WordCountDemo's (6, __consumer_offsets
// with them): 780, each run by diff --app-id and by init; every one
// strict evidence, and each applies to a copy.
func TestDamagedBundles(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := mutations(root, 1, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	bundles := map[string]bool{}
	for _, m := range ms {
		if !m.strict || m.class != classEvidence {
			t.Errorf("%s %s %s: strict %v, class %s", m.target.name, m.file, m.kind, m.strict, m.class)
		}
		bundles[m.target.src+" "+m.file+" "+m.kind] = true
	}
	if len(ms) != 2*780 || len(bundles) != 780 {
		t.Errorf("%d runs over %d damaged bundles, want 1560 over 780", len(ms), len(bundles))
	}
	for _, i := range []int{0, 17, len(ms) - 1} {
		m := ms[i]
		d := filepath.Join(t.TempDir(), "b")
		if err := copyTree(filepath.Join(root, m.target.src), d); err != nil {
			t.Fatal(err)
		}
		if err := m.apply(d, filepath.Join(t.TempDir(), "outside.log")); err != nil {
			t.Errorf("%s %s: %v", m.file, m.kind, err)
		}
	}
}
