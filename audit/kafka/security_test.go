package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/kaudit/kaudit/audit"
)

const (
	plainPass  = "pl41n-s3cret-pw"
	scram256PW = "scr4m256-s3cret-pw"
	scram512PW = "scr4m512-s3cret-pw"
)

func TestSASL(t *testing.T) {
	c := newCluster(t, kfake.EnableSASL(),
		kfake.Superuser("PLAIN", "alice", plainPass),
		kfake.Superuser("SCRAM-SHA-256", "bob", scram256PW),
		kfake.Superuser("SCRAM-SHA-512", "carol", scram512PW))
	admin := newClient(t, c, kgo.SASL(plainMech("alice", plainPass)))
	createTopic(t, admin, "t", 1, nil)
	produce(t, admin, "t", 0, "k", "v")

	secrets := []string{plainPass, scram256PW, scram512PW, "wr0ng-pw"}
	for _, tt := range []struct {
		name    string
		props   map[string]string
		wantErr string
	}{
		{"plain via jaas", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="` + plainPass + `";`}, ""},
		{"plain inferred from the login module", map[string]string{"security.protocol": "sasl_plaintext",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username=alice password="` + plainPass + `";`}, ""},
		{"scram-sha-256 via jaas", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="bob" password="` + scram256PW + `";`}, ""},
		{"scram-sha-512 via username and password", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
			"sasl.username": "carol", "sasl.password": scram512PW, "some.unknown.property": "x"}, ""},
		{"wrong password", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-256",
			"sasl.username": "bob", "sasl.password": "wr0ng-pw"}, "with SASL SCRAM-SHA-256: the broker refused the login"},
		{"password of another user", map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.username": "alice", "sasl.password": scram512PW}, "with SASL PLAIN: the broker refused the login"},
		{"no sasl", nil, "reach bootstrap servers"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// kfake closes the connection on a refused login, which franz-go
			// retries until its retries run out (1.7 s on an idle machine):
			// the timeout leaves room for a loaded one (CI once took over 2 s)
			s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Properties: tt.props, Timeout: 15 * time.Second})
			if tt.wantErr != "" {
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded")
				}
				if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), c.ListenAddrs()[0]) {
					t.Errorf("err = %v, want %q and the server", err, tt.wantErr)
				}
				for _, sec := range secrets {
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
			recs := collect(t, s.Records(t.Context(), audit.TopicPartition{Topic: "t"}, 0, -1))
			if len(recs) != 1 || string(recs[0].Key) != "k" {
				t.Errorf("records = %+v", recs)
			}
		})
	}
}

func plainMech(user, pass string) sasl.Mechanism {
	m, err := saslMechanism(map[string]string{"sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": pass})
	if err != nil {
		panic(err)
	}
	return m
}

func TestAuthorization(t *testing.T) {
	c := newCluster(t, kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", "admin", "admin-pw"),
		kfake.User("PLAIN", "dave", "dave-pw",
			kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "t", Pattern: kmsg.ACLResourcePatternTypeLiteral,
				Operation: kmsg.ACLOperationDescribe, Allow: true},
			kfake.ACL{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: kmsg.ACLResourcePatternTypeLiteral,
				Operation: kmsg.ACLOperationDescribe, Allow: true}))
	admin := newClient(t, c, kgo.SASL(plainMech("admin", "admin-pw")))
	createTopic(t, admin, "t", 1, nil)
	createTopic(t, admin, "hidden", 1, nil)
	produce(t, admin, "t", 0, "k", "v")

	s := openSource(t, c, map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
		"sasl.username": "dave", "sasl.password": "dave-pw"})
	_, err := collectErr(t, s.Records(t.Context(), audit.TopicPartition{Topic: "t"}, 0, -1))
	if err == nil || !strings.Contains(err.Error(), "not authorized: topic t needs the READ operation") {
		t.Errorf("read without READ: %v", err)
	}
	_, err = s.Partitions(t.Context(), "hidden")
	if err == nil || !strings.Contains(err.Error(), "not authorized: topic hidden needs the DESCRIBE operation") {
		t.Errorf("describe without DESCRIBE: %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "dave-pw") {
		t.Errorf("err %q shows the password", err)
	}
}

// tlsFixture is a CA, a broker certificate for "broker.test" only (no IP
// SAN, so host name verification of 127.0.0.1 fails) and a client
// certificate, as PEM files.
type tlsFixture struct {
	dir                         string
	caFile, certFile, keyFile   string
	otherCAFile                 string
	serverCert                  tls.Certificate
	caPool                      *x509.CertPool
	clientCertPEM, clientKeyPEM string
}

func newTLSFixture(t *testing.T) tlsFixture {
	t.Helper()
	dir := t.TempDir()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	serial := int64(1)
	sign := func(tmpl *x509.Certificate, parent *x509.Certificate, pub, priv any) *x509.Certificate {
		serial++
		tmpl.SerialNumber = big.NewInt(serial)
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
		if parent == nil {
			parent = tmpl
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, priv)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	certPEM := func(c *x509.Certificate) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
	}
	keyPEM := func(k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caTmpl := func(cn string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	}
	caKey, otherKey, srvKey, cliKey := newKey(), newKey(), newKey(), newKey()
	ca := sign(caTmpl("test ca"), nil, &caKey.PublicKey, caKey)
	other := sign(caTmpl("other ca"), nil, &otherKey.PublicKey, otherKey)
	srv := sign(&x509.Certificate{Subject: pkix.Name{CommonName: "broker.test"}, DNSNames: []string{"broker.test"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, &srvKey.PublicKey, caKey)
	cli := sign(&x509.Certificate{Subject: pkix.Name{CommonName: "kaudit"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}, ca, &cliKey.PublicKey, caKey)

	f := tlsFixture{dir: dir, caPool: x509.NewCertPool(), clientCertPEM: certPEM(cli), clientKeyPEM: keyPEM(cliKey)}
	f.caPool.AddCert(ca)
	f.caFile = write("ca.pem", certPEM(ca))
	f.otherCAFile = write("other-ca.pem", certPEM(other))
	f.certFile = write("client.pem", f.clientCertPEM)
	f.keyFile = write("client.key", f.clientKeyPEM)
	sc, err := tls.X509KeyPair([]byte(certPEM(srv)), []byte(keyPEM(srvKey)))
	if err != nil {
		t.Fatal(err)
	}
	f.serverCert = sc
	return f
}

func TestTLS(t *testing.T) {
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

	noHost := map[string]string{"ssl.endpoint.identification.algorithm": ""}
	with := func(extra ...map[string]string) map[string]string {
		m := map[string]string{"security.protocol": "SSL"}
		for _, e := range extra {
			for k, v := range e {
				m[k] = v
			}
		}
		return m
	}
	clientFiles := map[string]string{"ssl.certificate.location": f.certFile, "ssl.key.location": f.keyFile}
	for _, tt := range []struct {
		name    string
		props   map[string]string
		wantErr string
	}{
		{"ca file, no host name check", with(noHost, clientFiles, map[string]string{"ssl.ca.location": f.caFile}), ""},
		{"inline PEM trust and key store", with(noHost, map[string]string{
			"ssl.truststore.type": "PEM", "ssl.truststore.certificates": mustRead(t, f.caFile),
			"ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": f.clientCertPEM, "ssl.keystore.key": f.clientKeyPEM}), ""},
		{"PEM trust store file", with(noHost, clientFiles, map[string]string{"ssl.truststore.type": "PEM", "ssl.truststore.location": f.caFile}), ""},
		{"host name checked by default", with(clientFiles, map[string]string{"ssl.ca.location": f.caFile}), "reach bootstrap servers"},
		{"wrong CA", with(noHost, clientFiles, map[string]string{"ssl.ca.location": f.otherCAFile}), "reach bootstrap servers"},
		{"no client certificate", with(noHost, map[string]string{"ssl.ca.location": f.caFile}), "reach bootstrap servers"},
		{"missing JKS trust store", with(map[string]string{"ssl.truststore.location": "/etc/kafka/truststore.jks", "ssl.truststore.password": "jks-pw"}), "ssl.truststore.location"},
		{"unknown store type", with(map[string]string{"ssl.keystore.type": "BKS", "ssl.keystore.location": "/k.bks"}), `ssl.keystore.type "BKS": want JKS, PKCS12 or PEM`},
		{"missing CA file", with(map[string]string{"ssl.ca.location": filepath.Join(f.dir, "nope.pem")}), "ssl.ca.location"},
		{"key does not match", with(map[string]string{"ssl.certificate.location": f.caFile, "ssl.key.location": f.keyFile}), "not a valid PEM pair"},
		{"encrypted key", with(map[string]string{"ssl.keystore.certificate.chain": f.clientCertPEM,
			"ssl.keystore.key": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", "ssl.key.password": "key-pw"}), "encrypted private keys are not supported"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// kfake closes the connection on a refused login, which franz-go
			// retries until its retries run out (1.7 s on an idle machine):
			// the timeout leaves room for a loaded one (CI once took over 2 s)
			s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Properties: tt.props, Timeout: 15 * time.Second})
			if tt.wantErr != "" {
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded")
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				for _, sec := range []string{"jks-pw", "key-pw", "PRIVATE KEY"} {
					if strings.Contains(err.Error(), sec) {
						t.Errorf("err %q shows a secret", err)
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

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestSASLConfigErrors(t *testing.T) {
	const pw = "t0p-s3cret"
	for _, tt := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"gssapi default", map[string]string{"sasl.username": "u", "sasl.password": pw}, "GSSAPI"},
		{"oauthbearer without an endpoint", map[string]string{"sasl.mechanism": "OAUTHBEARER"}, "needs sasl.oauthbearer.token.endpoint.url"},
		{"unknown mechanism", map[string]string{"sasl.mechanism": "NTLM"}, `"NTLM" is not supported`},
		{"no password", map[string]string{"sasl.mechanism": "PLAIN", "sasl.username": "u"}, "needs a username and a password"},
		{"plain with scram module", map[string]string{"sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="` + pw + `";`}, "ScramLoginModule"},
		{"scram with plain module", map[string]string{"sasl.mechanism": "SCRAM-SHA-256",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw + `";`}, "PlainLoginModule"},
		{"other module", map[string]string{"sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `com.example.Login required username="u" password="` + pw + `";`}, "the login module is not supported"},
		{"unterminated jaas", map[string]string{"sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw}, "unterminated"},
		{"jaas without semicolon", map[string]string{"sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + pw + `"`}, "missing ';'"},
		{"jaas bad flag", map[string]string{"sasl.mechanism": "PLAIN",
			"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule always password="` + pw + `";`}, "flag"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.props["security.protocol"] = "SASL_SSL"
			_, err := securityOpts(tt.props)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("err %q shows the password", err)
			}
		})
	}
}

