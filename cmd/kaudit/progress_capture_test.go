package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestCaptureBar(t *testing.T) {
	var buf bytes.Buffer
	c := newCaptureBar(&buf)
	c.update(0, 10)
	c.update(5, 10)
	c.update(10, 10)
	c.done()
	for _, want := range []string{"capture", "10 / 10 offsets", "100 %"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("progress output lacks %q:\n%q", want, buf.String())
		}
	}
}
