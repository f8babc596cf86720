package codec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/reporter"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// ErrMessageIndex: a Protobuf payload's message indexes name no message
// of its schema (or another message than the serde's protobuf:NAME).
var ErrMessageIndex = errors.New("no such message in the schema")

// maxProtoIndexes bounds a payload's message-index array: a message
// nested deeper than this is refused rather than allocated for.
const maxProtoIndexes = 64

// protoMainFile is the import path the schema itself is compiled under: a
// registry schema has no file name, and its imports never name it.
const protoMainFile = "kaudit-schema.proto"

// confluentImports are the files Confluent's Python client registers no reference for (its
// skip.known.types, true by default, skips confluent/ and google/ imports): written here from
// the descriptors its confluent-kafka 2.16.1 package carries. The well-known google/protobuf/
// files come from the compiler.
var confluentImports = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
}

// maxDecimalScale bounds a confluent.type.Decimal's scale, which the payload carries: the
// text of a larger one would be as long as the scale.
const maxDecimalScale = 10000

// compileProto compiles a Protobuf schema, given as .proto text or as the
// standard base64 of a serialized FileDescriptorProto (the form
// Confluent's clients register and the registry serves with
// ?format=serialized), with the files it imports (deps, by import path,
// in either form). The well-known google/protobuf/ files need no entry.
func compileProto(ctx context.Context, text string, deps map[string]string) (protoreflect.FileDescriptor, error) {
	if _, clash := deps[protoMainFile]; clash {
		return nil, fmt.Errorf("an import is named %s", protoMainFile)
	}
	files := make(map[string]string, len(deps)+1)
	for name, t := range deps {
		files[name] = t
	}
	files[protoMainFile] = text
	resolve := protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		t, ok := files[path]
		if !ok {
			t, ok = confluentImports[path]
		}
		if !ok {
			return protocompile.SearchResult{}, fmt.Errorf("import %s: %w", path, protoregistry.NotFound)
		}
		if fd, ok := descriptorText(t); ok {
			fd.Name = proto.String(path)
			return protocompile.SearchResult{Proto: fd}, nil
		}
		return protocompile.SearchResult{Source: strings.NewReader(t)}, nil
	})
	c := protocompile.Compiler{
		Resolver:       protocompile.WithStandardImports(resolve),
		MaxParallelism: 1,
		Reporter:       reporter.NewReporter(nil, nil), // errors fail, warnings are ignored
	}
	out, err := c.Compile(ctx, protoMainFile)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var pe protocompile.PanicError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("compile the schema: the compiler failed on it")
		}
		return nil, fmt.Errorf("compile the schema: %w", err)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("compile the schema: %d files", len(out))
	}
	return out[0], nil
}

