package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/statedir"
	"github.com/kaudit/kaudit/audit/topology"
	"github.com/kaudit/kaudit/report"
)

// diffOptions are kaudit diff's flags.
type diffOptions struct {
	source           sourceOptions
	AppID            string
	TopologyFile     string
	SpecFile         string
	StateDir         string
	Format           string
	Output           string
	Since, Until     time.Time
	since, until     string // as given: resolved against the source's clock
	Baseline         string // a previous JSON report
	BaselineSnapshot string
	KafkaVersion     string
	StreamsVersion   string
	Outage           time.Duration
	Partitions       []int32
	CrossCheck       bool
	Concurrency      int
	Wide             bool // --wide: the table unwrapped
	Width            int  // the terminal's width, 0 for none
	started          time.Time
	args             []string // the command line, for the provenance
	MemoryBudget     int64    // bytes; 0: no bound
	SpillDir         string   // where tables over the budget spill
	// progress, if set, draws progress bars; log, if set, tells the user
	// what the audit does that is not evidence (a table spilled to disk)
	progress audit.Progress
	log      func(string)
	// inspect, when set, sees the finished report (the demo checks it
	// against its ground truth).
	inspect func(*audit.Report)
}

func diffFlags() []cli.Flag {
	flags := append(sourceFlags(), serdeFlags()...)
	flags = append(flags, txnFlags()...)
	return append(flags,
		&cli.StringFlag{Name: "app-id", Usage: "the Streams `application.id` (default: the spec's)", EnvVars: env("app-id")},
		&cli.StringFlag{Name: "topology", Usage: "Topology#describe() text `FILE`", EnvVars: env("topology")},
		&cli.StringFlag{Name: "spec", Usage: "kaudit.yaml `FILE`: select_key, reducers, joiners (kaudit init writes a draft)", EnvVars: env("spec")},
		&cli.StringFlag{Name: "state-dir", Usage: "a Streams state.dir `DIR` to check .checkpoint files against the changelogs", EnvVars: env("state-dir")},
		&cli.StringFlag{Name: "format", Usage: "md, html, table, json, csv or prom (default: table, or md or html when --output ends in .md or .html)", EnvVars: env("format")},
		&cli.StringFlag{Name: "output", Usage: "write the report to `FILE` (written whole or not at all)", EnvVars: env("output")},
		&cli.StringFlag{Name: "since", Usage: "judge only source records from `DURATION` ago or TIME (RFC 3339); earlier ones still fold into state", EnvVars: env("since")},
		&cli.StringFlag{Name: "until", Usage: "judge only source records before `TIME` (RFC 3339) or DURATION ago", EnvVars: env("until")},
		&cli.StringFlag{Name: "baseline", Usage: "a previous JSON `REPORT`: report and exit on what is new since", EnvVars: env("baseline")},
		&cli.StringFlag{Name: "baseline-snapshot", Usage: "an earlier capture `DIR`: records it holds that are gone now are truncated", EnvVars: env("baseline-snapshot")},
		&cli.StringFlag{Name: "kafka-version", Usage: "the brokers' Kafka `VERSION`, to judge known broker issues", EnvVars: env("kafka-version")},
		&cli.StringFlag{Name: "streams-version", Usage: "the app's Kafka Streams client `VERSION`, to judge known Streams issues", EnvVars: env("streams-version")},
		&cli.DurationFlag{Name: "outage", Usage: "how long the brokers were down: topics whose retention is shorter are a config risk", EnvVars: env("outage")},
		&cli.StringFlag{Name: "partitions", Usage: "audit only these task partitions, e.g. `0-5` or 0,3 (a shard; see kaudit merge)", EnvVars: env("partitions")},
		&cli.BoolFlag{Name: "no-cross-check", Usage: "skip comparing each partition's derived read_committed view with the broker's", EnvVars: env("no-cross-check")},
		&cli.IntFlag{Name: "concurrency", Value: runtime.GOMAXPROCS(0), Usage: "read and decode up to `N` partitions at once, ahead of the audit (1: one reader)", EnvVars: env("concurrency")},
		&cli.StringFlag{Name: "memory-budget", Value: "1GiB", Usage: "keep kaudit's memory near `SIZE` (e.g. 512MiB, 8GiB; 0: no bound): a table whose records need more is spilled to disk and checked a bucket of keys at a time", EnvVars: env("memory-budget")},
		&cli.StringFlag{Name: "spill-dir", Usage: "where tables over --memory-budget spill (default: the system's temporary directory)", EnvVars: env("spill-dir")},
		wideFlag(),
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
			o.started, o.args = time.Now(), provenanceArgs(c)
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
	o := diffOptions{source: readSourceOptions(c), AppID: c.String("app-id"), TopologyFile: c.String("topology"), SpecFile: c.String("spec"),
		StateDir: c.String("state-dir"), Output: c.String("output"), Baseline: c.String("baseline"), BaselineSnapshot: c.String("baseline-snapshot"),
		KafkaVersion: c.String("kafka-version"), StreamsVersion: c.String("streams-version"), Outage: c.Duration("outage"), CrossCheck: !c.Bool("no-cross-check"),
		Concurrency: c.Int("concurrency"), SpillDir: c.String("spill-dir"), Wide: c.Bool("wide"), Width: terminalWidth(c.App.Writer)}
	o.Format = report.FormatFor(o.Output, c.String("format"))
	switch o.Format {
	case "md", "html", "table", "json", "csv", "prom":
	default:
		return o, usagef("--format %q: want md, html, table, json, csv or prom", o.Format)
	}
	var err error
	o.since, o.until = c.String("since"), c.String("until")
	if o.Since, err = parseWhen(c.String("since"), now); err != nil {
		return o, usagef("--since: %w", err)
	}
	if o.Until, err = parseWhen(c.String("until"), now); err != nil {
		return o, usagef("--until: %w", err)
	}
	if o.Partitions, err = parsePartitions(c.String("partitions")); err != nil {
		return o, usagef("--partitions: %w", err)
	}
	if o.Concurrency < 1 || o.Concurrency > 64 {
		return o, usagef("--concurrency %d: want 1 to 64", o.Concurrency)
	}
	if o.MemoryBudget, err = parseSize(c.String("memory-budget")); err != nil {
		return o, usagef("--memory-budget: %w", err)
	}
	if o.AppID == "" && o.SpecFile == "" {
		return o, usagef("kaudit diff needs --app-id ID (or a --spec that names app_id)")
	}
	var outs []string
	if o.Output != "" {
		outs = append(outs, o.Output, strings.TrimSuffix(o.Output, filepath.Ext(o.Output))+"-timeline.svg")
	}
	if o.SpillDir != "" {
		outs = append(outs, filepath.Join(o.SpillDir, "spill"))
	}
	dirs := append([]string{o.source.Snapshot, o.StateDir, o.BaselineSnapshot}, o.source.LogDirs...)
	if err := checkWrites(outs, dirs, []string{o.SpecFile, o.TopologyFile, o.Baseline}); err != nil {
		return o, err
	}
	return o, nil
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

// limitMemory sets the Go runtime's soft memory limit to the budget, so
// that the garbage collector works harder rather than let the heap pass
// it; an explicit GOMEMLIMIT wins.
func limitMemory(budget int64) {
	if budget > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(budget)
	}
}

// parseWhen reads a duration ago or an RFC 3339 time; "" is zero.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is neither a duration (90m) nor an RFC 3339 time", s)
	}
	return t, nil
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

