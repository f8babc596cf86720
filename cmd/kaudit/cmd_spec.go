package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/topology"
)

// specCheck is what checking a spec against the evidence found.
type specCheck struct {
	notes    []string
	keys     []infer.Verdict // select_key, per table
	tables   []infer.Verdict // reducers, per table
	joins    []infer.Verdict
	unjudged []string
	unread   error // the evidence could not be read
}

// checkSpecEvidence reads the evidence a resolved spec needs and checks
// it: fields named by expressions that the values lack are a spec error
// (exit 2); reducers and join values the evidence contradicts are
// reported unjudged.
func checkSpecEvidence(ctx context.Context, spec *topology.Spec, rp *topology.Plan, src audit.RecordSource, dec *codec.Codec) (*specCheck, error) {
	ev, err := infer.Load(ctx, src, dec, rp, 0)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return &specCheck{notes: []string{"the spec was not checked against the evidence: " + err.Error()}, unread: err}, nil
	}
	c := &specCheck{}
	notes, err := infer.CheckFields(spec, rp, ev)
	if err != nil {
		return nil, usageError{fmt.Errorf("the spec does not describe the app's records:\n%w", err)}
	}
	c.notes = notes
	for _, pt := range rp.Tables {
		k := infer.CheckSelectKey(pt, ev)
		c.keys = append(c.keys, k)
		v := infer.CheckTable(pt, ev)
		c.tables = append(c.tables, v)
		for _, x := range []infer.Verdict{k, v} {
			if x.Unjudged != "" {
				c.unjudged = append(c.unjudged, x.Unjudged)
			}
		}
	}
	for _, pj := range rp.Joins {
		v := infer.CheckJoin(pj, rp, ev, outputOrder(ctx, ev.Topics[pj.Output], dec))
		c.joins = append(c.joins, v)
		if v.Unjudged != "" {
			c.unjudged = append(c.unjudged, v.Unjudged)
		}
	}
	return c, nil
}

// outputOrder is the field order of a topic's first record value.
func outputOrder(ctx context.Context, t *infer.Topic, dec *codec.Codec) []string {
	if t == nil {
		return nil
	}
	for _, r := range t.Records() {
		if r.RawValue != nil {
			return infer.FieldOrder(r.RawValue, func(id int32) (string, bool) {
				s, err := dec.Schema(ctx, id)
				return s.Schema, err == nil
			})
		}
	}
	return nil
}

// checkSpec runs the spec check of kaudit diff before it judges: the
// tables and joins the evidence contradicts are not judged.
func checkSpec(ctx context.Context, pl *plan, src *openedSource, dec *codec.Codec, log func(string)) error {
	if pl.spec == nil || pl.resolved == nil {
		return nil
	}
	c, err := checkSpecEvidence(ctx, pl.spec, pl.resolved, src, dec)
	if err != nil {
		return err
	}
	pl.warnings = append(pl.warnings, c.notes...)
	for i, v := range c.tables {
		if k := c.keys[i]; k.Unjudged != "" {
			v = k
		}
		if v.Unjudged == "" {
			continue
		}
		t := &pl.pipeline.Tables[i]
		t.Unjudged = v.Unjudged
		if log != nil {
			log(v.Unjudged)
		}
	}
	for i, v := range c.joins {
		if v.Unjudged == "" {
			continue
		}
		j := &pl.pipeline.Joins[i]
		j.Unjudged = v.Unjudged
		if log != nil {
			log(v.Unjudged)
		}
	}
	pl.unjudged = c.unjudged
	return nil
}

// addUnjudged puts the reasons why tables and joins were not judged into
// the report's missing evidence (the verdict is then at best incomplete),
// once.
func addUnjudged(rep *audit.Report, unjudged []string) {
	for _, u := range unjudged {
		found := false
		for _, m := range rep.Summary.Missing {
			if strings.Contains(m, u) {
				found = true
				break
			}
		}
		if !found {
			rep.Summary.Missing = append(rep.Summary.Missing, u)
		}
	}
}

