// Package combine puts reports together: the shards of one audit into
// one report (kaudit merge), and tonight's report against last night's
// (kaudit diff --baseline), with the verdict the exit code judges. It
// imports nothing of kaudit but audit.
package combine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Since judges cur against prev, a previous report read from file: it
// sets cur.Baseline to the findings of cur that prev does not have and
// their verdict, which cur.ExitVerdict then returns.
func Since(prev, cur *audit.Report, file string) {
	cur.Finish()
	fresh := NewSince(prev, cur)
	b := &audit.Baseline{Report: file, New: []int{}}
	if prev != nil {
		b.GeneratedAt = prev.GeneratedAt
	}
	at := make(map[audit.Finding][]int, len(cur.Findings))
	for i, f := range cur.Findings {
		at[f] = append(at[f], i)
	}
	for _, f := range fresh {
		if is := at[f]; len(is) > 0 {
			b.New = append(b.New, is[0])
			at[f] = is[1:]
		}
	}
	if prev != nil && prev.Inferred != nil && cur.Inferred != nil {
		b.SpecChanges = SpecChanges(prev.Inferred, cur.Inferred)
		for _, c := range b.SpecChanges {
			cur.Summary.Notes = append(cur.Summary.Notes, "the spec inferred tonight differs from the baseline's: "+c)
		}
	}
	cur.Baseline = b
	cur.Finish()
}

// SpecChanges lists how the inferred spec cur differs from prev, table by
// table and join by join ("table orders: reduce latest, was sum(amount)").
func SpecChanges(prev, cur *audit.Inferred) []string {
	var out []string
	tables := func(in *audit.Inferred) map[string]audit.InferredTable {
		m := map[string]audit.InferredTable{}
		for _, t := range in.Tables {
			if t.Name != "" {
				m[t.Name] = t
			}
		}
		return m
	}
	pt, ct := tables(prev), tables(cur)
	for _, name := range sortedUnion(pt, ct) {
		p, inPrev := pt[name]
		c, inCur := ct[name]
		switch {
		case !inPrev:
			out = append(out, fmt.Sprintf("table %s is new", name))
			continue
		case !inCur:
			out = append(out, fmt.Sprintf("table %s is gone", name))
			continue
		}
		field := func(what, a, b string) {
			if a != b {
				out = append(out, fmt.Sprintf("table %s: %s %s, was %s", name, what, cmp.Or(b, "none"), cmp.Or(a, "none")))
			}
		}
		field("source", p.Source, c.Source)
		field("steps", strings.Join(p.Steps, "; "), strings.Join(c.Steps, "; "))
		field("select_key", p.SelectKey, c.SelectKey)
		field("reduce", p.Reduce, c.Reduce)
		field("window", p.Window, c.Window)
		field("output", p.Output, c.Output)
		if (p.Unjudged == "") != (c.Unjudged == "") {
			field("judged", judged(p.Unjudged), judged(c.Unjudged))
		}
	}
	joins := func(in *audit.Inferred) map[string]audit.InferredJoin {
		m := map[string]audit.InferredJoin{}
		for _, j := range in.Joins {
			m[j.Output] = j
		}
		return m
	}
	pj, cj := joins(prev), joins(cur)
	for _, out2 := range sortedUnion(pj, cj) {
		p, inPrev := pj[out2]
		c, inCur := cj[out2]
		switch {
		case !inPrev:
			out = append(out, fmt.Sprintf("join into %s is new", out2))
		case !inCur:
			out = append(out, fmt.Sprintf("join into %s is gone", out2))
		case p.Type != c.Type || p.Value != c.Value || p.Left != c.Left || !slices.Equal(p.Right, c.Right):
			out = append(out, fmt.Sprintf("join into %s: %s %s(%s) value %s, was %s %s(%s) value %s", out2, c.Type, c.Left, strings.Join(c.Right, ", "), cmp.Or(c.Value, "none"),
				p.Type, p.Left, strings.Join(p.Right, ", "), cmp.Or(p.Value, "none")))
		}
	}
	return out
}

