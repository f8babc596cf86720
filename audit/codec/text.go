package codec

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// text writes the canonical JSON of one value of n to d.canon straight
// from the payload, building no value: DigestBytes' walk, and
// DigestField's but for the field it picks. It writes what Canonical
// writes for the value Decode returns, and fails where value fails, with
// the same errors. Each type writes its text itself: no value passes
// through an interface.
func (d *avroDecoder) text(n *node) {
	if d.err != nil {
		return
	}
	switch n.kind {
	case kNull:
		d.canon = append(d.canon, "null"...)
	case kBool:
		if d.i >= len(d.b) {
			d.truncated("boolean")
			return
		}
		c := d.b[d.i]
		d.i++
		switch c {
		case 0:
			d.canon = append(d.canon, "false"...)
		case 1:
			d.canon = append(d.canon, "true"...)
		default:
			d.fail(fmt.Errorf("boolean byte %d at byte %d", c, d.i-1))
		}
	case kInt:
		if v := d.int(); d.err == nil {
			d.canon = appendInt(d.canon, int64(v))
		}
	case kLong:
		if v := d.long(); d.err == nil {
			d.canon = appendInt(d.canon, v)
		}
	case kFloat:
		if b := d.fixed(4); d.err == nil {
			d.canon = appendFloatText(d.canon, float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), 32)
		}
	case kDouble:
		if b := d.fixed(8); d.err == nil {
			d.canon = appendFloatText(d.canon, math.Float64frombits(binary.LittleEndian.Uint64(b)), 64)
		}
	case kString:
		if s, e := d.span("string"); d.err == nil {
			d.canon = appendString(d.canon, d.s[s:e])
		}
	case kBytes:
		if s, e := d.span("bytes"); d.err == nil {
			d.canon = appendBase64(d.canon, d.b[s:e])
		}
	case kFixed:
		if b := d.fixed(n.size); d.err == nil {
			d.canon = appendBase64(d.canon, b)
		}
	case kEnum:
		i := d.int()
		if d.err != nil {
			return
		}
		if i < 0 || int(i) >= len(n.symText) {
			d.fail(fmt.Errorf("enum index %d out of %d symbols", i, len(n.symText)))
			return
		}
		d.canon = append(d.canon, n.symText[i]...)
	case kDate:
		if v := d.int(); d.err == nil {
			d.canon = append(appendDate(append(d.canon, '"'), int64(v)), '"')
		}
	case kTimeMillis:
		if v := d.int(); d.err == nil {
			d.canon = appendString(d.canon, timeOfDay(int64(v)*1000, 3)) // rare: allocated
		}
	case kTimeMicros:
		if v := d.long(); d.err == nil {
			d.canon = appendString(d.canon, timeOfDay(v, 6))
		}
	case kTSMillis, kLocalTSMillis:
		if v := d.long(); d.err == nil {
			sec := floorDiv(v, 1000)
			d.canon = append(appendTimestamp(append(d.canon, '"'), sec, (v-sec*1000)*1_000_000, n.kind == kLocalTSMillis), '"')
		}
	case kTSMicros, kLocalTSMicros:
		if v := d.long(); d.err == nil {
			sec := floorDiv(v, 1_000_000)
			d.canon = append(appendTimestamp(append(d.canon, '"'), sec, (v-sec*1_000_000)*1000, n.kind == kLocalTSMicros), '"')
		}
	case kDecimalBytes:
		if s, e := d.span("decimal"); d.err == nil {
			d.canon = appendDecimalText(d.canon, d.b[s:e], n.scale)
		}
	case kDecimalFixed:
		if b := d.fixed(n.size); d.err == nil {
			d.canon = appendDecimalText(d.canon, b, n.scale)
		}
	case kUUIDFixed:
		if b := d.fixed(16); d.err == nil {
			d.canon = append(appendUUID(append(d.canon, '"'), b), '"')
		}
	case kDuration:
		b := d.fixed(12)
		if d.err != nil {
			return
		}
		// as Canonical writes the map value builds
		d.canon = append(d.canon, `{"days":`...)
		d.canon = appendInt(d.canon, int64(binary.LittleEndian.Uint32(b[4:])))
		d.canon = append(d.canon, `,"milliseconds":`...)
		d.canon = appendInt(d.canon, int64(binary.LittleEndian.Uint32(b[8:])))
		d.canon = append(d.canon, `,"months":`...)
		d.canon = appendInt(d.canon, int64(binary.LittleEndian.Uint32(b[0:])))
		d.canon = append(d.canon, '}')
	case kRecord:
		d.recordText(n)
	case kArray:
		d.arrayText(n)
	case kMap:
		d.mapText(n)
	case kUnion:
		i := d.long()
		if d.err != nil {
			return
		}
		if i < 0 || i >= int64(len(n.branches)) {
			d.fail(fmt.Errorf("union branch %d out of %d", i, len(n.branches)))
			return
		}
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return
		}
		d.text(n.branches[i])
		d.depth--
	default:
		d.fail(fmt.Errorf("unsupported node kind %d", n.kind))
	}
}

