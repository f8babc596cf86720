package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/diff"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit/infer"
)

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
			&cli.StringFlag{Name: "app-id", Aliases: []string{"group"}, Usage: "the Streams `application.id` (default: the spec's)", EnvVars: env("app-id")},
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
	return &cli.Command{Name: "spec", Usage: "work with a kaudit.yaml", ArgsUsage: "COMMAND", Subcommands: []*cli.Command{check},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return unknownCommand(c.Command.Subcommands, c.Args().First(), "spec ")
			}
			return cli.ShowSubcommandHelp(c)
		}}
}

// runSpecCheck prints how well a spec explains the evidence.
func runSpecCheck(ctx context.Context, o diffOptions, src *openedSource, w io.Writer) error {
	props, err := properties(o.source)
	if err != nil {
		return err
	}
	s, err := diff.Prepare(ctx, src.Evidence, o.auditOptions(props))
	if err != nil {
		return err
	}
	c, err := diff.CheckSpec(ctx, s, src.Source)
	if err != nil {
		return err
	}
	if c.Unread != nil {
		return notRunError{Err: fmt.Errorf("read the evidence: %w", c.Unread)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kaudit spec check: %s against %s\n", s.Spec.File, src.Source.Describe())
	var unchecked []string // what the evidence did not let the check test
	line := func(what string, v infer.Verdict, field string) {
		switch {
		case v.Keys == 0 && v.Unjudged != "":
			fmt.Fprintf(&b, "%s: %s\n  NOT JUDGED by kaudit diff\n", what, v.Unjudged)
			return
		case v.Keys == 0 && v.Note == "":
			return
		case v.Keys == 0 || (v.Note != "" && v.Unjudged == ""):
			fmt.Fprintf(&b, "%s: %s: %s\n", what, field, v.Note)
			if !strings.Contains(v.Note, "only presence is checked") {
				unchecked = append(unchecked, what+" "+field)
			}
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
	for i, pt := range s.Resolved.Tables {
		line("table "+pt.Name, c.Keys[i], "select_key")
		line("table "+pt.Name, c.Tables[i], "reduce")
	}
	for i, pj := range s.Resolved.Joins {
		line("join "+pj.Output, c.Joins[i], "value")
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "NOTE: %s\n", n)
	}
	switch {
	case len(c.Unjudged) == 0 && len(unchecked) == 0:
		b.WriteString("the spec explains the evidence\n")
	case len(c.Unjudged) == 0:
		fmt.Fprintf(&b, "the spec explains what the evidence let the check test; not checked: %s\n", strings.Join(unchecked, ", "))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if len(c.Unjudged) > 0 {
		return usagef("%d of the spec's tables and joins do not explain the evidence: kaudit diff would not judge them", len(c.Unjudged))
	}
	if len(unchecked) > 0 {
		// as kaudit diff says incomplete: the check ran, the evidence was short
		return verdictResult(audit.VerdictIncomplete)
	}
	return nil
}
