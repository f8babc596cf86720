package segment

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// writeLogDir writes recs into root as a broker log dir: one partition dir
// per topic partition, a new segment at every offset of splits that starts
// a batch.
func writeLogDir(t testing.TB, root string, recs []audit.Record, splits ...int64) {
	t.Helper()
	byTP := map[audit.TopicPartition][]audit.Record{}
	var order []audit.TopicPartition
	for _, r := range recs {
		if _, ok := byTP[r.TP()]; !ok {
			order = append(order, r.TP())
		}
		byTP[r.TP()] = append(byTP[r.TP()], r)
	}
	for _, tp := range order {
		dir := filepath.Join(root, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var w *Writer
		for _, r := range byTP[tp] {
			if w == nil || (r.Offset == r.Batch.BaseOffset && slices.Contains(splits, r.Offset)) {
				if w != nil {
					if err := w.Close(); err != nil {
						t.Fatal(err)
					}
				}
				var err error
				if w, err = CreateSegment(filepath.Join(dir, SegmentName(r.Batch.BaseOffset))); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func mustOpen(t testing.TB, dirs ...string) *Dir {
	t.Helper()
	d, err := OpenDirs(dirs...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func collectAll(t testing.TB, d *Dir, tp audit.TopicPartition, from, to int64) []audit.Record {
	t.Helper()
	var out []audit.Record
	for r, err := range d.Records(t.Context(), tp, from, to) {
		if err != nil {
			t.Fatalf("Records(%s): %v", tp, err)
		}
		out = append(out, r)
	}
	return out
}

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
