package draft_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/draft"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
)

// copyDir copies a fixture's regular files into a temp dir.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestDraftOnDamagedEvidence (issue AF, item 2): with no topology, a
// draft whose evidence could not be read (a damaged segment of a bundle,
// a log dir's garbage leader-epoch-checkpoint or partition.metadata)
// ended in a nil pointer dereference looking for a table's output. It is
// a draft that names what it could not read.
func TestDraftOnDamagedEvidence(t *testing.T) {
	for _, tc := range []struct {
		name, fixture, appID, file, names string
		logDir                            bool
		damage                            func(b []byte) []byte
	}{
		{"a bundle's source segment cut", "../../testdata/apps/wordcount", "streams-wordcount",
			"streams-plaintext-input-0/00000000000000000000.log", "streams-plaintext-input/0", false,
			func(b []byte) []byte { return b[:len(b)/2] }},
		{"a bundle's changelog segment emptied", "../../testdata/apps/wordcount", "streams-wordcount",
			"streams-wordcount-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog-1/00000000000000000000.log",
			"streams-wordcount-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog/1", false,
			func([]byte) []byte { return nil }},
		{"a log dir's garbage leader-epoch-checkpoint", "../segment/testdata/real/kafka-3.6.2-logdir", "gen-app",
			"gen-app-store-changelog-0/leader-epoch-checkpoint", "gen-app-store-changelog-0", true,
			func([]byte) []byte { return []byte("7\nnot a checkpoint\n") }},
		{"a log dir's garbage partition.metadata", "../segment/testdata/real/kafka-4.1.1-logdir", "gen-app",
			"gen.orders-0/partition.metadata", "gen.orders-0", true,
			func([]byte) []byte { return []byte("version: x\n") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, tc.fixture)
			p := filepath.Join(dir, filepath.FromSlash(tc.file))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			var src audit.Source
			if tc.logDir {
				src, err = segment.OpenDirs(dir)
			} else {
				src, err = snapshot.Open(dir)
			}
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			if err := draft.Write(t.Context(), &out, src, draft.Options{AppID: tc.appID}); err != nil {
				t.Fatalf("draft: %v", err)
			}
			_, notes, _ := strings.Cut(out.String(), "# Read from the evidence:\n")
			if !strings.Contains(notes, tc.names) {
				t.Errorf("the draft's notes do not name %s:\n%s", tc.names, out.String())
			}
		})
	}
}
