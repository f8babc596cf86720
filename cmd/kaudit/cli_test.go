package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mattn/go-runewidth"
	"golang.org/x/sys/unix"

	"github.com/kaudit/kaudit/audit"
)

// writeShards writes two shard reports, one with a loss, for merge.
func writeShards(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	shard := func(name string, p int32, fs ...audit.Finding) string {
		r := &audit.Report{AppID: "shop", Cut: []audit.PartitionCut{{Topic: "orders", Partition: p, Role: "source", Committed: 10, HW: 10}}, Findings: fs}
		r.Finish()
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	lost := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, audit.TopicPartition{Topic: "orders", Partition: 1}, 7)
	return shard("a.json", 0), shard("b.json", 1, lost)
}

func TestCLIConventions(t *testing.T) {
	a, b := writeShards(t)
	out := filepath.Join(t.TempDir(), "incident.md")
	missing := filepath.Join(t.TempDir(), "no-such-bundle")
	for _, tt := range []struct {
		name         string
		args         []string
		code         int
		stdout       string // a substring of stdout ("" for none wanted)
		stderr       string // a substring of stderr
		noStdout     bool
		stderrAtMost int // lines, 0 for any
	}{
		{name: "version flag", args: []string{"--version"}, code: exitClean, stdout: "built with go"},
		{name: "version command", args: []string{"version"}, code: exitClean, stdout: "built with go"},
		{name: "help", args: []string{"help"}, code: exitClean, stdout: "COMMANDS"},
		{name: "help diff", args: []string{"help", "diff"}, code: exitClean, stdout: "--bootstrap-server"},
		{name: "flags after arguments", args: []string{"merge", a, b, "--format", "md", "--output", out}, code: exitFindings, noStdout: true},
		{name: "output dash is stdout", args: []string{"merge", a, "--format", "json", "--output", "-"}, code: exitClean, stdout: `"verdict": "clean"`},
		{name: "arguments after --", args: []string{"merge", "--format", "json", "--", a}, code: exitClean, stdout: `"verdict"`},
		{name: "stray argument", args: []string{"diff", "--snapshot", missing, "--app-id", "shop", "stray"}, code: exitUsage,
			stderr: `takes no arguments, got ["stray"]`, noStdout: true, stderrAtMost: 2},
		{name: "bad flag: one line and a hint", args: []string{"diff", "--no-such-flag"}, code: exitUsage,
			stderr: "Run 'kaudit diff --help' for usage.", noStdout: true, stderrAtMost: 2},
		{name: "stray argument of a subcommand", args: []string{"spec", "check", "stray"}, code: exitUsage, stderr: "kaudit spec check takes no arguments"},
		{name: "help of a subcommand", args: []string{"spec", "check", "--help"}, code: exitClean, stdout: "--spec"},
		{name: "unknown command", args: []string{"difff"}, code: exitUsage, stderr: `unknown command "difff"`, noStdout: true, stderrAtMost: 2},
		{name: "missing snapshot: could not run, one prefix", args: []string{"diff", "--snapshot", missing, "--app-id", "shop"}, code: exitNotRun,
			stderr: "kaudit: open snapshot: read manifest", noStdout: true, stderrAtMost: 1},
		{name: "listener scheme", args: []string{"txns", "--app-id", "a", "--bootstrap-server", "PLAINTEXT://" + closedAddr(t), "--timeout", "300ms"}, code: exitNotRun,
			stderr: "reach bootstrap servers 127.0.0.1:"},
		{name: "unknown scheme", args: []string{"txns", "--app-id", "a", "--bootstrap-server", "HTTP://h:9092"}, code: exitUsage, stderr: "HTTP://"},
		{name: "scheme against security.protocol", args: []string{"txns", "--app-id", "a", "--bootstrap-server", "SSL://h:9092", "--command-property", "security.protocol=PLAINTEXT"},
			code: exitUsage, stderr: "security.protocol is PLAINTEXT"},
	} {
		t.Run(tt.name, func(t *testing.T) {
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
			if tt.noStdout && stdout != "" {
				t.Errorf("stdout not empty:\n%.400s", stdout)
			}
			if n := strings.Count(stderr, "\n"); tt.stderrAtMost > 0 && n > tt.stderrAtMost {
				t.Errorf("%d lines on stderr, want at most %d:\n%s", n, tt.stderrAtMost, stderr)
			}
			if strings.Contains(stderr, "open snapshot: open snapshot") {
				t.Errorf("doubled prefix: %s", stderr)
			}
		})
	}
	if b, err := os.ReadFile(out); err != nil || !strings.Contains(string(b), "# ") {
		t.Errorf("merge --output after the arguments: %v\n%.200s", err, b)
	}
}