// plan is what diff audits: the engine's pipeline and the serdes.
type plan struct {
	pipeline  *reconcile.Pipeline
	discovery *topology.Discovery
	keySerde  string
	valSerde  string
	topics    map[string]codec.TopicSerdes
	warnings  []string
	spec      *topology.Spec // nil without --spec
	resolved  *topology.Plan
	unjudged  []string // why tables and joins are not judged (checkSpec)
}

// buildPlan resolves the spec (or, without one, the keyless checks) on
// what the source holds.
func buildPlan(ctx context.Context, o diffOptions, src *openedSource) (*plan, error) {
	var spec *topology.Spec
	if o.SpecFile != "" {
		var err error
		if spec, err = topology.LoadSpec(o.SpecFile); err != nil {
			return nil, usageError{err}
		}
		if o.AppID == "" {
			o.AppID = spec.AppID
		}
		if o.TopologyFile == "" {
			o.TopologyFile = spec.TopologyPath()
		}
	}
	var topo *topology.Topology
	switch {
	case o.TopologyFile != "":
		var err error
		if topo, err = loadTopology(o.TopologyFile); err != nil {
			return nil, err
		}
	default:
		if s, ok := src.Source.(interface{ Topology() string }); ok && s.Topology() != "" {
			t, err := topology.ParseString(s.Topology())
			if err != nil {
				return nil, notRunError{fmt.Errorf("parse the snapshot's topology: %w", err)}
			}
			topo = t
		}
	}
	d, err := topology.Discover(ctx, src, o.AppID, topo)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, notRunError{fmt.Errorf("discover app %s: %w", o.AppID, err)}
	}
	pl := &plan{discovery: d, keySerde: "string", topics: map[string]codec.TopicSerdes{}}
	if spec == nil {
		p := &reconcile.Pipeline{AppID: o.AppID, Keyless: true}
		for _, t := range d.Topics {
			if !t.Exists {
				continue
			}
			switch t.Role {
			case topology.RoleSource:
				p.Tables = append(p.Tables, reconcile.Table{Name: t.Name, Source: t.Name})
			case topology.RoleRepartition:
				p.Tables = append(p.Tables, reconcile.Table{Name: t.Name, Repartition: t.Name})
			case topology.RoleChangelog:
				p.Tables = append(p.Tables, reconcile.Table{Name: t.Name, Changelog: t.Name})
			case topology.RoleOutput:
				p.Outputs = append(p.Outputs, t.Name)
			}
		}
		pl.pipeline = p
		return pl, nil
	}
	rp, err := topology.Resolve(spec, topo, o.AppID)
	if err != nil {
		return nil, usageError{err}
	}
	if err := spec.CheckPlan(d, rp); err != nil {
		pl.warnings = append(pl.warnings, err.Error())
	}
	pl.warnings = append(pl.warnings, rp.Warnings...)
	pl.keySerde, pl.valSerde = first(spec.Serdes.Key, "string"), spec.Serdes.Value
	for topic, sd := range rp.TopicSerdes() {
		pl.topics[topic] = codec.TopicSerdes{Key: sd.Key, Value: sd.Value}
	}
	pl.pipeline = reconcile.FromPlan(rp, pl.keySerde)
	pl.spec, pl.resolved = spec, rp
	return pl, nil
}

