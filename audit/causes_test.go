package audit

import (
	"os"
	"strings"
	"testing"
)

// TestFindingsTableMatchesCauseDocs holds README.md's findings table to
// the vocabulary: every cause once, in the order of Causes, with its
// stages, severity and meaning exactly as CauseDoc and Severity say, and
// nothing else. A cause added to the code without its row (or a row edited
// by hand) fails here.
func TestFindingsTableMatchesCauseDocs(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const header = "| cause | stage | severity | meaning |"
	lines := strings.Split(string(b), "\n")
	start := -1
	for i, l := range lines {
		if l == header {
			if start >= 0 {
				t.Fatalf("README.md:%d: a second findings table", i+1)
			}
			start = i
		}
	}
	if start < 0 {
		t.Fatalf("README.md holds no findings table (a line %q)", header)
	}
	var rows [][]string
	for i := start + 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		cells := strings.Split(strings.Trim(lines[i], "|"), " | ")
		if len(cells) != 4 {
			t.Fatalf("README.md:%d: %d cells, want 4 (no | inside a cell): %s", i+1, len(cells), lines[i])
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, cells)
	}
	for i, c := range Causes {
		d, ok := c.Doc()
		if !ok {
			t.Errorf("%s: no CauseDoc", c)
			continue
		}
		want := []string{"`" + string(c) + "`", d.StagesText(), string(c.Severity()), d.Meaning}
		if i >= len(rows) {
			t.Errorf("README.md's findings table lacks a row for %s:\n| %s |", c, strings.Join(want, " | "))
			continue
		}
		for j, col := range []string{"cause", "stage", "severity", "meaning"} {
			if rows[i][j] != want[j] {
				t.Errorf("README.md's findings table, row %d (%s), %s:\n got %s\nwant %s", i+1, c, col, rows[i][j], want[j])
			}
		}
	}
	for _, r := range rows[min(len(rows), len(Causes)):] {
		t.Errorf("README.md's findings table has a row for no cause of the vocabulary: %s", r[0])
	}
}

// TestCauseDocs checks the vocabulary itself: every cause has a doc with
// stages in pipeline order, a meaning that fits the table, and a phrase;
// no doc is for a cause outside Causes.
func TestCauseDocs(t *testing.T) {
	rank := map[Stage]int{}
	for i, s := range Stages {
		rank[s] = i + 1
	}
	for _, c := range Causes {
		d, ok := c.Doc()
		if !ok {
			t.Errorf("%s: no CauseDoc", c)
			continue
		}
		if len(d.Stages) == 0 {
			t.Errorf("%s: no stage", c)
		}
		for i, s := range d.Stages {
			if rank[s] == 0 || i > 0 && rank[s] <= rank[d.Stages[i-1]] {
				t.Errorf("%s: stages %v not known stages in pipeline order", c, d.Stages)
			}
		}
		if d.Meaning == "" || strings.Contains(d.Meaning, "|") || strings.HasSuffix(d.Meaning, ".") {
			t.Errorf("%s: meaning %q: not empty, no |, no final period", c, d.Meaning)
		}
		if d.Phrase == "" {
			t.Errorf("%s: no phrase", c)
		}
		if !strings.HasPrefix(c.Explain(), strings.ToUpper(d.Meaning[:1])) {
			t.Errorf("%s: Explain does not start with the meaning: %q", c, c.Explain())
		}
	}
	if len(causeDocs) != len(Causes) {
		t.Errorf("%d CauseDocs for %d causes", len(causeDocs), len(Causes))
	}
	if Cause("made-up").Explain() != "" {
		t.Error("an unknown cause has a paragraph")
	}
}
