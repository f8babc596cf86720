package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
		var rep kauditReport
		out := filepath.Join(r.dir, "kaudit-"+name+".json")
		args := []string{"diff", "--snapshot", capture, "--spec", spec, "--format", "json", "--output", out}
		if spec == "" {
			// kaudit diff --app-id alone: the spec inferred from the evidence
			args = []string{"diff", "--snapshot", capture, "--app-id", appID, "--format", "json", "--output", out}
		}
		code, stderr, err := r.d.runKaudit(ctx, r.dir, name, args...)
		if err != nil {
			return rep, err
		}
		b, err := os.ReadFile(out)
		if err != nil {
			return rep, fmt.Errorf("kaudit diff --spec %s exited %d without JSON: %s", spec, code, lastLines(stderr, 5))
		}
		return rep, json.Unmarshal(b, &rep)
	}
	hand, err := diff("diff-handwritten", filepath.Join(r.d.root, "drill", "kaudit.yaml"))
	if err != nil {
		return err
	}
	drafted, err := diff("diff-drafted", draftPath)
	if err != nil {
		return err
	}
	ids := func(rep kauditReport) []string {
		var out []string
		for _, f := range rep.Findings {
			if f.Severity == "loss" || f.Severity == "anomaly" {
				out = append(out, fmt.Sprintf("%s/%s %s/%d@%d+%d key=%s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Count, f.keyString()))
			}
		}
		slices.Sort(out)
		return out
	}
	if drafted.Summary.Verdict != hand.Summary.Verdict {
		return fmt.Errorf("with the drafted spec kaudit says %s, with the hand-written one %s (draft: %s)", drafted.Summary.Verdict, hand.Summary.Verdict, draftPath)
	}
	if a, b := ids(hand), ids(drafted); !slices.Equal(a, b) {
		return fmt.Errorf("with the drafted spec kaudit finds %v, with the hand-written one %v (draft: %s)", head(b, 8), head(a, 8), draftPath)
	}
	alone, err := diff("diff-app-id", "")
	if err != nil {
		return err
	}
	if alone.Summary.Verdict != hand.Summary.Verdict {
		return fmt.Errorf("with --app-id alone kaudit says %s, with the hand-written spec %s", alone.Summary.Verdict, hand.Summary.Verdict)
	}
	if a, b := ids(hand), ids(alone); !slices.Equal(a, b) {
		return fmt.Errorf("with --app-id alone kaudit finds %v, with the hand-written spec %v", head(b, 8), head(a, 8))
	}
	logf("inferred: kaudit init drafted a spec from the capture alone, and kaudit diff --app-id alone inferred it; both name the same %d findings, verdict %s, as the hand-written spec", len(ids(hand)), hand.Summary.Verdict)
	return nil
}
