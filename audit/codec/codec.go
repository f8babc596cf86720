package codec

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/kaudit/kaudit/audit"
)

// Serde names accepted in Config.
const (
	SerdeString = "string" // UTF-8 text
	SerdeLong   = "long"   // 8-byte big-endian, Kafka's LongSerializer
	SerdeInt    = "int"    // 4-byte big-endian, Kafka's IntegerSerializer
	SerdeShort  = "short"  // 2-byte big-endian, Kafka's ShortSerializer
	SerdeDouble = "double" // 8-byte IEEE 754 big-endian, Kafka's DoubleSerializer
	SerdeFloat  = "float"  // 4-byte IEEE 754 big-endian, Kafka's FloatSerializer
	SerdeUUID   = "uuid"   // Kafka's UUIDSerializer: the UUID as UTF-8 text
	SerdeBytes  = "bytes"  // opaque: the value is the standard base64 text
	SerdeVoid   = "void"   // Kafka's VoidSerializer: always null
	SerdeJSON   = "json"   // JSON text, plain or Confluent-framed (JSON Schema serializer)
	SerdeAvro   = "avro"   // Confluent-framed Avro: magic 0, 4-byte schema id, Avro binary
	// SerdeProtobuf is Confluent-framed Protobuf: magic 0, 4-byte schema
	// id, the message indexes, the message. "protobuf:NAME" also names the
	// message the records must hold (full or short name).
	SerdeProtobuf = "protobuf"
	// SerdeJSONSchema is Confluent-framed JSON (the JSON Schema
	// serializer's): magic 0, 4-byte schema id, JSON text. The schema is
	// not needed to read it and is not validated against.
	SerdeJSONSchema = "json-schema"
)

// Serdes lists every serde name New accepts.
var Serdes = []string{SerdeString, SerdeLong, SerdeInt, SerdeShort, SerdeDouble, SerdeFloat,
	SerdeUUID, SerdeBytes, SerdeVoid, SerdeJSON, SerdeAvro, SerdeProtobuf, SerdeJSONSchema}

// TopicSerdes overrides the default serdes for one topic. An empty field
// keeps the default.
type TopicSerdes struct {
	Key, Value string
}

// Config configures a Codec.
type Config struct {
	// KeySerde and ValueSerde apply to topics without an override; empty
	// means bytes.
	KeySerde, ValueSerde string
	// Topics holds per-topic overrides. A name may be a path.Match pattern
	// ("orders-*"); an exact name wins over patterns, and patterns are
	// tried in sorted order.
	Topics map[string]TopicSerdes
	// RegistryURL is the Schema Registry base URL, several separated by
	// commas (tried in order), or "" to take schema.registry.url from
	// Properties. Credentials in the URL are used for basic auth when
	// basic.auth.credentials.source is URL or no other credentials are set.
	RegistryURL string
	// SchemasDir is a directory of offline schemas, or "": files named
	// <id>.avsc and/or a schemas.json map {"<id>": schema}. Offline
	// schemas are looked up first, then the registry.
	SchemasDir string
	// Properties are Java-style client properties; see the package doc
	// for the ones the registry client honours.
	Properties map[string]string
	// Timeout bounds one registry request (default 10s).
	Timeout time.Duration
	// Retries is how many times a request that timed out or got a 408,
	// 429 or 5xx is retried (0 means the default, 2; negative means none).
	Retries int
	// Backoff is the delay before the first retry, doubled for each next
	// one (default 200ms).
	Backoff time.Duration

	// lenient keeps a schema of SchemasDir's schemas.json that cannot be
	// used as such: its records are undecodable (ErrBadSchema), the codec
	// is built (a capture's own schemas are evidence, one bad schema
	// leaves the others usable)
	lenient bool
}

// Codec decodes keys and values by topic. It implements audit.Decoder and
// is safe for concurrent use; schemas are fetched once per id.
type Codec struct {
	key, value sel
	exact      map[string][2]sel
	patterns   []topicPattern
	schemas    *schemaStore
	// hot holds the schemas found so far, read without a lock: every
	// record asks for its schema
	hot atomic.Pointer[map[int32]*schemaEntry]
}