// TestFlagOverridesEnv: a source flag on the command line wins over the
// KAUDIT_* variable of another source.
func TestFlagOverridesEnv(t *testing.T) {
	t.Setenv("KAUDIT_BOOTSTRAP_SERVER", closedAddr(t))
	_, stderr, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill", "--format", "json", "--output", filepath.Join(t.TempDir(), "r.json"))
	if code == exitUsage || code == exitNotRun || strings.Contains(stderr, "only one of") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// with no source on the command line, two variables are still two sources
	t.Setenv("KAUDIT_SNAPSHOT", "../../testdata/incidents/dropped")
	if _, stderr, code := runCLI(t, "diff", "--app-id", "kaudit-drill"); code != exitUsage || !strings.Contains(stderr, "only one of") {
		t.Errorf("two sources from the environment: exit %d: %s", code, stderr)
	}
}

// TestOutputMode: a report file is created 0666 less the umask, as any
// file a shell command writes.
func TestOutputMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	a, _ := writeShards(t)
	out := filepath.Join(t.TempDir(), "merged.json")
	if _, stderr, code := runCLI(t, "merge", a, "--output", out); code != exitClean {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o644 {
		t.Errorf("mode %o, want 644", m)
	}
}

// TestBinaryVersion builds kaudit and checks that the version names the
// commit it was built from (build info exists only in a built binary).
func TestBinaryVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "kaudit")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	b, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), "kaudit ") || !strings.Contains(string(b), "built with go") {
		t.Errorf("kaudit version:\n%s", b)
	}
	// the go command stamps the commit only where it can (-buildvcs)
	if m, _ := exec.Command("go", "version", "-m", bin).Output(); strings.Contains(string(m), "vcs.revision") && !strings.Contains(string(b), "commit ") {
		t.Errorf("kaudit version names no commit though the build info has one:\n%s", b)
	}
	v, err := exec.Command(bin, "--version").Output()
	if err != nil || string(v) != string(b) {
		t.Errorf("kaudit --version prints\n%s\nkaudit version\n%s(%v)", v, b, err)
	}
	cmd := exec.Command(bin, "merge", "--format")
	stderr, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != exitUsage || strings.Count(string(stderr), "\n") > 2 {
		t.Errorf("a usage error: exit %d\n%s", cmd.ProcessState.ExitCode(), stderr)
	}
}

