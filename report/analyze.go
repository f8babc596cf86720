package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// Range is a run of consecutive offsets of one partition: [From, From+Count).
type Range struct {
	Topic     string
	Partition int32
	From      int64
	Count     int64
}

// To is the last offset of the range (inclusive).
func (r Range) To() int64 { return r.From + r.Count - 1 }

// goneCauses name findings whose offsets no longer exist in Kafka: the
// finding names the first offset of a gap, not a readable record.
var goneCauses = map[audit.Cause]bool{
	audit.CauseRetentionGap: true,
	audit.CauseTruncated:    true,
}

// ReplayRanges merges the loss findings that name a record still readable
// (an offset at or above its partition's log-start offset in the cut,
// outside the join stage) into ranges to replay, and the loss findings whose
// offsets are gone into ranges that must come from elsewhere. Both are
// sorted by topic, partition and offset; overlapping and adjacent offsets
// merge.
func ReplayRanges(r *audit.Report) (replay, gone []Range) {
	t := TallyOf(r)
	return t.Replay, t.GoneRanges
}

func mergeRanges(rs []Range) []Range {
	slices.SortFunc(rs, func(a, b Range) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition),
			cmp.Compare(a.From, b.From), cmp.Compare(a.Count, b.Count))
	})
	out := rs[:0] // merge in place
	for _, r := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if last.Topic == r.Topic && last.Partition == r.Partition && r.From <= last.To()+1 {
				if r.To() > last.To() {
					last.Count = r.To() - last.From + 1
				}
				continue
			}
		}
		out = append(out, r)
	}
	return out
}

// Window is a run of minutes [Start, End) where the timeline shows the
// incident: aborted transactions, a gap in production, or vanished records.
type Window struct {
	Start, End time.Time
	Aborted    int64
	Vanished   int64
	GapMinutes int
}

// maxFill bounds how many empty minutes timeline fills in (a week).
const maxFill = 7 * 24 * 60

const minuteMs = int64(time.Minute / time.Millisecond)

// timeline returns the report's minutes sorted by start, duplicates added
// up, with the minutes missing between the first and the last filled in
// as zeros (nothing produced), unless the span is longer than a week.
func timeline(r *audit.Report) []audit.Minute {
	ms := slices.Clone(r.Timeline)
	slices.SortFunc(ms, func(a, b audit.Minute) int { return cmp.Compare(a.Start, b.Start) })
	if len(ms) < 2 {
		return ms
	}
	first, last := ms[0].Start, ms[len(ms)-1].Start
	fill := last-first >= 0 && (last-first)/minuteMs <= maxFill // the difference may overflow
	out := make([]audit.Minute, 0, len(ms))
	for i, m := range ms {
		if i > 0 {
			prev := &out[len(out)-1]
			if prev.Start == m.Start {
				prev.Produced += m.Produced
				prev.Committed += m.Committed
				prev.Aborted += m.Aborted
				prev.Vanished += m.Vanished
				continue
			}
			if fill {
				base := prev.Start
				for k := int64(1); k < (m.Start-base)/minuteMs; k++ {
					out = append(out, audit.Minute{Start: base + k*minuteMs})
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// flagged marks the minutes that belong to the incident: any aborted
// transaction, any vanished record, or a production gap (nothing produced,
// or under a tenth of the median of active minutes, while minutes before
// and after were active).
func flagged(ms []audit.Minute) (incident, gap []bool) {
	incident, gap = make([]bool, len(ms)), make([]bool, len(ms))
	var active []int64
	first, last := -1, -1
	for i, m := range ms {
		if m.Produced > 0 {
			active = append(active, m.Produced)
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	var median int64
	if len(active) > 0 {
		slices.Sort(active)
		median = active[len(active)/2]
	}
	for i, m := range ms {
		gap[i] = i > first && i < last && m.Produced < median/10+boolInt(median%10 != 0)
		incident[i] = m.Aborted > 0 || m.Vanished > 0 || gap[i]
	}
	return incident, gap
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// run is the index range [first, last] of ms that a Window covers.
type run struct{ first, last int }

// incidentWindows groups flagged minutes into windows, joining runs that
// are at most two quiet minutes apart.
func incidentWindows(ms []audit.Minute) []Window {
	ws, _ := incidentRuns(ms)
	return ws
}

func incidentRuns(ms []audit.Minute) ([]Window, []run) {
	fl, gaps := flagged(ms)
	var ws []Window
	var runs []run
	start, end := -1, -1
	emit := func() {
		if start < 0 {
			return
		}
		w := Window{Start: time.UnixMilli(ms[start].Start).UTC(), End: time.UnixMilli(ms[end].Start).UTC().Add(time.Minute)}
		for i := start; i <= end; i++ {
			w.Aborted += ms[i].Aborted
			w.Vanished += ms[i].Vanished
			if gaps[i] {
				w.GapMinutes++
			}
		}
		ws = append(ws, w)
		runs = append(runs, run{start, end})
	}
	for i, f := range fl {
		if !f {
			continue
		}
		if start >= 0 && i-end <= 3 {
			end = i
			continue
		}
		emit()
		start, end = i, i
	}
	emit()
	return ws, runs
}