// schema returns schema id from hot, else from the store (remembered in
// hot once found: the store returns the same entry for an id ever after).
func (c *Codec) schema(ctx context.Context, id int32) (*schemaEntry, error) {
	if m := c.hot.Load(); m != nil {
		if e, ok := (*m)[id]; ok {
			return e, nil
		}
	}
	e, err := c.schemas.get(ctx, id)
	if err != nil {
		return nil, err
	}
	for {
		old := c.hot.Load()
		m := make(map[int32]*schemaEntry, 1)
		if old != nil {
			maps.Copy(m, *old)
		}
		m[id] = e
		if c.hot.CompareAndSwap(old, &m) {
			return e, nil
		}
	}
}

type topicPattern struct {
	pattern string
	serdes  [2]sel
}

// sel is the serde of one side of a topic: its kind and, for protobuf,
// the message name the spec gives ("" for any).
type sel struct {
	s   serde
	msg string
}

var _ audit.Decoder = (*Codec)(nil)

type serde uint8

const (
	sBytes serde = iota
	sString
	sLong
	sInt
	sShort
	sDouble
	sFloat
	sUUID
	sVoid
	sJSON
	sAvro
	sProtobuf
	sJSONSchema
)

// framed reports whether s reads Confluent-framed records whose schema
// comes from a registry, a schemas dir or a capture.
func (s serde) framed() bool { return s == sAvro || s == sProtobuf }

func parseSerde(name string) (sel, error) {
	n := NormalizeSerde(name)
	if msg, ok := strings.CutPrefix(n, SerdeProtobuf+":"); ok {
		if msg == "" {
			return sel{}, fmt.Errorf("serde %q names no message (protobuf:NAME)", name)
		}
		return sel{sProtobuf, msg}, nil
	}
	s, err := parseKind(n, name)
	return sel{s: s}, err
}

func parseKind(n, name string) (serde, error) {
	switch n {
	case "", SerdeBytes, "bytearray", "byte-array":
		return sBytes, nil
	case SerdeString:
		return sString, nil
	case SerdeLong:
		return sLong, nil
	case SerdeInt, "integer":
		return sInt, nil
	case SerdeShort:
		return sShort, nil
	case SerdeDouble:
		return sDouble, nil
	case SerdeFloat:
		return sFloat, nil
	case SerdeUUID:
		return sUUID, nil
	case SerdeVoid:
		return sVoid, nil
	case SerdeJSON:
		return sJSON, nil
	case SerdeAvro:
		return sAvro, nil
	case SerdeProtobuf:
		return sProtobuf, nil
	case SerdeJSONSchema, "jsonschema", "json_schema":
		return sJSONSchema, nil
	}
	return 0, fmt.Errorf("unknown serde %q (want one of %s)", name, strings.Join(Serdes, ", "))
}

// CheckSerde returns an error naming the accepted serdes when name is not
// one of them; "" is accepted (bytes).
func CheckSerde(name string) error {
	_, err := parseSerde(name)
	return err
}