func judged(unjudged string) string {
	if unjudged == "" {
		return "yes"
	}
	return "no"
}

// sortedUnion is the keys of a and b, sorted.
func sortedUnion[V any](a, b map[string]V) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// checkShards says which shards of an audit are missing from rs (as
// missing evidence: their partitions were not audited), and refuses
// reports that are not shards of one audit.
func checkShards(rs []*audit.Report) ([]string, error) {
	var shards []*audit.Shard
	for _, r := range rs {
		if r.Shard != nil {
			shards = append(shards, r.Shard)
		}
	}
	if len(shards) == 0 {
		return nil, nil
	}
	if len(shards) < len(rs) {
		return nil, fmt.Errorf("merge: %d of the %d reports are shards, the others whole audits: %w", len(shards), len(rs), ErrShards)
	}
	first := shards[0]
	var tasks int32
	by := map[int32]int{} // task partition -> report
	seen := map[int32]bool{}
	for i, sh := range shards {
		switch {
		case sh.Run != first.Run:
			return nil, fmt.Errorf("merge: report %d is of run %q, report 1 of run %q (a report left from another run?): %w", i+1, sh.Run, first.Run, ErrShards)
		case sh.Count != first.Count:
			return nil, fmt.Errorf("merge: report %d is shard %s, report 1 shard %s: %w", i+1, shardName(sh), shardName(first), ErrShards)
		case sh.Count > 0 && seen[sh.Index]:
			return nil, fmt.Errorf("merge: shard %s is given twice: %w", shardName(sh), ErrShards)
		case sh.Fingerprint != first.Fingerprint:
			return nil, fmt.Errorf("merge: report %d read the evidence %q, report 1 %q: shards of two captures, or of a cluster that changed, are not one audit: %w",
				i+1, cmp.Or(sh.Fingerprint, "not named"), cmp.Or(first.Fingerprint, "not named"), ErrShards)
		}
		seen[sh.Index] = true
		for _, p := range sh.Partitions {
			if j, ok := by[p]; ok {
				return nil, fmt.Errorf("merge: task partition %d is in report %d and report %d: %w", p, j+1, i+1, ErrShards)
			}
			by[p] = i
		}
		tasks = max(tasks, sh.Tasks)
	}
	var missing []string
	if first.Count > 0 {
		for i := range first.Count {
			if !seen[i] {
				missing = append(missing, fmt.Sprintf("shard %d/%d was not merged: its task partitions were not audited", i, first.Count))
			}
		}
	}
	var absent []string
	for p := range tasks {
		if _, ok := by[p]; !ok {
			absent = append(absent, fmt.Sprint(p))
		}
	}
	if len(absent) > 0 && (first.Count == 0 || len(missing) == 0) {
		missing = append(missing, fmt.Sprintf("task partitions %s of %d were audited by none of the merged reports", strings.Join(absent, ", "), tasks))
	}
	return missing, nil
}

func shardName(sh *audit.Shard) string {
	if sh.Count > 0 {
		return fmt.Sprintf("%d/%d", sh.Index, sh.Count)
	}
	return fmt.Sprintf("of partitions %v", sh.Partitions)
}

// checkBaselines returns the baseline the merged report is judged
// against: that of every report, which must be one; nil when none has
// one.
func checkBaselines(rs []*audit.Report) (*audit.Baseline, error) {
	var b *audit.Baseline
	for i, r := range rs {
		switch {
		case (r.Baseline == nil) != (rs[0].Baseline == nil):
			return nil, fmt.Errorf("merge: report %d was judged against a baseline and report 1 %s: %w", i+1, map[bool]string{true: "was not", false: "was"}[rs[0].Baseline == nil], ErrShards)
		case r.Baseline == nil:
			continue
		case b != nil && r.Baseline.Report != b.Report:
			return nil, fmt.Errorf("merge: report %d was judged against the baseline %s, report 1 against %s: %w", i+1, r.Baseline.Report, b.Report, ErrShards)
		case b == nil:
			b = &audit.Baseline{Report: r.Baseline.Report, GeneratedAt: r.Baseline.GeneratedAt, New: []int{}}
		}
	}
	return b, nil
}

