package history

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
)

// Role is what the app does with a partition it consumes.
type Role int

const (
	// Source is a topic the app reads from outside: retention removes
	// its records.
	Source Role = iota
	// Repartition is a topic the app writes and reads back: Streams
	// purges it after each commit.
	Repartition
)

func (r Role) String() string {
	if r == Repartition {
		return "repartition"
	}
	return "source"
}

func (r Role) stage() audit.Stage {
	if r == Repartition {
		return audit.StageRepartition
	}
	return audit.StageSource
}

// deleted is the cause of offsets deleted before the app read them.
func (r Role) deleted() audit.Cause {
	if r == Repartition {
		return audit.CausePurgedBeforeCommit
	}
	return audit.CauseRetentionGap
}

// Partition is one partition the group consumes, as the audit sees it
// now.
type Partition struct {
	TP   audit.TopicPartition
	Role Role
	// LogStart is the partition's log start now (the cluster's, for a
	// capture bounded with --since), read at Now (the source's clock).
	LogStart int64
	Now      time.Time
	// Committed is the group's committed offset at the cut (0 or less:
	// none): where the history cannot be read to its end, the offsets up
	// to it are what its unread commits may have moved past.
	Committed int64
}

// LogStartAt is a partition's log start observed at a time: at Time, or
// at some instant in [Time, Until] when Until is set (a log line whose
// zone is not known exactly: applog.Stamp).
type LogStartAt struct {
	Time   time.Time
	Until  time.Time
	Offset int64
	Why    string        // what observed it
	Event  *applog.Event // the log line, when a log says so
}

// Evidence is what the analysis reads beyond one partition: the group's
// commit history and the logs' events, gathered once per audit.
type Evidence struct {
	Group string
	// History is nil when it could not be read; Unknown then says why,
	// and Failed too when the source failed to give it (a broker lost
	// mid-read): missing evidence, where Unknown alone is a source that
	// keeps none.
	History *audit.CommitHistory
	Unknown string
	Failed  bool
	Events  []applog.Event
	// LogStarts are earlier observations of partitions' log starts (a
	// baseline capture or report: its cut's log start at its time).
	LogStarts map[audit.TopicPartition][]LogStartAt
	// Since starts the window judged (zero: the history's first commit of
	// each partition).
	Since time.Time
	// StreamsPurgeFixed says the app's Kafka Streams has KAFKA-17635's fix
	// (3.7.2, 3.8.1, 3.9.0 and later): it purges a repartition partition
	// only up to committed offsets, rebalance or not.
	StreamsPurgeFixed bool
	// Notes say what was read (logs, their events, the history's extent).
	Notes []string
	// Missing names the logs not read whole (damaged, or past their
	// bounds): missing evidence, as what they hold might prove a loss.
	Missing []string

	txnOnce  sync.Once
	eos      bool  // the group commits in transactions
	firstTxn int64 // the log position of its first transactional commit
}

// transactional says whether the group commits in transactions, and the
// position of its first transactional commit; computed once (Analyze may
// run for several partitions at once).
func (ev *Evidence) transactional() (bool, int64) {
	ev.txnOnce.Do(func() {
		ev.firstTxn = -1
		for _, cs := range ev.History.Commits {
			for _, c := range cs {
				if c.Transactional && (ev.firstTxn < 0 || c.Record < ev.firstTxn) {
					ev.eos, ev.firstTxn = true, c.Record
				}
			}
		}
	})
	return ev.eos, ev.firstTxn
}

// Logs are the log files an audit reads as evidence, and how.
type Logs struct {
	// App and Broker are the app's and the brokers' log files
	// (--app-log, --broker-log): plain or gzip.
	App, Broker []string
	// Options say how to read their timestamps.
	Options applog.Options
	// Topics are the topics the audit reads (nil: any): a broker's line
	// about another topic is not kept.
	Topics map[string]bool
	// Budget is the audit's memory budget (--memory-budget; 0: no
	// bound): the events kept of the logs take at most a KeptShare of it,
	// and the logs are read, together, up to ReadFactor times it in bytes
	// (inflated).
	Budget int64
}

// The logs' share of the memory budget, and how many times it they may
// make kaudit read.
const (
	KeptShare  = 8
	ReadFactor = 4
)

