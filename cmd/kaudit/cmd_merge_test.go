package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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

// TestMergeRefusesShards: kaudit merge refuses shards of one run id that
// read two captures, and a shard whose findings were deleted by hand
// (they no longer add up to its summary): exit 2, naming why.
func TestMergeRefusesShards(t *testing.T) {
	snap, spec := "../../testdata/incidents/dropped", "../../testdata/incidents/dropped.kaudit.yaml"
	other := otherCapture(t, snap)
	dir := t.TempDir()
	shard := func(bundle string, i int) string {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d-of-%s.json", i, filepath.Base(bundle)))
		if _, errOut, code := runCLI(t, "diff", "--snapshot", bundle, "--spec", spec, "--shard", fmt.Sprintf("%d/2", i), "--run-id", "night-1", "--output", out); code != exitFindings {
			t.Fatalf("shard %d/2 of %s: exit %d: %s", i, bundle, code, errOut)
		}
		return out
	}
	s0, s1, s1other := shard(snap, 0), shard(snap, 1), shard(other, 1)
	if _, errOut, code := runCLI(t, "merge", s0, s1, "--format", "json"); code != exitFindings {
		t.Fatalf("the shards of one capture: exit %d: %s", code, errOut)
	}
	// shard 0 with a finding deleted by hand
	b, err := os.ReadFile(s0)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	findings, _ := doc["findings"].([]any)
	if len(findings) == 0 {
		t.Fatal("shard 0/2 has no findings: the test proves nothing")
	}
	doc["findings"] = findings[1:]
	delete(doc, "lineage") // it names findings by index
	edited := filepath.Join(dir, "shard-0-edited.json")
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(edited, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, a, b, stderr string
	}{
		{"two captures", s0, s1other, "evidence"},
		{"a finding deleted by hand", edited, s1, "summary"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, "merge", tt.a, tt.b, "--format", "json")
			if code != exitUsage || !strings.Contains(errOut, tt.stderr) || out != "" {
				t.Errorf("exit %d, stderr %q; want %d naming %q, and no report", code, errOut, exitUsage, tt.stderr)
			}
		})
	}
}

// TestExchangeRefusesFiles: a shard of a run with --exchange never reads
// a file that is not its run's: an empty inputs file, another table's
// files, a file of another capture are refused and named once the wait
// ends (exit 4, no report), never taken for the inputs they are not.
func TestExchangeRefusesFiles(t *testing.T) {
	snap, spec := "../../testdata/incidents/dropped", "../../testdata/incidents/dropped.kaudit.yaml"
	good := t.TempDir()
	base := []string{"diff", "--snapshot", snap, "--spec", spec, "--run-id", "night-1", "--format", "json", "--exchange-wait", "1s"}
	var wg sync.WaitGroup
	var codes [2]int
	var errs [2]string
	for i := range 2 {
		wg.Go(func() {
			_, errs[i], codes[i] = runCLI(t, with(base, "--shard", fmt.Sprintf("%d/2", i), "--exchange", good, "--exchange-wait", "1m")...)
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != exitFindings {
			t.Fatalf("shard %d/2: exit %d: %s", i, c, errs[i])
		}
	}
	folder := func(root, table string) string { return filepath.Join(root, "night-1", "2", table, table) }
	if _, err := os.Stat(filepath.Join(folder(good, "orders"), "p1.to0")); err != nil {
		t.Fatalf("the exchange's layout: %v", err)
	}
	cp := func(t *testing.T, from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name   string
		mutate func(t *testing.T, root string)
		args   []string
		file   string
	}{
		{"an empty inputs file", func(t *testing.T, root string) { os.Truncate(filepath.Join(folder(root, "orders"), "p1.to0"), 0) }, nil, "p1.to0"},
		{"another table's files", func(t *testing.T, root string) {
			for _, f := range []string{"p1.meta", "p1.to0"} {
				cp(t, filepath.Join(folder(root, "payments"), f), filepath.Join(folder(root, "orders"), f))
			}
		}, nil, "orders/orders/p1.meta"},
		{"another capture's files", nil, []string{"--snapshot", otherCapture(t, snap)}, "p1.meta"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(t, root)
			}
			out := filepath.Join(t.TempDir(), "shard-0.json")
			_, errOut, code := runCLI(t, with(with(base, tt.args...), "--shard", "0/2", "--exchange", root, "--output", out)...)
			if code != exitNotRun || !strings.Contains(errOut, "refused") || !strings.Contains(errOut, tt.file) {
				t.Errorf("exit %d, stderr %q; want %d, %s refused", code, errOut, exitNotRun, tt.file)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("a report was written")
			}
		})
	}
}

// otherCapture is a copy of the bundle snap as another capture of the
// same records: its manifest written later.
func otherCapture(t *testing.T, snap string) string {
	t.Helper()
	other := copyTree(t, snap)
	mb, err := os.ReadFile(filepath.Join(other, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest map[string]any
	if err := json.Unmarshal(mb, &manifest); err != nil {
		t.Fatal(err)
	}
	manifest["updated_at"] = "2031-01-01T00:00:00Z"
	if mb, err = json.MarshalIndent(manifest, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "manifest.json"), mb, 0o644); err != nil {
		t.Fatal(err)
	}
	return other
}

// with is args and then more, in a slice of its own.
func with(args []string, more ...string) []string {
	return append(slices.Clone(args), more...)
}
