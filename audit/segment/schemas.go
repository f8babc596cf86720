package segment

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kaudit/kaudit/audit"
)

// SchemasTopic is the topic a Confluent-compatible Schema Registry keeps
// its schemas in (kafkastore.topic, "_schemas" by default).
const SchemasTopic = "_schemas"

var _ audit.SchemaHolder = (*Dir)(nil)

// schemasCache is what the dirs' _schemas topic says, replayed once.
type schemasCache struct {
	once    sync.Once
	schemas map[int32]audit.Schema
	note    string
}

// parseSchemaRecord reads one _schemas record: ok with the schema; bad
// for a SCHEMA record whose value cannot be read; neither for every other
// record (configs, modes, no-ops, deletes of a subject, tombstones).
func parseSchemaRecord(key, value []byte) (rec registrySchema, ok, bad bool) {
	var k registryKey
	if value == nil || json.Unmarshal(key, &k) != nil || k.KeyType != "SCHEMA" {
		return rec, false, false
	}
	if err := json.Unmarshal(value, &rec); err != nil || rec.ID == nil || rec.Schema == "" {
		return registrySchema{}, false, true
	}
	return rec, true, false
}

// registryKey is the key of a _schemas record: a JSON object whose
// keytype says what the value is (SCHEMA, CONFIG, MODE, NOOP,
// DELETE_SUBJECT, CLEAR_SUBJECT).
type registryKey struct {
	KeyType string `json:"keytype"`
}

// registrySchema is the value of a SCHEMA record.
type registrySchema struct {
	Subject    string              `json:"subject"`
	Version    int                 `json:"version"`
	ID         *int32              `json:"id"`
	SchemaType string              `json:"schemaType"` // AVRO when empty
	Schema     string              `json:"schema"`
	References []registryReference `json:"references"`
	Deleted    bool                `json:"deleted"`
}

// registryReference is a schema's reference to another subject's version
// (a Protobuf import, by its import path).
type registryReference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// maxSchemaRefDepth bounds nested references, as the registry client does.
const maxSchemaRefDepth = 32

// Schemas returns the schemas, by schema id, that the Schema Registry's
// _schemas topic in the dirs holds, or nil when no dir holds it. When the
// cluster is down its registry usually is too (it keeps its state in
// Kafka), so this is how an offline audit decodes Confluent-framed records
// without an export. A soft-deleted schema is kept (the registry still
// serves it by id, and records written with it remain); a tombstone (a
// hard delete) is not a reason to forget a schema records were written
// with either. Every type is kept (Avro, JSON, Protobuf); a Protobuf
// schema's references are resolved through the topic's subjects and
// versions into the files it imports (audit.Schema's Deps). An Avro
// schema with references is left out (its named types would need
// inlining), said in the note.
func (d *Dir) Schemas() map[int32]audit.Schema {
	c := &d.schemas
	c.once.Do(func() { c.schemas, c.note = d.readSchemas(context.Background()) })
	return c.schemas
}

// SchemasNote says what reading the _schemas topic found wrong, or "".
func (d *Dir) SchemasNote() string {
	d.Schemas()
	return d.schemas.note
}

func (d *Dir) readSchemas(ctx context.Context) (map[int32]audit.Schema, string) {
	tp := audit.TopicPartition{Topic: SchemasTopic, Partition: 0}
	if _, ok := d.replicas[tp]; !ok {
		return nil, ""
	}
	byID := map[int32]registrySchema{}
	bySubject := map[string]registrySchema{}
	var skipped int
	next := int64(0)
	var notes []string
	for r, err := range d.Records(ctx, tp, 0, -1) {
		if err != nil {
			notes = append(notes, fmt.Sprintf("schemas from the log dirs' %s topic: %v: the schemas from offset %d on are not known", SchemasTopic, err, next))
			break
		}
		next = r.Offset + 1
		if r.Batch.Control {
			continue
		}
		rec, ok, bad := parseSchemaRecord(r.Key, r.Value)
		switch {
		case bad:
			skipped++
		case ok:
			byID[*rec.ID] = rec
			bySubject[rec.Subject+"\x00"+strconv.Itoa(rec.Version)] = rec
		}
	}
	if skipped > 0 {
		notes = append(notes, fmt.Sprintf("schemas from the log dirs' %s topic: %d SCHEMA records could not be read", SchemasTopic, skipped))
	}
	out := map[int32]audit.Schema{}
	var unresolved []string
	for id, rec := range byID {
		sc := audit.Schema{Schema: rec.Schema}
		if t := strings.ToUpper(rec.SchemaType); t != "" && t != "AVRO" {
			sc.Type = t
		}
		if len(rec.References) > 0 {
			if sc.IsAvro() {
				unresolved = append(unresolved, fmt.Sprintf("%d (Avro with references)", id))
				continue
			}
			deps := map[string]string{}
			if err := resolveRefs(rec.References, bySubject, deps, map[string]bool{}, 0); err != nil {
				unresolved = append(unresolved, fmt.Sprintf("%d (%v)", id, err))
				continue
			}
			sc.Deps = deps
		}
		out[id] = sc
	}
	if len(unresolved) > 0 {
		slices.Sort(unresolved)
		notes = append(notes, fmt.Sprintf("schemas from the log dirs' %s topic: the references of schema ids %s could not be resolved", SchemasTopic, strings.Join(unresolved, ", ")))
	}
	note := strings.Join(notes, "; ")
	if len(out) == 0 {
		return nil, note
	}
	return out, note
}

// resolveRefs adds the text of each referenced schema, and of its own
// references, to deps by import path. A reference met again is not
// followed again: a cycle ends there, and compiling the schema names it.
func resolveRefs(refs []registryReference, bySubject map[string]registrySchema, deps map[string]string, seen map[string]bool, depth int) error {
	if depth > maxSchemaRefDepth {
		return fmt.Errorf("references nested deeper than %d", maxSchemaRefDepth)
	}
	for _, ref := range refs {
		key := ref.Subject + "\x00" + strconv.Itoa(ref.Version)
		if seen[key] {
			continue
		}
		seen[key] = true
		rec, ok := bySubject[key]
		if !ok {
			return fmt.Errorf("reference %s: subject %s version %d is not in the topic", ref.Name, ref.Subject, ref.Version)
		}
		if old, dup := deps[ref.Name]; dup && old != rec.Schema {
			return fmt.Errorf("two references named %s", ref.Name)
		}
		deps[ref.Name] = rec.Schema
		if err := resolveRefs(rec.References, bySubject, deps, seen, depth+1); err != nil {
			return err
		}
	}
	return nil
}
