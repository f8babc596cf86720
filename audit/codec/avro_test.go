package codec

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaudit/kaudit/internal/golden"
)

// allTypes is a record with a field of every Avro type and logical type.
const allTypes = `{"type":"record","name":"All","namespace":"t","fields":[
 {"name":"n","type":"null"},
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"s","type":"string"},
 {"name":"by","type":"bytes"},
 {"name":"fx","type":{"type":"fixed","name":"F4","size":4}},
 {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN"]}},
 {"name":"a","type":{"type":"array","items":"long"}},
 {"name":"m","type":{"type":"map","values":"string"}},
 {"name":"u1","type":["null","long"]},
 {"name":"u2","type":["null","string","t.Color"]},
 {"name":"sub","type":{"type":"record","name":"Sub","fields":[{"name":"x","type":"int"}]}},
 {"name":"subs","type":{"type":"array","items":"Sub"}},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
 {"name":"decf","type":{"type":"fixed","name":"D8","size":8,"logicalType":"decimal","precision":18,"scale":3}},
 {"name":"uuid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"date","type":{"type":"int","logicalType":"date"}},
 {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}}
]}`

func allTypesValue() map[string]any {
	ts := time.Date(2026, 11, 30, 10, 1, 2, 345_000_000, time.UTC)
	return map[string]any{
		"n": nil, "b": true, "i": 42, "l": int64(-9007199254740993),
		"f": float32(0.1), "d": 2.5e-8, "s": "héllo \"q\"\n", "by": []byte{0, 1, 0xfe, 0xff},
		"fx": [4]byte{'a', 'b', 'c', 'd'}, "e": "GREEN", "a": []any{int64(1), int64(2)},
		"m":  map[string]any{"z": "last", "a": "first"},
		"u1": map[string]any{"long": int64(7)}, "u2": map[string]any{"t.Color": "RED"},
		"sub": map[string]any{"x": 1}, "subs": []any{map[string]any{"x": 2}, map[string]any{"x": 3}},
		"dec":  big.NewRat(-1230, 100),
		"decf": big.NewRat(5, 1000),
		"uuid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
		"date": time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC),
		"tms":  3*time.Hour + 4*time.Minute + 5*time.Second + 6*time.Millisecond,
		"tus":  23*time.Hour + 59*time.Minute + 59*time.Second + 999999*time.Microsecond,
		"tsms": ts, "tsus": ts.Add(678 * time.Microsecond), "lts": ts,
	}
}

// TestAvroAllTypesGolden round-trips a record with every type through
// hamba's encoder, Confluent framing and Decode, and compares its canonical
// text with testdata/alltypes.golden.
func TestAvroAllTypesGolden(t *testing.T) {
	c := offlineCodec(t, map[int]string{7: allTypes})
	v := mustDecode(t, c, encode(t, 7, allTypes, allTypesValue()))
	got := Text(v) + "\n"
	golden.Check(t, filepath.Join("testdata", "alltypes.golden"), []byte(got))
	// The value is made of plain JSON-model types only.
	checkPlain(t, v)
}

func checkPlain(t *testing.T, v any) {
	t.Helper()
	switch x := v.(type) {
	case nil, bool, string, json.Number:
	case []any:
		for _, e := range x {
			checkPlain(t, e)
		}
	case map[string]any:
		for _, e := range x {
			checkPlain(t, e)
		}
	default:
		t.Errorf("value %v has type %T, not a JSON-model type", v, v)
	}
}

