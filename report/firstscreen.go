package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// The postmortem's first screen: the verdict with the numbers that matter
// (records lost, how many can be replayed, when, at which stage), the
// warnings of an incomplete run, the losses and anomalies, and what to do.
// Everything after it is detail.

// mdFirstRows caps the rows of the first screen's table of losses and
// anomalies (runs of consecutive offsets are one row already).
const mdFirstRows = 20

// headline writes the verdict paragraph and the when-and-where line.
func headline(md *mdWriter, r *audit.Report, t Tally) {
	if b := r.Baseline; b != nil {
		md.f("**Verdict on what is new since the baseline: %s.** %s of the %s %s new since the audit of %s (`%s`); the exit code judges the new ones.\n\n",
			strings.ToUpper(string(t.Exit)), num(int64(t.New)), plural(int64(len(r.Findings)), "finding"), map[bool]string{true: "is", false: "are"}[t.New == 1],
			stamp(b.GeneratedAt), strings.ReplaceAll(flat(b.Report), "`", "'"))
		md.f("**The whole audit: %s.** %s\n\n", strings.ToUpper(string(t.Verdict)), text(numbersSentence(t)))
	} else {
		md.f("**Verdict: %s.** %s\n\n", strings.ToUpper(string(t.Verdict)), text(numbersSentence(t)))
	}
	var parts []string
	if len(t.Windows) > 0 {
		w := t.Windows[0]
		s := fmt.Sprintf("**When:** %s – %s UTC", w.Start.Format("2006-01-02 15:04"), w.End.Format("15:04"))
		if n := len(t.Windows) - 1; n > 0 {
			s += fmt.Sprintf(" (and %s, see the timeline)", plural(int64(n), "later window"))
		}
		parts = append(parts, s+".")
	}
	if t.Vanished > 0 {
		parts = append(parts, "**Where:** "+strings.Join(whereLost(t), ", ")+".")
	}
	if r.Source != "" {
		parts = append(parts, "**Evidence:** "+text(r.Source)+".")
	}
	if len(parts) > 0 {
		md.s(strings.Join(parts, " ") + "\n\n")
	}
}

// whereLost says where the vanished records stopped, stage by stage; the
// inputs the app's own processing consumed and wrote nothing for
// (`dropped`) are named as such first, not as a loss of the repartition
// topic, which holds what the app gave it.
func whereLost(t Tally) []string {
	var where []string
	dropped := map[audit.Stage]int64{}
	for _, f := range t.Dropped {
		dropped[f.Stage] += max(f.Count, 1)
	}
	for _, s := range audit.Stages {
		if n := dropped[s]; n > 0 {
			where = append(where, fmt.Sprintf("%s in the app's own processing (consumed, nothing written: `dropped`)", num(n)))
		}
		if n := t.LossByStage[s] - dropped[s]; n > 0 {
			where = append(where, fmt.Sprintf("%s at %s", num(n), s))
		}
	}
	return where
}