// recordText writes a record as a JSON object with its keys sorted. The
// payload holds the fields in the schema's order: a record whose names
// are in order anyway is written as it is read; a flat record's fields
// are found in a first pass that checks them as value would, then
// written in the names' order; any other record's fields are written as
// read and sortFields moves them into place.
func (d *avroDecoder) recordText(n *node) {
	if d.depth++; d.depth > maxNesting {
		d.fail(errAvroTooDeep)
		return
	}
	pick := 0
	if d.depth == 1 {
		pick = d.pick
	}
	switch {
	case n.inOrder:
		if len(n.fields) == 0 {
			d.canon = append(d.canon, '{')
		}
		for i, f := range n.fields {
			d.canon = append(d.canon, n.keys[i]...)
			if pick == i+1 {
				d.pickField(f)
			} else {
				d.text(f)
			}
		}
		d.canon = append(d.canon, '}')
	case n.flat:
		var starts [maxFlatFields]int
		for i, f := range n.fields {
			starts[i] = d.i
			d.skip(f)
		}
		if d.err == nil {
			end := d.i
			for j, i := range n.order {
				d.canon = append(d.canon, n.keys[j]...)
				d.i = starts[i]
				if pick == i+1 {
					d.pickField(n.fields[i])
				} else {
					d.text(n.fields[i])
				}
			}
			d.canon = append(d.canon, '}')
			d.i = end
		}
	default:
		start, base := len(d.canon), len(d.ends)
		for i, f := range n.fields {
			if pick == i+1 {
				d.pickField(f)
			} else {
				d.text(f)
			}
			d.ends = append(d.ends, len(d.canon))
		}
		if d.err == nil {
			d.sortFields(n, start, d.ends[base:])
		}
		d.ends = d.ends[:base]
	}
	d.depth--
}

// pickField decodes the field DigestField picks and writes its text: a
// scalar, its strings boxed in a chunk of their own, as the full decoder
// builds it, and digested as it digests it.
func (d *avroDecoder) pickField(f *node) {
	d.picked = d.value(f) // d.digest is set: value writes its text
	d.pick = 0
}

func (d *avroDecoder) arrayText(n *node) {
	if d.depth++; d.depth > maxNesting {
		d.fail(errAvroTooDeep)
		return
	}
	d.canon = append(d.canon, '[')
	items := 0
	for {
		c := d.blockCount(n.items)
		if c == 0 || d.err != nil {
			break
		}
		for range c {
			if items > 0 {
				d.canon = append(d.canon, ',')
			}
			items++
			d.text(n.items)
			if d.err != nil {
				break
			}
		}
	}
	d.canon = append(d.canon, ']')
	d.depth--
}

func (d *avroDecoder) mapText(n *node) {
	if d.depth++; d.depth > maxNesting {
		d.fail(errAvroTooDeep)
		return
	}
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
			from := len(d.canon)
			d.text(n.items)
			if d.err != nil {
				break
			}
			d.entries = append(d.entries, mapEntry{d.s[s:e], from, len(d.canon)})
		}
	}
	if d.err == nil {
		d.sortEntries(start, d.entries[base:])
	}
	clear(d.entries[base:])
	d.entries = d.entries[:base]
	d.depth--
}

