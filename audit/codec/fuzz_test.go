package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

var fuzzSchemas = map[int]string{
	1: allTypes,
	2: `{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]},{"name":"kids","type":{"type":"array","items":"L"}},{"name":"m","type":{"type":"map","values":["null","double"]}}]}`,
	3: `{"type":"array","items":"null"}`,
	4: `{"type":"fixed","name":"D","size":3,"logicalType":"decimal","precision":6,"scale":2}`,
}

// FuzzDecode feeds arbitrary payloads to every serde. Invariants: no
// panic; a failure is a *DecodeError (the schemas are offline, so never a
// registry error); a success has canonical JSON that re-parses to the same
// canonical JSON; DecodeDigest and DigestBytes fail alike or return the
// same value and DigestOf it.
func FuzzDecode(f *testing.F) {
	for id, schema := range fuzzSchemas {
		switch id {
		case 1:
			f.Add(byte(0), encode(f, 1, schema, allTypesValue()))
		case 2:
			f.Add(byte(0), encode(f, 2, schema, map[string]any{"v": 1, "next": nil, "kids": []any{map[string]any{"v": 2, "next": nil, "kids": []any{}, "m": map[string]any{}}}, "m": map[string]any{"x": map[string]any{"double": 1.5}}}))
		case 3:
			f.Add(byte(0), encode(f, 3, schema, []any{nil, nil, nil}))
		case 4:
			f.Add(byte(0), frame(4, []byte{0xff, 0xff, 0x85}))
		}
	}
	f.Add(byte(1), []byte(`{"a":[1,2.5e3,"x",null,true]}`))
	f.Add(byte(2), []byte("text"))
	f.Add(byte(3), binary.BigEndian.AppendUint64(nil, 42))
	f.Add(byte(4), []byte{0, 0, 0, 1})
	f.Add(byte(0), []byte{0, 0, 0, 0, 9, 1})
	f.Add(byte(0), []byte{1, 2, 3})
	// protobuf (schema id 5, orderProto) and json-schema
	deps := map[string]string{"money.proto": moneyProto}
	f.Add(byte(11), append(frame(5, []byte{0}), protoEncode(f, orderProto, deps, []int{0}, fullOrder)...))
	f.Add(byte(11), append(frame(5, protoHeader([]int{0, 1})), protoEncode(f, orderProto, deps, []int{0, 1}, `{"sku":"s","qty":-1}`)...))
	f.Add(byte(11), frame(5, []byte{4, 0x80}))
	f.Add(byte(12), frame(9, []byte(`{"a":[1,2.5e3,"x",null,true]}`)))

	dir := f.TempDir()
	for id, s := range fuzzSchemas {
		writeFileTB(f, dir, itoa(int32(id))+".avsc", s)
	}
	writeFileTB(f, dir, SchemasFile, `{"5": {"schema": `+jsonString(orderProto)+`, "schemaType": "PROTOBUF", "dependencies": {"money.proto": `+jsonString(moneyProto)+`}}}`)
	serdes := []string{SerdeAvro, SerdeJSON, SerdeString, SerdeLong, SerdeInt, SerdeShort, SerdeDouble, SerdeFloat, SerdeUUID, SerdeBytes, SerdeVoid, SerdeProtobuf, SerdeJSONSchema}
	if len(serdes) != len(Serdes) {
		f.Fatalf("FuzzDecode covers %d serdes of %d", len(serdes), len(Serdes))
	}
	codecs := make([]*Codec, len(Serdes))
	for i, s := range serdes {
		c, err := New(Config{ValueSerde: s, SchemasDir: dir})
		if err != nil {
			f.Fatal(err)
		}
		codecs[i] = c
	}
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		c := codecs[int(which)%len(codecs)]
		v, err := c.Decode(context.Background(), "t", false, data)
		fv, fd, ferr := c.DecodeDigest(context.Background(), "t", false, data)
		if (err == nil) != (ferr == nil) || err != nil && err.Error() != ferr.Error() {
			t.Fatalf("Decode error %v, DecodeDigest error %v", err, ferr)
		}
		bd, berr := c.DigestBytes(context.Background(), "t", false, data)
		if (err == nil) != (berr == nil) || err != nil && err.Error() != berr.Error() {
			t.Fatalf("Decode error %v, DigestBytes error %v", err, berr)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
			}
			return
		}
		if !reflect.DeepEqual(v, fv) {
			t.Fatalf("DecodeDigest value %s, Decode value %s", Text(fv), Text(v))
		}
		if want := DigestOf(v); fd != want || bd != want {
			t.Fatalf("DecodeDigest digest %s, DigestBytes %s, DigestOf %s, of %s", fd, bd, want, Text(v))
		}
		text := Canonical(v)
		back, err := decodeJSON(text)
		if err != nil {
			t.Fatalf("canonical text %q does not parse: %v", text, err)
		}
		if again := Canonical(back); string(again) != string(text) {
			t.Fatalf("canonical text not stable:\n%s\n%s", text, again)
		}
		if DigestOf(v) != DigestOf(back) {
			t.Fatalf("digest changed after a JSON round trip of %s", text)
		}
	})
}

