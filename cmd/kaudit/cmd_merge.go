package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/combine"
	"github.com/kaudit/kaudit/report"
)

func mergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "merge the JSON reports of shards of one app (kaudit diff --partitions) into one report",
		UsageText: "kaudit merge a.json b.json … [--format md|html|csv|json|table|prom] [--output FILE]",
		ArgsUsage: "REPORT.json …",
		Description: `Shards of a large app run as parallel jobs, each auditing a subset of the
co-partitioned tasks with kaudit diff --partitions 0-5 --format json; kaudit merge
combines their reports into one, as if one run had audited every partition. It
refuses reports that are not the shards of one audit (a shard twice, another run,
another shard count, other evidence) and a report whose findings do not add up to
its own summary (edited by hand).

` + exitStatusHelp,
		Flags: append(outputFlags("json"),
			wideFlag(),
			&cli.StringFlag{Name: "kafka-version", Usage: "the brokers' Kafka `VERSION`, to judge known broker issues", EnvVars: env("kafka-version")},
			&cli.StringFlag{Name: "streams-version", Usage: "the app's Kafka Streams client `VERSION`, to judge known Streams issues", EnvVars: env("streams-version")},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usagef("kaudit merge needs at least one report file")
			}
			outs, err := readOutputs(c, "json")
			if err != nil {
				return err
			}
			if err := checkWrites(outputDests(outs), c.Args().Slice()); err != nil {
				return err
			}
			var reps []*audit.Report
			for _, path := range c.Args().Slice() {
				f, err := openInput(path, maxReportBytes)
				if err != nil {
					return usagef("read %s: %w", path, err)
				}
				r, err := report.ReadJSON(f)
				f.Close()
				if err != nil {
					return usagef("read %s: %w", path, err)
				}
				reps = append(reps, r) // Merge refuses one whose findings do not add up to its summary
			}
			merged, err := combine.Merge(reps...)
			if err != nil {
				return usageError{Err: err}
			}
			if err := writeReport(outs, merged, report.Options{KafkaVersion: c.String("kafka-version"), StreamsVersion: c.String("streams-version"), Wide: c.Bool("wide"), Width: terminalWidth(c.App.Writer),
				Provenance: provenance(provenanceArgs(c), "")}, c.App.Writer); err != nil {
				return fmt.Errorf("write the merged report: %w", err)
			}
			return verdictResult(merged.ExitVerdict())
		},
	}
}
