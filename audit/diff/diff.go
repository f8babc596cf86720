package diff

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/draft"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/statedir"
)

// Evidence is an opened source of evidence with what opening it already
// found wrong (a snapshot file whose hash does not match, a torn tail)
// and what it cannot know, for the report. Source is a named field, not
// embedded: an Evidence is no audit.Source, so that no caller hands on a
// wrapper that hides the source's optional evidence (its clock, its
// schemas).
type Evidence struct {
	Source   audit.Source
	Problems []audit.Finding
	Notes    []string
}

// Options say what to audit and how.
type Options struct {
	// AppID is the Streams application.id; "" takes the spec's.
	AppID string
	// TopologyFile is a Topology#describe() text file; "" takes the
	// spec's, else the one the source carries, else none.
	TopologyFile string
	// SpecFile is a kaudit.yaml; "" infers the spec from the evidence
	// (as kaudit init drafts it: Report.InferredSpec), or, with Keyless or
	// without an AppID, runs the checks that need no key.
	SpecFile string
	Keyless  bool
	// StateDir is a Streams state.dir whose checkpoints are checked
	// against the changelogs; "" for none.
	StateDir string
	// Since and Until limit which inputs are judged: a duration ago
	// (counted back from the source's clock) or an RFC 3339 time; "" for
	// no bound.
	Since, Until string
	// BaselineSnapshot is an earlier capture: records it holds that are
	// gone now are truncated.
	BaselineSnapshot string
	// AppLogs and BrokerLogs are the app's and the brokers' log files
	// (plain or gzip; audit/applog reads them): optional evidence of
	// offset resets and log-start moves for the commit history's
	// analysis (audit/history), and a windowed store's grace. Parsed from
	// --app-log and --broker-log.
	AppLogs, BrokerLogs []string
	// LogTimezone is the zone the logs' times without a zone were written
	// in (--log-timezone: an IANA name or an offset, applog.ParseZone);
	// "": the zone each file's start-up lines show, else not known (each
	// such time an interval of ±14 h).
	LogTimezone string
	// LogDay is the date the logs' first line with only a time of day
	// (logback's and slf4j-simple's default "HH:mm:ss.SSS") was written on
	// (--log-day: YYYY-MM-DD, applog.ParseDay); "": such lines have no time.
	LogDay string
	// MemoryBudget is --memory-budget (0: no bound): what the logs may
	// make kaudit read and keep is bound by it (history.Logs).
	MemoryBudget int64
	// Outage is how long the brokers were down: topics whose retention is
	// shorter are a config risk.
	Outage time.Duration
	// MaxTxnTimeout: an open transaction older than this is hanging.
	MaxTxnTimeout time.Duration
	// Partitions limits the audit to these task partitions (a shard).
	Partitions []int32
	// Shard, when Count > 0 and Partitions is nil, audits the task
	// partitions p with p % Count == Index: shard Index of Count, whatever
	// the app's partition counts (a Kubernetes Indexed Job's completion
	// index). The shards of one Count cover every partition once.
	Shard Shard
	// RunID names the audit a shard belongs to (kaudit diff --run-id),
	// so that kaudit merge refuses a shard of another run.
	RunID string
	// Exchange, with Shard and RunID, is a folder every shard of the run
	// mounts, which must exist: the shards hand each other the inputs of
	// re-keyed tables under Exchange/RunID (ExchangeRunDir), each reading
	// only its own source partitions (reconcile.Exchange), and must then
	// all run at once; a shard waits at most ExchangeWait (0: 30 minutes)
	// for the others, and reads only files of its run and its evidence
	// (the report's Shard.Fingerprint).
	Exchange     string
	ExchangeWait time.Duration
	// CrossCheck compares each partition's derived read_committed view
	// with the broker's.
	CrossCheck bool
	// Concurrency is how many partitions are read at once.
	Concurrency int
	// TableMemory bounds one table's per-record state in bytes (0: no
	// bound); a table over it spills to SpillDir.
	TableMemory int64
	SpillDir    string
	// Codec is the decoding the caller chose (serdes, a registry, offline
	// schemas, client properties); the spec's serdes fill what it leaves
	// empty, and the schemas a capture carries serve when it names no
	// registry and no schema dir.
	Codec codec.Config
	// Progress, if set, draws progress; Log, if set, tells the user what
	// the audit does that is not evidence (a table spilled to disk).
	Progress audit.Progress
	Log      func(string)
	// specOfDraft builds the spec of a draft (nil: Draft.Spec), given the
	// draft and its YAML: the tests' way to audit with the YAML parsed
	// back (spec.ParseDraft), as kaudit did before the draft was a value.
	specOfDraft func(d *draft.Draft, yaml string) (*spec.Spec, error)
}

