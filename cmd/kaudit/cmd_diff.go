package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/combine"
	"github.com/kaudit/kaudit/audit/diff"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/dest"
	"github.com/kaudit/kaudit/report"
)

// diffOptions are kaudit diff's flags.
type diffOptions struct {
	source           sourceOptions
	AppID            string
	TopologyFile     string
	SpecFile         string
	SaveSpec         string // --save-spec: where the inferred spec goes
	Force            bool   // --force: the reports and the spec may replace files
	StateDir         string
	Outputs          []output
	Since, Until     string // as given: resolved against the source's clock
	Baseline         string // a previous JSON report
	BaselineSnapshot string
	AppLogs          []string // --app-log FILE, repeatable
	BrokerLogs       []string // --broker-log FILE, repeatable
	LogTimezone      string   // --log-timezone: the zone of the logs' times without one
	LogDay           string   // --log-day: the date of the logs' first time-of-day-only line
	KafkaVersion     string
	StreamsVersion   string
	Outage           time.Duration
	Partitions       []int32
	Shard            diff.Shard
	RunID            string
	Exchange         string // --exchange DIR: the shards hand each other their inputs
	ExchangeWait     time.Duration
	CrossCheck       bool
	Concurrency      int
	Wide             bool // --wide: the table unwrapped
	MinSeverity      audit.Severity
	Width            int // the terminal's width, 0 for none
	started          time.Time
	args             []string  // the command line, for the provenance
	MemoryBudget     int64     // bytes; 0: no bound
	stderr           io.Writer // warnings that do not stop the audit (nil: none)
	SpillDir         string    // where tables over the budget spill
	// progress, if set, draws progress bars; log, if set, tells the user
	// what the audit does that is not evidence (a table spilled to disk)
	progress audit.Progress
	log      func(string)
	// inspect, when set, sees the finished report (the demo checks it
	// against its ground truth).
	inspect func(*audit.Report)
}

// auditOptions are the library's options for these flags.
func (o diffOptions) auditOptions(props map[string]string) diff.Options {
	return diff.Options{AppID: o.AppID, TopologyFile: o.TopologyFile, SpecFile: o.SpecFile, StateDir: o.StateDir,
		Since: o.Since, Until: o.Until, BaselineSnapshot: o.BaselineSnapshot, AppLogs: o.AppLogs, BrokerLogs: o.BrokerLogs, LogTimezone: o.LogTimezone, LogDay: o.LogDay, Outage: o.Outage, MaxTxnTimeout: o.source.MaxTxnTimeout,
		Partitions: o.Partitions, Shard: o.Shard, RunID: o.RunID, Exchange: o.Exchange, ExchangeWait: o.ExchangeWait, CrossCheck: o.CrossCheck, Concurrency: o.Concurrency, TableMemory: o.MemoryBudget / tableShare,
		MemoryBudget: o.MemoryBudget, SpillDir: o.SpillDir, Codec: codecConfig(o.source, props), Progress: o.progress, Log: o.log}
}

