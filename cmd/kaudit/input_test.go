package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestDeviceInputs: every file kaudit takes from a flag, given as a
// symlink to /dev/zero or /dev/urandom, is refused at once (exit 2)
// instead of read forever.
func TestDeviceInputs(t *testing.T) {
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			t.Skipf("%s: %v", dev, err)
		}
		dir := t.TempDir()
		link := filepath.Join(dir, "input")
		if err := os.Symlink(dev, link); err != nil {
			t.Fatal(err)
		}
		schemas := filepath.Join(dir, "schemas")
		os.Mkdir(schemas, 0o755)
		os.Symlink(dev, filepath.Join(schemas, "1.avsc"))
		snap := bad("snapshot/base")
		spec := bad("spec/good/kaudit.yaml")
		for _, args := range [][]string{
			{"diff", "--snapshot", snap, "--spec", link},
			{"diff", "--snapshot", snap, "--spec", spec, "--baseline", link},
			{"merge", link},
			{"topology", "--topology", link, "--app-id", "shop"},
			{"init", "--snapshot", snap, "--app-id", "shop", "--topology", link},
			{"ledger", "--bootstrap-server", "127.0.0.1:1", "--command-config", link, "--topic", "t"},
			{"capture", "--snapshot", snap, "--app-id", "shop", "--topology", link, "--out", filepath.Join(t.TempDir(), "b")},
			{"capture", "--snapshot", snap, "--app-id", "shop", "--schemas", schemas, "--out", filepath.Join(t.TempDir(), "b")},
		} {
			t.Run(dev+" "+args[0]+" "+args[len(args)-2], func(t *testing.T) {
				done := make(chan cliResult, 1)
				go func() { done <- runGuarded(t, args...) }()
				select {
				case res := <-done:
					if res.code != exitUsage {
						t.Errorf("exit %d, want %d; stderr %s", res.code, exitUsage, res.stderr)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("kaudit %v did not end", args)
				}
			})
		}
	}
}