func TestParseJAAS(t *testing.T) {
	for _, tt := range []struct {
		name, in string
		want     jaasConfig
	}{
		{"quoted", `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="p w=;\"x";`,
			jaasConfig{"org.apache.kafka.common.security.plain.PlainLoginModule", "required", map[string]string{"username": "alice", "password": `p w=;"x`}}},
		{"bare words and newlines", "org.apache.kafka.common.security.scram.ScramLoginModule Required\n  username=bob\n  password=pw\n;",
			jaasConfig{"org.apache.kafka.common.security.scram.ScramLoginModule", "required", map[string]string{"username": "bob", "password": "pw"}}},
		{"no options", `x.PlainLoginModule optional;`, jaasConfig{"x.PlainLoginModule", "optional", map[string]string{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseJAAS(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.module != tt.want.module || got.flag != tt.want.flag || len(got.options) != len(tt.want.options) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for k, v := range tt.want.options {
				if got.options[k] != v {
					t.Errorf("%s = %q, want %q", k, got.options[k], v)
				}
			}
		})
	}
}

// FuzzParseJAAS: the JAAS parser never panics, and its errors never repeat
// the input's quoted values.
func FuzzParseJAAS(f *testing.F) {
	for _, s := range []string{
		`org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="secret";`,
		`m required a=b c="d\"e";`, `m required`, `"q" required;`, `m required a=;`, `m required a="`, `;;`, ``,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		j, err := parseJAAS(in)
		if err != nil {
			// Every error is one of these fixed messages: none quotes input.
			for _, m := range []string{"want <LoginModule class> <flag> key=\"value\"…;", "login module flag: want required, requisite, sufficient or optional",
				"only one login module is supported", "want key=\"value\" options after the login module flag", "missing ';' at the end", "unterminated quoted value"} {
				if err.Error() == m {
					return
				}
			}
			t.Fatalf("unexpected error %q", err)
		}
		if j.module == "" || j.options == nil {
			t.Fatalf("accepted %q as %+v", in, j)
		}
	})
}
