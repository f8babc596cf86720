package fakeregistry

import (
	"encoding/base64"
	"encoding/json"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// TestConfluentPythonClient replays the requests of confluent-kafka 2.16.1's
// SchemaRegistryClient (its ProtobufSerializer registering an import and a schema that
// references it, its JSONSerializer, its ProtobufDeserializer reading them back) with the
// query strings it adds, and checks the fields it reads from each answer.
func TestConfluentPythonClient(t *testing.T) {
	r := NewServer(t)
	money := `syntax = "proto3"; package drill; message Money { int64 cents = 1; }`
	order := `syntax = "proto3"; package drill; import "drill/money.proto"; message Order { Money m = 1; }`
	body := func(schema, typ string, refs ...Reference) string {
		b, _ := json.Marshal(map[string]any{"schema": schema, "schemaType": typ, "references": refs})
		return string(b)
	}
	// ProtobufSerializer: the import under a subject named after its path, then its version
	// looked up, then the schema with the reference
	code, m, raw := call(t, "POST", r.URL+"/subjects/drill%2Fmoney.proto/versions?normalize=False", body(money, "PROTOBUF"))
	if code != 200 || m["id"] != float64(1) {
		t.Fatalf("register the import: %d %s", code, raw)
	}
	code, m, raw = call(t, "POST", r.URL+"/subjects/drill%2Fmoney.proto?normalize=False&deleted=False", body(money, "PROTOBUF"))
	if code != 200 || m["version"] != float64(1) || m["id"] != float64(1) {
		t.Fatalf("look the import up: %d %s", code, raw)
	}
	ref := Reference{Name: "drill/money.proto", Subject: "drill/money.proto", Version: 1}
	code, m, raw = call(t, "POST", r.URL+"/subjects/orders-value/versions?normalize=False", body(order, "PROTOBUF", ref))
	if code != 200 || m["id"] != float64(2) {
		t.Fatalf("register the schema: %d %s", code, raw)
	}
	// JSONSerializer
	code, m, raw = call(t, "POST", r.URL+"/subjects/events-value/versions?normalize=False", body(`{"type": "object"}`, "JSON"))
	if code != 200 || m["id"] != float64(3) {
		t.Fatalf("register a JSON schema: %d %s", code, raw)
	}
	// ProtobufDeserializer: the writer's schema and its reference, format=serialized: the
	// base64 of a FileDescriptorProto, which it parses
	code, m, raw = call(t, "GET", r.URL+"/schemas/ids/2?subject=orders-value&format=serialized", "")
	if code != 200 || m["schemaType"] != "PROTOBUF" {
		t.Fatalf("get the schema: %d %s", code, raw)
	}
	fd := descriptor(t, m["schema"])
	if len(fd.GetMessageType()) != 1 || fd.GetMessageType()[0].GetName() != "Order" || fd.GetDependency()[0] != "drill/money.proto" {
		t.Errorf("serialized schema: %v", fd)
	}
	if refs, _ := m["references"].([]any); len(refs) != 1 {
		t.Errorf("references %v", m["references"])
	}
	code, m, raw = call(t, "GET", r.URL+"/subjects/drill%2Fmoney.proto/versions/1?deleted=True&format=serialized", "")
	if code != 200 || descriptor(t, m["schema"]).GetMessageType()[0].GetName() != "Money" {
		t.Fatalf("get the reference: %d %s", code, raw)
	}
	// without format the text as registered; a schema registered serialized stays as it is
	if _, m, _ = call(t, "GET", r.URL+"/schemas/ids/2", ""); m["schema"] != order {
		t.Errorf("text form: %v", m["schema"])
	}
	_, m, _ = call(t, "GET", r.URL+"/schemas/ids/2?format=serialized", "")
	b64, _ := m["schema"].(string)
	if code, m, raw = call(t, "POST", r.URL+"/subjects/other-value/versions?normalize=False", body(b64, "PROTOBUF", ref)); code != 200 {
		t.Fatalf("register a serialized schema: %d %s", code, raw)
	}
	if _, m, _ = call(t, "GET", r.URL+"/schemas/ids/"+jsonNum(m["id"])+"?format=serialized", ""); m["schema"] != b64 {
		t.Errorf("a serialized schema served serialized: %v", m["schema"])
	}
}

func descriptor(t *testing.T, v any) *descriptorpb.FileDescriptorProto {
	t.Helper()
	s, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("schema %q is not base64: %v", s, err)
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(b, fd); err != nil {
		t.Fatal(err)
	}
	return fd
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
