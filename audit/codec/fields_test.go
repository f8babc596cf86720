package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// checkDecodeFields fails unless DecodeFields on data gives Decode's value
// restricted to fields, or Decode's error; it may decline (ok false, no
// error) only where the value is not a framed Avro record.
func checkDecodeFields(t *testing.T, c *Codec, data []byte, fields []string) {
	t.Helper()
	ctx := context.Background()
	v, err := c.Decode(ctx, "t", false, data)
	fv, ok, ferr := c.DecodeFields(ctx, "t", data, fields)
	checkFieldTexts(t, c, data, fields, fv, ok, ferr)
	if ferr != nil {
		if err == nil || err.Error() != ferr.Error() {
			t.Fatalf("DecodeFields error %v, Decode error %v", ferr, err)
		}
		if ok || fv != nil {
			t.Fatalf("DecodeFields failed with ok %v and value %v", ok, fv)
		}
		return
	}
	m, isMap := v.(map[string]any)
	framed := len(data) >= 5 && data[0] == 0
	if !ok {
		if fv != nil {
			t.Fatalf("DecodeFields declined with value %v", fv)
		}
		if framed && err == nil && isMap && !isDuration(m) {
			t.Fatalf("DecodeFields declined the record %s", Text(v))
		}
		return
	}
	if err != nil {
		t.Fatalf("DecodeFields gave %s, Decode error %v", Text(fv), err)
	}
	if !isMap {
		t.Fatalf("DecodeFields gave %s of %s, not a record", Text(fv), Text(v))
	}
	want := map[string]any{}
	for _, f := range fields {
		if x, has := m[f]; has {
			want[f] = x
		}
	}
	if !reflect.DeepEqual(fv, want) {
		t.Fatalf("DecodeFields %v = %#v, want %#v", fields, fv, want)
	}
	if DigestOf(fv) != DigestOf(want) {
		t.Fatalf("DecodeFields %v = %s, want %s", fields, Text(fv), Text(want))
	}
}

// checkFieldTexts fails unless FieldTexts on data gives, for each field,
// the canonical text of DecodeFields' value of it (fv, ok and ferr), or
// its error; it may decline only where DecodeFields does or a field asked
// for is a record, an array or a map, and then leaves dst as it was.
func checkFieldTexts(t *testing.T, c *Codec, data []byte, fields []string, fv map[string]any, ok bool, ferr error) {
	t.Helper()
	dst := []byte("prefix")
	spans := make([][2]int, len(fields))
	out, tok, terr := c.FieldTexts(context.Background(), "t", data, fields, dst, spans)
	if string(out[:min(len(out), 6)]) != "prefix" {
		t.Fatalf("FieldTexts changed what dst held: %q", out)
	}
	if !tok && len(out) != len(dst) {
		t.Fatalf("FieldTexts declined and appended %q", out[len(dst):])
	}
	nested := false // a field asked for is of a record, array or map type
	if len(data) >= 5 && data[0] == 0 {
		if sch, err := c.schema(context.Background(), int32(binary.BigEndian.Uint32(data[1:5]))); err == nil && sch.node != nil && sch.node.kind == kRecord {
			for i, f := range sch.node.fields {
				nested = nested || slices.Contains(fields, sch.node.names[i]) && !scalarNode(f, 0)
			}
		}
	}
	if !tok && terr == nil && nested {
		return // declined before reading the payload
	}
	if (terr == nil) != (ferr == nil) || terr != nil && terr.Error() != ferr.Error() {
		t.Fatalf("FieldTexts error %v, DecodeFields error %v", terr, ferr)
	}
	if !tok {
		if ok {
			t.Fatalf("FieldTexts declined %v, DecodeFields gave %s", fields, Text(fv))
		}
		return
	}
	if !ok {
		t.Fatalf("FieldTexts gave %q where DecodeFields declined", out)
	}
	for i, f := range fields {
		x, has := fv[f]
		sp := spans[i]
		if !has {
			if sp != [2]int{-1, -1} {
				t.Fatalf("FieldTexts gave field %s, which the record lacks, span %v", f, sp)
			}
			continue
		}
		if sp[0] < len(dst) || sp[1] > len(out) || string(out[sp[0]:sp[1]]) != Text(x) {
			t.Fatalf("FieldTexts %s = span %v of %q, want %s", f, sp, out, Text(x))
		}
		if DigestText(out[sp[0]:sp[1]]) != DigestOf(x) {
			t.Fatalf("DigestText of %s is not DigestOf its value", f)
		}
	}
}