// Diff audits the app on ev and returns its finished report.
func Diff(ctx context.Context, ev Evidence, o Options) (*audit.Report, error) {
	clock, clockName := audit.SourceClock(ev.Source)
	since, err := ParseWhen(o.Since, clock)
	if err != nil {
		return nil, audit.UsageError{Err: fmt.Errorf("--since: %w", err)}
	}
	until, err := ParseWhen(o.Until, clock)
	if err != nil {
		return nil, audit.UsageError{Err: fmt.Errorf("--until: %w", err)}
	}
	region := trace.StartRegion(ctx, "prepare") // go tool trace shows the steps (kaudit --trace)
	s, err := Prepare(ctx, ev, o)
	region.End()
	if err != nil {
		return nil, err
	}
	log := o.Log
	if log != nil {
		var mu sync.Mutex
		log = func(msg string) { mu.Lock(); defer mu.Unlock(); o.Log(msg) }
	}
	// the group's commit history and the logs: what survives a restart
	zone, err := applog.ParseZone(o.LogTimezone)
	if err != nil {
		return nil, audit.UsageError{Err: fmt.Errorf("--log-timezone: %w", err)}
	}
	day, err := applog.ParseDay(o.LogDay)
	if err != nil {
		return nil, audit.UsageError{Err: fmt.Errorf("--log-day: %w", err)}
	}
	hist, err := history.Gather(ctx, ev.Source, cmp.Or(o.AppID, s.Pipeline.AppID), history.Logs{App: o.AppLogs, Broker: o.BrokerLogs,
		Options: applog.Options{Location: zone, Day: day}, Topics: logTopics(s.Pipeline), Budget: o.MemoryBudget})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, audit.UsageError{Err: err}
	}
	hist.Since = since
	// the spec check reads its samples while the audit reads the topics;
	// the audit waits for it before it judges (reconcile.Options.Ready),
	// and a spec the evidence refutes ends the audit
	// the first to fail cancels the other with its error as the cause:
	// the other's cancellation is never the run's error (context.Cause)
	auditCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	checked := make(chan error, 1)
	go func() {
		defer trace.StartRegion(auditCtx, "spec check").End()
		err := s.checkSpec(auditCtx, ev.Source, log)
		if err != nil {
			cancel(err)
		}
		checked <- err
	}()
	ready := sync.OnceValue(func() error { return <-checked })
	appID := cmp.Or(o.AppID, s.Pipeline.AppID)
	var shard *audit.Shard
	var exchange *reconcile.Exchange
	if o.Partitions != nil || o.Shard.Count > 0 {
		topics := pipelineTopics(s.Pipeline)
		tasks := taskPartitions(ctx, ev.Source, topics)
		if o.Partitions == nil {
			o.Partitions = o.Shard.partitions(tasks)
		}
		// the evidence the shard reads, named alike by every shard of the
		// run: its exchange files and its report carry it, and a file or
		// a report of other evidence is refused
		fp, err := audit.Fingerprint(ctx, ev.Source, topics)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, audit.NotRunError{Err: fmt.Errorf("fingerprint the evidence: %w", err)}
		}
		shard = &audit.Shard{Index: o.Shard.Index, Count: o.Shard.Count, Partitions: slices.Clone(o.Partitions), Tasks: tasks, Run: o.RunID, Fingerprint: fp}
		if o.Exchange != "" && o.Shard.Count > 0 {
			if _, err := ExchangeRunDir(o.Exchange, o.RunID); err != nil {
				return nil, audit.UsageError{Err: fmt.Errorf("--run-id: %w", err)}
			}
			exchange = &reconcile.Exchange{Dir: o.Exchange, Run: o.RunID, Fingerprint: fp, Index: o.Shard.Index, Count: o.Shard.Count, Tasks: tasks, Wait: o.ExchangeWait}
		}
	}
	rep, err := reconcile.Run(auditCtx, ev.Source, s.Pipeline, reconcile.Options{Decoder: s.Decoder, MaxTxnTimeout: o.MaxTxnTimeout,
		Since: since, Until: until, Partitions: o.Partitions, CrossCheck: o.CrossCheck, Concurrency: o.Concurrency, Progress: o.Progress, Log: log,
		MemoryBudget: o.TableMemory, SpillDir: o.SpillDir, Ready: ready, History: hist, Exchange: exchange})
	if err != nil {
		cancel(err) // the spec check too
	}
	if specErr := ready(); specErr != nil && ctx.Err() == nil && !canceledBy(auditCtx, specErr) {
		return nil, specErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, audit.NotRunError{Err: err}
	}
	rep.Shard = shard
	rep.Findings = append(rep.Findings, ev.Problems...)
	addUnjudged(rep, s.unjudged)
	if s.Draft != nil {
		rep.InferredSpec = s.Inferred
		rep.Inferred = inferredSummary(s)
		rep.Summary.Notes = append(rep.Summary.Notes, inferredNote(s))
		undecodableOfGuess(rep)
	}
	if s.notInferred != "" {
		rep.Summary.Missing = append(rep.Summary.Missing, "no spec could be inferred from the evidence, so only the checks that need no key ran: "+s.notInferred)
	}
	rep.Findings = append(rep.Findings, discovery.ConfigRisksFor(s.Discovery, o.Outage)...)
	rep.Summary.Notes = append(rep.Summary.Notes, s.Discovery.Unknown...)
	rep.Summary.Notes = append(rep.Summary.Notes, s.Warnings...)
	if !since.IsZero() || !until.IsZero() {
		rep.Summary.Notes = append(rep.Summary.Notes, windowNote(since, until, clock, clockName, rep.Timeline))
	}
	rep.Summary.Notes = append(rep.Summary.Notes, ev.Notes...)
	rep.Summary.Notes = append(rep.Summary.Notes, hist.Notes...)
	rep.Summary.Missing = append(rep.Summary.Missing, hist.Missing...)
	switch {
	case hist.Failed:
		rep.Summary.Missing = append(rep.Summary.Missing, hist.Unknown) // a check that did not run
	case hist.Unknown != "":
		rep.Summary.Notes = append(rep.Summary.Notes, hist.Unknown)
	}
	rep.Summary.Notes = append(rep.Summary.Notes, groupNotes(ctx, ev.Source, appID)...)
	if appID != "" {
		if g, err := ev.Source.GroupOffsets(ctx, appID); err != nil || len(g.Offsets) == 0 {
			pendingUnknown(rep)
		}
	}
	if o.StateDir != "" {
		if err := checkStateDir(o.StateDir, appID, rep); err != nil {
			return nil, err
		}
	}
	if o.BaselineSnapshot != "" {
		if err := compareBaseline(ctx, o.BaselineSnapshot, ev.Source, rep); err != nil {
			return nil, err
		}
	}
	rep.Finish()
	return rep, nil
}

