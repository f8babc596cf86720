package codec

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/hamba/avro/v2"
)

// kind is what one compiled schema node decodes.
type kind uint8

const (
	kNull kind = iota
	kBool
	kInt
	kLong
	kFloat
	kDouble
	kString
	kBytes
	kRecord
	kEnum
	kArray
	kMap
	kUnion
	kFixed
	kDate          // int: days since the epoch
	kTimeMillis    // int: ms after midnight
	kTimeMicros    // long: µs after midnight
	kTSMillis      // long: ms since the epoch, UTC
	kTSMicros      // long: µs since the epoch, UTC
	kLocalTSMillis // long: ms, local time with no zone
	kLocalTSMicros // long: µs, local time with no zone
	kDecimalBytes
	kDecimalFixed
	kUUIDFixed
	kDuration // fixed(12): months, days, millis
)

// node is a compiled Avro schema: a tree (a graph for recursive records)
// the decoder walks without type assertions.
type node struct {
	kind     kind
	names    []string // record field names
	fields   []*node  // record field types
	items    *node    // array items, map values
	branches []*node  // union branches
	symbols  []any    // enum symbols, boxed once
	size     int      // fixed size
	scale    int      // decimal scale
	zero     bool     // decodes from zero bytes (null, empty record)
	strs     int      // boxed strings a value holds outside arrays and maps, estimated
}

// compile turns a parsed hamba schema into a node graph.
func compile(s avro.Schema) (*node, error) {
	c := compiler{records: map[*avro.RecordSchema]*node{}}
	n, err := c.compile(s)
	if err != nil {
		return nil, err
	}
	markZero(n, map[*node]bool{})
	n.strs = min(max(countStrs(n, map[*node]bool{}), 4), 64)
	return n, nil
}

// countStrs estimates how many boxed strings a value of n holds, outside
// arrays and maps, to size the decoder's first slab.
func countStrs(n *node, seen map[*node]bool) int {
	switch n.kind {
	case kNull, kBool, kEnum, kArray, kMap:
		return 0
	case kRecord:
		if seen[n] {
			return 0
		}
		seen[n] = true
		sum := 0
		for _, f := range n.fields {
			sum += countStrs(f, seen)
		}
		delete(seen, n)
		return sum
	case kUnion:
		most := 0
		for _, b := range n.branches {
			most = max(most, countStrs(b, seen))
		}
		return most
	case kDuration:
		return 3
	}
	return 1
}

type compiler struct {
	records map[*avro.RecordSchema]*node
}

func logicalOf(s avro.Schema) avro.LogicalSchema {
	if l, ok := s.(avro.LogicalTypeSchema); ok {
		return l.Logical()
	}
	return nil
}