// TestTableWidthCLI: the table fits $COLUMNS (the terminal's width where
// stdout is one) and --wide prints the detail whole.
// TestTableWidthCLI: piped, the table format is plain text, one line per
// finding, every cell whole, no box (as Kafka's own tools print); on a
// terminal, a box fitted to its width; on one too narrow for a box, a
// block per finding; --wide the box unwrapped. No line is wider than the
// terminal.
func TestTableWidthCLI(t *testing.T) {
	long := strings.TrimSpace(strings.Repeat("why this record is gone ", 10))
	f := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, audit.TopicPartition{Topic: "orders", Partition: 0}, 7)
	f.Detail = long
	f.Key = `"o-w1-0042"`
	r := &audit.Report{AppID: "shop", Cut: []audit.PartitionCut{{Topic: "orders", Partition: 0, Role: "source", Committed: 10, HW: 10}}, Findings: []audit.Finding{f}}
	r.Finish()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COLUMNS", "110")
	out, _, _ := runCLI(t, "merge", path, "--format", "table")
	if strings.ContainsAny(out, "│┌─") || !strings.Contains(out, long) || !strings.Contains(out, " o-w1-0042 ") {
		t.Errorf("piped: want plain lines with the detail and the key whole:\n%s", out)
	}
	for _, cols := range []uint16{110, 80, 60} {
		master, tty := openPTY(t)
		if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: cols}); err != nil {
			t.Fatal(err)
		}
		var drawn bytes.Buffer
		done := make(chan struct{})
		go func() { defer close(done); _, _ = io.Copy(&drawn, master) }()
		var errb bytes.Buffer
		code := run(t.Context(), []string{"kaudit", "merge", path, "--format", "table"}, tty, &errb)
		tty.Close()
		<-done
		if code != exitFindings {
			t.Fatalf("%d columns: exit %d: %s", cols, code, errb.String())
		}
		text := strings.ReplaceAll(drawn.String(), "\r", "")
		for _, l := range strings.Split(text, "\n") {
			if w := runewidth.StringWidth(l); w > int(cols) {
				t.Errorf("%d columns: a line %d wide: %s", cols, w, l)
			}
		}
		joined := strings.Join(strings.Fields(strings.NewReplacer("│", " ").Replace(text)), " ")
		if !strings.Contains(joined, "gone why this") || strings.Contains(joined, "…") {
			t.Errorf("%d columns: want the detail wrapped, not cut:\n%s", cols, text)
		}
		if box := strings.Contains(text, "│"); box != (cols >= 100) {
			t.Errorf("%d columns: a box %v", cols, box)
		}
	}
	if out, _, _ := runCLI(t, "merge", path, "--format", "table", "--wide"); !strings.Contains(out, long) {
		t.Errorf("--wide: the detail is not whole:\n%s", out)
	}
}

// TestBaselineAgrees: with --baseline, the header, the exit code and the
// Prometheus verdict judge the same findings: those new since then.
func TestBaselineAgrees(t *testing.T) {
	dir := t.TempDir()
	bundle := "../../testdata/incidents/dropped"
	base := filepath.Join(dir, "last-night.json")
	diff := []string{"diff", "--snapshot", bundle, "--spec", "../../testdata/incidents/dropped.kaudit.yaml", "-q"}
	_, stderr, code := runCLI(t, append(diff, "--format", "json", "--output", base)...)
	if code != exitFindings {
		t.Fatalf("the bundle's own audit: exit %d, want %d: %s", code, exitFindings, stderr)
	}
	prom, _, code := runCLI(t, append(diff, "--baseline", base, "--format", "prom")...)
	if code != exitClean {
		t.Fatalf("nothing new since the baseline: exit %d", code)
	}
	if !strings.Contains(prom, `kaudit_verdict{app_id="kaudit-drill",verdict="clean"} 1`) {
		t.Errorf("the metrics do not say what the exit code judged:\n%s", prom)
	}
	table, _, _ := runCLI(t, append(diff, "--baseline", base, "--format", "table")...)
	if first, _, _ := strings.Cut(table, "\n"); !strings.Contains(first, "CLEAN since the baseline") {
		t.Errorf("header %q", first)
	}
	md, _, _ := runCLI(t, append(diff, "--baseline", base, "--format", "md")...)
	if !strings.Contains(md, "Verdict on what is new since the baseline: CLEAN") {
		t.Errorf("the postmortem's verdict does not say what the exit code judged")
	}
}

// TestPromNotRun: a prom run that could not start still writes its
// metrics file, saying kaudit_run_success 0.
func TestPromNotRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "kaudit.prom")
	_, stderr, code := runCLI(t, "diff", "--snapshot", filepath.Join(t.TempDir(), "none"), "--app-id", "shop", "--format", "prom", "--output", out)
	if code != exitNotRun {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `kaudit_run_success{app_id="shop"} 0`) {
		t.Errorf("%v\n%s", err, b)
	}
}