// ErrSummary is returned by Merge for a report whose findings do not add
// up to its own summary: findings removed from the file, or added, by
// hand. Its verdict would be the merged report's, without them.
var ErrSummary = errors.New("the report's findings do not add up to its summary")

// checkSummary refuses a report whose summary (as written, before Finish)
// says other counts than its findings give: by stage, by cause, vanished,
// pending, and the verdict. A report with no verdict (built in memory, not
// read from a file) is not checked.
func checkSummary(r *audit.Report) error {
	if r.Summary.Verdict == "" {
		return nil
	}
	sum := r.Summary
	c := &audit.Report{Findings: slices.Clone(r.Findings), Summary: audit.Summary{Missing: sum.Missing}}
	c.Finish()
	got := c.Summary
	var diffs []string
	for _, cause := range audit.Causes {
		if got.ByCause[cause] != sum.ByCause[cause] {
			diffs = append(diffs, fmt.Sprintf("%s: %d in its summary, %d in its findings", cause, sum.ByCause[cause], got.ByCause[cause]))
		}
	}
	for _, stage := range audit.Stages {
		if got.ByStage[stage] != sum.ByStage[stage] {
			diffs = append(diffs, fmt.Sprintf("stage %s: %d in its summary, %d in its findings", stage, sum.ByStage[stage], got.ByStage[stage]))
		}
	}
	if got.Vanished != sum.Vanished || got.Pending != sum.Pending {
		diffs = append(diffs, fmt.Sprintf("vanished %d and pending %d in its summary, %d and %d in its findings", sum.Vanished, sum.Pending, got.Vanished, got.Pending))
	}
	if got.Verdict != sum.Verdict {
		diffs = append(diffs, fmt.Sprintf("verdict %s in its summary, %s by its findings", sum.Verdict, got.Verdict))
	}
	if len(diffs) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(diffs, "; "), ErrSummary)
	}
	return nil
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

// ErrShards is returned by Merge for reports that are not the shards of
// one audit: a shard given twice, shards of different runs or of
// different shard counts, a shard with a whole audit, reports judged
// against different baselines.
var ErrShards = errors.New("the reports are not the shards of one audit")

// Merge combines shard reports of one app into one. Every report must have
// the same app_id. Cuts are concatenated (an entry repeated exactly is kept
// once; one partition with different numbers in two shards is kept twice
// and noted); findings are deduplicated (exact copies); funnel counts,
// edges and timeline minutes are added up; missing evidence, skipped checks
// and notes are united; lineage is re-pointed at the merged findings; the
// summary is recomputed with Finish. GeneratedAt is the latest of the
// shards. A report whose findings do not add up to its own summary is
// refused (ErrSummary), as are shards that read other evidence (their
// Fingerprint, ErrShards).
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
	for i, r := range rs {
		if err := checkSummary(r); err != nil {
			return nil, fmt.Errorf("merge: report %d: %w", i+1, err)
		}
		r.Finish() // sorted, lineage and baseline bound to its findings
	}
	missing, err := checkShards(rs)
	if err != nil {
		return nil, err
	}
	baseline, err := checkBaselines(rs)
	if err != nil {
		return nil, err
	}
	out := &audit.Report{AppID: rs[0].AppID}
	out.Summary.Missing = missing
	var fresh []audit.Finding // new since the baseline, in any shard
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
		if r.Baseline != nil {
			for _, f := range r.NewFindings() {
				if !slices.Contains(fresh, f) {
					fresh = append(fresh, f)
				}
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
	if baseline != nil {
		for _, f := range fresh {
			baseline.New = append(baseline.New, index[f])
		}
		out.Baseline = baseline
		out.Finish()
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
