package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Issue P on the real cluster: every live audit is repeated from the brokers' log dirs alone.
// After the live `kaudit diff` the brokers are stopped cleanly (cluster.sh stop: SIGTERM, a
// controlled shutdown that flushes the checkpoints), and `kaudit diff --log-dir` over every
// node's data dir (the controller's included) with the same spec, topology, schemas (exported
// from the registry: nothing of the cluster runs) and state dir must give the live report's
// verdict and findings exactly (every field of every finding, the summary's counts, the cut).

// liveDiff is a live audit the log dirs must repeat.
type liveDiff struct {
	extra  []string // the flags beyond the source (--state-dir …), without --baseline-snapshot
	report []byte   // its JSON
	tag    string   // names the files of the log-dir audit ("" or "before")
	done   bool
	// dir, app and spec: the results dir (with describe.txt), application id and spec of the
	// audit; empty: the scenario's (r.dir, r.auditApp(), r.auditSpec()). The apps-* scenarios
	// audit several apps, each in its own dir (steps.go).
	dir, app, spec string
	// noSpec: the audit ran with --app-id alone, the spec inferred (formats.go)
	noSpec bool
}

// runDiff is d.runDiff that remembers the live audit for auditLogDirs.
func (r *scRun) runDiff(ctx context.Context, extra ...string) (kauditReport, error) {
	rep, err := r.d.runDiffFor(ctx, r.dir, r.auditApp(), r.auditSpec(), extra...)
	if err != nil {
		return rep, err
	}
	b, err := os.ReadFile(filepath.Join(r.dir, "kaudit.json"))
	if err != nil {
		return rep, err
	}
	var keep []string
	for i := 0; i < len(extra); i++ {
		if extra[i] == "--baseline-snapshot" {
			i++
			continue
		}
		keep = append(keep, extra[i])
	}
	r.live = &liveDiff{extra: keep, report: b}
	return rep, nil
}

// auditLogDirsNow stops the brokers, audits their log dirs against the last live audit and
// starts the brokers again (the scenario goes on); tag names its files.
func (r *scRun) auditLogDirsNow(ctx context.Context, tag string) error {
	if !r.d.o.logDirs || r.live == nil && len(r.lives) == 0 {
		return nil
	}
	if r.live != nil {
		r.live.tag = tag
	}
	if err := r.auditLogDirs(ctx); err != nil {
		return err
	}
	return r.d.restartCluster(ctx)
}

// auditLogDirs stops the brokers cleanly and audits their log dirs against r.live (once);
// the cluster stays down.
func (r *scRun) auditLogDirs(ctx context.Context) error {
	if !r.d.o.logDirs {
		return nil
	}
	var todo []*liveDiff
	if r.live != nil && !r.live.done {
		todo = append(todo, r.live)
	}
	for _, l := range r.lives {
		if !l.done {
			todo = append(todo, l)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	t0 := time.Now()
	n := r.d.brokers
	r.d.stopCluster(ctx)
	logf("log dirs: %d-broker cluster stopped in %s", n, time.Since(t0).Round(100*time.Millisecond))
	var errs []error
	for _, l := range todo {
		l.done = true
		out, err := r.diffLogDirsFor(ctx, l, "logdir"+suffix(l.tag))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, sameAsLive(l.report, out, filepath.Join(r.liveDir(l), "kaudit-logdir"+suffix(l.tag)+".compare.txt"), false))
	}
	return allErrs(errs...)
}

// liveDir is the results dir of the live audit l.
func (r *scRun) liveDir(l *liveDiff) string {
	if l.dir != "" {
		return l.dir
	}
	return r.dir
}

func suffix(tag string) string {
	if tag == "" {
		return ""
	}
	return "-" + tag
}

// dataDirs lists every node's data dir of the drill's cluster (n1, n2, n3, n100; n1 alone for
// the combined node).
func (d *drill) dataDirs() ([]string, error) {
	root := filepath.Join(d.o.work, "cluster", "data")
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list the data dirs: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "n") {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no data dir under %s", root)
	}
	return out, nil
}

// diffLogDirs runs kaudit diff --log-dir over every data dir (the cluster must be down) with
// the drill's spec, the scenario's topology and the registry's schemas; it writes
// kaudit-<name>.json and returns it. The exit code must match the verdict.
func (r *scRun) diffLogDirs(ctx context.Context, name string, extra ...string) ([]byte, error) {
	return r.diffLogDirsFor(ctx, &liveDiff{extra: extra}, name)
}