// ruleKinds are the events an audit reads: this package's rules, and a
// windowed table's grace (audit/reconcile). The others are counted, not
// kept.
var ruleKinds = map[applog.Kind]bool{applog.LogStartIncremented: true, applog.OutOfRange: true, applog.OffsetReset: true,
	applog.SegmentDeleted: true, applog.Truncated: true, applog.SeekReset: true, applog.SeekCommitted: true, applog.ExpiredWindow: true}

// Gather reads group's commit history from src (audit.CommitHistoryOf)
// and the events of the app's and brokers' log files: an app's line
// (a consumer's, a Streams thread's) only where it is tied to the app,
// group (its application.id: applog.Event.Tie), a broker's only where it
// names a topic the audit reads; the others are counted in a note, never
// kept. A history src
// cannot give (not supported, unreadable, no record of the group) is
// Evidence.Unknown, not an error, and so is one whose read failed
// (Evidence.Failed); a log file that cannot be opened is an error (the
// user named it), one not read whole (damaged, or past its bounds) is
// missing evidence (Evidence.Missing).
func Gather(ctx context.Context, src audit.Source, group string, logs Logs) (*Evidence, error) {
	ev := &Evidence{Group: group}
	h, err := audit.CommitHistoryOf(ctx, src, group)
	switch {
	case err == nil:
		ev.History = &h
		ev.Notes = append(ev.Notes, describe(&h))
		if len(h.Unread) > 0 {
			// evidence like the topics: damage is never clean, even where
			// no partition's judgement turns on it (each that does says so)
			u := h.Unread[0]
			more := ""
			if len(h.Unread) > 1 {
				more = fmt.Sprintf(", and %d more ranges", len(h.Unread)-1)
			}
			ev.Missing = append(ev.Missing, fmt.Sprintf("the group's commit history %s is damaged: offsets %d-%d could not be read (%s)%s; the commits there are not known",
				h.Log, u.From, u.To-1, u.Why, more))
		}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, audit.ErrNotSupported), errors.Is(err, audit.ErrUnreadable), errors.Is(err, audit.ErrGroupNotFound):
		ev.Unknown = fmt.Sprintf("no commit history of the group (a skip past offsets deleted before a restart would not show): %v", err)
	default:
		// a read that failed (a broker lost mid-read) or evidence that is
		// damaged (audit.ErrCorrupt): the rest of the audit still runs,
		// with this check named as not run
		ev.Unknown, ev.Failed = fmt.Sprintf("the group's commit history could not be read, so a skip past offsets deleted before a restart is not seen once the app has committed past them: %v", err), true
	}
	if err := ev.readLogs(ctx, logs); err != nil {
		return nil, err
	}
	return ev, nil
}

// readLogs reads the log files into ev.Events, within the bounds.
func (ev *Evidence) readLogs(ctx context.Context, logs Logs) error {
	read, kept := int64(-1), int64(-1) // what is left of each bound; -1: none
	if logs.Budget > 0 {
		read, kept = ReadFactor*logs.Budget, logs.Budget/KeptShare
	}
	for _, f := range append(slices.Clip(logs.App), logs.Broker...) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if read == 0 {
			ev.Missing = append(ev.Missing, fmt.Sprintf("log %s was not read: the logs before it reached the bound of what kaudit reads of them (%d bytes: %d times --memory-budget)", f, ReadFactor*logs.Budget, ReadFactor))
			continue
		}
		o := logs.Options
		var kinds, others, untied, topics int
		o.Keep = func(e *applog.Event) bool {
			switch {
			case !ruleKinds[e.Kind]:
				kinds++
			case e.Kind.Broker():
				if logs.Topics == nil || logs.Topics[e.TP.Topic] {
					return true
				}
				topics++
			default:
				switch e.Tie(ev.Group) {
				case applog.Tied:
					return true
				case applog.Other:
					others++
				default:
					untied++
				}
			}
			return false
		}
		if read > 0 {
			o.MaxBytes, o.MaxKept = read, max(kept, 1)
		}
		l, err := applog.ReadFile(f, o)
		if err != nil {
			return err
		}
		if read > 0 {
			read = max(read-l.Bytes, 0)
			for i := range l.Events {
				kept -= l.Events[i].Size()
			}
		}
		ev.Events = append(ev.Events, l.Events...)
		note := fmt.Sprintf("log %s: %d lines, %d events kept as evidence", f, l.Lines, len(l.Events))
		var ignored []string
		if untied > 0 {
			ignored = append(ignored, fmt.Sprintf("%d lines of an app that name no group, Streams client or thread of %s (nor of another app: whose they are is not known)", untied, ev.Group))
		}
		if others > 0 {
			ignored = append(ignored, fmt.Sprintf("%d lines of another consumer group or Streams app", others))
		}
		if topics > 0 {
			ignored = append(ignored, fmt.Sprintf("%d broker lines about topics the audit does not read", topics))
		}
		if kinds > 0 {
			ignored = append(ignored, fmt.Sprintf("%d of kinds no check reads", kinds))
		}
		if len(ignored) > 0 {
			note += "; ignored: " + strings.Join(ignored, ", ")
		}
		if l.LongLines > 0 {
			note += fmt.Sprintf("; %d lines longer than %d bytes cut", l.LongLines, applog.MaxLineBytes)
		}
		if l.Unended {
			note += "; its last line has no newline (cut mid-write?): no event is read from it"
		}
		if l.Unzoned > 0 {
			note += "; the times of its events, written without a zone, read " + l.Zone
			if logs.Options.Location == nil && !strings.HasPrefix(l.Zone, "UTC offset") {
				note += " (--log-timezone gives it)"
			}
		}
		ev.Notes = append(ev.Notes, note)
		if l.Cut != "" {
			ev.Missing = append(ev.Missing, fmt.Sprintf("log %s was not read whole: %s; what its other lines would show is not known", f, l.Cut))
		}
	}
	return nil
}

