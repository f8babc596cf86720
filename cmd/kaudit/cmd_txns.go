package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/txns"
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
		UsageText: "kaudit txns --app-id ID [source] [--max-transaction-timeout 15m] [--format table|json]",
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

// runTxns reads transactions and producers through src and renders them.
// It uses only the audit.Source interface, so it runs on any source.
func runTxns(ctx context.Context, o txnsOptions, src audit.Source, w io.Writer) error {
	doc, err := txns.Audit(ctx, src, txns.Options{AppID: o.AppID, MaxTxnTimeout: o.MaxTxnTimeout})
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

func fmtMillis(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339)
}

func renderTxnsTable(w io.Writer, doc *txns.Census) error {
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
				dur = txns.RoundMillis(ot.OpenMillis).String()
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