// pendingUnknown is the report of an audit without the group's committed
// offsets (not read, or none committed): which records the app has
// processed is not known, so none is pending (lag, "not lost"); the
// engine's pending findings, counted against no offset, become one piece
// of missing evidence.
func pendingUnknown(rep *audit.Report) {
	var n int64
	var topics []string
	kept := rep.Findings[:0]
	for _, f := range rep.Findings {
		if f.Cause != audit.CausePending {
			kept = append(kept, f)
			continue
		}
		n += max(f.Count, 1)
		if !slices.Contains(topics, f.Topic) {
			topics = append(topics, f.Topic)
		}
	}
	rep.Findings = kept
	rep.Summary.PendingUnknown = true
	if n > 0 {
		rep.Summary.Missing = append(rep.Summary.Missing, fmt.Sprintf("the group's committed offsets are missing, so whether the app processed %d records of %s (and whether any of them was lost) is not known: they are not counted as pending", n, strings.Join(topics, ", ")))
	}
}

// canceledBy reports whether err is only ctx's cancellation by another
// part of the run, whose error context.Cause(ctx) holds: that error, not
// this one, is the run's.
func canceledBy(ctx context.Context, err error) bool {
	cause := context.Cause(ctx)
	return errors.Is(err, context.Canceled) && cause != nil && !errors.Is(cause, context.Canceled)
}

