package audit

import (
	"slices"
	"time"
)

// Verdict is the worst that holds of a run, in the order loss, anomaly,
// incomplete, clean.
type Verdict string

const (
	VerdictClean      Verdict = "clean"
	VerdictLoss       Verdict = "loss"
	VerdictAnomaly    Verdict = "anomaly"
	VerdictIncomplete Verdict = "incomplete"
)

// Judge returns the verdict for a set of findings. An unreadable finding or
// a non-empty list of missing evidence makes a run incomplete, never clean;
// risk and info findings never change the verdict.
func Judge(findings []Finding, missing []string) Verdict {
	loss, anomaly, incomplete := false, false, len(missing) > 0
	for _, f := range findings {
		switch {
		case f.Cause == CauseUnreadable:
			incomplete = true
		case f.Severity == SeverityLoss:
			loss = true
		case f.Severity == SeverityAnomaly:
			anomaly = true
		}
	}
	switch {
	case loss:
		return VerdictLoss
	case anomaly:
		return VerdictAnomaly
	case incomplete:
		return VerdictIncomplete
	}
	return VerdictClean
}

// PartitionCut is one partition's numbers at the cut: the group's committed
// offset (read with require_stable; -1 when the group has none), the
// log-start offset, the last stable offset and the high watermark.
type PartitionCut struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Role      string `json:"role"` // source, repartition, changelog, output
	Committed int64  `json:"committed"`
	LogStart  int64  `json:"log_start"`
	LSO       int64  `json:"lso"`
	HW        int64  `json:"hw"`
}

// Summary counts a report's findings.
type Summary struct {
	Verdict  Verdict         `json:"verdict"`
	ByStage  map[Stage]int64 `json:"by_stage"`
	ByCause  map[Cause]int64 `json:"by_cause"`
	Vanished int64           `json:"vanished"` // input records with a loss finding (sum of counts)
	Pending  int64           `json:"pending"`
	// PendingUnknown says that the group's committed offsets are missing
	// (the group's offsets could not be read), so which records are
	// pending is not known: Pending is then no count of lag, and nothing
	// is "not lost" for being above an offset no one read.
	PendingUnknown bool `json:"pending_unknown,omitempty"`
	// Undecided counts keys whose state proves lost inputs the evidence
	// cannot name: each has one unapplied finding listing the candidates.
	Undecided int64            `json:"undecided_keys,omitempty"`
	Missing   []string         `json:"missing_evidence,omitempty"`
	Skipped   []string         `json:"skipped_checks,omitempty"`
	Notes     []string         `json:"notes,omitempty"`
	Records   map[string]int64 `json:"records,omitempty"` // funnel counts by hop
}

// Report is the result of one audit.
type Report struct {
	AppID       string         `json:"app_id"`
	GeneratedAt time.Time      `json:"generated_at"`
	Cut         []PartitionCut `json:"cut"`
	Summary     Summary        `json:"summary"`
	Findings    []Finding      `json:"findings"`
	// Topology is the Mermaid-free description of the pipeline the report
	// judged, for renderers: one edge per hop with record counts.
	Edges []Edge `json:"edges,omitempty"`
	// Timeline holds per-minute activity for the postmortem.
	Timeline []Minute `json:"timeline,omitempty"`
	// Lineage follows sample vanished records hop by hop.
	Lineage []Lineage `json:"lineage,omitempty"`
	// Source says what evidence the report was built from.
	Source string `json:"source,omitempty"`
	// Signatures ties findings that share one piece of evidence to the
	// known Kafka Streams bug that evidence is the signature of.
	Signatures []Signature `json:"signatures,omitempty"`
	// InferredSpec is the spec the audit inferred from the evidence for
	// want of one (kaudit.yaml, each guess with its evidence as a
	// comment); empty when the user gave the spec.
	InferredSpec string `json:"inferred_spec,omitempty"`
	// Inferred says what the inferred spec rests on and what it judged,
	// table by table (nil when the user gave the spec or none was
	// inferred): what a reader, or the next night's audit, compares.
	Inferred *Inferred `json:"inferred,omitempty"`
	// Shard says which task partitions the report audited when it is one
	// shard of an app (kaudit diff --shard or --partitions); nil for a
	// whole audit.
	Shard *Shard `json:"shard,omitempty"`
	// Baseline says what the report was judged against (kaudit diff
	// --baseline): the findings new since and their verdict, which the
	// exit code judges.
	Baseline *Baseline `json:"baseline,omitempty"`
}

