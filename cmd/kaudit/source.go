package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/kafka"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
)

// maxPartitions bounds a topic's partition count: more is corrupt evidence.
const maxPartitions = 1 << 20

// openedSource is a source of evidence with what opening it already found
// wrong (a snapshot file whose hash does not match).
type openedSource struct {
	audit.Source
	problems []audit.Finding
	notes    []string // what the source cannot know, for the report
	close    func()
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
			return nil, notRunError{err} // it says "open snapshot"
		}
		return &openedSource{Source: s, problems: s.Problems(), close: func() {}}, nil
	case len(o.LogDirs) > 0:
		d, err := segment.OpenDirs(o.LogDirs...)
		if err != nil {
			return nil, notRunError{wrapOnce("open log dirs", err)}
		}
		problems := d.Problems()
		for _, tt := range d.TornTails() {
			// the bytes of a torn batch are evidence that cannot be read:
			// a broker's recovery would truncate them, an audit cannot vouch
			f := audit.NewFinding(audit.StageOffsets, audit.CauseUnreadable, tt.TP, -1)
			f.Count = 0
			f.Detail = fmt.Sprintf("%s: %d bytes from byte %d are a torn or corrupt batch at the end of the log (a broker crash mid-write); what they held cannot be read", tt.File, tt.Bytes, tt.Pos)
			problems = append(problems, f)
		}
		if len(o.LogDirs) > 1 {
			// replicas of one partition in several brokers' dirs: compare them
			div, err := d.Divergence(ctx)
			if err != nil {
				return nil, notRunError{wrapOnce("compare replicas", err)}
			}
			problems = append(problems, div...)
		}
		return &openedSource{Source: d, problems: problems, notes: d.Unknowns(ctx), close: func() {}}, nil
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
		return &openedSource{Source: s, close: s.Close}, nil
	case errors.Is(err, kafka.ErrConfig):
		return nil, usageError{err}
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, notRunError{err}
}

// wrapOnce wraps err with prefix unless its message already starts so.
func wrapOnce(prefix string, err error) error {
	if strings.HasPrefix(err.Error(), prefix+":") {
		return err
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// groupNotes says, for log dirs, which transactional offset commits of
// the group had no marker when the log stopped, and whether they count.
func groupNotes(ctx context.Context, src *openedSource, group string) []string {
	d, ok := src.Source.(*segment.Dir)
	if !ok || group == "" {
		return nil
	}
	gl, err := d.GroupLog(ctx, group)
	if err != nil {
		return nil // GroupOffsets already said why
	}
	var out []string
	for _, p := range gl.Pending {
		how := "its transaction had not been decided when the cluster stopped (a coordinator aborts it on restart): not counted in the cut"
		if p.Committed {
			how = "__transaction_state says its coordinator had decided to commit: counted in the cut"
		}
		out = append(out, fmt.Sprintf("group %s: a transactional offset commit of %s to %d by producer %d (%s offset %d) has no marker in the log dirs; %s",
			group, p.TP, p.Offset, p.ProducerID, segment.ConsumerOffsetsTopic, p.At, how))
	}
	return out
}

// openCliSource is openSource from a command's flags.
func openCliSource(c *cli.Context) (*openedSource, error) {
	return openSource(c.Context, c.Command.Name, readSourceOptions(c))
}

// openDecoder builds the key and value decoder from the serde flags and
// the spec's serdes (which win where the flags say nothing).
func openDecoder(o sourceOptions, specKey, specValue string, props map[string]string, schemas map[int32]string) (*codec.Codec, error) {
	c, _, err := openDecoderTopics(o, specKey, specValue, nil, props, schemas)
	return c, err
}

// openDecoderTopics is openDecoder with per-topic serdes. Schemas a
// snapshot carries are staged in a temporary dir that the codec reads
// whole at once and that is removed before it returns.
func openDecoderTopics(o sourceOptions, specKey, specValue string, topics map[string]codec.TopicSerdes, props map[string]string, schemas map[int32]string) (*codec.Codec, bool, error) {
	cfg := codec.Config{KeySerde: first(o.KeySerde, specKey, "string"), ValueSerde: first(o.ValueSerde, specValue, "bytes"),
		Topics: topics, RegistryURL: o.SchemaRegistry, SchemasDir: o.SchemasDir, Properties: props, Timeout: o.Timeout}
	staged := false
	if len(schemas) > 0 && cfg.RegistryURL == "" && cfg.SchemasDir == "" {
		// a snapshot carries the schemas it used: serve them offline
		dir, err := os.MkdirTemp("", "kaudit-schemas-")
		if err != nil {
			return nil, false, fmt.Errorf("stage snapshot schemas: %w", err)
		}
		defer os.RemoveAll(dir)
		for id, s := range schemas {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(int(id))+".avsc"), []byte(s), 0o600); err != nil {
				return nil, false, fmt.Errorf("stage snapshot schemas: %w", err)
			}
		}
		cfg.SchemasDir, staged = dir, true
	}
	c, err := codec.New(cfg)
	switch {
	case err != nil && staged:
		// the snapshot's own schemas are evidence: unusable ones leave
		// the run without it, they are no usage error
		return nil, staged, notRunError{fmt.Errorf("read the snapshot's schemas: %w", err)}
	case err != nil:
		return nil, staged, usagef("configure decoding: %w", err)
	}
	return c, staged, nil
}

func first(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}
