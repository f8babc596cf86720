package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/txns"
	"github.com/kaudit/kaudit/report"
)

// txnsOptions are kaudit txns' flags.
type txnsOptions struct {
	AppID         string
	MaxTxnTimeout time.Duration
	Format        string // table or json
}

func txnsCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "app-id", Aliases: []string{"group"}, Usage: "the Streams application.id `ID`", EnvVars: env("app-id")},
		formatFlag("txns", "table", []string{"table", "json"}),
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
			format, err := readFormat(c, []string{"table", "json"})
			if err != nil {
				return err
			}
			o := txnsOptions{AppID: c.String("app-id"), MaxTxnTimeout: c.Duration("max-transaction-timeout"), Format: format}
			if o.AppID == "" {
				return usagef("kaudit txns: --app-id is required")
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
		if err := report.TxnsJSON(w, doc); err != nil {
			return fmt.Errorf("write json: %w", err)
		}
	default:
		if err := report.TxnsTable(w, doc); err != nil {
			return fmt.Errorf("write table: %w", err)
		}
	}
	return verdictResult(doc.Verdict)
}
