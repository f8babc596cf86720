package kafka

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"github.com/twmb/franz-go/pkg/kfake"
)

const (
	oauthSecret = "0auth-cl1ent-s3cret"
	oauthToken  = "t0ken-abc123"
)

// tokenEndpoint is a KIP-768 client-credentials endpoint on 127.0.0.1:
// it wants HTTP Basic auth with the client id and secret, grant_type
// client_credentials and the scope, and counts the tokens it issues.
func tokenEndpoint(t *testing.T, wantScope string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var issued atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if !ok || id != "kaudit-client" || secret != oauthSecret {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"client secret ` + secret + ` is wrong"}`))
			return
		}
		if r.Form.Get("grant_type") != "client_credentials" || r.Form.Get("scope") != wantScope {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":"invalid_scope"}`))
			return
		}
		issued.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": oauthToken, "token_type": "bearer", "expires_in": 3600})
	}))
	t.Cleanup(srv.Close)
	return srv, &issued
}

func oauthProps(url, secret string, extra ...string) map[string]string {
	m := map[string]string{"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
		"sasl.oauthbearer.token.endpoint.url": url,
		"sasl.login.callback.handler.class":   "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
		"sasl.jaas.config": `org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="kaudit-client" clientSecret="` +
			secret + `" scope="kafka audit" extension_logicalCluster="lkc-1";`}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	return m
}

// TestOAuthBearer: the token comes from the endpoint with the client
// credentials and scope, is reused while valid, and goes to the broker with
// the extensions; a refused secret is an error naming the status, not the
// secret.
func TestOAuthBearer(t *testing.T) {
	srv, issued := tokenEndpoint(t, "kafka audit")
	m, err := saslMechanism(oauthProps(srv.URL, oauthSecret))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "OAUTHBEARER" {
		t.Fatalf("mechanism %s", m.Name())
	}
	for range 3 {
		_, first, err := m.Authenticate(t.Context(), "127.0.0.1:9092")
		if err != nil {
			t.Fatal(err)
		}
		if want := "n,,\x01auth=Bearer " + oauthToken + "\x01logicalCluster=lkc-1\x01\x01"; string(first) != want {
			t.Fatalf("first message %q, want %q", first, want)
		}
	}
	if n := issued.Load(); n != 1 {
		t.Errorf("%d tokens fetched for 3 logins, want 1 (reused until it expires)", n)
	}

	t.Run("scope from sasl.oauthbearer.scope", func(t *testing.T) {
		srv, issued := tokenEndpoint(t, "other")
		m, err := saslMechanism(oauthProps(srv.URL, oauthSecret, "sasl.oauthbearer.scope", "other"))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.Authenticate(t.Context(), "127.0.0.1:9092"); err != nil || issued.Load() != 1 {
			t.Fatalf("err %v, %d tokens", err, issued.Load())
		}
	})
	t.Run("refused secret", func(t *testing.T) {
		m, err := saslMechanism(oauthProps(srv.URL, "wr0ng-secret"))
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = m.Authenticate(t.Context(), "127.0.0.1:9092")
		if err == nil || !strings.Contains(err.Error(), "HTTP 401 (invalid_client)") {
			t.Fatalf("err = %v, want HTTP 401 (invalid_client)", err)
		}
		if strings.Contains(err.Error(), "wr0ng-secret") || strings.Contains(err.Error(), oauthSecret) {
			t.Errorf("err %q shows the secret", err)
		}
	})
	t.Run("token file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(p, []byte(oauthToken+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := saslMechanism(map[string]string{"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.token.endpoint.url": "file://" + p})
		if err != nil {
			t.Fatal(err)
		}
		if _, first, err := m.Authenticate(t.Context(), "h:1"); err != nil || !strings.Contains(string(first), "auth=Bearer "+oauthToken+"\x01") {
			t.Fatalf("first %q, err %v", first, err)
		}
	})
	t.Run("through Open to a broker", func(t *testing.T) {
		// kfake knows no OAUTHBEARER: the token is fetched and offered,
		// the broker refuses the mechanism, the error names it and no secret.
		srv, issued := tokenEndpoint(t, "kafka audit")
		c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", "admin-pw"))
		props := oauthProps(srv.URL, oauthSecret)
		props["security.protocol"] = "SASL_PLAINTEXT"
		var warned []string
		s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Properties: props, Timeout: 2 * time.Second,
			Warn: func(s string) { warned = append(warned, s) }})
		if err == nil {
			s.Close()
			t.Fatal("Open succeeded")
		}
		if !strings.Contains(err.Error(), "SASL OAUTHBEARER") || strings.Contains(err.Error(), oauthSecret) || strings.Contains(err.Error(), oauthToken) {
			t.Errorf("err = %v", err)
		}
		if len(warned) != 0 {
			t.Errorf("warned %q about properties a KIP-768 client needs", warned)
		}
		_ = issued
	})
}

