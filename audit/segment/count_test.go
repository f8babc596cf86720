package segment

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// segmentOf is the fixture's batches of one partition, one after another.
func segmentOf(t testing.TB, batches [][]byte) []byte {
	t.Helper()
	return bytes.Join(batches, nil)
}

// TestCheckSegment: every batch whole with a valid CRC, or an error
// wrapping audit.ErrCorrupt naming the batch's byte; the records summed.
func TestCheckSegment(t *testing.T) {
	batches := fixtureBatches(t)
	good := segmentOf(t, batches[:3])
	want := int64(0)
	for _, b := range batches[:3] {
		want += int64(int32(binary.BigEndian.Uint32(b[57:61])))
	}
	second := len(batches[0])
	for _, tc := range []struct {
		name    string
		mutate  func(b []byte) []byte
		records int64 // -1: an error
		at      int64
	}{
		{"whole", func(b []byte) []byte { return b }, want, 0},
		{"empty", func([]byte) []byte { return nil }, 0, 0},
		{"a CRC-covered byte of the second batch", func(b []byte) []byte { b[second+40] ^= 0x5a; return b }, -1, int64(second)},
		{"the second batch's CRC", func(b []byte) []byte { b[second+17] ^= 0xff; return b }, -1, int64(second)},
		{"cut inside the second batch", func(b []byte) []byte { return b[:second+30] }, -1, int64(second)},
		{"cut inside the second header", func(b []byte) []byte { return b[:second+10] }, -1, int64(second)},
		{"magic 1", func(b []byte) []byte { b[second+16] = 1; return b }, -1, int64(second)},
		{"length past the file", func(b []byte) []byte { binary.BigEndian.PutUint32(b[second+8:], 1<<29); return b }, -1, int64(second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "00000000000000000000.log")
			if err := os.WriteFile(p, tc.mutate(bytes.Clone(good)), 0o644); err != nil {
				t.Fatal(err)
			}
			n, err := CheckSegment(context.Background(), p)
			if tc.records >= 0 {
				if err != nil || n != tc.records {
					t.Fatalf("%d records, %v; want %d, no error", n, err, tc.records)
				}
				return
			}
			var fe *FileError
			if !errors.Is(err, audit.ErrCorrupt) || !errors.As(err, &fe) || fe.Pos != tc.at {
				t.Fatalf("error %v; want one wrapping audit.ErrCorrupt at byte %d", err, tc.at)
			}
		})
	}
}

// FuzzCheckSegment: any bytes give a record count or an error, never a
// panic; bytes whose every batch decodes give no error and the records
// the batches hold.
func FuzzCheckSegment(f *testing.F) {
	batches := fixtureBatches(f)
	f.Add(segmentOf(f, batches))
	f.Add(segmentOf(f, batches)[:len(batches[0])+20])
	f.Add(batches[len(batches)-1])
	f.Add([]byte{})
	dir := f.TempDir()
	tp := audit.TopicPartition{Topic: "t"}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(dir, "00000000000000000000.log")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		n, err := CheckSegment(context.Background(), p)
		if err != nil && !errors.Is(err, audit.ErrCorrupt) {
			t.Fatalf("error %v does not wrap audit.ErrCorrupt", err)
		}
		var records int64
		for rest := b; len(rest) > 0; {
			_, recs, used, derr := DecodeBatch(rest, tp)
			if derr != nil || used == 0 {
				return // a batch that does not decode: CheckSegment may say either
			}
			records += int64(len(recs))
			rest = rest[used:]
		}
		if err != nil || n != records {
			t.Fatalf("CheckSegment: %d records, %v; the batches decode to %d", n, err, records)
		}
	})
}
