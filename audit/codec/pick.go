package codec

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kaudit/kaudit/audit"
)

// DigestField returns, for a Confluent-framed Avro value of a record
// schema, DigestBytes's digest of the whole value and the decoded value of
// one top-level field, the only part of it built: what a table whose
// select_key is value.FIELD and whose reducer keeps no value needs of a
// source record. The field's value is what Decode would hold under that
// name, its strings copied out of data. ok is false, and nothing else
// set, when the fast path does not apply (another serde, a schema of
// another type, no such field, or a field of a record, array or map
// type): the caller decodes the value in full. Errors are Decode's.
func (c *Codec) DigestField(ctx context.Context, topic string, data []byte, field string) (v audit.Value, dg Digest, ok bool, err error) {
	if len(data) < 5 || data[0] != 0 || c.serdeFor(topic, false).s != sAvro || c.schemas == nil {
		return nil, Digest{}, false, nil
	}
	id := int32(binary.BigEndian.Uint32(data[1:5]))
	sch, err := c.schema(ctx, id)
	if err != nil {
		var re *RegistryError
		if errors.As(err, &re) || ctx.Err() != nil {
			return nil, Digest{}, false, err
		}
		return nil, Digest{}, false, &DecodeError{Topic: topic, SchemaID: id, Err: err}
	}
	if sch.typ != typeAvro || sch.node.kind != kRecord {
		return nil, Digest{}, false, nil
	}
	pick := -1
	for i, name := range sch.node.names {
		if name == field {
			pick = i
		}
	}
	if pick < 0 || !scalarNode(sch.node.fields[pick], 0) {
		return nil, Digest{}, false, nil
	}
	body := data[5:]
	scratch := scratchPool.Get().(*digestScratch)
	d := avroDecoder{digest: true, canon: scratch.canon[:0], ends: scratch.ends[:0], entries: scratch.entries[:0], pick: pick + 1}
	d.viewPayload(body)
	d.text(sch.node)
	if d.err == nil {
		dg = digestOfText(d.canon)
	}
	v = d.picked
	scratch.canon, scratch.ends, scratch.entries = d.canon, d.ends, d.entries
	scratchPool.Put(scratch)
	if d.err != nil {
		return nil, Digest{}, false, &DecodeError{Topic: topic, SchemaID: id, Err: d.err}
	}
	if d.i != len(body) {
		return nil, Digest{}, false, &DecodeError{Topic: topic, SchemaID: id, Reason: fmt.Sprintf("%d bytes left after the value", len(body)-d.i)}
	}
	return v, dg, true, nil
}

// scalarNode reports whether values of n hold no record, array or map:
// what a picked field may be, its value built apart from the payload's.
func scalarNode(n *node, depth int) bool {
	switch n.kind {
	case kRecord, kArray, kMap:
		return false
	case kUnion:
		if depth > 4 {
			return false
		}
		for _, b := range n.branches {
			if !scalarNode(b, depth+1) {
				return false
			}
		}
	}
	return true
}
