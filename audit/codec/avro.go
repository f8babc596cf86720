package codec

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
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
	kind      kind
	names     []string // record field names
	fields    []*node  // record field types
	order     []int    // record fields in the order of their names' bytes
	keys      []string // in that order, `{"name":` for the first, `,"name":` for the others
	keysLen   int      // the bytes of keys
	inOrder   bool     // record fields already in the order of their names
	flat      bool     // record fields all of scalar types or unions of them
	items     *node    // array items, map values
	branches  []*node  // union branches
	symbols   []any    // enum symbols, boxed once
	symText   []string // enum symbols as JSON strings
	size      int      // fixed size
	scale     int      // decimal scale
	zero      bool     // decodes from zero bytes (null, empty record)
	strs      int      // boxed strings a value holds outside arrays and maps, estimated (root only)
	fieldStrs []int    // strs of each field of a root record (see DecodeFields)
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
	if n.kind == kRecord {
		for _, f := range n.fields {
			n.fieldStrs = append(n.fieldStrs, countStrs(f, map[*node]bool{n: true}))
		}
	}
	return n, nil
}

// countStrs estimates how many boxed strings a value of n holds, outside
// arrays and maps, to size the decoder's first chunk.
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
		boxed, text := make([]any, len(syms)), make([]string, len(syms))
		for i, sym := range syms {
			boxed[i], text[i] = sym, string(appendString(nil, sym))
		}
		return &node{kind: kEnum, symbols: boxed, symText: text}, nil
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
			n.order = append(n.order, len(n.order))
		}
		slices.SortFunc(n.order, func(a, b int) int { return strings.Compare(n.names[a], n.names[b]) })
		n.inOrder, n.flat = true, len(n.fields) <= maxFlatFields
		for j, i := range n.order {
			n.inOrder = n.inOrder && i == j
			n.flat = n.flat && flatNode(n.fields[i])
		}
		for j, i := range n.order {
			sep := byte(',')
			if j == 0 {
				sep = '{'
			}
			n.keys = append(n.keys, string(append(appendString([]byte{sep}, n.names[i]), ':')))
			n.keysLen += len(n.keys[j])
		}
		return n, nil
	case avro.Ref:
		return c.compile(s.(*avro.RefSchema).Schema())
	}
	return nil, fmt.Errorf("unsupported avro type %s", s.Type())
}

// maxFlatFields bounds the fields of a flat record: text keeps where each
// starts on the stack.
const maxFlatFields = 32