// sourceClock is the time the evidence describes: a snapshot's capture
// time, a log dir's last write; now for a live cluster.
func sourceClock(src audit.Source) (time.Time, string) {
	if c, ok := src.(audit.Clock); ok {
		if t := c.Now(); !t.IsZero() {
			return t, "the source's clock"
		}
	}
	return time.Now(), "now"
}

// windowNote says which window --since and --until judged, from which
// clock, and how many inputs fell inside it (from the timeline, by
// minute: the minutes the window's edges cut count as a range).
func windowNote(o diffOptions, clock time.Time, clockName string, tl []audit.Minute) string {
	from, to := "the first input", "the last"
	if !o.Since.IsZero() {
		from = o.Since.UTC().Format(time.RFC3339)
	}
	if !o.Until.IsZero() {
		to = o.Until.UTC().Format(time.RFC3339)
	}
	lo, hi := int64(0), int64(0)
	for _, m := range tl {
		start, end := m.Start, m.Start+60_000
		sinceMs, untilMs := int64(math.MinInt64), int64(math.MaxInt64)
		if !o.Since.IsZero() {
			sinceMs = o.Since.UnixMilli()
		}
		if !o.Until.IsZero() {
			untilMs = o.Until.UnixMilli()
		}
		switch {
		case start >= sinceMs && end <= untilMs:
			lo += m.Produced
			hi += m.Produced
		case end > sinceMs && start < untilMs:
			hi += m.Produced // the window cuts this minute
		}
	}
	n := fmt.Sprintf("%d inputs fell inside it", lo)
	if hi != lo {
		n = fmt.Sprintf("%d to %d inputs fell inside it (the window cuts a minute of the timeline)", lo, hi)
	}
	if hi == 0 {
		n = "no input fell inside it: no record was judged, so a clean verdict says nothing about this window"
	}
	return fmt.Sprintf("judged the inputs with timestamps from %s to %s (durations count back from %s, %s); %s",
		from, to, clockName, clock.UTC().Format(time.RFC3339), n)
}