// isDuration reports whether m is a decoded duration, the one map
// Decode builds of a schema that is not a record or a map.
func isDuration(m map[string]any) bool {
	return len(m) == 3 && m["months"] != nil && m["days"] != nil && m["milliseconds"] != nil
}

// TestDecodeFields checks DecodeFields against Decode on the payloads a
// join reads, every field of a record of every type alone and together,
// names the record lacks, and payloads Decode rejects for a fault in a
// field not asked for.
func TestDecodeFields(t *testing.T) {
	schemas := map[int]string{
		1: allTypes,
		2: listSchema,
		3: eventSchema,
		4: `{"type":"array","items":"long"}`,
		5: `{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"u","type":["null","int"]},{"name":"z","type":{"type":"array","items":"null"}},{"name":"b","type":"boolean"}]}`,
		6: `{"type":"record","name":"Empty","fields":[]}`,
	}
	c := offlineCodec(t, schemas)
	event := frame(3, eventPayload(t)[5:])
	all := encode(t, 1, allTypes, allTypesValue())
	rec := func(body ...byte) []byte { return frame(5, body) }
	for _, tt := range []struct {
		name   string
		data   []byte
		fields []string
		want   string // Text of the map, or "error" or "declined"
	}{
		{"join fields", event, []string{"orderId", "amount"}, `{"amount":3497.26,"orderId":"order-728518"}`},
		{"last field", event, []string{"note"}, `{"note":"orders event 2: tetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud ex"}`},
		{"no fields", event, nil, `{}`},
		{"missing field", event, []string{"orderId", "nope"}, `{"orderId":"order-728518"}`},
		{"a field twice", event, []string{"amount", "amount"}, `{"amount":3497.26}`},
		{"nested and unions", all, []string{"sub", "subs", "u1", "u2", "m", "a"}, `{"a":[1,2],"m":{"a":"first","z":"last"},"sub":{"x":1},"subs":[{"x":2},{"x":3}],"u1":7,"u2":"RED"}`},
		{"logical types", all, []string{"dec", "decf", "date", "tsus", "tms"}, `{"date":"2026-11-30","dec":"-12.30","decf":"0.005","tms":"03:04:05.006","tsus":"2026-11-30T10:01:02.345678Z"}`},
		{"empty record", frame(6, nil), []string{"a"}, `{}`},
		{"valid", rec(2, 'x', 0, 2, 2, 0, 1), []string{"a", "b"}, `{"a":"x","b":true}`},
		{"skipped string truncated", rec(20, 'x'), []string{"b"}, "error"},
		{"skipped string length negative", rec(1), []string{"b"}, "error"},
		{"skipped enum out of range", rec(0, 2, 0, 0, 0), []string{"a"}, "error"},
		{"skipped union index out of range", rec(0, 0, 4, 0, 0), []string{"a"}, "error"},
		{"skipped boolean byte", rec(0, 0, 0, 0, 2), []string{"a"}, "error"},
		{"skipped huge block of null items", rec(0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0), []string{"a"}, "error"},
		{"trailing bytes", rec(0, 0, 0, 0, 0, 7), []string{"a"}, "error"},
		{"truncated at the end", rec(0, 0, 0, 0), []string{"a"}, "error"},
		{"unknown schema", frame(99, []byte{0}), []string{"a"}, "error"},
		{"not a record", encode(t, 4, schemas[4], []int64{1, 2}), []string{"a"}, "declined"},
		{"not framed", []byte("{}"), []string{"a"}, "declined"},
		{"short frame", []byte{0, 0, 0}, []string{"a"}, "declined"},
		{"null", nil, []string{"a"}, "declined"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkDecodeFields(t, c, tt.data, tt.fields)
			v, ok, err := c.DecodeFields(context.Background(), "t", tt.data, tt.fields)
			switch tt.want {
			case "error":
				if err == nil {
					t.Fatalf("DecodeFields = %s, %v, want an error", Text(v), ok)
				}
				asDecodeError(t, err)
			case "declined":
				if ok || err != nil {
					t.Fatalf("DecodeFields = %s, %v, %v; want it to decline", Text(v), ok, err)
				}
			default:
				if !ok || err != nil || Text(v) != tt.want {
					t.Fatalf("DecodeFields = %s, %v, %v; want %s", Text(v), ok, err, tt.want)
				}
			}
		})
	}
	t.Run("every field", func(t *testing.T) {
		r := rand.New(rand.NewPCG(61, 62))
		names := slices.Sorted(maps.Keys(allTypesValue()))
		for range 200 {
			data := encode(t, 1, allTypes, randomAllTypes(r))
			for _, name := range names {
				checkDecodeFields(t, c, data, []string{name})
			}
			checkDecodeFields(t, c, data, names)
			checkDecodeFields(t, c, encode(t, 2, listSchema, randomList(r, 3)), []string{"v", "kids", "m"})
		}
	})
}

