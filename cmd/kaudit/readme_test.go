package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// readmeBlock is a fenced block of README.md or of a docs/*.md file
// marked runnable by a line <!-- runnable: exit N --> before it. Lines starting "$ " are commands,
// each followed by the output it prints; a block without them is a
// script, one command a line (a trailing \ continues it), comments and
// blank lines skipped. Every command must exit N.
type readmeBlock struct {
	file string // relative to the repository's root
	line int    // of the fence
	exit int
	cmds []readmeCmd
}

type readmeCmd struct {
	text   string
	output *string // nil: not printed, not compared
}

var runnableMark = regexp.MustCompile(`^<!-- runnable: exit (\d+) -->$`)

// docFiles are the documents whose runnable blocks are run: README.md
// and every docs/*.md, relative to the repository's root.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, strings.TrimPrefix(filepath.ToSlash(d), "../../"))
	}
	return out
}

func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	var out []readmeBlock
	for _, f := range docFiles(t) {
		out = append(out, fileBlocks(t, f)...)
	}
	return out
}

func fileBlocks(t *testing.T, file string) []readmeBlock {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []readmeBlock
	for i := 0; i < len(lines); i++ {
		m := runnableMark.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("%s:%d: a runnable mark not before a fenced block", file, i+1)
		}
		exit, _ := strconv.Atoi(m[1])
		blk := readmeBlock{file: file, line: i + 2, exit: exit}
		var body []string
		for i += 2; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		if len(body) > 0 && strings.HasPrefix(body[0], "$ ") {
			for _, l := range body {
				if cmd, ok := strings.CutPrefix(l, "$ "); ok {
					empty := ""
					blk.cmds = append(blk.cmds, readmeCmd{text: cmd, output: &empty})
					continue
				}
				o := blk.cmds[len(blk.cmds)-1].output
				*o += l + "\n"
			}
		} else {
			cont := ""
			for _, l := range body {
				if t := strings.TrimSpace(l); cont == "" && (t == "" || strings.HasPrefix(t, "#")) {
					continue
				}
				if s, ok := strings.CutSuffix(l, "\\"); ok {
					cont += s
					continue
				}
				blk.cmds = append(blk.cmds, readmeCmd{text: cont + l})
				cont = ""
			}
		}
		out = append(out, blk)
	}
	return out
}

// TestReadmeExamples runs the runnable blocks of README.md and docs/*.md
// exactly as printed,
// `go run ./cmd/kaudit` being the built binary, in a directory where
// testdata is the repository's, and compares what they print.
func TestReadmeExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	blocks := readmeBlocks(t)
	if len(blocks) < 3 {
		t.Fatalf("%d runnable blocks in README.md and docs/*.md, want at least 3", len(blocks))
	}
	bin := buildKaudit(t)
	binDir := filepath.Dir(bin)
	testdata, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, blk := range blocks {
		t.Run(blk.file+":"+strconv.Itoa(blk.line), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink(testdata, filepath.Join(dir, "testdata")); err != nil {
				t.Fatal(err)
			}
			for _, c := range blk.cmds {
				text := strings.ReplaceAll(c.text, "go run ./cmd/kaudit", "kaudit")
				cmd := exec.Command("sh", "-c", text)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				var ee *exec.ExitError
				if err != nil && !errors.As(err, &ee) {
					t.Fatal(err)
				}
				if code := cmd.ProcessState.ExitCode(); code != blk.exit {
					t.Errorf("%s\nexited %d, want %d; stderr:\n%s", c.text, code, blk.exit, lastLinesOf(stderr.String(), 5))
				}
				if c.output != nil && stdout.String() != *c.output {
					t.Errorf("%s\nprints\n%s\n%s says\n%s", c.text, stdout.String(), blk.file, *c.output)
				}
			}
		})
	}
}

func lastLinesOf(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestReadmeInstallFirst: a newcomer finds how to install and try kaudit
// near the top of README.md (issue AG, item 9): the demo, the tests and
// the install in one block within its first 40 lines, with a word on the
// network the first build needs and on the minutes the tests take; and the
// demo that block runs names the incident's losses through the built
// binary.
func TestReadmeInstallFirst(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	head := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{"go run ./cmd/kaudit demo", "go test ./...", "go install ./cmd/kaudit", "the network", "minutes", "Dockerfile"} {
		if !strings.Contains(head, want) {
			t.Errorf("README.md's first 40 lines lack %q", want)
		}
	}
	out, errOut, code := runBin(t, "", nil, "demo", "--format", "csv")
	if code != exitFindings || !strings.Contains(errOut, "the audit named exactly the 8 injected losses and anomalies") || !strings.Contains(out, "dropped,loss") {
		t.Errorf("the demo: exit %d\n%s", code, lastLinesOf(errOut, 3))
	}
}
