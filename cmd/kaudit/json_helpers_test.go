package main

import (
	"bytes"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/report"
)

// decodeReport decodes a report kaudit printed with --format json, as
// kaudit merge and --baseline read it (key, expected and actual are JSON
// values there, unknown numbers null).
func decodeReport(b []byte, r *audit.Report) error {
	got, err := report.ReadJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	*r = *got
	return nil
}

// expectNoLoss fails the test for each finding of severity loss or
// anomaly in rep.
func expectNoLoss(t *testing.T, rep *audit.Report) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
			t.Errorf("finding %s/%s %s/%d@%d: %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
		}
	}
}

// diffReport runs kaudit diff with args and --format json, fails the test
// unless it exits with code, and returns the report it printed.
func diffReport(t *testing.T, code int, args ...string) *audit.Report {
	t.Helper()
	out, errOut, got := runCLI(t, append(append([]string{"diff"}, args...), "--format", "json")...)
	if got != code {
		t.Fatalf("kaudit diff %v: exit %d, want %d: %s\n%s", args, got, code, errOut, out)
	}
	var rep audit.Report
	if err := decodeReport([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}