// TestAvroTypes checks each type's mapping on its own, with edge values.
func TestAvroTypes(t *testing.T) {
	for _, tt := range []struct {
		name   string
		schema string
		in     any
		want   string // canonical text
	}{
		{"null", `"null"`, nil, `null`},
		{"boolean false", `"boolean"`, false, `false`},
		{"int min", `"int"`, math.MinInt32, `-2147483648`},
		{"long max", `"long"`, int64(math.MaxInt64), `9223372036854775807`},
		{"float shortest", `"float"`, float32(1.1), `1.1`},
		{"float integral", `"float"`, float32(3), `3`},
		{"double small", `"double"`, 1.5e-7, `1.5e-7`},
		{"double large", `"double"`, 1e21, `1e+21`},
		{"double negative zero", `"double"`, math.Copysign(0, -1), `0`},
		{"double NaN", `"double"`, math.NaN(), `"NaN"`},
		{"double +Inf", `"double"`, math.Inf(1), `"Infinity"`},
		{"double -Inf", `"double"`, math.Inf(-1), `"-Infinity"`},
		{"string empty", `"string"`, "", `""`},
		{"string control", `"string"`, "a\x01b\tc", `"a\u0001b\tc"`},
		{"bytes empty", `"bytes"`, []byte{}, `""`},
		{"bytes", `"bytes"`, []byte("hi!"), `"aGkh"`},
		{"fixed", `{"type":"fixed","name":"F","size":3}`, [3]byte{1, 2, 3}, `"AQID"`},
		{"enum", `{"type":"enum","name":"E","symbols":["A","B","C"]}`, "C", `"C"`},
		{"array empty", `{"type":"array","items":"int"}`, []int{}, `[]`},
		{"array of null", `{"type":"array","items":"null"}`, []any{nil, nil}, `[null,null]`},
		{"map sorted", `{"type":"map","values":"int"}`, map[string]int{"b": 2, "a": 1, "é": 3}, `{"a":1,"b":2,"é":3}`},
		{"union null", `["null","string"]`, nil, `null`},
		{"union string branch", `["null","string","long"]`, map[string]any{"string": "x"}, `"x"`},
		{"union long branch", `["null","string","long"]`, map[string]any{"long": int64(5)}, `5`},
		{"union record branch", `["null",{"type":"record","name":"R","fields":[{"name":"a","type":"int"}]}]`,
			map[string]any{"R": map[string]any{"a": 1}}, `{"a":1}`},
		{"recursive record", `{"type":"record","name":"L","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","L"]}]}`,
			map[string]any{"v": 1, "next": map[string]any{"L": map[string]any{"v": 2, "next": nil}}}, `{"next":{"next":null,"v":2},"v":1}`},
		{"decimal zero scale", `{"type":"bytes","logicalType":"decimal","precision":5}`, big.NewRat(-42, 1), `"-42"`},
		{"decimal small fraction", `{"type":"bytes","logicalType":"decimal","precision":9,"scale":4}`, big.NewRat(-5, 10000), `"-0.0005"`},
		{"decimal big", `{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}`,
			new(big.Rat).SetFrac(new(big.Int).Exp(big.NewInt(10), big.NewInt(30), nil), big.NewInt(100)), `"10000000000000000000000000000.00"`},
		{"decimal fixed negative", `{"type":"fixed","name":"D","size":4,"logicalType":"decimal","precision":8,"scale":2}`, big.NewRat(-1, 100), `"-0.01"`},
		{"uuid string", `{"type":"string","logicalType":"uuid"}`, "00000000-0000-0000-0000-000000000001", `"00000000-0000-0000-0000-000000000001"`},
		{"date epoch", `{"type":"int","logicalType":"date"}`, time.Unix(0, 0).UTC(), `"1970-01-01"`},
		{"date before epoch", `{"type":"int","logicalType":"date"}`, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), `"1969-12-31"`},
		{"time-millis midnight", `{"type":"int","logicalType":"time-millis"}`, time.Duration(0), `"00:00:00.000"`},
		{"timestamp-millis whole second", `{"type":"long","logicalType":"timestamp-millis"}`, time.Unix(1700000000, 0), `"2023-11-14T22:13:20Z"`},
		{"timestamp-micros before epoch", `{"type":"long","logicalType":"timestamp-micros"}`, time.UnixMicro(-1), `"1969-12-31T23:59:59.999999Z"`},
		{"local-timestamp-micros", `{"type":"long","logicalType":"local-timestamp-micros"}`, time.UnixMicro(1_500_000), `"1970-01-01T00:00:01.5"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := offlineCodec(t, map[int]string{1: tt.schema})
			v := mustDecode(t, c, encode(t, 1, tt.schema, tt.in))
			if got := Text(v); got != tt.want {
				t.Errorf("Text = %s, want %s", got, tt.want)
			}
			checkPlain(t, v)
		})
	}
}

// TestAvroUUIDFixedAndDuration covers logical types hamba's encoder does
// not produce from Go values: they are written as plain fixed bytes.
func TestAvroUUIDFixedAndDuration(t *testing.T) {
	uuidSchema := `{"type":"fixed","name":"U","size":16,"logicalType":"uuid"}`
	durSchema := `{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}`
	plainU := `{"type":"fixed","name":"U","size":16}`
	plainD := `{"type":"fixed","name":"Dur","size":12}`
	c := offlineCodec(t, map[int]string{1: uuidSchema, 2: durSchema})
	u := [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}
	if got, want := Text(mustDecode(t, c, encode(t, 1, plainU, u))), `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`; got != want {
		t.Errorf("uuid fixed = %s, want %s", got, want)
	}
	d := [12]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 1, 0, 0}
	if got, want := Text(mustDecode(t, c, encode(t, 2, plainD, d))), `{"days":2,"milliseconds":259,"months":1}`; got != want {
		t.Errorf("duration = %s, want %s", got, want)
	}
}

// TestAvroMalformed checks that broken payloads are DecodeErrors with the
// right sentinel, never panics or wrong values.
func TestAvroMalformed(t *testing.T) {
	rec := `{"type":"record","name":"R","fields":[{"name":"s","type":"string"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},{"name":"u","type":["null","int"]}]}`
	arr := `{"type":"array","items":"null"}`
	c := offlineCodec(t, map[int]string{1: rec, 2: `"long"`, 3: arr, 4: `{"type":"array","items":"long"}`})
	for _, tt := range []struct {
		name     string
		data     []byte
		sentinel error // nil: a plain DecodeError
		schemaID int32
	}{
		{"not framed", []byte("{\"a\":1}"), ErrNotFramed, -1},
		{"short frame", []byte{0, 0, 0}, ErrTruncated, -1},
		{"unknown id", frame(99, []byte{2}), ErrUnknownSchema, 99},
		{"string past end", frame(1, []byte{20, 'a'}), ErrTruncated, 1},
		{"negative string length", frame(1, []byte{1}), nil, 1},
		{"enum index out of range", frame(1, []byte{0, 2, 0}), nil, 1},
		{"union index out of range", frame(1, []byte{0, 0, 4}), nil, 1},
		{"missing union", frame(1, []byte{0, 0}), ErrTruncated, 1},
		{"varint too long", frame(2, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}), nil, 2},
		{"trailing bytes", frame(2, []byte{2, 0}), nil, 2},
		{"empty body", frame(2, nil), ErrTruncated, 2},
		{"huge block of null items", frame(3, []byte{0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0}), nil, 3},
		{"block longer than payload", frame(4, []byte{0x80, 0x01, 2}), ErrTruncated, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := c.Decode(t.Context(), "orders", false, tt.data)
			if err == nil {
				t.Fatalf("decoded %v, want an error", v)
			}
			de := asDecodeError(t, err)
			if tt.sentinel != nil && !errors.Is(err, tt.sentinel) {
				t.Errorf("error %v does not wrap %v", err, tt.sentinel)
			}
			if de.SchemaID != tt.schemaID || de.Topic != "orders" || de.IsKey {
				t.Errorf("DecodeError = %+v, want schema id %d, topic orders, value", de, tt.schemaID)
			}
			// an unknown schema id is missing evidence, like a registry
			// that cannot answer; every other fault is the record's
			if missing := tt.sentinel == ErrUnknownSchema; errors.Is(err, ErrRegistryUnavailable) != missing {
				t.Errorf("errors.Is(%v, ErrRegistryUnavailable) = %v, want %v", err, !missing, missing)
			}
		})
	}
}

// TestDeepNesting checks that a deeply nested recursive value stops at the
// nesting limit instead of exhausting the stack.
func TestDeepNesting(t *testing.T) {
	schema := `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`
	c := offlineCodec(t, map[int]string{1: schema})
	ok := append(make([]byte, 0), bytesRepeat(2, 100)...)
	ok = append(ok, 0)
	if _, err := c.Decode(t.Context(), "t", false, frame(1, ok)); err != nil {
		t.Fatalf("100 levels: %v", err)
	}
	deep := append(bytesRepeat(2, 100000), 0)
	_, err := c.Decode(t.Context(), "t", false, frame(1, deep))
	if !errors.Is(err, errAvroTooDeep) {
		t.Fatalf("100000 levels: err = %v, want %v", err, errAvroTooDeep)
	}
}

func bytesRepeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// TestDecimalFastPath compares the int64 rendering of small decimals with
// the big.Int one.
func TestDecimalFastPath(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 5, -5, 99, -100, 123456789, math.MaxInt64, math.MinInt64, -9223372036854775807} {
		for _, scale := range []int{0, 1, 2, 5, 18} {
			b := big.NewInt(v).FillBytes(make([]byte, 8))
			if v < 0 {
				binaryBigEndianPut(b, uint64(v))
			}
			fast := decimalString(b, scale)
			slow := decimalString(append([]byte{byteSign(v)}, b...), scale) // 9 bytes: the big.Int path
			if fast != slow {
				t.Errorf("decimal %d scale %d: fast %s, big %s", v, scale, fast, slow)
			}
		}
	}
}

func byteSign(v int64) byte {
	if v < 0 {
		return 0xff
	}
	return 0
}

func binaryBigEndianPut(b []byte, v uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(v)
		v >>= 8
	}
}
