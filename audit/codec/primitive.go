package codec

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// javaSerdes maps Kafka's serde names as a Java app writes them (the
// Serdes factory method, its class, the serializer's class) to the names
// New accepts. Matching is case-insensitive.
var javaSerdes = map[string]string{
	"string": SerdeString, "integer": SerdeInt, "long": SerdeLong, "short": SerdeShort,
	"double": SerdeDouble, "float": SerdeFloat, "uuid": SerdeUUID, "bytearray": SerdeBytes,
	"byte-array": SerdeBytes, "bytes": SerdeBytes, "void": SerdeVoid,
}

// NormalizeSerde returns the serde name New uses for name: the names it
// lists stay as they are (lower-cased), and Kafka's Java names map to
// them: String, Integer, Long, Short, Double, Float, UUID, ByteArray,
// Bytes, Void, also as Serdes.Integer(), IntegerSerde,
// org.apache.kafka.common.serialization.Serdes$IntegerSerde or
// IntegerSerializer/IntegerDeserializer. A name it does not know is
// returned lower-cased and trimmed (New then rejects it).
func NormalizeSerde(name string) string {
	if kind, msg, ok := strings.Cut(strings.TrimSpace(name), ":"); ok && strings.EqualFold(strings.TrimSpace(kind), SerdeProtobuf) {
		// protobuf:NAME keeps the message name's case
		return SerdeProtobuf + ":" + strings.TrimSpace(msg)
	}
	s := strings.ToLower(strings.TrimSpace(name))
	for _, n := range Serdes {
		if s == n {
			return s
		}
	}
	t := s
	t = strings.TrimPrefix(t, "org.apache.kafka.common.serialization.")
	t = strings.TrimPrefix(t, "serdes$")
	t = strings.TrimPrefix(t, "serdes.")
	t = strings.TrimSuffix(t, "()")
	for _, suf := range []string{"deserializer", "serializer", "serde"} {
		if u := strings.TrimSuffix(t, suf); u != t && u != "" {
			t = u
			break
		}
	}
	if n, ok := javaSerdes[t]; ok {
		return n
	}
	return s
}

// KeyBytes serializes a key the way the Java serde named serde writes it,
// from the key's canonical text (its Canonical JSON, as Decode's value
// gives it): String and UUID as UTF-8, Integer, Long and Short
// big-endian two's complement, Double and Float as big-endian IEEE 754
// (Double.doubleToLongBits: NaN is Java's canonical NaN), ByteArray the
// bytes the base64 text stands for. The bytes are what the default
// partitioner hashes. false when the text is not a key of that serde (a
// number out of range, a string for a number serde), for null, and for
// void, json and avro keys, whose bytes the text does not fix. A key
// decoded from a Double -0.0 has the text 0 and serializes as +0.0.
func KeyBytes(serde, keyText string) ([]byte, bool) {
	s := NormalizeSerde(serde)
	if s == "" {
		s = SerdeBytes
	}
	switch s {
	case SerdeString, SerdeUUID, SerdeBytes:
		if s != SerdeBytes {
			if b, ok := plainJSONString(keyText); ok {
				return b, true
			}
		}
		var str string
		if strings.TrimSpace(keyText) == "null" {
			return nil, false
		}
		if err := json.Unmarshal([]byte(keyText), &str); err != nil {
			return nil, false
		}
		if s != SerdeBytes {
			return []byte(str), true
		}
		b, err := base64.StdEncoding.Strict().DecodeString(str)
		if err != nil {
			return nil, false
		}
		return b, true
	case SerdeLong, SerdeInt, SerdeShort:
		bits := map[string]int{SerdeLong: 64, SerdeInt: 32, SerdeShort: 16}[s]
		n, err := strconv.ParseInt(strings.TrimSpace(keyText), 10, bits)
		if err != nil {
			return nil, false
		}
		switch bits {
		case 64:
			return binary.BigEndian.AppendUint64(nil, uint64(n)), true
		case 32:
			return binary.BigEndian.AppendUint32(nil, uint32(int32(n))), true
		}
		return binary.BigEndian.AppendUint16(nil, uint16(int16(n))), true
	case SerdeDouble, SerdeFloat:
		f, ok := keyFloat(keyText)
		if !ok {
			return nil, false
		}
		if s == SerdeDouble {
			if math.IsNaN(f) {
				return binary.BigEndian.AppendUint64(nil, 0x7ff8000000000000), true
			}
			return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)), true
		}
		if math.IsNaN(f) {
			return binary.BigEndian.AppendUint32(nil, 0x7fc00000), true
		}
		if math.IsInf(f, 0) {
			return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f))), true
		}
		// the text is the shortest form at float32 precision
		f32, err := strconv.ParseFloat(strings.TrimSpace(keyText), 32)
		if err != nil || string(appendES(nil, f32, 32)) != strings.TrimSpace(keyText) {
			return nil, false
		}
		return binary.BigEndian.AppendUint32(nil, math.Float32bits(float32(f32))), true
	}
	return nil, false
}

// keyFloat reads a number's canonical text, or the strings floatValue
// gives the non-finite ones.
func keyFloat(text string) (float64, bool) {
	switch strings.TrimSpace(text) {
	case `"NaN"`:
		return math.NaN(), true
	case `"Infinity"`:
		return math.Inf(1), true
	case `"-Infinity"`:
		return math.Inf(-1), true
	}
	t := strings.TrimSpace(text)
	if t == "" || t[0] == '"' {
		return 0, false
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// plainJSONString returns the text of a JSON string literal that holds
// only ASCII needing no escape (the common key, "ord-42"), as
// json.Unmarshal would, without parsing it: false for any other text.
func plainJSONString(text string) ([]byte, bool) {
	if len(text) < 2 || text[0] != '"' || text[len(text)-1] != '"' || !plainString(text[1:len(text)-1]) {
		return nil, false
	}
	return []byte(text[1 : len(text)-1]), true
}