// describe says how much of the history was read.
func describe(h *audit.CommitHistory) string {
	s := fmt.Sprintf("commit history of group %s: %s, offsets %d-%d, %d records", h.Group, h.Log, h.LogStart, h.End-1, h.Records)
	for i, u := range h.Unread {
		if i == 3 {
			s += fmt.Sprintf("; and %d more ranges could not be read", len(h.Unread)-i)
			break
		}
		s += fmt.Sprintf("; offsets %d-%d could not be read (%s)", u.From, u.To-1, u.Why)
	}
	switch {
	case len(h.Unread) > 0 && h.HoleOffsets > 0:
		s += fmt.Sprintf("; compaction removed %d offsets", h.HoleOffsets)
	case len(h.Unread) > 0:
	case h.HoleOffsets > 0:
		s += fmt.Sprintf("; compaction removed %d offsets, every record is there from offset %d", h.HoleOffsets, h.WholeFrom)
		if h.WholeSince >= 0 {
			s += " (" + ms(h.WholeSince) + ")"
		}
	default:
		s += "; no record removed"
	}
	return s
}

// Skip is a range of offsets the committed offset advanced over that the
// app never consumed, with its cause and evidence.
type Skip struct {
	From, To int64 // [From, To)
	Cause    audit.Cause
	Stage    audit.Stage
	// Before is the commit in force before (From is at or above it), Commit
	// the one that moved past the range.
	Before, Commit audit.Commit
	Why            string
	Lines          []applog.Event
}

// Gap is a range whose fate the evidence cannot settle: missing evidence.
type Gap struct {
	From, To       int64 // From -1 when not known (a compacted stretch)
	Before, Commit audit.Commit
	Why            string
}

// Result is one partition's judgement.
type Result struct {
	TP      audit.TopicPartition
	Role    Role
	Skips   []Skip
	Unknown []Gap
	// Judged counts the commits judged (those that moved past the
	// frontier in the window).
	Judged int
	Notes  []string
}

// Analyze judges one partition's commit history (see the package doc).
func (ev *Evidence) Analyze(p Partition) Result {
	res := Result{TP: p.TP, Role: p.Role}
	h := ev.History
	if h == nil {
		if ev.Unknown != "" {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %s", p.TP, ev.Unknown))
		}
		return res
	}
	cs := h.Commits[p.TP]
	// a group deleted and made again (the same group id) starts over: its
	// commits before the deletion are another incarnation's, and so are the
	// logs' lines of before (its topics may have been made again too)
	born := int64(math.MinInt64)
	for _, g := range h.Generations {
		if g.Deleted {
			i := 0
			for i < len(cs) && cs[i].At < g.At {
				i++
			}
			cs = cs[i:]
			born = g.Time
		}
	}
	if len(cs) == 0 {
		if u := h.UnreadAfter(-1); u != nil && p.Committed > 0 {
			// its commits may all be in what could not be read
			res.Unknown = append(res.Unknown, Gap{From: -1, To: p.Committed, Why: unreadWhy(h, u, p.TP)})
			return res
		}
		res.Notes = append(res.Notes, fmt.Sprintf("%s: the group's commit history holds no commit of it", p.TP))
		return res
	}
	a := analysis{ev: ev, h: h, p: p, res: &res, cs: cs, born: born}
	a.prepare()
	a.run()
	res.Unknown = mergeGaps(res.Unknown)
	return res
}

