package codec

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// checkDigestField fails unless DigestField on data gives what Decode
// and DigestOf give of the field (or says the fast path does not apply,
// for a field of a record, array or map type, or none).
func checkDigestField(t *testing.T, c *Codec, data []byte, field string) {
	t.Helper()
	ctx := context.Background()
	v, err := c.Decode(ctx, "t", false, data)
	pv, pd, ok, perr := c.DigestField(ctx, "t", data, field)
	if err != nil || perr != nil {
		if ok || (perr != nil && err == nil) {
			t.Fatalf("DigestField ok %v error %v, Decode error %v", ok, perr, err)
		}
		if perr != nil {
			if err.Error() != perr.Error() {
				var de *DecodeError
				if !errors.As(perr, &de) {
					t.Fatalf("DigestField error %v (%T), Decode error %v", perr, perr, err)
				}
			}
		}
		return
	}
	m, isMap := v.(map[string]any)
	fv, has := m[field]
	scalar := false
	switch fv.(type) {
	case map[string]any, []any:
	default:
		scalar = true
	}
	if !ok {
		if isMap && has && scalar && fv != nil {
			// unions of scalars and scalars take the fast path (a null
			// may be a union's with a record, which DigestField declines)
			t.Fatalf("field %q of %s: DigestField declined", field, Text(v))
		}
		return
	}
	if !isMap || !has {
		t.Fatalf("DigestField picked %q from %s, which lacks it", field, Text(v))
	}
	if !reflect.DeepEqual(pv, fv) {
		t.Fatalf("field %q: DigestField %#v, Decode %#v", field, pv, fv)
	}
	if want := DigestOf(v); pd != want {
		t.Fatalf("field %q: DigestField digest %s, DigestOf %s, of %s", field, pd, want, Text(v))
	}
}

// TestDigestField checks DigestField against Decode on random values of
// a record with every type, for every field.
func TestDigestField(t *testing.T) {
	c := offlineCodec(t, map[int]string{7: allTypes, 2: listSchema})
	r := rand.New(rand.NewPCG(21, 22))
	fields := []string{"n", "b", "i", "l", "f", "d", "s", "by", "fx", "e", "a", "m", "u1", "u2", "sub", "subs", "dec", "decf", "uuid", "date", "tms", "tus", "tsms", "tsus", "lts", "nope"}
	for range 300 {
		data := encode(t, 7, allTypes, randomAllTypes(r))
		for _, f := range fields {
			checkDigestField(t, c, data, f)
		}
		checkDigestField(t, c, encode(t, 2, listSchema, randomList(r, 3)), "v")
	}
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"truncated", encode(t, 7, allTypes, randomAllTypes(r))[:20]},
		{"not framed", []byte("x")},
		{"unknown id", frame(99, []byte{0})},
	} {
		t.Run(tt.name, func(t *testing.T) { checkDigestField(t, c, tt.data, "s") })
	}
}

// FuzzDigestField checks DigestField against Decode on any payload.
func FuzzDigestField(f *testing.F) {
	f.Add(uint8(6), encode(f, 1, fuzzSchemas[1], allTypesValue()))
	f.Add(uint8(0), []byte{0, 0, 0, 0, 9, 1})
	dir := f.TempDir()
	for id, s := range fuzzSchemas {
		writeFileTB(f, dir, itoa(int32(id))+".avsc", s)
	}
	c, err := New(Config{ValueSerde: SerdeAvro, SchemasDir: dir})
	if err != nil {
		f.Fatal(err)
	}
	fields := []string{"n", "b", "i", "l", "f", "d", "s", "by", "fx", "e", "a", "m", "u1", "u2", "sub", "v", "next", "kids"}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkDigestField(t, c, data, fields[int(which)%len(fields)])
	})
}
