package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	gmtext "github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/kaudit/kaudit/audit"
)

func renderMarkdown(t *testing.T, r *audit.Report, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Markdown(&b, r, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func parseMarkdown(src []byte) ast.Node {
	md := goldmark.New(goldmark.WithExtensions(extension.Table))
	return md.Parser().Parse(gmtext.NewReader(src))
}

// mdDoc is what the tests read out of a parsed postmortem.
type mdDoc struct {
	headings  []string // level-2 headings in order
	headings3 []string // level-3 headings in order
	mermaid   []string // lines of mermaid blocks
	tables    map[string][][]string
	warned    int // index in headings at which the first blockquote appeared (-1: none)
	textAll   string
}

func readDoc(t *testing.T, src []byte) mdDoc {
	t.Helper()
	d := mdDoc{tables: map[string][][]string{}, warned: -1}
	var current string // last level-3 heading (or level 2 when none since)
	var all strings.Builder
	err := ast.Walk(parseMarkdown(src), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			h := string(n.Lines().Value(src))
			if n.Level == 2 {
				d.headings = append(d.headings, h)
			}
			if n.Level == 3 {
				d.headings3 = append(d.headings3, h)
			}
			if n.Level >= 2 {
				current = h
			}
		case *ast.Blockquote:
			if d.warned < 0 {
				d.warned = len(d.headings)
			}
		case *ast.FencedCodeBlock:
			if string(n.Language(src)) == "mermaid" {
				for i := 0; i < n.Lines().Len(); i++ {
					seg := n.Lines().At(i)
					d.mermaid = append(d.mermaid, strings.TrimRight(string(seg.Value(src)), "\n"))
				}
			}
		case *east.TableHeader, *east.TableRow:
			var row []string
			for c := n.FirstChild(); c != nil; c = c.NextSibling() {
				row = append(row, cellText(c, src))
			}
			d.tables[current] = append(d.tables[current], row)
		case *ast.Text:
			all.Write(n.Segment.Value(src))
			if n.SoftLineBreak() || n.HardLineBreak() {
				all.WriteByte(' ')
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d.textAll = all.String()
	return d
}

// cellText is a table cell's text with escapes resolved.
func cellText(n ast.Node, src []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		}
		return ast.WalkContinue, nil
	})
	// Resolve backslash escapes and entities the way an HTML renderer does.
	return string(util.ResolveEntityNames(util.UnescapePunctuations([]byte(b.String()))))
}

var (
	mermaidNode = regexp.MustCompile(`^  (n\d+)\["(.*)"\]$`)
	mermaidEdge = regexp.MustCompile(`^  (n\d+) -->\|"(\d+) records(?:, (\d+) lost)?"\| (n\d+)$`)
)

func TestMarkdownMermaidMatchesEdges(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.report()
			d := readDoc(t, renderMarkdown(t, r, testOptions()))
			if len(r.Edges) == 0 {
				if len(d.mermaid) != 0 {
					t.Fatalf("mermaid block for a report with no edges: %q", d.mermaid)
				}
				return
			}
			if len(d.mermaid) == 0 || d.mermaid[0] != "flowchart LR" {
				t.Fatalf("no flowchart in the mermaid block: %q", d.mermaid)
			}
			names := map[string]string{}
			var got []audit.Edge
			for _, line := range d.mermaid[1:] {
				if m := mermaidNode.FindStringSubmatch(line); m != nil {
					if _, dup := names[m[1]]; dup {
						t.Errorf("node %s declared twice", m[1])
					}
					names[m[1]] = strings.ReplaceAll(m[2], "#quot;", `"`)
					continue
				}
				if m := mermaidEdge.FindStringSubmatch(line); m != nil {
					from, ok1 := names[m[1]]
					to, ok2 := names[m[4]]
					if !ok1 || !ok2 {
						t.Fatalf("edge %q uses an undeclared node", line)
					}
					recs, _ := strconv.ParseInt(m[2], 10, 64)
					var lost int64
					if m[3] != "" {
						lost, _ = strconv.ParseInt(m[3], 10, 64)
					}
					got = append(got, audit.Edge{From: from, To: to, Records: recs, Vanished: lost})
				}
			}
			if !slices.Equal(got, r.Edges) {
				t.Errorf("mermaid edges\n got %v\nwant %v", got, r.Edges)
			}
			lostLinks := 0
			for _, e := range r.Edges {
				if e.Vanished > 0 {
					lostLinks++
				}
			}
			styled := slices.ContainsFunc(d.mermaid, func(l string) bool { return strings.HasPrefix(l, "  linkStyle ") })
			if styled != (lostLinks > 0) {
				t.Errorf("lost edges %d, linkStyle present %v", lostLinks, styled)
			}
		})
	}
}

func TestMarkdownMermaidEscapesLabels(t *testing.T) {
	edges := []audit.Edge{{From: `a "quoted" topic`, To: "b", Records: 3, Vanished: 1}}
	got := Mermaid(edges)
	if strings.Contains(got, `"a "quoted"`) || !strings.Contains(got, `a #quot;quoted#quot; topic`) {
		t.Errorf("label not escaped:\n%s", got)
	}
}