// inferredSummary is what the inferred spec rests on and judged, table by
// table, for the report (audit.Inferred): each table's and join's guesses
// as the draft has them, with their evidence, and whether the audit
// judged it; the tables and joins the draft left out, and why, last.
func inferredSummary(s *Setup) *audit.Inferred {
	sum := sha256.Sum256([]byte(s.Inferred))
	in := &audit.Inferred{SHA256: hex.EncodeToString(sum[:]), Topology: cmp.Or(s.topoFrom, "none")}
	in.Guesses, in.Unsettled = inferredCounts(s)
	for _, t := range s.Draft.Tables {
		if s.Spec.Table(t.Name) == nil {
			continue // left out: Dropped says why
		}
		it := inferredTable(t)
		if pt := s.Resolved.Table(t.Name); pt != nil {
			it.Unjudged, it.Unsure = pt.Unjudged, pt.Unsure
		}
		for _, pt := range s.Pipeline.Tables {
			if pt.Name == t.Name && it.Unjudged == "" {
				it.Unjudged = pt.Unjudged // the spec check's
			}
		}
		in.Tables = append(in.Tables, it)
	}
	for _, d := range s.Spec.Dropped {
		in.Tables = append(in.Tables, audit.InferredTable{Unjudged: d})
	}
	joins := s.Draft.Joins
	for i, j := range s.Spec.Joins {
		// the spec's joins are the draft's, less those it left out
		for len(joins) > 0 && (joins[0].Skipped != "" || joins[0].Output.Value != j.Output) {
			joins = joins[1:]
		}
		ij := audit.InferredJoin{Output: j.Output, Left: j.Left, Right: j.Right}
		if len(joins) > 0 {
			dj := joins[0]
			joins = joins[1:]
			if dj.Type.Known() {
				ij.Type = dj.Type.Value
			}
			ij.Value, ij.Guesses = dj.Value.Value, inferredGuesses(dj.Parts())
		}
		if i < len(s.Pipeline.Joins) {
			ij.Unjudged = s.Pipeline.Joins[i].Unjudged
		}
		in.Joins = append(in.Joins, ij)
	}
	return in
}

// inferredTable is a drafted table's guesses for the report: the values
// the evidence settles (none where it does not), each guess with what it
// rests on.
func inferredTable(t draft.Table) audit.InferredTable {
	it := audit.InferredTable{Name: t.Name, Window: t.Window.Describe(), Guesses: inferredGuesses(t.Parts())}
	if t.Regroup == nil && t.Cogroup == nil {
		it.Source = strings.Join(append([]string{t.Source.Value}, t.Merged...), ", ")
	}
	for _, st := range t.Steps {
		it.Steps = append(it.Steps, st.Label())
	}
	if g := t.SelectKey; g.Known() && g.Value != "key" {
		it.SelectKey = g.Value
	}
	if g := t.Reduce; g.Known() {
		it.Reduce = g.Value
	}
	if t.Output != nil {
		it.Output = t.Output.Topic
	}
	return it
}

