package fakeapp

import (
	"encoding/binary"
	"fmt"

	"github.com/hamba/avro/v2"

	"github.com/kaudit/kaudit/internal/fakeregistry"
)

const (
	EventSchema = `{"type":"record","name":"Event","namespace":"demo","fields":[
 {"name":"orderId","type":["null","string"],"default":null},
 {"name":"seq","type":"long"},
 {"name":"amount","type":"long"},
 {"name":"table","type":"string"}]}`
	StatusSchema = `{"type":"record","name":"OrderStatus","namespace":"demo","fields":[
 {"name":"orderId","type":"string"},
 {"name":"orderAmount","type":"long"},
 {"name":"paid","type":["null","long"],"default":null},
 {"name":"shipped","type":["null","long"],"default":null}]}`
)

// AvroEncoder writes a scenario's values as Confluent-framed Avro under per-topic subjects, as
// the Confluent serializers do with TopicNameStrategy.
type AvroEncoder struct {
	reg    *fakeregistry.Registry
	event  avro.Schema
	status avro.Schema
	ids    map[string]int
}

// NewAvroEncoder registers schemas with reg as it meets new topics.
func NewAvroEncoder(reg *fakeregistry.Registry) (*AvroEncoder, error) {
	ev, err := avro.Parse(EventSchema)
	if err != nil {
		return nil, fmt.Errorf("parse the demo schema: %w", err)
	}
	st, err := avro.Parse(StatusSchema)
	if err != nil {
		return nil, fmt.Errorf("parse the demo schema: %w", err)
	}
	return &AvroEncoder{reg: reg, event: ev, status: st, ids: map[string]int{}}, nil
}

// Encode is a Scenario.Encode: the seed's event schema for sources,
// repartition topics and changelogs, an OrderStatus schema for the output.
func (e *AvroEncoder) Encode(topic string, v map[string]any) ([]byte, error) {
	schema, text, val := e.event, EventSchema, map[string]any{"orderId": nil, "seq": toLong(v["seq"]), "amount": toLong(v["amount"]), "table": v["table"]}
	if id, ok := v["orderId"].(string); ok {
		val["orderId"] = id
	}
	if topic == "order-status" {
		schema, text = e.status, StatusSchema
		order, _ := v["order"].(map[string]any)
		val = map[string]any{"orderId": v["orderId"], "orderAmount": toLong(order["amount"]), "paid": nil, "shipped": nil}
		if p, ok := v["payments"].(map[string]any); ok {
			val["paid"] = toLong(p["amount"])
		}
		if s, ok := v["shipments"].(map[string]any); ok {
			val["shipped"] = toLong(s["amount"])
		}
	}
	id, ok := e.ids[topic]
	if !ok {
		var err error
		if id, err = e.reg.Register(topic+"-value", text); err != nil {
			return nil, fmt.Errorf("register the schema of %s: %w", topic, err)
		}
		e.ids[topic] = id
	}
	body, err := avro.Marshal(schema, val)
	if err != nil {
		return nil, fmt.Errorf("encode a %s value: %w", topic, err)
	}
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...), nil
}

func toLong(v any) any {
	switch n := v.(type) {
	case int:
		return int64(n)
	case nil:
		return nil
	}
	return v
}
