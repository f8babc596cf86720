// Package fakeregistry is a small in-process Confluent Schema Registry, for
// kaudit demo, the tests and the real-Kafka drill.
//
// Registry is an http.Handler serving the REST endpoints serializers and
// kaudit use: POST /subjects/{subject}/versions (register, reusing the id of
// an identical schema), POST /subjects/{subject} (look a schema up),
// GET /schemas/ids/{id}, GET /schemas/ids/{id}/schema, GET /subjects,
// GET /subjects/{subject}/versions, GET /subjects/{subject}/versions/{version|latest}
// and GET /config, with Confluent's error JSON ({"error_code": 40403, "message": "Schema not
// found"}); ?format=serialized gives a Protobuf schema as the base64 of its
// FileDescriptorProto, as Confluent's registry does. It can require basic auth, inject faults
// (a forced status, a delay, garbage answers) and counts requests per path.
//
// New returns a Registry with no test dependencies (the drill serves it
// with http.ListenAndServe); NewServer starts it on 127.0.0.1 for a test.
package fakeregistry
