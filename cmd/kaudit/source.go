package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/diff"
	"github.com/kaudit/kaudit/audit/kafka"
)

// openedSource is a source of evidence with what opening it already found
// wrong (a snapshot file whose hash does not match).
type openedSource struct {
	diff.Evidence
	close func()
}

// properties merges --command-config and --command-property.
func properties(o sourceOptions) (map[string]string, error) {
	props := map[string]string{}
	if o.CommandConfig != "" {
		f, err := openInput(o.CommandConfig, maxConfigBytes)
		if err != nil {
			return nil, usagef("read --command-config: %w", err)
		}
		defer f.Close()
		if props, err = audit.ParseProperties(f); err != nil {
			return nil, usagef("read --command-config %s: %w", o.CommandConfig, err)
		}
	}
	for _, kv := range o.CommandProps {
		if err := audit.ApplyProperty(props, kv); err != nil {
			return nil, usagef("--command-property: %w", err)
		}
	}
	if o.Protocol != "" {
		// SSL://host:9092 says the protocol, as a listener does
		switch p, ok := props["security.protocol"]; {
		case !ok:
			props["security.protocol"] = o.Protocol
		case !strings.EqualFold(p, o.Protocol):
			return nil, usagef("--bootstrap-server names %s:// but security.protocol is %s", o.Protocol, p)
		}
	}
	return props, nil
}

// openSource opens the one source the flags choose: a live cluster, a
// snapshot or broker log dirs.
func openSource(ctx context.Context, command string, o sourceOptions) (*openedSource, error) {
	n := 0
	for _, set := range []bool{len(o.Bootstrap) > 0, o.Snapshot != "", len(o.LogDirs) > 0} {
		if set {
			n++
		}
	}
	switch {
	case o.bootstrapErr != nil:
		return nil, usagef("--bootstrap-server %w", o.bootstrapErr)
	case n == 0:
		return nil, usagef("kaudit %s needs a source: --bootstrap-server HOST:PORT, --snapshot DIR or --log-dir DIR", command)
	case n > 1:
		return nil, usagef("kaudit %s reads one source: give only one of --bootstrap-server, --snapshot, --log-dir", command)
	}
	switch {
	case o.Snapshot != "":
		ev, err := diff.OpenSnapshot(ctx, o.Snapshot)
		if err != nil {
			return nil, err
		}
		return &openedSource{Evidence: ev, close: func() {}}, nil
	case len(o.LogDirs) > 0:
		ev, err := diff.OpenLogDirs(ctx, o.LogDirs...)
		if err != nil {
			return nil, err
		}
		return &openedSource{Evidence: ev, close: func() {}}, nil
	}
	props, err := properties(o)
	if err != nil {
		return nil, err
	}
	var warn func(string)
	if w := o.Stderr; w != nil {
		warn = func(s string) { fmt.Fprintln(w, "kaudit: warning: "+s) }
	}
	s, err := kafka.Open(ctx, kafka.Config{Bootstrap: o.Bootstrap, Properties: props, Timeout: o.Timeout, StableTimeout: o.StableTimeout, Warn: warn})
	switch {
	case err == nil:
		return &openedSource{Evidence: diff.Evidence{Source: s}, close: s.Close}, nil
	case errors.Is(err, kafka.ErrConfig):
		return nil, usageError{Err: err}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, notRunError{Err: err}
}

// openCliSource is openSource from a command's flags.
func openCliSource(c *cli.Context) (*openedSource, error) {
	return openSource(c.Context, c.Command.Name, readSourceOptions(c))
}

// codecConfig is the decoding the flags choose.
func codecConfig(o sourceOptions, props map[string]string) codec.Config {
	return codec.Config{KeySerde: o.KeySerde, ValueSerde: o.ValueSerde, RegistryURL: o.SchemaRegistry, SchemasDir: o.SchemasDir, Properties: props, Timeout: o.Timeout}
}

// openDecoder builds the key and value decoder from the serde flags and
// the given serdes (which serve where the flags say nothing), with the
// schemas a capture carries.
func openDecoder(o sourceOptions, key, value string, props map[string]string, schemas map[int32]audit.Schema) (*codec.Codec, error) {
	cfg := codecConfig(o, props)
	cfg.KeySerde, cfg.ValueSerde = cmp.Or(cfg.KeySerde, key, "string"), cmp.Or(cfg.ValueSerde, value, "bytes")
	return codec.NewWithSchemas(cfg, schemas)
}
