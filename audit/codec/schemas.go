package codec

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/input"

	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// SchemasFile is the file of SchemasDir that maps schema ids to schemas.
const SchemasFile = "schemas.json"

type schemaType uint8

const (
	typeAvro schemaType = iota
	typeJSON
	typeProtobuf
	typeOther
)

// schemaEntry is one schema id, ready to decode with.
type schemaEntry struct {
	typ      schemaType
	typeName string // as the registry says it: AVRO, JSON, PROTOBUF
	node     *node
	proto    protoreflect.FileDescriptor
	text     string            // self-contained schema text (Avro: references inlined)
	deps     map[string]string // Protobuf: the imported files' texts by import path
	bad      error             // why the schema cannot be used (a capture's own, kept)
}

// schemaStore finds schemas by id: offline ones first, then the registry,
// each id fetched once (concurrent callers of one id share one fetch).
type schemaStore struct {
	offline map[int32]*schemaEntry
	client  *registryClient
	// none says no schema source was given at all (Avro records, and no
	// registry, schemas dir or capture's schemas): every id is missing
	// evidence, not a fault of its records
	none bool

	mu    sync.Mutex
	calls map[int32]*schemaCall
	refs  map[string]schemaAnswer // subject and version → answer, shared by ids
}

type schemaCall struct {
	done     chan struct{}
	entry    *schemaEntry
	err      error
	canceled bool // the fetching caller's context ended: not cached
}

