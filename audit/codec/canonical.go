package codec

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/kaudit/kaudit/audit"
)

// Digest identifies a value by its canonical JSON: the 128-bit XXH3 hash of
// Canonical(v), big-endian. Two values with the same canonical JSON have
// the same digest, whatever schema, schema id or serde carried them. XXH3
// is not cryptographic: a digest identifies values within one run and is
// never stored, and it does not resist records crafted to collide.
type Digest [16]byte

// String returns the digest in hex.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// MarshalText makes a Digest print as hex in JSON.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// DigestOf returns the digest of v's canonical JSON.
func DigestOf(v audit.Value) Digest {
	e := encPool.Get().(*encoder)
	e.buf = e.value(e.buf[:0], v, 0)
	d := digestOfText(e.buf)
	encPool.Put(e)
	return d
}

// digestOfText returns the digest of canonical JSON text.
func digestOfText(text []byte) Digest { return Digest(xxh3.Hash128(text).Bytes()) }

// Canonical returns v as canonical JSON: object keys sorted by their UTF-8
// bytes, no insignificant space, numbers in their shortest form (integers
// without a fraction or exponent, others as ECMAScript prints them), strings
// escaped minimally (", \ and control characters; invalid UTF-8 becomes
// U+FFFD). It accepts the values Decode returns and, for values built
// elsewhere, Go's numeric types, []byte (as base64), time.Time (RFC 3339)
// and anything else encoding/json can marshal.
func Canonical(v audit.Value) []byte {
	e := encPool.Get().(*encoder)
	e.buf = e.value(e.buf[:0], v, 0)
	out := slices.Clone(e.buf)
	encPool.Put(e)
	return out
}

// Text returns v's canonical JSON as text, the form reports print.
func Text(v audit.Value) string {
	e := encPool.Get().(*encoder)
	e.buf = e.value(e.buf[:0], v, 0)
	out := string(e.buf)
	encPool.Put(e)
	return out
}

// RawText renders bytes that could not be decoded: "b64:" and their
// standard base64. A nil slice renders as "null".
func RawText(b []byte) string {
	if b == nil {
		return "null"
	}
	return "b64:" + base64.StdEncoding.EncodeToString(b)
}

type encoder struct {
	buf  []byte
	keys []string
	vals []any // values of objects being written, in key order
	// orders remembers the sorted key sets of recent objects: records of
	// one schema share one, and checking that a map has exactly a known
	// key set costs less than sorting its keys.
	orders [8][]orderedKey
	next   int
}

type orderedKey struct {
	name string
	json string // the key as a JSON string with its colon, after '{' or ','
}

// maxRememberedKeys bounds the key sets worth remembering.
const maxRememberedKeys = 64

// knownOrder returns a remembered sorted key set equal to m's keys, and
// appends m's values in that order to e.vals.
func (e *encoder) knownOrder(m map[string]any) []orderedKey {
	n := len(m)
	if n < 2 || n > maxRememberedKeys {
		return nil
	}
	start := len(e.vals)
next:
	for i := range e.orders {
		o := e.orders[i]
		if len(o) != n {
			continue
		}
		for _, k := range o {
			v, ok := m[k.name]
			if !ok {
				clear(e.vals[start:])
				e.vals = e.vals[:start]
				continue next
			}
			e.vals = append(e.vals, v)
		}
		return o // n distinct keys all present and len(m) == n: same set
	}
	return nil
}

func (e *encoder) remember(sorted []string) {
	if len(sorted) < 2 || len(sorted) > maxRememberedKeys {
		return
	}
	o := make([]orderedKey, len(sorted))
	for i, k := range sorted {
		sep := byte(',')
		if i == 0 {
			sep = '{'
		}
		o[i] = orderedKey{name: k, json: string(append(appendString([]byte{sep}, k), ':'))}
	}
	e.orders[e.next] = o
	e.next = (e.next + 1) % len(e.orders)
}

var encPool = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 512)} }}

const maxDepth = 10000

