package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/diff"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/topology"
	"github.com/kaudit/kaudit/internal/dest"
)

// pluralPieces is "1 piece of evidence was" or "N pieces of evidence were".
func pluralPieces(n int) string {
	if n == 1 {
		return "1 piece of evidence was"
	}
	return fmt.Sprintf("%d pieces of evidence were", n)
}

// captureOptions are kaudit capture's flags.
type captureOptions struct {
	AppID      string
	Out        string
	Topics     []string
	Topology   string // file
	SchemasDir string
	Since      time.Time
	MaxBytes   int64
	// Registry keeps the schemas of the copied records (from
	// --schema-registry-url or schema.registry.url in the client
	// properties); nil when none is configured.
	Registry *codec.Codec
}

func captureCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "app-id", Aliases: []string{"group"}, Usage: "the Streams application.id `ID`", EnvVars: env("app-id")},
		&cli.StringFlag{Name: "out", Usage: "bundle `DIR` to write (an existing bundle is resumed)", EnvVars: env("out")},
		&cli.StringSliceFlag{Name: "topic", Aliases: []string{"t"}, Usage: "`TOPIC` to capture (repeatable; default: the group's topics and <app>-…)", EnvVars: env("topic")},
		&cli.StringFlag{Name: "topology", Usage: "Topology#describe() output `FILE`, stored in the bundle", EnvVars: env("topology")},
		&cli.StringFlag{Name: "schemas", Usage: "schema `DIR` of <id>.avsc files or a schemas.json map, stored in the bundle", EnvVars: env("schemas")},
		&cli.StringFlag{Name: "schema-registry-url", Usage: "Schema Registry `URL` (or schema.registry.url in --command-config): the schemas of the records copied are stored in the bundle", EnvVars: env("schema-registry-url")},
		&cli.StringFlag{Name: "since", Usage: "skip batches older than `D` (a duration back from now, or an RFC 3339 time) at the start of each partition", EnvVars: env("since")},
		&cli.StringFlag{Name: "max-bytes", Usage: "stop after about `N` bytes (suffixes K, M, G); run again to continue", EnvVars: env("max-bytes")},
	}
	return &cli.Command{
		Name:      "capture",
		Usage:     "write an offline evidence bundle",
		UsageText: "kaudit capture --app-id ID --bootstrap-server HOST:PORT --out DIR [--topology FILE] [--since D] [--max-bytes N]",
		Description: "Reads the app's consistent cut (group offsets with require_stable, then every partition's\n" +
			"log start, LSO and high watermark, topic configs, transactions, producers) and copies the\n" +
			"records of its topics up to that cut, control batches included, into DIR in Kafka's own\n" +
			"log-dir layout with a manifest.json holding the rest and the sha256 of every file.\n" +
			"Audit it later with --snapshot DIR. An interrupted or --max-bytes-bounded capture resumes\n" +
			"where it stopped when run again with the same --out; until then it exits 3.\n\n" + captureExitHelp,
		Flags: append(flags, sourceFlags()...),
		Action: func(c *cli.Context) error {
			o, err := readCaptureOptions(c, time.Now())
			if err != nil {
				return err
			}
			so := readSourceOptions(c)
			if err := checkWrites([]dest.Path{{Flag: "kaudit capture --out", Path: o.Out, Kind: dest.NewFolder}},
				append(sourceInputs(so), o.Topology, o.SchemasDir)); err != nil {
				return err
			}
			props, err := properties(so)
			if err != nil {
				return err
			}
			if so.SchemaRegistry != "" || props["schema.registry.url"] != "" {
				reg, err := codec.New(codec.Config{ValueSerde: "avro", RegistryURL: so.SchemaRegistry, Properties: props, Timeout: so.Timeout})
				if err != nil {
					return usagef("kaudit capture: --schema-registry-url: %w", err)
				}
				o.Registry = reg
			}
			src, err := openCliSource(c)
			if err != nil {
				return err
			}
			defer src.close()
			return runCapture(c.Context, o, src.Source, c.App.Writer, c.App.ErrWriter)
		},
	}
}

func readCaptureOptions(c *cli.Context, now time.Time) (captureOptions, error) {
	o := captureOptions{AppID: c.String("app-id"), Out: c.String("out"), Topics: c.StringSlice("topic"),
		Topology: c.String("topology"), SchemasDir: c.String("schemas")}
	if o.AppID == "" {
		return o, usagef("kaudit capture: --app-id is required")
	}
	if o.Out == "" {
		return o, usagef("kaudit capture: --out is required")
	}
	if s := c.String("since"); s != "" {
		if d, err := diff.ParseAgo(s); err == nil && d > 0 {
			o.Since = now.Add(-d)
		} else if t, err := time.Parse(time.RFC3339, s); err == nil {
			o.Since = t
		} else {
			return o, usagef("kaudit capture: --since %q: want a positive duration (24h, 1d, 2w) or an RFC 3339 time", s)
		}
	}
	if s := c.String("max-bytes"); s != "" {
		n, err := parseBytes(s)
		if err != nil {
			return o, usagef("kaudit capture: --max-bytes %q: %w", s, err)
		}
		o.MaxBytes = n
	}
	return o, nil
}

