package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
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