// descriptorText reads t as the base64 of a serialized
// FileDescriptorProto; false when it is not (.proto text is not base64).
func descriptorText(t string) (*descriptorpb.FileDescriptorProto, bool) {
	t = strings.TrimSpace(t)
	if t == "" || strings.ContainsAny(t, " \t\r\n;{\"") {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(t)
	if err != nil {
		return nil, false
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if proto.Unmarshal(b, fd) != nil {
		return nil, false
	}
	return fd, true
}

// protoMessage finds the message a payload's indexes name: the first is a
// top-level message's position in the file, each next one a nested
// message's in the one before.
func protoMessage(fd protoreflect.FileDescriptor, index []int) (protoreflect.MessageDescriptor, error) {
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range index {
		if i < 0 || i >= msgs.Len() {
			where := "the schema has"
			if depth > 0 {
				where = string(md.FullName()) + " has"
			}
			return nil, fmt.Errorf("%w: message index %d at depth %d, %s %d messages", ErrMessageIndex, i, depth, where, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	if md == nil {
		return nil, fmt.Errorf("%w: no message index", ErrMessageIndex)
	}
	return md, nil
}

// splitProtoIndexes reads the message-index array that follows the
// schema id: a zig-zag varint count, then that many zig-zag varints; a
// count of 0 (one zero byte) stands for [0], the first message.
func splitProtoIndexes(body []byte) ([]int, []byte, error) {
	index, rest, err := (&sr.ConfluentHeader{}).DecodeIndex(body, maxProtoIndexes)
	switch {
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, nil, fmt.Errorf("message indexes: %w", ErrTruncated)
	case errors.Is(err, sr.ErrNotRegistered):
		return nil, nil, fmt.Errorf("message indexes: more than %d", maxProtoIndexes)
	case errors.Is(err, sr.ErrBadHeader):
		return nil, nil, errors.New("message indexes: a negative count")
	case err != nil:
		return nil, nil, fmt.Errorf("message indexes: %w", err)
	}
	return index, rest, nil
}

// decodeProtobuf decodes the body after a Protobuf schema id: the
// message indexes, then the message, into canonical values. want, when
// set, is the message the serde names (its full or short name).
func decodeProtobuf(fd protoreflect.FileDescriptor, body []byte, want string) (any, error) {
	index, payload, err := splitProtoIndexes(body)
	if err != nil {
		return nil, err
	}
	md, err := protoMessage(fd, index)
	if err != nil {
		return nil, err
	}
	if want != "" && string(md.FullName()) != want && string(md.Name()) != want {
		return nil, fmt.Errorf("%w: the record holds %s, the serde names %s", ErrMessageIndex, md.FullName(), want)
	}
	msg := dynamicpb.NewMessage(md)
	if err := unmarshalProto(payload, msg); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%s: %w", md.FullName(), ErrTruncated)
		}
		// google.golang.org/protobuf spaces its messages at random
		// (U+00A0 or a space) so that none is compared: the same
		// record must give the same text in every run
		return nil, fmt.Errorf("%s: %s", md.FullName(), strings.ReplaceAll(err.Error(), "\u00a0", " "))
	}
	if n := len(msg.GetUnknown()); n > 0 {
		// a field the writer's schema does not have: the value would
		// read equal to one without it
		return nil, fmt.Errorf("%s: %d bytes of fields the schema does not define", md.FullName(), n)
	}
	return protoValue(msg, 0)
}

// unmarshalProto reads payload into msg. google.golang.org/protobuf
// v1.36.12 panics on some malformed map entries of a dynamic message
// (FuzzDecode found one: "cannot convert nil to map key"); a payload is
// never trusted, so that is an error of the record.
func unmarshalProto(payload []byte, msg *dynamicpb.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed message (the protobuf library panicked: %v)", r)
		}
	}()
	return proto.UnmarshalOptions{RecursionLimit: maxNesting}.Unmarshal(payload, msg)
}

// protoValue is a message as canonical values, as Avro records are: an
// object keyed by field name (the .proto's, not the JSON camelCase) that
// holds every field: a scalar without presence at its default, a message
// or optional field that is not set as null, a list and a map empty; of a
// oneof only the member set. Integers are JSON numbers (64-bit ones too,
// unlike protojson's strings), floats as Avro's, bytes standard base64,
// enums their value's name (the number where the schema has none). The
// well-known types read as their JSON mapping: Timestamp as Avro's
// timestamps (RFC 3339 in UTC), Duration as "1.5s", a wrapper as its
// value (as an Avro union is unwrapped), Struct, Value and ListValue as
// the JSON they hold.
func protoValue(m protoreflect.Message, depth int) (any, error) {
	if depth > maxNesting {
		return nil, fmt.Errorf("nested deeper than %d", maxNesting)
	}
	md := m.Descriptor()
	if v, ok, err := wellKnown(m, depth); ok || err != nil {
		return v, err
	}
	fields := md.Fields()
	out := make(map[string]any, fields.Len())
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && m.WhichOneof(od) != fd {
			continue
		}
		name := string(fd.Name())
		if fd.HasPresence() && !m.Has(fd) {
			out[name] = nil
			continue
		}
		v, err := protoField(fd, m.Get(fd), depth)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = v
	}
	return out, nil
}

