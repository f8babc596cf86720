package segment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

// TestSpecialFiles: a segment, index or checkpoint that is a symlink to a
// device (/dev/zero never ends) is reported as unreadable, naming the
// file, within a second: never read.
func TestSpecialFiles(t *testing.T) {
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			t.Skipf("%s: %v", dev, err)
		}
	}
	for _, tc := range []struct {
		name     string
		file     func(root string) string
		optional bool // an index only speeds reads up: read without it
	}{
		{"segment", func(root string) string { return segmentPath(t, root, tp0, 0) }, false},
		{"index", func(root string) string { return strings.TrimSuffix(segmentPath(t, root, tp0, 0), ".log") + ".index" }, true},
		{"leader epochs", func(root string) string {
			return filepath.Join(filepath.Dir(segmentPath(t, root, tp0, 0)), LeaderEpochCheckpoint)
		}, false},
		{"partition metadata", func(root string) string {
			return filepath.Join(filepath.Dir(segmentPath(t, root, tp0, 0)), PartitionMetadataFile)
		}, false},
		{"log dir checkpoint", func(root string) string { return filepath.Join(root, LogStartCheckpoint) }, false},
	} {
		for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
			t.Run(tc.name+" "+dev, func(t *testing.T) {
				root := t.TempDir()
				writeLogDir(t, root, sourcetest.Fixture())
				path := tc.file(root)
				os.Remove(path)
				if err := os.Symlink(dev, path); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					d, err := OpenDirs(root)
					if err != nil {
						done <- err
						return
					}
					for _, err := range d.Records(t.Context(), tp0, 0, -1) {
						if err != nil {
							done <- err
							return
						}
					}
					done <- nil
				}()
				select {
				case err := <-done:
					if tc.optional {
						if err != nil {
							t.Fatalf("got %v, want the records read without the index", err)
						}
						return
					}
					if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), path) {
						t.Fatalf("got %v, want an error naming %s and wrapping %v", err, path, ErrNotRegular)
					}
					if !errors.Is(err, audit.ErrCorrupt) {
						t.Fatalf("%v does not wrap %v", err, audit.ErrCorrupt)
					}
				case <-time.After(2 * time.Second):
					t.Fatalf("reading a log dir with %s as a symlink to %s did not end", path, dev)
				}
			})
		}
	}
}
