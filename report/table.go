package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kaudit/kaudit/audit"
)

// tableRows caps the findings a terminal table prints; the rest are
// counted under it (CSV and JSON hold them all).
const tableRows = 500

// Table writes the verdict line, the evidence that is missing, and a
// terminal table of the findings, DefaultWidth wide.
func Table(w io.Writer, r *audit.Report) error { return TableWith(w, r, Options{}) }

// TableWith is Table fitted to o.Width: the key and the detail (with the
// expected and actual state) wrap instead of being cut; o.Wide prints
// them whole on one line.
func TableWith(w io.Writer, r *audit.Report, o Options) error {
	var b strings.Builder
	b.WriteString(verdictLine(r, o))
	b.WriteByte('\n')
	for _, line := range gapLines(r) {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if len(r.Findings) == 0 {
		if _, err := io.WriteString(w, "no findings\n"); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		return nil
	}
	header := []string{"stage", "cause", "severity", "topic", "partition", "offset", "count", "key", "detail"}
	var rows [][]string
	for _, f := range r.Findings[:min(len(r.Findings), tableRows)] {
		rows = append(rows, []string{string(f.Stage), string(f.Cause), string(f.Severity), f.Topic,
			strconv.Itoa(int(f.Partition)), strconv.FormatInt(f.Offset, 10), strconv.FormatInt(f.Count, 10),
			flat(f.Key), detailCell(f)})
	}
	if !o.Wide {
		width := o.Width
		if width <= 0 {
			width = DefaultWidth
		}
		fitRows(header, rows, width)
	}
	t := tablewriter.NewTable(w, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone))
	t.Header(header)
	for _, row := range rows {
		if err := t.Append(row); err != nil {
			return fmt.Errorf("build table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if n := len(r.Findings) - tableRows; n > 0 {
		if _, err := fmt.Fprintf(w, "… %d more findings not shown (use --format csv or json for all)\n", n); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return nil
}

// verdictLine is the one-line verdict: the app, the verdict in capitals
// and the counts that justify it.
func verdictLine(r *audit.Report, o Options) string {
	if o.Verdict != "" {
		return fmt.Sprintf("kaudit %s: %s since the baseline; the whole audit: %s: %s", orDash(r.AppID), strings.ToUpper(string(o.Verdict)), strings.ToUpper(string(verdictOf(r))), verdictCounts(r))
	}
	return fmt.Sprintf("kaudit %s: %s: %s", orDash(r.AppID), strings.ToUpper(string(verdictOf(r))), verdictCounts(r))
}

// verdictCounts are the counts that justify the verdict.
func verdictCounts(r *audit.Report) string {
	var parts []string
	if r.Summary.Vanished > 0 {
		parts = append(parts, plural(r.Summary.Vanished, "record")+" vanished")
	}
	sev := severityCounts(r.Findings)
	for _, s := range []audit.Severity{audit.SeverityAnomaly, audit.SeverityRisk} {
		if sev[s] > 0 {
			parts = append(parts, plural(sev[s], string(s)+" finding"))
		}
	}
	if r.Summary.Pending > 0 {
		parts = append(parts, fmt.Sprintf("%d pending (lag, not loss)", r.Summary.Pending))
	}
	if n := len(r.Summary.Missing); n > 0 {
		parts = append(parts, pluralVerb(int64(n), "piece of evidence missing", "pieces of evidence missing"))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing vanished")
	}
	return strings.Join(parts, ", ")
}

// gapLines are the warnings an incomplete run must show wherever it is
// rendered.
func gapLines(r *audit.Report) []string {
	var out []string
	for _, m := range r.Summary.Missing {
		out = append(out, "MISSING EVIDENCE: "+m)
	}
	for _, s := range r.Summary.Skipped {
		out = append(out, "SKIPPED CHECK: "+s)
	}
	for _, n := range r.Summary.Notes {
		out = append(out, "NOTE: "+n)
	}
	return out
}

// verdictOf is the report's verdict, judged afresh when the summary has
// none.
func verdictOf(r *audit.Report) audit.Verdict {
	if r.Summary.Verdict != "" {
		return r.Summary.Verdict
	}
	return audit.Judge(r.Findings, r.Summary.Missing)
}

// severityCounts counts findings (not records) by severity.
func severityCounts(fs []audit.Finding) map[audit.Severity]int64 {
	m := map[audit.Severity]int64{}
	for _, f := range fs {
		m[f.Severity]++
	}
	return m
}

// causesIn lists the causes present in fs, in audit.Causes order, then
// unknown causes alphabetically.
func causesIn(fs []audit.Finding) []audit.Cause {
	present := map[audit.Cause]bool{}
	for _, f := range fs {
		present[f.Cause] = true
	}
	var out, extra []audit.Cause
	for _, c := range audit.Causes {
		if present[c] {
			out = append(out, c)
			delete(present, c)
		}
	}
	for c := range present {
		extra = append(extra, c)
	}
	slices.Sort(extra)
	return append(out, extra...)
}

// fitRows wraps the topic, key and detail columns of rows so that the
// table is at most width wide; the other columns keep their width.
// A terminal too narrow still gets key and detail columns 8
// and 16 wide.
func fitRows(header []string, rows [][]string, width int) {
	n := len(header)
	natural := make([]int, n)
	for i, h := range header {
		natural[i] = runewidth.StringWidth(h)
	}
	for _, row := range rows {
		for i, c := range row {
			natural[i] = max(natural[i], runewidth.StringWidth(c))
		}
	}
	const topic = 3 // a long topic name wraps too
	topicW := min(natural[topic], max(16, width/6))
	avail := width - (3*n + 1) - topicW // the borders and the padding
	for i, w := range natural[:n-2] {
		if i != topic {
			avail -= w
		}
	}
	keyW := min(natural[n-2], max(8, avail/4))
	detailW := max(16, avail-keyW)
	for _, row := range rows {
		row[topic] = wrapText(row[topic], topicW)
		row[n-2] = wrapText(row[n-2], keyW)
		row[n-1] = wrapText(row[n-1], detailW)
	}
}

// wrapText breaks s into lines of at most width columns, at spaces where
// it can and inside a word longer than a line.
func wrapText(s string, width int) string {
	if width < 1 || runewidth.StringWidth(s) <= width {
		return s
	}
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		for runewidth.StringWidth(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			head := runewidth.Truncate(word, width, "")
			lines = append(lines, head)
			word = word[len(head):]
		}
		switch {
		case line == "":
			line = word
		case runewidth.StringWidth(line)+1+runewidth.StringWidth(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// detailCell is a finding's detail with the expected and actual state,
// on one line: the table wraps it.
func detailCell(f audit.Finding) string {
	s := flat(f.Detail)
	if f.Expected != "" {
		s += " | expected: " + flat(f.Expected)
	}
	if f.Actual != "" {
		s += " | actual: " + flat(f.Actual)
	}
	return s
}

// flat puts s on one line.
func flat(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
}

// clip shortens s to n runes with an ellipsis and flattens newlines.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", " ")), " ")
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
