package report

import (
	"github.com/kaudit/kaudit/audit"
)

// Tally is every number a rendered report states, computed once from the
// report: the Markdown, the HTML, the table and the metrics read them
// here, so that no two formats (and no two sections of one) disagree.
// TestTallyAddsUp checks that they add up on every golden report.
type Tally struct {
	// Verdict is the report's; Exit the one the exit code judges (with a
	// baseline: that of the findings new since).
	Verdict, Exit audit.Verdict
	// Vanished counts the records of the loss findings (the engine's
	// Summary.Vanished: a finding of Count n is n records). They split
	// into Replayable + Gone + Outputs + Unplaced, exactly.
	Vanished int64
	// Replayable records are inputs Kafka still holds: they can be
	// produced again (Replay lists their ranges).
	Replayable int64
	// Gone records are offsets Kafka no longer holds (deleted by
	// retention, purged, truncated): they must come from the producing
	// system or be derived again (GoneRanges lists them).
	Gone int64
	// Outputs are join and table outputs missing or stale: the replay
	// rebuilds them, or they are re-emitted.
	Outputs int64
	// Unplaced records are named by no offset (a count the evidence
	// proves without naming the inputs).
	Unplaced int64
	// Keys counts the distinct keys of the loss findings that name one
	// (two inputs of one order are two records and one key), of
	// KeyedRecords records.
	Keys         int
	KeyedRecords int64
	// Replay and GoneRanges are Replayable and Gone as merged offset
	// ranges (two findings on one offset are one offset there).
	Replay, GoneRanges []Range
	// LossByStage and LossByCause split Vanished.
	LossByStage map[audit.Stage]int64
	LossByCause map[audit.Cause]int64
	// AppDropped counts the vanished records the app's own processing
	// consumed and wrote nothing for (`dropped`), Unapplied those it
	// consumed whose effect is missing where the evidence cannot tell
	// whether it dropped them (`unapplied`): a replay into the app as it is
	// may lose them again, so finding why comes before the replay.
	// Dropped and UnappliedAt are their findings, in report order.
	AppDropped, Unapplied int64
	Dropped, UnappliedAt  []audit.Finding
	// Anomalies counts the anomaly findings by cause (a finding each:
	// they are not records), AnomalyFindings all of them.
	Anomalies       map[audit.Cause]int64
	AnomalyFindings int64
	// Risks and Infos count the risk and info findings.
	Risks, Infos int64
	// Pending counts the records at or above the committed offsets (the
	// engine's Summary.Pending): lag, not loss. PendingUnknown says the
	// group's committed offsets are missing: which records are pending is
	// not known, and Pending is 0.
	Pending        int64
	PendingUnknown bool
	// Missing counts the pieces of evidence missing: the summary's list
	// plus the unreadable findings (Unreadable of them).
	Missing, Unreadable int
	// Timed counts the vanished inputs the timeline places (the sum of
	// its minutes); Judged the inputs it counts (produced), which the
	// flowchart's first hops count too.
	Timed, Judged int64
	// Windows are the incident windows the timeline shows.
	Windows []Window
	// New counts the findings new since the baseline; -1 without one.
	New int
}