// Shard is the part of an app's task partitions one report audited.
type Shard struct {
	// Index and Count are --shard I/N (Count 0 for --partitions).
	Index int32 `json:"index"`
	Count int32 `json:"count"`
	// Partitions are the task partitions audited, of Tasks (the largest
	// partition count of the app's topics): the shards of one audit cover
	// each of 0..Tasks-1 once.
	Partitions []int32 `json:"partitions"`
	Tasks      int32   `json:"tasks"`
	// Run names the audit the shards belong to (--run-id), so that a
	// report left from another run is not merged with them.
	Run string `json:"run,omitempty"`
	// Fingerprint names the evidence the shard read (audit.Fingerprint),
	// so that shards of two captures, or two clusters, are not merged.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Baseline is what a report was judged against: a previous report.
type Baseline struct {
	// Report is the previous report's file, as given; GeneratedAt when
	// that audit ran.
	Report      string    `json:"report"`
	GeneratedAt time.Time `json:"generated_at"`
	// New lists the findings new since the previous report, as indices
	// into Report.Findings as of the last Finish (which points them again
	// after every sort, as it does a lineage).
	New []int `json:"new"`
	// Verdict is the verdict of the new findings and the missing
	// evidence: the one the exit code judges.
	Verdict Verdict `json:"verdict"`
	// SpecChanges says, where both audits inferred their spec, how
	// tonight's differs from the previous one's, table by table and join
	// by join: the same evidence read again gave another guess.
	SpecChanges []string `json:"spec_changes,omitempty"`
	newOf       []Finding
}

// ExitVerdict is the verdict the exit code judges: with a baseline, that
// of the findings new since; else the report's.
func (r *Report) ExitVerdict() Verdict {
	if r.Baseline != nil {
		return r.Baseline.Verdict
	}
	return r.Summary.Verdict
}

// NewFindings are the findings the baseline does not have; all of them
// without a baseline.
func (r *Report) NewFindings() []Finding {
	if r.Baseline == nil {
		return r.Findings
	}
	out := make([]Finding, 0, len(r.Baseline.New))
	for _, i := range r.Baseline.New {
		if i >= 0 && i < len(r.Findings) {
			out = append(out, r.Findings[i])
		}
	}
	return out
}

// Signature is one piece of evidence a known bug leaves, and the findings
// that rest on it: a repartition partition purged above the group's
// committed offset (KAFKA-17635), or one changelog range a store lost under
// several keys (KAFKA-16017).
type Signature struct {
	Issue     string `json:"issue"` // e.g. "KAFKA-17635"
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// From and To bound the offsets the evidence covers, inclusive.
	From int64 `json:"from"`
	To   int64 `json:"to"`
	// Findings counts the findings (Count summed) that rest on it; Keys
	// names up to ten of their keys.
	Findings int64    `json:"findings"`
	Keys     []string `json:"keys,omitempty"`
	Detail   string   `json:"detail"`
	// FixedIn lists the first fixed Kafka Streams release of each line.
	FixedIn []string `json:"fixed_in,omitempty"`
	// Candidate is true when the evidence is consistent with the bug but
	// does not show its mechanism (inputs unapplied on a purged range, after
	// the app's committed offset moved past the purge).
	Candidate bool `json:"candidate,omitempty"`
}

// Lineage follows one vanished input through the pipeline: where each hop
// should hold it and what is there instead.
//
// It names its finding by identity: Of is the finding itself. Finding is
// where Of stands in Report.Findings, as the JSON says it; Finish points
// it again after every sort, so appending findings, sorting or merging
// reports never leaves a lineage on another finding. A lineage made (or
// decoded) with only Finding is bound to the finding at that index by the
// next Finish, before it sorts.
type Lineage struct {
	Of      Finding `json:"-"`
	Finding int     `json:"finding"` // index into Report.Findings, as of the last Finish
	Hops    []Hop   `json:"hops"`
}

// Hop is one place a record should be found.
type Hop struct {
	Stage     Stage  `json:"stage"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"` // -1 when no record holds it
	Expected  string `json:"expected"`
	Actual    string `json:"actual"`
	Note      string `json:"note,omitempty"`
}

// Edge is one hop of the pipeline with its record counts.
type Edge struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Records  int64  `json:"records"`
	Vanished int64  `json:"vanished"`
}

