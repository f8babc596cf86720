package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
)

// txnsOptions are kaudit txns' flags.
type txnsOptions struct {
	AppID         string
	MaxTxnTimeout time.Duration
	Format        string // table or json
}

func txnsCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "app-id", Usage: "the Streams application.id `ID`", EnvVars: env("app-id")},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table or json", EnvVars: env("format")},
	}
	flags = append(flags, txnFlags()...)
	return &cli.Command{
		Name:      "txns",
		Usage:     "transactions, producers and hanging transactions",
		UsageText: "kaudit txns --app-id ID --bootstrap-server HOST:PORT [--max-transaction-timeout 15m] [--format table|json]",
		Description: "Lists the app's transactional ids (<app>-…) with their coordinator state, the producers\n" +
			"the partition leaders remember on the app's topics (<app>-… and the group's committed topics),\n" +
			"and the open transactions. A transaction is hanging (finding hanging-transaction) when it has\n" +
			"been open longer than --max-transaction-timeout, or when a partition holds it open with no\n" +
			"matching transaction on the coordinator (KIP-664): it holds the partition's LSO, so\n" +
			"read_committed consumers, and the app, stop there.\n\n" + exitStatusHelp,
		Flags: append(flags, sourceFlags()...),
		Action: func(c *cli.Context) error {
			o := txnsOptions{AppID: c.String("app-id"), MaxTxnTimeout: c.Duration("max-transaction-timeout"), Format: c.String("format")}
			if o.AppID == "" {
				return usagef("kaudit txns: --app-id is required")
			}
			if o.Format != "table" && o.Format != "json" {
				return usagef("kaudit txns: --format %q: want table or json", o.Format)
			}
			if o.MaxTxnTimeout <= 0 {
				return usagef("kaudit txns: --max-transaction-timeout must be positive")
			}
			src, err := openCliSource(c)
			if err != nil {
				return err
			}
			defer src.close()
			return runTxns(c.Context, o, src.Source, c.App.Writer) // the source itself: a snapshot or log dirs is its own clock
		},
	}
}

// txnsDoc is kaudit txns' JSON document.
type txnsDoc struct {
	AppID         string              `json:"app_id"`
	GeneratedAt   time.Time           `json:"generated_at"`
	Source        string              `json:"source"`
	MaxTxnTimeout int64               `json:"max_transaction_timeout_ms"`
	Transactions  []audit.Transaction `json:"transactions"`
	Producers     []partitionProducer `json:"producers"`
	Open          []openTxn           `json:"open_transactions"`
	Findings      []audit.Finding     `json:"findings"`
	Missing       []string            `json:"missing_evidence,omitempty"`
	Notes         []string            `json:"notes,omitempty"`
	Verdict       audit.Verdict       `json:"verdict"`
}

// partitionProducer is one producer on one partition.
type partitionProducer struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	audit.Producer
}

// openTxn is a transaction a partition holds open, with what the
// coordinator says of it.
type openTxn struct {
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

// runTxns reads transactions and producers through src and renders them.
// It uses only the audit.Source interface, so it runs on any source.
func runTxns(ctx context.Context, o txnsOptions, src audit.Source, w io.Writer) error {
	doc, err := auditTxns(ctx, o, src)
	if err != nil {
		return err
	}
	switch o.Format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	default:
		if err := renderTxnsTable(w, doc); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return verdictResult(doc.Verdict)
}

// missingf records evidence that could not be read: the run is then
// incomplete unless something worse is found. An interrupted run stops.
func missingf(ctx context.Context, doc *txnsDoc, err error, format string, args ...any) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	doc.Missing = append(doc.Missing, fmt.Sprintf(format, args...)+": "+err.Error())
	return nil
}