func (c *compiler) compile(s avro.Schema) (*node, error) {
	ls := logicalOf(s)
	var lt avro.LogicalType
	if ls != nil {
		lt = ls.Type()
	}
	switch s.Type() {
	case avro.Null:
		return &node{kind: kNull}, nil
	case avro.Boolean:
		return &node{kind: kBool}, nil
	case avro.Int:
		switch lt {
		case avro.Date:
			return &node{kind: kDate}, nil
		case avro.TimeMillis:
			return &node{kind: kTimeMillis}, nil
		}
		return &node{kind: kInt}, nil
	case avro.Long:
		switch lt {
		case avro.TimeMicros:
			return &node{kind: kTimeMicros}, nil
		case avro.TimestampMillis:
			return &node{kind: kTSMillis}, nil
		case avro.TimestampMicros:
			return &node{kind: kTSMicros}, nil
		case avro.LocalTimestampMillis:
			return &node{kind: kLocalTSMillis}, nil
		case avro.LocalTimestampMicros:
			return &node{kind: kLocalTSMicros}, nil
		}
		return &node{kind: kLong}, nil
	case avro.Float:
		return &node{kind: kFloat}, nil
	case avro.Double:
		return &node{kind: kDouble}, nil
	case avro.String:
		return &node{kind: kString}, nil // uuid is a plain string
	case avro.Bytes:
		if d, ok := ls.(*avro.DecimalLogicalSchema); ok {
			return &node{kind: kDecimalBytes, scale: d.Scale()}, nil
		}
		return &node{kind: kBytes}, nil
	case avro.Fixed:
		fs := s.(*avro.FixedSchema)
		switch {
		case lt == avro.Decimal:
			return &node{kind: kDecimalFixed, size: fs.Size(), scale: ls.(*avro.DecimalLogicalSchema).Scale()}, nil
		case (lt == avro.UUID || fs.Prop("logicalType") == "uuid") && fs.Size() == 16:
			return &node{kind: kUUIDFixed, size: 16}, nil
		case lt == avro.Duration && fs.Size() == 12:
			return &node{kind: kDuration, size: 12}, nil
		}
		return &node{kind: kFixed, size: fs.Size()}, nil
	case avro.Enum:
		syms := s.(*avro.EnumSchema).Symbols()
		boxed := make([]any, len(syms))
		for i, sym := range syms {
			boxed[i] = sym
		}
		return &node{kind: kEnum, symbols: boxed}, nil
	case avro.Array:
		items, err := c.compile(s.(*avro.ArraySchema).Items())
		if err != nil {
			return nil, err
		}
		return &node{kind: kArray, items: items}, nil
	case avro.Map:
		vals, err := c.compile(s.(*avro.MapSchema).Values())
		if err != nil {
			return nil, err
		}
		return &node{kind: kMap, items: vals}, nil
	case avro.Union:
		types := s.(*avro.UnionSchema).Types()
		n := &node{kind: kUnion, branches: make([]*node, len(types))}
		for i, t := range types {
			b, err := c.compile(t)
			if err != nil {
				return nil, err
			}
			n.branches[i] = b
		}
		return n, nil
	case avro.Record:
		rs := s.(*avro.RecordSchema)
		if n, ok := c.records[rs]; ok {
			return n, nil
		}
		n := &node{kind: kRecord}
		c.records[rs] = n
		for _, f := range rs.Fields() {
			fn, err := c.compile(f.Type())
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name(), err)
			}
			n.names = append(n.names, f.Name())
			n.fields = append(n.fields, fn)
		}
		return n, nil
	case avro.Ref:
		return c.compile(s.(*avro.RefSchema).Schema())
	}
	return nil, fmt.Errorf("unsupported avro type %s", s.Type())
}

// markZero sets zero on nodes that decode from no bytes at all.
func markZero(n *node, seen map[*node]bool) bool {
	if seen[n] {
		return n.zero
	}
	seen[n] = true
	switch n.kind {
	case kNull:
		n.zero = true
	case kFixed, kDecimalFixed:
		n.zero = n.size == 0
	case kRecord:
		n.zero = true // provisional; a recursive record is never zero
		all := true
		for _, f := range n.fields {
			if !markZero(f, seen) {
				all = false
			}
		}
		n.zero = all
	case kArray, kMap:
		markZero(n.items, seen)
	case kUnion:
		for _, b := range n.branches {
			markZero(b, seen)
		}
	}
	return n.zero
}

// Decoding limits: they keep hostile payloads from exhausting memory or
// the stack. A record within them decodes whatever its size.
const (
	maxNesting       = 500     // nested records, arrays, maps and unions
	maxZeroSizeItems = 1 << 20 // array items of a zero-byte type, per payload
)

var errAvroTooDeep = errors.New("value nested too deep")

// mapEntry stands for a map entry in block counts: its key takes at least
// one byte, so it is never zero-byte.
var mapEntry = &node{kind: kString}

// avroDecoder reads Avro binary data against a compiled schema.
type avroDecoder struct {
	b     []byte
	s     string // b as one string: decoded strings are slices of it
	arena []byte // text of the value's strings (see arena.go)
	slab  []string
	// firstSlab sizes the first slab (node.strs of the root).
	firstSlab int
	i         int
	err       error
	depth     int
	zeros     int
}

func (d *avroDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *avroDecoder) truncated(what string) {
	d.fail(fmt.Errorf("%w: %s at byte %d of %d", ErrTruncated, what, d.i, len(d.b)))
}

