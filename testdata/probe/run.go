package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
)

// result is one run of the kaudit binary.
type result struct {
	code     int // exit code; -1 when killed
	stdout   string
	stderr   string
	hang     bool // the timeout passed: killed
	termOK   bool // on a hang, SIGTERM stopped it within 2 s
	panicked bool
	elapsed  time.Duration
}

var panicRE = regexp.MustCompile(`(?m)^(panic: |fatal error: |goroutine \d+ \[)`)

// runOpts are how one run is started.
type runOpts struct {
	dir     string   // working directory
	env     []string // added to a minimal environment
	nobody  bool     // run as uid/gid 65534 (to make chmod 000 deny, as root)
	timeout time.Duration
}

// runKaudit runs the binary with args; a run over the timeout gets SIGTERM,
// then SIGKILL 2 s later, and counts as a hang.
func runKaudit(bin string, o runOpts, args ...string) result {
	cmd := exec.Command(bin, args...)
	cmd.Dir = o.dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + o.dir, "TMPDIR=" + o.dir, "NO_COLOR=1"}, o.env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.nobody {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{code: -1, stderr: "start: " + err.Error()}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var r result
	var err error
	select {
	case err = <-done:
	case <-time.After(o.timeout):
		r.hang = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case err = <-done:
			r.termOK = true
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	r.elapsed = time.Since(start)
	r.stdout, r.stderr = out.String(), errb.String()
	r.code = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		r.code = -1
	}
	r.panicked = panicRE.MatchString(r.stderr)
	return r
}

// finding is the part of a report finding the oracle compares. Values are
// kept as raw JSON text: the report's value fields may change type.
type finding struct {
	Stage, Cause, Severity, Topic string
	Partition                     int64
	Offset                        int64
	Key                           string
	Detail                        string
}

func (f finding) id() string {
	return fmt.Sprintf("%s/%s/%s %s/%d@%d %s", f.Stage, f.Cause, f.Severity, f.Topic, f.Partition, f.Offset, f.Key)
}

// outcome is what a run said, parsed robustly from a diff report or a
// ledger document on stdout.
type outcome struct {
	parsed   bool
	verdict  string // clean, loss, anomaly, incomplete; "" when no report
	missing  int    // missing_evidence entries
	findings []finding
}

// losses are the ids of the loss findings.
func (o outcome) losses() []string {
	var ids []string
	for _, f := range o.findings {
		if f.Severity == "loss" {
			ids = append(ids, f.id())
		}
	}
	sort.Strings(ids)
	return ids
}

// unreadable reports whether a finding names unreadable evidence.
func (o outcome) unreadable() bool {
	return slices.ContainsFunc(o.findings, func(f finding) bool { return f.Cause == "unreadable" })
}

// qualified reports whether the run said evidence was missing: an
// incomplete verdict, missing evidence or an unreadable finding.
func (o outcome) qualified() bool {
	return o.verdict == "incomplete" || o.missing > 0 || o.unreadable()
}

// str reads a JSON value as text whatever its type (string, number, null).
func str(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return fmt.Sprint(int64(v))
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func num(m map[string]any, k string) int64 {
	switch v := m[k].(type) {
	case float64:
		return int64(v)
	case string:
		var n int64
		fmt.Sscan(v, &n)
		return n
	}
	return -1
}

func toFindings(list any) []finding {
	arr, _ := list.([]any)
	var fs []finding
	for _, x := range arr {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		fs = append(fs, finding{Stage: str(m, "stage"), Cause: str(m, "cause"), Severity: str(m, "severity"), Topic: str(m, "topic"),
			Partition: num(m, "partition"), Offset: num(m, "offset"), Key: str(m, "key"), Detail: str(m, "detail")})
	}
	return fs
}

// parseOutcome reads a diff report (summary.verdict, findings), a ledger
// document (partitions[].findings; its verdict from the exit code) or a
// spec kaudit init drafted (no verdict; its notes on what it could not
// read are its missing evidence).
func parseOutcome(stdout string, code int) outcome {
	if strings.HasPrefix(stdout, "# kaudit spec, drafted by kaudit init") {
		return parseDraft(stdout)
	}
	var doc map[string]any
	if json.Unmarshal([]byte(stdout), &doc) != nil {
		return outcome{}
	}
	o := outcome{parsed: true}
	if s, ok := doc["summary"].(map[string]any); ok {
		o.verdict = str(s, "verdict")
		if m, ok := s["missing_evidence"].([]any); ok {
			o.missing = len(m)
		}
		o.findings = toFindings(doc["findings"])
		return o
	}
	o.findings = toFindings(doc["findings"])
	if ps, ok := doc["partitions"].([]any); ok {
		for _, p := range ps {
			if m, ok := p.(map[string]any); ok {
				o.findings = append(o.findings, toFindings(m["findings"])...)
			}
		}
	}
	switch code {
	case 0:
		o.verdict = "clean"
	case 1:
		o.verdict = "loss"
		if len(o.losses()) == 0 {
			o.verdict = "anomaly"
		}
	case 3:
		o.verdict = "incomplete"
	}
	return o
}

// parseDraft reads a drafted spec: the lines of its "Read from the
// evidence" section that say something was not read are missing evidence.
func parseDraft(stdout string) outcome {
	o := outcome{parsed: true, verdict: "draft"}
	notes := false
	for _, l := range strings.Split(stdout, "\n") {
		switch {
		case l == "# Read from the evidence:":
			notes = true
		case !strings.HasPrefix(l, "#   - "):
			notes = false
		case notes && draftMissing.MatchString(l):
			o.missing++
		}
	}
	return o
}

// draftMissing matches a draft's note on evidence it could not read.
var draftMissing = regexp.MustCompile(`not read|unreadable|could not be (read|decoded)|damaged|corrupt|CRC`)

// treeState is what a directory tree holds: per path its mode, size and
// content hash (a symlink's target; a file's sha256, read even when its
// mode is 000, since the probe runs as root or owns it).
func treeState(root string) (map[string]string, error) {
	st := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d", info.Mode(), info.Size())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			v += " -> " + t
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:])
		}
		if info.IsDir() {
			v = fmt.Sprintf("%v dir", info.Mode())
		}
		st[rel] = v
		return nil
	})
	return st, err
}

// sameTree lists what differs between two tree states.
func sameTree(a, b map[string]string) []string {
	var diff []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			diff = append(diff, "removed "+k)
		} else if v != w {
			diff = append(diff, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff = append(diff, "added "+k)
		}
	}
	sort.Strings(diff)
	return diff
}

// copyTree copies src into dst (regular files and dirs; symlinks as they are).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			return os.MkdirAll(t, 0o755)
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, t)
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(t, b, 0o644)
		}
	})
}

// ctxDone is a helper for the sections that poll a deadline.
func ctxDone(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

func trim(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