func specCommand() *cli.Command {
	check := &cli.Command{
		Name:      "check",
		Usage:     "check a spec against the evidence: how well each select_key, reducer and join value explains it",
		UsageText: "kaudit spec check --spec FILE [source] [--topology FILE]",
		Description: "Reads the evidence a spec needs and says, per table and join, how many repartition copies its\n" +
			"select_key explains, how many keys' changelog histories its reducer explains (and each alternative:\n" +
			"latest, count, sum(F) per numeric field), how many output keys its join value explains, and what\n" +
			"it would change. kaudit diff runs the same check before it judges and leaves unjudged what fails it.\n\n" +
			"Exit status: 0 when the spec explains the evidence, 2 when a field it names does not exist or a\n" +
			"table or join would not be judged, 3 when the evidence could not be read.",
		Flags: append(append(sourceFlags(), serdeFlags()...),
			&cli.StringFlag{Name: "spec", Usage: "kaudit.yaml `FILE`", EnvVars: env("spec")},
			&cli.StringFlag{Name: "app-id", Usage: "the Streams `application.id` (default: the spec's)", EnvVars: env("app-id")},
			&cli.StringFlag{Name: "topology", Usage: "Topology#describe() text `FILE`", EnvVars: env("topology")},
		),
		Action: func(c *cli.Context) error {
			if c.String("spec") == "" {
				return usagef("kaudit spec check needs --spec FILE")
			}
			o := diffOptions{source: readSourceOptions(c), AppID: c.String("app-id"), TopologyFile: c.String("topology"), SpecFile: c.String("spec")}
			src, err := openSource(c.Context, "spec check", readSourceOptions(c))
			if err != nil {
				return err
			}
			defer src.close()
			return runSpecCheck(c.Context, o, src, c.App.Writer)
		},
	}
	return &cli.Command{Name: "spec", Usage: "work with a kaudit.yaml", Subcommands: []*cli.Command{check}}
}

// runSpecCheck prints how well a spec explains the evidence.
func runSpecCheck(ctx context.Context, o diffOptions, src *openedSource, w io.Writer) error {
	pl, err := buildPlan(ctx, o, src)
	if err != nil {
		return err
	}
	props, err := properties(o.source)
	if err != nil {
		return err
	}
	dec, err := openDecoderFor(o.source, pl, props, snapshotSchemas(src))
	if err != nil {
		return err
	}
	c, err := checkSpecEvidence(ctx, pl.spec, pl.resolved, src, dec)
	if err != nil {
		return err
	}
	if c.unread != nil {
		return notRunError{fmt.Errorf("read the evidence: %w", c.unread)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kaudit spec check: %s against %s\n", pl.spec.File, src.Describe())
	line := func(what string, v infer.Verdict, field string) {
		switch {
		case v.Keys == 0 && v.Note == "":
			return
		case v.Keys == 0 || (v.Note != "" && v.Unjudged == ""):
			fmt.Fprintf(&b, "%s: %s: %s\n", what, field, v.Note)
			return
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", what, field, v.Summary())
		if v.Unjudged != "" {
			change := ""
			if len(v.Order) > 0 && v.Order[0] != v.Spec {
				change = fmt.Sprintf("; it would say %s: %s", field, v.Order[0])
			}
			fmt.Fprintf(&b, "  NOT JUDGED by kaudit diff%s\n", change)
		}
	}
	for i, pt := range pl.resolved.Tables {
		line("table "+pt.Name, c.keys[i], "select_key")
		line("table "+pt.Name, c.tables[i], "reduce")
	}
	for i, pj := range pl.resolved.Joins {
		line("join "+pj.Output, c.joins[i], "value")
	}
	for _, n := range c.notes {
		fmt.Fprintf(&b, "NOTE: %s\n", n)
	}
	if len(c.unjudged) == 0 {
		b.WriteString("the spec explains the evidence\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(c.unjudged) > 0 {
		return usagef("%d of the spec's tables and joins do not explain the evidence: kaudit diff would not judge them", len(c.unjudged))
	}
	return nil
}