// TestMarkdownSections: the first screen holds the verdict, the losses
// and anomalies, and what to do next, in that order, before any detail;
// the details follow in a fixed order; an incomplete run's warning comes
// before the first section.
func TestMarkdownSections(t *testing.T) {
	details := []string{"How to do it", "Findings by cause", "Known Kafka issues", "Pipeline", "Funnel by stage", "Timeline",
		"Lineage of sample vanished records", "Notes", "The cut", "Glossary", "Provenance"}
	for _, tt := range []struct {
		name       string
		report     *audit.Report
		first      []string
		warning    bool // a blockquote before the first section
		incomplete bool // the verdict paragraph says so
	}{
		{"clean", cleanReport(), []string{"What to do next"}, false, false},
		{"loss", lossReport(), []string{"Losses and anomalies", "What to do next"}, false, false},
		{"incomplete", incompleteReport(), []string{"Losses and anomalies", "What to do next"}, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := renderMarkdown(t, tt.report, testOptions())
			d := readDoc(t, src)
			if len(d.headings) < len(tt.first) || !slices.Equal(d.headings[:len(tt.first)], tt.first) {
				t.Fatalf("sections %q: want them to start %q", d.headings, tt.first)
			}
			last := -1
			for _, h := range d.headings[len(tt.first):] {
				i := slices.Index(details, h)
				if i <= last {
					t.Errorf("section %q out of place in %q", h, d.headings)
				}
				last = i
			}
			for _, must := range []string{"Findings by cause", "The cut", "Glossary", "Provenance"} {
				if !slices.Contains(d.headings, must) {
					t.Errorf("no section %q", must)
				}
			}
			if tt.warning != (d.warned == 0) {
				t.Errorf("blockquote before the first section: %v, want %v", d.warned == 0, tt.warning)
			}
			head := string(src[:bytes.Index(src, []byte("\n## "))])
			if strings.Contains(head, "The audit is incomplete") != tt.incomplete {
				t.Errorf("the verdict paragraph says incomplete: %v, want %v", !tt.incomplete, tt.incomplete)
			}
			if !strings.Contains(head, "**Verdict: "+strings.ToUpper(string(tt.report.Summary.Verdict))+".**") {
				t.Errorf("no verdict before the first section:\n%s", head)
			}
			if tt.name != "clean" && strings.Contains(d.textAll, "every input below the group's committed offsets is reflected") {
				t.Error("a report with findings or missing evidence reads as clean")
			}
		})
	}
}

// TestMarkdownFirstScreen: the demo's postmortem shows, within its first
// 40 lines, the verdict, the numbers (records lost, replayable, gone,
// when, which stage), every loss and anomaly (and no information row),
// and what to do next.
func TestMarkdownFirstScreen(t *testing.T) {
	r := lossReport()
	src := string(renderMarkdown(t, r, testOptions()))
	lines := strings.Split(src, "\n")
	screen := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, want := range []string{"**Verdict: LOSS.**", "91 records vanished", "65 can be replayed", "25 are gone from Kafka",
		"1 is a join output", "**When:** 2026-11-30 10:10", "**Where:** 5 at source, 84 at repartition, 1 at store, 1 at join",
		"## Losses and anomalies", "`hanging-transaction`", "`duplicate`", "## What to do next", "1. **Abort 1 hanging transaction now**", "2. **Replay 65 records"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the first 40 lines lack %q", want)
		}
	}
	for _, bad := range []string{"`pending`", "`null-key`", "## The cut", "mermaid", "## Timeline"} {
		if strings.Contains(screen, bad) {
			t.Errorf("the first 40 lines have %q: detail before what to do", bad)
		}
	}
	d := readDoc(t, []byte(src))
	var records int64
	for _, row := range d.tables["Losses and anomalies"][1:] {
		if row[0] == "loss" {
			records += atoi(t, row[4])
		}
	}
	if records != r.Summary.Vanished {
		t.Errorf("the loss rows add up to %d records, the verdict says %d", records, r.Summary.Vanished)
	}
}

