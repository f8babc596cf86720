package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/topology"
	"github.com/kaudit/kaudit/internal/input"
)

// Plan completes what kaudit capture is given from what the source
// carries: a bundle captured again keeps its topology and its schemas;
// the topology's sink topics, the app's output (neither the group's
// topics nor named <app>-…), are captured too. It reads nothing but the
// source's own metadata.
func Plan(src audit.Source, opts CaptureOptions) CaptureOptions {
	if opts.Topology == "" {
		opts.Topology = audit.TopologyOf(src)
	}
	if opts.Topology != "" {
		if topo, err := topology.ParseString(opts.Topology); err == nil {
			for _, u := range topo.Layout(opts.AppID).Topics {
				if u.Role == topology.RoleOutput {
					opts.Also = append(opts.Also, u.Name)
				}
			}
		}
	}
	for id, sc := range audit.SchemasOf(src) {
		if _, ok := opts.Schemas[id]; ok {
			continue
		}
		if opts.Schemas == nil {
			opts.Schemas = map[int32]audit.Schema{}
		}
		opts.Schemas[id] = sc
	}
	return opts
}

// RegistrySchemas is a CaptureOptions.Schema that asks a Schema Registry
// client: bytes that only look framed (a long key) or an id the registry
// lost are no schema (an offline audit says which). Schemas of every type
// are kept, a Protobuf schema with the files it imports.
func RegistrySchemas(reg *codec.Codec) func(ctx context.Context, id int32) (audit.Schema, error) {
	return func(ctx context.Context, id int32) (audit.Schema, error) {
		s, err := reg.Schema(ctx, id)
		if errors.Is(err, codec.ErrUnknownSchema) && !errors.Is(err, codec.ErrBadSchema) {
			return audit.Schema{}, nil
		}
		if err != nil {
			return audit.Schema{}, err
		}
		return s, nil
	}
}

// maxSchemaBytes bounds one schema file of a schema dir.
const maxSchemaBytes = 16 << 20

// ReadSchemas reads a schema dir for a capture: <id>.avsc files, or a
// schemas.json map of id to schema (see audit.Schema: Avro text, the
// schema as JSON, or {"schema", "schemaType", "dependencies"}).
func ReadSchemas(dir string) (map[int32]audit.Schema, error) {
	out := map[int32]audit.Schema{}
	file := filepath.Join(dir, codec.SchemasFile)
	if b, err := input.Read(file, maxSchemaBytes); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read schemas: %w", err)
	} else if err == nil {
		var m map[string]audit.Schema
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		for k, v := range m {
			id, err := strconv.ParseInt(k, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("read %s: schema id %q is not a number", file, k)
			}
			out[int32(id)] = v
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read schemas: %w", err)
	}
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".avsc")
		id, err := strconv.ParseInt(base, 10, 32)
		if !ok || err != nil {
			continue
		}
		b, err := input.Read(filepath.Join(dir, e.Name()), maxSchemaBytes)
		if err != nil {
			return nil, fmt.Errorf("read schemas: %w", err)
		}
		out[int32(id)] = audit.Schema{Schema: string(b)}
	}
	return out, nil
}

// Gaps says what the bundle does not hold: the evidence the source could
// not give, and the partitions not copied yet. An audit of a bundle with
// gaps is incomplete.
func (m *Manifest) Gaps() []string {
	var gaps []string
	for _, s := range m.Missing {
		if !strings.HasPrefix(s, commitLogMissing) { // optional evidence: not a gap
			gaps = append(gaps, s)
		}
	}
	var left []string
	for _, p := range m.Partitions {
		if !p.Complete {
			left = append(left, fmt.Sprintf("%s (offsets %d-%d)", p.TP(), p.Next, p.HW-1))
		}
	}
	if len(left) > 0 {
		gaps = append(gaps, "the records of "+strings.Join(left, ", ")+": run the capture again to resume")
	}
	return gaps
}