func diffFlags() []cli.Flag {
	flags := append(sourceFlags(), serdeFlags()...)
	flags = append(flags, txnFlags()...)
	flags = append(flags, outputFlags("table")...)
	return append(flags,
		&cli.StringFlag{Name: "app-id", Aliases: []string{"group"}, Usage: "the Streams `application.id` (default: the spec's)", EnvVars: env("app-id")},
		&cli.StringFlag{Name: "topology", Usage: "Topology#describe() text `FILE`", EnvVars: env("topology")},
		&cli.StringFlag{Name: "spec", Usage: "kaudit.yaml `FILE`: select_key, reducers, joiners (kaudit init writes a draft); without it the spec is inferred from the evidence", EnvVars: env("spec")},
		&cli.StringFlag{Name: "save-spec", Usage: "without --spec: write the spec inferred from the evidence, each guess with its evidence, to `FILE` (a new file; --force replaces one)", EnvVars: env("save-spec")},
		&cli.StringFlag{Name: "state-dir", Usage: "a Streams state.dir `DIR` to check .checkpoint files against the changelogs", EnvVars: env("state-dir")},
		&cli.StringFlag{Name: "since", Usage: "judge only source records from `DURATION` ago or TIME (RFC 3339), or since the --baseline report's audit (baseline); earlier ones still fold into state", EnvVars: env("since")},
		&cli.StringFlag{Name: "until", Usage: "judge only source records before `TIME` (RFC 3339) or DURATION ago", EnvVars: env("until")},
		&cli.StringFlag{Name: "baseline", Usage: "a previous JSON `REPORT`: report and exit on what is new since", EnvVars: env("baseline")},
		&cli.StringFlag{Name: "baseline-snapshot", Usage: "an earlier capture `DIR`: records it holds that are gone now are truncated", EnvVars: env("baseline-snapshot")},
		&cli.StringSliceFlag{Name: "app-log", Usage: "the Streams app's log `FILE` (plain or gzip; repeat): its offset resets explain a skip in the group's commit history, its expired-window lines give a windowed store's grace", EnvVars: env("app-log")},
		&cli.StringSliceFlag{Name: "broker-log", Usage: "a broker's log `FILE` (server.log, log-cleaner.log; plain or gzip; repeat): its log-start moves date the deletions", EnvVars: env("broker-log")},
		&cli.StringFlag{Name: "log-timezone", Usage: "the `ZONE` the logs' times without a zone were written in (Kafka's \"[%d]\" is local time): an IANA name (America/New_York) or an offset (-05:00); default: the zone each log's start-up lines show, else not known (each such time is then ±14 h)", EnvVars: env("log-timezone")},
		&cli.StringFlag{Name: "log-day", Usage: "the `DATE` (YYYY-MM-DD, in the logs' zone) the first line of each log that carries only a time of day was written on (logback's and slf4j-simple's default pattern \"HH:mm:ss.SSS\"); later lines move to the next day when the clock goes back more than 12 h; default: such lines carry no time", EnvVars: env("log-day")},
		&cli.StringFlag{Name: "kafka-version", Usage: "the brokers' Kafka `VERSION`, to judge known broker issues", EnvVars: env("kafka-version")},
		&cli.StringFlag{Name: "streams-version", Usage: "the app's Kafka Streams client `VERSION`, to judge known Streams issues", EnvVars: env("streams-version")},
		&cli.DurationFlag{Name: "outage", Usage: "how long the brokers were down: topics whose retention is shorter are a config risk", EnvVars: env("outage")},
		&cli.StringFlag{Name: "partitions", Usage: "audit only these task partitions, e.g. `0-5` or 0,3 (a shard; see kaudit merge)", EnvVars: env("partitions")},
		&cli.StringFlag{Name: "shard", Usage: "audit shard `I/N` of the task partitions (those with partition % N == I), e.g. --shard $(JOB_COMPLETION_INDEX)/4 in a Kubernetes Indexed Job; see kaudit merge", EnvVars: env("shard")},
		&cli.StringFlag{Name: "run-id", Usage: "name the audit a shard belongs to (`ID`, e.g. the Job's uid): kaudit merge refuses a shard of another run", EnvVars: env("run-id")},
		&cli.StringFlag{Name: "exchange", Usage: "with --shard and --run-id: a `DIR` every shard of the run mounts, through which the shards hand each other the inputs of re-keyed tables, so that together they read each source record once; the shards must then all run at once", EnvVars: env("exchange")},
		&cli.DurationFlag{Name: "exchange-wait", Value: 30 * time.Minute, Usage: "with --exchange: how long a shard waits for another's inputs before it fails", EnvVars: env("exchange-wait")},
		&cli.BoolFlag{Name: "no-cross-check", Usage: "skip comparing each partition's derived read_committed view with the broker's", EnvVars: env("no-cross-check")},
		&cli.IntFlag{Name: "concurrency", Value: runtime.GOMAXPROCS(0), Usage: "read and decode up to `N` partitions at once, ahead of the audit (1: one reader)", EnvVars: env("concurrency")},
		&cli.StringFlag{Name: "memory-budget", Value: "1GiB", Usage: "keep kaudit's memory near `SIZE` (e.g. 512MiB, 8GiB; 0: no bound): a table whose records need more is spilled to disk and checked a bucket of keys at a time", EnvVars: env("memory-budget")},
		&cli.StringFlag{Name: "spill-dir", Usage: "where tables over --memory-budget spill (default: the system's temporary directory)", EnvVars: env("spill-dir")},
		wideFlag(),
		minSeverityFlag(),
		&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress bars on stderr (they are drawn only on a terminal)", EnvVars: env("quiet")},
	)
}

func diffCommand() *cli.Command {
	return &cli.Command{
		Name:        "diff",
		Usage:       "audit an app: which input records vanished, at which hop, and why",
		UsageText:   "kaudit diff --app-id ID [source] [--topology FILE] [--spec FILE] [--state-dir DIR] [--format md|html|csv|json|table|prom] [--output FILE|-]",
		Description: exitStatusHelp,
		Flags:       diffFlags(),
		Action: func(c *cli.Context) error {
			o, err := readDiffOptions(c, time.Now())
			if err != nil {
				return err
			}
			o.started, o.args, o.stderr = time.Now(), provenanceArgs(c), c.App.ErrWriter
			src, err := openCliSource(c)
			if err != nil {
				return notRunMetrics(o, err)
			}
			defer src.close()
			p, stop := newProgress(c.App.ErrWriter, c.Bool("quiet"))
			o.progress = p
			if !c.Bool("quiet") {
				o.log = logTo(c.App.ErrWriter, p)
			}
			limitMemory(o.MemoryBudget)
			err = runDiff(c.Context, o, src, c.App.Writer)
			stop()
			return notRunMetrics(o, err)
		},
	}
}

