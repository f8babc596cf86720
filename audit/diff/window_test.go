package diff

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestDiffWindowed audits an EosTestClient-shaped windowed app through
// the library with its spec file, as kaudit diff does: the spec check
// leaves the windowed table to the audit (it does not read windowed
// keys), a clean run is clean, and a dropped input is a loss of its
// window.
func TestDiffWindowed(t *testing.T) {
	for _, tt := range []struct {
		name   string
		faults []fakeapp.Fault
		want   audit.Verdict
	}{
		{"clean", nil, audit.VerdictClean},
		{"dropped", []fakeapp.Fault{{Kind: fakeapp.FaultDrop}}, audit.VerdictLoss},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapp.WindowScenario{AppID: "win", Partitions: 2, Inputs: 120, Keys: 6, Seed: 3, Base: 1_780_000_000_000,
				Commit: 6, Hop: true, LateEvery: 13, Output: true, Suppress: true, Window: &fakeapp.Win{Size: 2000, Advance: 1000, Grace: 200}, Faults: tt.faults}
			m := fakeapp.NewMemory(time.UnixMilli(s.Base + 3_600_000))
			truth, err := fakeapp.GenerateWindow(s, fakeapp.NewMemoryBackend(m))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "kaudit.yaml")
			if err := os.WriteFile(file, []byte(s.Spec()), 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := Diff(t.Context(), Evidence{Source: m}, Options{SpecFile: file, MaxTxnTimeout: 15 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Summary.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s (missing %v, findings %+v)", rep.Summary.Verdict, tt.want, rep.Summary.Missing, rep.Findings)
			}
			late := 0
			for _, f := range rep.Findings {
				if f.Cause == audit.CauseLate {
					late++
				}
				if f.Severity == audit.SeverityLoss && !slices.ContainsFunc(truth.Findings, func(e fakeapp.Expected) bool {
					return e.Cause == f.Cause && e.Offset == f.Offset && e.Key == f.Key
				}) {
					t.Errorf("loss %s %s@%d %s not in the ground truth", f.Cause, f.Topic, f.Offset, f.Key)
				}
			}
			if late != len(truth.Late) || late == 0 {
				t.Errorf("%d late findings, want %d", late, len(truth.Late))
			}
		})
	}
}
