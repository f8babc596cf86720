package report

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// JSON writes the report as kaudit's JSON document: app_id,
// generated_at, cut, summary and findings, plus the report's edges,
// timeline, lineage and source when present. Empty lists print as [] and
// empty counts as {}, never null.
func JSON(w io.Writer, r *audit.Report) error {
	c := *r
	if c.Cut == nil {
		c.Cut = []audit.PartitionCut{}
	}
	if c.Findings == nil {
		c.Findings = []audit.Finding{}
	}
	if c.Summary.ByStage == nil {
		c.Summary.ByStage = map[audit.Stage]int64{}
	}
	if c.Summary.ByCause == nil {
		c.Summary.ByCause = map[audit.Cause]int64{}
	}
	if c.Summary.Verdict == "" {
		c.Summary.Verdict = audit.Judge(c.Findings, c.Summary.Missing)
	}
	b, err := encodeIndented(toWire(&c))
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

var verdicts = map[audit.Verdict]bool{
	audit.VerdictClean: true, audit.VerdictLoss: true, audit.VerdictAnomaly: true, audit.VerdictIncomplete: true,
}

// ReadJSON reads a report written by JSON. It rejects a document that is
// not one JSON object, a verdict outside the vocabulary, and findings with
// no stage or cause. A finding with no severity gets its cause's.
//
// A document of schema 2 (what JSON writes) has key, expected and actual as
// JSON values and null for unknown numbers; one without a schema is read
// as the earlier shape (strings and -1), so last night's baseline still
// reads.
func ReadJSON(rd io.Reader) (*audit.Report, error) {
	dec := json.NewDecoder(rd)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("decode report: trailing data after the report")
	}
	var probe struct {
		Schema int `json:"schema"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	var r audit.Report
	switch probe.Schema {
	case 0:
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("decode report: %w", err)
		}
	case jsonSchema:
		var w wireReport
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, fmt.Errorf("decode report: %w", err)
		}
		r = *w.report()
	default:
		return nil, fmt.Errorf("decode report: schema %d is not one this kaudit reads (it reads %d)", probe.Schema, jsonSchema)
	}
	if r.AppID == "" {
		return nil, errors.New("decode report: no app_id: not a kaudit report")
	}
	if r.Summary.Verdict != "" && !verdicts[r.Summary.Verdict] {
		return nil, fmt.Errorf("decode report: unknown verdict %q", r.Summary.Verdict)
	}
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Stage == "" || f.Cause == "" {
			return nil, fmt.Errorf("decode report: finding %d has no stage or cause", i)
		}
		if !slices.Contains(audit.Stages, f.Stage) || !slices.Contains(audit.Causes, f.Cause) {
			return nil, fmt.Errorf("decode report: finding %d: stage %q or cause %q is not in kaudit's vocabulary", i, f.Stage, f.Cause)
		}
		if f.Severity == "" {
			f.Severity = f.Cause.Severity()
		}
		if f.Severity != f.Cause.Severity() {
			return nil, fmt.Errorf("decode report: finding %d: cause %s has severity %s, not %s", i, f.Cause, f.Cause.Severity(), f.Severity)
		}
	}
	for _, l := range r.Lineage {
		if l.Finding < 0 || l.Finding >= len(r.Findings) {
			return nil, fmt.Errorf("decode report: lineage names finding %d of %d", l.Finding, len(r.Findings))
		}
	}
	if b := r.Baseline; b != nil {
		for _, i := range b.New {
			if i < 0 || i >= len(r.Findings) {
				return nil, fmt.Errorf("decode report: the baseline names finding %d of %d as new", i, len(r.Findings))
			}
		}
		if b.Verdict != "" && !verdicts[b.Verdict] {
			return nil, fmt.Errorf("decode report: unknown baseline verdict %q", b.Verdict)
		}
	}
	return &r, nil
}

// CSV writes one row per finding under a header of exactly
// audit.FindingColumns. A key is its text (a JSON string as its
// characters, a null key empty, any other value as its JSON); expected and
// actual are the values' JSON text; a number kaudit does not know (a join
// output with no offset, a record with no producer) is an empty cell, as
// it is null in the JSON. A cell that a spreadsheet would run as a
// formula gets a leading single quote (csvCells).
func CSV(w io.Writer, r *audit.Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(audit.FindingColumns); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	for i, f := range r.Findings {
		if err := cw.Write(findingRow(f)); err != nil {
			return fmt.Errorf("write csv row %d: %w", i, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// findingRow is a finding's fields in audit.FindingColumns order, each a
// safe CSV cell (csvCells).
func findingRow(f audit.Finding) []string {
	return csvCells(string(f.Stage), string(f.Cause), string(f.Severity), f.Topic,
		known(int64(f.Partition)), known(f.Offset),
		strconv.FormatInt(f.Count, 10), keyText(f.Key), isoMillis(f.Timestamp),
		f.TransactionalID, known(f.ProducerID),
		known(int64(f.ProducerEpoch)), f.Expected, f.Actual, f.Detail)
}

// isoMillis is a record timestamp as the postmortem writes it, in UTC
// (RFC 3339 with milliseconds: 2026-11-30T10:07:36.800Z), "" when unknown.
func isoMillis(ms int64) string {
	if ms < 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// csvCells are cells a spreadsheet will not run: a cell that starts with
// =, +, -, @, a tab or a carriage return (a key "=HYPERLINK(…)", a detail
// from a record's value) is read as a formula, so it gets a leading single
// quote, as OWASP's CSV-injection advice says; a number ("-5", the JSON of
// a negative value) is no formula and stays as it is.
func csvCells(cells ...string) []string {
	for i, c := range cells {
		cells[i] = csvCell(c)
	}
	return cells
}

func csvCell(s string) string {
	if s == "" || !strings.ContainsRune("=+-@\t\r", rune(s[0])) || plainNumber.MatchString(s) {
		return s
	}
	return "'" + s
}

// plainNumber is a decimal number a spreadsheet reads as one.
var plainNumber = regexp.MustCompile(`^[-+]?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

// known is n as text, or "" for -1, the number kaudit does not know.
func known(n int64) string {
	if n == -1 {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// keyText is a key as a person reads and types it: a JSON string as its
// characters, a null key as nothing, any other value (a number, a record)
// as its JSON text. Every format but the JSON prints keys so.
func keyText(k string) string {
	switch {
	case k == "null":
		return ""
	case len(k) >= 2 && k[0] == '"':
		var s string
		if json.Unmarshal([]byte(k), &s) == nil {
			return s
		}
	}
	return k
}

// spaced is a JSON value with a space after each comma between its
// members, so that a long record wraps in a table cell; any other text
// is returned as it is.
func spaced(v string) string {
	if !strings.ContainsRune(v, ',') || !json.Valid([]byte(v)) {
		return v
	}
	var b strings.Builder
	in, esc := false, false
	for _, c := range v {
		b.WriteRune(c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && c == ',':
			b.WriteByte(' ')
		}
	}
	return b.String()
}
