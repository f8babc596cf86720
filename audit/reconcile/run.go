package reconcile

// Run and its phases: discovery, the tables at once, the joins, the report.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/ledger"
)

// Options tune a run.
type Options struct {
	// Now is the time the evidence describes; zero means time.Now, or the
	// source's clock when it has one.
	Now time.Time
	// MaxTxnTimeout: an open transaction older than this is hanging.
	MaxTxnTimeout time.Duration
	// Decoder decodes keys and values; required.
	Decoder audit.Decoder
	// CrossCheck compares each partition's derived read_committed view with
	// the broker's (live sources only); it reads every partition twice.
	CrossCheck bool
	// Since and Until limit which source records are judged (by record
	// timestamp); earlier inputs still fold into state.
	Since, Until time.Time
	// LineageSamples is how many vanished inputs get a full lineage (0: 5).
	LineageSamples int
	// Partitions limits the audit to these task partitions (a shard of
	// co-partitioned tasks); nil means all.
	Partitions []int32
	// Exchange, for a shard (Partitions), has the shards of one run hand
	// each other the inputs of re-keyed tables instead of each reading
	// every source partition (exchange.go); nil: each reads them all.
	Exchange *Exchange
	// Concurrency is how many partitions are read and decoded at once,
	// ahead of the audit; 0 reads one partition at a time in the audit's
	// own goroutine. The report does not depend on it.
	Concurrency int
	// Progress, if set, is told how many records each role will read and
	// has read.
	Progress audit.Progress
	// MemoryBudget bounds, in bytes, the per-record state a table keeps in
	// memory while it is checked. A table keeps what it reads in buckets of
	// keys, checked a bucket at a time (spill.go); a table whose buckets
	// would need more spills them to files under SpillDir ("": the
	// system's temporary directory). 0: no bound. The report does not
	// depend on it.
	MemoryBudget int64
	SpillDir     string
	// Log, if set, is told what the audit does that is not evidence (a
	// table spilled to disk).
	Log func(msg string)
	// Ready, if set, is waited for before the first judgement (a table's
	// check, a join, a copy): until it returns, the pipeline's Unjudged
	// fields may still change (the spec check runs beside the reads). It
	// returns the same every time; its error ends the run.
	Ready func() error
	// oneMap checks each table's keys in one map as they are read, not in
	// buckets (the check the buckets must agree with, for tests).
	oneMap bool
	// History, if set, is the group's commit history and the logs'
	// events (audit/history): a source partition's skips it proves past a
	// restart (retention-gap, offsets-forward) are findings, and what it
	// cannot settle is missing evidence; a repartition partition's, where
	// the table is not judged by key (its store check finds those inputs
	// otherwise).
	History *history.Evidence
}

// run holds one audit's state.
type run struct {
	src  audit.Source
	p    *Pipeline
	opts Options
	rep  *audit.Report

	topics  map[string]audit.TopicInfo
	group   audit.GroupOffsets
	haveCut bool
	txnIDs  map[int64]string
	// moved counts the repartition partitions whose committed offset moved
	// while the audit read (recut)
	moved int
	// txnStarts: producer id → its open transaction's start, by its
	// coordinator (ledger.Options.TxnStarts)
	txnStarts map[int64]int64
	ledgers   map[audit.TopicPartition]*ledger.Ledger

	tables map[string]*tableState
	// produced counts consumed inputs per minute, for the timeline
	produced map[int64]int64
	// vanished inputs found so far, in attribution order
	losses []*input
	// counts holds the records counted per hop (count)
	counts map[string]*int64
	// found holds the run's findings; later phases amend them through
	// these pointers (the store's actual value, the join's end-to-end
	// detail), and Run puts them in the report once, at the end
	found []*audit.Finding
	// once, in a table's run (fork), holds the missing-evidence messages
	// said once per run (decoded), which merge drops when said before
	once map[string]bool
	// skips holds the ranges the commit history proves each source
	// partition's committed offset moved past unconsumed (judgeHistory),
	// shared read-only with the tables' runs
	skips map[audit.TopicPartition][]history.Skip
	// unknown holds the ranges the commit history cannot tell consumed or
	// skipped (its missing evidence), shared read-only as skips is
	unknown map[audit.TopicPartition][]history.Gap
	// heldPurges holds, per table judged by key, the purges before commit
	// the commit history proves on its repartition topic; the key
	// judgement names their inputs, and a range whose inputs it names
	// none of (their effects overwritten since) is reported keyless
	// (namePurgesUnseen)
	heldPurges map[string][]audit.Finding
	// purgeNamed holds the repartition partitions of stream joins whose
	// purged copies' inputs the join named (namePurgesUnseen)
	purgeNamed map[audit.TopicPartition]bool
	// sjShared holds the source partitions (with the repartition topic
	// they cross) whose null keys and filtered records a stream join
	// already reported: another join of the same stream says them once
	sjShared map[string]bool
}

