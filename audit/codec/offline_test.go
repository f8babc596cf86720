package codec

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := writeFileErr(dir, name, content); err != nil {
		t.Fatal(err)
	}
}

func writeFileErr(dir, name, content string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
}

// TestOfflineDir reads both forms of a schemas dir, together: <id>.avsc
// files and a schemas.json holding schemas as JSON, as strings and in
// Confluent's shape.
func TestOfflineDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "3.avsc", orderSchema)
	writeFile(t, dir, "notes.avsc", `not a schema, not named by an id: ignored`)
	writeFile(t, dir, SchemasFile, `{
	  "10": {"type":"record","name":"A","fields":[{"name":"a","type":"int"}]},
	  "11": "{\"type\":\"record\",\"name\":\"B\",\"fields\":[{\"name\":\"b\",\"type\":\"string\"}]}",
	  "12": {"schema": "\"long\"", "schemaType": "AVRO"},
	  "13": {"schema": "{\"type\":\"object\"}", "schemaType": "JSON"},
	  "14": "string"
	}`)
	c, err := New(Config{ValueSerde: "avro", SchemasDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"avsc file", orderPayload(t, 3), `{"amount":9.5,"orderId":"o-1"}`},
		{"json object", frame(10, []byte{4}), `{"a":2}`},
		{"json string", frame(11, []byte{2, 'x'}), `{"b":"x"}`},
		{"confluent shape", frame(12, []byte{3}), `-2`},
		{"confluent json type", frame(13, []byte(`[1]`)), `[1]`},
		{"primitive name as string", frame(14, []byte{2, 'y'}), `"y"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(mustDecode(t, c, tt.data)); got != tt.want {
				t.Errorf("Text = %s, want %s", got, tt.want)
			}
		})
	}
	_, err = c.Decode(t.Context(), "t", false, frame(4, []byte{0}))
	if !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("id 4: error %v, want ErrUnknownSchema", err)
	}
	if got := len(c.Schemas()); got != 6 {
		t.Errorf("Schemas() has %d ids, want 6", got)
	}
}

func TestOfflineDirErrors(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"empty dir", nil, "no <id>.avsc"},
		{"bad avsc", map[string]string{"1.avsc": `{"type":"record"}`}, "1.avsc"},
		{"bad json", map[string]string{SchemasFile: `{`}, SchemasFile},
		{"bad id", map[string]string{SchemasFile: `{"x": "long"}`}, `"x"`},
		{"duplicate id", map[string]string{"1.avsc": `"long"`, SchemasFile: `{"1": "long"}`}, "also"},
		{"references", map[string]string{SchemasFile: `{"1": {"schema": "\"long\"", "references": [{"name":"a","subject":"b","version":1}]}}`}, "references"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, dir, name, content)
			}
			_, err := New(Config{ValueSerde: "avro", SchemasDir: dir})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}

// TestSchemasRoundTrip fetches schemas from the registry (one with
// references), writes Codec.Schemas() as schemas.json, and decodes the
// same payloads offline to the same values.
func TestSchemasRoundTrip(t *testing.T) {
	reg, online := registryCodec(t, Config{})
	if _, err := reg.Register("money", `{"type":"record","name":"Money","fields":[{"name":"cents","type":"long"},{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}`); err != nil {
		t.Fatal(err)
	}
	id1, err := reg.Register("orders-value", `{"type":"record","name":"Order","fields":[{"name":"a","type":"Money"},{"name":"b","type":["null","Money"]}]}`,
		registrytestRef("Money", "money", 1))
	if err != nil {
		t.Fatal(err)
	}
	id2, _ := reg.RegisterType("j", "JSON", `{"type":"object"}`)
	full := `{"type":"record","name":"Order","fields":[{"name":"a","type":{"type":"record","name":"Money","fields":[{"name":"cents","type":"long"},{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}},{"name":"b","type":["null","Money"]}]}`
	money := map[string]any{"cents": int64(5), "at": int64(1700000000123)}
	p1 := encode(t, id1, full, map[string]any{"a": money, "b": map[string]any{"Money": money}})
	p2 := frame(id2, []byte(`{"k":true}`))
	want1, want2 := Text(mustDecode(t, online, p1)), Text(mustDecode(t, online, p2))
	// A capture that decodes nothing asks for the schemas by id instead.
	for _, p := range [][]byte{p1, p2} {
		id, ok := SchemaID(p)
		if !ok {
			t.Fatalf("SchemaID(%x) not framed", p)
		}
		sc, err := online.Schema(t.Context(), id)
		if err != nil || sc.Schema == "" {
			t.Fatalf("Schema(%d) = %+v, %v", id, sc, err)
		}
	}
	if _, ok := SchemaID([]byte{1, 0, 0, 0, 1}); ok {
		t.Error("SchemaID accepted a payload without the magic byte")
	}
	if _, err := online.Schema(t.Context(), 999); !errors.Is(err, ErrUnknownSchema) {
		t.Errorf("Schema(999) error %v, want ErrUnknownSchema", err)
	}

	dir := t.TempDir()
	data, err := json.Marshal(online.Schemas())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, SchemasFile, string(data))
	offline, err := New(Config{ValueSerde: "avro", SchemasDir: dir})
	if err != nil {
		t.Fatalf("read back %s: %v", data, err)
	}
	if got := Text(mustDecode(t, offline, p1)); got != want1 {
		t.Errorf("offline %s, online %s", got, want1)
	}
	if got := Text(mustDecode(t, offline, p2)); got != want2 {
		t.Errorf("offline %s, online %s", got, want2)
	}
}