// analysis is one partition's judgement in progress.
type analysis struct {
	jump int64 // usualJump, once worked out
	born int64 // when the group's incarnation began (its last deletion), ms
	ev   *Evidence
	h    *audit.CommitHistory
	p    Partition
	res  *Result
	cs   []audit.Commit

	obs      []LogStartAt // by their earliest time
	sufMin   []int        // sufMin[i]: the index of the smallest observation in obs[i:]
	byLatest []LogStartAt // the same by their latest time
	preMax   []int        // preMax[i]: the index of the largest observation in byLatest[:i+1]
	resets   []reset
	eos      bool  // the group commits in transactions
	firstTxn int64 // the position of its first transactional commit
	explains []applog.Event
}

// reset is the app's consumer resetting the partition's position: out of
// range at From (-1 when the line is missing) and reset to To.
type reset struct {
	from, to int64
	at       applog.Stamp
	lines    []applog.Event
}

func (a *analysis) prepare() {
	a.eos, a.firstTxn = a.ev.transactional()
	a.obs = append(a.obs, a.ev.LogStarts[a.p.TP]...)
	var pending *reset
	for i := range a.ev.Events {
		e := &a.ev.Events[i]
		if e.TP != a.p.TP || (!e.Kind.Broker() && e.Tie(a.ev.Group) != applog.Tied) {
			continue // another partition's, or a line not tied to the app (another group's reset)
		}
		if e.Time.Before(time.UnixMilli(a.born)) {
			continue // an earlier incarnation's (a topic deleted and made again with the group)
		}
		switch e.Kind {
		case applog.LogStartIncremented:
			if !e.Time.IsZero() {
				o := LogStartAt{Time: e.Time.Earliest, Offset: e.Offset, Event: e,
					Why: fmt.Sprintf("the broker's log at %s: %q", e.Where(), strings.TrimSpace(e.Raw))}
				if !e.Time.IsPoint() {
					o.Until = e.Time.Latest
				}
				a.obs = append(a.obs, o)
			} else {
				a.explains = append(a.explains, *e)
			}
		case applog.OutOfRange:
			if e.Reason == "" {
				pending = &reset{from: e.Offset, to: -1, at: e.Time, lines: []applog.Event{*e}}
			}
		case applog.OffsetReset:
			r := reset{from: -1, to: e.To, at: e.Time, lines: []applog.Event{*e}}
			if pending != nil && pending.lines[0].File == e.File {
				r.from, r.lines = pending.from, append(pending.lines, *e)
				if r.at.IsZero() {
					r.at = pending.at
				}
			}
			pending = nil
			a.resets = append(a.resets, r)
		case applog.SegmentDeleted, applog.Truncated, applog.SeekReset, applog.SeekCommitted:
			a.explains = append(a.explains, *e)
		}
	}
	if !a.p.Now.IsZero() {
		a.obs = append(a.obs, LogStartAt{Time: a.p.Now, Offset: a.p.LogStart, Why: "the partition's log start when the audit read it"})
	}
	// an observation bounds the log start from above at the times surely
	// before it (its earliest time on), from below at those surely after
	// it (its latest time on): a time whose zone is not known settles
	// fewer comparisons, never a wrong one
	slices.SortStableFunc(a.obs, func(x, y LogStartAt) int { return x.Time.Compare(y.Time) })
	a.byLatest = slices.Clone(a.obs)
	slices.SortStableFunc(a.byLatest, func(x, y LogStartAt) int { return x.latest().Compare(y.latest()) })
	n := len(a.obs)
	a.sufMin, a.preMax = make([]int, n), make([]int, n)
	for i := n - 1; i >= 0; i-- {
		a.sufMin[i] = i
		if i+1 < n && a.obs[a.sufMin[i+1]].Offset < a.obs[i].Offset {
			a.sufMin[i] = a.sufMin[i+1]
		}
	}
	for i := range n {
		a.preMax[i] = i
		if i > 0 && a.byLatest[a.preMax[i-1]].Offset >= a.byLatest[i].Offset {
			a.preMax[i] = a.preMax[i-1]
		}
	}
}

// latest is the last instant the observation may have been made at.
func (o *LogStartAt) latest() time.Time {
	if o.Until.IsZero() {
		return o.Time
	}
	return o.Until
}

