package infer

import (
	"testing"
)

// FuzzFieldOrder: any bytes give a field order or nil, never a panic.
func FuzzFieldOrder(f *testing.F) {
	f.Add([]byte(`{"b": 1, "a": {"c": 2}}`))
	f.Add([]byte{0, 0, 0, 0, 1, 2})
	f.Add([]byte(`[1, 2]`))
	schema := func(id int32) (string, bool) {
		return `{"type":"record","name":"r","fields":[{"name":"x","type":"long"}]}`, id == 1
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		FieldOrder(b, schema)
		GuessSerde([][]byte{b, nil}, nil)
	})
}
