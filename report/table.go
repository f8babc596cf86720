package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-runewidth"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/kaudit/kaudit/audit"
)

// tableRows caps the findings a terminal table prints; the rest are
// counted under it (CSV and JSON hold them all).
const tableRows = 500

// Table writes the verdict line, the evidence that is missing, and a
// box table of the findings, DefaultWidth wide.
func Table(w io.Writer, r *audit.Report) error { return TableWith(w, r, Options{}) }

// tableMinFree is the width the box table needs for where, key and detail
// beyond its fixed columns; a narrower terminal gets one block per finding.
const tableMinFree = 48

// TableWith writes the table format as o asks: o.Plain, for output that
// is not a terminal (a pipe, a file), prints one line per finding with its
// columns aligned by spaces, every cell whole, as Kafka's own tools print;
// o.Wide a box table unwrapped; else a box table fitted to o.Width (where,
// key and detail wrap), or on a terminal too narrow for one, a block of
// lines per finding.
func TableWith(w io.Writer, r *audit.Report, o Options) error {
	width := o.Width
	if width <= 0 {
		width = DefaultWidth
	}
	// fit is prefix and line, wrapped to the terminal's width under the
	// prefix where the output is a terminal
	fit := func(prefix, line string) string {
		if o.Plain || o.Wide {
			return prefix + line
		}
		pad := runewidth.StringWidth(prefix)
		return prefix + strings.ReplaceAll(wrapText(line, width-pad), "\n", "\n"+strings.Repeat(" ", pad))
	}
	var b strings.Builder
	b.WriteString(fit("", verdictLine(r)) + "\n")
	for _, line := range missingLines(r) {
		b.WriteString(fit("", line) + "\n")
	}
	// what to do next, as the postmortem's first screen says it
	if steps := nextSteps(r, TallyOf(r), o); len(steps) > 0 {
		b.WriteString("What to do next:\n")
		for i, st := range steps {
			b.WriteString(fit(fmt.Sprintf("  %d. ", i+1), plainMarkdown(st)) + "\n")
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	b.Reset()
	// losses first, then anomalies, risks and information; below
	// --min-severity, counted and not shown
	shown := make([]audit.Finding, 0, len(r.Findings))
	hidden := 0
	for _, f := range r.Findings {
		if sevOrder(f.Severity) > sevOrder(o.MinSeverity) {
			hidden++
			continue
		}
		shown = append(shown, f)
	}
	slices.SortStableFunc(shown, func(a, b audit.Finding) int { return sevOrder(a.Severity) - sevOrder(b.Severity) })
	if len(r.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	if len(shown) > 0 {
		header := []string{"stage", "cause", "severity", "where", "count", "key", "detail"}
		var rows [][]string
		for _, f := range shown[:min(len(shown), tableRows)] {
			rows = append(rows, []string{string(f.Stage), string(f.Cause), string(f.Severity), findingWhere(f),
				strconv.FormatInt(max(f.Count, 1), 10), flat(keyText(f.Key)), detailCell(f)})
		}
		var err error
		switch {
		case o.Plain:
			err = plainTable(w, header, rows)
		case !o.Wide && !fitRows(header, rows, width):
			err = blockTable(w, rows, width)
		default:
			err = boxTable(w, header, rows)
		}
		if err != nil {
			return fmt.Errorf("write table: %w", err)
		}
		if n := len(shown) - tableRows; n > 0 {
			fmt.Fprintf(&b, "… %d more findings not shown (use --format csv or json for all)\n", n)
		}
	}
	if hidden > 0 {
		fmt.Fprintf(&b, "… %d findings below --min-severity %s not shown\n", hidden, o.MinSeverity)
	}
	for _, n := range r.Summary.Notes {
		b.WriteString(fit("", "NOTE: "+n) + "\n")
	}
	if !o.Plain && len(r.Findings) > 0 {
		b.WriteString(fit("", "The postmortem, with how to do each step: --output incident.md (or incident.html); every finding: --format csv or json.") + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// sevOrder orders severities, loss first; "" (no minimum) is below
// them all.
func sevOrder(s audit.Severity) int {
	switch s {
	case audit.SeverityLoss:
		return 0
	case audit.SeverityAnomaly:
		return 1
	case audit.SeverityRisk:
		return 2
	case audit.SeverityInfo:
		return 3
	}
	return 4
}

// ParseSeverity reads --min-severity: loss, anomaly, risk or info.
func ParseSeverity(s string) (audit.Severity, error) {
	switch v := audit.Severity(strings.ToLower(s)); v {
	case audit.SeverityLoss, audit.SeverityAnomaly, audit.SeverityRisk, audit.SeverityInfo:
		return v, nil
	case "":
		return "", nil
	}
	return "", fmt.Errorf("%q: want loss, anomaly, risk or info", s)
}

// plainMarkdown is a line of the postmortem's Markdown as plain text: no
// emphasis or code marks, no escapes.
func plainMarkdown(s string) string {
	s = strings.NewReplacer("**", "", "`", "", "*How to do it*", "the postmortem's How to do it").Replace(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(b.String())
}

// findingWhere is topic/partition@offset, as far as the finding names
// them.
func findingWhere(f audit.Finding) string {
	s := where(f.Topic, f.Partition)
	if f.Topic == "" {
		s = "-"
	}
	if f.Offset >= 0 {
		s += fmt.Sprintf("@%d", f.Offset)
	}
	return s
}

func boxTable(w io.Writer, header []string, rows [][]string) error {
	t := tablewriter.NewTable(w, tablewriter.WithRowAutoWrap(tw.WrapNone), tablewriter.WithHeaderAutoWrap(tw.WrapNone))
	t.Header(header)
	for _, row := range rows {
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}

// plainTable aligns the columns with spaces, one line per row, as
// kafka-consumer-groups.sh prints: easy to grep, cut and sort.
func plainTable(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	up := make([]string, len(header))
	for i, h := range header {
		up[i] = strings.ToUpper(h)
	}
	fmt.Fprintln(tw, strings.Join(up, "\t"))
	for _, row := range rows {
		cells := make([]string, len(row))
		for i, c := range row {
			cells[i] = strings.ReplaceAll(orDash(c), "\t", " ")
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// blockTable prints each finding as a block on a narrow terminal: its
// severity, cause, stage, where, count and key on one line (wrapped if
// need be), its detail wrapped below, indented.
func blockTable(w io.Writer, rows [][]string, width int) error {
	var b strings.Builder
	for _, row := range rows {
		head := fmt.Sprintf("%s %s at %s, %s", strings.ToUpper(row[2]), row[1], row[0], row[3])
		if row[4] != "1" {
			head += ", " + row[4] + " records"
		}
		if row[5] != "" {
			head += ", key " + row[5]
		}
		b.WriteString(wrapText(head, width) + "\n")
		if row[6] != "" {
			for _, l := range strings.Split(wrapText(row[6], width-2), "\n") {
				b.WriteString("  " + l + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// verdictLine is the one-line verdict: the app, the verdict in capitals
// and the numbers that justify it (with a baseline, first the verdict of
// what is new since).
func verdictLine(r *audit.Report) string {
	t := TallyOf(r)
	line := fmt.Sprintf("kaudit %s: %s: %s", orDash(r.AppID), strings.ToUpper(string(t.Verdict)), verdictCounts(t))
	if r.Baseline != nil {
		return fmt.Sprintf("kaudit %s: %s since the baseline (%s new); the whole audit: %s: %s", orDash(r.AppID), strings.ToUpper(string(t.Exit)),
			plural(int64(t.New), "finding"), strings.ToUpper(string(t.Verdict)), verdictCounts(t))
	}
	return line
}

// verdictCounts are the numbers that justify the verdict, in one line.
func verdictCounts(t Tally) string {
	var parts []string
	if t.Vanished > 0 {
		s := plural(t.Vanished, "record") + " vanished"
		var where []string
		if t.Replayable > 0 {
			where = append(where, num(t.Replayable)+" replayable")
		}
		if t.Gone > 0 {
			where = append(where, num(t.Gone)+" gone from Kafka")
		}
		if t.Outputs > 0 {
			where = append(where, plural(t.Outputs, "join output"))
		}
		if t.Unplaced > 0 {
			where = append(where, num(t.Unplaced)+" without an offset")
		}
		if len(where) > 0 {
			s += " (" + strings.Join(where, ", ") + ")"
		}
		parts = append(parts, s)
	}
	if t.AnomalyFindings > 0 {
		parts = append(parts, pluralVerb(t.AnomalyFindings, "anomaly", "anomalies"))
	}
	if t.Risks > 0 {
		parts = append(parts, plural(t.Risks, "risky setting"))
	}
	switch {
	case t.PendingUnknown:
		parts = append(parts, "pending not known (the group's committed offsets are missing)")
	case t.Pending > 0:
		parts = append(parts, fmt.Sprintf("%d pending (lag, not loss)", t.Pending))
	}
	if t.Missing > 0 {
		parts = append(parts, pluralVerb(int64(t.Missing), "piece of evidence missing", "pieces of evidence missing"))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing vanished")
	}
	return strings.Join(parts, ", ")
}

// missingLines are the warnings an incomplete run must show wherever it
// is rendered, before its findings.
func missingLines(r *audit.Report) []string {
	var out []string
	for _, m := range r.Summary.Missing {
		out = append(out, "MISSING EVIDENCE: "+m)
	}
	for _, s := range r.Summary.Skipped {
		out = append(out, "SKIPPED CHECK: "+s)
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

// fitRows wraps the where, key and detail columns of rows so that the
// box table is at most width wide; the other columns keep their width. It
// reports false, changing nothing, when the fixed columns leave where,
// key and detail less than tableMinFree.
func fitRows(header []string, rows [][]string, width int) bool {
	n := len(header)
	natural := make([]int, n)
	for i, h := range header {
		natural[i] = runewidth.StringWidth(h)
	}
	for _, row := range rows {
		for i, c := range row {
			for _, l := range strings.Split(c, "\n") {
				natural[i] = max(natural[i], runewidth.StringWidth(l))
			}
		}
	}
	const whereCol, keyCol, detailCol = 3, 5, 6
	avail := width - (3*n + 1) // the borders and the padding
	for i, w := range natural {
		if i != whereCol && i != keyCol && i != detailCol {
			avail -= w
		}
	}
	if avail < tableMinFree {
		return false
	}
	whereW := min(natural[whereCol], max(16, avail/3))
	keyW := min(natural[keyCol], max(8, (avail-whereW)/4))
	detailW := max(16, avail-whereW-keyW)
	for _, row := range rows {
		row[whereCol] = wrapText(row[whereCol], whereW)
		row[keyCol] = wrapText(row[keyCol], keyW)
		row[detailCol] = wrapText(row[detailCol], detailW)
	}
	return true
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
		s += " | expected: " + spaced(flat(f.Expected))
	}
	if f.Actual != "" {
		s += " | actual: " + spaced(flat(f.Actual))
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