// when says when the observation was made.
func (o *LogStartAt) when() string {
	if o.Until.IsZero() || o.Until.Equal(o.Time) {
		return ms(o.Time.UnixMilli())
	}
	return "between " + ms(o.Time.UnixMilli()) + " and " + ms(o.Until.UnixMilli())
}

// upper bounds the log start at time t (ms): the smallest observation
// surely made at or after t, or -1 (no bound).
func (a *analysis) upper(t int64) (int64, *LogStartAt) {
	i, _ := slices.BinarySearchFunc(a.obs, t, func(o LogStartAt, t int64) int { return cmp.Compare(o.Time.UnixMilli(), t) })
	if i == len(a.obs) {
		return -1, nil
	}
	o := &a.obs[a.sufMin[i]]
	return o.Offset, o
}

// lowerBy is the highest log start surely observed at or before t (ms),
// or -1.
func (a *analysis) lowerBy(t int64) (int64, *LogStartAt) {
	i, _ := slices.BinarySearchFunc(a.byLatest, t+1, func(o LogStartAt, t int64) int { return cmp.Compare(o.latest().UnixMilli(), t) })
	if i == 0 {
		return -1, nil
	}
	o := &a.byLatest[a.preMax[i-1]]
	return o.Offset, o
}

func (a *analysis) run() {
	cs := a.cs
	since := int64(0)
	if !a.ev.Since.IsZero() {
		since = a.ev.Since.UnixMilli()
	}
	c0 := cs[0]
	if since > 0 && since < c0.Time && !a.h.Whole(0, c0.At) {
		a.compacted(c0, since)
	}
	frontier := int64(-1)
	var before audit.Commit // the last commit of an offset
	if !c0.Deleted {
		frontier, before = c0.Offset, c0
	}
	deletedAt := int64(-1)
	// the history is whole up to the first range after c0 that could not
	// be read: a commit of the partition may be missing there, so what
	// follows it is not judged
	cut := a.h.UnreadAfter(c0.At)
	for k := 1; k < len(cs); k++ {
		c, prev := cs[k], cs[k-1]
		if cut != nil && c.At > cut.From {
			a.unread(cut, frontier, before, cs[k:])
			return
		}
		if c.Deleted {
			deletedAt = c.At
			continue
		}
		judged := c.Time >= since && frontier >= 0 && c.Offset > frontier
		if judged {
			a.res.Judged++
			a.judge(transition{before: before, prev: prev, c: c, m: frontier, deleted: deletedAt >= 0})
		}
		frontier, before, deletedAt = max(frontier, c.Offset), c, -1
	}
	if cut != nil {
		a.unread(cut, frontier, before, nil)
	}
}

// unread leaves the offsets past the frontier that the partition's
// commits after an unread range of the history may have moved past (up
// to the committed offset now, or the highest commit read after it) as
// missing evidence.
func (a *analysis) unread(u *audit.UnreadRange, frontier int64, before audit.Commit, after []audit.Commit) {
	to := a.p.Committed
	for _, c := range after {
		if !c.Deleted {
			to = max(to, c.Offset)
		}
	}
	if to <= frontier {
		return
	}
	a.res.Unknown = append(a.res.Unknown, Gap{From: frontier, To: to, Before: before, Why: unreadWhy(a.h, u, a.p.TP) +
		fmt.Sprintf(" (the last commit read before it: %d at %s)", before.Offset, ms(before.LastTime))})
}

// unreadWhy says why a partition's history past an unread range is not
// known.
func unreadWhy(h *audit.CommitHistory, u *audit.UnreadRange, tp audit.TopicPartition) string {
	return fmt.Sprintf("offsets %d-%d of the group's commit log %s could not be read (%s): a commit of %s there may be missing, so whether its committed offset moved past these offsets without the app consuming them is not known", u.From, u.To-1, h.Log, u.Why, tp)
}

// transition is one commit moving past the frontier.
type transition struct {
	before  audit.Commit // the last commit of an offset before c
	prev    audit.Commit // the record before c (before, or a deletion)
	c       audit.Commit
	m       int64 // the frontier: the highest offset committed before c
	deleted bool  // the group's offset was deleted between before and c
}

