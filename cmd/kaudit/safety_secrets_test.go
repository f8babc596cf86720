package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

const (
	saslPass   = "s3cr3t-p4ss"
	wrongPass  = "wr0ng-p4ss-x9"
	regPass    = "r3g-s3cr3t-77"
	regWrong   = "r3g-wr0ng-88"
	saslRepart = "shop-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition"
)

// allSecrets are every password the secrets tests hand to kaudit.
var allSecrets = []string{saslPass, wrongPass, regPass, regWrong}

// noSecret fails the test when text shows any of the passwords.
func noSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range allSecrets {
		if strings.Contains(text, s) {
			i := strings.Index(text, s)
			t.Errorf("%s shows a password: …%s…", where, text[max(0, i-120):min(len(text), i+len(s)+40)])
		}
	}
}

// noSecretInDir fails the test when any file under dir shows a password.
func noSecretInDir(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		noSecret(t, path, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// saslCluster starts a kfake broker that requires SASL/PLAIN (admin,
// saslPass) and writes a small app "shop" through it: a source topic, a
// repartition topic with a committed and an open transaction, and the
// group's offsets.
func saslCluster(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), loopback(), kfake.EnableSASL(), kfake.Superuser("PLAIN", "admin", saslPass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	mech := kgo.SASL(plain.Auth{User: "admin", Pass: saslPass}.AsMechanism())
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), mech, kgo.TransactionalID("shop-0_0"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	for _, topic := range []string{"orders-v1", saslRepart} {
		if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	for i, commit := range []bool{true, false} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, topic := range []string{"orders-v1", saslRepart} {
			r := &kgo.Record{Topic: topic, Key: []byte{byte('a' + i)}, Value: []byte(`{"orderId":"o1"}`)}
			if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if !commit {
			break // left open
		}
		if err := cl.EndTransaction(t.Context(), kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	plainCl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), mech)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plainCl.Close)
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders-v1", Partition: 0, At: 1, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: saslRepart, Partition: 0, At: 1, LeaderEpoch: -1})
	if _, err := kadm.NewClient(plainCl).CommitOffsets(t.Context(), "shop", offs); err != nil {
		t.Fatal(err)
	}
	return strings.Join(c.ListenAddrs(), ",")
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSafetySecrets runs the commands that reach a SASL cluster with the
// right and a wrong password, given in every way kaudit takes one, and
// checks that no password shows in stdout, stderr, a report in any format
// or a capture bundle.
func TestSafetySecrets(t *testing.T) {
	bs := saslCluster(t)
	dir := t.TempDir()
	jaas := func(pass string) string {
		return `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + pass + `";`
	}
	configFile := func(name, pass string) string {
		return writeFile(t, dir, name, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="+jaas(pass)+"\n")
	}
	type auth struct {
		name string
		args []string
		ok   bool // the password is right: the command must get through
	}
	auths := []auth{
		{"config file", []string{"--command-config", configFile("right.properties", saslPass)}, true},
		{"config file wrong password", []string{"--command-config", configFile("wrong.properties", wrongPass)}, false},
		{"properties", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property", "sasl.mechanism=PLAIN",
			"--command-property", "sasl.username=admin", "--command-property", "sasl.password=" + saslPass}, true},
		{"properties wrong password", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property", "sasl.mechanism=PLAIN",
			"--command-property", "sasl.username=admin", "--command-property", "sasl.password=" + wrongPass}, false},
		{"property overrides the file's password", []string{"--command-config", configFile("right2.properties", saslPass),
			"--command-property", "sasl.jaas.config=" + jaas(wrongPass)}, false},
	}
	type command struct {
		name string
		args []string
	}
	commands := []command{
		{"ledger table", []string{"ledger", "--topic", saslRepart}},
		{"ledger json", []string{"ledger", "--topic", saslRepart, "--format", "json", "--offsets", "0-5"}},
		{"ledger csv", []string{"ledger", "--topic", "orders-v1", "--format", "csv"}},
		{"txns table", []string{"txns", "--app-id", "shop"}},
		{"txns json", []string{"txns", "--app-id", "shop", "--format", "json"}},
		{"topology", []string{"topology", "--app-id", "shop", "--format", "json"}},
		{"init", []string{"init", "--app-id", "shop"}},
	}
	for _, f := range []string{"md", "json", "csv", "table", "prom"} {
		commands = append(commands, command{"diff " + f, []string{"diff", "--app-id", "shop", "--format", f}})
	}
	for _, a := range auths {
		// A wrong password fails only when the client gives up: keep that
		// short, and wait for those runs side by side. A right one never
		// waits for its timeout: room for a loaded machine.
		timeout := "15s"
		if !a.ok {
			timeout = "400ms"
		}
		for _, cmd := range commands {
			if !a.ok && strings.HasPrefix(cmd.name, "diff ") && cmd.name != "diff json" {
				continue // no report is rendered without the cluster
			}
			t.Run(a.name+"/"+cmd.name, func(t *testing.T) {
				if !a.ok {
					t.Parallel()
				}
				args := append(append(append([]string{}, cmd.args...), "--bootstrap-server", bs, "--timeout", timeout), a.args...)
				out, errOut, code := runCLI(t, args...)
				t.Logf("exit %d: %s", code, strings.TrimSpace(errOut))
				noSecret(t, "stdout", out)
				noSecret(t, "stderr", errOut)
				switch {
				case a.ok && (code == exitUsage || code == exitNotRun):
					t.Errorf("right password: exit %d, stderr %s", code, errOut)
				case !a.ok && code != exitNotRun:
					t.Errorf("wrong password: exit %d, want %d; stderr %s", code, exitNotRun, errOut)
				}
			})
		}
		t.Run(a.name+"/diff to files", func(t *testing.T) {
			formats := []string{"md", "json", "csv", "table", "prom"}
			if !a.ok {
				t.Parallel()
				formats = formats[:1]
			}
			outDir := t.TempDir()
			for _, f := range formats {
				args := append([]string{"diff", "--app-id", "shop", "--format", f, "--output", filepath.Join(outDir, "report."+f),
					"--bootstrap-server", bs, "--timeout", timeout}, a.args...)
				out, errOut, _ := runCLI(t, args...)
				noSecret(t, "stdout", out)
				noSecret(t, "stderr", errOut)
			}
			n := noSecretInDir(t, outDir)
			if a.ok && n < 5 {
				t.Errorf("%d report files written, want at least 5", n)
			}
			if !a.ok && n != 0 {
				t.Errorf("%d files left in the output directory by a run that could not read the cluster", n)
			}
		})
		t.Run(a.name+"/capture", func(t *testing.T) {
			if !a.ok {
				t.Parallel()
			}
			bundle := filepath.Join(t.TempDir(), "bundle")
			args := append([]string{"capture", "--app-id", "shop", "--out", bundle, "--bootstrap-server", bs, "--timeout", timeout}, a.args...)
			out, errOut, code := runCLI(t, args...)
			noSecret(t, "stdout", out)
			noSecret(t, "stderr", errOut)
			if a.ok && code != exitClean {
				t.Errorf("capture: exit %d, stderr %s", code, errOut)
			}
			if _, err := os.Stat(bundle); err == nil {
				noSecretInDir(t, bundle)
			}
		})
	}

	t.Run("malformed credentials", func(t *testing.T) {
		for _, tt := range []struct {
			name string
			args []string
		}{
			{"unterminated quote", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property",
				`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + saslPass}},
			{"no semicolon", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property",
				`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="` + saslPass + `"`}},
			{"unknown login module", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property", "sasl.mechanism=PLAIN", "--command-property",
				`sasl.jaas.config=com.example.Login` + saslPass + ` required username="admin" password="` + saslPass + `";`}},
			{"mechanism mismatch", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property", "sasl.mechanism=SCRAM-SHA-256",
				"--command-property", "sasl.jaas.config=" + jaas(saslPass)}},
			{"unknown mechanism", []string{"--command-property", "security.protocol=SASL_PLAINTEXT", "--command-property", "sasl.mechanism=GSSAPI",
				"--command-property", "sasl.password=" + saslPass}},
			{"password without a key", []string{"--command-property", saslPass}},
			{"config line without separator", []string{"--command-config", writeFile(t, dir, "bad.properties",
				"security.protocol=SASL_PLAINTEXT\nsasl.password\\\n"+saslPass+"\n\\u12"+saslPass+"\n")}},
			{"config with a bad escape", []string{"--command-config", writeFile(t, dir, "esc.properties",
				"sasl.jaas.config=x required password=\""+saslPass+"\\uZZZZ\";\n")}},
			{"ssl key password, no key", []string{"--command-property", "security.protocol=SSL", "--command-property", "ssl.key.password=" + saslPass,
				"--command-property", "ssl.keystore.location=/nonexistent/client.p12", "--command-property", "ssl.keystore.password=" + saslPass}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				for _, cmd := range []string{"ledger", "diff", "txns"} {
					args := append([]string{cmd, "--topic", "orders-v1", "--bootstrap-server", bs, "--timeout", "400ms"}, tt.args...)
					if cmd != "ledger" {
						args = append([]string{cmd, "--app-id", "shop", "--bootstrap-server", bs, "--timeout", "400ms"}, tt.args...)
					}
					out, errOut, code := runCLI(t, args...)
					t.Logf("%s: exit %d: %s", cmd, code, strings.TrimSpace(errOut))
					noSecret(t, cmd+" stdout", out)
					noSecret(t, cmd+" stderr", errOut)
					if code == exitClean || code == exitFindings {
						t.Errorf("%s: exit %d with malformed credentials; stderr %s", cmd, code, errOut)
					}
				}
			})
		}
	})
}

// TestSafetySecretsRegistry audits the Avro demo app against a Schema
// Registry that wants basic auth, with a wrong password (401 on every
// lookup) given as basic.auth.user.info and inside the URL: neither
// password may show, and the verdict is never clean.
func TestSafetySecretsRegistry(t *testing.T) {
	reg := fakeregistry.NewServer(t)
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := fakeapp.SeedScenario("shop", 60)
	s.Encode = enc.Encode
	c, _, err := fakeapp.WriteFake(t.Context(), s, loopback())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	reg.RequireBasicAuth("user", regPass)
	bs := strings.Join(c.ListenAddrs(), ",")

	dir := t.TempDir()
	for _, name := range []string{"kaudit.yaml", "topology.txt"} {
		data, err := demoFiles.ReadFile("demo/" + name)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, string(data))
	}
	spec := filepath.Join(dir, "kaudit.yaml")
	withUser := strings.Replace(reg.URL, "http://", "http://user:"+regWrong+"@", 1)
	cfg := writeFile(t, dir, "client.properties", "basic.auth.user.info=user:"+regWrong+"\n")

	for _, tt := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"user info property, right", []string{"--schema-registry-url", reg.URL, "--command-property", "basic.auth.user.info=user:" + regPass}, true},
		{"user info property", []string{"--schema-registry-url", reg.URL, "--command-property", "basic.auth.user.info=user:" + regWrong}, false},
		{"user info in the config file", []string{"--schema-registry-url", reg.URL, "--command-config", cfg}, false},
		{"password in the URL", []string{"--schema-registry-url", withUser}, false},
		{"password in the URL, source URL", []string{"--schema-registry-url", withUser, "--command-property", "basic.auth.credentials.source=URL"}, false},
		{"malformed user info", []string{"--schema-registry-url", reg.URL, "--command-property", "basic.auth.user.info=" + regWrong}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range []string{"json", "md", "csv", "prom", "table"} {
				args := append([]string{"diff", "--spec", spec, "--bootstrap-server", bs, "--timeout", "2s", "--format", f}, tt.args...)
				out, errOut, code := runCLI(t, args...)
				if f == "json" {
					t.Logf("exit %d, stderr %q", code, errOut)
					for _, l := range strings.Split(out, "\n") {
						if strings.Contains(l, "401") || strings.Contains(l, "user:password") {
							t.Logf("%.300s", l)
						}
					}
				}
				noSecret(t, f+" stdout", out)
				noSecret(t, f+" stderr", errOut)
				// csv holds the findings only and prom the metrics: the
				// missing evidence shows in the exit code there.
				said := f == "csv" || f == "prom" || strings.Contains(out+errOut, "401") ||
					strings.Contains(strings.ToLower(out+errOut), "unauthorized") || strings.Contains(out+errOut, "user:password")
				if !tt.ok && (code == exitClean || code == exitFindings || !said) {
					t.Errorf("%s: exit %d, the 401 is not reported; stderr %s; stdout %.400s", f, code, errOut, out)
				}
				if tt.ok && (code == exitUsage || code == exitNotRun) {
					t.Errorf("%s: right password: exit %d; stderr %s", f, code, errOut)
				}
			}
			for _, args := range [][]string{
				{"ledger", "--topic", "orders-v1", "--partition", "0", "--offsets", "0-3", "--value-serde", "avro", "--format", "json"},
				{"ledger", "--topic", "orders-v1", "--partition", "0", "--offsets", "0-3", "--value-serde", "avro"},
			} {
				out, errOut, _ := runCLI(t, append(append(args, "--bootstrap-server", bs, "--timeout", "2s"), tt.args...)...)
				noSecret(t, "ledger stdout", out)
				noSecret(t, "ledger stderr", errOut)
			}
		})
	}
}

// TestSafetySecretsEnv gives the password through KAUDIT_* environment
// variables, then asks for help and makes usage errors: the value must not
// show anywhere.
func TestSafetySecretsEnv(t *testing.T) {
	bs := saslCluster(t)
	dir := t.TempDir()
	cfg := writeFile(t, dir, "client.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password="+saslPass+"\n")
	t.Setenv("KAUDIT_COMMAND_PROPERTY", "sasl.password="+saslPass)
	t.Setenv("KAUDIT_COMMAND_CONFIG", cfg)
	t.Setenv("KAUDIT_SCHEMA_REGISTRY_URL", "http://user:"+regPass+"@127.0.0.1:1")
	for _, args := range [][]string{
		{"ledger", "--bootstrap-server", bs, "--topic", saslRepart, "--format", "json"},
		{"txns", "--bootstrap-server", bs, "--app-id", "shop"},
		{"diff", "--bootstrap-server", bs, "--app-id", "shop", "--format", "md"},
		{"--help"},
		{"ledger", "--help"},
		{"diff", "--help"},
		{"capture", "--help"},
		{"ledger", "--bootstrap-server", bs}, // a required flag missing
		{"diff", "--bootstrap-server", bs, "--no-such-flag"}, // an unknown flag
		{"no-such-command"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			out, errOut, code := runCLI(t, args...)
			t.Logf("exit %d", code)
			noSecret(t, "stdout", out)
			noSecret(t, "stderr", errOut)
			if args[0] == "ledger" && len(args) > 4 && code != exitClean && code != exitFindings {
				t.Errorf("exit %d with the password from the environment; stderr %s", code, errOut)
			}
		})
	}
}
