package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExitAfterSignal: once a signal cancelled the run, the process exits
// with 130 after the grace, whatever the command is blocked in.
func TestExitAfterSignal(t *testing.T) {
	interrupted := make(chan struct{})
	exited := make(chan int, 1)
	var stderr bytes.Buffer
	go exitAfter(interrupted, time.Millisecond, &stderr, func(code int) { exited <- code })
	select {
	case <-exited:
		t.Fatal("exited before any signal")
	default:
	}
	close(interrupted)
	if code := <-exited; code != exitInterrupted {
		t.Errorf("exit %d, want %d", code, exitInterrupted)
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// TestNamedPipeInputs: a named pipe given where kaudit reads a file (a
// bundle's manifest, --spec, --topology, --baseline, a schema file, a log
// dir's checkpoint) is refused at once, as not a regular file, never
// opened and waited on.
func TestNamedPipeInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildKaudit(t)
	dir := t.TempDir()
	fifo := func(path string) string {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		return path
	}
	spec, _ := filepath.Abs("../../testdata/incidents/dropped.kaudit.yaml")
	snap, _ := filepath.Abs("../../testdata/incidents/dropped")

	bundle := filepath.Join(dir, "bundle")
	if err := os.Mkdir(bundle, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo(filepath.Join(bundle, "manifest.json"))
	schemas := filepath.Join(dir, "schemas")
	if err := os.Mkdir(schemas, 0o755); err != nil {
		t.Fatal(err)
	}
	fifo(filepath.Join(schemas, "1.avsc"))
	logDir := copyTree(t, bad("logdir/good"))
	fifo(filepath.Join(logDir, "log-start-offset-checkpoint"))

	for _, tt := range []struct {
		name string
		args []string
		want []int
	}{
		{"manifest.json", []string{"diff", "--snapshot", bundle, "--spec", spec}, []int{exitNotRun}},
		{"--spec", []string{"diff", "--snapshot", snap, "--spec", fifo(filepath.Join(dir, "spec.yaml"))}, []int{exitUsage}},
		{"--topology", []string{"diff", "--snapshot", snap, "--spec", spec, "--topology", fifo(filepath.Join(dir, "topology.txt"))}, []int{exitUsage}},
		{"--baseline", []string{"diff", "--snapshot", snap, "--spec", spec, "--baseline", fifo(filepath.Join(dir, "last.json"))}, []int{exitUsage}},
		{"a schema", []string{"diff", "--snapshot", snap, "--spec", spec, "--schemas", schemas}, []int{exitUsage, exitNotRun}},
		{"a checkpoint", []string{"ledger", "--log-dir", logDir, "--topic", "events"}, []int{exitClean, exitFindings, exitIncomplete, exitNotRun}},
		{"--command-config", []string{"topology", "--snapshot", snap, "--app-id", "kaudit-drill", "--command-config", fifo(filepath.Join(dir, "client.properties"))}, []int{exitClean, exitUsage}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.args...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = io.Discard, &stderr
			err := cmd.Run()
			if ctx.Err() != nil {
				t.Fatalf("kaudit %s blocked on the named pipe", strings.Join(tt.args, " "))
			}
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			ok := false
			for _, w := range tt.want {
				ok = ok || code == w
			}
			if !ok {
				t.Errorf("exit %d, want one of %v: %s", code, tt.want, stderr.String())
			}
			if code != exitClean && code != exitFindings && !strings.Contains(stderr.String(), "named pipe") {
				t.Errorf("stderr does not name the named pipe: %s", stderr.String())
			}
		})
	}
}
