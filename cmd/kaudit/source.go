package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit/diff"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/kafka"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
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
		s, err := snapshot.OpenContext(ctx, o.Snapshot)
		if err != nil {
			return nil, notRunError{Err: err} // it says "open snapshot"
		}
		return &openedSource{Evidence: diff.Evidence{Source: s, Problems: s.Problems()}, close: func() {}}, nil
	case len(o.LogDirs) > 0:
		d, err := segment.OpenDirs(o.LogDirs...)
		if err != nil {
			return nil, notRunError{Err: wrapOnce("open log dirs", err)}
		}
		problems := d.Problems()
		for _, tt := range d.TornTails() {
			// the bytes of a torn batch are evidence that cannot be read:
			// a broker's recovery would truncate them, an audit cannot vouch
			problems = append(problems, audit.UnreadablePartition(tt.TP, fmt.Sprintf("%s: %d bytes from byte %d are a torn or corrupt batch at the end of the log (a broker crash mid-write); what they held cannot be read", tt.File, tt.Bytes, tt.Pos)))
		}
		if len(o.LogDirs) > 1 {
			// replicas of one partition in several brokers' dirs: compare them
			div, err := d.Divergence(ctx)
			if err != nil {
				return nil, notRunError{Err: wrapOnce("compare replicas", err)}
			}
			problems = append(problems, div...)
		}
		return &openedSource{Evidence: diff.Evidence{Source: d, Problems: problems, Notes: d.Unknowns(ctx)}, close: func() {}}, nil
	}
	props, err := properties(o)
	if err != nil {
		return nil, err
	}
	s, err := kafka.Open(ctx, kafka.Config{Bootstrap: o.Bootstrap, Properties: props, Timeout: o.Timeout, StableTimeout: o.StableTimeout})
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

// wrapOnce wraps err with prefix unless its message already starts so.
func wrapOnce(prefix string, err error) error {
	if strings.HasPrefix(err.Error(), prefix+":") {
		return err
	}
	return fmt.Errorf("%s: %w", prefix, err)
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
func openDecoder(o sourceOptions, key, value string, props map[string]string, schemas map[int32]string) (*codec.Codec, error) {
	cfg := codecConfig(o, props)
	cfg.KeySerde, cfg.ValueSerde = cmp.Or(cfg.KeySerde, key, "string"), cmp.Or(cfg.ValueSerde, value, "bytes")
	return codec.NewWithSchemas(cfg, schemas)
}
