package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// TestCapturedIncident audits the bundle captured from the real drill's
// dropped scenario: exactly the five swallowed orders are dropped.
func TestCapturedIncident(t *testing.T) {
	out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped",
		"--spec", "../../testdata/incidents/dropped.kaudit.yaml", "--format", "json")
	if code != exitFindings {
		t.Fatalf("exit %d, want %d: %s", code, exitFindings, errOut)
	}
	var rep audit.Report
	if err := decodeReport([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityInfo {
			continue
		}
		if f.Cause != audit.CauseDropped || f.Stage != audit.StageRepartition || f.Topic != "orders" {
			t.Errorf("unexpected finding %s/%s %s/%d@%d", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset)
		}
		keys = append(keys, f.Key)
	}
	// The audit describes the cluster at the capture, not at the time it
	// runs: the engine sees the snapshot's clock through the CLI.
	if at := time.Date(2026, 11, 30, 10, 7, 46, 577430090, time.UTC); !rep.GeneratedAt.Equal(at) {
		t.Errorf("generated_at %s, want the capture time %s", rep.GeneratedAt, at)
	}
	// five orders swallowed: six records, since order o-w1-0042 was updated
	// and its update was swallowed too (the later input was never applied,
	// so it overwrote nothing)
	slices.Sort(keys)
	want := []string{`"o-w1-0007"`, `"o-w1-0042"`, `"o-w1-0042"`, `"o-w1-0100"`, `"o-w1-0151"`, `"o-w1-0299"`}
	if !slices.Equal(keys, want) {
		t.Errorf("dropped keys %v, want %v", keys, want)
	}
}

// TestCapturedIncidentSpilled: with a memory budget the captured app's
// tables do not fit, they spill to disk, the user is told, and the report
// is the in-memory one byte for byte.
func TestCapturedIncidentSpilled(t *testing.T) {
	args := []string{"diff", "--snapshot", "../../testdata/incidents/dropped",
		"--spec", "../../testdata/incidents/dropped.kaudit.yaml", "--format", "json"}
	want, _, code := runCLI(t, args...)
	if code != exitFindings {
		t.Fatalf("exit %d, want %d", code, exitFindings)
	}
	got, errOut, code := runCLI(t, append(args, "--memory-budget", "64KiB", "--spill-dir", t.TempDir())...)
	if code != exitFindings {
		t.Fatalf("spilled: exit %d, want %d: %s", code, exitFindings, errOut)
	}
	if got != want {
		t.Errorf("the spilled report differs from the one in memory:\n%s\n%s", got, want)
	}
	if n := strings.Count(errOut, "spilled to"); n != 3 {
		t.Errorf("%d tables said they spilled, want 3:\n%s", n, errOut)
	}
	if _, _, code := runCLI(t, append(args, "--memory-budget", "lots")...); code != exitUsage {
		t.Errorf("--memory-budget lots: exit %d, want %d", code, exitUsage)
	}
}

// TestIncidentPostmortemCounts: the bundled incident's postmortem says
// what its README says: six records of five orders, all replayable.
func TestIncidentPostmortemCounts(t *testing.T) {
	out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", "../../testdata/incidents/dropped.kaudit.yaml", "--format", "md")
	if code != exitFindings {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "**Verdict: LOSS.** 6 records vanished (5 keys): 6 can be replayed from Kafka.") {
		t.Errorf("the postmortem opens\n%.400s", out)
	}
	readme, err := os.ReadFile("../../testdata/incidents/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), `"6 records vanished (5 keys)"`) {
		t.Error("testdata/incidents/README.md does not say what the postmortem says")
	}
}