func auditTxns(ctx context.Context, o txnsOptions, src audit.Source) (*txnsDoc, error) {
	now := time.Now()
	if c, ok := src.(audit.Clock); ok {
		now = c.Now()
	}
	prefix := o.AppID + "-"
	doc := &txnsDoc{AppID: o.AppID, GeneratedAt: now.UTC(), Source: src.Describe(), MaxTxnTimeout: o.MaxTxnTimeout.Milliseconds(),
		Transactions: []audit.Transaction{}, Producers: []partitionProducer{}, Open: []openTxn{}, Findings: []audit.Finding{}}

	txns, err := src.Transactions(ctx, prefix)
	if err != nil {
		if err := missingf(ctx, doc, err, "transactional ids %s*", prefix); err != nil {
			return nil, err
		}
	}
	doc.Transactions = append(doc.Transactions, txns...)

	tps, err := appPartitions(ctx, o.AppID, src, doc)
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
	slices.SortFunc(tps, compareTP)
	producers := map[audit.TopicPartition][]audit.Producer{}
	if len(tps) > 0 {
		producers, err = src.Producers(ctx, tps)
		if err != nil {
			if err := missingf(ctx, doc, err, "producers of %d partitions", len(tps)); err != nil {
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
			if err := missingf(ctx, doc, err, "all transactional ids"); err != nil {
				return nil, err
			}
		}
		for _, t := range all {
			if _, ok := byPID[t.ProducerID]; !ok {
				byPID[t.ProducerID] = t
			}
		}
	}

	type tpPID struct {
		tp  audit.TopicPartition
		pid int64
	}
	reported := map[tpPID]bool{} // partitions and producers with a finding
	for _, tp := range tps {
		for _, p := range producers[tp] {
			doc.Producers = append(doc.Producers, partitionProducer{Topic: tp.Topic, Partition: tp.Partition, Producer: p})
			if p.CurrentTxnStartOffset < 0 {
				continue
			}
			ot := openTxn{Topic: tp.Topic, Partition: tp.Partition, FirstOffset: p.CurrentTxnStartOffset,
				ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch, StartTimestamp: -1, OpenMillis: -1}
			t, known := byPID[p.ProducerID]
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
			switch {
			case known && t.StartTimestamp > 0:
				ot.StartTimestamp = t.StartTimestamp
			case p.LastTimestamp > 0:
				ot.StartTimestamp = p.LastTimestamp
			}
			if ot.StartTimestamp > 0 {
				ot.OpenMillis = max(now.UnixMilli()-ot.StartTimestamp, 0)
			}
			if !ot.Hanging && ot.OpenMillis > o.MaxTxnTimeout.Milliseconds() {
				ot.Hanging = true
				ot.Reason = fmt.Sprintf("open for %s, longer than --max-transaction-timeout %s", roundDur(ot.OpenMillis), o.MaxTxnTimeout)
			}
			doc.Open = append(doc.Open, ot)
			if ot.Hanging {
				f := audit.NewFinding(audit.StageTransactions, audit.CauseHangingTransaction, tp, ot.FirstOffset)
				f.Timestamp, f.TransactionalID = ot.StartTimestamp, ot.TransactionalID
				f.ProducerID, f.ProducerEpoch = p.ProducerID, p.ProducerEpoch
				f.Detail = fmt.Sprintf("%s; open on %s since offset %d, holding its last stable offset there", ot.Reason, tp, ot.FirstOffset)
				doc.Findings = append(doc.Findings, f)
				reported[tpPID{tp, p.ProducerID}] = true
			}
		}
	}

	// The app's transactions open too long where no partition said so
	// above (producer state unreadable or already gone).
	for _, t := range txns {
		if t.State != "Ongoing" || t.StartTimestamp <= 0 {
			continue
		}
		open := max(now.UnixMilli()-t.StartTimestamp, 0)
		if open <= o.MaxTxnTimeout.Milliseconds() {
			continue
		}
		parts := t.Partitions
		if len(parts) == 0 {
			parts = []audit.TopicPartition{{Partition: -1}}
		}
		for _, tp := range parts {
			if reported[tpPID{tp, t.ProducerID}] {
				continue
			}
			f := audit.NewFinding(audit.StageTransactions, audit.CauseHangingTransaction, tp, -1)
			f.Partition = tp.Partition
			f.Timestamp, f.TransactionalID, f.ProducerID, f.ProducerEpoch = t.StartTimestamp, t.TransactionalID, t.ProducerID, t.ProducerEpoch
			f.Detail = fmt.Sprintf("the coordinator's transaction has been open for %s, longer than --max-transaction-timeout %s", roundDur(open), o.MaxTxnTimeout)
			doc.Findings = append(doc.Findings, f)
		}
	}
	audit.SortFindings(doc.Findings)
	doc.Verdict = audit.Judge(doc.Findings, doc.Missing)
	return doc, nil
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

func roundDur(ms int64) time.Duration {
	return (time.Duration(ms) * time.Millisecond).Round(time.Second)
}

// appPartitions lists the partitions of the app's topics: those named
// <app>-… and those the group has committed offsets for.
func appPartitions(ctx context.Context, app string, src audit.Source, doc *txnsDoc) ([]audit.TopicPartition, error) {
	counts := map[string]int32{}
	infos, err := src.Topics(ctx)
	if err != nil {
		if err := missingf(ctx, doc, err, "topics"); err != nil {
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
		doc.Notes = append(doc.Notes, fmt.Sprintf("group %q not found: only topics named %s-… are read", app, app))
	case err != nil:
		if err := missingf(ctx, doc, err, "offsets of group %q", app); err != nil {
			return nil, err
		}
	}
	for tp := range g.Offsets {
		if _, ok := counts[tp.Topic]; ok {
			continue
		}
		n, err := src.Partitions(ctx, tp.Topic)
		if err != nil {
			if err := missingf(ctx, doc, err, "partitions of %q", tp.Topic); err != nil {
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

func compareTP(a, b audit.TopicPartition) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition - b.Partition)
}

func fmtMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func renderTxnsTable(w io.Writer, doc *txnsDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "app %s, %s, at %s\n\n", doc.AppID, doc.Source, doc.GeneratedAt.Format(time.RFC3339))

	fmt.Fprintf(tw, "transactional ids %s-* (%d)\n", doc.AppID, len(doc.Transactions))
	if len(doc.Transactions) > 0 {
		fmt.Fprintln(tw, "ID\tSTATE\tPRODUCER\tEPOCH\tTIMEOUT\tSTARTED\tPARTITIONS")
		for _, t := range doc.Transactions {
			var parts []string
			for _, tp := range t.Partitions {
				parts = append(parts, tp.String())
			}
			ps := strings.Join(parts, ",")
			if ps == "" {
				ps = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", t.TransactionalID, t.State, t.ProducerID, t.ProducerEpoch,
				time.Duration(t.TimeoutMillis)*time.Millisecond, fmtMillis(t.StartTimestamp), ps)
		}
	}

	fmt.Fprintf(tw, "\nproducers on the app's partitions (%d)\n", len(doc.Producers))
	if len(doc.Producers) > 0 {
		fmt.Fprintln(tw, "PARTITION\tPRODUCER\tEPOCH\tLAST SEQUENCE\tLAST WRITE\tCOORDINATOR EPOCH\tOPEN TXN FROM")
		for _, p := range doc.Producers {
			from := "-"
			if p.CurrentTxnStartOffset >= 0 {
				from = fmt.Sprint(p.CurrentTxnStartOffset)
			}
			fmt.Fprintf(tw, "%s/%d\t%d\t%d\t%d\t%s\t%d\t%s\n", p.Topic, p.Partition, p.ProducerID, p.ProducerEpoch,
				p.LastSequence, fmtMillis(p.LastTimestamp), p.CoordinatorEpoch, from)
		}
	}

	hanging := 0
	for _, ot := range doc.Open {
		if ot.Hanging {
			hanging++
		}
	}
	fmt.Fprintf(tw, "\nopen transactions (%d, %d hanging; max transaction timeout %s)\n", len(doc.Open), hanging,
		time.Duration(doc.MaxTxnTimeout)*time.Millisecond)
	if len(doc.Open) > 0 {
		fmt.Fprintln(tw, "PARTITION\tFROM OFFSET\tID\tPRODUCER\tEPOCH\tCOORDINATOR\tOPEN FOR\tHANGING")
		for _, ot := range doc.Open {
			id, state, dur, h := ot.TransactionalID, ot.State, "-", "no"
			if id == "" {
				id = "-"
			}
			if state == "" {
				state = "none"
			}
			if ot.OpenMillis >= 0 {
				dur = roundDur(ot.OpenMillis).String()
			}
			if ot.Hanging {
				h = "yes: " + ot.Reason
			}
			fmt.Fprintf(tw, "%s/%d\t%d\t%s\t%d\t%d\t%s\t%s\t%s\n", ot.Topic, ot.Partition, ot.FirstOffset, id, ot.ProducerID,
				ot.ProducerEpoch, state, dur, h)
		}
	}

	fmt.Fprintf(tw, "\nfindings (%d)\n", len(doc.Findings))
	for _, f := range doc.Findings {
		where := fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset)
		if f.Topic == "" {
			where = "-"
		}
		id := f.TransactionalID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\tproducer %d epoch %d\t%s\n", f.Severity, f.Cause, where, id, f.ProducerID, f.ProducerEpoch, f.Detail)
	}
	for _, n := range doc.Notes {
		fmt.Fprintf(tw, "\nnote: %s\n", n)
	}
	for _, m := range doc.Missing {
		fmt.Fprintf(tw, "\nmissing evidence: %s\n", m)
	}
	fmt.Fprintf(tw, "\nverdict: %s\n", doc.Verdict)
	return tw.Flush()
}
