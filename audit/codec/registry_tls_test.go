package codec

import (
	"bytes"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"software.sslmate.com/src/go-pkcs12"
)

// TestRegistryTrustStores: an https registry signed by a private CA is
// trusted through a JKS or PKCS12 schema.registry.ssl.truststore, as
// Confluent's client reads it, and not without one.
func TestRegistryTrustStores(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/schemas/ids/1" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"schema":"\"string\""}`))
	}))
	defer srv.Close()
	const pw = "tru5t-s3cret"
	dir := t.TempDir()
	p12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{srv.Certificate()}, pw)
	if err != nil {
		t.Fatal(err)
	}
	ks := keystore.New()
	if err := ks.SetTrustedCertificateEntry("registry", keystore.TrustedCertificateEntry{CreationTime: time.Now(),
		Certificate: keystore.Certificate{Type: "X509", Content: srv.Certificate().Raw}}); err != nil {
		t.Fatal(err)
	}
	var jks bytes.Buffer
	if err := ks.Store(&jks, []byte(pw)); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	p12Path, jksPath := write("trust.p12", p12), write("trust.jks", jks.Bytes())
	value := append([]byte{0, 0, 0, 0, 1}, 6, 'o', '-', '1') // Confluent framing, schema 1, Avro "o-1"
	for _, tt := range []struct {
		name  string
		props map[string]string
		want  string // "" decodes
	}{
		{"JKS", map[string]string{"schema.registry.ssl.truststore.location": jksPath, "schema.registry.ssl.truststore.password": pw}, ""},
		{"PKCS12", map[string]string{"schema.registry.ssl.truststore.location": p12Path, "schema.registry.ssl.truststore.type": "PKCS12",
			"schema.registry.ssl.truststore.password": pw}, ""},
		{"no trust store", nil, "certificate"},
		{"Kafka's trust store is not the registry's", map[string]string{"ssl.truststore.location": jksPath, "ssl.truststore.password": pw}, "certificate"},
		{"wrong password", map[string]string{"schema.registry.ssl.truststore.location": jksPath, "schema.registry.ssl.truststore.password": "wr0ng"}, "not a JKS store"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(Config{ValueSerde: "avro", RegistryURL: srv.URL, Properties: tt.props, Retries: -1})
			if err == nil {
				var v any
				v, err = c.Decode(t.Context(), "t", false, value)
				if err == nil && v != "o-1" {
					t.Fatalf("decoded %v", v)
				}
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), pw) {
				t.Errorf("err %q shows the password", err)
			}
		})
	}
}
