package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIConventionsW holds the commands to one set of conventions: help
// exits 0; a usage error prints nothing on stdout and one line and a hint
// on stderr, with its command named once and the closest command
// suggested; bad formats and output folders fail before the work;
// KAUDIT_FORMAT, set for diff, does not break the commands with formats
// of their own; each command's help says its own exit status.
func TestCLIConventionsW(t *testing.T) {
	snap := "../../testdata/incidents/dropped"
	spec := "../../testdata/incidents/dropped.kaudit.yaml"
	dir := t.TempDir()
	for _, tt := range []struct {
		name           string
		env            map[string]string
		args           []string
		code           int
		stdout, stderr string
		noStdout       bool
		notStderr      string
	}{
		{name: "--help", args: []string{"--help"}, code: exitClean, stdout: "COMMANDS:"},
		{name: "-h", args: []string{"-h"}, code: exitClean, stdout: "COMMANDS:"},
		{name: "a typo of a command", args: []string{"dif"}, code: exitUsage, stderr: `did you mean "diff"?`, noStdout: true},
		{name: "a typo of a subcommand", args: []string{"spec", "chek"}, code: exitUsage, stderr: `did you mean "spec check"?`, noStdout: true},
		{name: "help spec lists check", args: []string{"help", "spec"}, code: exitClean, stdout: "check"},
		{name: "help spec check", args: []string{"help", "spec", "check"}, code: exitClean, stdout: "--spec"},
		{name: "ledger without --topic", args: []string{"ledger", "--snapshot", snap}, code: exitUsage, stderr: "needs --topic", noStdout: true},
		{name: "one prefix", args: []string{"txns", "--snapshot", snap}, code: exitUsage, stderr: "kaudit txns: --app-id", notStderr: "kaudit: kaudit", noStdout: true},
		{name: "a bad format before the work", args: []string{"diff", "--snapshot", snap, "--spec", spec, "--format", "xml"}, code: exitUsage, stderr: `--format "xml"`, noStdout: true},
		{name: "a missing output folder before the work", args: []string{"diff", "--snapshot", snap, "--spec", spec, "--output", filepath.Join(dir, "no", "x.md")},
			code: exitUsage, stderr: "the folder " + filepath.Join(dir, "no") + " does not exist", notStderr: "timeline.svg", noStdout: true},
		{name: "demo: a missing output folder before the work", args: []string{"demo", "--output", filepath.Join(dir, "no", "x.html")},
			code: exitUsage, stderr: "does not exist", noStdout: true},
		{name: "demo: a bad format before the work", args: []string{"demo", "--format", "xml"}, code: exitUsage, stderr: `--format "xml"`, noStdout: true},
		{name: "KAUDIT_FORMAT=md and topology", env: map[string]string{"KAUDIT_FORMAT": "md"}, args: []string{"topology", "--snapshot", snap, "--app-id", "kaudit-drill"},
			code: exitClean, stdout: "TOPIC"},
		{name: "KAUDIT_FORMAT=md and ledger", env: map[string]string{"KAUDIT_FORMAT": "md"}, args: []string{"ledger", "--snapshot", snap, "--topic", "orders"},
			code: exitClean, stdout: "orders"},
		{name: "KAUDIT_FORMAT=json serves ledger", env: map[string]string{"KAUDIT_FORMAT": "json"}, args: []string{"ledger", "--snapshot", snap, "--topic", "orders"},
			code: exitClean, stdout: `"topic": "orders"`},
		{name: "topology reads the bundle's topology", args: []string{"topology", "--snapshot", snap, "--app-id", "kaudit-drill"}, code: exitClean,
			stdout: "order-status", notStderr: "not known without a topology"},
		{name: "init: a typo of the app id", args: []string{"init", "--snapshot", snap, "--app-id", "kaudit-dril"}, code: exitUsage,
			stderr: `did you mean "kaudit-drill"?`, noStdout: true},
		{name: "--since 1d", args: []string{"diff", "--snapshot", snap, "--spec", spec, "--since", "1d", "--format", "json"}, code: exitFindings},
		{name: "init's help has no verdict", args: []string{"help", "init"}, code: exitClean, stdout: "the draft is written"},
		{name: "topology's help has no verdict", args: []string{"help", "topology"}, code: exitClean, stdout: "0    shown"},
		{name: "demo's help names html", args: []string{"help", "demo"}, code: exitClean, stdout: "html"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			stdout, stderr, code := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %.400s\nstderr: %s", code, tt.code, stdout, stderr)
			}
			if tt.stdout != "" && !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%.600s", tt.stdout, stdout)
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr)
			}
			if tt.notStderr != "" && strings.Contains(stderr, tt.notStderr) {
				t.Errorf("stderr has %q:\n%s", tt.notStderr, stderr)
			}
			if tt.noStdout && stdout != "" {
				t.Errorf("stdout not empty:\n%.400s", stdout)
			}
			if strings.Contains(tt.name, "has no verdict") && strings.Contains(stdout, "verdict") {
				t.Errorf("the help speaks of a verdict:\n%s", stdout)
			}
		})
	}
}

// TestDemoWritesWhatOutputNames: kaudit demo --output x.html writes the
// HTML postmortem, --output x.md the Markdown, and its provenance has the
// command line.
func TestDemoWritesWhatOutputNames(t *testing.T) {
	dir := t.TempDir()
	html, md := filepath.Join(dir, "x.html"), filepath.Join(dir, "x.md")
	if _, stderr, code := runCLI(t, "demo", "--output", html, "--output", md); code != exitFindings {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	h, err := os.ReadFile(html)
	if err != nil || !strings.HasPrefix(string(h), "<!DOCTYPE html>") {
		t.Errorf("x.html is not HTML: %.100s (%v)", h, err)
	}
	m, err := os.ReadFile(md)
	if err != nil || !strings.HasPrefix(string(m), "# kaudit postmortem: shop") {
		t.Errorf("x.md is not the Markdown postmortem: %.100s (%v)", m, err)
	}
	if !strings.Contains(string(m), "| command line (secrets redacted) | `kaudit demo --output") {
		t.Error("the demo's provenance has no command line")
	}
}
