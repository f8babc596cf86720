package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/topology"
)

// appPlaceholder stands for the application.id when none is given: the
// internal topic names it prefixes are then shown as templates.
const appPlaceholder = "<app>"

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
		&cli.StringFlag{Name: "app-id", Usage: "the Streams application.id `ID`", EnvVars: env("app-id")},
		&cli.StringFlag{Name: "format", Value: "table", Usage: "table, mermaid or json", EnvVars: env("format")},
		&cli.DurationFlag{Name: "outage", Usage: "flag source and repartition topics whose retention.ms is shorter than this `DURATION`", EnvVars: env("outage")},
	}
	return &cli.Command{
		Name:      "topology",
		Usage:     "the app's DAG as a table and a Mermaid flowchart",
		UsageText: "kaudit topology --topology FILE [--app-id ID] [source] [--format table|mermaid|json]\n   kaudit topology --app-id ID source",
		Description: "Parses Topology#describe() text and shows the app's topics, stores with their changelogs,\n" +
			"repartition topics, joins and output topics, internal topics under their full <app>- names.\n" +
			"With a source (--bootstrap-server, --snapshot or --log-dir) it adds partition counts and\n" +
			"config-risk findings; with a source and no topology it shows what naming conventions allow.\n\n" + exitStatusHelp,
		Flags: append(flags, sourceFlags()...),
		Action: func(c *cli.Context) error {
			o := topologyOptions{
				TopologyFile: c.String("topology"),
				AppID:        c.String("app-id"),
				Format:       c.String("format"),
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

// topologyDoc is kaudit topology's JSON document.
type topologyDoc struct {
	AppID     string               `json:"app_id"`
	Source    string               `json:"source,omitempty"`
	Layout    *topology.Layout     `json:"layout"`
	Discovery *discovery.Discovery `json:"discovery,omitempty"`
	Findings  []audit.Finding      `json:"findings"`
	Topology  *topology.Topology   `json:"topology,omitempty"`
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
	}
	appID := o.AppID
	if appID == "" {
		appID = appPlaceholder
	}
	doc := topologyDoc{AppID: appID, Topology: topo, Findings: []audit.Finding{}}
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
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return writeTopologyTable(w, doc)
}

func writeTopologyTable(w io.Writer, doc topologyDoc) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	l, d := doc.Layout, doc.Discovery
	if doc.Source != "" {
		fmt.Fprintf(tw, "app %s, %s\n\n", doc.AppID, doc.Source)
	} else {
		fmt.Fprintf(tw, "app %s\n\n", doc.AppID)
	}
	info := map[string]discovery.DiscoveredTopic{}
	if d != nil {
		for _, t := range d.Topics {
			info[t.Name] = t
		}
	}
	fmt.Fprintln(tw, "TOPIC\tROLE\tPARTITIONS\tSUB-TOPOLOGIES\tSTORE")
	for _, u := range l.Topics {
		parts := "-"
		if t, ok := info[u.Name]; ok {
			if t.Exists {
				parts = strconv.Itoa(int(t.Partitions))
			} else {
				parts = "missing"
			}
		}
		name := u.Name
		if u.Pattern {
			name = "/" + name + "/ (pattern)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, u.Role, parts, ints(u.SubTopologies), dash(u.Store))
	}
	if len(l.Stores) > 0 {
		fmt.Fprintln(tw, "\nSTORE\tCHANGELOG\tFED BY\tTHROUGH\tWRITTEN BY")
		for _, s := range l.Stores {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, s.Changelog, dash(strings.Join(s.Sources, ", ")), dash(strings.Join(s.Repartitions, ", ")), dash(strings.Join(s.Writers, ", ")))
		}
	}
	if len(l.Joins) > 0 {
		fmt.Fprintln(tw, "\nJOIN\tKIND\tLEFT STORES\tRIGHT STORES\tTHEN\tOUTPUT")
		for _, j := range l.Joins {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Node, j.Kind, dash(strings.Join(j.LeftStores, ", ")), dash(strings.Join(j.RightStores, ", ")), dash(j.Next), dash(strings.Join(j.Outputs, ", ")))
		}
	}
	if d != nil {
		if d.Group != nil {
			fmt.Fprintf(tw, "\nconsumer group %s: state %s, %d members, %d partitions committed\n", d.Group.Group, dash(d.Group.State), d.Group.Members, len(d.Group.Offsets))
		}
		if len(d.Transactions) > 0 {
			fmt.Fprintln(tw, "\nTRANSACTIONAL ID\tSTATE\tPRODUCER ID\tEPOCH")
			for _, t := range d.Transactions {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", t.TransactionalID, t.State, t.ProducerID, t.ProducerEpoch)
			}
		}
	}
	if len(doc.Findings) > 0 {
		fmt.Fprintln(tw, "\nFINDING\tTOPIC\tEXPECTED\tACTUAL\tWHY")
		for _, f := range doc.Findings {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Cause, f.Topic, dash(f.Expected), dash(f.Actual), f.Detail)
		}
	}
	var notes []string
	if d != nil {
		notes = d.Unknown
	} else {
		notes = l.Notes
	}
	if len(notes) > 0 {
		fmt.Fprintln(tw, "\nnot known:")
		for _, n := range notes {
			fmt.Fprintln(tw, "  - "+n)
		}
	}
	return tw.Flush()
}

func ints(l []int) string {
	if len(l) == 0 {
		return "-"
	}
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