// inferredGuesses are a draft's parts for the report.
func inferredGuesses(parts []draft.Part) []audit.InferredGuess {
	var out []audit.InferredGuess
	for _, p := range parts {
		out = append(out, audit.InferredGuess{Field: p.Field, Value: p.Value, Evidence: p.Evidence, Explained: p.Explained, Of: p.Of, Unknown: p.Unknown})
	}
	return out
}

// logTopics are the topics the audit reads: a broker's log line about
// another topic is no evidence of this app's.
func logTopics(p *reconcile.Pipeline) map[string]bool {
	m := map[string]bool{}
	add := func(ts ...string) {
		for _, t := range ts {
			if t != "" {
				m[t] = true
			}
		}
	}
	for _, t := range p.Tables {
		add(t.Source, t.Repartition, t.Changelog, t.Output)
		add(t.Merged...)
		if t.Cogroup != nil {
			for _, mb := range t.Cogroup.Members {
				add(mb.Source, mb.Repartition)
			}
		}
	}
	for _, j := range p.Joins {
		add(j.Output)
	}
	for _, c := range p.Copies {
		add(c.Source, c.Output)
	}
	for _, j := range p.StreamJoins {
		add(j.Sources...)
		add(j.Output, j.Repartition)
	}
	add(p.Outputs...)
	return m
}

// inferredCounts counts an inferred spec's guesses and those the evidence
// left unsettled.
func inferredCounts(s *Setup) (guesses, unsettled int) {
	todo := func(steps []*spec.Step) int {
		n := 0
		for _, st := range steps {
			if st.TODO() && st.Kind != spec.StepProcess {
				n++ // a step the evidence did not settle (a Processor API node is no guess)
			}
		}
		return n
	}
	for _, t := range s.Spec.Tables {
		guesses += 2 + len(t.Steps) + len(t.TableSteps) + len(t.OutputSteps) // select_key and the reducer, each step
		unsettled += len(t.Unsettled) + todo(t.Steps) + todo(t.TableSteps) + todo(t.OutputSteps)
	}
	for _, c := range s.Spec.Copies {
		guesses += len(c.Steps)
		unsettled += todo(c.Steps)
	}
	for _, j := range s.Spec.Joins {
		guesses += 2 // type and value
		unsettled += len(j.Unsettled)
	}
	return guesses, unsettled + len(s.Spec.Dropped)
}

// inferredNote says that the audit rests on an inferred spec, and on how
// many guesses.
func inferredNote(s *Setup) string {
	guesses, unsettled := inferredCounts(s)
	return fmt.Sprintf("no --spec: the spec was inferred from the evidence, as kaudit init drafts it (%d tables, %d joins, %d guesses, %d left unsettled; --save-spec FILE writes it, with each guess's evidence, for review)",
		len(s.Spec.Tables), len(s.Spec.Joins), guesses, unsettled)
}

// Shard is one of Count shards of an app's task partitions.
type Shard struct{ Index, Count int32 }

// ParseShard reads "I/N" (0 <= I < N).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 32)
	n, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%q: want I/N with 0 <= I < N, e.g. 0/4", s)
	}
	return Shard{Index: int32(i), Count: int32(n)}, nil
}

// partitions lists the shard's task partitions below tasks.
func (sh Shard) partitions(tasks int32) []int32 {
	out := []int32{}
	for q := sh.Index; q < tasks; q += sh.Count {
		out = append(out, q)
	}
	return out
}

// taskPartitions is the largest partition count of the pipeline's
// topics: the app's tasks of one sub-topology are 0 to it.
func taskPartitions(ctx context.Context, src audit.Source, topics []string) int32 {
	var most int32
	for _, t := range topics {
		if t == "" {
			continue
		}
		n, err := src.Partitions(ctx, t)
		if err != nil {
			continue // the engine reports the topic it cannot read
		}
		most = max(most, n)
	}
	return most
}

// ExchangeRunDir is the folder of a run's exchange under dir (kaudit diff
// --exchange DIR --run-id ID): the id is one name in it, never a way out.
func ExchangeRunDir(dir, runID string) (string, error) { return reconcile.RunDir(dir, runID) }

