package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unsafe"
)

// DecodeFields decodes only the named top-level fields of a value of topic
// (a Confluent-framed Avro record): a map[string]any holding exactly those of
// the fields the record has, each as Decode would give it; ok false when the
// value is not an Avro record (not framed, not Avro, the schema is not a
// record) and the caller must Decode it whole. err is Decode's error for data.
//
// It is what a join needs of a table's value: the few fields its
// expression reads. The whole value is checked as Decode checks it, so
// DecodeFields fails where Decode fails, but the other fields are only
// skipped: their strings are neither copied nor boxed. On an error ok is
// false.
func (c *Codec) DecodeFields(ctx context.Context, topic string, data []byte, fields []string) (v map[string]any, ok bool, err error) {
	if len(data) < 5 || data[0] != 0 || c.serdeFor(topic, false).s != sAvro || c.schemas == nil {
		return nil, false, nil
	}
	id := int32(binary.BigEndian.Uint32(data[1:5]))
	derr := func(reason string, err error) error {
		return &DecodeError{Topic: topic, SchemaID: id, Reason: reason, Err: err}
	}
	sch, err := c.schema(ctx, id)
	if err != nil {
		var re *RegistryError
		if errors.As(err, &re) || ctx.Err() != nil {
			return nil, false, err
		}
		return nil, false, derr("", err)
	}
	n := sch.node
	if sch.typ != typeAvro || n.kind != kRecord {
		return nil, false, nil
	}
	body := data[5:]

	// First the whole record is checked, as value would read it, and the
	// bytes of each field asked for noted.
	type part struct{ field, start, end int }
	var buf [8]part
	parts := buf[:0]
	var d avroDecoder
	d.viewPayload(body)
	d.depth = 1 // in the record, as value's record counts it
	size, strs := 0, 0
	for i, f := range n.fields {
		start := d.i
		d.skip(f)
		if d.err == nil && slices.Contains(fields, n.names[i]) {
			parts = append(parts, part{i, start, d.i})
			size += d.i - start
			strs += n.fieldStrs[i]
		}
	}
	if d.err != nil {
		return nil, false, derr("", d.err)
	}
	if d.i != len(body) {
		return nil, false, derr(fmt.Sprintf("%d bytes left after the value", len(body)-d.i), nil)
	}
	v = make(map[string]any, len(parts))
	if len(parts) == 0 {
		return v, true, nil
	}

	// Then the fields asked for are decoded from a copy of their bytes
	// alone, which their strings are slices of, as Decode's are of its
	// copy of the payload.
	var fd avroDecoder
	if size > 0 {
		fd.newChunk(size, size+arenaFirst+min(strs, 64)*headerSize)
		w := 0
		for _, p := range parts {
			w += copy(fd.chunk[w:], body[p.start:p.end])
		}
		fd.b, fd.s = fd.chunk[:size], unsafe.String(&fd.chunk[0], size)
	}
	fd.depth = 1
	for _, p := range parts {
		v[n.names[p.field]] = fd.value(n.fields[p.field])
	}
	if fd.err != nil || fd.i != size {
		// the copy was checked above: only a bug gets here, and Decode
		// still gives the right value
		return nil, false, nil
	}
	return v, true, nil
}

// FieldTexts is DecodeFields writing text instead of building values: it
// appends to dst the canonical JSON of each of the named top-level fields
// of a value of topic (a Confluent-framed Avro record), the text Canonical
// writes for the field of the value Decode returns, and sets spans[i] to
// the start and end in the returned slice of fields[i]'s text, or {-1, -1}
// where the record has no such field. spans must be as long as fields.
// ok is false, and dst returned as it came, where DecodeFields declines,
// and also where a field asked for holds a record, an array or a map (a
// caller that converts values, as a join's expression does, can tell a
// scalar's text is kept: see scalarNode). err is Decode's error for data,
// with ok false. It is what a join whose value copies fields needs to
// digest its expected value without building it.
func (c *Codec) FieldTexts(ctx context.Context, topic string, data []byte, fields []string, dst []byte, spans [][2]int) (out []byte, ok bool, err error) {
	if len(data) < 5 || data[0] != 0 || c.serdeFor(topic, false).s != sAvro || c.schemas == nil {
		return dst, false, nil
	}
	id := int32(binary.BigEndian.Uint32(data[1:5]))
	sch, err := c.schema(ctx, id)
	if err != nil {
		var re *RegistryError
		if errors.As(err, &re) || ctx.Err() != nil {
			return dst, false, err
		}
		return dst, false, &DecodeError{Topic: topic, SchemaID: id, Err: err}
	}
	n := sch.node
	if sch.typ != typeAvro || n.kind != kRecord {
		return dst, false, nil
	}
	for i, f := range n.fields {
		if !scalarNode(f, 0) && slices.Contains(fields, n.names[i]) {
			return dst, false, nil
		}
	}
	for i := range spans[:len(fields)] {
		spans[i] = [2]int{-1, -1}
	}
	body := data[5:]
	start := len(dst)
	d := avroDecoder{digest: true, canon: dst}
	d.viewPayload(body)
	d.depth = 1 // in the record, as value's record counts it
	for i, f := range n.fields {
		at := slices.Index(fields, n.names[i])
		if at < 0 {
			d.skip(f)
			continue
		}
		from := len(d.canon)
		d.text(f)
		for j := at; j < len(fields); j++ { // a field asked for twice
			if fields[j] == n.names[i] {
				spans[j] = [2]int{from, len(d.canon)}
			}
		}
	}
	if d.err != nil {
		return d.canon[:start], false, &DecodeError{Topic: topic, SchemaID: id, Err: d.err}
	}
	if d.i != len(body) {
		return d.canon[:start], false, &DecodeError{Topic: topic, SchemaID: id, Reason: fmt.Sprintf("%d bytes left after the value", len(body)-d.i)}
	}
	return d.canon, true, nil
}

// DigestText returns the digest of canonical JSON text: DigestOf of the
// value whose Canonical it is.
func DigestText(text []byte) Digest { return digestOfText(text) }
