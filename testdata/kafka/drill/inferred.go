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
)

// auditInferred is issue L's check on the real app: from a capture of the
// scenario's topics, kaudit init with no spec and no --topology drafts a
// spec, and kaudit diff --snapshot with the draft must name exactly the
// loss and anomaly findings, and the verdict, that the hand-written spec
// gives on the same capture. The draft is left in dir/kaudit-drafted.yaml.
func (r *scRun) auditInferred(ctx context.Context) error {
	// its own capture, with the schemas (a scenario's own capture may lack them)
	capture := filepath.Join(r.dir, "capture-inferred")
	if err := r.capture(ctx, capture, "capture-inferred"); err != nil {
		return err
	}
	var draft bytes.Buffer
	code, stderr, err := r.d.runKauditTo(ctx, r.dir, "init-inferred", &draft, "init", "--app-id", appID, "--snapshot", capture)
	if err != nil {
		return err
	}
	draftPath := filepath.Join(r.dir, "kaudit-drafted.yaml")
	if err := os.WriteFile(draftPath, draft.Bytes(), 0o644); err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kaudit init --snapshot exited %d: %s", code, lastLines(stderr, 5))
	}
	diff := func(name, spec string) (kauditReport, error) {
		if spec == "" {
			// kaudit diff --app-id alone: the spec inferred from the evidence
			return r.d.snapshotDiff(ctx, r.dir, name, capture, "--app-id", appID)
		}
		return r.d.snapshotDiff(ctx, r.dir, name, capture, "--spec", spec)
	}
	hand, err := diff("diff-handwritten", filepath.Join(r.d.root, "drill", "kaudit.yaml"))
	if err != nil {
		return err
	}
	drafted, err := diff("diff-drafted", draftPath)
	if err != nil {
		return err
	}
	if drafted.Summary.Verdict != hand.Summary.Verdict {
		return fmt.Errorf("with the drafted spec kaudit says %s, with the hand-written one %s (draft: %s)", drafted.Summary.Verdict, hand.Summary.Verdict, draftPath)
	}
	if a, b := hand.lossIDs(), drafted.lossIDs(); !slices.Equal(a, b) {
		return fmt.Errorf("with the drafted spec kaudit finds %v, with the hand-written one %v (draft: %s)", head(b, 8), head(a, 8), draftPath)
	}
	alone, err := diff("diff-app-id", "")
	if err != nil {
		return err
	}
	if alone.Summary.Verdict != hand.Summary.Verdict {
		return fmt.Errorf("with --app-id alone kaudit says %s, with the hand-written spec %s", alone.Summary.Verdict, hand.Summary.Verdict)
	}
	if a, b := hand.lossIDs(), alone.lossIDs(); !slices.Equal(a, b) {
		return fmt.Errorf("with --app-id alone kaudit finds %v, with the hand-written spec %v", head(b, 8), head(a, 8))
	}
	logf("inferred: kaudit init drafted a spec from the capture alone, and kaudit diff --app-id alone inferred it; both name the same %d findings, verdict %s, as the hand-written spec", len(hand.lossIDs()), hand.Summary.Verdict)
	return nil
}

// appInferred audits app p's capture in dir (dir/capture) twice offline, with its hand-written
// spec and with --app-id alone (the spec inferred from the evidence, saved to
// dir/kaudit-inferred.yaml), both with extra (the brokers' logs after a restart). The inferred
// audit may decline what the evidence does not settle (incomplete, naming it), never more: each
// of its loss and anomaly findings is one of the hand-written spec's, and its verdict is that
// spec's or incomplete. Then the same again with the app's own logs (--app-log, each run's:
// what an on-call engineer has too; a windowed store's grace is in them). It returns whether
// the two reports agree exactly (verdict and findings) without the logs.
func (r *scRun) appInferred(ctx context.Context, p *appProc, dir string, extra ...string) (bool, error) {
	same, err := r.appInferredWith(ctx, p, dir, "", extra...)
	if err != nil {
		return false, err
	}
	logs, _ := filepath.Glob(filepath.Join(p.dir, "app-*.log"))
	if len(logs) == 0 {
		return same, nil
	}
	withLogs := slices.Clone(extra)
	for _, l := range logs {
		withLogs = append(withLogs, "--app-log", l)
	}
	if _, err := r.appInferredWith(ctx, p, dir, "-app-logs", withLogs...); err != nil {
		return false, fmt.Errorf("with the app's logs: %w", err)
	}
	return same, nil
}