func TestMarkdownTables(t *testing.T) {
	r := lossReport()
	d := readDoc(t, renderMarkdown(t, r, testOptions()))

	t.Run("cut", func(t *testing.T) {
		rows := d.tables["The cut"]
		if len(rows) != len(r.Cut)+1 {
			t.Fatalf("%d rows, want %d", len(rows), len(r.Cut)+1)
		}
		for i, c := range r.Cut {
			row := rows[i+1]
			committed := strconv.FormatInt(c.Committed, 10)
			if c.Committed < 0 {
				committed = "none"
			}
			want := []string{c.Topic, c.Role, strconv.Itoa(int(c.Partition)), committed,
				strconv.FormatInt(c.LogStart, 10), strconv.FormatInt(c.LSO, 10), strconv.FormatInt(c.HW, 10)}
			if !slices.Equal(row[:7], want) {
				t.Errorf("row %d = %q, want %q", i, row[:7], want)
			}
		}
		if !strings.Contains(rows[4][8], "log-start is 20 above committed") {
			t.Errorf("purged repartition partition not remarked: %q", rows[4][8])
		}
		// lag is HW - committed offset, as kafka-consumer-groups.sh counts it,
		// for the partitions the app consumes
		for i, c := range r.Cut {
			want := ""
			if c.Committed >= 0 && (c.Role == "source" || c.Role == "repartition") {
				want = strconv.FormatInt(max(c.HW-c.Committed, 0), 10)
			}
			if got := rows[i+1][7]; got != want {
				t.Errorf("row %d: lag %q, want %q", i, got, want)
			}
		}
	})

	t.Run("funnel order", func(t *testing.T) {
		var got []string
		for _, row := range d.tables["Funnel by stage"][1:] {
			got = append(got, row[0])
			if row[3] == "" {
				t.Errorf("hop %s: no meaning", row[0])
			}
		}
		want := []string{"read", "consumed", "judged", "repartitioned", "applied", "joined", "output", "null-key"}
		if !slices.Equal(got, want) {
			t.Errorf("funnel %q, want %q", got, want)
		}
	})

	t.Run("findings capped per cause", func(t *testing.T) {
		rows := d.tables["`aborted-not-replayed`: loss, 64 findings, 64 records"]
		if len(rows) != mdRowsPerCause+1 {
			t.Errorf("%d finding rows, want the cap %d", len(rows)-1, mdRowsPerCause)
		}
		if !strings.Contains(d.textAll, "and 14 more") {
			t.Error("the rows beyond the cap are not counted")
		}
	})

	t.Run("findings by severity", func(t *testing.T) {
		var sev []string
		for _, h := range d.headings3 {
			if _, s, ok := strings.Cut(h, "`: "); ok {
				sev = append(sev, strings.Split(s, ",")[0])
			}
		}
		if !slices.IsSortedFunc(sev, func(a, b string) int {
			return severityRank[audit.Severity(a)] - severityRank[audit.Severity(b)]
		}) || len(sev) < 4 {
			t.Errorf("causes in the order %q: want losses, anomalies, risks, information", sev)
		}
	})

	t.Run("escaped cells survive", func(t *testing.T) {
		rows := d.tables["`purged-before-commit`: loss, 1 finding, 20 records"]
		if len(rows) != 2 {
			t.Fatalf("%d rows", len(rows))
		}
		if got, want := rows[1][4], r.Findings[slices.IndexFunc(r.Findings, func(f audit.Finding) bool {
			return f.Cause == audit.CausePurgedBeforeCommit
		})].Detail; got != want {
			t.Errorf("detail cell %q, want %q", got, want)
		}
	})

	t.Run("timeline marks the incident", func(t *testing.T) {
		rows := d.tables["Timeline"]
		marked := 0
		for _, row := range rows[1:] {
			if !strings.Contains(row[5], "incident") {
				continue
			}
			// a quiet stretch is one row: "… 18 quiet minutes"
			if n, ok := strings.CutPrefix(row[0], "… "); ok {
				k, err := strconv.Atoi(strings.Fields(n)[0])
				if err != nil {
					t.Fatalf("row %q", row[0])
				}
				marked += k
				continue
			}
			marked++
		}
		// 10:10 to 10:33: aborts, the 20-minute gap and recovery.
		if marked != 24 {
			t.Errorf("%d minutes marked, want 24", marked)
		}
	})

	t.Run("replay ranges", func(t *testing.T) {
		rows := d.tables["Replay the vanished inputs that Kafka still holds"]
		want := [][]string{
			{"orders-v1", "0", "1000", "1039", "40"},
			{"orders-v1", "0", "1140", "1159", "20"},
			{"orders-v1", "1", "1150", "1150", "1"},
			{"payments-v1", "0", "500", "503", "4"},
		}
		if len(rows) != len(want)+1 {
			t.Fatalf("rows %q", rows)
		}
		for i, w := range want {
			if !slices.Equal(rows[i+1], w) {
				t.Errorf("range %d = %q, want %q", i, rows[i+1], w)
			}
		}
	})

	t.Run("known issues once", func(t *testing.T) {
		src := string(renderMarkdown(t, r, testOptions()))
		for _, k := range KnownIssues {
			if n := strings.Count(src, "**"+k.ID+"**"); n > 1 {
				t.Errorf("%s listed %d times", k.ID, n)
			}
		}
		// the brokers are 3.6.1: KAFKA-15653 is fixed there, not a match
		if strings.Contains(d.textAll, "KAFKA-15653 (aborted") || !strings.Contains(d.textAll, "KAFKA-15653 (fixed in your broker 3.6.1)") {
			t.Error("an issue fixed in the reader's version is listed as a match")
		}
	})
}

