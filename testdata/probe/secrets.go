package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

const (
	saslPass  = "s3cr3t-p4ss-probe"
	saslBad   = "wr0ng-p4ss-probe"
	regPass   = "r3g-s3cr3t-probe"
	regBad    = "r3g-wr0ng-probe"
	keyPass   = "k3y-p4ss-probe"
	storePass = "st0re-p4ss-probe"
)

type secretsReport struct {
	runs    int
	files   int // report and bundle files checked
	leaks   []string
	refused int // runs with a wrong secret that did not exit 4 or 3
	okFail  []string
	elapsed time.Duration
}

// cleanups is the fakeregistry.TB of the probe.
type cleanups struct{ fns []func() }

func (c *cleanups) Helper()                      {}
func (c *cleanups) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (c *cleanups) Cleanup(f func())             { c.fns = append(c.fns, f) }
func (c *cleanups) run() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
}

// selfSigned makes a CA-less self-signed certificate for 127.0.0.1.
func selfSigned() (tls.Certificate, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	return c, certPEM, keyPEM, err
}

// saslTLSCluster is a kfake broker that wants SASL/PLAIN over TLS, holding
// topic orders-v1 and group shop's offsets.
func saslTLSCluster(ctx context.Context, cert tls.Certificate, certPEM []byte) (string, func(), error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), loopback(), kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", saslPass),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	if err != nil {
		return "", nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(plain.Auth{User: "admin", Pass: saslPass}.AsMechanism()),
		kgo.DialTLSConfig(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}), kgo.DefaultProduceTopic("orders-v1"))
	if err != nil {
		c.Close()
		return "", nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders-v1"); err != nil {
		c.Close()
		return "", nil, err
	}
	for i := range 5 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(`{"orderId":"o1"}`)}).FirstErr(); err != nil {
			c.Close()
			return "", nil, err
		}
	}
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders-v1", Partition: 0, At: 5, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "shop", offs); err != nil {
		c.Close()
		return "", nil, err
	}
	return strings.Join(c.ListenAddrs(), ","), c.Close, nil
}

