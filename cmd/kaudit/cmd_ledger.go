package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/report"
)

type ledgerOptions struct {
	source        sourceOptions
	Topic         string
	Partition     int // -1: all
	From, To      int64
	Format        string
	CrossCheck    bool
	MaxTxnTimeout time.Duration
	Concurrency   int // partitions read at once
}

func ledgerCommand() *cli.Command {
	flags := append(sourceFlags(), serdeFlags()...)
	flags = append(flags, txnFlags()...)
	flags = append(flags,
		&cli.StringFlag{Name: "topic", Aliases: []string{"t"}, Usage: "the `TOPIC` to classify (required)", EnvVars: env("topic")},
		&cli.IntFlag{Name: "partition", Value: -1, Usage: "one `PARTITION` (default: all)", EnvVars: env("partition")},
		&cli.StringFlag{Name: "offsets", Usage: "list each offset `A-B` (inclusive) with its fate, and its decoded record when a serde is given", EnvVars: env("offsets")},
		formatFlag("ledger", "table", []string{"table", "json", "csv"}),
		&cli.IntFlag{Name: "concurrency", Value: runtime.GOMAXPROCS(0), Usage: "read up to `N` partitions at once", EnvVars: env("concurrency")},
		&cli.BoolFlag{Name: "no-cross-check", Usage: "skip comparing the derived read_committed view with the broker's (reads each partition once instead of twice)", EnvVars: env("no-cross-check")},
	)
	return &cli.Command{
		Name:        "ledger",
		Usage:       "the fate of every offset of a topic: committed, aborted, marker, open, purged, compacted, gap",
		UsageText:   "kaudit ledger [source] --topic T [--partition P] [--offsets A-B] [--format table|json|csv]",
		Description: exitStatusHelp,
		Flags:       flags,
		Action: func(c *cli.Context) error {
			if c.String("topic") == "" {
				return usagef("kaudit ledger needs --topic TOPIC")
			}
			format, err := readFormat(c, []string{"table", "json", "csv"})
			if err != nil {
				return err
			}
			o := ledgerOptions{source: readSourceOptions(c), Topic: c.String("topic"), Partition: c.Int("partition"),
				Format: format, CrossCheck: !c.Bool("no-cross-check"), MaxTxnTimeout: c.Duration("max-transaction-timeout"), From: -1, To: -1,
				Concurrency: c.Int("concurrency")}
			if o.Concurrency < 1 || o.Concurrency > 64 {
				return usagef("--concurrency %d: want 1 to 64", o.Concurrency)
			}
			if s := c.String("offsets"); s != "" {
				a, b, ok := strings.Cut(s, "-")
				from, err1 := strconv.ParseInt(a, 10, 64)
				to, err2 := strconv.ParseInt(b, 10, 64)
				if !ok || err1 != nil || err2 != nil || from < 0 || to < from {
					return usagef("--offsets %q: want A-B with 0 <= A <= B", s)
				}
				o.From, o.To = from, to
			}
			src, err := openCliSource(c)
			if err != nil {
				return err
			}
			defer src.close()
			return runLedger(c.Context, o, src, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// runLedger classifies the topic through the library and renders it; a
// problem of the source the ledger does not list goes to stderr.
func runLedger(ctx context.Context, o ledgerOptions, src *openedSource, w, errw io.Writer) error {
	lo := ledger.TopicOptions{Topic: o.Topic, Partition: o.Partition, From: o.From, To: o.To, CrossCheck: o.CrossCheck,
		MaxTxnTimeout: o.MaxTxnTimeout, Concurrency: o.Concurrency, Problems: src.Problems}
	// the records listed are decoded with the serdes given, else with the
	// schemas the capture carries (all of one format)
	schemas := audit.SchemasOf(src.Source)
	if value := codec.SerdeOf(schemas); o.To >= 0 && (o.source.KeySerde != "" || o.source.ValueSerde != "" || value != "") {
		props, err := properties(o.source)
		if err != nil {
			return err
		}
		if lo.Decoder, err = openDecoder(o.source, "", value, props, schemas); err != nil {
			return err
		}
	}
	tl, err := ledger.Topic(ctx, src.Source, lo)
	if err != nil {
		return err
	}
	for _, f := range tl.Unlisted {
		// evidence the ledger did not list is still evidence missing
		fmt.Fprintf(errw, "kaudit: %s/%d: %s: %s\n", f.Topic, f.Partition, f.Cause, f.Detail)
	}
	var rerr error
	switch o.Format {
	case "json":
		rerr = report.LedgerJSON(w, tl.TopicLedger)
	case "csv":
		rerr = report.LedgerCSV(w, tl.TopicLedger)
	default:
		rerr = report.LedgerTableWith(w, tl.TopicLedger, !isTerminal(w))
	}
	if rerr != nil {
		return fmt.Errorf("write ledger: %w", rerr)
	}
	return verdictResult(audit.Judge(tl.Findings, nil))
}