func (a *analysis) judge(t transition) {
	c, m := t.c, t.m
	lo, loAt := a.lowerBy(c.Time - 1)
	if a.byHand(c) {
		d := min(max(lo, m), c.Offset)
		if d > m {
			a.skip(t, m, d, a.p.Role.deleted(), fmt.Sprintf("the log start was already %d (%s) when the committed offset was moved by hand past it", lo, loAt.Why), eventOf(loAt)...)
		}
		how := "a plain OffsetCommit while the group had no member (an admin tool: kafka-consumer-groups --reset-offsets, an admin client)"
		if a.eos && c.Record > a.firstTxn {
			how = "a plain OffsetCommit (no transaction) in a group that commits in transactions (exactly-once): not the app's"
		}
		a.skip(t, d, c.Offset, audit.CauseOffsetsForward, "moved forward by "+how+"; the app resumed after it")
		return
	}
	up, upAt := a.upper(c.Time)
	if up >= 0 && up <= m {
		return // the log start was at or below the frontier: nothing above it was gone
	}
	top := c.Offset
	if up >= 0 {
		top = min(top, up)
	}
	// the app's log: its consumer found its position out of range and reset
	proven := false
	for _, r := range a.resets {
		if r.from < 0 || r.to <= m || r.to > c.Offset || r.from < t.before.Offset || r.from >= r.to || !a.between(r.at, t.before, c) {
			continue
		}
		a.skip(t, max(r.from, m), r.to, a.p.Role.deleted(), fmt.Sprintf("the app's consumer found its position %d out of range and reset to %d (auto.offset.reset), then committed past it", r.from, r.to), r.lines...)
		proven = true
	}
	if proven {
		return
	}
	// an observed log start above the frontier when the app could not
	// have consumed those offsets
	back, gen := a.restart(t.prev.LastAt, c.At)
	n, nAt := a.lowerBy(min(t.before.LastTime, c.Time-1))
	if back {
		if n2, at2 := a.lowerBy(min(gen.Time, c.Time-1)); n2 > n {
			n, nAt = n2, at2
		}
	}
	if n > m {
		n = min(n, c.Offset)
		var why string
		if nAt.latest().UnixMilli() <= t.before.LastTime {
			why = fmt.Sprintf("the log start was %d at %s (%s), before the commit of %d took effect at %s, which covers everything the app had processed", nAt.Offset, nAt.when(), nAt.Why, t.before.Offset, ms(t.before.LastTime))
		} else {
			how := "while the group had no member; generation %d came back at %s and its consumer resumed from the committed offset %d"
			if gen.Fresh {
				how = "before the app restarted: generation %d, none of whose members was in the group before, formed at %s and its consumer resumed from the committed offset %d"
			}
			why = fmt.Sprintf("the log start was %d at %s (%s), "+how, nAt.Offset, nAt.when(), nAt.Why, gen.Generation, ms(gen.Time), t.before.Offset)
			if !a.eos {
				why += " (the group commits without transactions: what an instance processed and did not commit before it stopped took effect even so)"
			}
		}
		a.skip(t, m, n, a.p.Role.deleted(), why, eventOf(nAt)...)
		if top > n {
			a.gap(t, n, top, fmt.Sprintf("the app resumed from the log start at its restart, at least %d and at most %d (%s): whether it skipped these offsets too is not recorded", n, top, upWhy(upAt)))
		}
		return
	}
	// no proof
	if a.p.Role == Repartition {
		var why string
		ab := a.abortedAbove(m, t.before.At, c.At)
		gs := a.gensBetween(t.prev.LastAt, c.At)
		switch {
		case t.deleted:
			why = fmt.Sprintf("the group's offset was deleted after %s and the app resumed from its auto.offset.reset", ms(t.before.LastTime))
		case a.ev.StreamsPurgeFixed:
			return // its purges never pass a committed offset
		case ab != nil:
			why = fmt.Sprintf("a commit of %d by producer %d aborted at %s, and Kafka Streams before 3.7.2 purges up to what it processed, committed or not (KAFKA-17635)", ab.Offset, ab.ProducerID, ms(ab.Time))
		case a.moved(t, gs):
			why = "its consumer may have resumed from the committed offset between the two commits (they were made by different producers or producer epochs: a restart, a fenced or migrated task; or the group rebalanced), and Kafka Streams before 3.7.2 goes on purging what it processes while a rebalance holds its commits back (KAFKA-17635)"
		default:
			return // no position reset: Streams' own purges stay below its consumer's position
		}
		a.gap(t, m, top, why+fmt.Sprintf("; the log start passed %d before %s (%s), and nothing recorded whether before the app read these offsets: the broker's log (Incremented log start offset … due to client delete records request) or the app's (Resetting offset for partition) would tell", m, ms(c.Time), upWhy(upAt)))
		return
	}
	// a running consumer: the same producer (or generation) made both
	// commits, so it fetched on from the first without resuming; it skips
	// only if it fell behind retention and reset, which shows as a jump of
	// its position well beyond its usual steps
	if !back && !a.moved(t, a.gensBetween(t.prev.LastAt, c.At)) && c.Offset-m <= a.usualJump() {
		return
	}
	when := "while the app ran (a consumer behind retention loses what retention deletes)"
	if back {
		when = fmt.Sprintf("while the group had no member, or after generation %d came back at %s", gen.Generation, ms(gen.Time))
	} else if gs := a.gensBetween(t.prev.LastAt, c.At); len(gs) > 0 || !a.gensKnown(t.prev.LastAt) {
		when = "across a rebalance, when the consumer may have resumed from the committed offset"
	}
	a.gap(t, m, top, fmt.Sprintf("the log start passed the committed offset %d before %s (%s), %s; nothing recorded whether it did before the app read these offsets: the broker's log (Incremented log start offset), the app's (Resetting offset for partition) or a capture taken before the restart would tell",
		m, ms(c.Time), upWhy(upAt), when))
}