// runSecrets hands kaudit passwords (SASL over TLS, TLS key and store
// passwords, Schema Registry basic auth) in flags, properties files and the
// environment, right and wrong, and looks for them in everything it prints
// and writes.
func runSecrets(root, bin, work string, timeout time.Duration) (*secretsReport, error) {
	start := time.Now()
	ctx := context.Background()
	dir := filepath.Join(work, "secrets")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var cu cleanups
	defer cu.run()
	cert, certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return nil, err
	}
	keyBody := strings.Split(string(keyPEM), "\n")[1] // a line of the key's base64
	secrets := []string{saslPass, saslBad, regPass, regBad, keyPass, storePass, keyBody}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			panic(err)
		}
		return p
	}
	ca := write("ca.pem", string(certPEM))
	clientKey := write("client.key", string(keyPEM))
	clientCert := write("client.pem", string(certPEM))
	bs, closeFn, err := saslTLSCluster(ctx, cert, certPEM)
	if err != nil {
		return nil, fmt.Errorf("sasl/tls cluster: %w", err)
	}
	defer closeFn()

	// The Avro app behind a registry that wants basic auth.
	reg := fakeregistry.NewServer(&cu)
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		return nil, err
	}
	s := fakeapp.SeedScenario("shop", 30)
	s.Lag, s.Inflight, s.Encode = 0, 0, enc.Encode
	avro, closeAvro, err := newBroker(ctx, "avro", s)
	if err != nil {
		return nil, err
	}
	defer closeAvro()
	reg.RequireBasicAuth("user", regPass)
	for _, name := range []string{"kaudit.yaml", "topology.txt"} {
		b, err := os.ReadFile(filepath.Join(root, "cmd", "kaudit", "demo", name))
		if err != nil {
			return nil, err
		}
		write(name, string(b))
	}
	spec := filepath.Join(dir, "kaudit.yaml")

	jaas := func(p string) string {
		return `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + p + `";`
	}
	tlsProps := "security.protocol=SASL_SSL\nssl.ca.location=" + ca + "\nssl.key.password=" + keyPass + "\nssl.truststore.password=" + storePass + "\n"
	type auth struct {
		name string
		args []string
		env  []string
		ok   bool
	}
	auths := []auth{
		{"sasl_ssl config file", []string{"--command-config", write("right.properties", tlsProps+"sasl.mechanism=PLAIN\nsasl.jaas.config="+jaas(saslPass)+"\n")}, nil, true},
		{"sasl_ssl config file, wrong password", []string{"--command-config", write("wrong.properties", tlsProps+"sasl.mechanism=PLAIN\nsasl.jaas.config="+jaas(saslBad)+"\n")}, nil, false},
		{"sasl_ssl properties", []string{"--command-property", "security.protocol=SASL_SSL", "--command-property", "ssl.ca.location=" + ca,
			"--command-property", "sasl.mechanism=PLAIN", "--command-property", "sasl.username=admin", "--command-property", "sasl.password=" + saslPass,
			"--command-property", "ssl.keystore.password=" + storePass}, nil, true},
		{"sasl_ssl properties, wrong password", []string{"--command-property", "security.protocol=SASL_SSL", "--command-property", "ssl.ca.location=" + ca,
			"--command-property", "sasl.mechanism=PLAIN", "--command-property", "sasl.username=admin", "--command-property", "sasl.password=" + saslBad}, nil, false},
		{"sasl_ssl env", nil, []string{"KAUDIT_COMMAND_CONFIG=" + write("env.properties", tlsProps+"sasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password="+saslPass+"\n")}, true},
		{"client key inline, wrong password", []string{"--command-config", write("inline.properties", tlsProps+"sasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password="+saslBad+
			"\nssl.keystore.key="+strings.ReplaceAll(string(keyPEM), "\n", "\\n")+"\nssl.keystore.certificate.chain="+strings.ReplaceAll(string(certPEM), "\n", "\\n")+"\n")}, nil, false},
		{"client key files, wrong password", []string{"--command-config", write("keyfile.properties", tlsProps+"sasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password="+saslBad+
			"\nssl.key.location="+clientKey+"\nssl.certificate.location="+clientCert+"\n")}, nil, false},
	}
	rep := &secretsReport{}
	check := func(where, text string) {
		for _, s := range secrets {
			if i := strings.Index(text, s); i >= 0 {
				rep.leaks = append(rep.leaks, fmt.Sprintf("%s: …%s…", where, trim(text[max(0, i-80):min(len(text), i+len(s)+20)], 200)))
			}
		}
	}
	checkDir := func(d string) {
		filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				b, _ := os.ReadFile(p)
				rep.files++
				check(p, string(b))
			}
			return nil
		})
	}
	n := 0
	one := func(a auth, args ...string) {
		n++
		out := filepath.Join(dir, fmt.Sprintf("out-%03d", n))
		os.MkdirAll(out, 0o755)
		full := append(args, a.args...)
		for i, x := range full {
			full[i] = strings.ReplaceAll(x, "{out}", out)
		}
		res := runKaudit(bin, runOpts{dir: out, env: a.env, timeout: timeout}, full...)
		rep.runs++
		check(a.name+" "+args[0]+" stdout", res.stdout)
		check(a.name+" "+args[0]+" stderr", res.stderr)
		checkDir(out)
		if a.ok && (res.code == 2 || res.code == 4) {
			rep.okFail = append(rep.okFail, fmt.Sprintf("%s %s: exit %d %s", a.name, args[0], res.code, trim(res.stderr, 160)))
		}
		// a ledger shows rows whatever their values decode to: only a
		// verdict must not survive a wrong secret
		if !a.ok && res.code != 4 && res.code != 3 && res.code != 2 && (args[0] != "ledger" || !strings.HasPrefix(a.name, "registry")) {
			rep.refused++
			rep.okFail = append(rep.okFail, fmt.Sprintf("%s %s: exit %d with a wrong secret", a.name, args[0], res.code))
		}
	}
	for _, a := range auths {
		t := "2s"
		if !a.ok {
			t = "500ms"
		}
		common := []string{"--bootstrap-server", bs, "--timeout", t}
		one(a, append([]string{"ledger", "--topic", "orders-v1", "--format", "json"}, common...)...)
		one(a, append([]string{"txns", "--app-id", "shop"}, common...)...)
		one(a, append([]string{"diff", "--app-id", "shop", "--format", "md", "--output", "{out}/report.md"}, common...)...)
		one(a, append([]string{"diff", "--app-id", "shop", "--format", "json"}, common...)...)
		one(a, append([]string{"capture", "--app-id", "shop", "--out", "{out}/bundle"}, common...)...)
	}
	// The registry's password: right, wrong, in a property, a file, the URL, the environment.
	withUser := func(p string) string { return strings.Replace(reg.URL, "http://", "http://user:"+p+"@", 1) }
	for _, a := range []auth{
		{"registry user info", []string{"--schema-registry-url", reg.URL, "--command-property", "basic.auth.user.info=user:" + regPass}, nil, true},
		{"registry user info, wrong", []string{"--schema-registry-url", reg.URL, "--command-property", "basic.auth.user.info=user:" + regBad}, nil, false},
		{"registry config file, wrong", []string{"--schema-registry-url", reg.URL, "--command-config", write("reg.properties", "basic.auth.user.info=user:"+regBad+"\n")}, nil, false},
		{"registry URL, wrong", []string{"--schema-registry-url", withUser(regBad)}, nil, false},
		{"registry URL env, right", nil, []string{"KAUDIT_SCHEMA_REGISTRY_URL=" + withUser(regPass)}, true},
	} {
		common := []string{"--bootstrap-server", avro.bs, "--timeout", "2s", "--spec", spec}
		one(a, append([]string{"diff", "--format", "json"}, common...)...)
		one(a, append([]string{"diff", "--format", "md", "--output", "{out}/report.md"}, common...)...)
		one(a, append([]string{"ledger", "--topic", "orders-v1", "--partition", "0", "--offsets", "0-3", "--value-serde", "avro", "--format", "json"}, common[:4]...)...)
	}
	// Help and usage errors with every secret in the environment.
	env := []string{"KAUDIT_COMMAND_PROPERTY=sasl.password=" + saslPass, "KAUDIT_SCHEMA_REGISTRY_URL=" + withUser(regPass)}
	for _, args := range [][]string{{"--help"}, {"diff", "--help"}, {"capture", "--help"}, {"ledger", "--bootstrap-server", bs}, {"diff", "--no-such-flag"}, {"no-such-command"}} {
		one(auth{name: "env", env: env, ok: true}, args...)
	}
	// usage errors are not failures of a right secret
	var keep []string
	for _, f := range rep.okFail {
		if !strings.HasPrefix(f, "env ") {
			keep = append(keep, f)
		}
	}
	rep.okFail = keep
	rep.elapsed = time.Since(start)
	return rep, nil
}

func printSecrets(rep *secretsReport, verbose bool) {
	fmt.Printf("## 4. Secrets (%d runs, %d written files checked, %s)\n\n", rep.runs, rep.files, rep.elapsed.Round(time.Second))
	fmt.Println("SASL/PLAIN over TLS (kfake), TLS key and store passwords, an inline client key, Schema Registry basic auth;")
	fmt.Println("in --command-config files, --command-property flags, URLs and KAUDIT_* variables; right and wrong.")
	fmt.Println()
	fmt.Printf("| secrets found in stdout, stderr, reports or bundles | %d |\n|---|---|\n", len(rep.leaks))
	fmt.Printf("| a wrong secret that still gave a verdict | %d |\n\n", rep.refused)
	for _, l := range rep.leaks {
		fmt.Println("- LEAK", l)
	}
	for _, f := range rep.okFail {
		fmt.Println("- note:", f)
	}
	fmt.Println()
}