// diffLogDirsFor is diffLogDirs for the app, spec and results dir of the live audit l.
func (r *scRun) diffLogDirsFor(ctx context.Context, l *liveDiff, name string) ([]byte, error) {
	extra := l.extra
	app, spec, dir := l.app, l.spec, r.liveDir(l)
	if app == "" {
		app = r.auditApp()
	}
	if spec == "" {
		spec = r.auditSpec()
	}
	dirs, err := r.d.dataDirs()
	if err != nil {
		return nil, err
	}
	args := []string{"diff", "--app-id", app}
	for _, d := range dirs {
		args = append(args, "--log-dir", d)
	}
	out := filepath.Join(dir, "kaudit-"+name+".json")
	if !l.noSpec {
		args = append(args, "--spec", spec)
	}
	args = append(args, "--topology", filepath.Join(dir, "describe.txt"), "--format", "json", "--output", out)
	if r.eos == nil && r.smoke == nil { // EosTestClient's and SmokeTestClient's values are numbers: no schemas
		schemas := filepath.Join(r.dir, "schemas")
		if err := exportSchemas(ctx, r.d.regURL, schemas); err != nil {
			return nil, err
		}
		args = append(args, "--schemas", schemas)
	}
	args = append(args, extra...)
	code, stderr, err := r.d.runKaudit(ctx, dir, "diff-"+name, args...)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("kaudit diff --log-dir exited %d without JSON: %s", code, lastLines(stderr, 5))
	}
	var rep kauditReport
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("decode kaudit diff --log-dir JSON: %w", err)
	}
	if want := map[string]int{"clean": 0, "loss": 1, "anomaly": 1, "incomplete": 3}[rep.Summary.Verdict]; code != want {
		return nil, fmt.Errorf("kaudit diff --log-dir exited %d for verdict %q", code, rep.Summary.Verdict)
	}
	logf("log dirs: kaudit diff --log-dir %s: %s", strings.Join(dirs, " "), rep.summary())
	return b, nil
}

// compareReports checks that the log-dir report off says what the live one did: the same
// verdict, summary counts, missing evidence and findings, field by field (the detail
// included unless noDetail: the unclean scenario's evidence differs by design, a capture for
// the live audit, the replicas for the log dirs), and the same cut. Every difference is
// written to file; the error names the first few.
func compareReports(live, off []byte, file string, noDetail bool) error {
	var a, b map[string]any
	if err := json.Unmarshal(live, &a); err != nil {
		return fmt.Errorf("decode the live report: %w", err)
	}
	if err := json.Unmarshal(off, &b); err != nil {
		return fmt.Errorf("decode the log-dir report: %w", err)
	}
	var diffs []string
	for _, m := range []map[string]any{a, b} {
		if s, ok := m["summary"].(map[string]any); ok {
			delete(s, "notes") // the log-dir source adds its own (configs from the metadata log)
		}
	}
	for _, k := range []string{"summary", "missing_evidence", "cut", "edges", "timeline"} {
		if x, y := canon(a[k]), canon(b[k]); x != y {
			diffs = append(diffs, fmt.Sprintf("%s: live %s; log dirs %s", k, x, y))
		}
	}
	fa, fb := findingList(a, noDetail), findingList(b, noDetail)
	for _, f := range fa {
		if !slices.Contains(fb, f) {
			diffs = append(diffs, "only live: "+f)
		}
	}
	for _, f := range fb {
		if !slices.Contains(fa, f) {
			diffs = append(diffs, "only log dirs: "+f)
		}
	}
	var text bytes.Buffer
	for _, d := range diffs {
		text.WriteString(d + "\n")
	}
	if err := os.WriteFile(file, text.Bytes(), 0o644); err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the reports differ in %d places (%s): %v", len(diffs), file, head(diffs, 4))
	}
	return nil
}

// sameAsLive is compareReports for a log-dir report, logged.
func sameAsLive(live, off []byte, file string, noDetail bool) error {
	if err := compareReports(live, off, file, noDetail); err != nil {
		return fmt.Errorf("kaudit diff --log-dir and the live audit: %w", err)
	}
	var rep kauditReport
	_ = json.Unmarshal(off, &rep)
	logf("log dirs: the stopped brokers' log dirs give the live audit's verdict %s and its %d findings exactly", rep.Summary.Verdict, len(rep.Findings))
	return nil
}

// findingList is every finding of a report as canonical JSON, sorted (noDetail: without
// its detail).
func findingList(m map[string]any, noDetail bool) []string {
	l, _ := m["findings"].([]any)
	out := make([]string, 0, len(l))
	for _, f := range l {
		if fm, ok := f.(map[string]any); ok && noDetail {
			delete(fm, "detail")
		}
		out = append(out, canon(f))
	}
	slices.Sort(out)
	return out
}

// canon is v as JSON with sorted keys (encoding/json sorts map keys).
func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// restartCluster starts every node of the stopped cluster again on its data and waits until
// every broker is listed.
func (d *drill) restartCluster(ctx context.Context) error {
	b, err := os.ReadFile(filepath.Join(d.o.work, "cluster", "mode"))
	if err != nil {
		return fmt.Errorf("read the cluster's mode: %w", err)
	}
	n := 1
	if strings.TrimSpace(string(b)) == "3" {
		n = 3
	}
	t0 := time.Now()
	if err := d.cluster(ctx, "start", "--brokers", fmt.Sprint(n)); err != nil {
		return err
	}
	d.brokers, d.bootstrap = n, bootstrapFor(n)
	if err := d.waitBrokers(ctx, n); err != nil {
		return err
	}
	logf("log dirs: cluster restarted on its data in %s", time.Since(t0).Round(100*time.Millisecond))
	return nil
}
