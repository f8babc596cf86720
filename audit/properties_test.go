package audit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comments and blanks", "# a comment\n! another\n\n   \n  # indented comment\n", map[string]string{}},
		{"equals", "bootstrap.servers=localhost:9092\n", map[string]string{"bootstrap.servers": "localhost:9092"}},
		{"colon", "a: b", map[string]string{"a": "b"}},
		{"space separator", "a   b c", map[string]string{"a": "b c"}},
		{"spaces around equals", "  key  =  value with spaces  ", map[string]string{"key": "value with spaces  "}},
		{"empty value", "a=\nb\n", map[string]string{"a": "", "b": ""}},
		{"second separator kept", "a==b", map[string]string{"a": "=b"}},
		{"escaped separator in key", `a\=b\:c\ d=e`, map[string]string{"a=b:c d": "e"}},
		{"escapes", `k=tab\there\nnew\rcr\fff\\back\q`, map[string]string{"k": "tab\there\nnew\rcr\fff\\backq"}},
		{"unicode", `k=\u00e9t\u00C9`, map[string]string{"k": "étÉ"}},
		{"continuation", "k=one, \\\n    two, \\\n\tthree\n", map[string]string{"k": "one, two, three"}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}},
		{"continuation at end of input", "k=v\\", map[string]string{"k": "v"}},
		{"comment is not continued", "# c \\\nk=v", map[string]string{"k": "v"}},
		{"crlf and cr", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"hash inside value", "a=b#c", map[string]string{"a": "b#c"}},
		{"jaas", `sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
    username="alice" \
    password="s3cr=t";`, map[string]string{"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="s3cr=t";`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProperties(strings.NewReader(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePropertiesErrors(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"short unicode in value", "a=1\nsecret.password=hunter2\\u12", "line 2"},
		{"bad unicode in key", "\n\n\\uZZZZ=x", "line 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseProperties(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats a value", err)
			}
		})
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParsePropertiesReadError(t *testing.T) {
	_, err := ParseProperties(errReader{})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
}

func TestApplyProperty(t *testing.T) {
	for _, tt := range []struct {
		name, kv, key, val string
		wantErr            bool
	}{
		{name: "plain", kv: "security.protocol=SASL_SSL", key: "security.protocol", val: "SASL_SSL"},
		{name: "value with equals", kv: `sasl.jaas.config=x password="a=b";`, key: "sasl.jaas.config", val: `x password="a=b";`},
		{name: "trimmed key", kv: " a =b", key: "a", val: "b"},
		{name: "empty value", kv: "a=", key: "a", val: ""},
		{name: "no equals", kv: "hunter2", wantErr: true},
		{name: "empty key", kv: "=hunter2", wantErr: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{}
			err := ApplyProperty(m, tt.kv)
			if tt.wantErr {
				if err == nil {
					t.Fatal("no error")
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Errorf("error %q repeats the value", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m[tt.key]; got != tt.val || len(m) != 1 {
				t.Errorf("m = %q, want %s=%q", m, tt.key, tt.val)
			}
		})
	}
}

func TestRedactProperties(t *testing.T) {
	in := map[string]string{
		"security.protocol":        "SASL_SSL",
		"sasl.mechanism":           "PLAIN",
		"sasl.jaas.config":         `PlainLoginModule required username="u" password="p";`,
		"sasl.password":            "p",
		"sasl.username":            "u",
		"ssl.key.password":         "p",
		"ssl.keystore.key":         "-----BEGIN PRIVATE KEY-----",
		"ssl.key.location":         "/etc/key.pem",
		"basic.auth.user.info":     "u:p",
		"sasl.oauthbearer.token":   "t",
		"ssl.truststore.password":  "p",
		"schema.registry.secret":   "s",
		"ssl.ca.location":          "/etc/ca.pem",
		"client.credentials.thing": "c",
		// misspelt: the client ignores them, the command line still has them
		"ssl.truststore.passwrd": "p",
		"SSL.KEYSTORE.PASWORD":   "p",
		"sasl.jass.config":       "j",
		"my.pasword":             "p",
		"api.secrt":              "s",
		"auth.tokn":              "t",
		// any key with a secret's word, in any case
		"key.serializer":  "org.apache.kafka.common.serialization.StringSerializer",
		"Custom.ApiToken": "t",
		"x.passwd":        "p",
		// none of the words, nor near one
		"security.protocol.x":                   "SSL",
		"ssl.endpoint.identification.algorithm": "",
		"topic":                                 "t",
	}
	secret := map[string]bool{
		"sasl.jaas.config": true, "sasl.password": true, "ssl.key.password": true, "ssl.keystore.key": true,
		"basic.auth.user.info": true, "sasl.oauthbearer.token": true, "ssl.truststore.password": true,
		"schema.registry.secret": true, "client.credentials.thing": true,
		"ssl.key.location": true, "ssl.truststore.passwrd": true, "SSL.KEYSTORE.PASWORD": true, "sasl.jass.config": true,
		"my.pasword": true, "api.secrt": true, "auth.tokn": true, "key.serializer": true, "Custom.ApiToken": true, "x.passwd": true,
	}
	got := RedactProperties(in)
	for _, k := range slices.Sorted(maps.Keys(in)) {
		t.Run(k, func(t *testing.T) {
			if IsSecretKey(k) != secret[k] {
				t.Errorf("IsSecretKey = %v, want %v", IsSecretKey(k), secret[k])
			}
			want := in[k]
			if secret[k] {
				want = Redacted
			}
			if got[k] != want {
				t.Errorf("redacted %q, want %q", got[k], want)
			}
		})
	}
	if in["sasl.password"] != "p" {
		t.Error("RedactProperties changed its input")
	}
	if RedactProperties(nil) == nil {
		t.Error("RedactProperties(nil) is nil")
	}
}

// formatProperties writes m so that ParseProperties reads it back.
func formatProperties(m map[string]string) string {
	esc := func(s string, key bool) string {
		var b strings.Builder
		for i, r := range s {
			switch {
			case r == '\\':
				b.WriteString(`\\`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r == '\f':
				b.WriteString(`\f`)
			case r == '=' || r == ':' || r == '#' || r == '!':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r == ' ' && (key || i == 0):
				b.WriteString(`\ `)
			case r < 0x20 || r > 0x7e:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(esc(k, true) + "=" + esc(m[k], false) + "\n")
	}
	return b.String()
}

// FuzzParseProperties checks that the parser never panics, and that what it
// parses, written back out with escapes, parses to the same map.
func FuzzParseProperties(f *testing.F) {
	for _, s := range []string{
		"", "a=b", "a b", "a:b", "# c\n! d\n", "k=v\\\n  w", `k=\u00e9`, `k=\u12`, "a\\", "\\",
		"sasl.jaas.config=x required username=\"u\" password=\"p\";\r\nb=2\rc",
		"  =x", "\\ key\\ = \\ v", "a=\\t\\n\\r\\f\\\\",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		m, err := ParseProperties(strings.NewReader(in))
		if err != nil {
			return
		}
		// Only valid UTF-8 round-trips through \u escapes.
		for k, v := range m {
			if !isBMPText(k) || !isBMPText(v) {
				return
			}
		}
		out := formatProperties(m)
		m2, err := ParseProperties(strings.NewReader(out))
		if err != nil {
			t.Fatalf("reparse %q: %v", out, err)
		}
		if !maps.Equal(m, m2) {
			t.Fatalf("round trip: %q -> %q -> %q", m, out, m2)
		}
	})
}

func isBMPText(s string) bool {
	for _, r := range s {
		if r == 0xFFFD || r > 0xFFFF {
			return false
		}
	}
	return true
}
