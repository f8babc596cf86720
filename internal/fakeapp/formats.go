package fakeapp

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// The demo's schemas as Protobuf: Event and OrderStatus in one file,
// which imports the Source enum through a schema reference, and the
// well-known wrappers for the fields Avro makes nullable.
const (
	ProtoCommon = `syntax = "proto3";
package demo;
enum Source { SOURCE_UNKNOWN = 0; SHOP = 1; }
`
	ProtoEvents = `syntax = "proto3";
package demo;
import "google/protobuf/wrappers.proto";
import "demo/common.proto";
message Event {
  google.protobuf.StringValue orderId = 1;
  int64 seq = 2;
  int64 amount = 3;
  string table = 4;
  Source source = 5;
}
message OrderStatus {
  string orderId = 1;
  int64 orderAmount = 2;
  google.protobuf.Int64Value paid = 3;
  google.protobuf.Int64Value shipped = 4;
}
`
	// JSONEventSchema is the demo's values as a JSON Schema.
	JSONEventSchema = `{"$schema":"http://json-schema.org/draft-07/schema#","title":"Event","type":"object",
 "properties":{"orderId":{"type":["null","string"]},"seq":{"type":"integer"},"amount":{"type":"integer"},"table":{"type":"string"},
 "orderAmount":{"type":"integer"},"paid":{"type":["null","integer"]},"shipped":{"type":["null","integer"]}}}`
)

// ProtobufEncoder writes a scenario's values as Confluent-framed Protobuf
// (magic byte, schema id, message indexes, message) under per-topic
// subjects, as Confluent's serializers do with TopicNameStrategy.
type ProtobufEncoder struct {
	reg         *fakeregistry.Registry
	event, stat protoreflect.MessageDescriptor
	ids         map[string]int
}

// NewProtobufEncoder compiles the demo's Protobuf schema and registers
// its import with reg; the schema itself is registered per topic.
func NewProtobufEncoder(reg *fakeregistry.Registry) (*ProtobufEncoder, error) {
	files := map[string]string{"demo/events.proto": ProtoEvents, "demo/common.proto": ProtoCommon}
	c := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(files)})}
	fds, err := c.Compile(context.Background(), "demo/events.proto")
	if err != nil {
		return nil, fmt.Errorf("compile the demo's protobuf schema: %w", err)
	}
	if _, err := reg.RegisterType("demo/common.proto", "PROTOBUF", ProtoCommon); err != nil {
		return nil, fmt.Errorf("register the demo's protobuf import: %w", err)
	}
	ms := fds[0].Messages()
	return &ProtobufEncoder{reg: reg, event: ms.Get(0), stat: ms.Get(1), ids: map[string]int{}}, nil
}

// Encode is a Scenario.Encode: Event (message index [0], the one-byte
// shortcut) for sources, repartition topics and changelogs, OrderStatus
// ([1]) for the output.
func (e *ProtobufEncoder) Encode(topic string, v map[string]any) ([]byte, error) {
	id, ok := e.ids[topic]
	if !ok {
		var err error
		id, err = e.reg.RegisterType(topic+"-value", "PROTOBUF", ProtoEvents,
			fakeregistry.Reference{Name: "demo/common.proto", Subject: "demo/common.proto", Version: 1})
		if err != nil {
			return nil, fmt.Errorf("register the schema of %s: %w", topic, err)
		}
		e.ids[topic] = id
	}
	var m *dynamicpb.Message
	var index []byte
	set := func(name string, x protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), x)
	}
	wrap := func(name string, w proto.Message) {
		set(name, protoreflect.ValueOfMessage(w.ProtoReflect()))
	}
	if topic == "order-status" {
		m, index = dynamicpb.NewMessage(e.stat), []byte{2, 2} // one index, 1
		order, _ := v["order"].(map[string]any)
		id, _ := v["orderId"].(string)
		set("orderId", protoreflect.ValueOfString(id))
		set("orderAmount", protoreflect.ValueOfInt64(int64Of(order["amount"])))
		if p, ok := v["payments"].(map[string]any); ok {
			wrap("paid", wrapperspb.Int64(int64Of(p["amount"])))
		}
		if s, ok := v["shipments"].(map[string]any); ok {
			wrap("shipped", wrapperspb.Int64(int64Of(s["amount"])))
		}
	} else {
		m, index = dynamicpb.NewMessage(e.event), []byte{0}
		if id, ok := v["orderId"].(string); ok {
			wrap("orderId", wrapperspb.String(id))
		}
		set("seq", protoreflect.ValueOfInt64(int64Of(v["seq"])))
		set("amount", protoreflect.ValueOfInt64(int64Of(v["amount"])))
		t, _ := v["table"].(string)
		set("table", protoreflect.ValueOfString(t))
		set("source", protoreflect.ValueOfEnum(1))
	}
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode a %s value: %w", topic, err)
	}
	out := make([]byte, 5, 5+len(index)+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(append(out, index...), body...), nil
}

// JSONSchemaEncoder writes a scenario's values as Confluent's JSON Schema
// serializer does: magic byte, schema id, JSON text.
type JSONSchemaEncoder struct {
	reg *fakeregistry.Registry
	ids map[string]int
}

// NewJSONSchemaEncoder registers the demo's JSON Schema with reg as it
// meets new topics.
func NewJSONSchemaEncoder(reg *fakeregistry.Registry) *JSONSchemaEncoder {
	return &JSONSchemaEncoder{reg: reg, ids: map[string]int{}}
}

// Encode is a Scenario.Encode: the values the Avro encoder writes, as
// JSON (an output's order, payments and shipments flattened as Avro's
// OrderStatus has them).
func (e *JSONSchemaEncoder) Encode(topic string, v map[string]any) ([]byte, error) {
	id, ok := e.ids[topic]
	if !ok {
		var err error
		if id, err = e.reg.RegisterType(topic+"-value", "JSON", strings.ReplaceAll(JSONEventSchema, "\n", "")); err != nil {
			return nil, fmt.Errorf("register the schema of %s: %w", topic, err)
		}
		e.ids[topic] = id
	}
	val := map[string]any{"orderId": v["orderId"], "seq": v["seq"], "amount": v["amount"], "table": v["table"]}
	if topic == "order-status" {
		order, _ := v["order"].(map[string]any)
		val = map[string]any{"orderId": v["orderId"], "orderAmount": order["amount"], "paid": nil, "shipped": nil}
		if p, ok := v["payments"].(map[string]any); ok {
			val["paid"] = p["amount"]
		}
		if s, ok := v["shipments"].(map[string]any); ok {
			val["shipped"] = s["amount"]
		}
	}
	body, err := json.Marshal(val)
	if err != nil {
		return nil, fmt.Errorf("encode a %s value: %w", topic, err)
	}
	out := make([]byte, 5, 5+len(body))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, body...), nil
}

func int64Of(v any) int64 {
	switch n := v.(type) {
	case int:
		return int64(n)
	case int64:
		return n
	case float64:
		return int64(n)
	case json.Number:
		i, _ := n.Int64()
		return i
	}
	return 0
}