func newSchemaStore(cfg Config) (*schemaStore, error) {
	s := &schemaStore{offline: map[int32]*schemaEntry{}, calls: map[int32]*schemaCall{}, refs: map[string]schemaAnswer{}}
	if cfg.SchemasDir != "" {
		if err := s.loadDir(cfg.SchemasDir, cfg.lenient); err != nil {
			return nil, err
		}
	}
	if cfg.RegistryURL != "" {
		var err error
		if s.client, err = newRegistryClient(cfg); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *schemaStore) get(ctx context.Context, id int32) (*schemaEntry, error) {
	if e, ok := s.offline[id]; ok {
		return e, nil
	}
	if s.none {
		return nil, fmt.Errorf("%w: the records are Confluent-framed (schema id %d) and no schemas were given: a capture's own, --schemas DIR, the broker log dirs' _schemas topic or --schema-registry-url", ErrRegistryUnavailable, id)
	}
	if s.client == nil {
		return nil, fmt.Errorf("%w: id %d is not in the schemas dir", ErrUnknownSchema, id)
	}
	for {
		s.mu.Lock()
		c, ok := s.calls[id]
		if !ok {
			c = &schemaCall{done: make(chan struct{})}
			s.calls[id] = c
			s.mu.Unlock()
			c.entry, c.err = s.fetch(ctx, id)
			if c.err != nil && ctx.Err() != nil {
				c.canceled = true
				s.mu.Lock()
				delete(s.calls, id)
				s.mu.Unlock()
			}
			close(c.done)
			return c.entry, c.err
		}
		s.mu.Unlock()
		select {
		case <-c.done:
			if c.canceled {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				continue // the fetcher gave up; fetch again under this context
			}
			return c.entry, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (s *schemaStore) used() map[int32]Schema {
	out := map[int32]Schema{}
	for id, e := range s.offline {
		out[id] = e.export()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.calls {
		select {
		case <-c.done:
			if c.err == nil {
				out[id] = c.entry.export()
			}
		default:
		}
	}
	return out
}

func (e *schemaEntry) export() Schema {
	sc := Schema{Schema: e.text, Deps: maps.Clone(e.deps)}
	if e.typ != typeAvro {
		sc.Type = e.typeName
	}
	return sc
}

// fetch reads schema id and its references from the registry.
func (s *schemaStore) fetch(ctx context.Context, id int32) (*schemaEntry, error) {
	var ans schemaAnswer
	err := s.client.get(ctx, "/schemas/ids/"+itoa(id), &ans)
	var nf *notFoundError
	if errors.As(err, &nf) {
		return nil, fmt.Errorf("%w: %w", ErrUnknownSchema, err)
	}
	if err != nil {
		return nil, err
	}
	if strings.EqualFold(ans.SchemaType, "PROTOBUF") {
		deps := map[string]string{}
		if err := s.loadProtoRefs(ctx, ans.References, deps, map[string]bool{}, 0); err != nil {
			return nil, err
		}
		e, err := buildEntry(ctx, ans.SchemaType, ans.Schema, nil, deps)
		if err != nil {
			return nil, fmt.Errorf("%w: schema id %d: %w", ErrBadSchema, id, err)
		}
		return e, nil
	}
	cache := &avro.SchemaCache{}
	if err := s.loadRefs(ctx, ans.References, cache, map[string]bool{}, 0); err != nil {
		return nil, err
	}
	e, err := buildEntry(ctx, ans.SchemaType, ans.Schema, cache, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: schema id %d: %w", ErrBadSchema, id, err)
	}
	return e, nil
}

// reference fetches a referenced schema: GET /subjects/{s}/versions/{v},
// kept per subject and version for every id that refers to it.
func (s *schemaStore) reference(ctx context.Context, ref reference) (schemaAnswer, error) {
	key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
	s.mu.Lock()
	ans, ok := s.refs[key]
	s.mu.Unlock()
	if ok {
		return ans, nil
	}
	path := "/subjects/" + url.PathEscape(ref.Subject) + "/versions/" + strconv.Itoa(ref.Version)
	err := s.client.get(ctx, path, &ans)
	var nf *notFoundError
	if errors.As(err, &nf) {
		return ans, fmt.Errorf("%w: reference %s (subject %s version %d): %w", ErrBadSchema, ref.Name, ref.Subject, ref.Version, err)
	}
	if err != nil {
		return ans, err
	}
	s.mu.Lock()
	s.refs[key] = ans
	s.mu.Unlock()
	return ans, nil
}

// loadProtoRefs fetches the files a Protobuf schema imports, and theirs,
// into deps by import path (the reference's name). A reference met again
// is not fetched again: a cycle ends here and the compiler names it.
func (s *schemaStore) loadProtoRefs(ctx context.Context, refs []reference, deps map[string]string, seen map[string]bool, depth int) error {
	if depth > maxRefDepth {
		return fmt.Errorf("%w: references nested deeper than %d", ErrBadSchema, maxRefDepth)
	}
	for _, ref := range refs {
		key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
		if seen[key] {
			continue
		}
		seen[key] = true
		ans, err := s.reference(ctx, ref)
		if err != nil {
			return err
		}
		if old, ok := deps[ref.Name]; ok && old != ans.Schema {
			return fmt.Errorf("%w: two references named %s", ErrBadSchema, ref.Name)
		}
		deps[ref.Name] = ans.Schema
		if err := s.loadProtoRefs(ctx, ans.References, deps, seen, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// loadRefs parses referenced schemas, their own references first, into
// cache, where the referring schema finds their named types.
func (s *schemaStore) loadRefs(ctx context.Context, refs []reference, cache *avro.SchemaCache, seen map[string]bool, depth int) error {
	if depth > maxRefDepth {
		return fmt.Errorf("%w: references nested deeper than %d", ErrBadSchema, maxRefDepth)
	}
	for _, ref := range refs {
		key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
		if seen[key] {
			continue
		}
		seen[key] = true
		ans, err := s.reference(ctx, ref)
		if err != nil {
			return err
		}
		if err := s.loadRefs(ctx, ans.References, cache, seen, depth+1); err != nil {
			return err
		}
		if t := strings.ToUpper(ans.SchemaType); t != "" && t != "AVRO" {
			continue // a JSON or Protobuf reference has no Avro names to add
		}
		if _, err := avro.ParseWithCache(ans.Schema, "", cache); err != nil {
			return fmt.Errorf("%w: parse reference %s (subject %s version %d): %w", ErrBadSchema, ref.Name, ref.Subject, ref.Version, err)
		}
	}
	return nil
}

// buildEntry parses a schema of the given registry type. Avro schemas are
// parsed with their own name cache (never hamba's global one, so two
// versions of one record name do not mix); Protobuf schemas are compiled
// with the files they import (deps).
func buildEntry(ctx context.Context, typeName, text string, cache *avro.SchemaCache, deps map[string]string) (*schemaEntry, error) {
	switch t := strings.ToUpper(typeName); t {
	case "", "AVRO":
		if cache == nil {
			cache = &avro.SchemaCache{}
		}
		parsed, err := avro.ParseWithCache(text, "", cache)
		if err != nil {
			return nil, err
		}
		n, err := compile(parsed)
		if err != nil {
			return nil, err
		}
		full, err := json.Marshal(parsed)
		if err != nil {
			return nil, err
		}
		return &schemaEntry{typ: typeAvro, typeName: "AVRO", node: n, text: string(full)}, nil
	case "JSON":
		return &schemaEntry{typ: typeJSON, typeName: t, text: text}, nil
	case "PROTOBUF":
		fd, err := compileProto(ctx, text, deps)
		if err != nil {
			return nil, err
		}
		if len(deps) == 0 {
			deps = nil
		}
		return &schemaEntry{typ: typeProtobuf, typeName: t, proto: fd, text: text, deps: deps}, nil
	default:
		return &schemaEntry{typ: typeOther, typeName: t, text: text}, nil
	}
}

// loadDir reads <id>.avsc files and schemas.json from dir.
func (s *schemaStore) loadDir(dir string, lenient bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read schemas dir: %w", err)
	}
	for _, de := range ents {
		name := de.Name()
		if de.IsDir() || !strings.HasSuffix(name, ".avsc") {
			continue
		}
		id, err := strconv.ParseInt(strings.TrimSuffix(name, ".avsc"), 10, 32)
		if err != nil || id < 0 {
			continue // not named by an id
		}
		text, err := input.Read(filepath.Join(dir, name), maxSchemaFileBytes)
		if err != nil {
			return fmt.Errorf("read schemas dir: %w", err)
		}
		e, err := buildEntry(context.Background(), "AVRO", string(text), nil, nil)
		if err != nil {
			return fmt.Errorf("parse schema %s: %w", filepath.Join(dir, name), err)
		}
		s.offline[int32(id)] = e
	}
	file := filepath.Join(dir, SchemasFile)
	data, err := input.Read(file, maxSchemaFileBytes)
	if errors.Is(err, os.ErrNotExist) {
		if len(s.offline) == 0 {
			return fmt.Errorf("read schemas dir %s: no <id>.avsc and no %s", dir, SchemasFile)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read schemas dir: %w", err)
	}
	m, err := parseSchemasJSON(data)
	if err != nil {
		return fmt.Errorf("parse %s: %w", file, err)
	}
	for id, sc := range m {
		if _, dup := s.offline[id]; dup {
			return fmt.Errorf("parse %s: schema id %d also has an .avsc file", file, id)
		}
		e, err := buildEntry(context.Background(), sc.Type, sc.Schema, nil, sc.Deps)
		if err != nil && lenient {
			e = &schemaEntry{typ: typeOther, typeName: strings.ToUpper(cmp.Or(sc.Type, "AVRO")), text: sc.Schema, deps: sc.Deps, bad: err}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("parse %s: schema id %d: %w", file, id, err)
		}
		s.offline[id] = e
	}
	return nil
}

// parseSchemasJSON reads {"<id>": schema, …} where each schema is the
// schema's JSON itself, a string holding it, or Confluent's
// {"schema": "…", "schemaType": "…"} with "dependencies" (import path:
// text) in place of references (see audit.Schema).
func parseSchemasJSON(data []byte) (map[int32]Schema, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, err
	}
	out := make(map[int32]Schema, len(raw))
	for k, v := range raw {
		id, err := strconv.ParseInt(k, 10, 32)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("key %q is not a schema id", k)
		}
		var sc Schema
		if err := json.Unmarshal(v, &sc); err != nil {
			return nil, fmt.Errorf("schema id %d: %w", id, err)
		}
		out[int32(id)] = sc
	}
	return out, nil
}

// maxSchemaFileBytes bounds a schema file of a schemas dir: read without
// blocking (a named pipe is refused) and never larger.
const maxSchemaFileBytes = 64 << 20

// SerdeOf is the value serde the schemas a source carries call for when
// they are all of one format ("avro", "protobuf", "json-schema"), "" when
// there are none or several: a capture's records decode without a serde
// named.
func SerdeOf(schemas map[int32]audit.Schema) string {
	serde := ""
	for _, sc := range schemas {
		var s string
		switch {
		case sc.IsAvro():
			s = "avro"
		case strings.EqualFold(sc.Type, "PROTOBUF"):
			s = "protobuf"
		case strings.EqualFold(sc.Type, "JSON"):
			s = "json-schema"
		default:
			return ""
		}
		if serde != "" && serde != s {
			return ""
		}
		serde = s
	}
	return serde
}
