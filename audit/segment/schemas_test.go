package segment

import (
	"maps"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// TestSchemasFromLogDir replays a Schema Registry's _schemas topic as
// Confluent's registry writes it: the schemas by id with their types,
// soft-deleted ones kept, other record types skipped, a Protobuf schema's
// references resolved into the files it imports, a dangling reference and
// a damaged SCHEMA value said in the note.
func TestSchemasFromLogDir(t *testing.T) {
	l := internalLog{tp: audit.TopicPartition{Topic: SchemasTopic, Partition: 0}}
	key := func(typ, subject string, v int) []byte {
		if typ == "SCHEMA" {
			return []byte(`{"keytype":"SCHEMA","subject":"` + subject + `","version":` + string(rune('0'+v)) + `,"magic":1}`)
		}
		return []byte(`{"keytype":"` + typ + `","magic":0}`)
	}
	l.add([]byte(`{"keytype":"NOOP","magic":0}`), []byte(`{}`), -1, false)
	l.add(key("CONFIG", "", 0), []byte(`{"compatibilityLevel":"BACKWARD"}`), -1, false)
	l.add(key("SCHEMA", "orders-value", 1), []byte(`{"subject":"orders-value","version":1,"id":1,"schema":"{\"type\":\"record\",\"name\":\"Order\",\"fields\":[{\"name\":\"id\",\"type\":\"string\"}]}","deleted":false}`), -1, false)
	l.add(key("SCHEMA", "payments-value", 1), []byte(`{"subject":"payments-value","version":1,"id":2,"schemaType":"AVRO","schema":"\"long\"","deleted":true}`), -1, false)
	l.add(key("SCHEMA", "events-value", 1), []byte(`{"subject":"events-value","version":1,"id":3,"schemaType":"JSON","schema":"{\"type\":\"object\"}"}`), -1, false)
	l.add(key("SCHEMA", "payments-value", 1), nil, -1, false) // a hard delete: the schema stays known
	l.add(key("SCHEMA", "broken-value", 1), []byte(`{"subject":"broken-value","id":`), -1, false)
	l.add(key("DELETE_SUBJECT", "", 0), []byte(`{"subject":"payments-value","version":1}`), -1, false)
	l.add(key("SCHEMA", "money.proto", 1), []byte(`{"subject":"money.proto","version":1,"id":4,"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; message Money { int64 cents = 1; }"}`), -1, false)
	l.add(key("SCHEMA", "pay-value", 1), []byte(`{"subject":"pay-value","version":1,"id":5,"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"money.proto\"; message Pay { Money m = 1; }","references":[{"name":"money.proto","subject":"money.proto","version":1}]}`), -1, false)
	l.add(key("SCHEMA", "lost-value", 1), []byte(`{"subject":"lost-value","version":1,"id":6,"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"gone.proto\"; message L { Gone g = 1; }","references":[{"name":"gone.proto","subject":"gone","version":2}]}`), -1, false)
	dir := t.TempDir()
	writeLogDir(t, dir, l.recs)
	d := mustOpen(t, dir)
	want := map[int32]audit.Schema{
		1: {Schema: `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`},
		2: {Schema: `"long"`},
		3: {Schema: `{"type":"object"}`, Type: "JSON"},
		4: {Schema: `syntax = "proto3"; message Money { int64 cents = 1; }`, Type: "PROTOBUF"},
		5: {Schema: `syntax = "proto3"; import "money.proto"; message Pay { Money m = 1; }`, Type: "PROTOBUF",
			Deps: map[string]string{"money.proto": `syntax = "proto3"; message Money { int64 cents = 1; }`}},
	}
	if got := audit.SchemasOf(d); !maps.EqualFunc(got, want, audit.Schema.Equal) {
		t.Errorf("schemas %q, want %q", got, want)
	}
	if n := d.SchemasNote(); !strings.Contains(n, "1 SCHEMA records could not be read") || !strings.Contains(n, "schema ids 6 (reference gone.proto: subject gone version 2 is not in the topic)") {
		t.Errorf("note %q", n)
	}
	// dirs without the topic carry no schemas and say nothing
	empty := mustOpen(t, t.TempDir())
	if got := empty.Schemas(); got != nil || empty.SchemasNote() != "" {
		t.Errorf("no _schemas topic: %v %q", got, empty.SchemasNote())
	}
}

func FuzzSchemaRecord(f *testing.F) {
	f.Add([]byte(`{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}`), []byte(`{"subject":"s","version":1,"id":7,"schema":"\"string\""}`))
	f.Add([]byte(`{"keytype":"CONFIG"}`), []byte(`{}`))
	f.Add([]byte(`{"keytype":"SCHEMA"}`), []byte(`{"id":1,"schemaType":"PROTOBUF","schema":"syntax"}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		rec, ok, bad := parseSchemaRecord(key, value)
		if ok && (bad || rec.Schema == "" || rec.ID == nil) {
			t.Fatalf("ok with bad=%v schema %q", bad, rec.Schema)
		}
	})
}
