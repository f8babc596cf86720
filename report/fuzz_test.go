package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzReadJSON: ReadJSON never panics, and whatever it accepts renders in
// every format and survives JSON → ReadJSON → JSON unchanged.
func FuzzReadJSON(f *testing.F) {
	for _, name := range []string{"clean.json.golden", "loss.json.golden", "incomplete.json.golden"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"findings":[{"stage":"source","cause":"x","offset":-1,"count":0}],"lineage":[{"finding":0}]}`))
	f.Add([]byte(`{"timeline":[{"start":0,"produced":1},{"start":9223372036854775807}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ReadJSON(bytes.NewReader(in))
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := JSON(&first, r); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("re-read of our own JSON: %v", err)
		}
		var second bytes.Buffer
		if err := JSON(&second, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("round trip changed the document:\n%s\n%s", first.Bytes(), second.Bytes())
		}
		for _, format := range Formats {
			var b bytes.Buffer
			if err := Render(&b, format, r, testOptions()); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		var b bytes.Buffer
		if err := TimelineSVG(&b, r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzParseVersion: parseVersion never panics and only accepts what it can
// print back as a prefix-equivalent version.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"3.6.1", "3.6", "v3.7.2-ccs", "4.0.0+build", "", "3", "a.b.c", "1.2.3.4", "-1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseVersion(s)
		if !ok {
			return
		}
		if v.major < 0 || v.minor < 0 || v.patch < 0 {
			t.Fatalf("%q parsed to negative %v", s, v)
		}
		for _, k := range KnownIssues {
			if st := k.Status(s); st == StatusUnknown {
				t.Fatalf("%q parses but %s cannot judge it", s, k.ID)
			}
		}
		if strings.Count(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".") < 1 {
			t.Fatalf("%q accepted with no minor version", s)
		}
	})
}