// Run audits the app described by p on src.
func Run(ctx context.Context, src audit.Source, p *Pipeline, opts Options) (*audit.Report, error) {
	if opts.Decoder == nil {
		return nil, errors.New("run audit: no decoder")
	}
	if opts.Now.IsZero() {
		opts.Now, _ = audit.SourceClock(src)
	}
	if opts.LineageSamples == 0 {
		opts.LineageSamples = 5
	}
	if opts.Progress != nil {
		opts.Progress = &lockedProgress{p: opts.Progress} // the tables are audited at once (auditTables)
	}
	if opts.Log != nil {
		var mu sync.Mutex
		log := opts.Log
		opts.Log = func(msg string) { mu.Lock(); defer mu.Unlock(); log(msg) }
	}
	r := &run{src: src, p: p, opts: opts, ledgers: map[audit.TopicPartition]*ledger.Ledger{}, tables: map[string]*tableState{}, produced: map[int64]int64{},
		rep: &audit.Report{AppID: p.AppID, GeneratedAt: opts.Now.UTC(), Source: src.Describe(), Findings: []audit.Finding{}}}
	if err := r.discover(ctx); err != nil {
		return nil, err
	}
	r.expect(ctx)
	r.judgeHistory(ctx)
	if err := phaseErr(ctx, "tables", func() error { return r.auditTables(ctx) }); err != nil {
		return nil, err
	}
	if err := r.ready(); err != nil {
		return nil, err
	}
	for i := range p.Joins {
		if err := phaseErr(ctx, "join "+p.Joins[i].Output, func() error { return r.join(ctx, &p.Joins[i]) }); err != nil {
			return nil, err
		}
	}
	for i := range p.StreamJoins {
		if err := phaseErr(ctx, p.StreamJoins[i].Name, func() error { r.checkStreamJoin(ctx, &p.StreamJoins[i]); return ctx.Err() }); err != nil {
			return nil, err
		}
	}
	for i := range p.Copies {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r.checkCopy(ctx, &p.Copies[i])
	}
	for _, o := range p.Outputs {
		if parts, ok := r.partitionsOf(ctx, o, "output"); ok {
			r.walkAll(ctx, tpsOf(o, parts), "output", func(*item) {})
		}
	}
	r.namePurgesUnseen()
	r.unreadCommitted(ctx)
	r.flushCounts()
	if r.moved > 0 {
		r.note("the group's committed offsets moved on %d partitions of the tables' topics while the audit read them: the app was processing; a copy or a source record in flight at the cut and below the offsets read after its store's changelog is judged applied or not", r.moved)
	}
	if p.Keyless {
		r.skipped("no spec: inputs are not decoded or followed across hops; only offsets, transactions, retention gaps, purges before commit and lag are checked (write one with kaudit init)")
	}
	r.report()
	r.lineage(ctx)
	r.timeline()
	r.signatures()
	r.rep.Finish()
	return r.rep, nil
}

func (r *run) missing(format string, args ...any) {
	r.rep.Summary.Missing = append(r.rep.Summary.Missing, fmt.Sprintf(format, args...))
}

func (r *run) skipped(format string, args ...any) {
	// a check that did not run is evidence missing: never clean
	r.missing(format, args...)
}

func (r *run) note(format string, args ...any) {
	r.rep.Summary.Notes = append(r.rep.Summary.Notes, fmt.Sprintf(format, args...))
}

// add records a finding and returns it, for the phases that amend it.
func (r *run) add(f audit.Finding) *audit.Finding {
	p := &f
	r.found = append(r.found, p)
	return p
}

// report puts the run's findings in the report.
func (r *run) report() {
	r.rep.Findings = make([]audit.Finding, 0, len(r.found))
	for _, f := range r.found {
		r.rep.Findings = append(r.rep.Findings, *f)
	}
	r.found = nil
}

