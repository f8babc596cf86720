package main

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
)

// TestDiffLogFlags: --app-log and --broker-log are repeatable and reach
// the library's options (diff.Options.AppLogs, BrokerLogs), as do their
// KAUDIT_ variables; a report written over one of them is refused.
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
}