// numbersSentence says the verdict's numbers in words: what vanished and
// where each part of it can come back from, the anomalies, the lag.
func numbersSentence(t Tally) string {
	var b strings.Builder
	switch {
	case t.Vanished > 0:
		fmt.Fprintf(&b, "%s vanished", plural(t.Vanished, "record"))
		if t.Keys > 0 && int64(t.Keys) < t.KeyedRecords {
			if t.KeyedRecords == t.Vanished {
				fmt.Fprintf(&b, " (%s)", plural(int64(t.Keys), "key"))
			} else {
				fmt.Fprintf(&b, " (%s of them of %s)", num(t.KeyedRecords), plural(int64(t.Keys), "key"))
			}
		}
		var parts []string
		if t.Replayable > 0 {
			parts = append(parts, fmt.Sprintf("%s can be replayed from Kafka", num(t.Replayable)))
		}
		if t.Gone > 0 {
			parts = append(parts, fmt.Sprintf("%s gone from Kafka (they must come from the producing system)", pluralVerb(t.Gone, "is", "are")))
		}
		if t.Outputs > 0 {
			parts = append(parts, pluralVerb(t.Outputs, "is a join output to re-emit", "are join outputs to re-emit"))
		}
		if t.Unplaced > 0 {
			parts = append(parts, pluralVerb(t.Unplaced, "is proved missing without an offset (see its finding)", "are proved missing without offsets (see their findings)"))
		}
		if len(parts) > 0 {
			b.WriteString(": " + strings.Join(parts, ", "))
		}
		b.WriteString(".")
		if t.AppDropped > 0 {
			fmt.Fprintf(&b, " The app's own processing dropped %s of them (consumed, nothing written): replayed into the app as it is, %s dropped again.", num(t.AppDropped), map[bool]string{true: "it is", false: "they are"}[t.AppDropped == 1])
		}
		if t.Unapplied > 0 {
			fmt.Fprintf(&b, " For %s the evidence cannot tell whether the app dropped them or lost them after applying them.", num(t.Unapplied))
		}
	case t.Incomplete():
		b.WriteString("Nothing vanished in the evidence kaudit could read.")
	case t.AnomalyFindings > 0:
		b.WriteString("Nothing vanished.")
	default:
		b.WriteString("Nothing vanished: every input below the group's committed offsets is reflected in the stores and the output.")
	}
	if t.AnomalyFindings > 0 {
		fmt.Fprintf(&b, " %s.", anomalyList(t.Anomalies))
	}
	if t.Incomplete() {
		fmt.Fprintf(&b, " The audit is incomplete: %s (below), so ", pluralVerb(int64(t.Missing), "piece of evidence is missing", "pieces of evidence are missing"))
		if t.Vanished > 0 {
			b.WriteString("the true loss may be larger.")
		} else {
			b.WriteString("this does not show that nothing was lost.")
		}
	}
	switch {
	case t.PendingUnknown:
		b.WriteString(" Which records the app has not processed yet is not known: the group's committed offsets are missing.")
	case t.Pending > 0:
		fmt.Fprintf(&b, " %s pending (lag, not loss).", pluralVerb(t.Pending, "record is", "records are"))
	}
	if t.Risks > 0 {
		fmt.Fprintf(&b, " %s loss (config-risk).", pluralVerb(t.Risks, "setting allows", "settings allow"))
	}
	return b.String()
}

// anomalyList is "3 anomalies that need attention (2 duplicate, 1 …)".
func anomalyList(by map[audit.Cause]int64) string {
	var n int64
	var parts []string
	keys := make([]audit.Finding, 0, len(by))
	for c := range by {
		keys = append(keys, audit.Finding{Cause: c})
	}
	for _, c := range causesIn(keys) {
		n += by[c]
		parts = append(parts, fmt.Sprintf("%d %s", by[c], c))
	}
	return fmt.Sprintf("%s that need%s attention (%s)", pluralVerb(n, "anomaly", "anomalies"), map[bool]string{true: "s"}[n == 1], strings.Join(parts, ", "))
}

// writeWarnings shows, before anything else, what makes the audit
// incomplete: missing evidence, unreadable partitions, skipped checks. An
// incomplete run never looks clean.
func writeWarnings(md *mdWriter, r *audit.Report, t Tally) {
	s := r.Summary
	if t.Missing == 0 && len(s.Skipped) == 0 {
		return
	}
	if t.Missing > 0 {
		md.s("> **Warning: this audit is incomplete.** Evidence was missing, so records may have vanished where kaudit could not look. Do not read the absence of a finding as proof that nothing was lost.\n")
	} else {
		md.s("> **Note:** some checks did not run.\n")
	}
	for _, m := range s.Missing {
		md.f("> - **Missing evidence:** %s\n", text(m))
	}
	if t.Unreadable > 0 {
		md.f("> - **Unreadable:** %s (see `unreadable` below).\n", pluralVerb(int64(t.Unreadable), "partition or file could not be read", "partitions or files could not be read"))
	}
	for _, k := range s.Skipped {
		md.f("> - **Skipped check:** %s\n", text(k))
	}
	md.s("\n")
}

// findingRun is consecutive findings of one cause on consecutive offsets
// of one partition: one row of the first screen.
type findingRun struct {
	first   audit.Finding
	from    int64 // first offset
	to      int64 // last offset (inclusive)
	records int64
	keys    int
	n       int // findings
}