// usualJump is the largest step a running consumer's committed offset
// takes on this partition without it being a reset: ten times the
// median step between its commits (at least 100 offsets).
func (a *analysis) usualJump() int64 {
	if a.jump > 0 {
		return a.jump
	}
	var steps []int64
	for k := 1; k < len(a.cs); k++ {
		if d := a.cs[k].Offset - a.cs[k-1].Offset; d > 0 && !a.cs[k].Deleted && !a.cs[k-1].Deleted {
			steps = append(steps, d)
		}
	}
	a.jump = 100
	if len(steps) > 0 {
		slices.Sort(steps)
		a.jump = max(a.jump, 10*steps[len(steps)/2])
	}
	return a.jump
}

// moved reports whether the repartition partition's consumer may have
// resumed from the committed offset between the transition's commits: in
// transactions, when another producer or producer epoch made the second
// (the same thread's producer keeps its id and epoch until a restart,
// fencing or a migration of its task); without, when the group
// rebalanced (gs: the generation records between) or its generations are
// not known there.
func (a *analysis) moved(t transition, gs []audit.Generation) bool {
	if t.before.Transactional && t.c.Transactional {
		return t.before.ProducerID != t.c.ProducerID || t.before.ProducerEpoch != t.c.ProducerEpoch
	}
	return len(gs) > 0 || !a.gensKnown(t.prev.LastAt)
}

// compacted judges the stretch from since to the partition's first commit
// c0, whose earlier commits compaction removed.
func (a *analysis) compacted(c0 audit.Commit, since int64) {
	up, upAt := a.upper(c0.Time)
	lo, _ := a.lowerBy(since)
	if up >= 0 && lo >= 0 && up <= lo {
		return // the log start did not move over the stretch
	}
	if up == 0 {
		return
	}
	top := c0.Offset
	if up >= 0 {
		top = min(top, up)
	}
	what := "compaction removed the group's commits"
	if u := a.h.UnreadAfter(-1); u != nil && u.From < c0.At {
		what = fmt.Sprintf("offsets %d-%d of the group's commit log could not be read (%s), and with them maybe commits", u.From, u.To-1, u.Why)
	}
	a.res.Unknown = append(a.res.Unknown, Gap{From: -1, To: top, Commit: c0,
		Why: fmt.Sprintf("%s of %s from before %s (the first it kept: %d); the log start moved meanwhile (%s), so whether it passed a committed offset between %s and then is not known",
			what, a.p.TP, ms(c0.Time), c0.Offset, upWhy(upAt), ms(since))})
}

// byHand reports whether c was not made by the app: a plain commit while
// the group had no member, or a plain commit of a group that commits in
// transactions, after its first transactional one.
func (a *analysis) byHand(c audit.Commit) bool {
	if c.Transactional {
		return false
	}
	if a.eos && c.Record > a.firstTxn {
		return true
	}
	g, known := a.genAt(c.Record)
	return known && (g == nil || g.Empty())
}

