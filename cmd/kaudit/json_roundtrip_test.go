package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestJSONRoundTrip: a report written as JSON and read back by kaudit merge
// renders as the audit itself did: the same CSV byte for byte, and the same
// Markdown but for the provenance (the command line and spec are merge's)
// and the order of the cut (merge sorts it). Keys, values and lineage
// markers survive the JSON values.
func TestJSONRoundTrip(t *testing.T) {
	diff := []string{"diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", "../../testdata/incidents/dropped.kaudit.yaml"}
	js := filepath.Join(t.TempDir(), "r.json")
	if _, errOut, code := runCLI(t, append(diff, "--format", "json", "--output", js)...); code != exitFindings {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"actual": "no copy"`) || !strings.Contains(string(b), `"key": "o-w1-0042"`) {
		t.Fatal("the incident's JSON has no lineage marker or string key to round-trip")
	}
	for _, format := range []string{"csv", "md"} {
		direct, _, _ := runCLI(t, append(diff, "--format", format)...)
		merged, errOut, code := runCLI(t, "merge", js, "--format", format)
		if code != exitFindings {
			t.Fatalf("merge exit %d: %s", code, errOut)
		}
		if format == "csv" {
			if merged != direct {
				t.Errorf("csv from JSON differs:\n%s\nfrom the audit:\n%s", merged, direct)
			}
			continue
		}
		keep := func(s string) []string {
			var out []string
			for _, l := range strings.Split(s, "\n") {
				if !strings.HasPrefix(l, "| command line") && !strings.HasPrefix(l, "| spec |") {
					out = append(out, l)
				}
			}
			slices.Sort(out)
			return out
		}
		if g, w := keep(merged), keep(direct); !slices.Equal(g, w) {
			for _, l := range g {
				if !slices.Contains(w, l) {
					t.Errorf("markdown from JSON has %q", l)
				}
			}
		}
	}
}