// TestMarkdownKnownIssueVersions: a Streams-client bug is judged against
// the Streams version, never the brokers'; without it the version is
// unknown.
func TestMarkdownKnownIssueVersions(t *testing.T) {
	for _, tt := range []struct {
		name, kafka, streams string
		want, notWant        []string
	}{
		{"streams affected", "", "3.6.1", []string{"Affects your version: Kafka Streams 3.6.1", "KAFKA-17635 in your Kafka Streams 3.6.1"}, []string{"Fixed in your version: Kafka Streams 3.6.1.** (Versions: 3.7.2"}},
		{"streams fixed", "", "3.9.0", []string{"KAFKA-17635 (fixed in your Kafka Streams 3.9.0)"}, []string{"Affects your version: Kafka Streams", "**KAFKA-17635**"}},
		{"only the brokers' version", "3.6.1", "", []string{"Your Kafka Streams version is unknown (pass --streams-version to check it)"}, []string{"Kafka Streams 3.6.1", "Affects your version: Kafka Streams"}},
		{"none", "", "", []string{"Your Kafka Streams version is unknown (pass --streams-version", "Your broker version is unknown (pass --kafka-version", "| Kafka Streams version (the app's client) | not given |"}, []string{"Affects your version", "Not listed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			o.KafkaVersion, o.StreamsVersion = tt.kafka, tt.streams
			md := string(renderMarkdown(t, lossReport(), o))
			for _, w := range tt.want {
				if !strings.Contains(md, w) {
					t.Errorf("missing %q", w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(md, w) {
					t.Errorf("unexpected %q", w)
				}
			}
		})
	}
}

func TestMarkdownSVGLink(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"timeline.svg", "](timeline.svg)"},
		{"out dir/t l.svg", "](<out dir/t l.svg>)"},
		{"", ""},
	} {
		t.Run(tt.path, func(t *testing.T) {
			o := testOptions()
			o.SVGPath = tt.path
			md := string(renderMarkdown(t, lossReport(), o))
			if tt.want == "" {
				if strings.Contains(md, "![") {
					t.Error("image link without an SVG path")
				}
				return
			}
			if !strings.Contains(md, tt.want) {
				t.Errorf("no link %q", tt.want)
			}
			var found bool
			_ = ast.Walk(parseMarkdown([]byte(md)), func(n ast.Node, entering bool) (ast.WalkStatus, error) {
				if img, ok := n.(*ast.Image); ok && entering && string(img.Destination) == tt.path {
					found = true
				}
				return ast.WalkContinue, nil
			})
			if !found {
				t.Errorf("no image pointing at %q", tt.path)
			}
		})
	}
}

func TestCSVReadBack(t *testing.T) {
	r := lossReport()
	tricky := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, tp("order-status", 2), 77)
	tricky.Key = `"o-\"1\",2"` // a JSON string: its text in the CSV
	tricky.Expected = "{\"a\":\"line1\nline2\"}"
	tricky.Actual = "b64:AAEC"
	tricky.Detail = "comma, \"quote\", newline\nand ünïcode"
	r.Findings = append(r.Findings, tricky)
	var b bytes.Buffer
	if err := CSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rows[0], audit.FindingColumns) {
		t.Fatalf("header %q", rows[0])
	}
	if len(rows) != len(r.Findings)+1 {
		t.Fatalf("%d rows for %d findings", len(rows)-1, len(r.Findings))
	}
	for i, f := range r.Findings {
		row := rows[i+1]
		got := audit.Finding{
			Stage: audit.Stage(row[0]), Cause: audit.Cause(row[1]), Severity: audit.Severity(row[2]), Topic: row[3],
			Partition: int32(csvNum(t, row[4])), Offset: csvNum(t, row[5]), Count: atoi(t, row[6]), Key: row[7],
			Timestamp: csvTime(t, row[8]), TransactionalID: row[9], ProducerID: csvNum(t, row[10]),
			ProducerEpoch: int16(csvNum(t, row[11])), Expected: row[12], Actual: row[13], Detail: row[14],
		}
		want := f
		want.Key = keyText(f.Key)
		if got != want {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
}

// TestCSVInjection: a cell a spreadsheet would run as a formula (it
// starts with =, +, -, @, a tab or a carriage return) gets a leading
// single quote, in every text column and in the ledger's; a number and any
// other text stay as they are.
func TestCSVInjection(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{"=HYPERLINK(\"http://x\",\"y\")", "'=HYPERLINK(\"http://x\",\"y\")"},
		{"+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"},
		{"-2+3", "'-2+3"},
		{"@SUM(A1:A9)", "'@SUM(A1:A9)"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"-5", "-5"},
		{"+1.5e3", "+1.5e3"},
		{"o-1", "o-1"},
		{"'=1", "'=1"},
		{"", ""},
	} {
		t.Run(tt.text, func(t *testing.T) {
			f := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, tp(tt.text, 1), 7)
			f.Key = strconv.Quote(tt.text) // a JSON string: its text in the CSV
			f.TransactionalID, f.Expected, f.Actual, f.Detail = tt.text, tt.text, tt.text, tt.text
			var b bytes.Buffer
			if err := CSV(&b, &audit.Report{AppID: "a", Findings: []audit.Finding{f}}); err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(&b).ReadAll()
			if err != nil || len(rows) != 2 {
				t.Fatalf("%d rows, %v", len(rows), err)
			}
			for i, col := range audit.FindingColumns {
				if slices.Contains([]string{"topic", "key", "transactional_id", "expected", "actual", "detail"}, col) && rows[1][i] != tt.want {
					t.Errorf("%s: %q, want %q", col, rows[1][i], tt.want)
				}
			}
			b.Reset()
			l := &audit.TopicLedger{Topic: tt.text, Partitions: []audit.PartitionLedger{{Partition: 0}}}
			if err := LedgerCSV(&b, l); err != nil {
				t.Fatal(err)
			}
			if rows, err := csv.NewReader(&b).ReadAll(); err != nil || len(rows) != 2 || rows[1][0] != tt.want {
				t.Errorf("ledger: %q (%v), want the topic %q", rows, err, tt.want)
			}
		})
	}
}

