package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

func TestMerge(t *testing.T) {
	dir := t.TempDir()
	shard := func(name string, p int32, fs ...audit.Finding) string {
		r := &audit.Report{AppID: "shop", Cut: []audit.PartitionCut{{Topic: "orders", Partition: p, Role: "source", Committed: 10, HW: 10}}, Findings: fs}
		r.Finish()
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	lost := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, audit.TopicPartition{Topic: "orders", Partition: 1}, 7)
	a := shard("a.json", 0)
	b := shard("b.json", 1, lost)
	out, errOut, code := runCLI(t, "merge", a, b)
	if code != exitFindings {
		t.Fatalf("exit %d, want %d (%s)", code, exitFindings, errOut)
	}
	var m audit.Report
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Cut) != 2 || len(m.Findings) != 1 || m.Summary.Verdict != audit.VerdictLoss {
		t.Errorf("merged: %d cut rows, %d findings, verdict %s", len(m.Cut), len(m.Findings), m.Summary.Verdict)
	}
	if _, _, code := runCLI(t, "merge", a); code != exitClean {
		t.Errorf("a clean shard alone: exit %d", code)
	}
	if _, _, code := runCLI(t, "merge", filepath.Join(dir, "missing.json")); code != exitUsage {
		t.Errorf("a missing file: exit %d, want 2", code)
	}
}

// TestMergeOneShardOfTwo: a shard's report says which shard it is; merged
// alone it is not the whole audit, and the merge says so (missing
// evidence) instead of reading as one; the same shard twice is refused.
func TestMergeOneShardOfTwo(t *testing.T) {
	dir := t.TempDir()
	shard := filepath.Join(dir, "shard-0.json")
	if _, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", "../../testdata/incidents/dropped.kaudit.yaml",
		"--shard", "0/2", "--run-id", "night-1", "--output", shard); code != exitFindings {
		t.Fatalf("shard 0/2: exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(shard)
	if err != nil || !strings.Contains(string(b), `"shard": {`) || !strings.Contains(string(b), `"run": "night-1"`) {
		t.Fatalf("the shard's report does not say which shard it is: %v\n%.300s", err, b)
	}
	out, errOut, code := runCLI(t, "merge", shard, "--format", "md")
	if code != exitFindings || !strings.Contains(out, "shard 1/2 was not merged") || !strings.Contains(out, "The audit is incomplete") {
		t.Errorf("one shard of two: exit %d, stderr %s\n%.800s", code, errOut, out)
	}
	if _, errOut, code := runCLI(t, "merge", shard, shard); code != exitUsage || !strings.Contains(errOut, "given twice") {
		t.Errorf("the same shard twice: exit %d: %s", code, errOut)
	}
}

// TestMergeExchangeShards: the embedded incident's shards, run at once,
// with and without handing each other their inputs (--exchange), merge
// into what one whole audit finds, row for row; --exchange without
// --shard and --run-id is a usage error.
func TestMergeExchangeShards(t *testing.T) {
	snap, spec := "../../testdata/incidents/dropped", "../../testdata/incidents/dropped.kaudit.yaml"
	shardsAgree(t, true, "diff", "--snapshot", snap, "--spec", spec)
	for _, args := range [][]string{{"--shard", "0/2"}, {"--run-id", "x"}, {"--partitions", "0", "--run-id", "x"}} {
		args = append([]string{"diff", "--snapshot", snap, "--spec", spec, "--exchange", t.TempDir()}, args...)
		if _, errOut, code := runCLI(t, args...); code != exitUsage || !strings.Contains(errOut, "--exchange needs") {
			t.Errorf("%v: exit %d: %s", args, code, errOut)
		}
	}
}