// appInferredWith is appInferred's one comparison, its reports named with suffix.
func (r *scRun) appInferredWith(ctx context.Context, p *appProc, dir, suffix string, extra ...string) (bool, error) {
	capture := filepath.Join(dir, "capture")
	diff := func(name string, args ...string) (kauditReport, error) {
		return r.d.snapshotDiff(ctx, dir, name+suffix, capture, append(args, extra...)...)
	}
	hand, err := diff("snapshot-handwritten", "--spec", filepath.Join(r.d.repo, "testdata", "apps", p.name+".kaudit.yaml"))
	if err != nil {
		return false, err
	}
	inf, err := diff("snapshot-app-id", "--app-id", p.appID, "--save-spec", filepath.Join(dir, "kaudit-inferred"+suffix+".yaml"))
	if err != nil {
		return false, err
	}
	h, i := hand.lossIDs(), inf.lossIDs()
	var extraFindings []string
	for _, f := range i {
		if !slices.Contains(h, f) && !hand.names(inf, f) {
			extraFindings = append(extraFindings, f)
		}
	}
	if len(extraFindings) > 0 {
		return false, fmt.Errorf("with --app-id alone kaudit finds %v, which the hand-written spec does not (draft: %s)", head(extraFindings, 5), filepath.Join(dir, "kaudit-inferred"+suffix+".yaml"))
	}
	if inf.Summary.Verdict != hand.Summary.Verdict && inf.Summary.Verdict != "incomplete" {
		return false, fmt.Errorf("with --app-id alone kaudit says %s, with the hand-written spec %s", inf.Summary.Verdict, hand.Summary.Verdict)
	}
	same := inf.Summary.Verdict == hand.Summary.Verdict && slices.Equal(h, i)
	with := ""
	if suffix != "" {
		with = " (with the app's logs)"
	}
	if same {
		logf("app %s%s: --app-id alone gives the hand-written spec's verdict %s and its %d findings", p.name, with, hand.Summary.Verdict, len(h))
	} else {
		logf("app %s%s: --app-id alone declines: %s (%d of the hand-written spec's %d findings), where the hand-written spec says %s; missing: %v",
			p.name, with, inf.Summary.Verdict, len(i), len(h), hand.Summary.Verdict, head(inf.Summary.Missing, 2))
	}
	return same, nil
}

// lossIDs lists the report's loss and anomaly findings, one line each (stage, cause, where, count,
// key), sorted: two audits agree when their lists are equal.
// names reports whether rep (the hand-written spec's report) names the records of other's
// finding id one by one: a keyless purge of a range (a repartition topic whose table the
// inferred spec could not model: the check that needs no spec) is the same loss as the
// hand-written spec's findings of that cause naming each input the range held.
func (rep kauditReport) names(other kauditReport, id string) bool {
	for _, f := range other.Findings {
		if f.keyString() != "" || fmt.Sprintf("%s/%s %s/%d@%d+%d key=", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Count) != id {
			continue
		}
		var n int64
		for _, g := range rep.Findings {
			if g.Stage == f.Stage && g.Cause == f.Cause && g.keyString() != "" {
				n += g.Count
			}
		}
		return n >= f.Count
	}
	return false
}

func (rep kauditReport) lossIDs() []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Severity == "loss" || f.Severity == "anomaly" {
			out = append(out, fmt.Sprintf("%s/%s %s/%d@%d+%d key=%s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Count, f.keyString()))
		}
	}
	slices.Sort(out)
	return out
}

// snapshotDiff runs kaudit diff --snapshot bundle with args, its JSON report written to
// dir/kaudit-<name>.json (stderr to dir/<name>.stderr), and decodes the report.
func (d *drill) snapshotDiff(ctx context.Context, dir, name, bundle string, args ...string) (kauditReport, error) {
	var rep kauditReport
	out := filepath.Join(dir, "kaudit-"+name+".json")
	code, stderr, err := d.runKaudit(ctx, dir, name, append([]string{"diff", "--snapshot", bundle, "--format", "json", "--output", out}, args...)...)
	if err != nil {
		return rep, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return rep, fmt.Errorf("kaudit %s (diff --snapshot %s %s) exited %d without JSON: %s", name, bundle, strings.Join(args, " "), code, lastLines(stderr, 5))
	}
	return rep, json.Unmarshal(b, &rep)
}