// New returns a Codec for cfg. It reads SchemasDir at once and checks the
// registry settings, but does not contact the registry.
func New(cfg Config) (*Codec, error) {
	c := &Codec{exact: map[string][2]sel{}}
	var err error
	if c.key, err = parseSerde(cfg.KeySerde); err != nil {
		return nil, fmt.Errorf("parse key serde: %w", err)
	}
	if c.value, err = parseSerde(cfg.ValueSerde); err != nil {
		return nil, fmt.Errorf("parse value serde: %w", err)
	}
	avro := c.key.s.framed() || c.value.s.framed()
	names := make([]string, 0, len(cfg.Topics))
	for name := range cfg.Topics {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ts := cfg.Topics[name]
		pair := [2]sel{c.key, c.value}
		if ts.Key != "" {
			if pair[0], err = parseSerde(ts.Key); err != nil {
				return nil, fmt.Errorf("parse key serde of topic %s: %w", name, err)
			}
		}
		if ts.Value != "" {
			if pair[1], err = parseSerde(ts.Value); err != nil {
				return nil, fmt.Errorf("parse value serde of topic %s: %w", name, err)
			}
		}
		avro = avro || pair[0].s.framed() || pair[1].s.framed()
		if strings.ContainsAny(name, "*?[") {
			if _, err := path.Match(name, ""); err != nil {
				return nil, fmt.Errorf("parse topic pattern %q: %w", name, err)
			}
			c.patterns = append(c.patterns, topicPattern{name, pair})
			continue
		}
		c.exact[name] = pair
	}
	if cfg.RegistryURL == "" {
		cfg.RegistryURL = strings.TrimSpace(cfg.Properties["schema.registry.url"])
	}
	if cfg.RegistryURL != "" || cfg.SchemasDir != "" {
		if c.schemas, err = newSchemaStore(cfg); err != nil {
			return nil, err
		}
	} else if avro {
		// decoding is missing evidence, record by record (schemaStore.none)
		c.schemas = &schemaStore{offline: map[int32]*schemaEntry{}, calls: map[int32]*schemaCall{}, refs: map[string]schemaAnswer{}, none: true}
	}
	return c, nil
}

func (c *Codec) serdeFor(topic string, isKey bool) sel {
	i := 1
	if isKey {
		i = 0
	}
	if p, ok := c.exact[topic]; ok {
		return p[i]
	}
	for _, p := range c.patterns {
		if ok, _ := path.Match(p.pattern, topic); ok {
			return p.serdes[i]
		}
	}
	if isKey {
		return c.key
	}
	return c.value
}

// Decode decodes data read from topic with the key or value serde that
// applies to it. A nil data is a null key or value and decodes to nil.
// Errors are a *DecodeError for data that cannot be decoded, a
// *RegistryError (errors.Is ErrRegistryUnavailable) when the registry
// could not say what a schema id is, or ctx's error.
func (c *Codec) Decode(ctx context.Context, topic string, isKey bool, data []byte) (audit.Value, error) {
	sl := c.serdeFor(topic, isKey)
	s := sl.s
	if data == nil {
		return nil, nil
	}
	derr := func(reason string, err error) error {
		return &DecodeError{Topic: topic, IsKey: isKey, SchemaID: -1, Reason: reason, Err: err}
	}
	switch s {
	case sBytes:
		return boxBase64(data), nil
	case sString, sUUID:
		if !utf8.Valid(data) {
			return nil, derr("invalid UTF-8", nil)
		}
		return boxString(data), nil
	case sVoid:
		if len(data) != 0 {
			return nil, derr(fmt.Sprintf("void serde got %d bytes", len(data)), nil)
		}
		return nil, nil
	}
	// The remaining serdes never write an empty payload; some readers
	// hand out an empty slice for a null, so empty decodes to null too.
	if len(data) == 0 {
		return nil, nil
	}
	switch s {
	case sLong, sInt, sShort, sDouble, sFloat:
		return fixedNumber(s, data, derr)
	case sJSON:
		v, err := decodeJSON(data)
		if err != nil && len(data) > 5 && data[0] == 0 {
			// Confluent's JSON Schema serializer frames the text.
			if v2, err2 := decodeJSON(data[5:]); err2 == nil {
				return v2, nil
			}
		}
		if err != nil {
			return nil, derr("invalid JSON", err)
		}
		return v, nil
	case sJSONSchema:
		return decodeJSONSchema(data, derr)
	case sAvro, sProtobuf:
		return c.decodeFramed(ctx, topic, isKey, data, sl, nil, false)
	}
	return nil, derr("unknown serde", nil)
}

// DecodeText returns Text of what Decode returns for data ("null" for
// nil), and Decode's error. For the string and uuid serdes it writes the
// canonical text straight from the bytes, building no value: the readers
// of the keys of repartition topics, changelogs and outputs need only that.
func (c *Codec) DecodeText(ctx context.Context, topic string, isKey bool, data []byte) (string, error) {
	if data != nil {
		if s := c.serdeFor(topic, isKey).s; s == sString || s == sUUID {
			if !utf8.Valid(data) {
				return "", &DecodeError{Topic: topic, IsKey: isKey, SchemaID: -1, Reason: "invalid UTF-8"}
			}
			b := appendString(make([]byte, 0, len(data)+2), unsafe.String(unsafe.SliceData(data), len(data)))
			return unsafe.String(unsafe.SliceData(b), len(b)), nil
		}
	}
	v, err := c.Decode(ctx, topic, isKey, data)
	if err != nil {
		return "", err
	}
	return Text(v), nil
}

