package snapshot

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// agree makes the whole manifest agree with the files (each file's size
// and sha256, each partition's bytes), as a careful editor of a bundle
// would: only the batches themselves and the offsets and record counts
// the capture wrote can tell then.
func agree(t *testing.T, dir string, edit func(m *Manifest)) {
	t.Helper()
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(m)
	}
	bytesOf := map[string]int64{}
	for i, f := range m.Files {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		m.Files[i].Size, m.Files[i].SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
		d, _, _ := strings.Cut(f.Path, "/")
		bytesOf[d] += int64(len(b))
	}
	for _, p := range m.allPartitions() {
		p.Bytes = bytesOf[partitionDir(p.TP())]
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastBatchAt is the byte where a segment's last batch starts.
func lastBatchAt(b []byte) int {
	last := 0
	for p := 0; p+12 <= len(b); {
		last = p
		p += 12 + int(int32(binary.BigEndian.Uint32(b[p+8:])))
	}
	return last
}

// TestBundleDamageTheManifestHides (issue AF, item 10): a segment listed
// twice, or a copy of it listed as a later segment (offsets overlapping),
// and batches gone from the end of a compacted partition's log (its last
// COMMIT marker), with the manifest made to agree with the files, are a
// damaged bundle: the partition is unreadable from the moment the bundle
// is opened, never read as it is (before: read whole, or the missing
// marker taken for Kafka's transaction-inconsistent). So is a batch whose
// CRC fails, wherever it is: its records are never handed on to be
// decoded.
func TestBundleDamageTheManifestHides(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir, rel string)
		want   string // in the problem's detail; "" for none
	}{
		{"untouched", func(*testing.T, string, string) {}, ""},
		{"listed twice", func(t *testing.T, dir, rel string) {
			agree(t, dir, func(m *Manifest) {
				i := slices.IndexFunc(m.Files, func(f File) bool { return f.Path == rel })
				m.Files = slices.Insert(m.Files, i+1, m.Files[i])
			})
		}, "is listed twice in the manifest"},
		{"a copy listed as a later segment", func(t *testing.T, dir, rel string) {
			b, _ := os.ReadFile(filepath.Join(dir, rel))
			cp := path.Join(path.Dir(rel), "00000000000000000001.log")
			if err := os.WriteFile(filepath.Join(dir, cp), b, 0o644); err != nil {
				t.Fatal(err)
			}
			agree(t, dir, func(m *Manifest) { m.Files = append(m.Files, File{Path: cp}) })
		}, "its batches hold 20 records, the manifest says the capture copied 10"},
		{"the last batch gone from a compacted log, manifest agreeing", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, b[:lastBatchAt(b)], 0o644); err != nil {
				t.Fatal(err)
			}
			agree(t, dir, func(m *Manifest) { setCompacted(m, tp0.Topic) })
		}, "records, the manifest says the capture copied"},
		{"a middle batch's CRC, manifest agreeing", func(t *testing.T, dir, rel string) {
			p := filepath.Join(dir, rel)
			b, _ := os.ReadFile(p)
			b[lastBatchAt(b)-1] ^= 0x5a // the last byte of the batch before the last
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			agree(t, dir, nil)
		}, "crc32c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			rel, _ := segmentOf(t, dir)
			tc.damage(t, dir, rel)
			s, err := OpenContext(t.Context(), dir)
			if err != nil {
				t.Fatal(err)
			}
			var details []string
			for _, f := range s.Problems() {
				if f.Cause != audit.CauseUnreadable || f.Topic != tp0.Topic || f.Partition != tp0.Partition {
					t.Errorf("problem %+v, want only unreadable findings on %s", f, tp0)
				}
				details = append(details, f.Detail)
			}
			if tc.want == "" {
				if len(details) > 0 {
					t.Fatalf("problems %q on an untouched bundle", details)
				}
				return
			}
			if len(details) == 0 || !strings.Contains(strings.Join(details, "\n"), tc.want) {
				t.Fatalf("problems %q, want an unreadable finding on %s saying %q", details, tp0, tc.want)
			}
			if _, err := readAll(t.Context(), s, tp0); err == nil {
				t.Fatalf("reading %s succeeded; want it refused", tp0)
			}
		})
	}
}
