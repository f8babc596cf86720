package segment

import (
	"context"
	"encoding/json"
	"fmt"
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
	schemas map[int32]string
	note    string
}

// parseSchemaRecord reads one _schemas record: ok with the id and text of
// an Avro schema; bad for a SCHEMA record whose value cannot be read;
// neither for every other record (configs, modes, no-ops, deletes of a
// subject, tombstones, JSON and Protobuf schemas).
func parseSchemaRecord(key, value []byte) (id int32, schema string, ok, bad bool) {
	var k registryKey
	if value == nil || json.Unmarshal(key, &k) != nil || k.KeyType != "SCHEMA" {
		return 0, "", false, false
	}
	var v registrySchema
	if err := json.Unmarshal(value, &v); err != nil || v.ID == nil || v.Schema == "" {
		return 0, "", false, true
	}
	if v.SchemaType != "" && v.SchemaType != "AVRO" {
		return 0, "", false, false
	}
	return *v.ID, v.Schema, true, false
}

// registryKey is the key of a _schemas record: a JSON object whose
// keytype says what the value is (SCHEMA, CONFIG, MODE, NOOP,
// DELETE_SUBJECT, CLEAR_SUBJECT).
type registryKey struct {
	KeyType string `json:"keytype"`
}

// registrySchema is the value of a SCHEMA record.
type registrySchema struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         *int32 `json:"id"`
	SchemaType string `json:"schemaType"` // AVRO when empty
	Schema     string `json:"schema"`
	Deleted    bool   `json:"deleted"`
}

// Schemas returns the Avro schemas, by schema id, that the Schema
// Registry's _schemas topic in the dirs holds, or nil when no dir holds
// it. When the cluster is down its registry usually is too (it keeps its
// state in Kafka), so this is how an offline audit decodes Confluent-framed
// records without an export. A soft-deleted schema is kept (the registry
// still serves it by id, and records written with it remain); a tombstone
// (a hard delete) is not a reason to forget a schema records were written
// with either. JSON and Protobuf schemas are left out: kaudit decodes Avro.
func (d *Dir) Schemas() map[int32]string {
	c := &d.schemas
	c.once.Do(func() { c.schemas, c.note = d.readSchemas(context.Background()) })
	return c.schemas
}

// SchemasNote says what reading the _schemas topic found wrong, or "".
func (d *Dir) SchemasNote() string {
	d.Schemas()
	return d.schemas.note
}

func (d *Dir) readSchemas(ctx context.Context) (map[int32]string, string) {
	tp := audit.TopicPartition{Topic: SchemasTopic, Partition: 0}
	if _, ok := d.replicas[tp]; !ok {
		return nil, ""
	}
	out := map[int32]string{}
	var skipped int
	next := int64(0)
	for r, err := range d.Records(ctx, tp, 0, -1) {
		if err != nil {
			return out, fmt.Sprintf("schemas from the log dirs' %s topic: %v: the schemas from offset %d on are not known", SchemasTopic, err, next)
		}
		next = r.Offset + 1
		if r.Batch.Control {
			continue
		}
		id, schema, ok, bad := parseSchemaRecord(r.Key, r.Value)
		switch {
		case bad:
			skipped++
		case ok:
			out[id] = schema
		}
	}
	note := ""
	if skipped > 0 {
		note = fmt.Sprintf("schemas from the log dirs' %s topic: %d SCHEMA records could not be read", SchemasTopic, skipped)
	}
	if len(out) == 0 {
		return nil, note
	}
	return out, note
}