// TallyOf computes the report's numbers.
func TallyOf(r *audit.Report) Tally {
	t := Tally{Verdict: verdictOf(r), Exit: verdictOf(r), LossByStage: map[audit.Stage]int64{}, LossByCause: map[audit.Cause]int64{},
		Anomalies: map[audit.Cause]int64{}, Pending: r.Summary.Pending, PendingUnknown: r.Summary.PendingUnknown, Missing: len(r.Summary.Missing), New: -1}
	if r.Baseline != nil {
		t.Exit, t.New = r.Baseline.Verdict, len(r.Baseline.New)
		if t.Exit == "" {
			t.Exit = audit.Judge(r.NewFindings(), r.Summary.Missing)
		}
	}
	logStart := logStarts(r)
	keys := map[string]bool{}
	var replay, gone []Range
	for _, f := range r.Findings {
		n := max(f.Count, 1)
		switch {
		case f.Cause == audit.CauseUnreadable:
			t.Unreadable++
			t.Missing++
			t.Anomalies[f.Cause]++
			t.AnomalyFindings++
		case f.Severity == audit.SeverityLoss:
			t.Vanished += n
			t.LossByStage[f.Stage] += n
			t.LossByCause[f.Cause] += n
			switch f.Cause {
			case audit.CauseDropped:
				t.AppDropped += n
				t.Dropped = append(t.Dropped, f)
			case audit.CauseUnapplied:
				t.Unapplied += n
				t.UnappliedAt = append(t.UnappliedAt, f)
			}
			if f.Key != "" {
				keys[f.Key] = true
				t.KeyedRecords += n
			}
			rp, gn, kind := place(f, logStart)
			replay, gone = append(replay, rp...), append(gone, gn...)
			switch kind {
			case placeOutput:
				t.Outputs += n
			case placeNone:
				t.Unplaced += n
			default:
				t.Replayable += total(rp)
				t.Gone += total(gn)
			}
		case f.Severity == audit.SeverityAnomaly:
			t.Anomalies[f.Cause]++
			t.AnomalyFindings++
		case f.Severity == audit.SeverityRisk:
			t.Risks++
		case f.Severity == audit.SeverityInfo:
			t.Infos++
		}
	}
	if r.Summary.Vanished > t.Vanished {
		// a report whose summary counts more than its findings (a merged
		// or hand-made one): the difference is named by no finding
		t.Unplaced += r.Summary.Vanished - t.Vanished
		t.Vanished = r.Summary.Vanished
	}
	t.Keys = len(keys)
	t.Replay, t.GoneRanges = mergeRanges(replay), mergeRanges(gone)
	for _, m := range r.Timeline {
		t.Timed += m.Vanished
		t.Judged += m.Produced
	}
	t.Windows = incidentWindows(timeline(r))
	return t
}

// Incomplete says whether the report must read as incomplete: evidence
// missing, or the verdict says so.
func (t Tally) Incomplete() bool { return t.Missing > 0 || t.Verdict == audit.VerdictIncomplete }

// placeKind is where a loss finding's records can come back from.
type placeKind int

const (
	placeKafka  placeKind = iota // offsets: still in Kafka, or gone from it
	placeOutput                  // a join's or a table's output: re-emitted
	placeNone                    // no offset names them
)

// logStarts is each partition's log-start offset in the cut (the highest
// where shards disagree).
func logStarts(r *audit.Report) map[audit.TopicPartition]int64 {
	ls := map[audit.TopicPartition]int64{}
	for _, c := range r.Cut {
		tp := audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}
		if v, ok := ls[tp]; !ok || c.LogStart > v {
			ls[tp] = c.LogStart
		}
	}
	return ls
}

// place splits a loss finding's offsets into those Kafka still holds
// (at or above the partition's log start) and those gone.
func place(f audit.Finding, logStart map[audit.TopicPartition]int64) (replay, gone []Range, kind placeKind) {
	switch {
	case f.Stage == audit.StageJoin:
		return nil, nil, placeOutput
	case f.Offset < 0 || f.Topic == "":
		return nil, nil, placeNone
	}
	rg := Range{Topic: f.Topic, Partition: f.Partition, From: f.Offset, Count: max(f.Count, 1)}
	ls, known := logStart[audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}]
	switch {
	case goneCauses[f.Cause], known && rg.To() < ls:
		return nil, []Range{rg}, placeKafka
	case known && rg.From < ls:
		return []Range{{rg.Topic, rg.Partition, ls, rg.To() - ls + 1}}, []Range{{rg.Topic, rg.Partition, rg.From, ls - rg.From}}, placeKafka
	}
	return []Range{rg}, nil, placeKafka
}
