package main

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mattn/go-runewidth"
	"golang.org/x/sys/unix"
)

// The on-call engineer's first screens (issue AG): what the built binary
// prints first on the bundled incident and on the demo, held to goldens
// under testdata/ (go test ./cmd/kaudit -run FirstScreen -update renews
// them).

var (
	sharedBin     string
	sharedBinErr  error
	sharedBinOnce sync.Once
)

// sharedKaudit is one binary built for the tests that run it as a user
// does; it lives in a folder TestMain removes.
func sharedKaudit(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	sharedBinOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kaudit-bin-")
		if err != nil {
			sharedBinErr = err
			return
		}
		binDirs = append(binDirs, dir)
		bin := filepath.Join(dir, "kaudit")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			sharedBinErr = errors.New("go build: " + err.Error() + "\n" + string(out))
			return
		}
		sharedBin = bin
	})
	if sharedBinErr != nil {
		t.Fatal(sharedBinErr)
	}
	return sharedBin
}

// binDirs are the folders sharedKaudit made, removed after the tests.
var binDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range binDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// runBin runs the built binary with args in dir ("" for the package's) and
// extra environment; it returns stdout, stderr and the exit code.
func runBin(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(sharedKaudit(t), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return out.String(), errb.String(), cmd.ProcessState.ExitCode()
}

// mdFirstScreen is a postmortem up to its details: the verdict, the
// warnings, the losses and anomalies, and what to do next.
func mdFirstScreen(md string) string {
	if i := strings.Index(md, "\n## How to do it"); i >= 0 {
		return md[:i+1]
	}
	if i := strings.Index(md, "\n## Findings by cause"); i >= 0 {
		return md[:i+1]
	}
	return md
}

// demoVarying are what changes from one demo run to the next: the clock
// (the demo writes its incident now), the in-process broker's port.
var demoVarying = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d(\.\d+)?Z?)?`), "TIME"},
	{regexp.MustCompile(`\d\d:\d\d:\d\d`), "TIME"},
	{regexp.MustCompile(`\d\d:\d\d UTC`), "TIME UTC"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
}

func steady(s string) string {
	for _, v := range demoVarying {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// TestFirstScreenGolden: the postmortem's first screen on the bundled
// incident and on the demo. On the incident (the app swallowed five
// orders in a processor) it says the app's own processing dropped them and
// puts finding why before the replay, since a replay into the app as it is
// drops them again (item 1); on the demo, the hanging transaction on the
// app's output comes first, stalling its downstream consumers, not the app
// (item 7), and the steps follow the findings' urgency.
func TestFirstScreenGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		exit int
		want []string // in this order
	}{
		{"dropped", []string{"diff", "--snapshot", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill", "--format", "md"}, exitFindings,
			[]string{"**Where:** 6 in the app's own processing", "1. **Find why the app wrote nothing for 6 inputs it consumed, and fix it before any replay**", "2. **Then replay 6 records"}},
		{"demo", []string{"demo", "--format", "md"}, exitFindings,
			[]string{"1. **Abort 1 hanging transaction now**", "every read\\_committed consumer of order-status (downstream of the app)", "**Find why the app wrote nothing for 1 input", "**Then replay 5 records", "**Let the application catch up**"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runBin(t, "", nil, c.args...)
			if code != c.exit {
				t.Fatalf("exit %d, want %d: %s", code, c.exit, lastLinesOf(errOut, 5))
			}
			screen := mdFirstScreen(out)
			if c.name == "demo" {
				screen = steady(screen) // the bundled incident's clock is its capture's
			}
			checkGolden(t, "firstscreen-"+c.name+".md.golden", []byte(screen))
			at := 0
			for _, w := range c.want {
				i := strings.Index(screen[at:], w)
				if i < 0 {
					t.Errorf("the first screen lacks %q after offset %d", w, at)
					continue
				}
				at += i
			}
			if strings.Contains(screen, "stalls behind it") && c.name == "demo" {
				t.Error("the demo's hanging transaction is on the app's output: its downstream consumers stall, not the app")
			}
		})
	}
}

// TestMissingGroupIsNotNotLost: evidence that lacks the group is never
// read as "pending, not lost" (item 2). A typo'd --app-id on the bundled
// incident is a usage error naming the group the bundle holds, with a
// did-you-mean, and no report; the bundle read as log dirs, which hold no
// __consumer_offsets, is incomplete with pending not known: its first
// screen (a golden) says no record is lag, none "not lost".
func TestMissingGroupIsNotNotLost(t *testing.T) {
	out, errOut, code := runBin(t, "", nil, "diff", "--snapshot", "../../testdata/incidents/dropped", "--app-id", "kaudit-dril")
	if code != exitUsage || out != "" {
		t.Errorf("a typo'd --app-id: exit %d, want %d with nothing on stdout:\n%s", code, exitUsage, out)
	}
	for _, want := range []string{`"kaudit-dril"`, "its groups: kaudit-drill", `did you mean "kaudit-drill"?`} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the error lacks %q:\n%s", want, errOut)
		}
	}
	md, errOut, code := runBin(t, "", nil, "diff", "--log-dir", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill", "--format", "md")
	if code != exitIncomplete {
		t.Fatalf("log dirs without __consumer_offsets: exit %d, want %d: %s", code, exitIncomplete, lastLinesOf(errOut, 5))
	}
	screen := mdFirstScreen(md)
	checkGolden(t, "firstscreen-no-group.md.golden", []byte(screen))
	for _, bad := range []string{"pending; not lost", "lag, not loss", "Let the application catch up", "records are pending"} {
		if strings.Contains(screen, bad) {
			t.Errorf("without the group's offsets the first screen says %q", bad)
		}
	}
	for _, want := range []string{"the group's committed offsets are missing", "**Do not read the lag as \"not lost\"**"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the first screen lacks %q", want)
		}
	}
	js, _, _ := runBin(t, "", nil, "diff", "--log-dir", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill", "--format", "json")
	if !strings.Contains(js, `"pending_unknown": true`) || strings.Contains(js, `"cause": "pending"`) {
		t.Errorf("the JSON report counts pending records the cut does not define:\n%.600s", js)
	}
}

// TestTerminalFirstScreen: the table format's first lines on the bundled
// incident (item 5): the verdict, what to do next, then the findings,
// losses before information; --min-severity loss leaves the information
// out, counted; the bundle's one note on the commit history is one line
// (item 12). Piped, held to goldens; on a 120-column terminal, the steps
// come before the findings, no line is wider than the terminal, and the
// screen ends with where the postmortem is.
func TestTerminalFirstScreen(t *testing.T) {
	args := []string{"diff", "--snapshot", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill"}
	for _, c := range []struct {
		name  string
		extra []string
	}{{"table", nil}, {"table-loss", []string{"--min-severity", "loss"}}} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := runBin(t, "", nil, append(args, c.extra...)...)
			if code != exitFindings {
				t.Fatalf("exit %d: %s", code, lastLinesOf(errOut, 5))
			}
			checkGolden(t, "firstscreen-dropped-"+c.name+".txt.golden", []byte(out))
			lines := strings.Split(out, "\n")
			if !strings.HasPrefix(lines[0], "kaudit kaudit-drill: LOSS: 6 records vanished") || lines[1] != "What to do next:" || !strings.HasPrefix(lines[2], "  1. Find why the app wrote nothing") {
				t.Errorf("the first lines:\n%s", strings.Join(lines[:min(4, len(lines))], "\n"))
			}
			loss, info := strings.Index(out, " loss "), strings.Index(out, " info ")
			if loss < 0 || (info >= 0 && info < loss) {
				t.Error("an info row before the losses")
			}
			if c.name == "table-loss" && (info >= 0 || !strings.Contains(out, "… 1 findings below --min-severity loss not shown")) {
				t.Error("--min-severity loss shows information, or does not count what it leaves out")
			}
			if n := strings.Count(out, "NOTE:"); n != 2 || strings.Contains(out, "format 1") {
				t.Errorf("%d notes, want 2 (the inferred spec, the commit history in one line):\n%s", n, out)
			}
		})
	}
	if _, errOut, code := runBin(t, "", nil, append(args, "--min-severity", "worst")...); code != exitUsage || !strings.Contains(errOut, "--min-severity") {
		t.Errorf("--min-severity worst: exit %d: %s", code, errOut)
	}
	master, tty := openPTY(t)
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 120}); err != nil {
		t.Fatal(err)
	}
	var drawn bytes.Buffer
	done := make(chan struct{})
	go func() { defer close(done); _, _ = io.Copy(&drawn, master) }()
	cmd := exec.Command(sharedKaudit(t), args...)
	cmd.Stdout, cmd.Stderr = tty, io.Discard
	_ = cmd.Run()
	tty.Close()
	<-done
	text := strings.ReplaceAll(drawn.String(), "\r", "")
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	steps := slices.IndexFunc(lines, func(l string) bool { return l == "What to do next:" })
	box := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "┌") })
	if steps != 1 || box < steps {
		t.Errorf("on a terminal the steps (line %d) are not before the findings (line %d):\n%s", steps, box, text)
	}
	for _, l := range lines {
		if w := runewidth.StringWidth(l); w > 120 {
			t.Errorf("a line %d wide on a 120-column terminal: %s", w, l)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "--output incident.md") {
		t.Errorf("the screen ends %q: no word of the postmortem", last)
	}
}

// TestInferredSpecProvenance: the README's first command (--app-id alone)
// and --save-spec on the bundled incident say in the postmortem's
// provenance that the spec was inferred, with the sha256 of the very text
// --save-spec wrote and where it wrote it, never "spec: none" (item 3).
func TestInferredSpecProvenance(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "inferred.yaml")
	md, errOut, code := runBin(t, "", nil, "diff", "--snapshot", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill", "--format", "md", "--save-spec", saved)
	if code != exitFindings {
		t.Fatalf("exit %d: %s", code, lastLinesOf(errOut, 5))
	}
	b, err := os.ReadFile(saved)
	if err != nil {
		t.Fatal(err)
	}
	row := ""
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| spec |") {
			row = l
		}
	}
	want := fmt.Sprintf("inferred from the evidence (no --spec), sha256 `%x`", sha256.Sum256(b))
	if !strings.Contains(row, want) || !strings.Contains(row, "saved with each guess") || !strings.Contains(row, "inferred.yaml") || strings.Contains(row, "none") {
		t.Errorf("the provenance's spec row\n%s\nlacks %q or where it was saved", row, want)
	}
}

// TestCaptureLogDirsWithoutGroup: kaudit capture of the bundled
// incident's records read as log dirs, which hold no __consumer_offsets
// (item 4): without the group's offsets the app's source topics are not
// known, so every topic but internal ones is captured (the sources a
// replay needs and retention takes first, and the output), each named; the
// capture is incomplete and never says it holds every record of the cut;
// the count of what was not captured is the count of the lines that say
// so (the optional commit log apart); and its cut is as of the evidence's
// last record, not when the files were copied.
func TestCaptureLogDirsWithoutGroup(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bundle")
	stdout, stderr, code := runBin(t, "", nil, "capture", "--log-dir", "../../testdata/incidents/dropped", "--app-id", "kaudit-drill", "--out", out)
	if code != exitIncomplete {
		t.Fatalf("exit %d, want %d: %s", code, exitIncomplete, stderr)
	}
	for _, topic := range []string{"orders", "payments", "shipments", "order-status"} {
		if _, err := os.Stat(filepath.Join(out, topic+"-0")); err != nil {
			t.Errorf("%s not captured: %v", topic, err)
		}
		if !strings.Contains(stderr, topic+" captured: without the group's offsets") {
			t.Errorf("the capture does not say why it took %s", topic)
		}
	}
	if strings.Contains(stdout, "holds every record of the cut") {
		t.Errorf("an incomplete capture says it holds every record of the cut:\n%s", stdout)
	}
	needed := strings.Count(stderr, "kaudit capture: not captured: ")
	if want := fmt.Sprintf("%d pieces of evidence were not captured", needed); needed == 0 || !strings.Contains(stderr, want) {
		t.Errorf("%d lines say what was not captured; the summary does not say %q:\n%s", needed, want, stderr)
	}
	if !strings.Contains(stdout, "the cut as of 2026-11-30T10:07:41Z") {
		t.Errorf("the cut's time is not the evidence's last record:\n%s", stdout)
	}
}
