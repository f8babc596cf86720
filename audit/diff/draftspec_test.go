package diff

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/draft"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/spec"
)

// hiddenTopology is a capture whose describe() text is not read: the
// draft is drawn from the topics' names and the node numbers.
type hiddenTopology struct{ *snapshot.Snapshot }

func (hiddenTopology) Topology() string { return "" }

// specOfYAML is how kaudit diff built an inferred spec before the draft
// was a value: the draft printed, then parsed back with spec.ParseDraft,
// and the one failure it names told by its words.
func specOfYAML(_ *draft.Draft, text string) (*spec.Spec, error) {
	sp, err := spec.ParseDraft(draft.SpecName, []byte(text))
	if err != nil && strings.Contains(err.Error(), "at least one table") {
		return nil, draft.ErrNoTable
	}
	return sp, err
}

// specLines are the places a spec read from YAML cites its lines, which
// a spec built from the draft has not: it names the table and the node.
var specLines = regexp.MustCompile(` at line \d+|, line \d+|(` + regexp.QuoteMeta(draft.SpecName) + `):\d+:`)

// TestDraftSpecIsTheYAMLs: kaudit diff --app-id audits with the spec the
// draft builds (Draft.Spec), not with its YAML parsed back; over every
// capture of the repository and the log dirs, with and without their
// topology, the report is the one the YAML's spec gives (findings,
// missing evidence, notes, verdict, the inferred spec and its summary),
// its lines left out.
func TestDraftSpecIsTheYAMLs(t *testing.T) {
	type evidence struct {
		name, appID string
		open        func(t *testing.T) audit.Source
	}
	snap := func(dir string, hide bool) func(t *testing.T) audit.Source {
		return func(t *testing.T) audit.Source {
			s, err := snapshot.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if hide {
				return hiddenTopology{s}
			}
			return s
		}
	}
	var cases []evidence
	dirs, err := filepath.Glob("../../testdata/apps/*/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	dirs = append(dirs, "../../testdata/incidents/dropped/manifest.json", "../../testdata/smoke/capture/manifest.json")
	for _, m := range dirs {
		dir := filepath.Dir(m)
		man, err := snapshot.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(dir)
		cases = append(cases, evidence{name, man.AppID, snap(dir, false)}, evidence{name + "/no topology", man.AppID, snap(dir, true)})
	}
	for _, v := range []string{"kafka-3.6.2-logdir", "kafka-4.1.1-logdir"} {
		dir := "../segment/testdata/real/" + v
		cases = append(cases, evidence{v, "gen-app", func(t *testing.T) audit.Source {
			d, err := segment.OpenDirs(dir)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}})
	}
	inferred, lines := 0, 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			report := func(specOf func(*draft.Draft, string) (*spec.Spec, error)) (string, *audit.Report) {
				t.Helper()
				o := Options{AppID: tc.appID, MaxTxnTimeout: 15 * time.Minute, specOfDraft: specOf}
				rep, err := Diff(t.Context(), Evidence{Source: tc.open(t)}, o)
				if err != nil {
					t.Fatal(err)
				}
				rep.GeneratedAt = time.Time{}
				b, err := json.MarshalIndent(rep, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				return string(b), rep
			}
			got, rep := report(nil)
			old, _ := report(specOfYAML)
			if specLines.MatchString(old) {
				lines++
			}
			old = specLines.ReplaceAllStringFunc(old, func(m string) string {
				if name, _, ok := strings.Cut(m, ":"); ok && name == draft.SpecName {
					return name + ":"
				}
				return ""
			})
			if got != old {
				t.Errorf("the draft's spec and its YAML's give different reports:\n%s", firstDifference(got, old))
			}
			if rep.Inferred != nil {
				inferred++
			}
		})
	}
	// the comparison must have audited with inferred specs, and met the
	// lines it leaves out
	if inferred < len(cases)/2 || lines == 0 {
		t.Errorf("%d of %d audits inferred a spec, %d cited a line: the comparison proves little", inferred, len(cases), lines)
	}
}

// firstDifference shows where two texts first differ, by line.
func firstDifference(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  draft's spec: %s\n  YAML's spec:  %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("one report is longer (%d against %d lines)", len(al), len(bl))
}