// urgentRuns groups the loss and anomaly findings, losses first, into
// runs of consecutive offsets.
func urgentRuns(r *audit.Report) []findingRun {
	var out []findingRun
	for _, sev := range []audit.Severity{audit.SeverityLoss, audit.SeverityAnomaly} {
		for _, f := range r.Findings {
			if f.Severity != sev {
				continue
			}
			n := max(f.Count, 1)
			if k := len(out) - 1; k >= 0 {
				last := &out[k]
				p := last.first
				if p.Cause == f.Cause && p.Stage == f.Stage && p.Topic == f.Topic && p.Partition == f.Partition &&
					f.Offset >= 0 && last.to >= 0 && f.Offset == last.to+1 {
					last.to = f.Offset + n - 1
					last.records += n
					last.n++
					if f.Key != "" {
						last.keys++
					}
					continue
				}
			}
			run := findingRun{first: f, from: f.Offset, to: f.Offset + n - 1, records: n, n: 1}
			if f.Offset < 0 {
				run.to = -1
			}
			if f.Key != "" {
				run.keys = 1
			}
			out = append(out, run)
		}
	}
	return out
}

// writeUrgent writes the first screen's table of losses and anomalies.
func writeUrgent(md *mdWriter, r *audit.Report) {
	runs := urgentRuns(r)
	if len(runs) == 0 {
		return
	}
	md.s("## Losses and anomalies\n\n")
	md.header("severity", "cause", "stage", "where", ">records", "key")
	for _, rn := range runs[:min(len(runs), mdFirstRows)] {
		f := rn.first
		w := where(f.Topic, f.Partition)
		switch {
		case rn.from < 0:
		case rn.to > rn.from:
			w += fmt.Sprintf("@%d–%d", rn.from, rn.to)
		default:
			w += fmt.Sprintf("@%d", rn.from)
		}
		key := ""
		switch {
		case rn.n == 1:
			key = cell(keyText(f.Key), 40)
		case rn.keys > 0:
			key = plural(int64(rn.keys), "key")
		}
		records := num(rn.records)
		if f.Severity == audit.SeverityAnomaly {
			records = ""
			if rn.n > 1 {
				records = plural(int64(rn.n), "finding")
			}
		}
		md.row(text(string(f.Severity)), "`"+text(string(f.Cause))+"`", text(string(f.Stage)), text(w), records, key)
	}
	if n := len(runs) - mdFirstRows; n > 0 {
		var more int64
		for _, rn := range runs[mdFirstRows:] {
			more += int64(rn.n)
		}
		md.f("\n… and %s more (%s): see the findings by cause below.\n", plural(int64(n), "row"), plural(more, "finding"))
	}
	md.s("\n")
}

// mdNextRanges caps the ranges a step of "What to do next" names.
const mdNextRanges = 4

// rangeList is "orders-v1/0@117, shipments-v1/1@189–190" and how many
// more.
func rangeList(rs []Range) string {
	var parts []string
	for _, rg := range rs[:min(len(rs), mdNextRanges)] {
		s := fmt.Sprintf("%s/%d@%d", rg.Topic, rg.Partition, rg.From)
		if rg.Count > 1 {
			s += fmt.Sprintf("–%d", rg.To())
		}
		parts = append(parts, s)
	}
	if n := len(rs) - mdNextRanges; n > 0 {
		parts = append(parts, fmt.Sprintf("and %s more", plural(int64(n), "range")))
	}
	return strings.Join(parts, ", ")
}

// step is one line of "What to do next": its urgency (lower first) and
// weight (more records first, within one urgency).
type step struct {
	urgency int
	weight  int64
	text    string
}

// The urgency of the steps, most urgent first: what harms now (a
// transaction that blocks every read_committed reader, a checkpoint the
// next start would trust), what the numbers rest on (missing evidence),
// what must be fixed before a replay (the app's own drops), the records to
// bring back, what was counted twice, then what only prevents the next
// incident, and lag.
const (
	urgencyBlocking = iota
	urgencyRestart
	urgencyEvidence
	urgencyFixApp
	urgencyRecover
	urgencyCorrect
	urgencyDecode
	urgencyPrevent
	urgencyLag
)