func runDiff(ctx context.Context, o diffOptions, src *openedSource, w io.Writer) error {
	clock, clockName := sourceClock(src.Source)
	var err error
	if o.since != "" {
		if o.Since, err = parseWhen(o.since, clock); err != nil {
			return usagef("--since: %w", err)
		}
	}
	if o.until != "" {
		if o.Until, err = parseWhen(o.until, clock); err != nil {
			return usagef("--until: %w", err)
		}
	}
	pl, err := buildPlan(ctx, o, src)
	if err != nil {
		return err
	}
	if o.AppID == "" {
		o.AppID = pl.pipeline.AppID
	}
	props, err := properties(o.source)
	if err != nil {
		return err
	}
	dec, err := openDecoderFor(o.source, pl, props, snapshotSchemas(src))
	if err != nil {
		return err
	}
	if err := checkSpec(ctx, pl, src, dec, o.log); err != nil {
		return err
	}
	rep, err := reconcile.Run(ctx, src.Source, pl.pipeline, reconcile.Options{Decoder: dec, MaxTxnTimeout: o.source.MaxTxnTimeout,
		Since: o.Since, Until: o.Until, Partitions: o.Partitions, CrossCheck: o.CrossCheck, Concurrency: o.Concurrency, Progress: o.progress, Log: o.log,
		MemoryBudget: o.MemoryBudget / tableShare, SpillDir: o.SpillDir})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return notRunError{err}
	}
	rep.Findings = append(rep.Findings, src.problems...)
	addUnjudged(rep, pl.unjudged)
	rep.Findings = append(rep.Findings, topology.ConfigRisksFor(pl.discovery, o.Outage)...)
	for _, u := range pl.discovery.Unknown {
		rep.Summary.Notes = append(rep.Summary.Notes, u)
	}
	rep.Summary.Notes = append(rep.Summary.Notes, pl.warnings...)
	if !o.Since.IsZero() || !o.Until.IsZero() {
		rep.Summary.Notes = append(rep.Summary.Notes, windowNote(o, clock, clockName, rep.Timeline))
	}
	rep.Summary.Notes = append(rep.Summary.Notes, src.notes...)
	rep.Summary.Notes = append(rep.Summary.Notes, groupNotes(ctx, src, o.AppID)...)
	if o.StateDir != "" {
		if err := checkStateDir(o, rep); err != nil {
			return err
		}
	}
	if o.BaselineSnapshot != "" {
		if err := compareBaseline(ctx, o, src, rep); err != nil {
			return err
		}
	}
	rep.Finish()
	if o.inspect != nil {
		o.inspect(rep)
	}
	verdict := rep.Summary.Verdict
	if o.Baseline != "" {
		prev, err := readReport(o.Baseline)
		if err != nil {
			return err
		}
		fresh := report.NewSince(prev, rep)
		rep.Summary.Notes = append(rep.Summary.Notes, fmt.Sprintf("baseline %s: %d of %d findings are new since that audit; the exit code judges the new ones", o.Baseline, len(fresh), len(rep.Findings)))
		verdict = audit.Judge(fresh, rep.Summary.Missing)
	}
	ropts := report.Options{KafkaVersion: o.KafkaVersion, StreamsVersion: o.StreamsVersion, Wide: o.Wide, Width: o.Width}
	if o.Baseline != "" {
		ropts.Verdict = verdict // the header and the metrics say what the exit code judged
	}
	if !o.started.IsZero() {
		ropts.Duration = time.Since(o.started)
	}
	ropts.Provenance = provenance(o.args, o.SpecFile)
	if len(o.source.Bootstrap) > 0 {
		ropts.ReplayBootstrap = strings.Join(o.source.Bootstrap, ",")
		ropts.ReplayFlags, ropts.ReplayNotes = kcatFlags(props)
	}
	if err := writeReport(o, rep, ropts, w); err != nil {
		return err
	}
	return verdictResult(verdict)
}

// provenance is the report's provenance: kaudit's version, the redacted
// command line, the spec and its sha256.
func provenance(args []string, specFile string) report.Provenance {
	p := report.Provenance{Version: versionString(), SpecFile: specFile}
	if len(args) > 0 {
		p.CommandLine = commandLine(append([]string{"kaudit"}, args[1:]...))
	}
	if specFile != "" {
		if b, err := os.ReadFile(specFile); err == nil {
			p.SpecSHA256 = fmt.Sprintf("%x", sha256.Sum256(b))
		}
	}
	return p
}

