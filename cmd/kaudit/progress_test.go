package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestProgressSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	if p, _ := newProgress(&buf, false); p != nil {
		t.Error("progress bars on a buffer, which is not a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, _ := newProgress(f, false); p != nil {
		t.Error("progress bars on a file, which is not a terminal")
	}
}

func TestProgressBars(t *testing.T) {
	var buf bytes.Buffer
	b := newProgressBars(&buf)
	b.Expect("source", 60)
	b.Expect("source", 40)
	b.Expect("changelog", 7)
	b.Read("source", 30)
	b.Read("source", 70)
	b.Read("changelog", 7)
	b.stop()
	out := buf.String()
	for _, want := range []string{"source", "100 / 100", "changelog", "7 / 7", "rec/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%s", want, out)
		}
	}
}

// openPTY opens a pseudo-terminal: the program writes to tty as to a
// terminal, the test reads what it drew from master.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlock the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("name the pseudo-terminal: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100}); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestDemoProgressOnTerminal: on a terminal, kaudit demo shows what it
// is doing while it writes its incident and while it audits it.
func TestDemoProgressOnTerminal(t *testing.T) {
	master, tty := openPTY(t)
	var drawn bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(&drawn, master) // until the terminal closes
	}()
	var stdout bytes.Buffer
	err := runDemo(t.Context(), demoOptions{Outputs: []output{{Format: "csv"}}, Records: 60}, &stdout, tty)
	if exitCode(t.Context(), err) != exitFindings {
		t.Fatalf("demo: %v", err)
	}
	tty.Close()
	master.Close()
	<-done
	for _, want := range []string{"writing 180 records", "source", "repartition", "changelog"} {
		if !strings.Contains(drawn.String(), want) {
			t.Errorf("the terminal shows no %q:\n%q", want, drawn.String())
		}
	}
}