// nextSteps are the actions the report calls for, most urgent first (by
// what the findings show, not a fixed list), each one line; the details
// (commands, tables) follow under "How to do it".
func nextSteps(r *audit.Report, t Tally, o Options) []string {
	var steps []step
	add := func(urgency int, weight int64, format string, args ...any) {
		steps = append(steps, step{urgency, weight, fmt.Sprintf(format, args...)})
	}
	if t.Incomplete() {
		add(urgencyEvidence, 0, "**Complete the evidence first**: %s (listed at the top). Run kaudit again with it before acting on the numbers below: they are a lower bound.",
			pluralVerb(int64(t.Missing), "piece is missing", "pieces are missing"))
	}
	if t.AppDropped > 0 {
		add(urgencyFixApp, t.AppDropped, "**Find why the app wrote nothing for %s it consumed, and fix it before any replay** (`dropped`: %s%s): its log at those times, a filter or a `split()` branch, an exception handler that skips records, a flatMap that returns nothing. Replayed into the app as it is, %s dropped again.",
			plural(t.AppDropped, "input"), text(findingList(t.Dropped)), text(timeSpan(t.Dropped)), map[bool]string{true: "it is", false: "they are"}[t.AppDropped == 1])
	}
	if t.Unapplied > 0 {
		add(urgencyFixApp, t.Unapplied, "**Find out whether the app dropped %s before replaying them** (`unapplied`: %s%s): the evidence cannot tell a drop by the app from an update the store lost; its log at those times says which. Replayed into an app that drops them, they are lost again.",
			plural(t.Unapplied, "input"), text(findingList(t.UnappliedAt)), text(timeSpan(t.UnappliedAt)))
	}
	if len(t.Replay) > 0 {
		s := fmt.Sprintf("**Replay %s that Kafka still holds**", plural(t.Replayable, "record"))
		if t.AppDropped+t.Unapplied > 0 {
			s = fmt.Sprintf("**Then replay %s that Kafka still holds**, once the app no longer drops them", plural(t.Replayable, "record"))
		}
		add(urgencyRecover, t.Replayable, "%s: %s (the commands are under *How to do it*).", s, text(rangeList(t.Replay)))
	}
	if len(t.GoneRanges) > 0 {
		add(urgencyRecover, t.Gone, "**Recover %s that Kafka no longer holds** from the system that produced them: %s.", plural(t.Gone, "offset"), text(rangeList(t.GoneRanges)))
	}
	var joins, hanging, risks, dups, checkpoints, undecodable []audit.Finding
	for _, f := range r.Findings {
		switch f.Cause {
		case audit.CauseJoinMissing, audit.CauseJoinStale:
			joins = append(joins, f)
		case audit.CauseHangingTransaction:
			hanging = append(hanging, f)
		case audit.CauseConfigRisk:
			risks = append(risks, f)
		case audit.CauseDuplicate:
			dups = append(dups, f)
		case audit.CauseCheckpointAhead:
			checkpoints = append(checkpoints, f)
		case audit.CauseUndecodable:
			undecodable = append(undecodable, f)
		}
	}
	if len(joins) > 0 {
		var keys []string
		for _, f := range joins[:min(len(joins), 3)] {
			keys = append(keys, cell(orDash(keyText(f.Key)), 40))
		}
		if n := len(joins) - 3; n > 0 {
			keys = append(keys, fmt.Sprintf("and %d more", n))
		}
		add(urgencyRecover, int64(len(joins)), "**Re-emit %s** (%s %s): replaying the inputs rebuilds %s, or an update of the left table's record does.", plural(int64(len(joins)), "join output"),
			map[bool]string{true: "key", false: "keys"}[len(joins) == 1], strings.Join(keys, ", "), map[bool]string{true: "it", false: "them"}[len(joins) == 1])
	}
	if len(hanging) > 0 {
		var at []string
		for _, f := range hanging[:min(len(hanging), 3)] {
			at = append(at, fmt.Sprintf("%s/%d from offset %d", f.Topic, f.Partition, f.Offset))
		}
		if n := len(hanging) - 3; n > 0 {
			at = append(at, fmt.Sprintf("and %d more", n))
		}
		add(urgencyBlocking, int64(len(hanging)), "**Abort %s now**: %s; %s.", plural(int64(len(hanging)), "hanging transaction"), text(strings.Join(at, ", ")), text(whoStalls(r, hanging)))
	}
	if len(checkpoints) > 0 {
		add(urgencyRestart, int64(len(checkpoints)), "**Do not restart on %s**: remove the task directories concerned first.", plural(int64(len(checkpoints)), "bad checkpoint"))
	}
	if len(dups) > 0 {
		add(urgencyCorrect, int64(len(dups)), "**Correct what was counted twice**: %s applied twice in committed data.", pluralVerb(int64(len(dups)), "input was", "inputs were"))
	}
	if len(undecodable) > 0 {
		add(urgencyDecode, int64(len(undecodable)), "**Give kaudit the schemas**: %s could not be decoded.", plural(int64(len(undecodable)), "record"))
	}
	if up := upgrades(r, o); len(up) > 0 {
		add(urgencyPrevent, 1, "**Upgrade**: your versions have known issues whose signature these findings match: %s.", text(strings.Join(up, "; ")))
	}
	if len(risks) > 0 {
		add(urgencyPrevent, 0, "**Fix %s** (`config-risk`).", pluralVerb(int64(len(risks)), "setting that allows loss", "settings that allow loss"))
	}
	switch {
	case t.PendingUnknown:
		add(urgencyEvidence, 0, "**Do not read the lag as \"not lost\"**: the group's committed offsets are missing, so which records the app has processed is not known; give kaudit the group's offsets (a capture, or the log dir holding its `__consumer_offsets` partition).")
	case t.Pending > 0:
		add(urgencyLag, t.Pending, "**Let the application catch up**: %s pending (at or above the group's committed offsets: not processed yet).", pluralVerb(t.Pending, "record is", "records are"))
	}
	slices.SortStableFunc(steps, func(a, b step) int {
		return cmp.Or(cmp.Compare(a.urgency, b.urgency), cmp.Compare(b.weight, a.weight))
	})
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = s.text
	}
	return out
}