func readDiffOptions(c *cli.Context, now time.Time) (diffOptions, error) {
	o := diffOptions{source: readSourceOptions(c), AppID: c.String("app-id"), TopologyFile: c.String("topology"), SpecFile: c.String("spec"), SaveSpec: c.String("save-spec"),
		StateDir: c.String("state-dir"), Baseline: c.String("baseline"), BaselineSnapshot: c.String("baseline-snapshot"), RunID: c.String("run-id"),
		Exchange: c.String("exchange"), ExchangeWait: c.Duration("exchange-wait"),
		AppLogs: c.StringSlice("app-log"), BrokerLogs: c.StringSlice("broker-log"), LogTimezone: c.String("log-timezone"), LogDay: c.String("log-day"),
		KafkaVersion: c.String("kafka-version"), StreamsVersion: c.String("streams-version"), Outage: c.Duration("outage"), CrossCheck: !c.Bool("no-cross-check"),
		Concurrency: c.Int("concurrency"), SpillDir: c.String("spill-dir"), Wide: c.Bool("wide"), Width: terminalWidth(c.App.Writer)}
	if o.SaveSpec != "" && o.SpecFile != "" {
		return o, usagef("--save-spec writes the spec kaudit infers without --spec: give one or the other")
	}
	var err error
	if o.Outputs, err = readOutputs(c, "table"); err != nil {
		return o, err
	}
	o.Since, o.Until = c.String("since"), c.String("until")
	if o.Since == "baseline" {
		// since the audit of the --baseline report: a nightly compared with
		// the report last acknowledged judges every record since then, so a
		// loss not acknowledged stays in the window and keeps alerting
		if o.Baseline == "" {
			return o, usagef("--since baseline needs --baseline REPORT")
		}
		prev, err := readReport(o.Baseline)
		if err != nil {
			return o, err
		}
		o.Since = "" // a baseline of no audit (a nightly's first, acknowledging nothing): every record
		if !prev.GeneratedAt.IsZero() {
			o.Since = prev.GeneratedAt.UTC().Format(time.RFC3339Nano)
		}
	}
	if _, err = diff.ParseWhen(o.Since, now); err != nil {
		return o, usagef("--since: %w", err)
	}
	if _, err = diff.ParseWhen(o.Until, now); err != nil {
		return o, usagef("--until: %w", err)
	}
	if o.MinSeverity, err = report.ParseSeverity(c.String("min-severity")); err != nil {
		return o, usagef("--min-severity: %w", err)
	}
	if o.Partitions, err = parsePartitions(c.String("partitions")); err != nil {
		return o, usagef("--partitions: %w", err)
	}
	if sh := c.String("shard"); sh != "" {
		if o.Partitions != nil {
			return o, usagef("give --partitions or --shard, not both")
		}
		if o.Shard, err = diff.ParseShard(sh); err != nil {
			return o, usagef("--shard: %w", err)
		}
	}
	if o.Exchange != "" && (o.Shard.Count == 0 || o.RunID == "") {
		return o, usagef("--exchange needs --shard I/N and --run-id ID: the shards of one run hand each other their inputs under DIR/ID")
	}
	if o.Concurrency < 1 || o.Concurrency > 64 {
		return o, usagef("--concurrency %d: want 1 to 64", o.Concurrency)
	}
	if _, err = applog.ParseZone(o.LogTimezone); err != nil {
		return o, usagef("--log-timezone: %w", err)
	}
	if _, err = applog.ParseDay(o.LogDay); err != nil {
		return o, usagef("--log-day: %w", err)
	}
	if o.MemoryBudget, err = parseSize(c.String("memory-budget")); err != nil {
		return o, usagef("--memory-budget: %w", err)
	}
	if o.AppID == "" && o.SpecFile == "" {
		return o, usagef("kaudit diff needs --app-id ID (or a --spec that names app_id)")
	}
	o.Force = c.Bool("force")
	paths, inputs, err := o.writes()
	if err != nil {
		return o, usageError{Err: err}
	}
	if err := checkWrites(paths, inputs); err != nil {
		return o, err
	}
	return o, nil
}

