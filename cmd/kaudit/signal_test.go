package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit/snapshot"
)

// buildKaudit builds the binary once per test into a temporary dir.
func buildKaudit(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kaudit")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestSignalMidRead starts the built binary on evidence that takes long to
// read, sends SIGTERM once it is reading, and expects exit 130 within a
// second: every read loop honours cancellation.
func TestSignalMidRead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildKaudit(t)

	// a bundle whose one .log is a 64 GiB sparse file that the manifest
	// lists with that size: opening it hashes 64 GiB
	snap := copyTree(t, bad("snapshot/base"))
	const rel = "orders-v1-1/00000000000000000000.log"
	if err := os.Truncate(filepath.Join(snap, filepath.FromSlash(rel)), 64<<30); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	mp := filepath.Join(snap, snapshot.ManifestFile)
	mb, err := os.ReadFile(mp)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(mp, editManifest(t, mb, func(m *snapshot.Manifest) {
		for i := range m.Files {
			if m.Files[i].Path == rel {
				m.Files[i].Size = 64 << 30
			}
		}
	}), 0o644)

	// a live cluster whose every Fetch stalls until the test ends
	c, bs := cleanCluster(t, 20)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		select {
		case <-release:
		case <-time.After(20 * time.Second):
		}
		return nil, nil, false
	})

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"snapshot hashing", []string{"diff", "--snapshot", snap, "--app-id", "shop"}},
		{"live fetch", []string{"ledger", "--bootstrap-server", bs, "--topic", "orders-v1"}},
	} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
			t.Run(tc.name+" "+sig.String(), func(t *testing.T) {
				cmd := exec.Command(bin, tc.args...)
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				select {
				case err := <-done:
					t.Fatalf("kaudit ended before the signal: %v", err)
				case <-time.After(700 * time.Millisecond):
				}
				sent := time.Now()
				cmd.Process.Signal(sig)
				select {
				case err := <-done:
					took := time.Since(sent)
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
						t.Fatalf("kaudit ended with %v, want exit %d", err, exitInterrupted)
					}
					t.Logf("exit %d %v after %s", ee.ExitCode(), took, sig)
					if took > time.Second {
						t.Fatalf("kaudit took %v to stop after %s", took, sig)
					}
				case <-time.After(5 * time.Second):
					cmd.Process.Kill()
					t.Fatalf("kaudit ignored %s for 5 s", sig)
				}
			})
		}
	}
}
