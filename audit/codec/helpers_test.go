package codec

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hamba/avro/v2"

	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// frame prepends Confluent's magic byte and schema id.
func frame(id int, payload []byte) []byte {
	out := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(out[1:], uint32(id))
	return append(out, payload...)
}

// encode encodes v with hamba's encoder against schema and frames it.
func encode(t testing.TB, id int, schema string, v any) []byte {
	t.Helper()
	s, err := avro.ParseWithCache(schema, "", &avro.SchemaCache{})
	if err != nil {
		t.Fatalf("parse schema: %v", err)
	}
	b, err := avro.Marshal(s, v)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return frame(id, b)
}

// offlineCodec returns a Codec with value serde avro and the given schemas
// written to a temporary schemas dir as <id>.avsc.
func offlineCodec(t testing.TB, schemas map[int]string) *Codec {
	t.Helper()
	dir := t.TempDir()
	for id, s := range schemas {
		if err := os.WriteFile(filepath.Join(dir, itoa(int32(id))+".avsc"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := New(Config{KeySerde: "string", ValueSerde: "avro", SchemasDir: dir})
	if err != nil {
		t.Fatalf("new codec: %v", err)
	}
	return c
}

// registryCodec returns a registry and a Codec reading from it.
func registryCodec(t testing.TB, cfg Config) (*fakeregistry.Registry, *Codec) {
	t.Helper()
	reg := fakeregistry.NewServer(t)
	cfg.RegistryURL = reg.URL
	if cfg.ValueSerde == "" {
		cfg.ValueSerde = "avro"
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("new codec: %v", err)
	}
	return reg, c
}

func mustDecode(t testing.TB, c *Codec, data []byte) any {
	t.Helper()
	v, err := c.Decode(context.Background(), "t", false, data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	return v
}

func asDecodeError(t testing.TB, err error) *DecodeError {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	return de
}

func registrytestRef(name, subject string, version int) fakeregistry.Reference {
	return fakeregistry.Reference{Name: name, Subject: subject, Version: version}
}

func registrytestServer(t testing.TB) *fakeregistry.Registry { return fakeregistry.NewServer(t) }

func marshalKey(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}
