// Package txns audits an app's transactions: its transactional ids with
// their coordinator state, the producers the partitions remember on the
// app's topics, and the transactions those partitions hold open. An open
// transaction is hanging (finding hanging-transaction) when it has been
// open longer than the maximum transaction timeout, or when a partition
// holds it open with no matching transaction on the coordinator (KIP-664):
// it holds the partition's LSO, so read_committed consumers stop there.
//
// It reads only through audit.Source, so it runs on a live cluster, a
// capture or broker log dirs (__transaction_state and the producer-state
// snapshots) alike.
package txns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// Options say which app to audit and when a transaction hangs.
type Options struct {
	AppID         string
	MaxTxnTimeout time.Duration
}

// Census is what the audit found: kaudit txns' JSON document.
type Census struct {
	AppID         string              `json:"app_id"`
	GeneratedAt   time.Time           `json:"generated_at"`
	Source        string              `json:"source"`
	MaxTxnTimeout int64               `json:"max_transaction_timeout_ms"`
	Transactions  []audit.Transaction `json:"transactions"`
	Producers     []PartitionProducer `json:"producers"`
	Open          []OpenTransaction   `json:"open_transactions"`
	Findings      []audit.Finding     `json:"findings"`
	Missing       []string            `json:"missing_evidence,omitempty"`
	Notes         []string            `json:"notes,omitempty"`
	Verdict       audit.Verdict       `json:"verdict"`
}

// PartitionProducer is one producer on one partition.
type PartitionProducer struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	audit.Producer
}

// OpenTransaction is a transaction a partition holds open, with what the
// coordinator says of it.
type OpenTransaction struct {
	Topic           string `json:"topic"`
	Partition       int32  `json:"partition"`
	FirstOffset     int64  `json:"first_offset"`
	ProducerID      int64  `json:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch"`
	TransactionalID string `json:"transactional_id,omitempty"`
	State           string `json:"coordinator_state,omitempty"`
	StartTimestamp  int64  `json:"start_timestamp"` // coordinator's start, else the producer's last write; -1 unknown
	OpenMillis      int64  `json:"open_ms"`         // -1 unknown
	Hanging         bool   `json:"hanging"`
	Reason          string `json:"reason,omitempty"`
}

// missingf records evidence that could not be read: the run is then
// incomplete unless something worse is found. An interrupted run stops.
func (c *Census) missingf(ctx context.Context, err error, format string, args ...any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	c.Missing = append(c.Missing, fmt.Sprintf(format, args...)+": "+err.Error())
	return nil
}