func writeFileTB(tb testing.TB, dir, name, content string) {
	tb.Helper()
	if err := writeFileErr(dir, name, content); err != nil {
		tb.Fatal(err)
	}
}

// FuzzSplitWindowedKey: no panic; a split key is the inner key, the start
// and the sequence number exactly (AppendWindowedKey gives the input
// back); a key shorter than its suffix is an error.
func FuzzSplitWindowedKey(f *testing.F) {
	f.Add([]byte("k\x00\x00\x00\x00\x00\x00\xea\x60\x00\x00\x00\x00"), true)
	f.Add([]byte("k\x00\x00\x00\x00\x00\x00\xea\x60"), false)
	f.Add([]byte{}, true)
	f.Add([]byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, b []byte, withSeq bool) {
		inner, start, seq, err := SplitWindowedKey(b, withSeq)
		n := 8
		if withSeq {
			n = 12
		}
		if err != nil {
			if len(b) >= n {
				t.Fatalf("%d bytes: %v", len(b), err)
			}
			return
		}
		if len(b) < n {
			t.Fatalf("%d bytes split without error", len(b))
		}
		if got := AppendWindowedKey(nil, inner, start, withSeq, seq); string(got) != string(b) {
			t.Fatalf("round trip %x, want %x", got, b)
		}
		_ = append(inner, 0) // the inner slice is capped: appending never writes over the start
		if again, _, _, _ := SplitWindowedKey(b, withSeq); string(again) != string(inner) {
			t.Fatal("append to the inner key changed the input")
		}
	})
}

// FuzzProtobufSchema compiles arbitrary schema text (a registry's answer
// is not trusted), .proto or a base64 descriptor, with one import: no
// panic, and a schema that compiles decodes a first-message record
// without panicking either.
func FuzzProtobufSchema(f *testing.F) {
	f.Add(orderProto, moneyProto)
	f.Add(`syntax = "proto2"; message M { optional int32 a = 1 [default = 5]; repeated group G = 2 { optional string s = 3; } }`, "")
	f.Add(`syntax = "proto3"; import "money.proto"; message M { shop.Money m = 1; map<int64, shop.Money> x = 2; }`, moneyProto)
	f.Add(`syntax = "proto3"; import "money.proto"; message M {}`, `syntax = "proto3"; import "kaudit-schema.proto"; message X {}`)
	f.Add("CgRhLnByb3RvIgMKAU0=", "")
	f.Add(`message`, `}`)
	f.Fuzz(func(t *testing.T, schema, dep string) {
		if len(schema)+len(dep) > 1<<14 {
			return
		}
		fd, err := compileProto(context.Background(), schema, map[string]string{"money.proto": dep})
		if err != nil {
			return
		}
		if fd.Messages().Len() > 0 {
			_, _ = decodeProtobuf(fd, []byte{0, 8, 1, 0x12, 0}, "")
		}
	})
}
