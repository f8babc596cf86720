package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestUnusedPropertiesWarning: properties kaudit does not use are named on
// stderr, once, with no value; the run goes on.
func TestUnusedPropertiesWarning(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(cfg, []byte("security.protocol=PLAINTEXT\nbootstrap.servers=elsewhere:9092\nssl.truststore.passwrd=tru5t-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "ledger", "--bootstrap-server", c.ListenAddrs()[0], "--topic", "events",
		"--command-config", cfg, "--command-property", "request.timeout.ms=30000")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	const want = "kaudit: warning: client properties kaudit does not use, ignored: bootstrap.servers, request.timeout.ms, ssl.truststore.passwrd\n"
	if strings.Count(stderr, want) != 1 {
		t.Errorf("stderr %q, want once %q", stderr, want)
	}
	if strings.Contains(stderr, "tru5t-s3cret") || strings.Contains(stderr, "elsewhere") {
		t.Errorf("stderr %q shows a value", stderr)
	}
}
