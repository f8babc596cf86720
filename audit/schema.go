package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"unicode/utf8"
)

// Schema is one Schema Registry schema, self-contained: its text, its
// type as the registry names it (AVRO when empty, JSON, PROTOBUF) and, for
// Protobuf, the text of every file it imports, directly or not, by import
// path (its references resolved; the well-known google/protobuf/ files
// need none). A capture stores the schemas of the records it copies in
// this form, and an offline audit decodes with them.
//
// In JSON an Avro schema without dependencies is its text as a JSON
// string (what bundles held before other types were kept), any other one
// the object {"schema", "schemaType", "dependencies"}.
type Schema struct {
	Schema string `json:"schema"`
	Type   string `json:"schemaType,omitempty"`
	// Deps are the imported files' texts by import path (Protobuf).
	Deps map[string]string `json:"dependencies,omitempty"`
}

// IsAvro reports whether the schema is Avro (the registry's default type).
func (s Schema) IsAvro() bool { return s.Type == "" || strings.EqualFold(s.Type, "AVRO") }

// Equal reports whether two schemas are the same text, type and
// dependencies.
func (s Schema) Equal(o Schema) bool {
	return s.Schema == o.Schema && strings.EqualFold(normType(s.Type), normType(o.Type)) && maps.Equal(s.Deps, o.Deps)
}

func normType(t string) string {
	if t == "" {
		return "AVRO"
	}
	return t
}

type schemaJSON struct {
	Schema string            `json:"schema"`
	Type   string            `json:"schemaType,omitempty"`
	Deps   map[string]string `json:"dependencies,omitempty"`
}

// MarshalJSON writes an Avro schema without dependencies as its text (a
// JSON string), every other one as an object.
func (s Schema) MarshalJSON() ([]byte, error) {
	if s.IsAvro() && len(s.Deps) == 0 {
		return json.Marshal(s.Schema)
	}
	return json.Marshal(schemaJSON(s))
}

// UnmarshalJSON reads a JSON string (an Avro schema's text), Confluent's
// object {"schema": "…", "schemaType": "…"} with this type's
// "dependencies", or an Avro schema written as JSON itself ({"type": …}).
// Confluent's "references" are refused: offline, a reference cannot be
// resolved, so the files it names belong in "dependencies".
func (s *Schema) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		*s = Schema{}
		return json.Unmarshal(b, &s.Schema)
	}
	var obj map[string]json.RawMessage
	if len(b) > 0 && b[0] == '{' && json.Unmarshal(b, &obj) == nil {
		_, avroType := obj["type"]
		if _, ok := obj["schema"]; ok && !avroType {
			if refs, ok := obj["references"]; ok && !bytes.Equal(bytes.TrimSpace(refs), []byte("null")) && !bytes.Equal(bytes.TrimSpace(refs), []byte("[]")) {
				return errors.New("a schema with references: resolve them into dependencies (import path: text)")
			}
			var v schemaJSON
			if err := json.Unmarshal(b, &v); err != nil {
				return err
			}
			*s = Schema(v)
			return nil
		}
	}
	if !json.Valid(b) || !utf8.Valid(b) {
		return errors.New("a schema is a JSON string, an object or Avro's JSON in UTF-8")
	}
	*s = Schema{Schema: string(b)}
	return nil
}
