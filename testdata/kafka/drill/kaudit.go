package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// finding is one entry of kaudit's JSON "findings" (docs/how-it-decides.md).
type finding struct {
	Stage     string          `json:"stage"`
	Cause     string          `json:"cause"`
	Severity  string          `json:"severity"`
	Topic     string          `json:"topic"`
	Partition int32           `json:"partition"`
	Offset    int64           `json:"offset"`
	Count     int64           `json:"count"`
	Key       json.RawMessage `json:"key"`
	Detail    string          `json:"detail"`
}

// keyString is the finding's table key as plain text. kaudit's JSON (schema 2) prints a key as
// its JSON value ("o-1" for the string key o-1, 42, {"a":1} indented); schema 1 printed the
// JSON text inside a string ("\"o-1\""), so a string holding a JSON string is unquoted again.
// Other values print as their compact JSON text.
func (f finding) keyString() string {
	if len(f.Key) == 0 || string(f.Key) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(f.Key, &s) != nil {
		var c bytes.Buffer
		if json.Compact(&c, f.Key) != nil {
			return string(f.Key)
		}
		return c.String()
	}
	var inner string
	if json.Unmarshal([]byte(s), &inner) == nil {
		return inner
	}
	return s
}

func (f finding) String() string {
	return fmt.Sprintf("%s/%s/%s %s/%d@%d+%d key=%s", f.Severity, f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Count, f.keyString())
}

type kauditReport struct {
	AppID    string        `json:"app_id"`
	Summary  kauditSummary `json:"summary"`
	Findings []finding     `json:"findings"`
}

type kauditSummary struct {
	Verdict string   `json:"verdict"`
	Missing []string `json:"missing_evidence"` // what kaudit could not judge, and why
}

// loss returns the findings of severity loss.
func (r kauditReport) loss() []finding {
	var out []finding
	for _, f := range r.Findings {
		if f.Severity == "loss" {
			out = append(out, f)
		}
	}
	return out
}

func (r kauditReport) byCause(cause string) []finding {
	var out []finding
	for _, f := range r.Findings {
		if f.Cause == cause {
			out = append(out, f)
		}
	}
	return out
}