func protoField(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) (any, error) {
	switch {
	case fd.IsMap():
		mp := v.Map()
		out := make(map[string]any, mp.Len())
		var err error
		mp.Range(func(k protoreflect.MapKey, x protoreflect.Value) bool {
			var e any
			if e, err = protoScalar(fd.MapValue(), x, depth); err != nil {
				return false
			}
			out[mapKeyText(k)] = e
			return true
		})
		return out, err
	case fd.IsList():
		l := v.List()
		out := make([]any, l.Len())
		for i := range out {
			e, err := protoScalar(fd, l.Get(i), depth)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	return protoScalar(fd, v, depth)
}

func mapKeyText(k protoreflect.MapKey) string {
	switch x := k.Interface().(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint32:
		return strconv.FormatUint(uint64(x), 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	}
	return k.String()
}

// protoScalar is one value of fd's kind (a list's element, a map's value).
func protoScalar(fd protoreflect.FieldDescriptor, v protoreflect.Value, depth int) (any, error) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool(), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return num(v.Int()), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return json.Number(strconv.FormatUint(v.Uint(), 10)), nil
	case protoreflect.FloatKind:
		return floatValue(v.Float(), 32), nil
	case protoreflect.DoubleKind:
		return floatValue(v.Float(), 64), nil
	case protoreflect.StringKind:
		return v.String(), nil
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	case protoreflect.EnumKind:
		n := v.Enum()
		if ev := fd.Enum().Values().ByNumber(n); ev != nil {
			if fd.Enum().FullName() == "google.protobuf.NullValue" {
				return nil, nil
			}
			return string(ev.Name()), nil
		}
		return num(int64(n)), nil
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoValue(v.Message(), depth+1)
	}
	return nil, fmt.Errorf("field kind %v", fd.Kind())
}

// wellKnown reads the well-known types in their JSON mapping; false for
// every other message, and for one that only takes a well-known name
// (its fields are not the standard ones).
func wellKnown(m protoreflect.Message, depth int) (any, bool, error) {
	md := m.Descriptor()
	name := md.FullName()
	if name == "confluent.type.Decimal" {
		return confluentDecimal(m)
	}
	if md.ParentFile() == nil || !strings.HasPrefix(string(name), "google.protobuf.") {
		return nil, false, nil
	}
	field := func(n protowire.Number, kinds ...protoreflect.Kind) protoreflect.FieldDescriptor {
		fd := md.Fields().ByNumber(n)
		if fd == nil || fd.IsList() || fd.IsMap() {
			return nil
		}
		for _, k := range kinds {
			if fd.Kind() == k {
				return fd
			}
		}
		return nil
	}
	switch name {
	case "google.protobuf.Timestamp", "google.protobuf.Duration":
		s, n := field(1, protoreflect.Int64Kind), field(2, protoreflect.Int32Kind)
		if s == nil || n == nil || md.Fields().Len() != 2 {
			return nil, false, nil
		}
		sec, nanos := m.Get(s).Int(), m.Get(n).Int()
		if nanos < -999999999 || nanos > 999999999 {
			return nil, true, fmt.Errorf("%s: nanos %d out of range", name, nanos)
		}
		if name == "google.protobuf.Timestamp" {
			if nanos < 0 {
				return nil, true, fmt.Errorf("%s: nanos %d out of range", name, nanos)
			}
			return string(appendTimestamp(nil, sec, nanos, false)), true, nil
		}
		return durationText(sec, nanos), true, nil
	case "google.protobuf.DoubleValue", "google.protobuf.FloatValue", "google.protobuf.Int64Value",
		"google.protobuf.UInt64Value", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
		"google.protobuf.BoolValue", "google.protobuf.StringValue", "google.protobuf.BytesValue":
		fd := md.Fields().ByNumber(1)
		if fd == nil || fd.IsList() || fd.IsMap() || md.Fields().Len() != 1 || fd.Kind() == protoreflect.MessageKind {
			return nil, false, nil
		}
		v, err := protoScalar(fd, m.Get(fd), depth)
		return v, true, err
	case "google.protobuf.Struct":
		fd := md.Fields().ByNumber(1)
		if fd == nil || !fd.IsMap() || md.Fields().Len() != 1 {
			return nil, false, nil
		}
		v, err := protoField(fd, m.Get(fd), depth)
		return v, true, err
	case "google.protobuf.ListValue":
		fd := md.Fields().ByNumber(1)
		if fd == nil || !fd.IsList() || md.Fields().Len() != 1 {
			return nil, false, nil
		}
		v, err := protoField(fd, m.Get(fd), depth)
		return v, true, err
	case "google.protobuf.Value":
		od := md.Oneofs().ByName("kind")
		if od == nil || md.Fields().Len() != 6 {
			return nil, false, nil
		}
		fd := m.WhichOneof(od)
		if fd == nil {
			return nil, true, nil
		}
		v, err := protoField(fd, m.Get(fd), depth)
		return v, true, err
	}
	return nil, false, nil
}

// confluentDecimal reads confluent.type.Decimal (a big-endian two's complement unscaled value,
// its precision and scale) as Avro's decimals read: plain decimal text ("-12.30"); false when
// the message only takes the name.
func confluentDecimal(m protoreflect.Message) (any, bool, error) {
	fs := m.Descriptor().Fields()
	v, s := fs.ByNumber(1), fs.ByNumber(3)
	if fs.Len() != 3 || v == nil || s == nil || v.Kind() != protoreflect.BytesKind || s.Kind() != protoreflect.Int32Kind || v.IsList() || s.IsList() {
		return nil, false, nil
	}
	scale := m.Get(s).Int()
	if scale > maxDecimalScale || scale < -maxDecimalScale {
		return nil, true, fmt.Errorf("confluent.type.Decimal: scale %d out of range", scale)
	}
	b := m.Get(v).Bytes()
	if len(b) == 0 {
		b = []byte{0}
	}
	return decimalString(b, int(scale)), true, nil
}

// durationText is a Duration's JSON mapping: seconds with the fraction
// trimmed of trailing zeros, then "s" ("1.5s", "-0.25s", "3s").
func durationText(sec, nanos int64) string {
	neg := sec < 0 || nanos < 0
	if sec < 0 {
		sec = -sec
	}
	if nanos < 0 {
		nanos = -nanos
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatUint(uint64(sec), 10))
	if nanos != 0 {
		f := fmt.Sprintf("%09d", nanos)
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(f, "0"))
	}
	b.WriteByte('s')
	return b.String()
}

