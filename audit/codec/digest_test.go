package codec

import (
	"context"
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// checkDecodeDigest decodes data with Decode and with DecodeDigest and
// fails unless both give the same value and DecodeDigest's digest, and
// DigestBytes', is DigestOf of it.
func checkDecodeDigest(t *testing.T, c *Codec, data []byte) {
	t.Helper()
	v, err := c.Decode(context.Background(), "t", false, data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	fv, fd, err := c.DecodeDigest(context.Background(), "t", false, data)
	if err != nil {
		t.Fatalf("DecodeDigest: %v", err)
	}
	if !reflect.DeepEqual(v, fv) {
		t.Fatalf("DecodeDigest value %s, Decode value %s", Text(fv), Text(v))
	}
	want := DigestOf(v)
	if fd != want {
		t.Fatalf("DecodeDigest digest %s, DigestOf %s, of %s", fd, want, Text(v))
	}
	bd, err := c.DigestBytes(context.Background(), "t", false, data)
	if err != nil {
		t.Fatalf("DigestBytes: %v", err)
	}
	if bd != want {
		t.Fatalf("DigestBytes digest %s, DigestOf %s, of %s", bd, want, Text(v))
	}
}

// TestDecodeDigestRandom checks DecodeDigest against DigestOf(Decode) on
// random values of a record with every type, nested maps and arrays.
func TestDecodeDigestRandom(t *testing.T) {
	c := offlineCodec(t, map[int]string{7: allTypes, 2: listSchema})
	r := rand.New(rand.NewPCG(11, 12))
	for range 2000 {
		checkDecodeDigest(t, c, encode(t, 7, allTypes, randomAllTypes(r)))
		checkDecodeDigest(t, c, encode(t, 2, listSchema, randomList(r, 3)))
	}
}

// TestDecodeDigestPayloads checks DecodeDigest on payloads hamba does not
// write: a map with a key written twice, a duration, empty records, field names that sort by
// their bytes.
func TestDecodeDigestPayloads(t *testing.T) {
	schemas := map[int]string{
		1: `{"type":"map","values":"int"}`,
		2: `{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}`,
		3: `{"type":"record","name":"E","fields":[]}`,
		5: `{"type":"record","name":"W","fields":[{"name":"a1","type":"int"},{"name":"_b","type":"int"},{"name":"Z","type":"int"},{"name":"a","type":"int"}]}`,
		4: `{"type":"record","name":"O","fields":[{"name":"e","type":{"type":"record","name":"E2","fields":[]}},{"name":"a","type":{"type":"array","items":{"type":"map","values":"E2"}}}]}`,
	}
	c := offlineCodec(t, schemas)
	avroString := func(b []byte, s string) []byte { return append(binary.AppendVarint(b, int64(len(s))), s...) }
	dur := make([]byte, 12)
	binary.LittleEndian.PutUint32(dur[0:], 3)
	binary.LittleEndian.PutUint32(dur[4:], 4000000000)
	binary.LittleEndian.PutUint32(dur[8:], 5)
	for _, tt := range []struct {
		name string
		id   int
		body []byte
	}{
		{"duplicate key", 1, append(binary.AppendVarint(avroString(binary.AppendVarint(avroString(binary.AppendVarint(nil, 3), "b"), 1), "a"), 2), append(binary.AppendVarint(avroString(nil, "a"), 3), 0)...)},
		{"duplicate key in two blocks", 1, append(binary.AppendVarint(avroString(binary.AppendVarint(nil, 1), "k"), 1), append(binary.AppendVarint(avroString(binary.AppendVarint(nil, 1), "k"), 2), 0)...)},
		{"empty map", 1, []byte{0}},
		{"duration", 2, dur},
		{"empty record", 3, nil},
		{"empty records nested", 4, append(binary.AppendVarint(nil, 2), 4, 2, 'x', 2, 'y', 0, 0, 0)},
		{"keys sorted by bytes", 5, []byte{2, 4, 6, 8}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			checkDecodeDigest(t, c, frame(tt.id, tt.body))
		})
	}
}

func randomAllTypes(r *rand.Rand) map[string]any {
	ts := time.UnixMilli(r.Int64N(1 << 42)).UTC()
	v := map[string]any{
		"n": nil, "b": r.IntN(2) == 0, "i": int(int32(r.Uint32())), "l": randomLong(r),
		"f": float32(randomDouble(r)), "d": randomDouble(r), "s": randomString(r), "by": randomBytes(r),
		"fx": [4]byte{byte(r.Uint32()), 'b', 'c', byte(r.Uint32())}, "e": []string{"RED", "GREEN"}[r.IntN(2)],
		"a": []any{}, "m": map[string]any{},
		"u1": nil, "u2": nil,
		"sub": map[string]any{"x": r.IntN(1000)}, "subs": []any{},
		"dec":  big.NewRat(r.Int64N(2e9)-1e9, 100),
		"decf": big.NewRat(r.Int64N(1<<50)-1<<49, 1000),
		"uuid": randomString(r),
		"date": time.Unix(r.Int64N(1<<36)-1<<35, 0).UTC().Truncate(24 * time.Hour),
		"tms":  time.Duration(r.Int64N(86400000)) * time.Millisecond,
		"tus":  time.Duration(r.Int64N(86400000000)) * time.Microsecond,
		"tsms": ts, "tsus": ts.Add(time.Duration(r.IntN(1000)) * time.Microsecond), "lts": ts,
	}
	for range r.IntN(4) {
		v["a"] = append(v["a"].([]any), randomLong(r))
		v["m"].(map[string]any)[randomString(r)] = randomString(r)
		v["subs"] = append(v["subs"].([]any), map[string]any{"x": r.IntN(1 << 20)})
	}
	switch r.IntN(3) {
	case 1:
		v["u1"] = map[string]any{"long": randomLong(r)}
		v["u2"] = map[string]any{"string": randomString(r)}
	case 2:
		v["u2"] = map[string]any{"t.Color": "GREEN"}
	}
	return v
}

// listSchema is fuzzSchemas[2] under its own name: once FuzzDecode's seeds
// have encoded fuzzSchemas[2], hamba (which caches encoders by schema)
// wrote payloads of random values of it that hamba itself cannot read.
const listSchema = `{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]},{"name":"kids","type":{"type":"array","items":"Node"}},{"name":"m","type":{"type":"map","values":["null","double"]}}]}`

// randomList is a value of listSchema: a list with kids and a map.
func randomList(r *rand.Rand, depth int) map[string]any {
	v := map[string]any{"v": int(int32(r.Uint32())), "next": nil, "kids": []any{}, "m": map[string]any{}}
	if depth > 0 && r.IntN(2) == 0 {
		v["next"] = map[string]any{"Node": randomList(r, depth-1)}
	}
	for range r.IntN(depth + 1) {
		v["kids"] = append(v["kids"].([]any), randomList(r, depth-1))
		var x any
		if r.IntN(3) > 0 {
			x = map[string]any{"double": randomDouble(r)}
		}
		v["m"].(map[string]any)[randomString(r)] = x
	}
	return v
}

func randomLong(r *rand.Rand) int64 {
	if r.IntN(2) == 0 {
		return r.Int64N(512) - 256
	}
	return int64(r.Uint64())
}

func randomDouble(r *rand.Rand) float64 {
	switch r.IntN(8) {
	case 0:
		return []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1e21, 1e-7, math.MaxFloat64}[r.IntN(8)]
	case 1:
		return math.Float64frombits(r.Uint64())
	case 2:
		return r.NormFloat64() * 1e6
	}
	return float64(r.Int64N(2_000_000)-1_000_000) / 100
}

func randomString(r *rand.Rand) string {
	const alphabet = "aZ09 -_.:\"\\\n\t\x00\x1f\x7féü€😀\u2028"
	runes := []rune(alphabet)
	b := make([]rune, r.IntN(20))
	for i := range b {
		b[i] = runes[r.IntN(len(runes))]
	}
	s := string(b)
	if r.IntN(10) == 0 {
		s += "\xff" // invalid UTF-8, which Avro strings may hold
	}
	return s
}

func randomBytes(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}