// TestSinceSourceClock: --since counts back from the snapshot's capture
// time, not the wall clock, and the report says the window and how many
// inputs fell inside it.
func TestSinceSourceClock(t *testing.T) {
	diff := []string{"diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", "../../testdata/incidents/dropped.kaudit.yaml", "-q", "--format", "json"}
	for _, tt := range []struct {
		name  string
		args  []string
		code  int
		notes []string
	}{
		// the bundle was captured 2026-11-30T10:07:46Z; 20h before that holds every input
		{"since 20h", []string{"--since", "20h"}, exitFindings, []string{"from 2026-11-29T14:07:46Z", "durations count back from the source's clock, 2026-11-30T10:07:46Z", "inputs fell inside it"}},
		{"a window before every input", []string{"--until", "2000-01-01T00:00:00Z"}, exitClean, []string{"no input fell inside it"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runCLI(t, append(diff, tt.args...)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d: %s", code, tt.code, stderr)
			}
			var r audit.Report
			if err := decodeReport([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			notes := strings.Join(r.Summary.Notes, "\n")
			for _, want := range tt.notes {
				if !strings.Contains(notes, want) {
					t.Errorf("notes lack %q:\n%s", want, notes)
				}
			}
			if tt.code == exitFindings && strings.Contains(notes, "no input fell") {
				t.Errorf("a window with inputs says none: %s", notes)
			}
		})
	}
}

// TestProvenance: the postmortem says which kaudit ran which command line
// (secrets redacted) with which spec.
func TestProvenance(t *testing.T) {
	spec := "../../testdata/incidents/dropped.kaudit.yaml"
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	md, stderr, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", spec, "-q", "--format", "md",
		"--command-property", "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\" password=\"hunter2\";",
		"--command-property=ssl.truststore.passwrd=hunter3") // misspelt, still a secret
	if code != exitFindings {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, prov, ok := strings.Cut(md, "## Provenance")
	if !ok {
		t.Fatalf("no provenance:\n%s", md)
	}
	for _, want := range []string{"| kaudit | `", "--command-property 'sasl.jaas.config=[redacted]'", "'--command-property=ssl.truststore.passwrd=[redacted]'", fmt.Sprintf("%x", sha256.Sum256(b)), "snapshot ../../testdata/incidents/dropped"} {
		if !strings.Contains(prov, want) {
			t.Errorf("provenance lacks %q:\n%s", want, prov)
		}
	}
	if strings.Contains(md, "hunter2") || strings.Contains(md, "hunter3") {
		t.Error("a secret reached the report")
	}
	if got := redactValue("schema-registry-url", "https://user:pw@sr:8081/x"); got != "https://[redacted]@sr:8081/x" {
		t.Errorf("redacted URL %q", got)
	}
}

// FuzzSplitBootstrap: any --bootstrap-server value is read or refused,
// never half-read: every address it returns has no scheme left.
func FuzzSplitBootstrap(f *testing.F) {
	for _, s := range []string{"h:9092", "PLAINTEXT://h:9092,SSL://h2:9093", "sasl_ssl://a:1, b:2", "://", "HTTP://x", ",,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bs, proto, err := splitBootstrap([]string{s})
		if err != nil {
			return
		}
		for _, b := range bs {
			if strings.Contains(b, "://") && proto == "" {
				t.Errorf("%q: address %q keeps a scheme", s, b)
			}
		}
	})
}

// FuzzPermuteArgs: moving flags before arguments keeps every argument,
// in order, and never loses or invents one.
func FuzzPermuteArgs(f *testing.F) {
	for _, s := range []string{"merge a.json b.json --format md --output x.md", "diff --snapshot d -- -x", "--cpuprofile p diff stray", "spec check --spec s x", "help diff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := append([]string{"kaudit"}, strings.Fields(s)...)
		out, _ := permuteArgs(newApp(io.Discard, io.Discard), args)
		a, b := slices.Clone(args[1:]), slices.DeleteFunc(slices.Clone(out[1:]), func(x string) bool { return x == "--" })
		a = slices.DeleteFunc(a, func(x string) bool { return x == "--" })
		slices.Sort(a)
		slices.Sort(b)
		if !slices.Equal(a, b) {
			t.Errorf("%q became %q", args, out)
		}
	})
}
