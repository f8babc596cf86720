package report

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

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
	return &r, nil
}

// CSV writes one row per finding under a header of exactly
// audit.FindingColumns.
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

// findingRow is a finding's fields in audit.FindingColumns order.
func findingRow(f audit.Finding) []string {
	return []string{
		string(f.Stage), string(f.Cause), string(f.Severity), f.Topic,
		strconv.FormatInt(int64(f.Partition), 10), strconv.FormatInt(f.Offset, 10),
		strconv.FormatInt(f.Count, 10), f.Key, strconv.FormatInt(f.Timestamp, 10),
		f.TransactionalID, strconv.FormatInt(f.ProducerID, 10),
		strconv.FormatInt(int64(f.ProducerEpoch), 10), f.Expected, f.Actual, f.Detail,
	}
}

// identity is what makes two findings "the same" across runs.
type identity struct {
	stage     audit.Stage
	cause     audit.Cause
	topic     string
	partition int32
	offset    int64
	key       string
}

func idOf(f audit.Finding) identity {
	return identity{f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Key}
}

// NewSince returns the findings of cur that prev does not have, in cur's
// order. Two findings are the same when their stage, cause, topic,
// partition, offset and key are; a nil prev has no findings.
func NewSince(prev, cur *audit.Report) []audit.Finding {
	if cur == nil {
		return nil
	}
	seen := map[identity]bool{}
	if prev != nil {
		for _, f := range prev.Findings {
			seen[idOf(f)] = true
		}
	}
	var out []audit.Finding
	for _, f := range cur.Findings {
		if !seen[idOf(f)] {
			out = append(out, f)
		}
	}
	return out
}

// ErrAppMismatch is returned by Merge for reports of different apps.
var ErrAppMismatch = errors.New("reports are of different apps")

// Merge combines shard reports of one app into one. Every report must have
// the same app_id. Cuts are concatenated (an entry repeated exactly is kept
// once; one partition with different numbers in two shards is kept twice
// and noted); findings are deduplicated (exact copies); funnel counts,
// edges and timeline minutes are added up; missing evidence, skipped checks
// and notes are united; lineage is re-pointed at the merged findings; the
// summary is recomputed with Finish. GeneratedAt is the latest of the
// shards.
func Merge(reports ...*audit.Report) (*audit.Report, error) {
	var rs []*audit.Report
	for _, r := range reports {
		if r != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil, errors.New("merge: no reports")
	}
	out := &audit.Report{AppID: rs[0].AppID}
	cutSeen := map[audit.PartitionCut]bool{}
	cutTP := map[audit.TopicPartition]bool{}
	findSeen := map[audit.Finding]bool{}
	var sources []string
	edges := map[[2]string]int{}
	minutes := map[int64]int{}
	type lin struct {
		f   audit.Finding
		hop []audit.Hop
	}
	var lineage []lin
	for i, r := range rs {
		if r.AppID != out.AppID {
			return nil, fmt.Errorf("merge report %d (app %q) into app %q: %w", i, r.AppID, out.AppID, ErrAppMismatch)
		}
		if r.GeneratedAt.After(out.GeneratedAt) {
			out.GeneratedAt = r.GeneratedAt
		}
		for _, c := range r.Cut {
			if cutSeen[c] {
				continue
			}
			cutSeen[c] = true
			tp := audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}
			if cutTP[tp] {
				out.Summary.Notes = appendNew(out.Summary.Notes,
					fmt.Sprintf("the shards disagree on the cut of %s; both are listed", tp))
			}
			cutTP[tp] = true
			out.Cut = append(out.Cut, c)
		}
		for _, f := range r.Findings {
			if !findSeen[f] {
				findSeen[f] = true
				out.Findings = append(out.Findings, f)
			}
		}
		for _, m := range r.Summary.Missing {
			out.Summary.Missing = appendNew(out.Summary.Missing, m)
		}
		for _, s := range r.Summary.Skipped {
			out.Summary.Skipped = appendNew(out.Summary.Skipped, s)
		}
		for _, n := range r.Summary.Notes {
			out.Summary.Notes = appendNew(out.Summary.Notes, n)
		}
		for k, v := range r.Summary.Records {
			if out.Summary.Records == nil {
				out.Summary.Records = map[string]int64{}
			}
			out.Summary.Records[k] += v
		}
		for _, e := range r.Edges {
			k := [2]string{e.From, e.To}
			if j, ok := edges[k]; ok {
				out.Edges[j].Records += e.Records
				out.Edges[j].Vanished += e.Vanished
				continue
			}
			edges[k] = len(out.Edges)
			out.Edges = append(out.Edges, e)
		}
		for _, m := range r.Timeline {
			if j, ok := minutes[m.Start]; ok {
				t := &out.Timeline[j]
				t.Produced += m.Produced
				t.Committed += m.Committed
				t.Aborted += m.Aborted
				t.Vanished += m.Vanished
				continue
			}
			minutes[m.Start] = len(out.Timeline)
			out.Timeline = append(out.Timeline, m)
		}
		for _, sg := range r.Signatures {
			i := slices.IndexFunc(out.Signatures, func(o audit.Signature) bool {
				return o.Issue == sg.Issue && o.Topic == sg.Topic && o.Partition == sg.Partition
			})
			if i < 0 {
				out.Signatures = append(out.Signatures, sg)
				continue
			}
			o := &out.Signatures[i]
			o.From, o.To, o.Findings = min(o.From, sg.From), max(o.To, sg.To), o.Findings+sg.Findings
			for _, k := range sg.Keys {
				if !slices.Contains(o.Keys, k) && len(o.Keys) < 10 {
					o.Keys = append(o.Keys, k)
				}
			}
		}
		for _, l := range r.Lineage {
			if l.Finding >= 0 && l.Finding < len(r.Findings) {
				lineage = append(lineage, lin{r.Findings[l.Finding], l.Hops})
			}
		}
		if r.Source != "" {
			sources = appendNew(sources, r.Source)
		}
	}
	slices.SortFunc(out.Cut, func(a, b audit.PartitionCut) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	slices.SortFunc(out.Timeline, func(a, b audit.Minute) int { return cmp.Compare(a.Start, b.Start) })
	out.Finish()
	index := make(map[audit.Finding]int, len(out.Findings))
	for i, f := range out.Findings {
		index[f] = i
	}
	linSeen := map[int]bool{}
	for _, l := range lineage {
		i := index[l.f]
		if !linSeen[i] {
			linSeen[i] = true
			out.Lineage = append(out.Lineage, audit.Lineage{Finding: i, Hops: l.hop})
		}
	}
	if len(sources) > 0 {
		out.Source = strings.Join(sources, "; ")
	}
	return out, nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