func (e *encoder) value(b []byte, v any, depth int) []byte {
	if depth > maxDepth {
		return append(b, "null"...)
	}
	// Decoded values hold these types only: a switch this small compares
	// type words one by one, cheaper than the search of the full one.
	switch x := v.(type) {
	case string:
		return appendString(b, x)
	case json.Number:
		return appendNumber(b, string(x))
	case map[string]any:
		return e.object(b, x, depth)
	case nil:
		return append(b, "null"...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	}
	return e.other(b, v, depth)
}

// object writes a map as a JSON object with its keys sorted.
func (e *encoder) object(b []byte, x map[string]any, depth int) []byte {
	start := len(e.vals)
	if keys := e.knownOrder(x); keys != nil {
		vals := e.vals[start:]
		for i, k := range keys {
			b = append(b, k.json...)
			if depth < maxDepth { // the common cases without a call
				switch x := vals[i].(type) {
				case string:
					b = appendString(b, x)
					continue
				case json.Number:
					b = appendNumber(b, string(x))
					continue
				}
			}
			b = e.value(b, vals[i], depth+1)
		}
		clear(e.vals[start:])
		e.vals = e.vals[:start]
		return append(b, '}')
	}
	start = len(e.keys)
	for k := range x {
		e.keys = append(e.keys, k)
	}
	keys := e.keys[start:]
	slices.Sort(keys)
	e.remember(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = e.value(b, x[k], depth+1)
	}
	clear(e.keys[start:])
	e.keys = e.keys[:start]
	return append(b, '}')
}

// other writes the values of types Decode does not return.
func (e *encoder) other(b []byte, v any, depth int) []byte {
	switch x := v.(type) {
	case []any:
		b = append(b, '[')
		for i, el := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = e.value(b, el, depth+1)
		}
		return append(b, ']')
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case uint:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case float32:
		return appendFloat(b, float64(x), 32)
	case float64:
		return appendFloat(b, x, 64)
	case []byte:
		if x == nil {
			return append(b, "null"...)
		}
		return appendString(b, base64.StdEncoding.EncodeToString(x))
	case time.Time:
		return appendString(b, x.UTC().Format(time.RFC3339Nano))
	case *big.Int:
		if x == nil {
			return append(b, "null"...)
		}
		return x.Append(b, 10)
	}
	return e.generic(b, v, depth)
}