// genAt is the group's last generation record before position at, and
// whether the group's state there is known (no generation record before
// the first one kept was removed by compaction).
func (a *analysis) genAt(at int64) (*audit.Generation, bool) {
	gs := a.h.Generations
	i, _ := slices.BinarySearchFunc(gs, at, func(g audit.Generation, at int64) int { return cmp.Compare(g.At, at) })
	if i == 0 {
		return nil, a.h.Whole(0, at)
	}
	return &gs[i-1], true
}

// gensKnown reports whether every generation record after position at is
// in the history.
func (a *analysis) gensKnown(at int64) bool {
	gs := a.h.Generations
	return (len(gs) > 0 && at >= gs[0].At) || a.h.Whole(0, at)
}

// gensBetween lists the generation records in (from, to).
func (a *analysis) gensBetween(from, to int64) []audit.Generation {
	gs := a.h.Generations
	i, _ := slices.BinarySearchFunc(gs, from+1, func(g audit.Generation, at int64) int { return cmp.Compare(g.At, at) })
	j, _ := slices.BinarySearchFunc(gs, to, func(g audit.Generation, at int64) int { return cmp.Compare(g.At, at) })
	return gs[i:j]
}

// restart reports whether, between positions from and to, the group had
// no member and then a generation with members, or formed a generation
// none of whose members was in the one before (the app restarted before
// the old members' sessions expired): its consumers resumed from the
// committed offsets. gen is the last such generation.
func (a *analysis) restart(from, to int64) (bool, audit.Generation) {
	empty := false
	if g, known := a.genAt(from + 1); known && g != nil && g.Empty() {
		empty = true
	}
	// the last restart: the consumer that made the next commit resumed
	// from the committed offset then (an earlier run that made no commit
	// in between changed nothing the cut keeps)
	back, last := false, audit.Generation{}
	for _, g := range a.gensBetween(from, to) {
		switch {
		case g.Empty():
			empty = true
		case empty || g.Fresh:
			back, last, empty = true, g, false
		}
	}
	return back, last
}

// abortedAbove returns an aborted commit of the partition above m between
// positions from and to, or nil.
func (a *analysis) abortedAbove(m, from, to int64) *audit.Commit {
	for i, ab := range a.h.Aborted[a.p.TP] {
		if ab.At > from && ab.At < to && ab.Offset > m {
			return &a.h.Aborted[a.p.TP][i]
		}
	}
	return nil
}

// between reports whether a log line's time fits between two commits,
// within a minute (the app's and the brokers' clocks differ). Its
// offsets tie a reset line to the commits; its time only rules it out,
// where it is surely outside them: a line with no time, or one whose
// interval (a zone not known exactly) does not settle it, fits by its
// offsets alone.
func (a *analysis) between(at applog.Stamp, before, c audit.Commit) bool {
	return !at.Before(time.UnixMilli(before.Time-60_000)) && !at.After(time.UnixMilli(c.Time+60_000))
}

func (a *analysis) skip(t transition, from, to int64, cause audit.Cause, why string, lines ...applog.Event) {
	if to <= from {
		return
	}
	lines = append(slices.Clip(lines), a.linesFor(from, to, t)...)
	a.res.Skips = append(a.res.Skips, Skip{From: from, To: to, Cause: cause, Stage: a.p.Role.stage(), Before: t.before, Commit: t.c, Why: why, Lines: lines})
}

// linesFor are the cited lines (a segment deleted, a truncation, a
// seek) that concern [from, to).
func (a *analysis) linesFor(from, to int64, t transition) []applog.Event {
	var out []applog.Event
	for _, e := range a.explains {
		if e.Kind == applog.SegmentDeleted && e.Offset >= to {
			continue
		}
		if e.Kind == applog.SeekCommitted && (e.Offset < from || e.Offset >= to) {
			continue
		}
		if !a.between(e.Time, t.before, t.c) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func (a *analysis) gap(t transition, from, to int64, why string) {
	if to <= from {
		return
	}
	a.res.Unknown = append(a.res.Unknown, Gap{From: from, To: to, Before: t.before, Commit: t.c, Why: why})
}

func eventOf(o *LogStartAt) []applog.Event {
	if o == nil || o.Event == nil {
		return nil
	}
	return []applog.Event{*o.Event}
}

func upWhy(o *LogStartAt) string {
	if o == nil {
		return "no observation bounds it"
	}
	return fmt.Sprintf("%d at %s: %s", o.Offset, o.when(), o.Why)
}

// ms prints a time in milliseconds since the epoch as UTC RFC 3339.
func ms(t int64) string { return time.UnixMilli(t).UTC().Format("2006-01-02T15:04:05.000Z") }