// csvNum reads a CSV number, "" being the unknown -1.
// csvTime reads a CSV timestamp: RFC 3339 in UTC, "" unknown (-1).
func csvTime(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return -1
	}
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.HasSuffix(s, "Z") {
		t.Fatalf("CSV timestamp %q: want RFC 3339 in UTC: %v", s, err)
	}
	return at.UnixMilli()
}

func csvNum(t *testing.T, s string) int64 {
	t.Helper()
	if s == "" {
		return -1
	}
	return atoi(t, s)
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return n
}

func TestJSONShapeAndRoundTrip(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.report()
			var b bytes.Buffer
			if err := JSON(&b, r); err != nil {
				t.Fatal(err)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"app_id", "generated_at", "cut", "summary", "findings"} {
				if _, ok := doc[k]; !ok {
					t.Errorf("no %q", k)
				}
			}
			var sum map[string]json.RawMessage
			if err := json.Unmarshal(doc["summary"], &sum); err != nil {
				t.Fatal(err)
			}
			if v := string(sum["verdict"]); v != `"`+string(r.Summary.Verdict)+`"` {
				t.Errorf("verdict %s", v)
			}
			var findings []map[string]any
			if err := json.Unmarshal(doc["findings"], &findings); err != nil {
				t.Fatal(err)
			}
			for _, f := range findings {
				for _, col := range audit.FindingColumns {
					_, ok := f[col]
					if optional := col == "key" || col == "expected" || col == "actual"; !ok && !optional {
						t.Errorf("finding has no %q", col)
					}
				}
				for col := range f {
					if !slices.Contains(audit.FindingColumns, col) && col != "candidates" {
						t.Errorf("finding has %q, not a column", col)
					}
				}
			}
			back, err := ReadJSON(&b)
			if err != nil {
				t.Fatal(err)
			}
			var again bytes.Buffer
			if err := JSON(&again, back); err != nil {
				t.Fatal(err)
			}
			var first bytes.Buffer
			_ = JSON(&first, r)
			if !bytes.Equal(first.Bytes(), again.Bytes()) {
				t.Error("JSON → ReadJSON → JSON changed the document")
			}
			if !back.GeneratedAt.Equal(r.GeneratedAt) || back.Summary.Verdict != r.Summary.Verdict || len(back.Findings) != len(r.Findings) {
				t.Error("read back report differs")
			}
		})
	}
	t.Run("empty lists are not null", func(t *testing.T) {
		var b bytes.Buffer
		if err := JSON(&b, &audit.Report{AppID: "x"}); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"cut": []`, `"findings": []`, `"by_stage": {}`, `"verdict": "clean"`} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("no %s in %s", want, b.String())
			}
		}
	})
}

func TestReadJSONErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"not json", `nope`, "decode report"},
		{"trailing data", `{"app_id":"a"} {}`, "trailing data"},
		{"bad verdict", `{"app_id":"a","summary":{"verdict":"fine"}}`, "unknown verdict"},
		{"no app id", `{"findings":[]}`, "no app_id"},
		{"null", `null`, "no app_id"},
		{"finding without cause", `{"app_id":"a","findings":[{"stage":"source"}]}`, "no stage or cause"},
		{"unknown cause", `{"app_id":"a","findings":[{"stage":"source","cause":"gremlins"}]}`, "not in kaudit's vocabulary"},
		{"wrong severity", `{"app_id":"a","findings":[{"stage":"source","cause":"dropped","severity":"info"}]}`, "has severity loss"},
		{"lineage out of range", `{"app_id":"a","findings":[],"lineage":[{"finding":3}]}`, "lineage names finding 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("severity filled in", func(t *testing.T) {
		r, err := ReadJSON(strings.NewReader(`{"app_id":"a","findings":[{"stage":"source","cause":"retention-gap"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		if r.Findings[0].Severity != audit.SeverityLoss {
			t.Errorf("severity %q", r.Findings[0].Severity)
		}
	})
}

func TestPromParses(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.report()
			var b bytes.Buffer
			if err := Prom(&b, r); err != nil {
				t.Fatal(err)
			}
			p := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := p.TextToMetricFamilies(&b)
			if err != nil {
				t.Fatal(err)
			}
			value := func(name string, labels map[string]string) (float64, bool) {
				labels = maps.Clone(labels)
				if labels == nil {
					labels = map[string]string{}
				}
				labels["app_id"] = r.AppID // every series names its app
				fam, ok := fams[name]
				if !ok {
					return 0, false
				}
				for _, m := range fam.GetMetric() {
					match := len(m.GetLabel()) == len(labels)
					for _, l := range m.GetLabel() {
						match = match && labels[l.GetName()] == l.GetValue()
					}
					if match {
						return m.GetGauge().GetValue(), true
					}
				}
				return 0, false
			}
			ones := 0
			for _, v := range []audit.Verdict{audit.VerdictClean, audit.VerdictLoss, audit.VerdictAnomaly, audit.VerdictIncomplete} {
				got, ok := value("kaudit_verdict", map[string]string{"verdict": string(v)})
				if !ok {
					t.Fatalf("no kaudit_verdict{verdict=%q}", v)
				}
				if want := v == r.Summary.Verdict; (got == 1) != want || (got != 0 && got != 1) {
					t.Errorf("kaudit_verdict{verdict=%q} = %v", v, got)
				}
				if got == 1 {
					ones++
				}
			}
			if ones != 1 {
				t.Errorf("%d verdicts at 1", ones)
			}
			var vanished float64
			if fam, ok := fams["kaudit_records_vanished"]; ok {
				for _, m := range fam.GetMetric() {
					vanished += m.GetGauge().GetValue()
				}
			}
			if vanished != float64(r.Summary.Vanished) {
				t.Errorf("vanished sums to %v, want %d", vanished, r.Summary.Vanished)
			}
			if got, _ := value("kaudit_pending_records", nil); got != float64(r.Summary.Pending) {
				t.Errorf("pending %v, want %d", got, r.Summary.Pending)
			}
			sev := severityCounts(r.Findings)
			for _, s := range []audit.Severity{audit.SeverityLoss, audit.SeverityAnomaly, audit.SeverityRisk, audit.SeverityInfo} {
				if got, ok := value("kaudit_findings", map[string]string{"severity": string(s)}); !ok || got != float64(sev[s]) {
					t.Errorf("kaudit_findings{severity=%q} = %v, want %d", s, got, sev[s])
				}
			}
			if _, ok := value("kaudit_open_transactions", nil); !ok {
				t.Error("no kaudit_open_transactions")
			}
			if got, ok := value("kaudit_undecided_keys", nil); !ok || got != float64(r.Summary.Undecided) {
				t.Errorf("kaudit_undecided_keys %v, want %d", got, r.Summary.Undecided)
			}
			if got, ok := value("kaudit_run_success", nil); !ok || got != 1 {
				t.Errorf("kaudit_run_success %v", got)
			}
			if got, ok := value("kaudit_last_run_timestamp_seconds", nil); !ok || math.Abs(got-float64(time.Now().Unix())) > 60 {
				t.Errorf("kaudit_last_run_timestamp_seconds %v, want the run's time (now), not the report's %s", got, r.GeneratedAt)
			}
			if _, ok := value("kaudit_run_duration_seconds", nil); !ok {
				t.Error("no kaudit_run_duration_seconds")
			}
			for name, fam := range fams {
				if fam.GetHelp() == "" || fam.GetType().String() != "GAUGE" {
					t.Errorf("%s: help %q type %v", name, fam.GetHelp(), fam.GetType())
				}
			}
		})
	}
	t.Run("open transactions", func(t *testing.T) {
		if got := openTransactions(lossReport()); got != 1 { // the hanging one holds orders-v1/1's LSO
			t.Errorf("loss: %d, want 1", got)
		}
		r := cleanReport()
		r.Cut[0].HW = r.Cut[0].LSO + 3
		if got := openTransactions(r); got != 1 {
			t.Errorf("clean with LSO < HW: %d, want 1", got)
		}
	})
}

