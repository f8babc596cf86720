package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
)

// TestDiffLogFlags: --app-log and --broker-log are repeatable and reach
// the library's options (diff.Options.AppLogs, BrokerLogs), as do their
// KAUDIT_ variables; a report written over one of them is refused;
// --log-timezone takes an IANA zone or an offset, never the host's zone.
func TestDiffLogFlags(t *testing.T) {
	dir := t.TempDir()
	app1, app2, broker := filepath.Join(dir, "app-1.log"), filepath.Join(dir, "app-2.log.gz"), filepath.Join(dir, "server.log")
	parse := func(args ...string) (diffOptions, error) {
		var o diffOptions
		var perr error
		a := &cli.App{Name: "kaudit", Writer: io.Discard, ErrWriter: io.Discard,
			Commands: []*cli.Command{{Name: "diff", Flags: diffFlags(), Action: func(c *cli.Context) error {
				o, perr = readDiffOptions(c, time.Now())
				return nil
			}}}}
		if err := a.Run(append([]string{"kaudit", "diff", "--app-id", "app", "--snapshot", dir}, args...)); err != nil {
			return o, err
		}
		return o, perr
	}
	o, err := parse("--app-log", app1, "--app-log", app2, "--broker-log", broker)
	if err != nil {
		t.Fatal(err)
	}
	lo := o.auditOptions(nil)
	if !slices.Equal(lo.AppLogs, []string{app1, app2}) || !slices.Equal(lo.BrokerLogs, []string{broker}) {
		t.Errorf("options: app logs %q, broker logs %q", lo.AppLogs, lo.BrokerLogs)
	}
	t.Setenv("KAUDIT_BROKER_LOG", broker)
	if o, err = parse(); err != nil || !slices.Equal(o.BrokerLogs, []string{broker}) {
		t.Errorf("KAUDIT_BROKER_LOG: %q, %v", o.BrokerLogs, err)
	}
	_, err = parse("--app-log", app1, "--output", app1)
	var ue audit.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("a report over the app log: %v; want a usage error", err)
	}
	if o, err = parse("--log-timezone", "America/New_York"); err != nil || o.auditOptions(nil).LogTimezone != "America/New_York" {
		t.Errorf("--log-timezone: %q, %v", o.LogTimezone, err)
	}
	for _, z := range []string{"Mars/Olympus", "Local", "+15:00"} {
		if _, err = parse("--log-timezone", z); !errors.As(err, &ue) {
			t.Errorf("--log-timezone %s: %v; want a usage error", z, err)
		}
	}
	// --log-day dates the lines with only a time of day (slf4j-simple's, logback's defaults)
	if o, err = parse("--log-day", "2026-12-04"); err != nil || o.auditOptions(nil).LogDay != "2026-12-04" {
		t.Errorf("--log-day: %q, %v", o.LogDay, err)
	}
	for _, d := range []string{"2026-13-01", "04/12/2026", "yesterday"} {
		if _, err = parse("--log-day", d); !errors.As(err, &ue) {
			t.Errorf("--log-day %s: %v; want a usage error", d, err)
		}
	}
}

// TestDiffDamagedLog: a gzip log cut short (a copy of a log being
// rotated) is missing evidence naming it; the audit runs and says what it
// says without it (the incident's loss), where it stopped the whole audit
// with a usage error (exit 2) before.
func TestDiffDamagedLog(t *testing.T) {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	for i := range 2000 {
		fmt.Fprintf(w, "[2026-11-30 12:00:%02d,000] INFO [UnifiedLog partition=orders-0, dir=/d] Incremented log start offset to %d due to segment deletion (kafka.log.UnifiedLog)\n", i%60, i)
	}
	w.Close()
	cut := filepath.Join(t.TempDir(), "server.log.1.gz")
	if err := os.WriteFile(cut, z.Bytes()[:z.Len()/2], 0o644); err != nil {
		t.Fatal(err)
	}
	rep := diffReport(t, 1, "--snapshot", filepath.Join("..", "..", "testdata", "incidents", "dropped"), "--app-id", "kaudit-drill", "--broker-log", cut)
	if rep.Summary.Verdict != audit.VerdictLoss || !slices.ContainsFunc(rep.Summary.Missing, func(m string) bool {
		return strings.Contains(m, cut) && strings.Contains(m, "ends early")
	}) {
		t.Errorf("verdict %s, missing %q: want the incident's loss and the damaged log named", rep.Summary.Verdict, rep.Summary.Missing)
	}
}
