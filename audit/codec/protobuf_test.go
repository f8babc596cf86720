package codec

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/kaudit/kaudit/internal/golden"
)

// moneyProto is imported by orderProto through a schema reference.
const moneyProto = `syntax = "proto3";
package shop;
message Money { int64 cents = 1; string currency = 2; }
`

// orderProto holds what a Protobuf schema can: an import through a
// reference, the well-known Timestamp and wrappers, an enum, a map, a
// nested message, a oneof, proto3 optional, bytes, unsigned 64 bits, and a
// second top-level message.
const orderProto = `syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
import "google/protobuf/duration.proto";
import "google/protobuf/struct.proto";
import "money.proto";
import "confluent/type/decimal.proto";

message Order {
  string order_id = 1;
  int64 amount = 2;
  Status status = 3;
  google.protobuf.Timestamp placed = 4;
  google.protobuf.StringValue note = 5;
  map<string, int32> counts = 6;
  repeated Line lines = 7;
  oneof pay {
    string card = 8;
    Money cash = 9;
  }
  optional double discount = 10;
  bytes raw = 11;
  uint64 big = 12;
  google.protobuf.Int64Value tip = 13;
  google.protobuf.Duration wait = 14;
  google.protobuf.Struct extra = 15;
  float ratio = 16;
  sint32 delta = 17;
  confluent.type.Decimal price = 18;
  message Line {
    string sku = 1;
    int32 qty = 2;
  }
  enum Status {
    NEW = 0;
    PAID = 1;
  }
}

message Refund { string order_id = 1; Money back = 2; }
`

