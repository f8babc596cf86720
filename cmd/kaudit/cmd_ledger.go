package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
		&cli.StringFlag{Name: "topic", Usage: "the `TOPIC` to classify", Required: true, EnvVars: env("topic")},
		&cli.IntFlag{Name: "partition", Value: -1, Usage: "one `PARTITION` (default: all)", EnvVars: env("partition")},
		&cli.StringFlag{Name: "offsets", Usage: "list each offset `A-B` (inclusive) with its fate, and its decoded record when a serde is given", EnvVars: env("offsets")},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table, json or csv", EnvVars: env("format")},
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
			o := ledgerOptions{source: readSourceOptions(c), Topic: c.String("topic"), Partition: c.Int("partition"),
				Format: c.String("format"), CrossCheck: !c.Bool("no-cross-check"), MaxTxnTimeout: c.Duration("max-transaction-timeout"), From: -1, To: -1,
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
			switch o.Format {
			case "table", "json", "csv":
			default:
				return usagef("--format %q: want table, json or csv", o.Format)
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

func runLedger(ctx context.Context, o ledgerOptions, src *openedSource, w, errw io.Writer) error {
	n, err := src.Partitions(ctx, o.Topic)
	if err != nil {
		if errors.Is(err, audit.ErrTopicNotFound) {
			return usagef("topic %q not found in %s", o.Topic, src.Describe())
		}
		return notRunError{fmt.Errorf("describe topic %s: %w", o.Topic, err)}
	}
	if n < 0 || n > maxPartitions {
		return notRunError{fmt.Errorf("describe topic %s: %d partitions: %w", o.Topic, n, audit.ErrCorrupt)}
	}
	var parts []int32
	for p := range n {
		parts = append(parts, p)
	}
	if o.Partition >= 0 {
		if int32(o.Partition) >= n {
			return usagef("topic %q has %d partitions: no partition %d", o.Topic, n, o.Partition)
		}
		parts = []int32{int32(o.Partition)}
	}
	compacted := false
	if infos, err := src.Topics(ctx); err == nil {
		for _, t := range infos {
			if t.Name == o.Topic {
				compacted = t.Compacted()
			}
		}
	}
	var dec *codec.Codec
	if o.To >= 0 && (o.source.KeySerde != "" || o.source.ValueSerde != "") {
		props, err := properties(o.source)
		if err != nil {
			return err
		}
		if dec, err = openDecoder(o.source, "", "", props, audit.SchemasOf(src)); err != nil {
			return err
		}
	}
	now := time.Now()
	if c, ok := src.Source.(audit.Clock); ok {
		now = c.Now()
	}
	doc := &audit.TopicLedger{Topic: o.Topic}
	var all []audit.Finding
	problems := map[int32][]audit.Finding{} // what opening the source found wrong with this topic
	for _, f := range src.Problems {
		if f.Topic == o.Topic {
			problems[f.Partition] = append(problems[f.Partition], f)
		}
	}
	lo := ledger.Options{Compacted: compacted, MaxTxnTimeout: o.MaxTxnTimeout, Now: now, CrossCheck: o.CrossCheck}
	if o.To >= 0 {
		lo.KeepFrom, lo.KeepTo = o.From, o.To+1
	}
	built := buildLedgers(ctx, src.Source, o.Topic, parts, lo, max(o.Concurrency, 1))
	for i, p := range parts {
		tp := audit.TopicPartition{Topic: o.Topic, Partition: p}
		l, err := built[i].l, built[i].err
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f := audit.NewFinding(audit.StageOffsets, audit.CauseUnreadable, tp, -1)
			f.Count = 0
			f.Detail = "the partition could not be read: " + err.Error()
			doc.Partitions = append(doc.Partitions, audit.PartitionLedger{Partition: p, Findings: append([]audit.Finding{f}, problems[p]...)})
			all = append(all, f)
			all = append(all, problems[p]...)
			continue
		}
		pl := l.Summary(lo)
		pl.Findings = append(pl.Findings, problems[p]...)
		if dec != nil {
			pl.Values, err = decodeRange(ctx, src, dec, tp, o.From, o.To+1)
			if err != nil {
				return err
			}
		}
		doc.Partitions = append(doc.Partitions, pl)
		all = append(all, pl.Findings...)
		delete(problems, p)
	}
	for _, f := range src.Problems {
		if f.Topic != o.Topic || problems[f.Partition] != nil {
			// evidence the ledger did not list is still evidence missing
			fmt.Fprintf(errw, "kaudit: %s/%d: %s: %s\n", f.Topic, f.Partition, f.Cause, f.Detail)
			all = append(all, f)
		}
	}
	var rerr error
	switch o.Format {
	case "json":
		rerr = report.LedgerJSON(w, doc)
	case "csv":
		rerr = report.LedgerCSV(w, doc)
	default:
		rerr = report.LedgerTable(w, doc)
	}
	if rerr != nil {
		return fmt.Errorf("write ledger: %w", rerr)
	}
	return verdictResult(audit.Judge(all, nil))
}

type builtLedger struct {
	l   *ledger.Ledger
	err error
}

// buildLedgers builds the ledgers of parts, up to n at once.
func buildLedgers(ctx context.Context, src audit.RecordSource, topic string, parts []int32, lo ledger.Options, n int) []builtLedger {
	out := make([]builtLedger, len(parts))
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, p := range parts {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			l, err := ledger.Build(ctx, src, audit.TopicPartition{Topic: topic, Partition: p}, lo)
			out[i] = builtLedger{l, err}
		})
	}
	wg.Wait()
	return out
}

// decodeRange decodes the data records in [from, to).
func decodeRange(ctx context.Context, src audit.RecordSource, dec *codec.Codec, tp audit.TopicPartition, from, to int64) ([]audit.DecodedRecord, error) {
	var out []audit.DecodedRecord
	for r, err := range src.Records(ctx, tp, from, to) {
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", tp, from, err)
		}
		if r.Batch.Control || r.Offset < from {
			continue
		}
		d := audit.DecodedRecord{Offset: r.Offset, Timestamp: r.Timestamp, Key: text(ctx, dec, tp.Topic, true, r.Key), Value: text(ctx, dec, tp.Topic, false, r.Value)}
		out = append(out, d)
	}
	return out, nil
}

// text is a key or value as canonical JSON text, or b64: and base64 when
// it cannot be decoded.
func text(ctx context.Context, dec *codec.Codec, topic string, isKey bool, b []byte) string {
	if b == nil {
		return "null"
	}
	v, err := dec.Decode(ctx, topic, isKey, b)
	if err != nil {
		return codec.RawText(b)
	}
	return codec.Text(v)
}
