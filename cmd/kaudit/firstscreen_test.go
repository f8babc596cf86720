package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
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
			screen := steady(mdFirstScreen(out))
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
