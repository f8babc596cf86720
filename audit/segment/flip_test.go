package segment

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

// TestFlippedBytes flips every byte of a log dir's segment in turn: the
// partition reads its offsets as before, or the damage shows (an error
// wrapping audit.ErrCorrupt naming the file, a problem, or a torn tail);
// it never reads silently as other offsets, which would look like an
// offset gap, unless the byte is in a base offset, which no checksum
// covers.
func TestFlippedBytes(t *testing.T) {
	base := t.TempDir()
	writeLogDir(t, base, sourcetest.Fixture())
	path := segmentPath(t, base, tp0, 0)
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	offsets := func(recs []audit.Record) []int64 {
		var out []int64
		for _, r := range recs {
			out = append(out, r.Offset)
		}
		return out
	}
	want := offsets(collectAll(t, mustOpen(t, base), tp0, 0, -1))
	// a batch's base offset is the one field no checksum covers: a
	// changed one reads as other offsets, as it would to Kafka
	baseOffset := func(i int) bool {
		for _, p := range batchPositions(t, orig) {
			if int64(i) >= p && int64(i) < p+8 {
				return true
			}
		}
		return false
	}
	counts := map[string]int{}
	for i := range orig {
		b := slices.Clone(orig)
		b[i] ^= 0x10
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := OpenDirs(base)
		if err != nil {
			t.Fatal(err)
		}
		var got []audit.Record
		var rerr error
		for r, err := range d.Records(t.Context(), tp0, 0, -1) {
			if err != nil {
				rerr = err
				break
			}
			got = append(got, r)
		}
		var fe *FileError
		switch {
		case rerr != nil && (errors.Is(rerr, audit.ErrCorrupt) || errors.Is(rerr, ErrOldFormat)) && errors.As(rerr, &fe) && fe.File == path:
			counts["error naming the file"]++
		case rerr != nil:
			t.Errorf("byte %d: %v; want an error wrapping %v and naming %s", i, rerr, audit.ErrCorrupt, path)
		case len(d.Problems()) > 0:
			counts["problem"]++
		case len(d.TornTails()) > 0:
			counts["torn tail"]++
		case slices.Equal(offsets(got), want):
			counts["same offsets"]++
		case baseOffset(i):
			counts["base offset changed"]++
		default:
			t.Errorf("byte %d: offsets %v, want %v or the damage shown", i, offsets(got), want)
		}
	}
	t.Logf("%d bytes flipped: %v", len(orig), counts)
}