// generic canonicalizes values of other types through encoding/json:
// named types, structs, typed maps and slices.
func (e *encoder) generic(b []byte, v any, depth int) []byte {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return appendString(b, rv.String())
	case reflect.Bool:
		return e.value(b, rv.Bool(), depth)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(b, rv.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(b, rv.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return appendFloat(b, rv.Float(), 64)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return appendString(b, "!unencodable "+rv.Type().String())
	}
	var back any
	if err := unmarshalNumber(raw, &back); err != nil {
		return appendString(b, "!unencodable "+rv.Type().String())
	}
	return e.value(b, back, depth)
}

// appendFloat writes a float in canonical form; NaN and infinities, which
// JSON cannot hold, become the strings "NaN", "Infinity", "-Infinity".
func appendFloat(b []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return appendES(b, f, bits)
}

// appendES writes a finite float the way ECMAScript's Number#toString
// does (RFC 8785): plain digits for 1e-6 <= |f| < 1e21, otherwise the
// shortest mantissa with an exponent such as 1e+21 or 1.5e-7. bits is 32
// for a float32, whose shortest form is taken at float32 precision.
func appendES(b []byte, f float64, bits int) []byte {
	if f == 0 {
		return append(b, '0')
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		if bits == 64 {
			if m, k, ok := shortDecimal(a); ok {
				if f < 0 {
					b = append(b, '-')
				}
				return appendScaled(b, m, k)
			}
		}
		return strconv.AppendFloat(b, f, 'f', -1, bits)
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, 'e', -1, bits)
	// Go writes e-07 and e+21; ECMAScript writes e-7 and e+21.
	for i := start; i < len(b); i++ {
		if b[i] == 'e' {
			j := i + 2 // past the sign
			for j < len(b)-1 && b[j] == '0' {
				b = append(b[:j], b[j+1:]...)
			}
			break
		}
	}
	return b
}

// pow10 holds the powers of ten that float64 represents exactly and
// shortDecimal needs.
var pow10 = func() (p [21]float64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// shortDecimal finds the shortest decimal m/10^k that parses back to a
// (1e-6 <= a < 1e15), when it has at most 15 significant digits, without
// strconv's general search; ok is false otherwise.
//
// With a in [10^e, 10^(e+1)), the decimals with 15 significant digits are
// the multiples of 10^(e-14), spaced more than a's ulp apart (2^-52 of a
// is below 10^-15 of a), so at most one of them parses back to a. The
// shortest decimal of a, when it has at most 15 digits, is a multiple too
// (when it lies below 10^e, 10^e lies between it and a and is shorter),
// so it is that one: m = round(a·10^(14-e)) with trailing zeros dropped.
// The product errs by less than 0.25, and m/10^k, both exact, divides
// with one correct rounding, as parsing the decimal does.
func shortDecimal(a float64) (m int64, k int, ok bool) {
	if !(a >= 1e-6 && a < 1e15) {
		return 0, 0, false
	}
	// e = floor(log10(a)): from the binary exponent (78913/2^18 is just
	// below log10(2)), then corrected by one power of ten.
	e := (int(math.Float64bits(a)>>52) - 1023) * 78913 >> 18
	e = min(max(e, -6), 14)
	if e < 14 && a >= pow10Signed(e+1) {
		e++
	}
	if e > -6 && a < pow10Signed(e) {
		e--
	}
	k = 14 - e
	r := math.Round(a * pow10[k])
	if r >= 1e15 || r/pow10[k] != a {
		return 0, 0, false
	}
	m = int64(r)
	// Drop trailing zeros, at most k: 8, 4, 2, then 1 at a time.
	if k >= 8 && m%1e8 == 0 {
		m /= 1e8
		k -= 8
	}
	if k >= 4 && m%1e4 == 0 {
		m /= 1e4
		k -= 4
	}
	if k >= 2 && m%100 == 0 {
		m /= 100
		k -= 2
	}
	if k >= 1 && m%10 == 0 {
		m /= 10
		k--
	}
	return m, k, true
}

// pow10Signed returns 10^e for -6 <= e <= 14, exactly as ParseFloat would.
func pow10Signed(e int) float64 {
	if e >= 0 {
		return pow10[e]
	}
	return negPow10[-e]
}

var negPow10 = [...]float64{1, 1e-1, 1e-2, 1e-3, 1e-4, 1e-5, 1e-6}

// appendNumber writes a JSON number text in canonical form. Integer
// literals are kept digit for digit (so integers beyond 2^53 stay exact);
// others are parsed as float64 and written by appendES. Text that is not a
// JSON number is written as a string.
func appendNumber(b []byte, s string) []byte {
	if isCanonicalInt(s) || isCanonicalDecimal(s) {
		return append(b, s...)
	}
	if isIntLiteral(s) {
		// -0 or leading zeros (not valid JSON, but json.Number may hold it).
		neg := s[0] == '-'
		d := s
		if neg {
			d = s[1:]
		}
		for len(d) > 1 && d[0] == '0' {
			d = d[1:]
		}
		if d == "0" {
			return append(b, '0')
		}
		if neg {
			b = append(b, '-')
		}
		return append(b, d...)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || !isJSONNumber(s) {
		return appendString(b, s)
	}
	return appendES(b, f, 64)
}

func isCanonicalInt(s string) bool {
	if s == "" {
		return false
	}
	i := 0
	if s[0] == '-' {
		i = 1
		if len(s) == 1 || s == "-0" {
			return false
		}
	}
	if s[i] == '0' {
		return len(s) == i+1
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isCanonicalDecimal reports whether s is a plain decimal that appendES
// would print unchanged: no exponent, no leading zero in the integer part
// (but "0"), no trailing zero in the fraction, at least 1e-6, and at most
// 15 significant digits, which float64 holds exactly, so no shorter
// decimal names the same float.
func isCanonicalDecimal(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	intStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	intDigits := i - intStart
	if intDigits == 0 || (intDigits > 1 && s[intStart] == '0') || i >= len(s) || s[i] != '.' {
		return false
	}
	i++
	fracStart := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	fracDigits := i - fracStart
	if i != len(s) || fracDigits == 0 || s[len(s)-1] == '0' {
		return false
	}
	sig := intDigits + fracDigits
	if s[intStart] == '0' { // 0.xxx: leading fraction zeros are not significant
		sig = fracDigits
		z := fracStart
		for z < len(s) && s[z] == '0' {
			z++
		}
		if z-fracStart >= 6 { // below 1e-6: printed with an exponent
			return false
		}
		sig -= z - fracStart
	}
	return sig <= 15
}

func isIntLiteral(s string) bool {
	i := 0
	if s != "" && s[0] == '-' {
		i = 1
	}
	if i == len(s) {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if digits() == 0 {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string, escaping only what JSON
// requires; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	if plainString(s) {
		b = append(b, s...)
		return append(b, '"')
	}
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// plainString reports whether s is ASCII that a JSON string holds
// unescaped.
func plainString(s string) bool {
	n := len(s)
	if n < 8 {
		for i := range n {
			if !plainByte[s[i]] {
				return false
			}
		}
		return true
	}
	// The words' flags are ORed and tested once: most strings are plain,
	// and a branch per word costs more than reading to the end.
	p := unsafe.StringData(s)
	var bad uint64
	i := 0
	for ; i < n-16; i += 16 {
		bad |= notPlain8(p, i) | notPlain8(p, i+8)
	}
	if i < n-8 {
		bad |= notPlain8(p, i)
	}
	return (bad | notPlain8(p, n-8)) == 0 // the last 8, overlapping checked bytes
}

// plainByte holds the bytes that a JSON string holds unescaped as ASCII.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// notPlain8 is zero when the 8 bytes at p+i are ASCII that a JSON string
// holds unescaped: none below 0x20, none '"' or '\\', none 0x80 or above.
// Once every byte is below 0x80, subtracting from a byte borrows into its
// top bit exactly when it is below the subtrahend.
func notPlain8(p *byte, i int) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	w := binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(p), i)), 8))
	ctl := w - 0x20*ones              // bytes below 0x20
	quote := w ^ '"'*ones - ones      // bytes equal to '"'
	backslash := w ^ '\\'*ones - ones // bytes equal to '\\'
	return (w | ctl | quote | backslash) & highs
}

// ParseCanonical reads canonical JSON (Canonical's output) back into
// canonical values: numbers as json.Number, objects as map[string]any.
func ParseCanonical(text []byte) (audit.Value, error) { return decodeJSON(text) }