// decodeJSONSchema reads a JSON Schema serializer's record: magic byte 0,
// the 4-byte schema id, then JSON text.
func decodeJSONSchema(data []byte, derr func(string, error) error) (any, error) {
	if data[0] != 0 {
		return nil, derr(fmt.Sprintf("magic byte %d", data[0]), ErrNotFramed)
	}
	if len(data) < 5 {
		return nil, derr(fmt.Sprintf("%d bytes, the frame needs 5", len(data)), ErrTruncated)
	}
	v, err := decodeJSON(data[5:])
	if err != nil {
		return nil, derr("invalid JSON after schema id "+strconv.FormatUint(uint64(uint32(data[1])<<24|uint32(data[2])<<16|uint32(data[3])<<8|uint32(data[4])), 10), err)
	}
	return v, nil
}

// FramedFormat names the serde of Confluent-framed records from their
// bytes alone: json-schema when JSON text follows every schema id, else
// avro (Avro and Protobuf bodies cannot be told apart by their bytes;
// FramedSerde asks their schemas). "" when a record is not framed.
func FramedFormat(raws [][]byte) string {
	n, jsonBody := 0, 0
	for _, b := range raws {
		if b == nil {
			continue
		}
		if _, ok := SchemaID(b); !ok {
			return ""
		}
		n++
		if t := bytes.TrimSpace(b[5:]); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
			jsonBody++
		}
	}
	switch {
	case n == 0:
		return ""
	case jsonBody == n:
		return SerdeJSONSchema
	}
	return SerdeAvro
}

// FramedSerde names the serde of Confluent-framed records from the types
// of their schemas (the registry's schemaType, or a capture's): avro,
// protobuf or json-schema, with the evidence; "" when a record is not
// framed, a schema is not known, or the schemas are of several types.
func (c *Codec) FramedSerde(ctx context.Context, raws [][]byte) (serde, evidence string) {
	ids := map[int32]bool{}
	for _, b := range raws {
		if b == nil {
			continue
		}
		id, ok := SchemaID(b)
		if !ok {
			return "", ""
		}
		ids[id] = true
	}
	if len(ids) == 0 || c.schemas == nil {
		return "", ""
	}
	types := map[string][]string{}
	for id := range ids {
		e, err := c.schema(ctx, id)
		if err != nil {
			return "", ""
		}
		types[e.typeName] = append(types[e.typeName], strconv.Itoa(int(id)))
	}
	if len(types) != 1 {
		return "", ""
	}
	for t, list := range types {
		slices.SortFunc(list, func(a, b string) int { return cmp.Compare(len(a), len(b))*2 + cmp.Compare(a, b) })
		ev := fmt.Sprintf("schema ids %s of type %s", strings.Join(list, ", "), t)
		switch t {
		case "AVRO":
			return SerdeAvro, ev
		case "PROTOBUF":
			return SerdeProtobuf, ev
		case "JSON":
			return SerdeJSONSchema, ev
		}
	}
	return "", ""
}
