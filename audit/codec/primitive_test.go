package codec

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// The vectors are written by hand from Kafka 3.6's serializers:
// IntegerSerializer, LongSerializer and ShortSerializer write the value
// big-endian (byte (data >>> 24), …), DoubleSerializer and FloatSerializer
// Double.doubleToLongBits / Float.floatToIntBits big-endian,
// StringSerializer and UUIDSerializer (data.toString()) UTF-8, and
// ByteArraySerializer the bytes as they are.
var primitiveVectors = []struct {
	serde string
	hex   string
	text  string // canonical JSON of the decoded value
	exact bool   // KeyBytes gives the bytes back
}{
	{"Integer", "0000002a", "42", true},
	{"Integer", "ffffffff", "-1", true},
	{"Integer", "7fffffff", "2147483647", true},
	{"Integer", "80000000", "-2147483648", true},
	{"Long", "0000000000000000", "0", true},
	{"Long", "fffffffffffffffe", "-2", true},
	{"Long", "7fffffffffffffff", "9223372036854775807", true},
	{"Long", "0000000100000000", "4294967296", true},
	{"Short", "8000", "-32768", true},
	{"Double", "3ff8000000000000", "1.5", true},
	{"Double", "bfd0000000000000", "-0.25", true},
	{"Double", "7ff8000000000000", `"NaN"`, true},
	{"Double", "7ff0000000000000", `"Infinity"`, true},
	{"Double", "8000000000000000", "0", false}, // -0.0 reads as 0
	{"Float", "3fc00000", "1.5", true},
	{"String", hex.EncodeToString([]byte("héllo")), `"héllo"`, true},
	{"String", "", `""`, true},
	{"UUID", hex.EncodeToString([]byte("123e4567-e89b-12d3-a456-426614174000")), `"123e4567-e89b-12d3-a456-426614174000"`, true},
	{"ByteArray", "00ff10", `"AP8Q"`, true},
	{"string", "6b", `"k"`, true},
	{"int", "00000001", "1", true},
	{"long", "0000000000000001", "1", true},
	{"bytes", "01", `"AQ=="`, true},
}

func TestPrimitiveSerdes(t *testing.T) {
	ctx := context.Background()
	for _, v := range primitiveVectors {
		t.Run(v.serde+"/"+v.hex, func(t *testing.T) {
			c, err := New(Config{KeySerde: v.serde, ValueSerde: v.serde})
			if err != nil {
				t.Fatal(err)
			}
			data, _ := hex.DecodeString(v.hex)
			if data == nil {
				data = []byte{}
			}
			for _, isKey := range []bool{true, false} {
				got, err := c.Decode(ctx, "t", isKey, data)
				if err != nil {
					t.Fatal(err)
				}
				if s := string(Canonical(got)); s != v.text {
					t.Errorf("decode %s = %s, want %s", v.hex, s, v.text)
				}
				if DigestOf(got) != DigestOf(mustDecodeJSON(t, v.text)) {
					t.Errorf("digest of %s differs from the digest of the JSON %s", v.hex, v.text)
				}
			}
			b, ok := KeyBytes(v.serde, v.text)
			if !ok {
				t.Fatalf("KeyBytes(%s, %s) failed", v.serde, v.text)
			}
			if v.exact && !bytes.Equal(b, data) {
				t.Errorf("KeyBytes(%s, %s) = %x, want %s", v.serde, v.text, b, v.hex)
			}
			// null stays null
			if got, err := c.Decode(ctx, "t", true, nil); got != nil || err != nil {
				t.Errorf("decode null = %v, %v", got, err)
			}
		})
	}
}

func mustDecodeJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNormalizeSerde(t *testing.T) {
	for in, want := range map[string]string{
		"String": "string", "Integer": "int", "integer": "int", "Long": "long", "Double": "double",
		"ByteArray": "bytes", "Bytes": "bytes", "UUID": "uuid", "Void": "void", "Short": "short", "Float": "float",
		"Serdes.Integer()": "int", "IntegerSerde": "int", "Serdes$LongSerde": "long",
		"org.apache.kafka.common.serialization.Serdes$StringSerde": "string",
		"org.apache.kafka.common.serialization.IntegerSerializer":  "int",
		"org.apache.kafka.common.serialization.UUIDDeserializer":   "uuid",
		" json ": "json", "AVRO": "avro", "": "", "serde": "serde", "Protobuf": "protobuf",
		"PROTOBUF:shop.Order": "protobuf:shop.Order", "Json-Schema": "json-schema", "Thrift": "thrift",
	} {
		if got := NormalizeSerde(in); got != want {
			t.Errorf("NormalizeSerde(%q) = %q, want %q", in, got, want)
		}
	}
	if err := CheckSerde("Thrift"); err == nil {
		t.Error("CheckSerde(Thrift) accepted it")
	}
}

