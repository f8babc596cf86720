package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/topology"
	"github.com/kaudit/kaudit/report"
)

// appPlaceholder stands for the application.id when none is given: the
// internal topic names it prefixes are then shown as templates.
const appPlaceholder = "<app>"

// topologyFormats are kaudit topology's formats.
var topologyFormats = []string{"table", "mermaid", "json"}

// topologyOptions are kaudit topology's flags.
type topologyOptions struct {
	TopologyFile string
	AppID        string
	Format       string // table, mermaid or json
	Outage       time.Duration
	// Problems are findings about the source itself (a snapshot file
	// whose hash does not match), printed with the config risks.
	Problems []audit.Finding
}

func topologyCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "topology", Usage: "Topology#describe() text `FILE`", EnvVars: env("topology")},
		&cli.StringFlag{Name: "app-id", Aliases: []string{"group"}, Usage: "the Streams application.id `ID`", EnvVars: env("app-id")},
		formatFlag("topology", "table", topologyFormats),
		&cli.DurationFlag{Name: "outage", Usage: "flag source and repartition topics whose retention.ms is shorter than this `DURATION`", EnvVars: env("outage")},
	}
	return &cli.Command{
		Name:      "topology",
		Usage:     "the app's DAG as a table (or a Mermaid flowchart, or JSON)",
		UsageText: "kaudit topology --topology FILE [--app-id ID] [source] [--format table|mermaid|json]\n   kaudit topology --app-id ID source",
		Description: "Parses Topology#describe() text and shows the app's topics, stores with their changelogs,\n" +
			"repartition topics, joins and output topics, internal topics under their full <app>- names.\n" +
			"With a source (--bootstrap-server, --snapshot or --log-dir) it adds partition counts and\n" +
			"config-risk findings; with a source and no topology it shows what naming conventions allow.\n\n" + showExitHelp,
		Flags: append(flags, sourceFlags()...),
		Action: func(c *cli.Context) error {
			format, err := readFormat(c, topologyFormats)
			if err != nil {
				return err
			}
			o := topologyOptions{
				TopologyFile: c.String("topology"),
				AppID:        c.String("app-id"),
				Format:       format,
				Outage:       c.Duration("outage"),
			}
			src, problems, closeSrc, err := topologySource(c)
			if err != nil {
				return err
			}
			defer closeSrc()
			o.Problems = problems
			return runTopology(c.Context, o, src, c.App.Writer)
		},
	}
}

// runTopology prints the app's layout; src may be nil.
func runTopology(ctx context.Context, o topologyOptions, src audit.Source, w io.Writer) error {
	switch o.Format {
	case "table", "mermaid", "json":
	default:
		return usagef("unknown --format %q: want table, mermaid or json", o.Format)
	}
	if o.TopologyFile == "" && (src == nil || o.AppID == "") {
		return usagef("kaudit topology needs --topology FILE, or --app-id ID with a source")
	}
	var topo *topology.Topology
	if o.TopologyFile != "" {
		var err error
		if topo, err = topology.ReadFile(o.TopologyFile); err != nil {
			return usageError{Err: err}
		}
	} else if text := audit.TopologyOf(src); text != "" {
		// a capture carries the topology it was given
		if t, err := topology.ParseString(text); err == nil {
			topo = t
		}
	}
	appID := o.AppID
	if appID == "" {
		appID = appPlaceholder
	}
	doc := report.TopologyDoc{AppID: appID, Topology: topo, Findings: []audit.Finding{}}
	if topo != nil {
		doc.Layout = topo.Layout(appID)
	}
	if src != nil {
		if o.AppID == "" {
			return usagef("a source needs --app-id")
		}
		d, err := discovery.Discover(ctx, src, appID, topo)
		if err != nil {
			return notRunError{Err: fmt.Errorf("discover %s: %w", appID, err)}
		}
		doc.Source = src.Describe()
		doc.Discovery = d
		doc.Layout = d.NamingLayout()
		doc.Findings = append(slices.Clone(o.Problems), discovery.ConfigRisksFor(d, o.Outage)...)
	}
	switch o.Format {
	case "mermaid":
		return doc.Layout.Mermaid(w)
	case "json":
		return report.TopologyJSON(w, doc)
	}
	return report.TopologyTable(w, doc)
}

// hasSource reports whether any flag chooses a source of evidence.
func hasSource(o sourceOptions) bool {
	return len(o.Bootstrap) > 0 || o.Snapshot != "" || len(o.LogDirs) > 0
}

// topologySource opens the source the flags choose, or returns nil when
// they choose none; problems are what opening it found wrong (a snapshot
// file whose hash does not match), and the func closes it.
func topologySource(c *cli.Context) (src audit.Source, problems []audit.Finding, closeSrc func(), err error) {
	if !hasSource(readSourceOptions(c)) {
		return nil, nil, func() {}, nil
	}
	s, err := openCliSource(c)
	if err != nil {
		return nil, nil, nil, err
	}
	return s.Source, s.Problems, s.close, nil
}