// Audit reads the app's transactions and producers through src, at the
// time the source describes.
func Audit(ctx context.Context, src audit.Source, o Options) (*Census, error) {
	now, _ := audit.SourceClock(src)
	prefix := o.AppID + "-"
	c := &Census{AppID: o.AppID, GeneratedAt: now.UTC(), Source: src.Describe(), MaxTxnTimeout: o.MaxTxnTimeout.Milliseconds(),
		Transactions: []audit.Transaction{}, Producers: []PartitionProducer{}, Open: []OpenTransaction{}, Findings: []audit.Finding{}}

	txns, err := src.Transactions(ctx, prefix)
	if err != nil {
		if err := c.missingf(ctx, err, "transactional ids %s*", prefix); err != nil {
			return nil, err
		}
	}
	c.Transactions = append(c.Transactions, txns...)

	tps, err := c.appPartitions(ctx, o.AppID, src)
	if err != nil {
		return nil, err
	}
	// The partitions the app's transactions hold (output topics too).
	for _, t := range txns {
		for _, tp := range t.Partitions {
			if !slices.Contains(tps, tp) {
				tps = append(tps, tp)
			}
		}
	}
	slices.SortFunc(tps, audit.CompareTopicPartitions)
	producers := map[audit.TopicPartition][]audit.Producer{}
	if len(tps) > 0 {
		producers, err = src.Producers(ctx, tps)
		if err != nil {
			if err := c.missingf(ctx, err, "producers of %d partitions", len(tps)); err != nil {
				return nil, err
			}
			producers = map[audit.TopicPartition][]audit.Producer{}
		}
	}

	byPID := map[int64]audit.Transaction{}
	for _, t := range txns {
		byPID[t.ProducerID] = t
	}
	// Open transactions of producers the app's ids do not explain: look them
	// up among every transactional id, listed after the producers so that a
	// transaction begun meanwhile is found.
	if unexplained(tps, producers, byPID) {
		all, err := src.Transactions(ctx, "")
		if err != nil {
			if err := c.missingf(ctx, err, "all transactional ids"); err != nil {
				return nil, err
			}
		}
		for _, t := range all {
			if _, ok := byPID[t.ProducerID]; !ok {
				byPID[t.ProducerID] = t
			}
		}
	}

	reported := map[producerOn]bool{} // partitions and producers with a finding
	for _, tp := range tps {
		for _, p := range producers[tp] {
			c.Producers = append(c.Producers, PartitionProducer{Topic: tp.Topic, Partition: tp.Partition, Producer: p})
			if p.CurrentTxnStartOffset < 0 {
				continue
			}
			t, known := byPID[p.ProducerID]
			ot := judgeOpen(tp, p, t, known, now, o.MaxTxnTimeout)
			c.Open = append(c.Open, ot)
			if ot.Hanging {
				f := audit.NewFinding(audit.StageTransactions, audit.CauseHangingTransaction, tp, ot.FirstOffset)
				f.Timestamp, f.TransactionalID = ot.StartTimestamp, ot.TransactionalID
				f.ProducerID, f.ProducerEpoch = p.ProducerID, p.ProducerEpoch
				f.Detail = fmt.Sprintf("%s; open on %s since offset %d, holding its last stable offset there", ot.Reason, tp, ot.FirstOffset)
				c.Findings = append(c.Findings, f)
				reported[producerOn{tp, p.ProducerID}] = true
			}
		}
	}
	c.Findings = append(c.Findings, overdue(txns, reported, now, o.MaxTxnTimeout)...)
	audit.SortFindings(c.Findings)
	c.Verdict = audit.Judge(c.Findings, c.Missing)
	return c, nil
}

// producerOn is a producer on a partition.
type producerOn struct {
	tp  audit.TopicPartition
	pid int64
}

// judgeOpen judges the transaction producer p holds open on tp against
// the coordinator's transaction t of the same producer id (known false
// when the coordinator has none).
func judgeOpen(tp audit.TopicPartition, p audit.Producer, t audit.Transaction, known bool, now time.Time, timeout time.Duration) OpenTransaction {
	ot := OpenTransaction{Topic: tp.Topic, Partition: tp.Partition, FirstOffset: p.CurrentTxnStartOffset,
		ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, StartTimestamp: -1, OpenMillis: -1}
	if known {
		ot.TransactionalID, ot.State = t.TransactionalID, t.State
	}
	switch {
	case !known:
		ot.Hanging, ot.Reason = true, "no transaction of this producer id on the coordinator (KIP-664)"
	case !isOpenState(t.State):
		ot.Hanging, ot.Reason = true, fmt.Sprintf("the coordinator's transaction is %s (KIP-664)", t.State)
	case t.ProducerEpoch != p.ProducerEpoch && !(isPrepareState(t.State) && t.ProducerEpoch == p.ProducerEpoch+1):
		ot.Hanging, ot.Reason = true, fmt.Sprintf("the coordinator is at producer epoch %d, the partition's transaction at %d (KIP-664)", t.ProducerEpoch, p.ProducerEpoch)
	case len(t.Partitions) > 0 && !slices.Contains(t.Partitions, tp):
		ot.Hanging, ot.Reason = true, "the coordinator's open transaction does not include this partition (KIP-664)"
	}
	// the coordinator's start only: the producer state's last timestamp
	// is its last record's, an event time a Streams app copies from its
	// inputs (a backfill's may be hours old in a transaction begun now)
	if known && t.StartTimestamp > 0 {
		ot.StartTimestamp = t.StartTimestamp
	}
	if ot.StartTimestamp > 0 {
		ot.OpenMillis = max(now.UnixMilli()-ot.StartTimestamp, 0)
	}
	if !ot.Hanging && ot.OpenMillis > timeout.Milliseconds() {
		ot.Hanging = true
		ot.Reason = fmt.Sprintf("open for %s, longer than --max-transaction-timeout %s", RoundMillis(ot.OpenMillis), timeout)
	}
	return ot
}

