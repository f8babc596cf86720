package codec

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// flatTypes is a record of every scalar type and logical type and of
// unions of them, its fields out of their names' order: text writes it
// with the two passes of a flat record.
const flatTypes = `{"type":"record","name":"Flat","namespace":"t","fields":[
 {"name":"s","type":"string"},
 {"name":"n","type":"null"},
 {"name":"b","type":"boolean"},
 {"name":"i","type":"int"},
 {"name":"l","type":"long"},
 {"name":"f","type":"float"},
 {"name":"d","type":"double"},
 {"name":"by","type":"bytes"},
 {"name":"fx","type":{"type":"fixed","name":"F4","size":4}},
 {"name":"e","type":{"type":"enum","name":"Color","symbols":["RED","GREEN","_x"]}},
 {"name":"u1","type":["null","long"]},
 {"name":"u2","type":["null","string","t.Color","double","boolean","float","bytes"]},
 {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":40,"scale":2}},
 {"name":"decf","type":{"type":"fixed","name":"D8","size":8,"logicalType":"decimal","precision":18,"scale":3}},
 {"name":"decw","type":{"type":"fixed","name":"D12","size":12,"logicalType":"decimal","precision":28,"scale":0}},
 {"name":"uuid","type":{"type":"string","logicalType":"uuid"}},
 {"name":"ufx","type":{"type":"fixed","name":"U16","size":16,"logicalType":"uuid"}},
 {"name":"dur","type":{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}},
 {"name":"date","type":{"type":"int","logicalType":"date"}},
 {"name":"tms","type":{"type":"int","logicalType":"time-millis"}},
 {"name":"tus","type":{"type":"long","logicalType":"time-micros"}},
 {"name":"tsms","type":{"type":"long","logicalType":"timestamp-millis"}},
 {"name":"tsus","type":{"type":"long","logicalType":"timestamp-micros"}},
 {"name":"lts","type":{"type":"long","logicalType":"local-timestamp-millis"}},
 {"name":"ltus","type":{"type":"long","logicalType":"local-timestamp-micros"}},
 {"name":"A","type":["null","t.F4","t.D8","t.U16","t.Dur"]},
 {"name":"a_","type":"string"},
 {"name":"_b","type":"int"}
]}`

// sortedTypes is a record whose fields are in their names' order, one of
// them a nested record out of order and an array of them: text writes it
// as it reads it.
const sortedTypes = `{"type":"record","name":"Sorted","fields":[
 {"name":"a","type":"string"},
 {"name":"b","type":{"type":"record","name":"In","fields":[{"name":"z","type":"double"},{"name":"y","type":["null","string"]}]}},
 {"name":"c","type":{"type":"array","items":"In"}},
 {"name":"d","type":{"type":"map","values":"In"}}
]}`

