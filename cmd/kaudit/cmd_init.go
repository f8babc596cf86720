package main

import (
	"context"
	"io"

	"github.com/kaudit/kaudit/audit/discovery"
	"github.com/kaudit/kaudit/audit/draft"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
)

// initOptions are kaudit init's flags.
type initOptions struct {
	AppID        string
	TopologyFile string
	KeySerde     string
	ValueSerde   string
	source       sourceOptions // the registry and client settings, to decode
}

func initCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "app-id", Aliases: []string{"group"}, Usage: "the Streams application.id `ID`", EnvVars: env("app-id")},
		&cli.StringFlag{Name: "topology", Usage: "Topology#describe() text `FILE`", EnvVars: env("topology")},
		&cli.StringFlag{Name: "key-serde", Usage: "key serde to write into the draft: string, long, int, bytes, json, avro, protobuf, json-schema", EnvVars: env("key-serde")},
		&cli.StringFlag{Name: "value-serde", Usage: "value serde to write into the draft: string, long, int, bytes, json, avro, protobuf, json-schema", EnvVars: env("value-serde")},
		&cli.StringFlag{Name: "schema-registry-url", Usage: "Schema Registry `URL`, to decode Avro values", EnvVars: env("schema-registry-url")},
		&cli.StringFlag{Name: "schemas", Usage: "offline schema `DIR` of <id>.avsc files or a schemas.json map", EnvVars: env("schemas")},
	}
	return &cli.Command{
		Name:      "init",
		Usage:     "write a draft kaudit.yaml from discovery",
		UsageText: "kaudit init --app-id ID [source] [--topology FILE] > kaudit.yaml",
		Description: "Drafts a spec from the topology and, with a source, from the evidence: the serdes, each\n" +
			"table's source, select_key and reducer, and each join's type and value are inferred from what\n" +
			"the app wrote, each with its evidence as a comment. What the evidence cannot settle stays a\n" +
			"TODO listing the candidates. Without a source, select_key, reduce and value are TODO.\n" +
			"Check a spec against the evidence with kaudit spec check.\n\n" + initExitHelp,
		Flags: append(flags, sourceFlags()...),
		Action: func(c *cli.Context) error {
			o := initOptions{
				AppID:        c.String("app-id"),
				TopologyFile: c.String("topology"),
				KeySerde:     c.String("key-serde"),
				ValueSerde:   c.String("value-serde"),
				source:       readSourceOptions(c),
			}
			src, _, closeSrc, err := topologySource(c)
			if err != nil {
				return err
			}
			defer closeSrc()
			return runInit(c.Context, o, src, c.App.Writer)
		},
	}
}

// runInit writes a draft spec through the library; src may be nil.
func runInit(ctx context.Context, o initOptions, src audit.Source, w io.Writer) error {
	do := draft.Options{AppID: o.AppID, TopologyFile: o.TopologyFile, KeySerde: o.KeySerde, ValueSerde: o.ValueSerde,
		SourceArgs: o.source.args()}
	if src != nil && o.AppID != "" {
		// a draft of an app the source does not hold is all TODO: a typo
		if err := discovery.CheckAppID(ctx, src, o.AppID); err != nil {
			return usagef("kaudit init --app-id: %w", err)
		}
	}
	if src != nil {
		props, err := properties(o.source) // to decode the evidence
		if err != nil {
			return err
		}
		do.Codec = codecConfig(o.source, props)
	}
	return draft.Write(ctx, w, src, do)
}