func (r *run) count(hop string, n int64) {
	*r.counter(hop) += n
}

// counter returns the count of hop's records, for the walks that count
// every record: Run adds them to the report's at the end (flushCounts).
func (r *run) counter(hop string) *int64 {
	p := r.counts[hop]
	if p == nil {
		if r.counts == nil {
			r.counts = map[string]*int64{}
		}
		p = new(int64)
		r.counts[hop] = p
	}
	return p
}

// flushCounts puts the counted records in the report: the hops that
// counted some.
func (r *run) flushCounts() {
	for hop, p := range r.counts {
		if *p == 0 {
			continue
		}
		if r.rep.Summary.Records == nil {
			r.rep.Summary.Records = map[string]int64{}
		}
		r.rep.Summary.Records[hop] += *p
	}
	r.counts = nil
}

// discover reads the topics, the group's cut and the transactional ids.
func (r *run) discover(ctx context.Context) error {
	infos, err := r.src.Topics(ctx)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	r.topics = map[string]audit.TopicInfo{}
	for _, t := range infos {
		r.topics[t.Name] = t
	}
	g, err := r.src.GroupOffsets(ctx, r.p.AppID)
	switch {
	case err == nil:
		r.group, r.haveCut = g, true
		if len(g.Offsets) == 0 && !r.p.Keyless {
			// the group exists and has committed nothing (expired, deleted
			// offsets): every record would look pending
			r.missing("consumer group %q has no committed offsets: there is no committed cut, so nothing can be judged consumed", r.p.AppID)
		}
	case errors.Is(err, audit.ErrGroupNotFound):
		r.missing("consumer group %q not found: there is no committed cut, so nothing can be judged consumed", r.p.AppID)
	default:
		r.missing("committed offsets of group %q: %v", r.p.AppID, err)
	}
	r.txnIDs = map[int64]string{}
	txns, err := r.src.Transactions(ctx, r.p.AppID+"-")
	if err != nil && !errors.Is(err, audit.ErrNotSupported) {
		r.note("transactional ids could not be listed (%v): findings name producer ids only", err)
	}
	for _, t := range txns {
		r.txnIDs[t.ProducerID] = t.TransactionalID
	}
	r.txnStarts = ledger.StartsOf(txns)
	return nil
}

// expect tells Options.Progress how many records each role will read:
// the offsets between each partition's log start and high watermark.
func (r *run) expect(ctx context.Context) {
	if r.opts.Progress == nil {
		return
	}
	seen := map[string]bool{}
	add := func(topic, role string) {
		t, ok := r.topics[topic]
		if topic == "" || !ok || seen[topic] {
			return
		}
		seen[topic] = true
		for p := range t.Partitions {
			if r.opts.Partitions != nil && !containsPartition(r.opts.Partitions, p) {
				continue
			}
			if o, err := r.src.Offsets(ctx, audit.TopicPartition{Topic: topic, Partition: p}); err == nil {
				r.opts.Progress.Expect(role, o.HW-o.LogStart)
			}
		}
	}
	for _, t := range r.p.Tables {
		add(t.Source, "source")
		for _, m := range t.Merged {
			add(m, "source")
		}
		add(t.Repartition, "repartition")
		add(t.Changelog, "changelog")
	}
	for _, j := range r.p.Joins {
		add(j.Output, "output")
	}
	for _, j := range r.p.StreamJoins {
		for _, s := range j.Sources {
			add(s, "source")
		}
		add(j.Repartition, "repartition")
		add(j.Output, "output")
	}
	for _, o := range r.p.Outputs {
		add(o, "output")
	}
}

// committed returns the group's committed offset for tp, or -1.
func (r *run) committed(tp audit.TopicPartition) int64 {
	if o, ok := r.group.Offsets[tp]; ok {
		return o
	}
	return -1
}

// partitionsOf returns the partitions of topic to audit, or false (and a
// missing-evidence entry) when the topic does not exist.
func (r *run) partitionsOf(ctx context.Context, topic, role string) ([]int32, bool) {
	t, ok := r.topics[topic]
	if !ok {
		// a topic the listing leaves out may still exist: hidden from the
		// listing (an ACL), or its metadata failed; asked directly, the
		// source says which
		n, err := r.src.Partitions(ctx, topic)
		switch {
		case err == nil && n > 0:
			t = audit.TopicInfo{Name: topic, Partitions: n}
			r.topics[topic] = t
			return r.shardPartitions(n), true
		case errors.Is(err, audit.ErrUnreadable):
			r.missing("%s topic %q could not be read: %v", role, topic, err)
		default:
			r.missing("%s topic %q not found", role, topic)
		}
		return nil, false
	}
	return r.shardPartitions(t.Partitions), true
}