// DecodeDigest decodes data as Decode does and also returns DigestOf of
// the value. For Avro it writes the value's canonical JSON while decoding,
// in the payload's own order, so the digest costs no second walk over the
// value's maps. On an error the digest is zero.
func (c *Codec) DecodeDigest(ctx context.Context, topic string, isKey bool, data []byte) (audit.Value, Digest, error) {
	if sl := c.serdeFor(topic, isKey); len(data) > 0 && sl.s.framed() {
		var dg Digest
		v, err := c.decodeFramed(ctx, topic, isKey, data, sl, &dg, false)
		if err != nil {
			return nil, Digest{}, err
		}
		return v, dg, nil
	}
	v, err := c.Decode(ctx, topic, isKey, data)
	if err != nil {
		return nil, Digest{}, err
	}
	return v, DigestOf(v), nil
}

// DigestBytes returns the digest of what Decode returns for data, DigestOf
// of the value, and Decode's error. For Avro it builds no value: it writes
// the canonical JSON straight from the payload and allocates nothing for
// most types, for callers that compare records and do not look inside.
func (c *Codec) DigestBytes(ctx context.Context, topic string, isKey bool, data []byte) (Digest, error) {
	if sl := c.serdeFor(topic, isKey); len(data) > 0 && sl.s.framed() {
		var dg Digest
		if _, err := c.decodeFramed(ctx, topic, isKey, data, sl, &dg, true); err != nil {
			return Digest{}, err
		}
		return dg, nil
	}
	v, err := c.Decode(ctx, topic, isKey, data)
	if err != nil {
		return Digest{}, err
	}
	return DigestOf(v), nil
}

func fixedNumber(s serde, data []byte, derr func(string, error) error) (audit.Value, error) {
	want := 4
	switch s {
	case sLong, sDouble:
		want = 8
	case sShort:
		want = 2
	}
	if len(data) != want {
		var err error
		if len(data) < want {
			err = ErrTruncated
		}
		return nil, derr(fmt.Sprintf("want %d bytes, got %d", want, len(data)), err)
	}
	switch s {
	case sLong:
		return num(int64(binary.BigEndian.Uint64(data))), nil
	case sInt:
		return num(int64(int32(binary.BigEndian.Uint32(data)))), nil
	case sShort:
		return num(int64(int16(binary.BigEndian.Uint16(data)))), nil
	case sDouble:
		return floatValue(math.Float64frombits(binary.BigEndian.Uint64(data)), 64), nil
	default:
		return floatValue(float64(math.Float32frombits(binary.BigEndian.Uint32(data))), 32), nil
	}
}

