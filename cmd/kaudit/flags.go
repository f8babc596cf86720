package main

import (
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// env names the KAUDIT_<FLAG> variable of a flag.
func env(flag string) []string {
	return []string{"KAUDIT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

// sourceOptions are the flags that choose and reach a source of evidence,
// shared by every command that reads one.
type sourceOptions struct {
	Bootstrap       []string          // --bootstrap-server (live)
	Snapshot        string            // --snapshot DIR (captured)
	LogDirs         []string          // --log-dir DIR, one per broker
	CommandConfig   string            // --command-config client.properties
	CommandProps    []string          // --command-property k=v
	Timeout         time.Duration     // --timeout for one request
	StableTimeout   time.Duration     // --stable-timeout for the group's offsets
	Properties      map[string]string // merged from the file and the k=v flags
	SchemaRegistry  string
	SchemasDir      string
	KeySerde        string
	ValueSerde      string
	MaxTxnTimeout   time.Duration
	BaselineSnapDir string
}

func sourceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "bootstrap-server", Usage: "live cluster: `HOST:PORT`[,…]", EnvVars: env("bootstrap-server")},
		&cli.StringFlag{Name: "snapshot", Usage: "captured evidence bundle `DIR` (kaudit capture)", EnvVars: env("snapshot")},
		&cli.StringSliceFlag{Name: "log-dir", Usage: "broker log `DIR` (repeat, one per broker)", EnvVars: env("log-dir")},
		&cli.StringFlag{Name: "command-config", Usage: "client `FILE` with Java property names (security.protocol, sasl.*, ssl.*)", EnvVars: env("command-config")},
		&cli.StringSliceFlag{Name: "command-property", Usage: "client property `k=v` (repeatable)", EnvVars: env("command-property")},
		&cli.DurationFlag{Name: "timeout", Value: 30 * time.Second, Usage: "timeout of one request to the cluster", EnvVars: env("timeout")},
		&cli.DurationFlag{Name: "stable-timeout", Value: 30 * time.Second, Usage: "how long to wait for the group's committed offsets while a transaction holds them unstable; then they are missing evidence", EnvVars: env("stable-timeout")},
	}
}

func serdeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "schema-registry-url", Usage: "Schema Registry `URL` (basic.auth.user.info from --command-config)", EnvVars: env("schema-registry-url")},
		&cli.StringFlag{Name: "schemas", Usage: "offline schema `DIR` of <id>.avsc files or a schemas.json map", EnvVars: env("schemas")},
		&cli.StringFlag{Name: "key-serde", Usage: "key serde where no spec says it: string, long, int, bytes, json, avro", EnvVars: env("key-serde")},
		&cli.StringFlag{Name: "value-serde", Usage: "value serde where no spec says it: string, long, int, bytes, json, avro", EnvVars: env("value-serde")},
	}
}

func txnFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "max-transaction-timeout", Value: 15 * time.Minute, Usage: "a transaction open longer than this is hanging", EnvVars: env("max-transaction-timeout")},
	}
}

// readSourceOptions copies the shared flags of c into options.
func readSourceOptions(c *cli.Context) sourceOptions {
	var bs []string
	for _, b := range c.StringSlice("bootstrap-server") {
		for _, h := range strings.Split(b, ",") {
			if h = strings.TrimSpace(h); h != "" {
				bs = append(bs, h)
			}
		}
	}
	return sourceOptions{
		Bootstrap:      bs,
		Snapshot:       c.String("snapshot"),
		LogDirs:        c.StringSlice("log-dir"),
		CommandConfig:  c.String("command-config"),
		CommandProps:   c.StringSlice("command-property"),
		Timeout:        c.Duration("timeout"),
		StableTimeout:  c.Duration("stable-timeout"),
		SchemaRegistry: c.String("schema-registry-url"),
		SchemasDir:     c.String("schemas"),
		KeySerde:       c.String("key-serde"),
		ValueSerde:     c.String("value-serde"),
		MaxTxnTimeout:  c.Duration("max-transaction-timeout"),
	}
}