// allPartitions is every partition of a topic of n.
func allPartitions(n int32) []int32 {
	ps := make([]int32, n)
	for p := range n {
		ps[p] = p
	}
	return ps
}

// shardPartitions returns the partitions of a topic of n that the audit
// covers: all, or the shard's (--partitions).
func (r *run) shardPartitions(n int32) []int32 {
	var ps []int32
	for p := range n {
		if r.opts.Partitions == nil || containsPartition(r.opts.Partitions, p) {
			ps = append(ps, p)
		}
	}
	return ps
}

// tpsOf names the partitions parts of topic.
func tpsOf(topic string, parts []int32) []audit.TopicPartition {
	out := make([]audit.TopicPartition, len(parts))
	for i, p := range parts {
		out[i] = audit.TopicPartition{Topic: topic, Partition: p}
	}
	return out
}

func containsPartition(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// auditTables audits the tables, each in a run of its own (fork) merged
// into r in the spec's order, so the report is the one a table-by-table
// audit gives. With Options.Concurrency, up to twice GOMAXPROCS tables
// are audited at once (a table's state changes run in one goroutine, so
// a second table uses a second core, and no table is left to run alone on
// one core at the end), while what they keep in memory together fits
// twice the budget one table has (Options.MemoryBudget): each its store's
// keys and states, and its buckets in memory, or one bucket's maps of a
// table that spills to disk, in buckets of its share of the budget.
func (r *run) auditTables(ctx context.Context) error {
	tables := r.p.Tables
	par := min(runtime.GOMAXPROCS(0), len(tables))
	if !r.opts.oneMap {
		par = min(len(tables), 2*runtime.GOMAXPROCS(0))
	}
	if r.opts.Concurrency <= 0 || par <= 1 {
		for i := range tables {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := r.audit(ctx, &tables[i]); err != nil {
				return err
			}
		}
		return nil
	}
	budget := r.opts.MemoryBudget
	limit := 2 * budget
	var records, store []int64 // each table's source and repartition records, and its store's state
	if budget > 0 && !r.p.Keyless {
		for i := range tables {
			records = append(records, r.stateRecords(ctx, &tables[i]))
			store = append(store, r.storeRecords(ctx, &tables[i])*bytesPerStoreRecord)
		}
	}
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		running int
		used    int64
		wg      sync.WaitGroup
	)
	subs := make([]*run, len(tables))
	errs := make([]error, len(tables))
	for i := range tables {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			break
		}
		// w: what its audit keeps in memory. A table over the budget spills
		// anyway: in buckets of a par-th of it, so that it runs beside others
		var w int64
		sub := r.fork()
		if records != nil {
			if _, disk := r.bucketPlan(&tables[i], records[i]); disk && tables[i].Window == nil {
				sub.opts.MemoryBudget = budget / int64(par)
			}
			w = min(sub.memoryOf(&tables[i], records[i]), budget) + store[i]
		}
		mu.Lock()
		for running > 0 && (running >= par || used+w > limit && budget > 0) {
			cond.Wait()
		}
		running++
		used += w
		mu.Unlock()
		subs[i] = sub
		wg.Go(func() {
			errs[i] = subs[i].audit(ctx, &tables[i])
			mu.Lock()
			running--
			used -= w
			cond.Broadcast()
			mu.Unlock()
		})
	}
	wg.Wait()
	for i, sub := range subs {
		if errs[i] != nil {
			return errs[i]
		}
		if sub != nil {
			r.merge(sub)
		}
	}
	return nil
}

// ready waits for Options.Ready.
func (r *run) ready() error {
	if r.opts.Ready == nil {
		return nil
	}
	return r.opts.Ready()
}

// fork is a run for one table's audit: r's evidence and options, and
// state of its own, merged back into r by merge.
func (r *run) fork() *run {
	return &run{src: r.src, p: r.p, opts: r.opts, rep: &audit.Report{}, topics: r.topics, group: r.group, haveCut: r.haveCut,
		txnIDs: r.txnIDs, txnStarts: r.txnStarts, ledgers: map[audit.TopicPartition]*ledger.Ledger{}, tables: map[string]*tableState{},
		produced: map[int64]int64{}, once: map[string]bool{}, skips: r.skips, unknown: r.unknown}
}

