package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kaudit/kaudit/audit"
)

// TestTallyAddsUp checks, on every golden report, that the numbers add
// up and that every format states the same ones: the vanished records
// split exactly into replayable, gone, outputs and unplaced; the
// postmortem's verdict, its table of losses, its replay and recovery
// tables, its timeline and its pipeline agree with the tally; the table
// format, the metrics and the JSON say the same numbers.
func TestTallyAddsUp(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.report()
			tl := TallyOf(r)
			if tl.Replayable+tl.Gone+tl.Outputs+tl.Unplaced != tl.Vanished {
				t.Errorf("replayable %d + gone %d + outputs %d + unplaced %d != vanished %d", tl.Replayable, tl.Gone, tl.Outputs, tl.Unplaced, tl.Vanished)
			}
			if tl.Vanished != r.Summary.Vanished || tl.Pending != r.Summary.Pending {
				t.Errorf("tally vanished %d pending %d, the engine's summary %d %d", tl.Vanished, tl.Pending, r.Summary.Vanished, r.Summary.Pending)
			}
			var byStage, byCause int64
			for _, n := range tl.LossByStage {
				byStage += n
			}
			for _, n := range tl.LossByCause {
				byCause += n
			}
			if byStage != tl.Vanished || byCause != tl.Vanished {
				t.Errorf("by stage %d, by cause %d, vanished %d", byStage, byCause, tl.Vanished)
			}
			if total(tl.Replay) > tl.Replayable || total(tl.GoneRanges) > tl.Gone {
				t.Errorf("ranges hold more offsets (%d, %d) than the findings (%d, %d)", total(tl.Replay), total(tl.GoneRanges), tl.Replayable, tl.Gone)
			}
			if tl.Timed > tl.Vanished-tl.Gone-tl.Outputs-tl.Unplaced+countGoneTimed(r) {
				t.Errorf("the timeline places %d vanished inputs, more than the %d read", tl.Timed, tl.Vanished)
			}
			if len(r.Edges) > 0 && len(r.Timeline) > 0 {
				var fromSources int64
				for _, e := range r.Edges {
					if role(r, e.From) == "source" {
						fromSources += e.Records
					}
				}
				if fromSources != tl.Judged {
					t.Errorf("the pipeline's hops out of the sources count %d inputs, the timeline %d", fromSources, tl.Judged)
				}
			}
			if recs := r.Summary.Records; recs["read"] > 0 {
				var pendingAtSource int64
				for _, f := range r.Findings {
					if f.Cause == audit.CausePending && f.Stage == audit.StageSource {
						pendingAtSource += max(f.Count, 1)
					}
				}
				if recs["read"]-recs["consumed"] != pendingAtSource {
					t.Errorf("read %d - consumed %d != %d pending at the sources", recs["read"], recs["consumed"], pendingAtSource)
				}
			}

			// the postmortem
			md := string(renderMarkdown(t, r, testOptions()))
			head := md[:strings.Index(md, "\n## ")]
			d := readDoc(t, []byte(md))
			if tl.Vanished > 0 {
				for _, want := range []string{plural(tl.Vanished, "record") + " vanished", fmt.Sprintf("%d can be replayed", tl.Replayable),
					pluralVerb(tl.Gone, "is gone", "are gone")} {
					if (want != "0 are gone" && want != "0 can be replayed") && !strings.Contains(head, want) {
						t.Errorf("the verdict paragraph lacks %q:\n%s", want, head)
					}
				}
			} else if !strings.Contains(head, "Nothing vanished") {
				t.Errorf("the verdict paragraph does not say nothing vanished:\n%s", head)
			}
			var lossRows int64
			for _, row := range d.tables["Losses and anomalies"] {
				if row[0] == "loss" {
					lossRows += atoi(t, row[4])
				}
			}
			if lossRows != tl.Vanished {
				t.Errorf("the table of losses adds up to %d records, the verdict says %d", lossRows, tl.Vanished)
			}
			if got := sumColumn(t, d.tables["Replay the vanished inputs that Kafka still holds"], 4); got != total(tl.Replay) {
				t.Errorf("the replay table holds %d records, the tally %d", got, total(tl.Replay))
			}
			if got := sumColumn(t, d.tables["Recover what Kafka no longer holds"], 4); got != total(tl.GoneRanges) {
				t.Errorf("the recovery table holds %d offsets, the tally %d", got, total(tl.GoneRanges))
			}
			if rows := d.tables["Timeline"]; len(rows) > 0 {
				last := rows[len(rows)-1]
				if atoi(t, last[4]) != tl.Timed || atoi(t, last[1]) != tl.Judged {
					t.Errorf("the timeline's total %q, the tally places %d of %d judged", last, tl.Timed, tl.Judged)
				}
				if tl.Timed != tl.Vanished && !strings.Contains(md, fmt.Sprintf("places %d of the %d vanished records", tl.Timed, tl.Vanished)) {
					t.Error("the timeline does not say why it places fewer vanished records than the verdict")
				}
			}
			for _, m := range regexp.MustCompile(`(\d+) records vanished`).FindAllStringSubmatch(md, -1) {
				if m[1] != num(tl.Vanished) {
					t.Errorf("the postmortem says %s records vanished and %d", m[1], tl.Vanished)
				}
			}

			// the table, the metrics and the JSON
			var b bytes.Buffer
			if err := TableWith(&b, r, Options{Plain: true}); err != nil {
				t.Fatal(err)
			}
			line := strings.SplitN(b.String(), "\n", 2)[0]
			if !strings.Contains(line, strings.ToUpper(string(tl.Verdict))) || (tl.Vanished > 0 && !strings.Contains(line, plural(tl.Vanished, "record")+" vanished")) {
				t.Errorf("the table's verdict line %q", line)
			}
			if tl.Replayable > 0 && !strings.Contains(line, fmt.Sprintf("%d replayable", tl.Replayable)) {
				t.Errorf("the table's verdict line %q does not say %d replayable", line, tl.Replayable)
			}
			b.Reset()
			if err := Prom(&b, r); err != nil {
				t.Fatal(err)
			}
			parser := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := parser.TextToMetricFamilies(&b)
			if err != nil {
				t.Fatal(err)
			}
			var promLost float64
			for _, m := range fams["kaudit_records_vanished"].GetMetric() {
				promLost += m.GetGauge().GetValue()
			}
			if int64(promLost) != tl.Vanished {
				t.Errorf("the metrics count %v vanished, the tally %d", promLost, tl.Vanished)
			}
			b.Reset()
			if err := JSON(&b, r); err != nil {
				t.Fatal(err)
			}
			var doc struct {
				Summary struct {
					Vanished int64 `json:"vanished"`
					Pending  int64 `json:"pending"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Summary.Vanished != tl.Vanished || doc.Summary.Pending != tl.Pending {
				t.Errorf("the JSON says %d vanished and %d pending", doc.Summary.Vanished, doc.Summary.Pending)
			}
		})
	}
}

// countGoneTimed counts the gone records whose source input the engine
// read (a purge below a readable input): the timeline may place them.
func countGoneTimed(r *audit.Report) int64 {
	var n int64
	for _, f := range r.Findings {
		if f.Severity == audit.SeverityLoss && f.Cause != audit.CauseRetentionGap && f.Cause != audit.CauseTruncated && f.Stage != audit.StageJoin {
			if role(r, f.Topic) == "source" {
				continue
			}
			n += max(f.Count, 1)
		}
	}
	return n
}

func role(r *audit.Report, topic string) string {
	for _, c := range r.Cut {
		if c.Topic == topic {
			return c.Role
		}
	}
	return ""
}

func sumColumn(t *testing.T, rows [][]string, col int) int64 {
	var n int64
	for i, row := range rows {
		if i > 0 {
			n += atoi(t, row[col])
		}
	}
	return n
}

// TestGlossaryMatchesREADME: README.md's Quick start holds the
// postmortem's glossary, line for line.
func TestGlossaryMatchesREADME(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "### The postmortem's words")
	if i < 0 {
		t.Fatal("README.md has no section \"The postmortem's words\"")
	}
	var want strings.Builder
	md := &mdWriter{b: &want}
	writeGlossary(md)
	wantLines := strings.Split(strings.TrimSpace(strings.TrimPrefix(want.String(), "## Glossary\n")), "\n")
	section := readme[i:]
	if j := strings.Index(section[1:], "\n#"); j >= 0 {
		section = section[:j+1]
	}
	var got []string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "- **") {
			got = append(got, l)
		}
	}
	if len(wantLines) != 10 {
		t.Errorf("the glossary has %d lines, want ten", len(wantLines))
	}
	if strings.Join(got, "\n") != strings.Join(wantLines, "\n") {
		t.Errorf("README.md's glossary\n%s\nthe postmortem's\n%s", strings.Join(got, "\n"), strings.Join(wantLines, "\n"))
	}
}
