package diff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/combine"
	"github.com/kaudit/kaudit/audit/segment"
)

// TestDiffLogDirs audits a real broker's log dirs through the library, as
// a caller other than the CLI would, with no spec: the keyless checks on
// the topics' roles (the run incomplete: no spec could be inferred, no
// table being folded), the config risk the metadata log shows, and the note on the
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
	// gen-app folds no table: no spec can be inferred, so only the checks
	// that need no key run (a run that skipped checks is not clean); its
	// commit history shows an admin commit moving gen.orders/0 past 4-5
	if rep.Summary.Verdict != audit.VerdictLoss || rep.AppID != "gen-app" ||
		!slices.ContainsFunc(rep.Summary.Missing, func(m string) bool { return strings.Contains(m, "no spec could be inferred") }) {
		t.Errorf("verdict %s app %q, want loss gen-app naming the spec not inferred; missing %v", rep.Summary.Verdict, rep.AppID, rep.Summary.Missing)
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

// TestDiffShards: the shards I/N of the captured incident, merged, are the
// whole audit, and each shard judges only its own partitions.
func TestDiffShards(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "incidents")
	audit1 := func(o Options) *audit.Report {
		t.Helper()
		ev, err := OpenSnapshot(t.Context(), filepath.Join(root, "dropped"))
		if err != nil {
			t.Fatal(err)
		}
		o.SpecFile = filepath.Join(root, "dropped.kaudit.yaml")
		rep, err := Diff(t.Context(), ev, o)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	whole := audit1(Options{})
	var shards []*audit.Report
	for i := range int32(3) {
		rep := audit1(Options{Shard: Shard{Index: i, Count: 3}})
		for _, c := range rep.Cut {
			if c.Role != "source" && c.Partition%3 != i {
				t.Errorf("shard %d/3 judged %s/%d", i, c.Topic, c.Partition)
			}
		}
		shards = append(shards, rep)
	}
	merged, err := combine.Merge(shards...)
	if err != nil {
		t.Fatal(err)
	}
	key := func(r *audit.Report) []string {
		var out []string
		for _, f := range r.Findings {
			out = append(out, fmt.Sprintf("%s %s %s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Key))
		}
		slices.Sort(out)
		return out
	}
	if w, m := key(whole), key(merged); !slices.Equal(w, m) || merged.Summary.Verdict != whole.Summary.Verdict {
		t.Errorf("merged shards: %s\n%q\nwhole: %s\n%q", merged.Summary.Verdict, m, whole.Summary.Verdict, w)
	}
	if len(key(whole)) == 0 {
		t.Fatal("the incident has no findings: the test proves nothing")
	}
}

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"0/4": {0, 4}, "3/4": {3, 4}, " 1 / 2 ": {1, 2}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "4/4", "-1/4", "1", "a/b", "0/0", "$(JOB_COMPLETION_INDEX)/4"} {
		if _, err := ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q): no error", in)
		}
	}
}

// TestParseWhen: durations back from now, days and weeks too, and RFC
// 3339 times; anything else is refused.
func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                  now.Add(-90 * time.Minute),
		"24h":                  now.Add(-24 * time.Hour),
		"1d":                   now.Add(-24 * time.Hour),
		"2w":                   now.Add(-14 * 24 * time.Hour),
		"1d12h":                now.Add(-36 * time.Hour),
		"2026-11-29T02:30:00Z": time.Date(2026, 11, 29, 2, 30, 0, 0, time.UTC),
		"":                     {},
	} {
		if got, err := ParseWhen(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"1x", "d", "1dd", "yesterday", "-1d", "1d-5h", "2026-11-29"} {
		if _, err := ParseWhen(in, now); err == nil {
			t.Errorf("ParseWhen(%q): no error", in)
		}
	}
}

// TestDiffRealErrorWins: a run that fails (a spill folder or an exchange
// folder it cannot write into) returns that error, could-not-run, never
// the cancellation it caused in the spec check that runs beside it.
func TestDiffRealErrorWins(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "incidents")
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"spill dir", Options{TableMemory: 1, SpillDir: file}, "spill"},
		{"exchange", Options{Shard: Shard{Index: 0, Count: 2}, RunID: "r", Exchange: file, ExchangeWait: time.Minute}, "a-file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := OpenSnapshot(t.Context(), filepath.Join(root, "dropped"))
			if err != nil {
				t.Fatal(err)
			}
			tt.o.SpecFile = filepath.Join(root, "dropped.kaudit.yaml")
			_, err = Diff(t.Context(), ev, tt.o)
			var nr audit.NotRunError
			if !errors.As(err, &nr) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want could not run, naming %q, not a cancellation", err, tt.want)
			}
		})
	}
}