// Minute is one minute of the incident timeline.
type Minute struct {
	Start     int64 `json:"start"` // ms since the epoch
	Produced  int64 `json:"produced"`
	Committed int64 `json:"txns_committed"`
	Aborted   int64 `json:"txns_aborted"`
	Vanished  int64 `json:"vanished"`
}

// Finish sorts the findings and fills the summary's counts and verdict.
func (r *Report) Finish() {
	r.bindLineage()
	r.bindBaseline()
	SortFindings(r.Findings)
	r.pointLineage()
	r.pointBaseline()
	r.Summary.ByStage = map[Stage]int64{}
	r.Summary.ByCause = map[Cause]int64{}
	r.Summary.Vanished, r.Summary.Pending = 0, 0
	for _, f := range r.Findings {
		n := max(f.Count, 1)
		r.Summary.ByStage[f.Stage] += n
		r.Summary.ByCause[f.Cause] += n
		switch {
		case f.Severity == SeverityLoss:
			r.Summary.Vanished += n
		case f.Cause == CausePending:
			r.Summary.Pending += n
		}
	}
	r.Summary.Verdict = Judge(r.Findings, r.Summary.Missing)
	if r.Baseline != nil {
		r.Baseline.Verdict = Judge(r.NewFindings(), r.Summary.Missing)
	}
}

// bindBaseline binds the baseline's new findings, if not yet bound, to the
// findings their indices name.
func (r *Report) bindBaseline() {
	b := r.Baseline
	if b == nil || b.newOf != nil {
		return
	}
	b.newOf = []Finding{}
	for _, i := range b.New {
		if i >= 0 && i < len(r.Findings) {
			b.newOf = append(b.newOf, r.Findings[i])
		}
	}
}

// pointBaseline sets the baseline's indices to where its new findings
// stand now, dropping those the report no longer holds.
func (r *Report) pointBaseline() {
	b := r.Baseline
	if b == nil {
		return
	}
	at := make(map[Finding][]int, len(b.newOf))
	for i, f := range r.Findings {
		at[f] = append(at[f], i)
	}
	b.New = []int{}
	for _, f := range b.newOf {
		if is := at[f]; len(is) > 0 {
			b.New = append(b.New, is[0])
			at[f] = is[1:]
		}
	}
	slices.Sort(b.New)
}

// bindLineage binds each lineage not yet bound to the finding its index
// names.
func (r *Report) bindLineage() {
	for i := range r.Lineage {
		l := &r.Lineage[i]
		if l.Of == (Finding{}) && l.Finding >= 0 && l.Finding < len(r.Findings) {
			l.Of = r.Findings[l.Finding]
		}
	}
}

// pointLineage sets each bound lineage's index to where its finding
// stands now; -1 when the report no longer holds it.
func (r *Report) pointLineage() {
	if len(r.Lineage) == 0 {
		return
	}
	at := make(map[Finding]int, len(r.Findings))
	for i, f := range r.Findings {
		if _, ok := at[f]; !ok {
			at[f] = i
		}
	}
	for i := range r.Lineage {
		l := &r.Lineage[i]
		if l.Of == (Finding{}) {
			continue
		}
		if j, ok := at[l.Of]; ok {
			l.Finding = j
		} else {
			l.Finding = -1
		}
	}
}
