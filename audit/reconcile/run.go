package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
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
	ledgers map[audit.TopicPartition]*ledger.Ledger

	tables map[string]*tableState
	// vanished inputs found so far, in attribution order
	losses []*input
}

// Run audits the app described by p on src.
func Run(ctx context.Context, src audit.Source, p *Pipeline, opts Options) (*audit.Report, error) {
	if opts.Decoder == nil {
		return nil, errors.New("run audit: no decoder")
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
		if c, ok := src.(audit.Clock); ok {
			opts.Now = c.Now()
		}
	}
	if opts.LineageSamples == 0 {
		opts.LineageSamples = 5
	}
	r := &run{src: src, p: p, opts: opts, ledgers: map[audit.TopicPartition]*ledger.Ledger{}, tables: map[string]*tableState{},
		rep: &audit.Report{AppID: p.AppID, GeneratedAt: opts.Now.UTC(), Source: src.Describe(), Findings: []audit.Finding{}}}
	if err := r.discover(ctx); err != nil {
		return nil, err
	}
	for i := range p.Tables {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := r.audit(ctx, &p.Tables[i]); err != nil {
			return nil, err
		}
	}
	for i := range p.Joins {
		if err := r.join(ctx, &p.Joins[i]); err != nil {
			return nil, err
		}
	}
	for _, o := range p.Outputs {
		if parts, ok := r.partitionsOf(o, "output"); ok {
			for _, part := range parts {
				r.walk(ctx, audit.TopicPartition{Topic: o, Partition: part}, "output", func(ledger.Entry) {})
			}
		}
	}
	if p.Keyless {
		r.skipped("no spec: inputs are not decoded or followed across hops; only offsets, transactions, retention gaps, purges before commit and lag are checked (write one with kaudit init)")
	}
	r.lineage()
	r.timeline()
	r.rep.Finish()
	return r.rep, nil
}

func (r *run) missing(format string, args ...any) {
	r.rep.Summary.Missing = append(r.rep.Summary.Missing, fmt.Sprintf(format, args...))
}

func (r *run) skipped(format string, args ...any) {
	r.rep.Summary.Skipped = append(r.rep.Summary.Skipped, fmt.Sprintf(format, args...))
}

func (r *run) note(format string, args ...any) {
	r.rep.Summary.Notes = append(r.rep.Summary.Notes, fmt.Sprintf(format, args...))
}

func (r *run) add(f audit.Finding) { r.rep.Findings = append(r.rep.Findings, f) }

func (r *run) count(hop string, n int64) {
	if r.rep.Summary.Records == nil {
		r.rep.Summary.Records = map[string]int64{}
	}
	r.rep.Summary.Records[hop] += n
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
	return nil
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
func (r *run) partitionsOf(topic, role string) ([]int32, bool) {
	t, ok := r.topics[topic]
	if !ok {
		r.missing("%s topic %q not found", role, topic)
		return nil, false
	}
	var ps []int32
	for p := range t.Partitions {
		if r.opts.Partitions == nil || containsPartition(r.opts.Partitions, p) {
			ps = append(ps, p)
		}
	}
	return ps, true
}

func containsPartition(ps []int32, p int32) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// walk reads one partition through the ledger, adds the ledger's findings
// and the partition's cut, and calls fn for every data record. An
// unreadable partition becomes an unreadable finding and false.
func (r *run) walk(ctx context.Context, tp audit.TopicPartition, role string, fn func(ledger.Entry)) bool {
	info := r.topics[tp.Topic]
	opts := ledger.Options{Compacted: info.Compacted(), MaxTxnTimeout: r.opts.MaxTxnTimeout, Now: r.opts.Now,
		TxnIDs: r.txnIDs, CrossCheck: r.opts.CrossCheck}
	var l *ledger.Ledger
	for e, err := range ledger.Walk(ctx, r.src, tp, opts, &l) {
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			f := audit.NewFinding(audit.StageOffsets, audit.CauseUnreadable, tp, -1)
			f.Count = 0
			f.Detail = fmt.Sprintf("%s partition could not be read: %v", role, err)
			r.add(f)
			return false
		}
		fn(e)
	}
	r.ledgers[tp] = l
	r.rep.Findings = append(r.rep.Findings, l.Findings...)
	c := int64(-1)
	if role == "source" || role == "repartition" {
		c = r.committed(tp)
	}
	r.rep.Cut = append(r.rep.Cut, audit.PartitionCut{Topic: tp.Topic, Partition: tp.Partition, Role: role, Committed: c,
		LogStart: l.Offsets.LogStart, LSO: l.Offsets.LSO, HW: l.Offsets.HW})
	return true
}

// decode decodes a record's key and value; a failure is an undecodable
// finding and false.
func (r *run) decode(ctx context.Context, rec *audit.Record) (k, v audit.Value, ok bool) {
	var err error
	if rec.Key != nil {
		if k, err = r.opts.Decoder.Decode(ctx, rec.Topic, true, rec.Key); err != nil {
			r.undecodable(rec, "key", err)
			return nil, nil, false
		}
	}
	if rec.Value != nil {
		if v, err = r.opts.Decoder.Decode(ctx, rec.Topic, false, rec.Value); err != nil {
			r.undecodable(rec, "value", err)
			return nil, nil, false
		}
	}
	return k, v, true
}

func (r *run) undecodable(rec *audit.Record, what string, err error) {
	if errors.Is(err, codec.ErrRegistryUnavailable) {
		msg := fmt.Sprintf("decoding %s: %v", rec.Topic, err)
		for _, m := range r.rep.Summary.Missing {
			if m == msg {
				return
			}
		}
		r.missing("%s", msg)
		return
	}
	f := audit.NewFinding(audit.StageSource, audit.CauseUndecodable, rec.TP(), rec.Offset)
	f.Timestamp = rec.Timestamp
	f.Detail = fmt.Sprintf("%s: %v", what, err)
	r.add(f)
}

// sortedKeys returns m's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