func TestTimelineSVG(t *testing.T) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.report()
			var b bytes.Buffer
			if err := TimelineSVG(&b, r); err != nil {
				t.Fatal(err)
			}
			dec := xml.NewDecoder(&b)
			classes := map[string]int{}
			var root string
			depth := 0
			for {
				tok, err := dec.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("svg does not parse: %v", err)
				}
				switch tok := tok.(type) {
				case xml.StartElement:
					if depth == 0 {
						root = tok.Name.Space + " " + tok.Name.Local
					}
					depth++
					for _, a := range tok.Attr {
						if a.Name.Local == "class" {
							classes[a.Value]++
						}
					}
				case xml.EndElement:
					depth--
				}
			}
			if root != "http://www.w3.org/2000/svg svg" {
				t.Errorf("root element %q", root)
			}
			var wantVanished, wantAborted int
			for _, m := range r.Timeline {
				if m.Vanished > 0 {
					wantVanished++
				}
				if m.Aborted > 0 {
					wantAborted++
				}
			}
			if classes["vanished"] != wantVanished || classes["aborted"] != wantAborted {
				t.Errorf("bars: %v, want %d vanished %d aborted", classes, wantVanished, wantAborted)
			}
			if want := len(incidentWindows(timeline(r))); classes["incident"] != want {
				t.Errorf("%d incident windows drawn, want %d", classes["incident"], want)
			}
		})
	}
}

func TestTableShowsGaps(t *testing.T) {
	var b bytes.Buffer
	if err := Table(&b, incompleteReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"INCOMPLETE", "MISSING EVIDENCE: payments-v1/1", "SKIPPED CHECK: join check"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	b.Reset()
	r := lossReport()
	for len(r.Findings) <= tableRows {
		r.Findings = append(r.Findings, r.Findings...)
	}
	if err := Table(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), strconv.Itoa(len(r.Findings)-tableRows)+" more findings not shown") {
		t.Error("the rows beyond the cap are not counted")
	}
}

