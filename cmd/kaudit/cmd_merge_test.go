package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
