package diff

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestInferredWindowsSurviveTheIncident: the generator's windowed apps
// (String keys, Integer values, a Long sum or count per window,
// tumbling and hopping windows, with late inputs; without the hop: the
// generator's hop is a user topic named "repartition", as EosTestClient's,
// which without a topology is one more topic the app reads, so the
// windows' inputs are not known and the table is declined), clean and
// with each fault, audited with --app-id alone: the
// window's size, advance and reducer are inferred from the incident's own
// evidence, its grace is not (grace: unknown). Each loss the inferred
// spec finds is one the hand-written spec (with the grace) finds, and its
// verdict is that spec's or incomplete: never a loss the app did not
// have. On the clean runs the window is inferred, not declined.
func TestInferredWindowsSurviveTheIncident(t *testing.T) {
	faults := []fakeapp.Fault{{}, {Kind: fakeapp.FaultDrop}, {Kind: fakeapp.FaultAbortNotReplayed}, {Kind: fakeapp.FaultStateDiverged},
		{Kind: fakeapp.FaultPurgeBeforeCommit, Partition: 1}, {Kind: fakeapp.FaultDuplicate}, {Kind: fakeapp.FaultJoinMissing, Partition: 1}}
	for _, kind := range []string{"tumbling", "hopping"} {
		for _, hop := range []bool{false} {
			for _, f := range faults {
				name := fmt.Sprintf("%s/hop=%v/%s", kind, hop, cmp.Or(string(f.Kind), "clean"))
				t.Run(name, func(t *testing.T) {
					s := fakeapp.WindowScenario{AppID: "win", Partitions: 3, Inputs: 240, Keys: 6, Seed: 7, Base: 1_780_000_000_000,
						Commit: 8, Hop: hop, Lag: 2, LateEvery: 17, Output: true}
					if hop {
						s.Inflight = 2
					}
					s.Window = &fakeapp.Win{Size: 2000, Advance: 2000, Grace: 300}
					if kind == "hopping" {
						s.Window = &fakeapp.Win{Size: 3000, Advance: 1000, Grace: 0}
					}
					if f.Kind != "" {
						s.Faults = []fakeapp.Fault{f}
					}
					m := fakeapp.NewMemory(time.UnixMilli(s.Base + 3_600_000))
					if _, err := fakeapp.GenerateWindow(s, fakeapp.NewMemoryBackend(m)); err != nil {
						t.Fatal(err)
					}
					ev := Evidence{Source: m}
					o := Options{AppID: s.AppID, MaxTxnTimeout: 15 * time.Minute}
					inferred, err := Diff(t.Context(), ev, o)
					if err != nil {
						t.Fatal(err)
					}
					p := filepath.Join(t.TempDir(), "kaudit.yaml")
					if err := os.WriteFile(p, []byte(s.Spec()), 0o600); err != nil {
						t.Fatal(err)
					}
					o.SpecFile = p
					written, err := Diff(t.Context(), ev, o)
					if err != nil {
						t.Fatal(err)
					}
					g, w := judged(inferred), judged(written)
					for _, x := range g[1:] {
						if !slices.Contains(w[1:], x) {
							t.Errorf("--app-id alone finds %s, which the hand-written spec does not (%v)\nthe inferred spec:\n%s", x, w, inferred.InferredSpec)
						}
					}
					if g[0] != w[0] && g[0] != string(audit.VerdictIncomplete) {
						t.Errorf("--app-id alone says %s, the hand-written spec %s", g[0], w[0])
					}
					if f.Kind == "" && !strings.Contains(inferred.InferredSpec, "window: {size: ") {
						t.Errorf("the window was not inferred on a clean run: missing %q\n%s", inferred.Summary.Missing, inferred.InferredSpec)
					}
					t.Logf("inferred %v, written %v", g, w)
				})
			}
		}
	}
}