func (d *avroDecoder) long() int64 {
	var v uint64
	var shift uint
	for n := 0; ; n++ {
		if d.i >= len(d.b) {
			d.truncated("varint")
			return 0
		}
		c := d.b[d.i]
		d.i++
		if n == 9 && c > 1 {
			d.fail(fmt.Errorf("varint overflows 64 bits at byte %d", d.i-1))
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			break
		}
		shift += 7
	}
	return int64(v>>1) ^ -int64(v&1)
}

func (d *avroDecoder) int() int32 {
	v := d.long()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail(fmt.Errorf("int %d out of range at byte %d", v, d.i))
		return 0
	}
	return int32(v)
}

// span reads a length-prefixed run of bytes and returns its bounds.
func (d *avroDecoder) span(what string) (int, int) {
	n := d.long()
	if d.err != nil {
		return 0, 0
	}
	if n < 0 {
		d.fail(fmt.Errorf("negative %s length %d at byte %d", what, n, d.i))
		return 0, 0
	}
	if n > int64(len(d.b)-d.i) {
		d.truncated(what)
		return 0, 0
	}
	start := d.i
	d.i += int(n)
	return start, d.i
}

func (d *avroDecoder) fixed(size int) []byte {
	if size > len(d.b)-d.i {
		d.truncated("fixed")
		return nil
	}
	b := d.b[d.i : d.i+size]
	d.i += size
	return b
}

// blockCount reads an array or map block header and returns its item count.
func (d *avroDecoder) blockCount(items *node) int64 {
	n := d.long()
	if d.err != nil {
		return 0
	}
	if n < 0 {
		if n == math.MinInt64 {
			d.fail(fmt.Errorf("bad block count at byte %d", d.i))
			return 0
		}
		n = -n
		if sz := d.long(); sz < 0 {
			d.fail(fmt.Errorf("negative block size at byte %d", d.i))
			return 0
		}
	}
	if items.zero {
		d.zeros += int(min(n, maxZeroSizeItems+1))
		if d.zeros > maxZeroSizeItems {
			d.fail(fmt.Errorf("more than %d zero-byte items", maxZeroSizeItems))
			return 0
		}
	} else if n > int64(len(d.b)-d.i) {
		d.truncated("block")
		return 0
	}
	return n
}

func num(v int64) json.Number { return json.Number(strconv.FormatInt(v, 10)) }

// smallNums are the json.Numbers 0–255, boxed once.
var smallNums = func() []any {
	out := make([]any, 256)
	for i := range out {
		out[i] = num(int64(i))
	}
	return out
}()