// protoFixture compiles orderProto and encodes msgJSON (protojson) as the
// message at index.
func protoEncode(t testing.TB, schema string, deps map[string]string, index []int, msgJSON string) []byte {
	t.Helper()
	fd, err := compileProto(context.Background(), schema, deps)
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	md, err := protoMessage(fd, index)
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicpb.NewMessage(md)
	if err := protojson.Unmarshal([]byte(msgJSON), m); err != nil {
		t.Fatalf("protojson %s: %v", msgJSON, err)
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoHeader is the message-index array as Confluent's serializers write
// it: one 0 byte for [0], else the zig-zag count and indexes.
func protoHeader(index []int) []byte {
	if len(index) == 1 && index[0] == 0 {
		return []byte{0}
	}
	b := appendZigzag(nil, int64(len(index)))
	for _, i := range index {
		b = appendZigzag(b, int64(i))
	}
	return b
}

func appendZigzag(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

const fullOrder = `{"orderId": "o-1", "amount": "-1234567890123", "status": "PAID",
 "placed": "2026-11-30T10:00:00.500Z", "note": "fragile", "counts": {"b": 2, "a": 1},
 "lines": [{"sku": "s-1", "qty": 3}, {"sku": "s-2"}], "cash": {"cents": "250", "currency": "EUR"},
 "discount": 0.1, "raw": "AAEC", "big": "18446744073709551615", "tip": "7", "wait": "1.500s",
 "extra": {"k": [1, "x", null, true]}, "ratio": 0.25, "delta": -3, "price": {"value": "BNI=", "scale": 2}}`

// TestProtobufDecode decodes Confluent-framed Protobuf records through a
// registry (the schema's imports resolved through its references) and
// compares each value's canonical text, or its error, with
// testdata/protobuf.golden.
func TestProtobufDecode(t *testing.T) {
	reg, c := registryCodec(t, Config{ValueSerde: SerdeProtobuf})
	if _, err := reg.RegisterType("money.proto", "PROTOBUF", moneyProto); err != nil {
		t.Fatal(err)
	}
	id, err := reg.RegisterType("orders-value", "PROTOBUF", orderProto, registrytestRef("money.proto", "money.proto", 1))
	if err != nil {
		t.Fatal(err)
	}
	deps := map[string]string{"money.proto": moneyProto}
	enc := func(index []int, msg string) []byte {
		return append(frame(id, protoHeader(index)), protoEncode(t, orderProto, deps, index, msg)...)
	}
	order := enc([]int{0}, fullOrder)
	cases := []struct {
		name string
		data []byte
	}{
		{"every kind of field", order},
		{"defaults: every field, unset ones null", enc([]int{0}, `{}`)},
		{"oneof: the card member", enc([]int{0}, `{"card": "4111"}`)},
		{"second message: index [1]", enc([]int{1}, `{"orderId": "o-1", "back": {"cents": "5"}}`)},
		// Order's nested types are its map's entry (counts is declared
		// first), then Line: [0, 1]
		{"nested message: index [0, 1]", enc([]int{0, 1}, `{"sku": "s", "qty": 2}`)},
		{"the index [0] written long", append(frame(id, []byte{2, 0}), protoEncode(t, orderProto, deps, []int{0}, `{"orderId": "x"}`)...)},
		{"index past the messages", frame(id, []byte{2, 4})},
		{"nested index past the messages", frame(id, []byte{4, 0, 6})},
		{"negative index", frame(id, []byte{2, 1})},
		{"negative count", frame(id, []byte{1})},
		{"index array too long", frame(id, []byte{0xfe, 0x01})},
		{"truncated varint", frame(id, []byte{0x80})},
		{"no index at all", frame(id, nil)},
		{"truncated message", order[:len(order)-3]},
		{"a field the schema lacks", append(enc([]int{0}, `{}`), 0xf8, 0x07, 1)},
		{"not framed", append([]byte{1}, order[1:]...)},
	}
	var b strings.Builder
	for _, tc := range cases {
		v, err := c.Decode(t.Context(), "orders", false, tc.data)
		fmt.Fprintf(&b, "%s\n", tc.name)
		if err != nil {
			de := asDecodeError(t, err)
			if errors.Is(err, ErrRegistryUnavailable) {
				t.Errorf("%s: %v is missing evidence, want undecodable", tc.name, err)
			}
			fmt.Fprintf(&b, "  error: %v\n", de)
			continue
		}
		fmt.Fprintf(&b, "  %s\n", Text(v))
		// the digest paths agree with Decode
		_, dg, err := c.DecodeDigest(t.Context(), "orders", false, tc.data)
		if err != nil || dg != DigestOf(v) {
			t.Errorf("%s: DecodeDigest %v %v", tc.name, dg, err)
		}
		if dg2, err := c.DigestBytes(t.Context(), "orders", false, tc.data); err != nil || dg2 != dg {
			t.Errorf("%s: DigestBytes %v %v", tc.name, dg2, err)
		}
	}
	golden.Check(t, filepath.Join("testdata", "protobuf.golden"), []byte(b.String()))
}

// TestProtobufSchemaForms decodes one record with the schema as .proto
// text and as the base64 FileDescriptorProto Confluent's clients register
// (and the registry serves with ?format=serialized), its import either
// way: the same value.
func TestProtobufSchemaForms(t *testing.T) {
	deps := map[string]string{"money.proto": moneyProto}
	fd, err := compileProto(t.Context(), orderProto, deps)
	if err != nil {
		t.Fatal(err)
	}
	b64 := func(f protoreflect.FileDescriptor) string {
		b, err := proto.Marshal(protodesc.ToFileDescriptorProto(f))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	payload := append([]byte{0}, protoEncode(t, orderProto, deps, []int{0}, fullOrder)...)
	want, err := decodeProtobuf(fd, payload, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		schema string
		deps   map[string]string
	}{
		{"text, text import", orderProto, deps},
		{"descriptor, text import", b64(fd), deps},
		{"descriptor, descriptor import", b64(fd), map[string]string{"money.proto": b64(fd.Imports().Get(4).FileDescriptor)}},
	} {
		got, err := compileProto(t.Context(), tc.schema, tc.deps)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		v, err := decodeProtobuf(got, payload, "")
		if err != nil || Text(v) != Text(want) {
			t.Errorf("%s: %s %v, want %s", tc.name, Text(v), err, Text(want))
		}
	}
}

// TestProtobufBadSchemas: a schema that does not compile, an import with
// no reference, a reference cycle and an unknown id are each an error of
// every record of that id, never a value: unusable (undecodable) or, for
// the unknown id, missing evidence.
func TestProtobufBadSchemas(t *testing.T) {
	reg, c := registryCodec(t, Config{ValueSerde: SerdeProtobuf})
	broken, _ := reg.RegisterType("broken-value", "PROTOBUF", `syntax = "proto3"; message M { int32 n = 1 }`)
	noRef, _ := reg.RegisterType("noref-value", "PROTOBUF", `syntax = "proto3"; import "money.proto"; message M { shop.Money m = 1; }`)
	for _, tc := range []struct {
		name    string
		c       *Codec
		id      int
		missing bool
		want    string
	}{
		{"does not compile", c, broken, false, "compile the schema"},
		{"import without a reference", c, noRef, false, "money.proto"},
		{"reference cycle", cyclicRegistry(t), 5, false, "cycle"},
		{"unknown id", c, 4242, true, "unknown schema"},
	} {
		_, err := tc.c.Decode(t.Context(), "t", false, frame(tc.id, []byte{0}))
		asDecodeError(t, err)
		if errors.Is(err, ErrRegistryUnavailable) != tc.missing || (!tc.missing && !errors.Is(err, ErrBadSchema)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (missing evidence %v), want %q", tc.name, err, errors.Is(err, ErrRegistryUnavailable), tc.want)
		}
	}
}

// TestProtobufMessageName: protobuf:NAME accepts the records of that
// message (full or short name) and makes any other one undecodable.
func TestProtobufMessageName(t *testing.T) {
	deps := map[string]string{"money.proto": moneyProto}
	dir := t.TempDir()
	writeFileTB(t, dir, SchemasFile, `{"3": {"schema": `+jsonString(orderProto)+`, "schemaType": "PROTOBUF", "dependencies": {"money.proto": `+jsonString(moneyProto)+`}}}`)
	refund := append(frame(3, protoHeader([]int{1})), protoEncode(t, orderProto, deps, []int{1}, `{"orderId": "r"}`)...)
	for _, tc := range []struct {
		serde string
		ok    bool
	}{
		{"protobuf", true}, {"protobuf:shop.Refund", true}, {"protobuf:Refund", true}, {"PROTOBUF:shop.Order", false}, {"avro", true},
	} {
		c, err := New(Config{ValueSerde: tc.serde, SchemasDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Decode(t.Context(), "t", false, refund)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrMessageIndex)) {
			t.Errorf("%s: %s %v, want ok %v", tc.serde, Text(v), err, tc.ok)
		}
	}
}

// TestJSONSchemaSerde: json-schema reads the JSON after the frame and
// needs no schema; a record that is not framed, or not JSON after the
// frame, is undecodable.
func TestJSONSchemaSerde(t *testing.T) {
	c, err := New(Config{ValueSerde: "json-schema"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"framed", frame(9, []byte(`{"b": 2.50, "a": [1, null]}`)), `{"a":[1,null],"b":2.5}`},
		{"plain JSON", []byte(`{"a": 1}`), ErrNotFramed.Error()},
		{"frame cut", []byte{0, 0, 1}, ErrTruncated.Error()},
		{"not JSON after the frame", frame(9, []byte(`{"a":`)), "error: decode value of t: invalid JSON after schema id 9"},
	} {
		v, err := c.Decode(t.Context(), "t", false, tc.data)
		got := Text(v)
		if err != nil {
			asDecodeError(t, err)
			got = "error: " + err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// cyclicRegistry serves schema id 5, which imports a.proto, which imports
// b.proto, which imports a.proto again: no real registry registers a
// cycle (a reference must exist first), a damaged or hostile one can
// serve one.
func cyclicRegistry(t *testing.T) *Codec {
	answers := map[string]string{
		"/schemas/ids/5":         `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"a.proto\"; message C { A a = 1; }","references":[{"name":"a.proto","subject":"a","version":1}]}`,
		"/subjects/a/versions/1": `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"b.proto\"; message A {}","references":[{"name":"b.proto","subject":"b","version":1}]}`,
		"/subjects/b/versions/1": `{"schemaType":"PROTOBUF","schema":"syntax = \"proto3\"; import \"a.proto\"; message B {}","references":[{"name":"a.proto","subject":"a","version":1}]}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a, ok := answers[r.URL.Path]; ok {
			_, _ = w.Write([]byte(a))
			return
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{ValueSerde: SerdeProtobuf, RegistryURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jsonString(s string) string {
	b := appendString(nil, s)
	return string(b)
}

// TestConfluentPythonRecords decodes records that Confluent's own Python
// client wrote (confluent-kafka 2.16.1: ProtobufSerializer,
// JSONSerializer, AvroSerializer, through testdata/kafka/formats/produce.py
// serialize against the drill's registry), with the schemas as kaudit read
// them from that registry (schemas.json: the Protobuf schema is the base64
// descriptor the client registered, its import resolved from its
// reference): every record decodes, to the values in
// testdata/confluent-python.golden.
func TestConfluentPythonRecords(t *testing.T) {
	dir := filepath.Join("testdata", "confluent-python")
	data, err := os.ReadFile(filepath.Join(dir, "records.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct{ Serde, Key, Hex string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		raw, err := hex.DecodeString(r.Hex)
		if err != nil {
			t.Fatal(err)
		}
		c, err := New(Config{ValueSerde: r.Serde, SchemasDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Decode(t.Context(), "t", false, raw)
		if err != nil {
			t.Errorf("%s %s: %v", r.Serde, r.Key, err)
			continue
		}
		fmt.Fprintf(&b, "%s %s %s\n", r.Serde, r.Key, Text(v))
	}
	golden.Check(t, filepath.Join("testdata", "confluent-python.golden"), []byte(b.String()))
}

// TestSourceSchemasLenient: of the schemas a source carries (a capture's,
// a _schemas topic's: the whole registry, any of them possibly unusable),
// one that does not compile makes only its own records undecodable; the
// others decode.
func TestSourceSchemasLenient(t *testing.T) {
	c, err := NewWithSchemas(Config{ValueSerde: SerdeProtobuf}, map[int32]Schema{
		1: {Schema: `syntax = "proto3"; import "nowhere/else.proto"; message M {}`, Type: "PROTOBUF"},
		2: {Schema: `syntax = "proto3"; message N { int32 n = 1; }`, Type: "PROTOBUF"},
		3: {Schema: `{"type": "nope"}`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := c.Decode(t.Context(), "t", false, frame(2, []byte{0, 8, 5})); err != nil || Text(v) != `{"n":5}` {
		t.Errorf("the usable schema: %s %v", Text(v), err)
	}
	for _, id := range []int{1, 3} {
		_, err := c.Decode(t.Context(), "t", false, frame(id, []byte{0}))
		if asDecodeError(t, err); !errors.Is(err, ErrBadSchema) || errors.Is(err, ErrRegistryUnavailable) {
			t.Errorf("schema %d: %v, want an unusable schema", id, err)
		}
	}
	// a schemas dir the user gives is checked at once: a usage error
	dir := t.TempDir()
	writeFileTB(t, dir, SchemasFile, `{"1": {"schema": "message", "schemaType": "PROTOBUF"}}`)
	if _, err := New(Config{ValueSerde: SerdeProtobuf, SchemasDir: dir}); err == nil {
		t.Error("a --schemas dir with a schema that does not compile was accepted")
	}
}

// TestProtobufConfluentImports: Confluent's Python client registers no reference for
// confluent/meta.proto and confluent/type/decimal.proto (skip.known.types): a schema that
// imports them compiles, and a confluent.type.Decimal reads as Avro's decimals do.
func TestProtobufConfluentImports(t *testing.T) {
	schema := `syntax = "proto3";
package shop;
import "confluent/meta.proto";
import "confluent/type/decimal.proto";
message Price {
  option (confluent.message_meta).doc = "a price";
  confluent.type.Decimal amount = 1 [(confluent.field_meta).tags = "PII"];
  string currency = 2;
}`
	fd, err := compileProto(t.Context(), schema, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		msg, want string
	}{
		{`{"amount": {"value": "+zk=", "precision": 5, "scale": 2}, "currency": "EUR"}`, `{"amount":"-12.23","currency":"EUR"}`}, // 0xfb39 = -1223
		{`{"amount": {"value": "AQ==", "scale": -3}}`, `{"amount":"1000","currency":""}`},
		{`{"amount": {}}`, `{"amount":"0","currency":""}`},
		{`{}`, `{"amount":null,"currency":""}`},
	} {
		v, err := decodeProtobuf(fd, append([]byte{0}, protoEncode(t, schema, nil, []int{0}, tc.msg)...), "")
		if err != nil || Text(v) != tc.want {
			t.Errorf("%s: %s %v, want %s", tc.msg, Text(v), err, tc.want)
		}
	}
	_, err = decodeProtobuf(fd, append([]byte{0}, protoEncode(t, schema, nil, []int{0}, `{"amount": {"value": "AQ==", "scale": -2000000000}}`)...), "")
	if err == nil || !strings.Contains(err.Error(), "scale") {
		t.Errorf("a scale of -2e9: %v, want an error", err)
	}
}