// whoStalls says who waits behind hanging transactions: the readers of
// the partitions they hold, which are the app itself where it reads them
// (a source or a repartition topic, a changelog on restore) and its
// downstream consumers where they are its output.
func whoStalls(r *audit.Report, hanging []audit.Finding) string {
	role := map[string]string{}
	for _, c := range r.Cut {
		role[c.Topic] = c.Role
	}
	var outputs, inputs, others []string
	for _, f := range hanging {
		switch role[f.Topic] {
		case "output":
			outputs = appendOnce(outputs, f.Topic)
		case "source", "repartition", "changelog":
			inputs = appendOnce(inputs, f.Topic)
		default:
			others = appendOnce(others, f.Topic)
		}
	}
	var parts []string
	if len(outputs) > 0 {
		parts = append(parts, fmt.Sprintf("every read_committed consumer of %s (downstream of the app) stalls at the held LSO now", strings.Join(outputs, ", ")))
	}
	if len(inputs) > 0 {
		parts = append(parts, fmt.Sprintf("the app (and every read_committed reader of %s) stalls behind it now", strings.Join(inputs, ", ")))
	}
	if len(others) > 0 {
		parts = append(parts, fmt.Sprintf("every read_committed reader of %s stalls behind it now", strings.Join(others, ", ")))
	}
	return strings.Join(parts, "; ")
}

