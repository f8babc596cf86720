// Package codec decodes Kafka record keys and values into canonical values
// and digests them.
//
// Codec implements audit.Decoder. Config names a key and a value serde per
// topic: string, long, int, short, double, float, uuid, bytes, void, json,
// avro (Confluent framing: magic byte 0, a 4-byte big-endian schema id,
// then Avro binary), protobuf (the same frame, then the message indexes,
// then the Protobuf message; protobuf:NAME also names the message) or
// json-schema (the same frame, then JSON text). Schemas come from a
// Confluent Schema Registry (fetched once per id, references resolved)
// and/or an offline directory of <id>.avsc files and a schemas.json map
// (audit.Schema: a Protobuf schema with the files it imports). A framed
// record is read by its schema's type, whichever of avro and protobuf the
// serde names; json-schema needs no schema (the JSON is not validated
// against it). DecodeError is a record that cannot be decoded;
// RegistryError is a registry that could not answer. Canonical, Text and
// DigestOf turn values into canonical JSON and a Digest.
//
// # Values
//
// Every serde yields plain Go values of JSON's model: nil, bool, string,
// json.Number, []any and map[string]any, so expressions can navigate
// value.orderId. A nil payload (a null key or value) decodes to nil; an
// empty payload decodes to "" for string and bytes and to nil for the
// serdes that never write one (some readers return an empty slice for a
// null). string and uuid must be valid UTF-8 (else a DecodeError, rather
// than Java's silent replacement, so two different payloads never decode
// equal); bytes is the standard base64 text of the payload. json accepts
// plain JSON text and text framed by Confluent's JSON Schema serializer.
//
// Avro maps to values as follows:
//
//	null                        nil
//	boolean                     bool
//	int, long                   json.Number ("42")
//	float, double               json.Number, shortest form ("0.1"); NaN and
//	                            ±Inf as the strings "NaN", "Infinity", "-Infinity"
//	string, uuid (string)       string (not checked for UTF-8, as in Java;
//	                            Canonical writes invalid bytes as U+FFFD)
//	bytes, fixed                string, standard base64 with padding
//	enum                        string, the symbol
//	array                       []any
//	map                         map[string]any
//	record                      map[string]any keyed by field name
//	union                       the value of the branch written, unwrapped:
//	                            no {"type": value} wrapper, so a field reads the
//	                            same whether its schema is "long" or
//	                            ["null","long"] and a digest survives making a
//	                            field optional; a union of two branches with the
//	                            same JSON form (string and enum) cannot be told
//	                            apart afterwards, which an audit does not need
//	decimal (bytes or fixed)    string, plain decimal with scale digits ("-12.30")
//	uuid (fixed 16)             string, 8-4-4-4-12 lowercase hex
//	date                        string, ISO date ("2026-11-30")
//	time-millis, time-micros    string, "15:04:05.000" and "15:04:05.000000"
//	timestamp-millis/-micros    string, RFC 3339 in UTC with the fraction trimmed
//	                            ("2026-11-30T10:00:00.5Z"), so one instant prints
//	                            the same at either precision
//	local-timestamp-millis/-micros  the same without the "Z"
//	duration (fixed 12)         {"months","days","milliseconds"} of json.Number
//
// Decoding walks a node graph compiled once per schema id from hamba's
// parsed schema; hamba parses and resolves schemas and encodes test data.
// The walk is this package's own because hamba's generic decoding yields
// time.Time, *big.Rat, [N]byte and {"type": value} union maps, none of
// them canonical, and does not bound hostile lengths. The strings of one
// payload, their text and their headers, share one chunk of bytes (see
// arena.go), so a record costs its map's allocations and one more.
//
// A payload with bytes left after the value, a varint longer than 64 bits,
// an enum or union index out of range, or a length past the end is a
// DecodeError (ErrTruncated for the last). Nesting is limited to 500 levels
// and arrays of zero-byte items to 2^20 items per payload.
//
// # Protobuf
//
// The message indexes after the schema id are Confluent's: a zig-zag
// varint count, then that many zig-zag varints, the first a top-level
// message's position in the schema, each next one a nested message's in
// the one before (a map's entry counts, as in the descriptor); a count of
// 0, one zero byte, stands for [0]. They are read with franz-go's
// sr.ConfluentHeader, at most 64 deep. The schema, .proto text or the
// base64 of a FileDescriptorProto (what Confluent's clients register),
// is compiled at run time with github.com/bufbuild/protocompile, its
// imports from its references (confluent/meta.proto and
// confluent/type/decimal.proto, for which Confluent's Python client
// registers none, are built in; the well-known google/protobuf/ files come
// from the compiler's own copies), and the message read with dynamicpb.
// Values are as Avro's, so the same record compares equal in either
// format:
//
//	message                 map[string]any keyed by the .proto field name,
//	                        every field: a scalar without presence at its
//	                        default, an unset message or optional field nil,
//	                        of a oneof only the member set
//	int32 … sfixed64, uint* json.Number (64-bit ones too, unlike protojson)
//	float, double           as Avro's
//	bool, string            bool, string
//	bytes                   string, standard base64
//	enum                    string, the value's name (its number where the
//	                        schema has none)
//	repeated, map           []any, map[string]any (keys as text)
//	Timestamp               string, as Avro's timestamps
//	Duration                string, "1.5s"
//	wrappers (Int64Value…)  the wrapped value, nil when unset
//	Struct, Value, ListValue  the JSON they hold
//	confluent.type.Decimal  string, as Avro's decimals ("-12.30")
//
// A message index past the schema's messages (ErrMessageIndex), a varint
// cut short (ErrTruncated), bytes the message does not parse as, fields
// the schema does not define, or a schema that does not compile
// (ErrBadSchema) make a DecodeError; google.golang.org/protobuf's panics
// on malformed input are recovered into one.
//
// # Canonical JSON and digests
//
// Canonical writes a value with object keys sorted, no space, numbers in
// their shortest form (integer literals kept digit for digit, other
// numbers as ECMAScript prints them, as RFC 8785) and minimal string
// escapes. DigestOf is the 128-bit XXH3 hash of that text, so the same
// logical record under another schema id, field order or number spelling
// ("1.50" and "1.5") has the same digest. XXH3 is fast, not cryptographic:
// a digest compares values within one run and is never stored, and it does
// not resist records crafted to collide. DecodeDigest decodes
// and digests in one pass: for Avro it writes the canonical text while
// decoding, so the digest needs no walk over the value's maps. DigestBytes
// writes only the canonical text, builds no value and, for most types,
// allocates nothing; both give DigestOf of what Decode returns, and the
// same errors. A record whose fields are all scalars (or unions of them)
// is read twice for it: once to check it and find each field, once to
// write the fields in the order of their names. DecodeFields decodes only
// some top-level fields of a record, what a join reads, and checks and
// skips the rest: it fails where Decode fails.
//
// # Schema Registry
//
// The client sends GET /schemas/ids/{id} and, for references,
// GET /subjects/{subject}/versions/{version}, parses each schema with its
// own name cache, and keeps the outcome per id for the Codec's life (the
// schema, its absence, or the registry's unavailability: the run is
// incomplete then anyway, and retrying for every record would stall it);
// concurrent callers of one id share one request, and a caller whose
// context ends leaves nothing cached. A request
// that times out (Config.Timeout) or gets 408, 429 or 5xx is retried
// Config.Retries times with exponential backoff from Config.Backoff; 404
// is final and means ErrUnknownSchema; 401, 403, other statuses and an
// answer that is not JSON are final and mean ErrRegistryUnavailable.
// Several URLs separated by commas are tried in order. Schemas of type
// JSON decode the framed text as JSON. A PROTOBUF schema's references
// are fetched too, into the files it imports by import path.
//
// Properties honoured (each also under the "schema.registry." prefix,
// which wins):
//
//	schema.registry.url             when Config.RegistryURL is empty
//	basic.auth.credentials.source   USER_INFO (default when user info is set),
//	                                URL (user:password@ in the registry URL),
//	                                SASL_INHERIT (sasl.jaas.config or
//	                                sasl.username/sasl.password)
//	basic.auth.user.info            user:password
//	bearer.auth.credentials.source  STATIC_TOKEN, with bearer.auth.token
//	ssl.ca.location                 PEM file of CAs to trust (https only)
//	ssl.certificate.location        PEM client certificate, with
//	ssl.key.location                its unencrypted PEM key
//
//	schema.registry.ssl.truststore.location, .type, .password
//	                                a JKS, PKCS12 or PEM trust store
//	schema.registry.ssl.keystore.location, .type, .password, and
//	schema.registry.ssl.key.password a client key store
//
// The stores are read only under the schema.registry. prefix, as
// Confluent's client reads them. Errors name the request URL and HTTP
// status, never credentials.
package codec