func TestRenderAndFormatFor(t *testing.T) {
	for _, tt := range []struct{ output, explicit, want string }{
		{"", "", "table"},
		{"report.md", "", "md"},
		{"REPORT.MARKDOWN", "", "md"},
		{"out/findings.csv", "", "csv"},
		{"r.json", "", "json"},
		{"metrics.prom", "", "prom"},
		{"notes.txt", "", "table"},
		{"report.md", "json", "json"},
		{"", "markdown", "md"},
		{"", "CSV", "csv"},
	} {
		t.Run(tt.output+"+"+tt.explicit, func(t *testing.T) {
			if got := FormatFor(tt.output, tt.explicit); got != tt.want {
				t.Errorf("FormatFor(%q, %q) = %q, want %q", tt.output, tt.explicit, got, tt.want)
			}
		})
	}
	t.Run("unknown format", func(t *testing.T) {
		err := Render(io.Discard, "xml", cleanReport(), Options{})
		if !errors.Is(err, ErrUnknownFormat) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("every format renders", func(t *testing.T) {
		for _, f := range Formats {
			var b bytes.Buffer
			if err := Render(&b, f, lossReport(), testOptions()); err != nil || b.Len() == 0 {
				t.Errorf("%s: %v, %d bytes", f, err, b.Len())
			}
		}
	})
	t.Run("write error", func(t *testing.T) {
		for _, f := range Formats {
			if err := Render(failWriter{}, f, lossReport(), testOptions()); err == nil {
				t.Errorf("%s: no error from a failing writer", f)
			}
		}
	})
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestMarkdownLongTimelineElides(t *testing.T) {
	r := cleanReport()
	r.Timeline = steadyTimeline(300)
	r.Timeline[150].Aborted = 2
	d := readDoc(t, renderMarkdown(t, r, testOptions()))
	rows := d.tables["Timeline"]
	var got []string
	for _, row := range rows[1:] {
		got = append(got, row[0]+"|"+row[5])
	}
	want := []string{"… 147 minutes outside the incident windows|",
		"2026-11-30 12:27|", "2026-11-30 12:28|", "2026-11-30 12:29|", "2026-11-30 12:30|◀ incident",
		"2026-11-30 12:31|", "2026-11-30 12:32|", "2026-11-30 12:33|",
		"… 146 minutes outside the incident windows|", "total|"}
	if !slices.Equal(got, want) {
		t.Errorf("timeline rows\n got %q\nwant %q", got, want)
	}
	if last := rows[len(rows)-1]; last[1] != "30000" || last[3] != "2" {
		t.Errorf("totals %q", last)
	}
}

func TestTableWidth(t *testing.T) {
	r := incompleteReport()
	long := strings.Repeat("the reason this record is missing ", 8)
	f := audit.NewFinding(audit.StageJoin, audit.CauseDropped, audit.TopicPartition{Topic: "orders-v1", Partition: 0}, 7)
	f.Detail, f.Expected, f.Actual = long, `{"orderId":"o-1","status":"PAID"}`, "nothing at offset 7"
	r.Findings = append(r.Findings, f)
	for _, tt := range []struct {
		name  string
		o     Options
		check func(t *testing.T, lines []string)
	}{
		{"fits 110 columns", Options{Width: 110}, func(t *testing.T, lines []string) {
			for _, l := range lines {
				if strings.HasPrefix(l, "│") && runewidth.StringWidth(l) > 110 {
					t.Errorf("%d columns: %s", runewidth.StringWidth(l), l)
				}
			}
		}},
		{"wide: one line each", Options{Wide: true}, func(t *testing.T, lines []string) {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, strings.TrimSpace(long)) }) {
				t.Error("the detail is not whole on one line")
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := TableWith(&b, r, tt.o); err != nil {
				t.Fatal(err)
			}
			// nothing is cut: every word of the detail, expected and actual is there
			joined := strings.Join(strings.Fields(strings.NewReplacer("│", " ").Replace(b.String())), " ")
			for _, w := range []string{"PAID", "offset 7", "missing"} {
				if !strings.Contains(joined, w) {
					t.Errorf("%q not shown", w)
				}
			}
			if strings.Contains(b.String(), "…") {
				t.Error("a cell was cut")
			}
			tt.check(t, strings.Split(b.String(), "\n"))
		})
	}
}

// TestMarkdownReadable: values and details are whole, quiet minutes
// collapse, counts of one are singular, a hop without a partition shows
// none, and no GitHub-only alert syntax is used.
func TestMarkdownReadable(t *testing.T) {
	r := &audit.Report{AppID: "shop"}
	long := strings.TrimSpace(strings.Repeat(`{"orderId":"o-1","status":"PAID"} `, 6))
	f := audit.NewFinding(audit.StageJoin, audit.CauseDuplicate, audit.TopicPartition{Topic: "order-status", Partition: 0}, 9)
	f.Key, f.Expected, f.Actual, f.Detail = "o-1", long, long+" again", strings.Repeat("why ", 60)
	lost := audit.NewFinding(audit.StageStore, audit.CauseDropped, audit.TopicPartition{Topic: "orders-v1", Partition: 0}, 7)
	r.Findings = []audit.Finding{f, lost}
	r.Lineage = []audit.Lineage{{Finding: 1, Hops: []audit.Hop{{Stage: audit.StageStore, Topic: "shop-orders-changelog", Partition: -1, Offset: -1}}}}
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC).UnixMilli()
	for i := range 40 {
		m := audit.Minute{Start: t0 + int64(i)*60_000}
		if i == 0 || i == 39 {
			m.Produced = 5
		}
		if i == 20 {
			m.Produced, m.Aborted, m.Vanished = 1, 1, 1
		}
		r.Timeline = append(r.Timeline, m)
	}
	r.Summary.Notes = []string{"a note"}
	r.Finish()
	var b strings.Builder
	if err := Markdown(&b, r, Options{Now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)}); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{long + " again", strings.TrimSpace(strings.Repeat("why ", 60)), "1 anomaly that needs attention"} {
		if !strings.Contains(md, text(want)) {
			t.Errorf("missing %q", want)
		}
	}
	for _, want := range []string{"quiet minutes |", "| shop-orders-changelog |"} {
		if !strings.Contains(md, want) {
			t.Errorf("missing %q", want)
		}
	}
	for _, bad := range []string{"[!NOTE]", "[!WARNING]", "changelog/-1", "1 anomalies", "(1 minutes)", "1 records", "1 aborted transactions"} {
		if strings.Contains(md, bad) {
			t.Errorf("has %q", bad)
		}
	}
	zeroRows := 0
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| 2026-11-30") && strings.Contains(l, "| 0 | 0 | 0 | 0 |") {
			zeroRows++
		}
	}
	if zeroRows > 6 {
		t.Errorf("%d all-zero minute rows: quiet stretches should collapse\n%s", zeroRows, md)
	}
}