// merge adds what a table's run (fork) found to r, as if r had audited
// the table itself after what it holds.
func (r *run) merge(sub *run) {
	s := &sub.rep.Summary
	for _, m := range s.Missing {
		if sub.once[m] && slices.Contains(r.rep.Summary.Missing, m) {
			continue
		}
		r.rep.Summary.Missing = append(r.rep.Summary.Missing, m)
	}
	r.rep.Summary.Skipped = append(r.rep.Summary.Skipped, s.Skipped...)
	r.rep.Summary.Notes = append(r.rep.Summary.Notes, s.Notes...)
	r.rep.Summary.Undecided += s.Undecided
	r.rep.Cut = append(r.rep.Cut, sub.rep.Cut...)
	maps.Copy(r.ledgers, sub.ledgers)
	maps.Copy(r.tables, sub.tables)
	for m, n := range sub.produced {
		r.produced[m] += n
	}
	r.losses = append(r.losses, sub.losses...)
	for hop, p := range sub.counts {
		*r.counter(hop) += *p
	}
	r.found = append(r.found, sub.found...)
}

// lockedProgress serializes the calls of the tables' runs.
type lockedProgress struct {
	mu sync.Mutex
	p  audit.Progress
}

func (l *lockedProgress) Expect(role string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Expect(role, n)
}

func (l *lockedProgress) Read(role string, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.p.Read(role, n)
}

// unreadCommitted runs the checks that need no key on every topic the
// group commits offsets on that no table, join or copy read: the stream of
// a join kaudit does not model (KStream-KStream, KStream-GlobalKTable), a
// session window's source, a repartition topic of such a node. Its records
// deleted past the group's committed offset are a loss whatever reads
// them: a source's a retention gap, a repartition topic's records purged
// before the app applied them; its lag is pending.
func (r *run) unreadCommitted(ctx context.Context) {
	topics := map[string]bool{}
	for tp := range r.group.Offsets {
		if r.ledgers[tp] == nil && tp.Topic != "" {
			topics[tp.Topic] = true
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(topics)) {
		if ctx.Err() != nil {
			return
		}
		if _, listed := r.topics[topic]; !listed {
			if n, err := r.src.Partitions(ctx, topic); err == nil && n == 0 || errors.Is(err, audit.ErrTopicNotFound) {
				// an earlier topology's input, or a topic deleted since
				r.note("the group has committed offsets on topic %s, which the evidence does not hold (deleted, an input of an earlier version of the app, or not captured): its offsets are not checked", topic)
				continue
			}
		}
		if !r.internal(topic) {
			r.sourceOffsetsOnly(ctx, topic)
			continue
		}
		parts, ok := r.partitionsOf(ctx, topic, "repartition")
		if !ok {
			continue
		}
		tps := tpsOf(topic, parts)
		if slices.ContainsFunc(tps, func(tp audit.TopicPartition) bool { return r.ledgers[tp] != nil }) {
			continue // a table read it
		}
		r.walkAll(ctx, tps, "repartition", func(*item) {})
		for _, tp := range tps {
			l, c := r.ledgers[tp], r.committed(tp)
			if l == nil {
				continue
			}
			logStart := r.clusterLogStart(tp, l.Offsets.LogStart)
			if c < 0 || logStart <= c || slices.ContainsFunc(r.skips[tp], func(s history.Skip) bool { return s.From <= c && logStart <= s.To }) {
				continue
			}
			f := audit.NewFinding(audit.StageRepartition, audit.CausePurgedBeforeCommit, tp, c)
			f.Count = logStart - c
			f.Detail = fmt.Sprintf("the log-start offset %d is above the group's committed offset %d (the KAFKA-17635 signature): offsets %d-%d of this repartition topic, which no table of the spec reads, were deleted before the app applied them; the inputs they held cannot be named", logStart, c, c, logStart-1)
			r.add(f)
		}
	}
}

// internal reports whether topic is one of the app's repartition topics
// (<app id>-…-repartition).
func (r *run) internal(topic string) bool {
	return r.p.AppID != "" && strings.HasPrefix(topic, r.p.AppID+"-") && strings.HasSuffix(topic, "-repartition")
}