// pipelineTopics are the topics of the app's tables, joins and outputs.
func pipelineTopics(p *reconcile.Pipeline) []string {
	var topics []string
	for _, t := range p.Tables {
		topics = append(topics, t.Source, t.Repartition, t.Changelog, t.Output)
	}
	for _, j := range p.Joins {
		topics = append(topics, j.Output)
	}
	for _, j := range p.StreamJoins {
		topics = append(topics, j.Repartition, j.Output)
		topics = append(topics, j.Sources...)
	}
	return append(topics, p.Outputs...)
}

// addUnjudged puts the reasons why tables and joins were not judged into
// the report's missing evidence (the verdict is then at best incomplete),
// once.
func addUnjudged(rep *audit.Report, unjudged []string) {
	for _, u := range unjudged {
		if !slices.ContainsFunc(rep.Summary.Missing, func(m string) bool { return strings.Contains(m, u) }) {
			rep.Summary.Missing = append(rep.Summary.Missing, u)
		}
	}
}

// groupNotes says, for log dirs, which transactional offset commits of
// the group had no marker when the log stopped, and whether they count.
func groupNotes(ctx context.Context, src audit.Source, group string) []string {
	d, ok := src.(*segment.Dir)
	if !ok || group == "" {
		return nil
	}
	gl, err := d.GroupLog(ctx, group)
	if err != nil {
		return nil // GroupOffsets already said why
	}
	var out []string
	for _, p := range gl.Pending {
		how := "its transaction had not been decided when the cluster stopped (a coordinator aborts it on restart): not counted in the cut"
		if p.Committed {
			how = "__transaction_state says its coordinator had decided to commit: counted in the cut"
		}
		out = append(out, fmt.Sprintf("group %s: a transactional offset commit of %s to %d by producer %d (%s offset %d) has no marker in the log dirs; %s",
			group, p.TP, p.Offset, p.ProducerID, segment.ConsumerOffsetsTopic, p.At, how))
	}
	return out
}

// checkStateDir checks the state dir's checkpoints against the cut's
// changelog offsets.
func checkStateDir(dir, appID string, rep *audit.Report) error {
	st, err := statedir.Read(dir, appID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return audit.UsageError{Err: fmt.Errorf("read --state-dir: %w", err)}
	case err != nil:
		// a state dir that cannot be read is missing evidence
		rep.Summary.Missing = append(rep.Summary.Missing, "state dir: "+err.Error())
		return nil
	}
	offsets := map[audit.TopicPartition]audit.PartitionOffsets{}
	for _, c := range rep.Cut {
		if c.Role == "changelog" {
			offsets[audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}] = audit.PartitionOffsets{LogStart: c.LogStart, LSO: c.LSO, HW: c.HW}
		}
	}
	rep.Findings = append(rep.Findings, statedir.Check(st, offsets, nil)...)
	return nil
}

// compareBaseline finds the records an earlier capture holds that are
// gone now.
func compareBaseline(ctx context.Context, dir string, src audit.Source, rep *audit.Report) error {
	earlier, err := snapshot.Open(dir)
	if err != nil {
		return audit.UsageError{Err: fmt.Errorf("open --baseline-snapshot: %w", err)}
	}
	var tps []audit.TopicPartition
	var absent []string
	for _, c := range rep.Cut {
		if _, err := earlier.Partitions(ctx, c.Topic); err != nil {
			if !slices.Contains(absent, c.Topic) {
				absent = append(absent, c.Topic)
			}
			continue
		}
		tps = append(tps, audit.TopicPartition{Topic: c.Topic, Partition: c.Partition})
	}
	if len(absent) > 0 {
		rep.Summary.Notes = append(rep.Summary.Notes, fmt.Sprintf("the baseline snapshot does not hold %s: those topics are not compared with it", strings.Join(absent, ", ")))
	}
	fs, err := snapshot.Baseline(ctx, earlier, src, tps)
	if err != nil {
		return audit.NotRunError{Err: fmt.Errorf("compare with the baseline snapshot: %w", err)}
	}
	rep.Findings = append(rep.Findings, fs...)
	return nil
}
