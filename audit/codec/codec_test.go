package codec

import (
	"errors"
	"strings"
	"testing"
)

func TestPlainSerdes(t *testing.T) {
	for _, tt := range []struct {
		serde   string
		in      []byte
		want    string // canonical text; "" when an error is wanted
		wantErr error  // sentinel, or nil for a plain DecodeError when want is ""
	}{
		{"string", []byte("héllo"), `"héllo"`, nil},
		{"string", []byte{}, `""`, nil},
		{"string", []byte{0xff}, "", nil},
		{"uuid", []byte("6ba7b810-9dad-11d1-80b4-00c04fd430c8"), `"6ba7b810-9dad-11d1-80b4-00c04fd430c8"`, nil},
		{"long", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, `-2`, nil},
		{"long", []byte{0, 0, 0, 0, 0, 0, 1, 0}, `256`, nil},
		{"long", []byte{0, 0, 0, 1}, "", ErrTruncated},
		{"long", []byte{0, 0, 0, 0, 0, 0, 0, 0, 1}, "", nil},
		{"int", []byte{0x80, 0, 0, 0}, `-2147483648`, nil},
		{"int", []byte{0, 0, 1}, "", ErrTruncated},
		{"short", []byte{0xff, 0xff}, `-1`, nil},
		{"double", []byte{0x3f, 0xf8, 0, 0, 0, 0, 0, 0}, `1.5`, nil},
		{"float", []byte{0x3d, 0xcc, 0xcc, 0xcd}, `0.1`, nil},
		{"bytes", []byte{0, 1, 2}, `"AAEC"`, nil},
		{"bytes", []byte{}, `""`, nil},
		{"void", []byte{}, `null`, nil},
		{"void", []byte{1}, "", nil},
		{"json", []byte(`{"b":[1,2.50],"a":null}`), `{"a":null,"b":[1,2.5]}`, nil},
		{"json", append([]byte{0, 0, 0, 0, 9}, `{"x":1}`...), `{"x":1}`, nil},
		{"json", []byte(`{"a":1} x`), "", nil},
		{"json", []byte(`{"a":`), "", nil},
		{"avro", []byte{}, `null`, nil},
	} {
		t.Run(tt.serde+"/"+RawText(tt.in), func(t *testing.T) {
			cfg := Config{KeySerde: tt.serde}
			if tt.serde == "avro" {
				cfg.RegistryURL = "http://127.0.0.1:1" // never asked: empty payloads need no schema
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatalf("new: %v", err)
			}
			v, err := c.Decode(t.Context(), "topic", true, tt.in)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("decoded %s, want an error", Text(v))
				}
				de := asDecodeError(t, err)
				if !de.IsKey || de.SchemaID != -1 {
					t.Errorf("DecodeError %+v: want IsKey and SchemaID -1", de)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("error %v does not wrap %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := Text(v); got != tt.want {
				t.Errorf("Text = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestNilIsNull(t *testing.T) {
	for _, s := range Serdes {
		t.Run(s, func(t *testing.T) {
			cfg := Config{KeySerde: s}
			if s == "avro" {
				cfg.RegistryURL = "http://127.0.0.1:1"
			}
			c, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.Decode(t.Context(), "t", true, nil)
			if v != nil || err != nil {
				t.Errorf("Decode(nil) = %v, %v; want nil, nil", v, err)
			}
		})
	}
}

func TestTopicOverrides(t *testing.T) {
	c, err := New(Config{
		KeySerde: "string", ValueSerde: "long",
		Topics: map[string]TopicSerdes{
			"orders":          {Value: "json"},
			"app-*-changelog": {Key: "long", Value: "int"},
			"app-x-changelog": {Key: "bytes"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	eight := []byte{0, 0, 0, 0, 0, 0, 0, 7}
	for _, tt := range []struct {
		name  string
		topic string
		isKey bool
		in    []byte
		want  string
	}{
		{"default key", "other", true, []byte("k"), `"k"`},
		{"default value", "other", false, eight, `7`},
		{"override value", "orders", false, []byte(`{"a":1}`), `{"a":1}`},
		{"override keeps default key", "orders", true, []byte("k"), `"k"`},
		{"pattern key", "app-y-changelog", true, eight, `7`},
		{"pattern value", "app-y-changelog", false, []byte{0, 0, 0, 9}, `9`},
		{"exact beats pattern", "app-x-changelog", true, []byte{1}, `"AQ=="`},
		{"exact keeps default value", "app-x-changelog", false, eight, `7`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, err := c.Decode(t.Context(), tt.topic, tt.isKey, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got := Text(v); got != tt.want {
				t.Errorf("Text = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestAvroWithoutSchemas: Avro with no schema source at all (no registry,
// no schemas dir, no capture's) is no configuration error: each record's
// schema is missing evidence (ErrRegistryUnavailable), the run incomplete.
func TestAvroWithoutSchemas(t *testing.T) {
	for _, cfg := range []Config{{ValueSerde: "avro"}, {Topics: map[string]TopicSerdes{"t": {Value: "avro"}}}} {
		c, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%+v): %v", cfg, err)
		}
		_, err = c.Decode(t.Context(), "t", false, frame(7, []byte{4}))
		if !errors.Is(err, ErrRegistryUnavailable) || !strings.Contains(err.Error(), "no schemas were given") {
			t.Errorf("Decode without schemas: %v, want ErrRegistryUnavailable naming what to give", err)
		}
	}
}

func TestCheckSerde(t *testing.T) {
	for _, name := range append([]string{"", "AVRO", " long "}, Serdes...) {
		if err := CheckSerde(name); err != nil {
			t.Errorf("CheckSerde(%q) = %v", name, err)
		}
	}
	if err := CheckSerde("thrift"); err == nil || !strings.Contains(err.Error(), "avro") || !strings.Contains(err.Error(), "json-schema") {
		t.Errorf("CheckSerde(thrift) = %v, want an error listing the serdes", err)
	}
}

func TestRegistryURLFromProperties(t *testing.T) {
	reg := registrytestServer(t)
	id, _ := reg.Register("s", `"long"`)
	c, err := New(Config{ValueSerde: "avro", Properties: map[string]string{"schema.registry.url": reg.URL}})
	if err != nil {
		t.Fatal(err)
	}
	if got := Text(mustDecode(t, c, frame(id, []byte{4}))); got != "2" {
		t.Errorf("Text = %s, want 2", got)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"unknown serde", Config{ValueSerde: "thrift"}, "unknown serde"},
		{"protobuf without a message name", Config{ValueSerde: "protobuf: "}, "names no message"},
		{"unknown topic serde", Config{Topics: map[string]TopicSerdes{"t": {Key: "xml"}}}, "topic t"},
		{"bad pattern", Config{Topics: map[string]TopicSerdes{"t[": {Key: "string"}}}, "pattern"},
		{"bad url", Config{ValueSerde: "avro", RegistryURL: "ftp://u:secret@h"}, "registry URL"},
		{"missing dir", Config{ValueSerde: "avro", SchemasDir: "/nonexistent/kaudit"}, "schemas dir"},
		{"bad user info", Config{ValueSerde: "avro", RegistryURL: "http://h", Properties: map[string]string{"basic.auth.user.info": "secret"}}, "user:password"},
		{"url source without user", Config{ValueSerde: "avro", RegistryURL: "http://h", Properties: map[string]string{"basic.auth.credentials.source": "URL"}}, "no user"},
		{"unsupported source", Config{ValueSerde: "avro", RegistryURL: "http://h", Properties: map[string]string{"basic.auth.credentials.source": "OAUTH"}}, "not supported"},
		{"missing truststore", Config{ValueSerde: "avro", RegistryURL: "https://h", Properties: map[string]string{"schema.registry.ssl.truststore.location": "/x.jks"}}, "schema.registry.ssl.truststore.location"},
		{"cert without key", Config{ValueSerde: "avro", RegistryURL: "https://h", Properties: map[string]string{"ssl.certificate.location": "/c.pem"}}, "go together"},
		{"missing ca", Config{ValueSerde: "avro", RegistryURL: "https://h", Properties: map[string]string{"ssl.ca.location": "/nonexistent.pem"}}, "CA"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil {
				t.Fatal("New succeeded, want an error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q leaks a secret", err)
			}
		})
	}
}