// wideSchema is a flat record with more fields than a flat record's
// starts hold: text sorts its fields after writing them.
func wideSchema() string {
	var b strings.Builder
	b.WriteString(`{"type":"record","name":"Wide","fields":[`)
	for i := range maxFlatFields + 3 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"name":"f` + strconv.Itoa((i*11)%(maxFlatFields+3)) + `","type":["null","string","long"]}`)
	}
	b.WriteString(`]}`)
	return b.String()
}

// randomPayload writes a random value of n in Avro binary, straight from
// the compiled node: values hamba's encoder does not write too (times
// past a day, dates and instants beyond year 9999, invalid UTF-8, NaN
// payloads, blocks with byte sizes, map keys written twice).
func randomPayload(r *rand.Rand, b []byte, n *node, depth int) []byte {
	long := func(v int64) []byte { return binary.AppendVarint(b, v) }
	switch n.kind {
	case kNull:
		return b
	case kBool:
		return append(b, byte(r.IntN(2)))
	case kInt, kDate, kTimeMillis:
		switch r.IntN(4) {
		case 0:
			return long(int64(int32(r.Uint32())))
		case 1:
			return long(int64(r.IntN(100_000_000)))
		}
		return long(int64(r.IntN(200) - 100))
	case kLong, kTimeMicros, kTSMillis, kTSMicros, kLocalTSMillis, kLocalTSMicros:
		switch r.IntN(4) {
		case 0:
			return long(int64(r.Uint64()))
		case 1:
			return long(r.Int64N(1 << 52))
		case 2:
			return long(r.Int64N(1<<44) * 1000)
		}
		return long(randomLong(r))
	case kFloat:
		f := float32(randomDouble(r))
		if r.IntN(8) == 0 {
			f = math.Float32frombits(r.Uint32())
		}
		return binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	case kDouble:
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(randomDouble(r)))
	case kString:
		s := randomString(r)
		return append(long(int64(len(s))), s...)
	case kBytes, kDecimalBytes:
		p := randomBytes(r)
		if n.kind == kDecimalBytes && r.IntN(4) == 0 {
			p = append(p, randomBytes(r)...) // beyond int64
		}
		return append(long(int64(len(p))), p...)
	case kFixed, kDecimalFixed, kUUIDFixed, kDuration:
		for range n.size {
			b = append(b, byte(r.Uint32()))
		}
		return b
	case kEnum:
		return long(int64(r.IntN(len(n.symbols))))
	case kRecord:
		for _, f := range n.fields {
			b = randomPayload(r, b, f, depth+1)
		}
		return b
	case kArray, kMap:
		blocks := r.IntN(3)
		if depth > 3 {
			blocks = 0
		}
		for range blocks {
			count := 1 + r.IntN(3)
			var items []byte
			for range count {
				if n.kind == kMap {
					k := []string{"k", "a", "é", randomString(r)}[r.IntN(4)]
					items = append(binary.AppendVarint(items, int64(len(k))), k...)
				}
				items = randomPayload(r, items, n.items, depth+1)
			}
			if r.IntN(2) == 0 {
				b = binary.AppendVarint(binary.AppendVarint(b, -int64(count)), int64(len(items)))
			} else {
				b = binary.AppendVarint(b, int64(count))
			}
			b = append(b, items...)
		}
		return append(b, 0)
	case kUnion:
		i := r.IntN(len(n.branches))
		if depth > 3 {
			i = 0 // null first, in the recursive schemas here
		}
		return randomPayload(r, long(int64(i)), n.branches[i], depth+1)
	}
	panic("randomPayload: kind " + strconv.Itoa(int(n.kind)))
}

// compiled returns the node of a schema.
func compiled(t testing.TB, schema string) *node {
	t.Helper()
	c := offlineCodec(t, map[int]string{1: schema})
	e, err := c.schemas.get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	return e.node
}

// checkSameErrors fails unless DecodeDigest, DigestBytes and DecodeFields
// (the record's fields asked for) fail on data exactly as Decode does, or
// succeed with its value and DigestOf of it.
func checkSameErrors(t *testing.T, c *Codec, data []byte, fields []string) {
	t.Helper()
	ctx := context.Background()
	v, err := c.Decode(ctx, "t", false, data)
	_, _, ferr := c.DecodeDigest(ctx, "t", false, data)
	_, berr := c.DigestBytes(ctx, "t", false, data)
	_, _, perr := c.DecodeFields(ctx, "t", data, fields)
	for name, e := range map[string]error{"DecodeDigest": ferr, "DigestBytes": berr, "DecodeFields": perr} {
		if (err == nil) != (e == nil) || err != nil && err.Error() != e.Error() {
			t.Fatalf("Decode error %v, %s error %v", err, name, e)
		}
	}
	if err == nil {
		checkDecodeDigest(t, c, data)
		checkDecodeFields(t, c, data, fields)
		_ = v
	}
}

// TestTextRandom checks text (DigestBytes and DigestField), DecodeDigest
// and DecodeFields against Decode and DigestOf on random payloads of
// records of every type: flat ones (read twice), ones in order (written
// as read), nested and recursive ones and a wide one (sorted after), and
// on those payloads cut short or with a byte changed, where all must
// fail as Decode does.
func TestTextRandom(t *testing.T) {
	schemas := map[int]string{1: flatTypes, 2: sortedTypes, 3: allTypes, 4: listSchema, 5: wideSchema(), 6: benchSchema, 7: eventSchema}
	c := offlineCodec(t, schemas)
	r := rand.New(rand.NewPCG(31, 32))
	for id := range len(schemas) {
		id++
		n := compiled(t, schemas[id])
		if want := id == 1 || id == 5 || id == 6 || id == 7; n.flat != want && id != 5 {
			t.Fatalf("schema %d: flat %v, want %v", id, n.flat, want)
		}
		if id == 5 && n.flat {
			t.Fatalf("schema %d: %d fields taken as flat", id, len(n.fields))
		}
		if id == 2 && !n.inOrder {
			t.Fatalf("schema %d: fields not taken as in order", id)
		}
		for range 400 {
			data := frame(id, randomPayload(r, nil, n, 0))
			fields := []string{}
			for _, name := range append(n.names, "nope") {
				if r.IntN(3) == 0 {
					fields = append(fields, name)
				}
			}
			if _, err := c.Decode(context.Background(), "t", false, data); err != nil {
				t.Fatalf("schema %d: random payload: %v", id, err)
			}
			checkSameErrors(t, c, data, fields)
			for i, name := range n.names {
				if scalarNode(n.fields[i], 0) { // checkDigestField wants the others declined only when their value is no scalar
					checkDigestField(t, c, data, name)
				}
			}
			cut := data[:5+r.IntN(len(data)-4)]
			checkSameErrors(t, c, cut, fields)
			if len(data) > 5 {
				bad := append([]byte(nil), data...)
				bad[5+r.IntN(len(data)-5)] ^= byte(1 + r.IntN(255))
				checkSameErrors(t, c, bad, fields)
				if i := r.IntN(len(n.names)); scalarNode(n.fields[i], 0) {
					checkDigestField(t, c, bad, n.names[i])
				}
				checkSameErrors(t, c, append(data, byte(r.Uint32())), fields)
			}
		}
	}
}

// TestAppendFloatText compares the text DigestBytes writes for a float
// with what Canonical writes for the value Decode gives it.
func TestAppendFloatText(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	fs := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e-6, 1e-7, 1e15, 1e15 - 1, 1e21, 1e20, 0.1, 129.99, 3497.26, math.MaxFloat64, math.SmallestNonzeroFloat64, math.MaxFloat32}
	for range 200000 {
		fs = append(fs, randomDouble(r), math.Float64frombits(r.Uint64()), float64(r.Int64N(1e12))/1000)
	}
	for _, f := range fs {
		for _, f := range []float64{f, -f} {
			if got, want := string(appendFloatText(nil, f, 64)), string(appendScalar(nil, floatValue(f, 64))); got != want {
				t.Fatalf("appendFloatText(%v, 64) = %s, want %s", f, got, want)
			}
			f32 := float64(float32(f))
			if got, want := string(appendFloatText(nil, f32, 32)), string(appendScalar(nil, floatValue(f32, 32))); got != want {
				t.Fatalf("appendFloatText(%v, 32) = %s, want %s", f32, got, want)
			}
		}
	}
}

// TestPlainStringLong is TestPlainString on lengths the 16-byte loop
// covers several times.
func TestPlainStringLong(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := 40; n <= 80; n++ {
		base := []byte(strings.Repeat("a~ !#[]", 12)[:n])
		if !plainString(string(base)) {
			t.Fatalf("plainString(%q) = false", base)
		}
		for i := range n {
			for _, c := range []byte{0, 0x1f, '"', '\\', 0x7f, 0x80, 0xff} {
				s := []byte(string(base))
				s[i] = c
				if got, want := plainString(string(s)), naive(string(s)); got != want {
					t.Fatalf("plainString(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