// parseBytes parses a byte count with an optional K, M or G suffix (powers
// of 1024; a trailing B or iB is allowed).
func parseBytes(s string) (int64, error) {
	u := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "B"), "I")
	mult := int64(1)
	switch {
	case strings.HasSuffix(u, "K"):
		mult = 1 << 10
	case strings.HasSuffix(u, "M"):
		mult = 1 << 20
	case strings.HasSuffix(u, "G"):
		mult = 1 << 30
	}
	if mult > 1 {
		u = u[:len(u)-1]
	}
	n, err := strconv.ParseInt(u, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("want a positive byte count such as 500M")
	}
	return n * mult, nil
}

// runCapture plans the capture with the library, writes the bundle and
// prints what it holds. A bundle that does not hold all the evidence of
// the cut (--max-bytes stopped it, or the source could not give a piece
// of it) exits 3: an audit of it would be incomplete.
func runCapture(ctx context.Context, o captureOptions, src audit.Source, stdout, stderr io.Writer) error {
	opts := snapshot.CaptureOptions{Dir: o.Out, AppID: o.AppID, Topics: o.Topics, Since: o.Since, MaxBytes: o.MaxBytes}
	if o.Topology != "" {
		b, err := readInput(o.Topology, topology.MaxTopologyBytes)
		if err != nil {
			return usagef("kaudit capture: read --topology: %w", err)
		}
		opts.Topology = string(b)
	}
	if o.SchemasDir != "" {
		s, err := snapshot.ReadSchemas(o.SchemasDir)
		if err != nil {
			return usagef("kaudit capture: --schemas: %w", err)
		}
		opts.Schemas = s
	}
	if o.Registry != nil {
		opts.Schema = snapshot.RegistrySchemas(o.Registry)
	}
	opts = snapshot.Plan(src, opts)
	if isTerminal(stderr) {
		p := newCaptureBar(stderr)
		opts.Progress = p.update
		defer p.done()
	}
	m, err := snapshot.Capture(ctx, src, opts)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, snapshot.ErrOutDir) {
			return usagef("kaudit capture --out: %w", err)
		}
		return notRunError{Err: fmt.Errorf("kaudit capture: %w (run it again with the same --out to resume)", err)}
	}
	var recs, bytes int64
	done := 0
	for _, p := range m.Partitions {
		recs += p.Records
		bytes += p.Bytes
		if p.Complete {
			done++
		}
	}
	gaps := m.Gaps()
	for _, miss := range m.Missing {
		if slices.Contains(gaps, miss) {
			fmt.Fprintln(stderr, "kaudit capture: not captured:", miss)
		} else {
			fmt.Fprintln(stderr, "kaudit capture: not captured (optional, an audit runs without it):", miss)
		}
	}
	for _, n := range m.Notes {
		fmt.Fprintln(stderr, "kaudit capture:", n)
	}
	fmt.Fprintf(stdout, "captured %d of %d partitions of %s: %d records, %d bytes in %d files, the cut as of %s (the evidence's time: a live cluster's now, the log dirs' last record)\n",
		done, len(m.Partitions), o.AppID, recs, bytes, len(m.Files), m.CapturedAt.Format(time.RFC3339))
	if cl := m.CommitLog; cl != nil {
		fmt.Fprintf(stdout, "and the group's commit log, %s: %d records, %d bytes\n", cl.TP(), cl.Records, cl.Bytes)
	}
	switch {
	case !m.Copied():
		fmt.Fprintf(stdout, "stopped by --max-bytes: run the same command again to continue into %s\n", o.Out)
		return incompleteError{fmt.Errorf("kaudit capture: bundle %s is incomplete", o.Out)}
	case !m.Complete:
		fmt.Fprintf(stdout, "bundle %s is incomplete: it holds the records of the partitions above, but not %s: an audit of it (--snapshot %s) will be incomplete\n",
			o.Out, strings.Join(gaps, "; "), o.Out)
		return incompleteError{fmt.Errorf("kaudit capture: bundle %s is incomplete: %s not captured", o.Out, pluralPieces(len(gaps)))}
	}
	fmt.Fprintf(stdout, "bundle %s is complete: audit it with --snapshot %s\n", o.Out, o.Out)
	return nil
}