func appendOnce(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

// findingList is "orders/0@23, orders/0@151, and 4 more" for findings.
func findingList(fs []audit.Finding) string {
	var parts []string
	for _, f := range fs[:min(len(fs), mdNextRanges)] {
		parts = append(parts, findingWhere(f))
	}
	if n := len(fs) - mdNextRanges; n > 0 {
		parts = append(parts, fmt.Sprintf("and %d more", n))
	}
	return strings.Join(parts, ", ")
}

// timeSpan is ", written 2026-11-30 10:07:36–10:07:37 UTC": when the
// findings' records were written, where their timestamps are known.
func timeSpan(fs []audit.Finding) string {
	lo, hi := int64(-1), int64(-1)
	for _, f := range fs {
		if f.Timestamp < 0 {
			continue
		}
		if lo < 0 || f.Timestamp < lo {
			lo = f.Timestamp
		}
		hi = max(hi, f.Timestamp)
	}
	if lo < 0 {
		return ""
	}
	a, b := time.UnixMilli(lo).UTC(), time.UnixMilli(hi).UTC()
	if a.Format("2006-01-02 15:04:05") == b.Format("2006-01-02 15:04:05") {
		return "; written " + a.Format("2006-01-02 15:04:05") + " UTC"
	}
	if a.Format("2006-01-02") == b.Format("2006-01-02") {
		return "; written " + a.Format("2006-01-02 15:04:05") + "–" + b.Format("15:04:05") + " UTC"
	}
	return "; written " + a.Format("2006-01-02 15:04:05") + " – " + b.Format("2006-01-02 15:04:05") + " UTC"
}

// upgrades are the known issues the findings match that the given versions
// have.
func upgrades(r *audit.Report, o Options) []string {
	var up []string
	for _, c := range causesIn(r.Findings) {
		for _, k := range issuesFor(c) {
			v, which, _ := o.issueVersion(k)
			if v != "" && k.Status(v) == StatusAffected {
				s := fmt.Sprintf("%s in your %s %s (%s)", k.ID, which, v, k.Versions())
				if !slices.Contains(up, s) {
					up = append(up, s)
				}
			}
		}
	}
	return up
}

func writeNextSteps(md *mdWriter, r *audit.Report, t Tally, o Options) {
	md.s("## What to do next\n\n")
	steps := nextSteps(r, t, o)
	if len(steps) == 0 {
		md.s("Nothing to replay or repair.\n\n")
		return
	}
	for i, s := range steps {
		md.f("%d. %s\n", i+1, s)
	}
	md.s("\n")
}

// Glossary is the postmortem's words, one line each: the postmortem
// ends with it, and README.md's Quick start holds the same lines (a test
// checks).
var Glossary = [][2]string{
	{"verdict", "the worst that holds: `loss`, then `anomaly`, then `incomplete` (evidence was missing), then `clean`; the exit code says it (1, 1, 3, 0)."},
	{"vanished", "an input whose effect is missing from the app's stores or output, or a record deleted before the app read it: a loss. It is counted in records; one key may have several."},
	{"replayable", "a vanished input whose record Kafka still holds: it can be copied and produced again."},
	{"gone", "an offset Kafka no longer holds (retention, a purge, a truncation): its record must come from the system that produced it."},
	{"pending", "a record at or above the group's committed offset: the app has not processed it yet. Lag, not loss."},
	{"cut", "the group's committed offsets with the changelog and output records they commit with: under exactly-once, one atomic state of the app."},
	{"committed, log start, LSO, HW", "per partition: where the app resumes; the lowest offset still held; the end of what `read_committed` readers see; the end of the log."},
	{"stage", "where an input stopped: `source` (never read), `repartition` (no copy applied), `store` (not in the changelog), `join` (output wrong); or the area of an anomaly."},
	{"cause", "why, named from its own evidence: one per finding (the findings table of kaudit's README lists them); `loss` and `anomaly` change the verdict, `risk` and `info` do not."},
	{"missing evidence", "what kaudit could not read or evaluate: never counted as a loss, it makes the verdict `incomplete`."},
}

func writeGlossary(md *mdWriter) {
	md.s("## Glossary\n\n")
	for _, g := range Glossary {
		md.f("- **%s**: %s\n", g[0], g[1])
	}
	md.s("\n")
}

// writeNotes lists the report's notes: what the reader should know that
// is neither missing evidence nor a finding.
func writeNotes(md *mdWriter, r *audit.Report) {
	if len(r.Summary.Notes) == 0 {
		return
	}
	md.s("## Notes\n\n")
	for _, n := range r.Summary.Notes {
		md.f("- %s\n", text(n))
	}
	md.s("\n")
}