// TestKerberos: a keytab login builds GSSAPI from Krb5LoginModule's options;
// the login itself fails against a KDC that does not answer, with an error
// that shows no key.
func TestKerberos(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	kdc := l.Addr().String()
	l.Close() // nothing answers there
	conf := filepath.Join(dir, "krb5.conf")
	if err := os.WriteFile(conf, []byte("[libdefaults]\n default_realm = TEST.LOCAL\n udp_preference_limit = 1\n[realms]\n TEST.LOCAL = {\n  kdc = "+kdc+"\n }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KRB5_CONFIG", conf)
	kt := keytab.New()
	if err := kt.AddEntry("kaudit", "TEST.LOCAL", "k3rb-s3cret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	ktb, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	ktPath := filepath.Join(dir, "kaudit.keytab")
	if err := os.WriteFile(ktPath, ktb, 0o600); err != nil {
		t.Fatal(err)
	}
	jaas := `com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true keyTab="` + ktPath + `" principal="kaudit@TEST.LOCAL";`
	for _, tt := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"keytab", map[string]string{"sasl.kerberos.service.name": "kafka", "sasl.jaas.config": jaas}, ""},
		{"no service name", map[string]string{"sasl.jaas.config": jaas}, "needs sasl.kerberos.service.name"},
		{"no keytab file", map[string]string{"sasl.kerberos.service.name": "kafka",
			"sasl.jaas.config": strings.Replace(jaas, ktPath, filepath.Join(dir, "none"), 1)}, "read keyTab"},
		{"neither keytab nor cache", map[string]string{"sasl.kerberos.service.name": "kafka",
			"sasl.jaas.config": `com.sun.security.auth.module.Krb5LoginModule required;`}, "useKeyTab=true"},
		{"module of another mechanism", map[string]string{"sasl.mechanism": "GSSAPI", "sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`}, "does not go with PlainLoginModule"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := saslMechanism(tt.props)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Name() != "GSSAPI" {
				t.Fatalf("mechanism %s", m.Name())
			}
			_, _, err = m.Authenticate(t.Context(), "broker.test.local:9092")
			if err == nil {
				t.Fatal("login without a KDC succeeded")
			}
			if strings.Contains(err.Error(), "k3rb-s3cret") {
				t.Errorf("err %q shows the key's password", err)
			}
		})
	}
}

// TestAWSMSKIAM: the signed first message carries the access key id and
// the session token from the environment, never the secret key.
func TestAWSMSKIAM(t *testing.T) {
	props := map[string]string{"sasl.mechanism": "AWS_MSK_IAM",
		"sasl.jaas.config":                   "software.amazon.msk.auth.iam.IAMLoginModule required;",
		"sasl.client.callback.handler.class": "software.amazon.msk.auth.iam.IAMClientCallbackHandler"}
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	if _, err := saslMechanism(props); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Fatalf("no credentials: err = %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-s3cret-key")
	t.Setenv("AWS_SESSION_TOKEN", "sess-tok")
	m, err := saslMechanism(props)
	if err != nil {
		t.Fatal(err)
	}
	_, first, err := m.Authenticate(t.Context(), "b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098")
	if err != nil {
		t.Fatal(err)
	}
	var msg map[string]string
	if err := json.Unmarshal(first, &msg); err != nil {
		t.Fatalf("first message %q: %v", first, err)
	}
	if !strings.HasPrefix(msg["x-amz-credential"], "AKIDEXAMPLE/") || !strings.Contains(msg["x-amz-credential"], "/eu-west-1/kafka-cluster/") ||
		msg["x-amz-security-token"] != "sess-tok" || msg["action"] != "kafka-cluster:Connect" {
		t.Errorf("first message %q", first)
	}
	if strings.Contains(string(first), "aws-s3cret-key") {
		t.Error("the first message carries the secret key")
	}
	props["sasl.jaas.config"] = `software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName="prod";`
	if _, err := saslMechanism(props); err == nil || !strings.Contains(err.Error(), "awsProfileName is not read") {
		t.Errorf("profile: err = %v", err)
	}
	if UnusedProperties(props) != nil {
		t.Errorf("unused %v: the IAM callback handler is what kaudit does itself", UnusedProperties(props))
	}
}

func TestUnusedProperties(t *testing.T) {
	props := map[string]string{"security.protocol": "SSL", "bootstrap.servers": "b:9092", "ssl.truststore.lcation": "/typo",
		"schema.registry.url": "http://r", "basic.auth.user.info": "u:s3cret", "request.timeout.ms": "30000",
		"sasl.login.callback.handler.class": "com.example.MyHandler", "ssl.keystore.password": "s3cret"}
	got := UnusedProperties(props)
	want := []string{"bootstrap.servers", "request.timeout.ms", "sasl.login.callback.handler.class", "ssl.truststore.lcation"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("unused %v, want %v", got, want)
	}
}