// notRunMetrics writes, for a --format prom --output FILE run that could
// not run, metrics that say so (kaudit_run_success 0), so that a textfile
// collector does not keep serving the last run's verdict; it returns err.
func notRunMetrics(o diffOptions, err error) error {
	var nr notRunError
	if !errors.As(err, &nr) || o.Format != "prom" || o.Output == "" || o.Output == "-" {
		return err
	}
	if werr := writeAtomic(o.Output, func(w io.Writer) error { return report.PromNotRun(w, o.AppID, time.Now(), time.Since(o.started)) }); werr != nil {
		return fmt.Errorf("%w (and %w)", err, werr)
	}
	return err
}

// openDecoderFor builds the decoder from the flags, the spec's serdes and
// the per-table overrides.
func openDecoderFor(so sourceOptions, pl *plan, props map[string]string, schemas map[int32]string) (*codec.Codec, error) {
	c, _, err := openDecoderTopics(so, pl.keySerde, first(pl.valSerde, so.ValueSerde), pl.topics, props, schemas)
	return c, err
}

func checkStateDir(o diffOptions, rep *audit.Report) error {
	st, err := statedir.Read(o.StateDir, o.AppID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("read --state-dir: %w", err)
	case err != nil:
		// a state dir that cannot be read is missing evidence
		rep.Summary.Missing = append(rep.Summary.Missing, "state dir: "+err.Error())
		return nil
	}
	offsets := map[audit.TopicPartition]audit.PartitionOffsets{}
	for _, c := range rep.Cut {
		if c.Role == "changelog" {
			offsets[audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}] = audit.PartitionOffsets{LogStart: c.LogStart, LSO: c.LSO, HW: c.HW}
		}
	}
	rep.Findings = append(rep.Findings, statedir.Check(st, offsets, nil)...)
	return nil
}

func compareBaseline(ctx context.Context, o diffOptions, src *openedSource, rep *audit.Report) error {
	earlier, err := snapshot.Open(o.BaselineSnapshot)
	if err != nil {
		return usagef("open --baseline-snapshot: %w", err)
	}
	var tps []audit.TopicPartition
	var absent []string
	for _, c := range rep.Cut {
		if _, err := earlier.Partitions(ctx, c.Topic); err != nil {
			if !slices.Contains(absent, c.Topic) {
				absent = append(absent, c.Topic)
			}
			continue
		}
		tps = append(tps, audit.TopicPartition{Topic: c.Topic, Partition: c.Partition})
	}
	if len(absent) > 0 {
		rep.Summary.Notes = append(rep.Summary.Notes, fmt.Sprintf("the baseline snapshot does not hold %s: those topics are not compared with it", strings.Join(absent, ", ")))
	}
	fs, err := snapshot.Baseline(ctx, earlier, src, tps)
	if err != nil {
		return notRunError{fmt.Errorf("compare with the baseline snapshot: %w", err)}
	}
	rep.Findings = append(rep.Findings, fs...)
	return nil
}

func readReport(path string) (*audit.Report, error) {
	f, err := openInput(path, maxReportBytes)
	if err != nil {
		return nil, usagef("read --baseline: %w", err)
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		return nil, usagef("read --baseline %s: %w", path, err)
	}
	return r, nil
}

// writeReport renders to stdout, or to --output through a temporary file
// renamed into place, so that no half-written report is left as if whole.
// A Markdown report gets its timeline picture beside it.
func writeReport(o diffOptions, rep *audit.Report, ropts report.Options, stdout io.Writer) error {
	if o.Output == "" || o.Output == "-" {
		return report.Render(stdout, o.Format, rep, ropts)
	}
	if o.Format == "md" && len(rep.Timeline) > 0 {
		svg := strings.TrimSuffix(o.Output, filepath.Ext(o.Output)) + "-timeline.svg"
		if err := writeAtomic(svg, func(w io.Writer) error { return report.TimelineSVG(w, rep) }); err != nil {
			return err
		}
		ropts.SVGPath = filepath.Base(svg)
	}
	return writeAtomic(o.Output, func(w io.Writer) error { return report.Render(w, o.Format, rep, ropts) })
}

func writeAtomic(path string, write func(io.Writer) error) error {
	tmp, err := createTemp(path)
	if err != nil {
		return usagef("write %s: %w", path, errors.Unwrap(err))
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, errors.Unwrap(err))
	}
	return nil
}

// createTemp creates a new file beside path, with mode 0666 less the
// umask as any file a command writes (os.CreateTemp's is 0600).
func createTemp(path string) (*os.File, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("create a temporary file beside %s: %w", path, fs.ErrExist)
}
