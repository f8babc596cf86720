package diff

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
)

// TestDiffLogDirs audits a real broker's log dirs through the library, as
// a caller other than the CLI would: the keyless checks on the topics'
// roles, the config risk the metadata log shows, and the note on the
// transactional offset commit that had no marker when the broker stopped.
func TestDiffLogDirs(t *testing.T) {
	ev, err := OpenLogDirs(t.Context(), filepath.Join("..", "segment", "testdata", "real", "kafka-3.6.2-logdir"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Diff(t.Context(), ev, Options{AppID: "gen-app", MaxTxnTimeout: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Summary.Verdict != audit.VerdictClean || rep.AppID != "gen-app" {
		t.Errorf("verdict %s app %q, want clean gen-app; missing %v", rep.Summary.Verdict, rep.AppID, rep.Summary.Missing)
	}
	if !slices.ContainsFunc(rep.Findings, func(f audit.Finding) bool { return f.Cause == audit.CauseConfigRisk && f.Topic == "gen.orders" }) {
		t.Errorf("no config risk on gen.orders: %+v", rep.Findings)
	}
	if !slices.ContainsFunc(rep.Summary.Notes, func(n string) bool { return strings.Contains(n, "has no marker in the log dirs") }) {
		t.Errorf("no note on the pending offset commit: %q", rep.Summary.Notes)
	}
}

// TestDiffErrors: what the caller got wrong is a usage error, with no
// evidence read.
func TestDiffErrors(t *testing.T) {
	d, err := segment.OpenDirs(filepath.Join("..", "segment", "testdata", "real", "kafka-3.6.2-logdir"))
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"bad since":    {AppID: "gen-app", Since: "yesterday"},
		"no spec file": {SpecFile: filepath.Join(t.TempDir(), "missing.yaml")},
		"no topology":  {AppID: "gen-app", TopologyFile: filepath.Join(t.TempDir(), "missing.txt")},
	} {
		_, err := Diff(t.Context(), Evidence{Source: d}, o)
		var u audit.UsageError
		if !errors.As(err, &u) {
			t.Errorf("%s: error %v, want a usage error", name, err)
		}
	}
}