// decodeJSON decodes one JSON text into canonical values (numbers as
// json.Number); trailing data other than space is an error.
func decodeJSON(data []byte) (any, error) {
	var v any
	if err := unmarshalNumber(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

func unmarshalNumber(data []byte, v *any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// decodeFramed decodes a Confluent-framed payload: magic byte 0, a 4-byte
// big-endian schema id, then what the schema's type says, whichever of
// avro and protobuf the serde named: Avro binary, the message indexes and
// a Protobuf message, or JSON text. With a non-nil dg it sets *dg to the
// value's digest, and with valueless too it returns no value (for Avro).
func (c *Codec) decodeFramed(ctx context.Context, topic string, isKey bool, data []byte, sl sel, dg *Digest, valueless bool) (audit.Value, error) {
	derr := func(id int32, reason string, err error) error {
		return &DecodeError{Topic: topic, IsKey: isKey, SchemaID: id, Reason: reason, Err: err}
	}
	if data[0] != 0 {
		return nil, derr(-1, fmt.Sprintf("magic byte %d", data[0]), ErrNotFramed)
	}
	if len(data) < 5 {
		return nil, derr(-1, fmt.Sprintf("%d bytes, the frame needs 5", len(data)), ErrTruncated)
	}
	id := int32(binary.BigEndian.Uint32(data[1:5]))
	if c.schemas == nil {
		return nil, derr(id, "no schema registry or schemas dir", ErrUnknownSchema)
	}
	sch, err := c.schema(ctx, id)
	if err != nil {
		var re *RegistryError
		if errors.As(err, &re) || ctx.Err() != nil {
			return nil, err
		}
		return nil, derr(id, "", err)
	}
	if sch.bad != nil {
		return nil, derr(id, "", fmt.Errorf("%w: %w", ErrBadSchema, sch.bad))
	}
	body := data[5:]
	switch sch.typ {
	case typeProtobuf:
		v, err := decodeProtobuf(sch.proto, body, sl.msg)
		if err != nil {
			return nil, derr(id, "", err)
		}
		if dg != nil {
			*dg = DigestOf(v)
		}
		return v, nil
	case typeJSON:
		v, err := decodeJSON(body)
		if err != nil {
			return nil, derr(id, "invalid JSON", err)
		}
		if dg != nil {
			*dg = DigestOf(v)
		}
		return v, nil
	case typeAvro:
		var d avroDecoder
		var scratch *digestScratch
		if dg != nil {
			scratch = scratchPool.Get().(*digestScratch)
			d.digest, d.canon, d.ends, d.entries = true, scratch.canon[:0], scratch.ends[:0], scratch.entries[:0]
		}
		var v any
		if dg != nil && valueless {
			d.viewPayload(body)
			d.text(sch.node)
		} else {
			d.setPayload(body, sch.node.strs)
			v = d.value(sch.node)
		}
		if dg != nil {
			if d.err == nil {
				*dg = digestOfText(d.canon)
			}
			scratch.canon, scratch.ends, scratch.entries = d.canon, d.ends, d.entries
			scratchPool.Put(scratch)
		}
		if d.err != nil {
			return nil, derr(id, "", d.err)
		}
		if d.i != len(body) {
			return nil, derr(id, fmt.Sprintf("%d bytes left after the value", len(body)-d.i), nil)
		}
		return v, nil
	}
	return nil, derr(id, "schema type "+sch.typeName+" is not supported", ErrBadSchema)
}

// digestScratch is the buffer and scratch space of one DecodeDigest.
type digestScratch struct {
	canon   []byte
	ends    []int
	entries []mapEntry
}

var scratchPool = sync.Pool{New: func() any { return &digestScratch{canon: make([]byte, 0, 512)} }}

// Schemas returns the schemas used so far, by id, each self-contained
// (references inlined), in the form a schemas.json of SchemasDir holds: a
// capture can store them and an offline run read them back.
func (c *Codec) Schemas() map[int32]Schema {
	if c.schemas == nil {
		return map[int32]Schema{}
	}
	return c.schemas.used()
}

// Schema returns schema id, self-contained, fetching it if no record has
// needed it yet: a capture uses it to store the schemas of the records it
// copies (found with SchemaID). Errors are as Decode's: wrapping
// ErrUnknownSchema or ErrBadSchema, or a *RegistryError.
func (c *Codec) Schema(ctx context.Context, id int32) (Schema, error) {
	if c.schemas == nil {
		return Schema{}, fmt.Errorf("%w: id %d: no schema registry or schemas dir", ErrUnknownSchema, id)
	}
	e, err := c.schemas.get(ctx, id)
	if err != nil {
		return Schema{}, err
	}
	return e.export(), nil
}

// SchemaID returns the schema id of a Confluent-framed payload, and false
// when data is not framed.
func SchemaID(data []byte) (int32, bool) {
	if len(data) < 5 || data[0] != 0 {
		return -1, false
	}
	return int32(binary.BigEndian.Uint32(data[1:5])), true
}

// Schema is one schema as schemas.json stores it: Confluent's shape, with
// the files a Protobuf schema imports in place of its references.
type Schema = audit.Schema

func itoa(i int32) string { return strconv.Itoa(int(i)) }