func (d *avroDecoder) value(n *node) any {
	if d.err != nil {
		return nil
	}
	switch n.kind {
	case kNull:
		return nil
	case kBool:
		if d.i >= len(d.b) {
			d.truncated("boolean")
			return nil
		}
		c := d.b[d.i]
		d.i++
		if c > 1 {
			d.fail(fmt.Errorf("boolean byte %d at byte %d", c, d.i-1))
			return nil
		}
		return c == 1
	case kInt:
		v := d.int()
		if d.err != nil {
			return nil
		}
		return d.numberValue(int64(v))
	case kLong:
		v := d.long()
		if d.err != nil {
			return nil
		}
		return d.numberValue(v)
	case kFloat:
		b := d.fixed(4)
		if d.err != nil {
			return nil
		}
		return d.floatValue(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
	case kDouble:
		b := d.fixed(8)
		if d.err != nil {
			return nil
		}
		return d.floatValue(math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
	case kString:
		s, e := d.span("string")
		if d.err != nil {
			return nil
		}
		return d.box(stringType, d.s[s:e])
	case kBytes:
		s, e := d.span("bytes")
		if d.err != nil {
			return nil
		}
		return d.base64(d.b[s:e])
	case kFixed:
		b := d.fixed(n.size)
		if d.err != nil {
			return nil
		}
		return d.base64(b)
	case kEnum:
		i := d.int()
		if d.err != nil {
			return nil
		}
		if i < 0 || int(i) >= len(n.symbols) {
			d.fail(fmt.Errorf("enum index %d out of %d symbols", i, len(n.symbols)))
			return nil
		}
		return n.symbols[i]
	case kRecord:
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return nil
		}
		m := make(map[string]any, len(n.fields))
		for i, f := range n.fields {
			m[n.names[i]] = d.value(f)
		}
		d.depth--
		if d.err != nil {
			return nil
		}
		return m
	case kArray:
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return nil
		}
		arr := []any{}
		for {
			c := d.blockCount(n.items)
			if c == 0 || d.err != nil {
				break
			}
			arr = growAny(arr, c)
			for range c {
				arr = append(arr, d.value(n.items))
				if d.err != nil {
					break
				}
			}
		}
		d.depth--
		if d.err != nil {
			return nil
		}
		return arr
	case kMap:
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return nil
		}
		m := map[string]any{}
		for {
			c := d.blockCount(mapEntry)
			if c == 0 || d.err != nil {
				break
			}
			for range c {
				s, e := d.span("map key")
				if d.err != nil {
					break
				}
				m[d.s[s:e]] = d.value(n.items) // keys need no boxing
				if d.err != nil {
					break
				}
			}
		}
		d.depth--
		if d.err != nil {
			return nil
		}
		return m
	case kUnion:
		i := d.long()
		if d.err != nil {
			return nil
		}
		if i < 0 || i >= int64(len(n.branches)) {
			d.fail(fmt.Errorf("union branch %d out of %d", i, len(n.branches)))
			return nil
		}
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return nil
		}
		v := d.value(n.branches[i])
		d.depth--
		return v
	case kDate:
		v := d.int()
		if d.err != nil {
			return nil
		}
		return time.Unix(int64(v)*86400, 0).UTC().Format(time.DateOnly)
	case kTimeMillis:
		v := d.int()
		if d.err != nil {
			return nil
		}
		return timeOfDay(int64(v)*1000, 3)
	case kTimeMicros:
		v := d.long()
		if d.err != nil {
			return nil
		}
		return timeOfDay(v, 6)
	case kTSMillis, kLocalTSMillis:
		v := d.long()
		if d.err != nil {
			return nil
		}
		sec := floorDiv(v, 1000)
		return d.timestamp(sec, (v-sec*1000)*1_000_000, n.kind == kLocalTSMillis)
	case kTSMicros, kLocalTSMicros:
		v := d.long()
		if d.err != nil {
			return nil
		}
		sec := floorDiv(v, 1_000_000)
		return d.timestamp(sec, (v-sec*1_000_000)*1000, n.kind == kLocalTSMicros)
	case kDecimalBytes:
		s, e := d.span("decimal")
		if d.err != nil {
			return nil
		}
		return d.decimal(d.b[s:e], n.scale)
	case kDecimalFixed:
		b := d.fixed(n.size)
		if d.err != nil {
			return nil
		}
		return d.decimal(b, n.scale)
	case kUUIDFixed:
		b := d.fixed(16)
		if d.err != nil {
			return nil
		}
		return uuidString(b)
	case kDuration:
		b := d.fixed(12)
		if d.err != nil {
			return nil
		}
		return map[string]any{
			"months":       num(int64(binary.LittleEndian.Uint32(b[0:]))),
			"days":         num(int64(binary.LittleEndian.Uint32(b[4:]))),
			"milliseconds": num(int64(binary.LittleEndian.Uint32(b[8:]))),
		}
	}
	d.fail(fmt.Errorf("unsupported node kind %d", n.kind))
	return nil
}

func growAny(s []any, n int64) []any {
	if n > 1024 {
		n = 1024
	}
	if cap(s)-len(s) < int(n) {
		t := make([]any, len(s), len(s)+int(n))
		copy(t, s)
		return t
	}
	return s
}

