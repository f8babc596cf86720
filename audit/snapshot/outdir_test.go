package snapshot

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// tree is every file of dir with its bytes.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			out[p] = string(b)
		} else {
			out[p+"/"] = ""
		}
		return nil
	})
	return out
}

// TestCaptureRefusesDir: capture writes only into a new or empty directory
// or a bundle it resumes; a broker's log dir, a non-empty directory and a
// bundle with foreign files are refused and left byte for byte as they
// were.
func TestCaptureRefusesDir(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"broker log dir", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "meta.properties"), []byte("node.id=1\n"), 0o644)
			os.MkdirAll(filepath.Join(dir, tp0.Topic+"-0"), 0o755)
			os.WriteFile(filepath.Join(dir, tp0.Topic+"-0", "00000000000000000000.log"), []byte("broker data"), 0o644)
		}},
		{"broker log dir with a manifest", func(t *testing.T, dir string) {
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			os.WriteFile(filepath.Join(dir, "replication-offset-checkpoint"), []byte("0\n0\n"), 0o644)
		}},
		{"a new dir inside a broker's log dir", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "meta.properties"), []byte("node.id=1\n"), 0o644)
		}},
		{"partition dirs, no manifest", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, tp0.Topic+"-0"), 0o755)
			os.WriteFile(filepath.Join(dir, tp0.Topic+"-0", "00000000000000000000.log"), []byte("broker data"), 0o644)
		}},
		{"a file, no manifest", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
		}},
		{"bundle with a foreign file", func(t *testing.T, dir string) {
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			os.WriteFile(filepath.Join(dir, partitionDir(tp0), "00000000000000000000.index"), []byte("x"), 0o644)
		}},
		{"bundle with a foreign dir", func(t *testing.T, dir string) {
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			os.MkdirAll(filepath.Join(dir, "other-0"), 0o755)
		}},
		{"bundle of another app", func(t *testing.T, dir string) {
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "other", Topics: []string{tp0.Topic}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			before := tree(t, dir)
			out := dir
			if tc.name == "a new dir inside a broker's log dir" {
				out = filepath.Join(dir, "evidence", "tonight")
			}
			_, err := Capture(t.Context(), fixtureSource(t), CaptureOptions{Dir: out, AppID: "conf"})
			if !errors.Is(err, ErrOutDir) {
				t.Fatalf("Capture into %s: %v, want an error wrapping %v", tc.name, err, ErrOutDir)
			}
			if after := tree(t, dir); !maps.Equal(before, after) {
				t.Fatalf("the refused directory changed:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"new dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "new") }},
		{"empty dir", func(t *testing.T) string { return t.TempDir() }},
		{"bundle to resume", func(t *testing.T) string {
			dir := t.TempDir()
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf", MaxBytes: 1})
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m := capture(t, fixtureSource(t), CaptureOptions{Dir: tc.dir(t), AppID: "conf"}); !m.Complete {
				t.Fatal("capture incomplete")
			}
		})
	}
}