func TestKeyBytesRejects(t *testing.T) {
	for _, c := range []struct{ serde, text string }{
		{"Integer", "2147483648"}, {"Integer", `"1"`}, {"Integer", "1.5"}, {"Short", "40000"},
		{"Long", "9223372036854775808"}, {"Double", `"x"`}, {"Double", "1e400"}, {"Float", "0.1000000001"},
		{"String", "1"}, {"ByteArray", `"!!"`}, {"json", `{"a":1}`}, {"avro", `"x"`}, {"void", "null"},
		{"String", "null"}, {"Long", "null"},
	} {
		if b, ok := KeyBytes(c.serde, c.text); ok {
			t.Errorf("KeyBytes(%s, %s) = %x, want a failure", c.serde, c.text, b)
		}
	}
}

var primitiveFuzzSerdes = []string{"String", "Integer", "Long", "Short", "Double", "Float", "UUID", "ByteArray"}

// FuzzPrimitive decodes arbitrary bytes with each primitive serde.
// Invariants: no panic; a decoded key's canonical text serializes back
// (KeyBytes) to bytes that decode to the same text, and to the very bytes
// read but for a Double/Float NaN other than Java's canonical one and
// -0.0.
func FuzzPrimitive(f *testing.F) {
	for i, s := range primitiveFuzzSerdes {
		for _, v := range primitiveVectors {
			if NormalizeSerde(v.serde) == NormalizeSerde(s) {
				b, _ := hex.DecodeString(v.hex)
				f.Add(byte(i), b)
			}
		}
	}
	f.Add(byte(4), []byte{0x7f, 0xf0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, which byte, data []byte) {
		s := primitiveFuzzSerdes[int(which)%len(primitiveFuzzSerdes)]
		c, err := New(Config{KeySerde: s})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		v, err := c.Decode(ctx, "t", true, data)
		if err != nil || v == nil {
			return
		}
		text := string(Canonical(v))
		b, ok := KeyBytes(s, text)
		if !ok {
			t.Fatalf("KeyBytes(%s, %s) failed for a decoded key %x", s, text, data)
		}
		back, err := c.Decode(ctx, "t", true, b)
		if err != nil || string(Canonical(back)) != text {
			t.Fatalf("%x decodes to %s, its KeyBytes %x to %v (%v)", data, text, b, back, err)
		}
		exact := true
		switch NormalizeSerde(s) {
		case SerdeDouble:
			f := math.Float64frombits(binaryUint(data))
			exact = !math.IsNaN(f) && !(f == 0 && math.Signbit(f))
		case SerdeFloat:
			f := float64(math.Float32frombits(uint32(binaryUint(data))))
			exact = !math.IsNaN(f) && !(f == 0 && math.Signbit(f))
		}
		if exact && !bytes.Equal(b, data) {
			t.Fatalf("%s: %x decodes to %s, which serializes to %x", s, data, text, b)
		}
	})
}

func binaryUint(b []byte) uint64 {
	var n uint64
	for _, x := range b {
		n = n<<8 | uint64(x)
	}
	return n
}

// FuzzKeyBytesPlain: the plain-string shortcut of KeyBytes gives what
// json.Unmarshal gives, for any text.
func FuzzKeyBytesPlain(f *testing.F) {
	for _, s := range []string{`"ord-42"`, `""`, `"a\"b"`, `"é"`, ` "x"`, `"x`, `"\u0041"`, "\"\x7f\"", "\"a\tb\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		b, ok := plainJSONString(text)
		if !ok {
			return
		}
		var str string
		if err := json.Unmarshal([]byte(text), &str); err != nil {
			t.Fatalf("%q: shortcut took it, json.Unmarshal: %v", text, err)
		}
		if string(b) != str {
			t.Fatalf("%q: shortcut %q, json.Unmarshal %q", text, b, str)
		}
	})
}

// FuzzDecodeText: DecodeText gives Text of what Decode gives, and the same
// error, for any bytes and serde (its string fast path included).
func FuzzDecodeText(f *testing.F) {
	for i, s := range primitiveFuzzSerdes {
		for _, v := range primitiveVectors {
			if NormalizeSerde(v.serde) == NormalizeSerde(s) {
				b, _ := hex.DecodeString(v.hex)
				f.Add(byte(i), b, false)
			}
		}
	}
	for _, b := range []string{"ord-42", "", `a"b\c`, "é\x00\x1f", "\xff", "\u2028"} {
		f.Add(byte(0), []byte(b), false)
	}
	f.Add(byte(0), []byte(nil), true)
	f.Fuzz(func(t *testing.T, which byte, data []byte, null bool) {
		if null {
			data = nil
		}
		serdes := append(slices.Clip(primitiveFuzzSerdes), "json", "string", "uuid", "bytes")
		s := serdes[int(which)%len(serdes)]
		c, err := New(Config{KeySerde: s, ValueSerde: s})
		if err != nil {
			t.Fatal(err)
		}
		for _, isKey := range []bool{true, false} {
			v, derr := c.Decode(t.Context(), "t", isKey, data)
			text, err := c.DecodeText(t.Context(), "t", isKey, data)
			if (err == nil) != (derr == nil) || err != nil && err.Error() != derr.Error() {
				t.Fatalf("%s %x: DecodeText error %v, Decode error %v", s, data, err, derr)
			}
			if err == nil && text != Text(v) {
				t.Fatalf("%s %x: DecodeText %q, Text of Decode %q", s, data, text, Text(v))
			}
		}
	})
}