// writes are the paths kaudit diff writes, and the inputs it reads, for
// checkWrites: its reports, the inferred spec, the spill's folder and the
// exchange's folder with the run's folder in it.
func (o diffOptions) writes() ([]dest.Path, []string, error) {
	paths := outputDests(o.Outputs)
	if o.SaveSpec != "" {
		paths = append(paths, dest.Path{Flag: "--save-spec", Path: o.SaveSpec, Force: o.Force})
	}
	if o.SpillDir != "" {
		paths = append(paths, dest.Path{Flag: "--spill-dir", Path: o.SpillDir, Kind: dest.Folder})
	}
	if o.Exchange != "" {
		paths = append(paths, dest.Path{Flag: "--exchange", Path: o.Exchange, Kind: dest.Folder})
		run, err := diff.ExchangeRunDir(o.Exchange, o.RunID)
		if err != nil {
			return nil, nil, fmt.Errorf("--run-id: %w", err)
		}
		paths = append(paths, dest.Path{Flag: "--exchange", Path: run, Kind: dest.NewFolder})
	}
	ins := append(sourceInputs(o.source), o.StateDir, o.BaselineSnapshot, o.SpecFile, o.TopologyFile, o.Baseline)
	ins = append(ins, o.AppLogs...)
	return paths, append(ins, o.BrokerLogs...), nil
}

// tableShare is the part of --memory-budget one table's per-record
// state may use in memory: the rest is for the store's keys, the readers'
// buffers and the garbage collector's headroom.
const tableShare = 4

// parseSize reads a byte size: 512MiB, 8GiB, 2GB, 0.
func parseSize(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("%s is too large", s)
	}
	return int64(n), nil
}

// limitMemory sets the Go runtime's soft memory limit to nine tenths of
// the budget, so that the garbage collector works harder rather than let
// the heap pass it, and the process's resident memory (the runtime's, the
// binary's and the pages it returns late) stays under the budget: with
// the limit at the budget, a live diff at 10M peaked at 1,045 MiB of RSS
// for a 1 GiB budget. An explicit GOMEMLIMIT wins.
func limitMemory(budget int64) {
	if budget > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(budget / 10 * 9)
	}
}

// parsePartitions reads "0-5" or "0,3,7".
func parsePartitions(s string) ([]int32, error) {
	if s == "" {
		return nil, nil
	}
	var out []int32
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(strings.TrimSpace(part), "-")
		lo, err := strconv.ParseInt(a, 10, 32)
		if err != nil || lo < 0 {
			return nil, fmt.Errorf("%q: want partitions like 0-5 or 0,3", s)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.ParseInt(b, 10, 32); err != nil || hi < lo {
				return nil, fmt.Errorf("%q: want partitions like 0-5 or 0,3", s)
			}
		}
		for p := lo; p <= hi; p++ {
			out = append(out, int32(p))
		}
	}
	return out, nil
}

// runDiff audits through the library and renders the report; the exit
// code judges the verdict, or with --baseline what is new since.
func runDiff(ctx context.Context, o diffOptions, src *openedSource, w io.Writer) error {
	props, err := properties(o.source)
	if err != nil {
		return err
	}
	rep, err := diff.Diff(ctx, src.Evidence, o.auditOptions(props))
	if err != nil {
		return err
	}
	if o.inspect != nil {
		o.inspect(rep)
	}
	if o.SaveSpec != "" {
		if rep.InferredSpec == "" {
			// the audit ran (what needs no spec): its report and verdict stand
			fmt.Fprintf(cmp.Or[io.Writer](o.stderr, io.Discard), "kaudit: --save-spec: no spec could be inferred from the evidence, %s not written (the report's missing evidence says why)\n", o.SaveSpec)
		} else if err := writeAtomic(o.SaveSpec, o.Force, func(w io.Writer) error { _, err := io.WriteString(w, rep.InferredSpec); return err }); err != nil {
			return fmt.Errorf("write the inferred spec: %w", err)
		}
	}
	ropts := report.Options{KafkaVersion: o.KafkaVersion, StreamsVersion: o.StreamsVersion, Wide: o.Wide, Width: o.Width, MinSeverity: o.MinSeverity}
	if o.Baseline != "" {
		prev, err := readReport(o.Baseline)
		if err != nil {
			return err
		}
		combine.Since(prev, rep, o.Baseline) // the report says what the exit code judges
	}
	if !o.started.IsZero() {
		ropts.Duration = time.Since(o.started)
	}
	ropts.Provenance = provenance(o.args, o.SpecFile)
	if o.SaveSpec != "" && rep.InferredSpec != "" {
		ropts.Provenance.SavedSpec = o.SaveSpec
	}
	if len(o.source.Bootstrap) > 0 {
		ropts.ReplayBootstrap = strings.Join(o.source.Bootstrap, ",")
		ropts.ReplayFlags, ropts.ReplayNotes = kcatFlags(props)
	}
	if err := writeReport(o.Outputs, rep, ropts, w); err != nil {
		return err
	}
	return verdictResult(rep.ExitVerdict())
}