// overdue finds the app's transactions open too long where no partition
// said so (producer state unreadable or already gone).
func overdue(txns []audit.Transaction, reported map[producerOn]bool, now time.Time, timeout time.Duration) []audit.Finding {
	var out []audit.Finding
	for _, t := range txns {
		if t.State != "Ongoing" || t.StartTimestamp <= 0 {
			continue
		}
		open := max(now.UnixMilli()-t.StartTimestamp, 0)
		if open <= timeout.Milliseconds() {
			continue
		}
		parts := t.Partitions
		if len(parts) == 0 {
			parts = []audit.TopicPartition{{Partition: -1}}
		}
		for _, tp := range parts {
			if reported[producerOn{tp, t.ProducerID}] {
				continue
			}
			f := audit.NewFinding(audit.StageTransactions, audit.CauseHangingTransaction, tp, -1)
			f.Partition = tp.Partition
			f.Timestamp, f.TransactionalID, f.ProducerID, f.ProducerEpoch = t.StartTimestamp, t.TransactionalID, t.ProducerID, t.ProducerEpoch
			f.Detail = fmt.Sprintf("the coordinator's transaction has been open for %s, longer than --max-transaction-timeout %s", RoundMillis(open), timeout)
			out = append(out, f)
		}
	}
	return out
}

// unexplained reports whether some partition holds a transaction open for a
// producer id none of the known transactional ids uses.
func unexplained(tps []audit.TopicPartition, producers map[audit.TopicPartition][]audit.Producer, byPID map[int64]audit.Transaction) bool {
	for _, tp := range tps {
		for _, p := range producers[tp] {
			if _, ok := byPID[p.ProducerID]; p.CurrentTxnStartOffset >= 0 && !ok {
				return true
			}
		}
	}
	return false
}

func isOpenState(s string) bool { return s == "Ongoing" || isPrepareState(s) }

func isPrepareState(s string) bool { return s == "PrepareCommit" || s == "PrepareAbort" }

// RoundMillis is ms as a duration rounded to the second.
func RoundMillis(ms int64) time.Duration {
	return (time.Duration(ms) * time.Millisecond).Round(time.Second)
}

// appPartitions lists the partitions of the app's topics: those named
// <app>-… and those the group has committed offsets for.
func (c *Census) appPartitions(ctx context.Context, app string, src audit.Source) ([]audit.TopicPartition, error) {
	counts := map[string]int32{}
	infos, err := src.Topics(ctx)
	if err != nil {
		if err := c.missingf(ctx, err, "topics"); err != nil {
			return nil, err
		}
	}
	for _, ti := range infos {
		if strings.HasPrefix(ti.Name, app+"-") {
			counts[ti.Name] = ti.Partitions
		}
	}
	g, err := src.GroupOffsets(ctx, app)
	switch {
	case errors.Is(err, audit.ErrGroupNotFound):
		c.Notes = append(c.Notes, fmt.Sprintf("group %q not found: only topics named %s-… are read", app, app))
	case err != nil:
		if err := c.missingf(ctx, err, "offsets of group %q", app); err != nil {
			return nil, err
		}
	}
	for tp := range g.Offsets {
		if _, ok := counts[tp.Topic]; ok {
			continue
		}
		n, err := src.Partitions(ctx, tp.Topic)
		if err != nil {
			if err := c.missingf(ctx, err, "partitions of %q", tp.Topic); err != nil {
				return nil, err
			}
			continue
		}
		counts[tp.Topic] = n
	}
	var tps []audit.TopicPartition
	for topic, n := range counts {
		for p := range n {
			tps = append(tps, audit.TopicPartition{Topic: topic, Partition: p})
		}
	}
	return tps, nil
}