// flatNode reports whether values of n hold no record, array or map, so
// that skipping one costs a few reads: unions of scalars and scalars.
func flatNode(n *node) bool {
	switch n.kind {
	case kRecord, kArray, kMap:
		return false
	case kUnion:
		for _, b := range n.branches {
			if b.kind == kRecord || b.kind == kArray || b.kind == kMap || b.kind == kUnion {
				return false
			}
		}
	}
	return true
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

// mapKey stands for a map entry in block counts: its key takes at least
// one byte, so it is never zero-byte.
var mapKey = &node{kind: kString}

// avroDecoder reads Avro binary data against a compiled schema.
type avroDecoder struct {
	b     []byte
	s     string // b as one string: decoded strings are slices of it
	chunk []byte // the current chunk of text and string headers (see arena.go)
	arena []byte // the chunk's text: capped at hdr
	hdr   int    // offset of the chunk's lowest string header
	i     int
	err   error
	depth int
	zeros int

	// With digest, value also writes the canonical JSON of what it decodes
	// to canon (see DecodeDigest); ends and entries are scratch space. text
	// writes only that (see DigestBytes): nothing is allocated, and d.s is
	// the caller's payload, not a copy.
	digest  bool
	canon   []byte
	ends    []int
	entries []mapEntry
	// pick, when set (DigestField), is 1 + the index of a field of the
	// top-level record that text decodes in full while it only digests
	// the rest; picked its value.
	pick   int
	picked any
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
	if i := d.i; i < len(d.b) {
		if c := d.b[i]; c < 0x80 { // one byte: -64 to 63
			d.i = i + 1
			return int64(c>>1) ^ -int64(c&1)
		}
	}
	return d.longSlow()
}

func (d *avroDecoder) longSlow() int64 {
	b, i := d.b, d.i
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if i >= len(b) {
			d.i = i
			d.truncated("varint")
			return 0
		}
		c := b[i]
		i++
		if shift == 63 && c > 1 {
			d.i = i
			d.fail(fmt.Errorf("varint overflows 64 bits at byte %d", i-1))
			return 0
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			d.i = i
			return int64(v>>1) ^ -int64(v&1)
		}
	}
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
	if i := d.i; i < len(d.b) {
		// most lengths take one byte: 0 to 63, written as 0 to 126
		if c := d.b[i]; c < 0x80 && c&1 == 0 && int(c>>1) < len(d.b)-i {
			d.i = i + 1 + int(c>>1)
			return i + 1, d.i
		}
	}
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

// value decodes one value of n. With d.digest it also appends the value's
// canonical JSON to d.canon: the bytes Canonical writes for the value, so
// that DecodeDigest's digest is DigestOf's.
func (d *avroDecoder) value(n *node) any {
	if d.err != nil {
		return nil
	}
	var res any
	emit := emitAny
	switch n.kind {
	case kNull:
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
		res = c == 1
	case kInt:
		emit = emitRaw
		v := d.int()
		if d.err != nil {
			return nil
		}
		res = d.numberValue(int64(v))
	case kLong:
		emit = emitRaw
		v := d.long()
		if d.err != nil {
			return nil
		}
		res = d.numberValue(v)
	case kFloat:
		b := d.fixed(4)
		if d.err != nil {
			return nil
		}
		res = d.floatValue(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
	case kDouble:
		b := d.fixed(8)
		if d.err != nil {
			return nil
		}
		res = d.floatValue(math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
	case kString:
		s, e := d.span("string")
		if d.err != nil {
			return nil
		}
		res = d.box(stringType, d.s[s:e])
	case kBytes:
		emit = emitQuoted
		s, e := d.span("bytes")
		if d.err != nil {
			return nil
		}
		res = d.base64(d.b[s:e])
	case kFixed:
		emit = emitQuoted
		b := d.fixed(n.size)
		if d.err != nil {
			return nil
		}
		res = d.base64(b)
	case kEnum:
		i := d.int()
		if d.err != nil {
			return nil
		}
		if i < 0 || int(i) >= len(n.symbols) {
			d.fail(fmt.Errorf("enum index %d out of %d symbols", i, len(n.symbols)))
			return nil
		}
		res = n.symbols[i]
	case kDate:
		emit = emitQuoted
		v := d.int()
		if d.err != nil {
			return nil
		}
		res = d.date(int64(v))
	case kTimeMillis:
		emit = emitQuoted
		v := d.int()
		if d.err != nil {
			return nil
		}
		res = timeOfDay(int64(v)*1000, 3)
	case kTimeMicros:
		emit = emitQuoted
		v := d.long()
		if d.err != nil {
			return nil
		}
		res = timeOfDay(v, 6)
	case kTSMillis, kLocalTSMillis:
		emit = emitQuoted
		v := d.long()
		if d.err != nil {
			return nil
		}
		sec := floorDiv(v, 1000)
		res = d.timestamp(sec, (v-sec*1000)*1_000_000, n.kind == kLocalTSMillis)
	case kTSMicros, kLocalTSMicros:
		emit = emitQuoted
		v := d.long()
		if d.err != nil {
			return nil
		}
		sec := floorDiv(v, 1_000_000)
		res = d.timestamp(sec, (v-sec*1_000_000)*1000, n.kind == kLocalTSMicros)
	case kDecimalBytes:
		emit = emitQuoted
		s, e := d.span("decimal")
		if d.err != nil {
			return nil
		}
		res = d.decimal(d.b[s:e], n.scale)
	case kDecimalFixed:
		emit = emitQuoted
		b := d.fixed(n.size)
		if d.err != nil {
			return nil
		}
		res = d.decimal(b, n.scale)
	case kUUIDFixed:
		emit = emitQuoted
		b := d.fixed(16)
		if d.err != nil {
			return nil
		}
		res = uuidString(b)
	case kDuration:
		b := d.fixed(12)
		if d.err != nil {
			return nil
		}
		res = map[string]any{
			"months":       num(int64(binary.LittleEndian.Uint32(b[0:]))),
			"days":         num(int64(binary.LittleEndian.Uint32(b[4:]))),
			"milliseconds": num(int64(binary.LittleEndian.Uint32(b[8:]))),
		}
	case kRecord:
		return d.record(n)
	case kArray:
		return d.array(n)
	case kMap:
		return d.avroMap(n)
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
		res = d.value(n.branches[i])
		d.depth--
		return res
	default:
		d.fail(fmt.Errorf("unsupported node kind %d", n.kind))
		return nil
	}
	if d.digest {
		switch emit {
		case emitQuoted:
			s := res.(string)
			d.canon = append(append(append(d.canon, '"'), s...), '"')
		case emitRaw:
			d.canon = append(d.canon, res.(json.Number)...)
		default:
			d.canon = appendScalar(d.canon, res)
		}
	}
	return res
}

// How value writes a scalar's canonical JSON.
const (
	emitAny    = iota // as Canonical does: appendScalar
	emitQuoted        // a string of ASCII that needs no escape: base64, dates, times, decimals, UUIDs
	emitRaw           // a json.Number in canonical form: an integer
)

func (d *avroDecoder) record(n *node) any {
	if d.depth++; d.depth > maxNesting {
		d.fail(errAvroTooDeep)
		return nil
	}
	m := make(map[string]any, len(n.fields))
	switch {
	case !d.digest:
		for i, f := range n.fields {
			m[n.names[i]] = d.value(f)
		}
	case n.inOrder: // the text as recordText writes it
		if len(n.fields) == 0 {
			d.canon = append(d.canon, '{')
		}
		for i, f := range n.fields {
			d.canon = append(d.canon, n.keys[i]...)
			m[n.names[i]] = d.value(f)
		}
		d.canon = append(d.canon, '}')
	default:
		start, base := len(d.canon), len(d.ends)
		for i, f := range n.fields {
			m[n.names[i]] = d.value(f)
			d.ends = append(d.ends, len(d.canon))
		}
		if d.err == nil {
			d.sortFields(n, start, d.ends[base:])
		}
		d.ends = d.ends[:base]
	}
	d.depth--
	if d.err != nil {
		return nil
	}
	return m
}

// sortFields rewrites the canonical texts of a record's fields, written
// in schema order from start and ending at ends, as one JSON object with
// its keys sorted.
func (d *avroDecoder) sortFields(n *node, start int, ends []int) {
	mid := len(d.canon)
	size := n.keysLen + mid - start + 1 // keys, values, '}'
	if len(n.order) == 0 {
		size++ // '{'
	}
	c := slices.Grow(d.canon, size)[:mid+size]
	w := mid
	if len(n.order) == 0 {
		c[w] = '{'
		w++
	}
	for j, i := range n.order {
		w += copy(c[w:], n.keys[j])
		from := start
		if i > 0 {
			from = ends[i-1]
		}
		w += copy(c[w:], c[from:ends[i]])
	}
	c[w] = '}'
	d.canon = c[:start+copy(c[start:], c[mid:])]
}

func (d *avroDecoder) array(n *node) any {
	if d.depth++; d.depth > maxNesting {
		d.fail(errAvroTooDeep)
		return nil
	}
	arr := []any{}
	if d.digest {
		d.canon = append(d.canon, '[')
	}
	items := 0
	for {
		c := d.blockCount(n.items)
		if c == 0 || d.err != nil {
			break
		}
		arr = growAny(arr, c)
		for range c {
			if d.digest && items > 0 {
				d.canon = append(d.canon, ',')
			}
			items++
			arr = append(arr, d.value(n.items))
			if d.err != nil {
				break
			}
		}
	}
	if d.digest {
		d.canon = append(d.canon, ']')
	}
	d.depth--
	if d.err != nil {
		return nil
	}
	return arr
}

// mapEntry is one entry of an Avro map in d.canon: its key and the span of
// its value's canonical text.
type mapEntry struct {
	key      string
	from, to int
}

func (d *avroDecoder) avroMap(n *node) any {
	if d.depth++; d.depth > maxNesting {
		d.fail(errAvroTooDeep)
		return nil
	}
	m := map[string]any{}
	start, base := len(d.canon), len(d.entries)
	for {
		c := d.blockCount(mapKey)
		if c == 0 || d.err != nil {
			break
		}
		for range c {
			s, e := d.span("map key")
			if d.err != nil {
				break
			}
			key, from := d.s[s:e], len(d.canon) // keys need no boxing
			m[key] = d.value(n.items)
			if d.err != nil {
				break
			}
			if d.digest {
				d.entries = append(d.entries, mapEntry{key, from, len(d.canon)})
			}
		}
	}
	if d.digest && d.err == nil {
		d.sortEntries(start, d.entries[base:])
	}
	clear(d.entries[base:])
	d.entries = d.entries[:base]
	d.depth--
	if d.err != nil {
		return nil
	}
	return m
}

// sortEntries rewrites the canonical texts of a map's entries, written in
// payload order from start, as one JSON object with its keys sorted. A key
// written twice keeps its last value, as the decoded map does.
func (d *avroDecoder) sortEntries(start int, entries []mapEntry) {
	slices.SortStableFunc(entries, func(a, b mapEntry) int { return strings.Compare(a.key, b.key) })
	mid := len(d.canon)
	d.canon = append(d.canon, '{')
	for i, e := range entries {
		if i+1 < len(entries) && entries[i+1].key == e.key {
			continue // a later value replaced this one
		}
		if len(d.canon) > mid+1 {
			d.canon = append(d.canon, ',')
		}
		d.canon = appendString(d.canon, e.key)
		d.canon = append(d.canon, ':')
		d.canon = append(d.canon, d.canon[e.from:e.to]...)
	}
	d.canon = append(d.canon, '}')
	d.canon = append(d.canon[:start], d.canon[mid:]...)
}

// appendScalar appends a scalar's canonical JSON, as encoder.value does.
func appendScalar(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if x {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case string:
		return appendString(b, x)
	case json.Number:
		return appendNumber(b, string(x))
	}
	e := encPool.Get().(*encoder) // a duration's map
	b = e.value(b, v, 0)
	encPool.Put(e)
	return b
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
	return d.boxText(numberType, start)
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
	d.reserve(48) // 39 at most, for years far from now
	start := len(d.arena)
	d.arena = appendTimestamp(d.arena, sec, nsec, local)
	return d.boxText(stringType, start)
}

// date renders days since the epoch as an ISO date.
func (d *avroDecoder) date(days int64) any {
	if y, _, _ := civil(days); y < 0 || y > 9999 {
		return time.Unix(days*86400, 0).UTC().Format(time.DateOnly)
	}
	d.reserve(10)
	start := len(d.arena)
	d.arena = appendDate(d.arena, days)
	return d.boxText(stringType, start)
}

// appendDate writes days since the epoch as an ISO date, as
// time.Time.Format with time.DateOnly.
func appendDate(b []byte, days int64) []byte {
	y, m, dd := civil(days)
	if y < 0 || y > 9999 {
		return time.Unix(days*86400, 0).UTC().AppendFormat(b, time.DateOnly)
	}
	var buf [10]byte
	putDate(buf[:], y, m, dd)
	return append(b, buf[:]...)
}

func (d *avroDecoder) base64(b []byte) any {
	d.reserve(base64.StdEncoding.EncodedLen(len(b)))
	start := len(d.arena)
	d.arena = base64.StdEncoding.AppendEncode(d.arena, b)
	return d.boxText(stringType, start)
}

func (d *avroDecoder) decimal(b []byte, scale int) any {
	if len(b) <= 8 && scale >= 0 && scale < 19 {
		d.reserve(48)
		start := len(d.arena)
		d.arena = appendScaled(d.arena, smallUnscaled(b), scale)
		return d.boxText(stringType, start)
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
	var dbuf [20]byte
	digits := dbuf[formatDigits(&dbuf, absU(u)):]
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

// formatDigits writes u in decimal at the end of buf and returns where
// the digits start: strconv's way, two digits at a time, without its
// generality.
func formatDigits(buf *[20]byte, u uint64) int {
	i := len(buf)
	for u >= 100 {
		q := u / 100
		r := u - q*100
		i -= 2
		buf[i], buf[i+1] = digitPairs[2*r], digitPairs[2*r+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		buf[i], buf[i+1] = digitPairs[2*u], digitPairs[2*u+1]
	} else {
		i--
		buf[i] = byte('0' + u)
	}
	return i
}

// appendInt writes v in decimal, as strconv.AppendInt(b, v, 10).
func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		b = append(b, '-')
	}
	var buf [20]byte
	return append(b, buf[formatDigits(&buf, absU(v)):]...)
}

const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-(v + 1)) + 1
	}
	return uint64(v)
}

func uuidString(b []byte) string {
	var out [36]byte
	return string(appendUUID(out[:0], b))
}

// appendUUID writes 16 bytes as 8-4-4-4-12 lowercase hex.
func appendUUID(out, b []byte) []byte {
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return out
}