// TestPromBaselineVerdict: with a judged verdict (the new findings of a
// --baseline run) the Prometheus verdict is that one, as the exit code;
// a run that could not start says success 0.
func TestPromBaselineVerdict(t *testing.T) {
	var b bytes.Buffer
	r := lossReport()
	r.Baseline = &audit.Baseline{Report: "last.json", New: []int{}}
	r.Finish()
	if err := PromWith(&b, r, Options{Duration: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	// the verdict, the findings and the records vanished count one
	// population: nothing new since the baseline is clean with no loss
	// finding beside it, never clean beside the whole audit's losses
	ran := time.Date(2026, 12, 1, 2, 30, 0, 0, time.UTC)
	for _, want := range []string{`kaudit_verdict{app_id="orders-app",verdict="clean"} 1`, `kaudit_verdict{app_id="orders-app",verdict="loss"} 0`,
		`kaudit_findings{app_id="orders-app",severity="loss"} 0`, `kaudit_run_duration_seconds{app_id="orders-app"} 1.5`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %s in\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "kaudit_records_vanished") {
		t.Errorf("records vanished beside a clean verdict:\n%s", b.String())
	}
	// the run's time, not the evidence's
	b.Reset()
	if err := PromWith(&b, r, Options{Now: ran}); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`kaudit_last_run_timestamp_seconds{app_id="orders-app"} %v`, float64(ran.Unix())); !strings.Contains(b.String(), want) || r.GeneratedAt.Equal(ran) {
		t.Errorf("no %s (the report was generated %s) in\n%s", want, r.GeneratedAt, b.String())
	}
	b.Reset()
	r.Baseline.New = []int{0}
	r.Baseline.Verdict = ""
	r.Finish()
	if err := PromWith(&b, r, Options{}); err != nil {
		t.Fatal(err)
	}
	sev := severityCounts(r.NewFindings())
	for s, n := range map[audit.Severity]int64{audit.SeverityLoss: sev[audit.SeverityLoss], audit.SeverityAnomaly: sev[audit.SeverityAnomaly]} {
		if want := fmt.Sprintf(`kaudit_findings{app_id="orders-app",severity="%s"} %d`, s, n); !strings.Contains(b.String(), want) {
			t.Errorf("one new finding: no %s in\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := PromNotRun(&b, "shop", time.Unix(1700000000, 0), time.Second); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatal(err)
	}
	if m := fams["kaudit_run_success"].GetMetric(); len(m) != 1 || m[0].GetGauge().GetValue() != 0 {
		t.Errorf("kaudit_run_success %v", m)
	}
	if _, ok := fams["kaudit_verdict"]; ok {
		t.Error("a run that could not start has no verdict")
	}
}

// TestReplayFlags: the replay commands carry the client's security
// settings as -X flags, and what must be prepared for them.
func TestReplayFlags(t *testing.T) {
	o := testOptions()
	o.ReplayFlags = []string{"-X security.protocol=ssl", "-X ssl.ca.location=/etc/kafka/trust.pem"}
	o.ReplayNotes = []string{"kcat reads PEM, not JKS: convert /etc/kafka/trust.jks first"}
	md := string(renderMarkdown(t, lossReport(), o))
	if !strings.Contains(md, "kcat -C -q -b broker1:9092 -X security.protocol=ssl -X ssl.ca.location=/etc/kafka/trust.pem -t ") ||
		!strings.Contains(md, "kcat -P -q -b broker1:9092 -X security.protocol=ssl") {
		t.Error("the replay commands lack the -X flags")
	}
	if !strings.Contains(md, "- kcat reads PEM, not JKS") {
		t.Error("the note is missing")
	}
}