// floatValue is a float as a canonical json.Number, or the strings "NaN",
// "Infinity", "-Infinity", which JSON numbers cannot hold.
func (d *avroDecoder) floatValue(f float64, bits int) any {
	switch {
	case math.IsNaN(f), math.IsInf(f, 0):
		return floatValue(f, bits)
	}
	d.reserve(32)
	start := len(d.arena)
	d.arena = appendES(d.arena, f, bits)
	return d.box(numberType, d.since(start))
}

func floatValue(f float64, bits int) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	var buf [32]byte
	return json.Number(appendES(buf[:0], f, bits))
}

// timeOfDay renders µs after midnight as HH:MM:SS with frac fractional
// digits (3 for time-millis, 6 for time-micros). Out-of-range values, which
// the spec forbids, are rendered modulo a day after a "+Nd" count.
func timeOfDay(us int64, frac int) string {
	const day = 86400 * 1_000_000
	var prefix string
	if us < 0 || us >= day {
		prefix = strconv.FormatInt(us/day, 10) + "d+"
		us %= day
		if us < 0 {
			us += day
		}
	}
	t := time.UnixMicro(us).UTC()
	layout := "15:04:05.000"
	if frac == 6 {
		layout = "15:04:05.000000"
	}
	return prefix + t.Format(layout)
}

// timestamp renders an instant as RFC 3339 in UTC with the fraction
// trimmed of trailing zeros, so the same instant prints the same in millis
// and micros; local timestamps have no zone suffix.
func (d *avroDecoder) timestamp(sec, nsec int64, local bool) any {
	d.reserve(40)
	start := len(d.arena)
	d.arena = appendTimestamp(d.arena, sec, nsec, local)
	return d.box(stringType, d.since(start))
}

func (d *avroDecoder) base64(b []byte) any {
	d.reserve(base64.StdEncoding.EncodedLen(len(b)))
	start := len(d.arena)
	d.arena = base64.StdEncoding.AppendEncode(d.arena, b)
	return d.box(stringType, d.since(start))
}

func (d *avroDecoder) decimal(b []byte, scale int) any {
	if len(b) <= 8 && scale >= 0 && scale < 19 {
		d.reserve(48)
		start := len(d.arena)
		d.arena = appendScaled(d.arena, smallUnscaled(b), scale)
		return d.box(stringType, d.since(start))
	}
	return d.box(stringType, decimalString(b, scale))
}

// smallUnscaled reads a two's-complement big-endian integer of at most 8
// bytes.
func smallUnscaled(b []byte) int64 {
	var u int64
	if len(b) > 0 && b[0]&0x80 != 0 {
		u = -1
	}
	for _, c := range b {
		u = u<<8 | int64(c)
	}
	return u
}

// decimalString renders a two's-complement big-endian unscaled integer
// with scale digits after the point, as Java's BigDecimal#toPlainString.
func decimalString(b []byte, scale int) string {
	if len(b) <= 8 && scale >= 0 && scale < 19 {
		return string(appendScaled(nil, smallUnscaled(b), scale))
	}
	var u big.Int
	u.SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		var m big.Int
		m.Lsh(big.NewInt(1), uint(len(b)*8))
		u.Sub(&u, &m)
	}
	s := u.String()
	if scale <= 0 {
		if scale < 0 && s != "0" {
			s += strings.Repeat("0", -scale)
		}
		return s
	}
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// appendScaled writes u / 10^scale with exactly scale fraction digits.
func appendScaled(out []byte, u int64, scale int) []byte {
	var dbuf [24]byte
	digits := strconv.AppendUint(dbuf[:0], absU(u), 10)
	if u < 0 {
		out = append(out, '-')
	}
	if scale == 0 {
		return append(out, digits...)
	}
	if len(digits) <= scale {
		out = append(out, '0', '.')
		for range scale - len(digits) {
			out = append(out, '0')
		}
		return append(out, digits...)
	}
	out = append(out, digits[:len(digits)-scale]...)
	out = append(out, '.')
	return append(out, digits[len(digits)-scale:]...)
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

func uuidString(b []byte) string {
	var out [36]byte
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j] = hexDigits[c>>4]
		out[j+1] = hexDigits[c&0xf]
		j += 2
	}
	return string(out[:])
}