// summary prints the verdict and a count per severity/stage/cause.
func (r kauditReport) summary() string {
	n := map[string]int{}
	for _, f := range r.Findings {
		n[f.Severity+"/"+f.Stage+"/"+f.Cause]++
	}
	var parts []string
	for k, v := range n {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(parts)
	return fmt.Sprintf("verdict %s; %s", r.Summary.Verdict, strings.Join(parts, " "))
}

// runDiff runs kaudit diff against the live cluster, writing kaudit.json and kaudit.md into
// dir. extra adds flags (e.g. --state-dir).
func (d *drill) runDiff(ctx context.Context, dir string, extra ...string) (kauditReport, error) {
	return d.runDiffFor(ctx, dir, appID, filepath.Join(d.root, "drill", "kaudit.yaml"), extra...)
}

// runDiffFor is runDiff for application id app with spec (the eos scenarios audit Kafka's
// EosTestClient with testdata/eos/eos.kaudit.yaml).
func (d *drill) runDiffFor(ctx context.Context, dir, app, spec string, extra ...string) (kauditReport, error) {
	var rep kauditReport
	base := []string{"diff", "--bootstrap-server", d.bootstrap, "--app-id", app,
		"--spec", spec,
		"--topology", filepath.Join(dir, "describe.txt"),
		"--schema-registry-url", d.regURL}
	base = append(base, extra...)
	jsonPath := filepath.Join(dir, "kaudit.json")
	code, stderr, err := d.runKaudit(ctx, dir, "diff", append(base, "--format", "json", "--output", jsonPath)...)
	if err != nil {
		return rep, err
	}
	if code != 0 && code != 1 && code != 3 {
		return rep, fmt.Errorf("kaudit diff exited %d: %s", code, lastLines(stderr, 5))
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return rep, fmt.Errorf("kaudit diff exited %d without JSON (%w): %s", code, err, lastLines(stderr, 5))
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("decode kaudit JSON: %w", err)
	}
	want := map[string]int{"clean": 0, "loss": 1, "anomaly": 1, "incomplete": 3}[rep.Summary.Verdict]
	if code != want {
		return rep, fmt.Errorf("kaudit diff exited %d for verdict %q (the README's exit statuses say %d)", code, rep.Summary.Verdict, want)
	}
	mdCode, mdErr, err := d.runKaudit(ctx, dir, "diff-md", append(base, "--format", "md", "--output", filepath.Join(dir, "kaudit.md"))...)
	if err != nil {
		return rep, err
	}
	if mdCode != code {
		return rep, fmt.Errorf("kaudit diff --format md exited %d, --format json %d: %s", mdCode, code, lastLines(mdErr, 5))
	}
	logf("kaudit: %s", rep.summary())
	return rep, nil
}

// runKaudit runs the kaudit binary, saving stderr to dir/<name>.stderr; it returns the exit code.
func (d *drill) runKaudit(ctx context.Context, dir, name string, args ...string) (int, string, error) {
	return d.runKauditTo(ctx, dir, name, nil, args...)
}

// runKauditTo is runKaudit with stdout going to w (nil: into the saved stderr).
func (d *drill) runKauditTo(ctx context.Context, dir, name string, w io.Writer, args ...string) (int, string, error) {
	c, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(c, d.kaudit, replacing(args)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = w
	if w == nil {
		cmd.Stdout = &stderr
	}
	t0 := time.Now()
	err := cmd.Run()
	_ = os.WriteFile(filepath.Join(dir, "kaudit-"+name+".stderr"), stderr.Bytes(), 0o644)
	var ee *exec.ExitError
	switch {
	case err == nil:
		logf("kaudit %s: exit 0 in %s", name, time.Since(t0).Round(10*time.Millisecond))
		return 0, stderr.String(), nil
	case errors.As(err, &ee):
		logf("kaudit %s: exit %d in %s", name, ee.ExitCode(), time.Since(t0).Round(10*time.Millisecond))
		return ee.ExitCode(), stderr.String(), nil
	default:
		return -1, stderr.String(), fmt.Errorf("run kaudit %s: %w", name, err)
	}
}

// replacing is args with --force where they write a report or a spec:
// the drill's files are its own scratch, and a step run again (a retried
// attempt) replaces what it wrote before, which kaudit does only when
// asked.
func replacing(args []string) []string {
	if len(args) == 0 || args[0] != "diff" && args[0] != "merge" {
		return args
	}
	for _, a := range args {
		if a == "--output" || a == "--save-spec" {
			return append(slices.Clone(args), "--force")
		}
	}
	return args
}

// ledgerAborted runs kaudit ledger on topic and returns the aborted transactions it counted.
func (d *drill) ledgerAborted(ctx context.Context, dir, topic string) (int, error) {
	var stdout bytes.Buffer
	code, stderr, err := d.runKauditTo(ctx, dir, "ledger-"+topic, &stdout, "ledger", "--bootstrap-server", d.bootstrap,
		"--topic", topic, "--format", "json")
	if err != nil {
		return 0, err
	}
	b := stdout.Bytes()
	_ = os.WriteFile(filepath.Join(dir, "ledger-"+topic+".json"), b, 0o644)
	if code != 0 && code != 1 {
		return 0, fmt.Errorf("kaudit ledger --topic %s exited %d: %s", topic, code, lastLines(stderr, 5))
	}
	var l struct {
		Partitions []struct {
			Transactions struct {
				Aborted int `json:"aborted"`
			} `json:"transactions"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		return 0, fmt.Errorf("decode kaudit ledger JSON for %s: %w", topic, err)
	}
	n := 0
	for _, p := range l.Partitions {
		n += p.Transactions.Aborted
	}
	return n, nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, " | ")
}

// checkExchangeShards audits the live cluster again as n shards run at once that hand each
// other their inputs (--shard I/N --exchange), merges them, and requires the merged findings
// to be the whole audit's (dir/kaudit.json, which runDiff wrote), row for row.
func (r *scRun) checkExchangeShards(ctx context.Context, n int) error {
	return r.d.checkExchangeShards(ctx, r.dir, r.auditApp(), r.auditSpec(), n)
}

// checkExchangeShards is scRun's for the audit of app with spec that runDiffFor wrote into dir.
func (d *drill) checkExchangeShards(ctx context.Context, appDir, app, spec string, n int) error {
	dir := filepath.Join(appDir, "shards")
	// the exchange's folder exists before the shards start: kaudit creates
	// only the run's folder in it
	if err := os.MkdirAll(filepath.Join(dir, "exchange"), 0o755); err != nil {
		return err
	}
	base := []string{"diff", "--bootstrap-server", d.bootstrap, "--app-id", app, "--spec", spec,
		"--topology", filepath.Join(appDir, "describe.txt"), "--schema-registry-url", d.regURL,
		"--run-id", "drill", "--exchange", filepath.Join(dir, "exchange"), "--exchange-wait", "2m", "--format", "json"}
	codes, errs := make([]int, n), make([]error, n)
	stderrs := make([]string, n)
	var reports []string
	var wg sync.WaitGroup
	for i := range n {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		reports = append(reports, out)
		wg.Go(func() {
			codes[i], stderrs[i], errs[i] = d.runKaudit(ctx, dir, fmt.Sprintf("shard-%d", i), append(base, "--shard", fmt.Sprintf("%d/%d", i, n), "--output", out)...)
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			return errs[i]
		}
		if codes[i] != 0 && codes[i] != 1 && codes[i] != 3 {
			return fmt.Errorf("kaudit diff --shard %d/%d --exchange exited %d: %s", i, n, codes[i], lastLines(stderrs[i], 5))
		}
	}
	csv := func(name string, files ...string) (string, error) {
		var b bytes.Buffer
		code, stderr, err := d.runKauditTo(ctx, dir, name, &b, append(append([]string{"merge"}, files...), "--format", "csv")...)
		if err != nil {
			return "", err
		}
		if code != 0 && code != 1 && code != 3 {
			return "", fmt.Errorf("kaudit merge exited %d: %s", code, lastLines(stderr, 5))
		}
		return b.String(), nil
	}
	whole, err := csv("merge-whole", filepath.Join(appDir, "kaudit.json"))
	if err != nil {
		return err
	}
	merged, err := csv("merge-shards", reports...)
	if err != nil {
		return err
	}
	if merged != whole {
		return fmt.Errorf("%d shards exchanging their inputs, merged, differ from the whole audit:\n%s\nwhole:\n%s", n, lastLines(merged, 12), lastLines(whole, 12))
	}
	logf("kaudit: %d shards exchanging their inputs, merged: the whole audit's %d rows", n, strings.Count(whole, "\n")-1)
	return os.RemoveAll(filepath.Join(dir, "exchange"))
}
