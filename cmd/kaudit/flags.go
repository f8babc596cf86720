package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"
)

// env names the KAUDIT_<FLAG> variable of a flag.
func env(flag string) []string {
	return []string{"KAUDIT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

// sourceOptions are the flags that choose and reach a source of evidence,
// shared by every command that reads one.
type sourceOptions struct {
	Bootstrap       []string          // --bootstrap-server (live)
	Protocol        string            // the security protocol the addresses name (SSL://host:port)
	bootstrapErr    error             // a --bootstrap-server that cannot be read
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
	Stderr          io.Writer // told the client properties kaudit does not use; nil: not told
}

// args are the flags that name the source again, for a command kaudit
// tells the user to run next; "" when none was given.
func (o sourceOptions) args() string {
	var a []string
	if len(o.Bootstrap) > 0 {
		a = append(a, "--bootstrap-server "+shellWord(strings.Join(o.Bootstrap, ",")))
	}
	if o.Snapshot != "" {
		a = append(a, "--snapshot "+shellWord(o.Snapshot))
	}
	for _, d := range o.LogDirs {
		a = append(a, "--log-dir "+shellWord(d))
	}
	return strings.Join(a, " ")
}

func sourceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "bootstrap-server", Aliases: []string{"bootstrap-servers", "b"}, Usage: "live cluster: `HOST:PORT`[,…]", EnvVars: env("bootstrap-server")},
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
		&cli.StringFlag{Name: "key-serde", Usage: "key serde where no spec says it: string, long, int, bytes, json, avro, protobuf, json-schema", EnvVars: env("key-serde")},
		&cli.StringFlag{Name: "value-serde", Usage: "value serde where no spec says it: string, long, int, bytes, json, avro, protobuf, json-schema", EnvVars: env("value-serde")},
	}
}

// wideFlag is --wide: the table format unwrapped, every cell whole.
func wideFlag() cli.Flag {
	return &cli.BoolFlag{Name: "wide", Usage: "table format: print key and detail whole on one line instead of wrapping them to the terminal's width", EnvVars: env("wide")}
}

// minSeverityFlag is --min-severity: the table format shows the findings
// of this severity and worse.
func minSeverityFlag() cli.Flag {
	return &cli.StringFlag{Name: "min-severity", Usage: "table format: show only findings of `SEVERITY` or worse (loss, anomaly, risk, info; default: all), the others counted", EnvVars: env("min-severity")}
}

// terminalWidth is the width of the terminal w writes to; else $COLUMNS;
// else 0 (the report's default).
func terminalWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok && isatty.IsTerminal(f.Fd()) {
		if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
			return int(ws.Col)
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 0
}

func txnFlags() []cli.Flag {
	return []cli.Flag{
		&cli.DurationFlag{Name: "max-transaction-timeout", Value: 15 * time.Minute, Usage: "a transaction open longer than this is hanging", EnvVars: env("max-transaction-timeout")},
	}
}

// sourceFlagNames are the flags that each choose a source: one is given.
var sourceFlagNames = []string{"bootstrap-server", "snapshot", "log-dir"}

// listenerSchemes are the security protocols a bootstrap address may name
// as a prefix, as in a broker's listeners (PLAINTEXT://host:9092).
var listenerSchemes = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

// splitBootstrap reads --bootstrap-server values: comma-separated
// HOST:PORT, each optionally prefixed by a security protocol. It returns
// the addresses and the one protocol they name ("" for none).
func splitBootstrap(values []string) ([]string, string, error) {
	var bs []string
	proto := ""
	for _, b := range values {
		for _, h := range strings.Split(b, ",") {
			if h = strings.TrimSpace(h); h == "" {
				continue
			}
			if scheme, addr, ok := strings.Cut(h, "://"); ok {
				s := strings.ToUpper(scheme)
				if !slices.Contains(listenerSchemes, s) {
					return nil, "", fmt.Errorf("%q: the scheme %s:// is none of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", h, scheme)
				}
				if proto != "" && proto != s {
					return nil, "", fmt.Errorf("the addresses name two security protocols, %s and %s", proto, s)
				}
				proto, h = s, addr
			}
			bs = append(bs, h)
		}
	}
	return bs, proto, nil
}

// readSourceOptions copies the shared flags of c into options. A source
// flag given on the command line wins over the KAUDIT_* variables of the
// other source flags: the command line chooses the source.
func readSourceOptions(c *cli.Context) sourceOptions {
	fromEnv := map[string]bool{}
	for _, n := range sourceFlagNames {
		if givenOnCommandLine(c, n) {
			for _, m := range sourceFlagNames {
				fromEnv[m] = !givenOnCommandLine(c, m)
			}
			break
		}
	}
	var bs []string
	proto := ""
	var bsErr error
	if !fromEnv["bootstrap-server"] {
		bs, proto, bsErr = splitBootstrap(c.StringSlice("bootstrap-server"))
	}
	snap, logDirs := c.String("snapshot"), c.StringSlice("log-dir")
	if fromEnv["snapshot"] {
		snap = ""
	}
	if fromEnv["log-dir"] {
		logDirs = nil
	}
	return sourceOptions{
		Bootstrap:      bs,
		Protocol:       proto,
		bootstrapErr:   bsErr,
		Snapshot:       snap,
		LogDirs:        logDirs,
		CommandConfig:  c.String("command-config"),
		CommandProps:   c.StringSlice("command-property"),
		Timeout:        c.Duration("timeout"),
		StableTimeout:  c.Duration("stable-timeout"),
		SchemaRegistry: c.String("schema-registry-url"),
		SchemasDir:     c.String("schemas"),
		KeySerde:       c.String("key-serde"),
		ValueSerde:     c.String("value-serde"),
		MaxTxnTimeout:  c.Duration("max-transaction-timeout"),
		Stderr:         c.App.ErrWriter,
	}
}

// formatFlag is --format for a command with formats of its own (topology,
// ledger, txns). It reads KAUDIT_<COMMAND>_FORMAT; KAUDIT_FORMAT, set for
// diff's reports, serves it only where it names one of its formats
// (readFormat), so that KAUDIT_FORMAT=md does not break them.
func formatFlag(command, def string, formats []string) cli.Flag {
	return &cli.StringFlag{Name: "format", Value: def, Usage: strings.Join(formats, ", ") + " (KAUDIT_FORMAT too, where it names one of them)",
		EnvVars: env(command + "-format")}
}

// readFormat is the format formatFlag chose.
func readFormat(c *cli.Context, formats []string) (string, error) {
	f := c.String("format")
	if c.IsSet("format") {
		if !slices.Contains(formats, f) {
			return "", usagef("--format %q: want %s", f, strings.Join(formats, ", "))
		}
		return f, nil
	}
	if v := os.Getenv("KAUDIT_FORMAT"); slices.Contains(formats, v) {
		return v, nil
	}
	return f, nil
}
