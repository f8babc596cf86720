package audit

import (
	"encoding/json"
	"testing"
)

// TestSchemaJSON: an Avro schema without dependencies is written as its
// text (as bundles held schemas before), any other as an object; every
// form a schemas.json or a manifest holds reads back.
func TestSchemaJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Schema
		out  string
	}{
		{`"\"string\""`, Schema{Schema: `"string"`}, `"\"string\""`},
		{`{"type":"record","name":"R","fields":[]}`, Schema{Schema: `{"type":"record","name":"R","fields":[]}`}, `"{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}"`},
		{`{"schema":"{}","schemaType":"JSON"}`, Schema{Schema: `{}`, Type: "JSON"}, `{"schema":"{}","schemaType":"JSON"}`},
		{`{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF","dependencies":{"a.proto":"x"}}`,
			Schema{Schema: `syntax = "proto3";`, Type: "PROTOBUF", Deps: map[string]string{"a.proto": "x"}},
			`{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF","dependencies":{"a.proto":"x"}}`},
		{`{"schema":"\"long\"","references":[]}`, Schema{Schema: `"long"`}, `"\"long\""`},
	} {
		var s Schema
		if err := json.Unmarshal([]byte(tc.in), &s); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !s.Equal(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.in, s, tc.want)
		}
		if b, _ := json.Marshal(s); string(b) != tc.out {
			t.Errorf("%s: written %s, want %s", tc.in, b, tc.out)
		}
	}
	var s Schema
	if err := json.Unmarshal([]byte(`{"schema":"x","schemaType":"PROTOBUF","references":[{"name":"a.proto","subject":"a","version":1}]}`), &s); err == nil {
		t.Error("a schema with unresolved references was accepted")
	}
}

// FuzzSchemaJSON: no panic; what reads writes and reads back the same.
func FuzzSchemaJSON(f *testing.F) {
	f.Add([]byte(`"\"string\""`))
	f.Add([]byte(`{"schema":"syntax","schemaType":"PROTOBUF","dependencies":{"a":"b"}}`))
	f.Add([]byte(`{"type":"fixed","size":3,"name":"F"}`))
	f.Add([]byte(`{"schema":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Schema
		if json.Unmarshal(b, &s) != nil {
			return
		}
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("marshal %+v: %v", s, err)
		}
		var back Schema
		if err := json.Unmarshal(out, &back); err != nil || !back.Equal(s) {
			t.Fatalf("%s read back as %+v (%v), want %+v", out, back, err, s)
		}
	})
}
