package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"

	"github.com/kaudit/kaudit/audit"
)

// tableRows caps the findings a terminal table prints; the rest are
// counted under it (CSV and JSON hold them all).
const tableRows = 500

// Table writes the verdict line, the evidence that is missing, and a
// terminal table of the findings.
func Table(w io.Writer, r *audit.Report) error {
	var b strings.Builder
	b.WriteString(verdictLine(r))
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
	t := tablewriter.NewTable(w)
	t.Header("stage", "cause", "severity", "topic", "partition", "offset", "count", "key", "detail")
	for _, f := range r.Findings[:min(len(r.Findings), tableRows)] {
		if err := t.Append([]string{string(f.Stage), string(f.Cause), string(f.Severity), f.Topic,
			strconv.Itoa(int(f.Partition)), strconv.FormatInt(f.Offset, 10), strconv.FormatInt(f.Count, 10),
			clip(f.Key, 40), clip(f.Detail, 80)}); err != nil {
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
func verdictLine(r *audit.Report) string {
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