// TestDecodeFieldsSkipsStrings checks that the strings of fields not
// asked for are not copied: the bytes DecodeFields allocates do not grow
// with the note's length.
func TestDecodeFieldsSkipsStrings(t *testing.T) {
	c := offlineCodec(t, map[int]string{1: eventSchema})
	allocated := func(note string) uint64 {
		data := encode(t, 1, eventSchema, map[string]any{
			"orderId": "order-1", "amount": 1.5, "customer": "c", "currency": "EUR", "status": "NEW", "note": note,
		})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 100 {
			if _, ok, err := c.DecodeFields(context.Background(), "t", data, []string{"orderId", "amount"}); !ok || err != nil {
				t.Fatalf("DecodeFields: %v, %v", ok, err)
			}
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 100
	}
	short, long := allocated("n"), allocated(strings.Repeat("n", 10000))
	if long > short+64 {
		t.Errorf("DecodeFields allocated %d bytes for a record with a long note, %d with a short one", long, short)
	}
}

// FuzzDecodeFields checks DecodeFields against Decode on any payload and
// any set of FuzzDecode's schemas' field names.
func FuzzDecodeFields(f *testing.F) {
	f.Add(uint32(0b11), encode(f, 1, fuzzSchemas[1], allTypesValue()))
	f.Add(uint32(0xffffffff), encode(f, 1, fuzzSchemas[1], allTypesValue()))
	f.Add(uint32(1<<15|1<<16), encode(f, 2, fuzzSchemas[2], map[string]any{"v": 1, "next": nil, "kids": []any{map[string]any{"v": 2, "next": nil, "kids": []any{}, "m": map[string]any{}}}, "m": map[string]any{"x": map[string]any{"double": 1.5}}}))
	f.Add(uint32(1), encode(f, 3, fuzzSchemas[3], []any{nil, nil, nil}))
	f.Add(uint32(1), frame(4, []byte{0xff, 0xff, 0x85}))
	f.Add(uint32(1), []byte{0, 0, 0, 0, 9, 1})
	f.Add(uint32(1), []byte{1, 2, 3})
	dir := f.TempDir()
	for id, s := range fuzzSchemas {
		writeFileTB(f, dir, itoa(int32(id))+".avsc", s)
	}
	c, err := New(Config{ValueSerde: SerdeAvro, SchemasDir: dir})
	if err != nil {
		f.Fatal(err)
	}
	names := []string{"n", "b", "i", "l", "f", "d", "s", "by", "fx", "e", "a", "m", "u1", "u2", "sub", "v", "next", "kids", "subs", "dec", "decf", "uuid", "date", "tms", "tus", "tsms", "tsus", "lts", "nope"}
	f.Fuzz(func(t *testing.T, which uint32, data []byte) {
		var fields []string
		for i, name := range names {
			if which&(1<<(i%32)) != 0 {
				fields = append(fields, name)
			}
		}
		checkDecodeFields(t, c, data, fields)
		_, _, err := c.DecodeFields(context.Background(), "t", data, fields)
		var de *DecodeError
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
		}
	})
}