// skip reads past one value of n, building and writing nothing, and
// fails where value fails, with the same errors: it checks every length,
// index and count value checks, in the same order.
func (d *avroDecoder) skip(n *node) {
	if d.err != nil {
		return
	}
	switch n.kind {
	case kNull:
	case kBool:
		if d.i >= len(d.b) {
			d.truncated("boolean")
			return
		}
		c := d.b[d.i]
		d.i++
		if c > 1 {
			d.fail(fmt.Errorf("boolean byte %d at byte %d", c, d.i-1))
		}
	case kInt, kDate, kTimeMillis:
		d.int()
	case kLong, kTimeMicros, kTSMillis, kTSMicros, kLocalTSMillis, kLocalTSMicros:
		d.long()
	case kFloat:
		d.fixed(4)
	case kDouble:
		d.fixed(8)
	case kString:
		d.span("string")
	case kBytes:
		d.span("bytes")
	case kDecimalBytes:
		d.span("decimal")
	case kFixed, kDecimalFixed, kUUIDFixed, kDuration:
		d.fixed(n.size)
	case kEnum:
		i := d.int()
		if d.err == nil && (i < 0 || int(i) >= len(n.symbols)) {
			d.fail(fmt.Errorf("enum index %d out of %d symbols", i, len(n.symbols)))
		}
	case kRecord:
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return
		}
		for _, f := range n.fields {
			d.skip(f)
		}
		d.depth--
	case kArray:
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return
		}
		for {
			c := d.blockCount(n.items)
			if c == 0 || d.err != nil {
				break
			}
			for range c {
				d.skip(n.items)
				if d.err != nil {
					break
				}
			}
		}
		d.depth--
	case kMap:
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return
		}
		for {
			c := d.blockCount(mapKey)
			if c == 0 || d.err != nil {
				break
			}
			for range c {
				d.span("map key")
				d.skip(n.items)
				if d.err != nil {
					break
				}
			}
		}
		d.depth--
	case kUnion:
		i := d.long()
		if d.err != nil {
			return
		}
		if i < 0 || i >= int64(len(n.branches)) {
			d.fail(fmt.Errorf("union branch %d out of %d", i, len(n.branches)))
			return
		}
		if d.depth++; d.depth > maxNesting {
			d.fail(errAvroTooDeep)
			return
		}
		d.skip(n.branches[i])
		d.depth--
	default:
		d.fail(fmt.Errorf("unsupported node kind %d", n.kind))
	}
}

// appendFloatText writes the canonical JSON of the value Decode gives a
// float: what Canonical writes for floatValue's json.Number or string.
func appendFloatText(b []byte, f float64, bits int) []byte {
	if bits == 64 {
		// most doubles: a decimal of at most 15 digits, which appendES
		// writes so and appendNumber would keep as it is
		if m, k, ok := shortDecimal(math.Abs(f)); ok {
			if f < 0 {
				b = append(b, '-')
			}
			return appendScaled(b, m, k)
		}
	}
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	var buf [32]byte
	text := appendES(buf[:0], f, bits)
	return appendNumber(b, unsafe.String(&text[0], len(text))) // as for the json.Number
}

// appendBase64 writes bytes as the JSON string of their standard base64.
func appendBase64(b, data []byte) []byte {
	return append(base64.StdEncoding.AppendEncode(append(b, '"'), data), '"')
}

// appendDecimalText writes a decimal as the JSON string decimal gives.
func appendDecimalText(b, unscaled []byte, scale int) []byte {
	b = append(b, '"')
	if len(unscaled) <= 8 && scale >= 0 && scale < 19 {
		b = appendScaled(b, smallUnscaled(unscaled), scale)
	} else {
		b = append(b, decimalString(unscaled, scale)...)
	}
	return append(b, '"')
}
