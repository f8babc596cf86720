package codec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCanonical(t *testing.T) {
	type named string
	for _, tt := range []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `null`},
		{"sorted keys nested", map[string]any{"b": map[string]any{"y": 1, "x": 2}, "a": []any{true, false}}, `{"a":[true,false],"b":{"x":2,"y":1}}`},
		{"keys by bytes", map[string]any{"é": 1, "z": 2, "Z": 3}, `{"Z":3,"z":2,"é":1}`},
		{"integer literal", json.Number("12345678901234567890123"), `12345678901234567890123`},
		{"trailing zeros", json.Number("1.50"), `1.5`},
		{"integral fraction", json.Number("2.0"), `2`},
		{"exponent", json.Number("1E3"), `1000`},
		{"big exponent", json.Number("1e21"), `1e+21`},
		{"small", json.Number("0.0000001"), `1e-7`},
		{"negative zero", json.Number("-0"), `0`},
		{"negative zero float", json.Number("-0.0"), `0`},
		{"leading zeros", json.Number("007"), `7`},
		{"not a number", json.Number("abc"), `"abc"`},
		{"escapes", "q\"b\\c\n\r\t\b\f\x00\x1f", `"q\"b\\c\n\r\t\b\f\u0000\u001f"`},
		{"no html escaping", "<a&b>", `"<a&b>"`},
		{"invalid utf8", "a\xffb", "\"a\ufffdb\""},
		{"go ints", []any{int8(-1), uint16(2), int64(3), uint64(math.MaxUint64)}, `[-1,2,3,18446744073709551615]`},
		{"go floats", []any{5.0, float32(0.1), 1e-7, math.NaN()}, `[5,0.1,1e-7,"NaN"]`},
		{"bytes", []byte{1, 2}, `"AQI="`},
		{"time", time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), `"2026-01-02T02:04:05Z"`},
		{"named string", named("x"), `"x"`},
		{"typed map", map[string]int{"b": 1, "a": 2}, `{"a":2,"b":1}`},
		{"struct", struct {
			B int    `json:"b"`
			A string `json:"a"`
		}{1, "x"}, `{"a":"x","b":1}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(Canonical(tt.in))
			if got != tt.want {
				t.Errorf("Canonical = %s, want %s", got, tt.want)
			}
			if Text(tt.in) != got {
				t.Errorf("Text = %s, Canonical = %s", Text(tt.in), got)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("Canonical output %s is not valid JSON", got)
			}
		})
	}
}

// TestCanonicalIdempotent re-parses canonical text and canonicalizes it
// again: the text must not change.
func TestCanonicalIdempotent(t *testing.T) {
	for _, in := range []any{
		allTypesValue(),
		map[string]any{"n": json.Number("1.0e-10"), "s": "\u2028"},
		[]any{json.Number("-123.456e7"), nil, "x"},
	} {
		first := Canonical(in)
		v, err := decodeJSON(first)
		if err != nil {
			t.Fatalf("re-parse %s: %v", first, err)
		}
		if second := Canonical(v); string(second) != string(first) {
			t.Errorf("not idempotent:\n first %s\nsecond %s", first, second)
		}
	}
}

// TestDigestAcrossSchemas encodes the same logical record under two schema
// ids (fields in another order, one field made optional, another
// namespace), and as JSON: all digests must agree, and differ from another
// record's.
func TestDigestAcrossSchemas(t *testing.T) {
	v1 := `{"type":"record","name":"Order","namespace":"a","fields":[{"name":"orderId","type":"string"},{"name":"amount","type":"double"},{"name":"qty","type":"int"}]}`
	v2 := `{"type":"record","name":"OrderV2","namespace":"b","fields":[{"name":"qty","type":"long"},{"name":"orderId","type":"string"},{"name":"amount","type":["null","double"]}]}`
	c := offlineCodec(t, map[int]string{1: v1, 2: v2})
	a := mustDecode(t, c, encode(t, 1, v1, map[string]any{"orderId": "o-1", "amount": 12.5, "qty": 3}))
	b := mustDecode(t, c, encode(t, 2, v2, map[string]any{"orderId": "o-1", "amount": map[string]any{"double": 12.5}, "qty": int64(3)}))
	j, err := New(Config{ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	js, err := j.Decode(t.Context(), "t", false, []byte(`{ "qty": 3.0, "amount": 1.25e1, "orderId": "o-1" }`))
	if err != nil {
		t.Fatal(err)
	}
	other := mustDecode(t, c, encode(t, 1, v1, map[string]any{"orderId": "o-1", "amount": 12.5, "qty": 4}))
	da, db, dj, do := DigestOf(a), DigestOf(b), DigestOf(js), DigestOf(other)
	if da != db || da != dj {
		t.Errorf("digests differ: v1 %s (%s), v2 %s (%s), json %s (%s)", da, Text(a), db, Text(b), dj, Text(js))
	}
	if da == do {
		t.Errorf("a different record has the same digest %s", da)
	}
	if len(da.String()) != 32 {
		t.Errorf("digest hex %q is not 32 characters", da.String())
	}
}

// TestCanonicalDecimalShortcut checks that every decimal the shortcut
// passes through unchanged is what the float path would print.
func TestCanonicalDecimalShortcut(t *testing.T) {
	for _, s := range []string{"129.99", "-0.5", "0.000001", "0.0000001", "1.10", "01.5", "123456789012.345",
		"1234567890123.456", "0.1", "-12.0", "9007199254740993.5", "0.30000000000000004", "1.0e2", ".5", "5."} {
		want := string(appendES(nil, mustFloat(t, s), 64))
		if isCanonicalDecimal(s) && s != want {
			t.Errorf("shortcut keeps %s, the float path prints %s", s, want)
		}
		if got := string(appendNumber(nil, s)); isJSONNumber(s) && got != want {
			t.Errorf("appendNumber(%s) = %s, want %s", s, got, want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		digits := make([]byte, 1+r.IntN(18))
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		p := r.IntN(len(digits)+1) + 1
		s := string(digits[:min(p, len(digits))]) + "." + string(digits[min(p, len(digits)):]) + string(rune('1'+r.IntN(9)))
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		if isCanonicalDecimal(s) {
			if want := string(appendES(nil, mustFloat(t, s), 64)); s != want {
				t.Fatalf("shortcut keeps %s, the float path prints %s", s, want)
			}
		}
	}
	for _, s := range []string{"129.99", "-0.5", "0.000001", "123456789012.345"} {
		if !isCanonicalDecimal(s) {
			t.Errorf("isCanonicalDecimal(%s) = false", s)
		}
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0
	}
	return f
}

func TestRawText(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
		want string
	}{
		{"nil", nil, "null"},
		{"empty", []byte{}, "b64:"},
		{"bytes", []byte{0, 0xff}, "b64:AP8="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := RawText(tt.in); got != tt.want {
				t.Errorf("RawText = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestShortDecimal checks appendES's shortcut against strconv's shortest
// formatting on decimals of every length, their neighbours, powers of ten
// and random bit patterns.
func TestShortDecimal(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tenth := 0.1 // a variable: 0.1+0.2 as constants is exactly 0.3
	var fs []float64
	for e := -7; e <= 21; e++ {
		p := math.Pow(10, float64(e))
		fs = append(fs, p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), 9.999999999999999*p, 9.99999999999999*p)
	}
	for range 200000 {
		digits := 1 + r.IntN(17)
		m := r.Int64N(int64(math.Pow(10, float64(digits))))
		f, _ := strconv.ParseFloat(strconv.FormatInt(m, 10)+"e"+strconv.Itoa(r.IntN(30)-20), 64)
		fs = append(fs, f, math.Nextafter(f, 0), math.Nextafter(f, math.Inf(1)), math.Float64frombits(r.Uint64()))
	}
	for _, f := range append(fs, 129.99, tenth+0.2, 1e-6, 123456789012345, 999999999999999, 1e15-1) {
		for _, f := range []float64{f, -f} {
			a := math.Abs(f)
			if math.IsNaN(f) || math.IsInf(f, 0) || a < 1e-6 || a >= 1e21 {
				continue
			}
			want := strconv.FormatFloat(f, 'f', -1, 64)
			if got := string(appendES(nil, f, 64)); got != want {
				t.Fatalf("appendES(%v) = %s, want %s", f, got, want)
			}
		}
	}
	if _, _, ok := shortDecimal(tenth + 0.2); ok {
		t.Error("shortDecimal took 0.30000000000000004, which needs 17 digits")
	}
	if m, k, ok := shortDecimal(129.99); !ok || m != 12999 || k != 2 {
		t.Errorf("shortDecimal(129.99) = %d, %d, %v; want 12999, 2, true", m, k, ok)
	}
}

// TestPlainString compares the word-at-a-time check with a byte loop on
// strings of every length up to 40 holding one byte of each kind at every
// position.
func TestPlainString(t *testing.T) {
	naive := func(s string) bool {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := 0; n <= 40; n++ {
		base := []byte(strings.Repeat("a~ !#[]", 6)[:n])
		if got := plainString(string(base)); got != naive(string(base)) {
			t.Fatalf("plainString(%q) = %v", base, got)
		}
		for i := range n {
			for _, c := range []byte{0, 0x1f, 0x20, '!', '"', '#', '[', '\\', ']', 0x7f, 0x80, 0xff} {
				s := slices.Clone(base)
				s[i] = c
				if got, want := plainString(string(s)), naive(string(s)); got != want {
					t.Fatalf("plainString(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
