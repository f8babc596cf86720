package kafka

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pavlo-v-chernykh/keystore-go/v4"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"software.sslmate.com/src/go-pkcs12"

	"github.com/kaudit/kaudit/audit"
)

const (
	storePW = "st0re-s3cret-pw"
	keyPW   = "k3y-s3cret-pw"
)

// storeFiles writes the fixture's CA and client key as JKS and PKCS12
// stores, made with the libraries kaudit reads them with; and, where Java's
// keytool is installed, as keytool makes them.
func storeFiles(t *testing.T, f tlsFixture) map[string]string {
	t.Helper()
	der := func(p string) []byte {
		b, _ := pem.Decode([]byte(p))
		if b == nil {
			t.Fatal("no PEM block")
		}
		return b.Bytes
	}
	caDER := der(mustRead(t, f.caFile))
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := x509.ParseCertificate(der(f.clientCertPEM))
	if err != nil {
		t.Fatal(err)
	}
	keyDER := der(f.clientKeyPEM)
	key, err := x509.ParsePKCS8PrivateKey(keyDER)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	write := func(name string, b []byte) {
		p := filepath.Join(f.dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		files[name] = p
	}
	store := func(name string, ks keystore.KeyStore) {
		var b bytes.Buffer
		if err := ks.Store(&b, []byte(storePW)); err != nil {
			t.Fatal(err)
		}
		write(name, b.Bytes())
	}
	now := time.Now()
	trust := keystore.New()
	if err := trust.SetTrustedCertificateEntry("ca", keystore.TrustedCertificateEntry{CreationTime: now,
		Certificate: keystore.Certificate{Type: "X509", Content: caDER}}); err != nil {
		t.Fatal(err)
	}
	store("trust.jks", trust)
	ks := keystore.New()
	if err := ks.SetPrivateKeyEntry("kaudit", keystore.PrivateKeyEntry{CreationTime: now, PrivateKey: keyDER,
		CertificateChain: []keystore.Certificate{{Type: "X509", Content: cli.Raw}, {Type: "X509", Content: caDER}}}, []byte(keyPW)); err != nil {
		t.Fatal(err)
	}
	store("client.jks", ks)
	p12, err := pkcs12.Modern.Encode(key, cli, []*x509.Certificate{ca}, storePW)
	if err != nil {
		t.Fatal(err)
	}
	write("client.p12", p12)
	tp12, err := pkcs12.Modern.EncodeTrustStore([]*x509.Certificate{ca}, storePW)
	if err != nil {
		t.Fatal(err)
	}
	write("trust.p12", tp12)
	legacy, err := pkcs12.LegacyRC2.Encode(key, cli, []*x509.Certificate{ca}, storePW)
	if err != nil {
		t.Fatal(err)
	}
	write("legacy.p12", legacy)

	if keytool, err := exec.LookPath("keytool"); err == nil {
		run := func(args ...string) {
			if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
				t.Fatalf("keytool %s: %v\n%s", args[0], err, out)
			}
		}
		for _, typ := range []string{"JKS", "PKCS12"} {
			name := "keytool-trust." + strings.ToLower(typ)
			run("-importcert", "-noprompt", "-alias", "ca", "-file", f.caFile, "-keystore", filepath.Join(f.dir, name),
				"-storetype", typ, "-storepass", storePW)
			files[name] = filepath.Join(f.dir, name)
			name = "keytool-client." + strings.ToLower(typ)
			run("-importkeystore", "-noprompt", "-srckeystore", files["legacy.p12"], "-srcstoretype", "PKCS12", "-srcstorepass", storePW,
				"-destkeystore", filepath.Join(f.dir, name), "-deststoretype", typ, "-deststorepass", storePW, "-destkeypass", storePW)
			files[name] = filepath.Join(f.dir, name)
		}
	}
	return files
}

// TestStores: a JKS or PKCS12 trust store and key store open a TLS
// connection to a broker that requires a client certificate; a wrong
// password fails without saying it.
func TestStores(t *testing.T) {
	f := newTLSFixture(t)
	c := newCluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{f.serverCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: f.caPool}))
	admin := newClient(t, c, kgo.DialTLSConfig(&tls.Config{RootCAs: f.caPool, ServerName: "broker.test",
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, err := tls.X509KeyPair([]byte(f.clientCertPEM), []byte(f.clientKeyPEM))
			return &cert, err
		}}))
	createTopic(t, admin, "t", 1, nil)
	produce(t, admin, "t", 0, "k", "v")
	files := storeFiles(t, f)

	props := func(trust, trustType, key, keyType string, extra ...string) map[string]string {
		m := map[string]string{"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "",
			"ssl.truststore.location": files[trust], "ssl.truststore.password": storePW,
			"ssl.keystore.location": files[key], "ssl.keystore.password": storePW}
		if trustType != "" {
			m["ssl.truststore.type"] = trustType
		}
		if keyType != "" {
			m["ssl.keystore.type"] = keyType
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	tests := []struct {
		name    string
		props   map[string]string
		wantErr string
	}{
		{"JKS by default, key password", props("trust.jks", "", "client.jks", "", "ssl.key.password", keyPW), ""},
		{"PKCS12", props("trust.p12", "PKCS12", "client.p12", "PKCS12"), ""},
		{"type JKS holding PKCS12 (keytool's default since Java 9)", props("trust.p12", "JKS", "client.p12", "JKS"), ""},
		{"PKCS12 with the legacy ciphers", props("trust.jks", "", "legacy.p12", "PKCS12"), ""},
		{"wrong trust store password", props("trust.jks", "", "client.jks", "", "ssl.key.password", keyPW, "ssl.truststore.password", "wr0ng-pw"),
			"ssl.truststore.location: not a JKS store this password opens"},
		{"JKS trust store without a password", props("trust.jks", "", "client.jks", "", "ssl.key.password", keyPW, "ssl.truststore.password", ""),
			"needs ssl.truststore.password"},
		{"wrong key password", props("trust.jks", "", "client.jks", "", "ssl.key.password", "wr0ng-pw"), "does not open with ssl.key.password"},
		{"wrong PKCS12 password", props("trust.p12", "PKCS12", "client.p12", "PKCS12", "ssl.keystore.password", "wr0ng-pw"),
			"not a PKCS12 key store ssl.keystore.password opens"},
	}
	if files["keytool-trust.jks"] != "" {
		tests = append(tests,
			struct {
				name    string
				props   map[string]string
				wantErr string
			}{"keytool JKS", props("keytool-trust.jks", "JKS", "keytool-client.jks", "JKS"), ""},
			struct {
				name    string
				props   map[string]string
				wantErr string
			}{"keytool PKCS12", props("keytool-trust.pkcs12", "PKCS12", "keytool-client.pkcs12", "PKCS12"), ""})
	} else {
		t.Log("keytool is not installed: stores made by Java's keytool not tried")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Properties: tt.props, Timeout: 2 * time.Second})
			if tt.wantErr != "" {
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded")
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				for _, sec := range []string{storePW, keyPW, "wr0ng-pw"} {
					if strings.Contains(err.Error(), sec) {
						t.Errorf("err %q shows a password", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if recs := collect(t, s.Records(t.Context(), audit.TopicPartition{Topic: "t"}, 0, -1)); len(recs) != 1 {
				t.Errorf("records = %+v", recs)
			}
		})
	}
}
