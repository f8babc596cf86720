package diff

import (
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

// specOf writes the hand-written spec of a generated scenario.
func specOf(t *testing.T, s fakeapp.Scenario) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "app_id: %s\nserdes: {key: string, value: json}\ntables:\n", s.AppID)
	for _, tb := range s.Tables {
		red := string(tb.Reducer)
		if tb.Reducer == fakeapp.ReduceExpr {
			red = fmt.Sprintf("{expr: %q}", fakeapp.ExprReducer)
		}
		fmt.Fprintf(&b, "  - {name: %s, source: %s, select_key: value.orderId, reduce: %s, store: %s}\n", tb.Name, tb.Source, red, tb.Store)
	}
	var rights []string
	for _, tb := range s.Tables[1:] {
		rights = append(rights, tb.Name)
	}
	fmt.Fprintf(&b, "joins:\n  - output: %s\n    left: %s\n    right: [%s]\n    type: left\n", s.Output, s.Tables[0].Name, strings.Join(rights, ", "))
	p := filepath.Join(t.TempDir(), "kaudit.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// judged lists a report's loss and anomaly findings, and its verdict.
func judged(rep *audit.Report) []string {
	out := []string{string(rep.Summary.Verdict)}
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
			out = append(out, fmt.Sprintf("%s/%s %s/%d@%d+%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Count, f.Key))
		}
	}
	slices.Sort(out[1:])
	return out
}

// TestInferredSpecSurvivesTheIncident: for every fault the generator
// injects, and none, kaudit diff --app-id alone (no spec, no topology:
// the spec inferred from the very evidence of the incident) gives the
// findings and the verdict of the hand-written spec. A lost input, a
// purged range, a wiped store or a duplicate must not bend the inference.
func TestInferredSpecSurvivesTheIncident(t *testing.T) {
	faults := []fakeapp.Fault{{}}
	for _, k := range []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultAbortNotReplayed, fakeapp.FaultStateDiverged,
		fakeapp.FaultPurgeBeforeCommit, fakeapp.FaultRetentionGap, fakeapp.FaultStateReset, fakeapp.FaultJoinMissing,
		fakeapp.FaultDuplicate, fakeapp.FaultHangingTransaction} {
		for table := range 3 {
			faults = append(faults, fakeapp.Fault{Kind: k, Table: table, Partition: int32(table % 2)})
		}
	}
	for i, f := range faults {
		name := "clean"
		if f.Kind != "" {
			name = fmt.Sprintf("%s/table%d", f.Kind, f.Table)
		}
		t.Run(name, func(t *testing.T) {
			s := fakeapp.SeedScenario("inferred", 240)
			s.Seed = uint64(100 + i)
			s.Tables[1].Reducer = fakeapp.ReduceSum
			if f.Kind == fakeapp.FaultStateReset {
				s.Tables[f.Table].Reducer = fakeapp.ReduceCount // a reset shows in a fold's history
			}
			if f.Kind != "" {
				s.Faults = []fakeapp.Fault{f}
			}
			m := fakeapp.NewMemory(time.UnixMilli(s.Now))
			if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
				t.Fatal(err)
			}
			ev := Evidence{Source: m}
			o := Options{AppID: s.AppID, MaxTxnTimeout: 15 * time.Minute}
			o.Codec.KeySerde, o.Codec.ValueSerde = "string", "json"
			inferred, err := Diff(t.Context(), ev, o)
			if err != nil {
				t.Fatal(err)
			}
			o.SpecFile = specOf(t, s)
			written, err := Diff(t.Context(), ev, o)
			if err != nil {
				t.Fatal(err)
			}
			if inferred.InferredSpec == "" || written.InferredSpec != "" {
				t.Fatalf("inferred spec %q with no spec, %q with one", inferred.InferredSpec, written.InferredSpec)
			}
			if g, w := judged(inferred), judged(written); !slices.Equal(g, w) {
				t.Errorf("--app-id alone:\n  %s\nthe hand-written spec:\n  %s\nmissing: %q\nthe inferred spec:\n%s",
					strings.Join(g, "\n  "), strings.Join(w, "\n  "), inferred.Summary.Missing, inferred.InferredSpec)
			}
		})
	}
}
