package segment

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

func fixtureBatches(f testing.TB) [][]byte {
	var out [][]byte
	var cur []audit.Record
	flush := func() {
		if len(cur) > 0 {
			b, err := AppendBatch(nil, cur)
			if err != nil {
				f.Fatal(err)
			}
			out = append(out, b)
		}
		cur = nil
	}
	for _, r := range sourcetest.Fixture() {
		if len(cur) > 0 && (cur[0].Batch.BaseOffset != r.Batch.BaseOffset || cur[0].Partition != r.Partition) {
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	for _, c := range []string{"gzip", "snappy", "lz4", "zstd"} {
		r := sourcetest.Fixture()[0]
		r.Batch.Compression = c
		b, err := AppendBatch(nil, []audit.Record{r})
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecodeBatch: no panic, bytes consumed ≤ input, and a batch that
// decodes re-encodes to a batch that decodes to the same records.
func FuzzDecodeBatch(f *testing.F) {
	for _, b := range fixtureBatches(f) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	tp := audit.TopicPartition{Topic: "t"}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, recs, n, err := DecodeBatch(b, tp)
		if n < 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if err != nil || len(recs) == 0 {
			return
		}
		if h.LastOffsetDelta < 0 || h.Compression == "unknown" {
			return
		}
		for _, r := range recs {
			if r.Offset < h.BaseOffset || r.Offset > h.LastOffset() {
				return // AppendBatch refuses records outside their batch
			}
		}
		enc, err := AppendBatch(nil, recs)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		_, again, _, err := DecodeBatch(enc, tp)
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if d := sourcetest.Diff(again, recs); d != "" {
			t.Fatalf("round trip: %s", d)
		}
	})
}

func FuzzParseOffsetIndex(f *testing.F) {
	var seed []byte
	for _, e := range [][2]uint32{{0, 0}, {10, 4096}, {20, 9000}} {
		seed = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(seed, e[0]), e[1])
	}
	f.Add(seed, int64(100))
	f.Add(append(seed, 0, 0, 0), int64(0))
	f.Add(make([]byte, 64), int64(5))
	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		es, n, _ := ParseOffsetIndex(b, base)
		if n < 0 || n > len(b) || len(es)*offsetIndexEntryLen > len(b) {
			t.Fatalf("consumed %d of %d bytes, %d entries", n, len(b), len(es))
		}
	})
}

func FuzzParseTimeIndex(f *testing.F) {
	var seed []byte
	for _, e := range [][2]int64{{100, 0}, {150, 4}} {
		seed = binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(seed, uint64(e[0])), uint32(e[1]))
	}
	f.Add(seed, int64(0))
	f.Add(seed[:13], int64(7))
	f.Fuzz(func(t *testing.T, b []byte, base int64) {
		es, n, _ := ParseTimeIndex(b, base)
		if n < 0 || n > len(b) || len(es)*timeIndexEntryLen > len(b) {
			t.Fatalf("consumed %d of %d bytes, %d entries", n, len(b), len(es))
		}
	})
}

func FuzzParseTxnIndex(f *testing.F) {
	var seed []byte
	seed = binary.BigEndian.AppendUint16(seed, 0)
	for _, v := range []int64{2001, 6, 8, 6} {
		seed = binary.BigEndian.AppendUint64(seed, uint64(v))
	}
	f.Add(seed)
	f.Add(append(seed, seed[:20]...))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, n, err := ParseTxnIndex(b)
		if n < 0 || n > len(b) || len(es)*txnIndexEntryLen > n {
			t.Fatalf("consumed %d of %d bytes, %d entries", n, len(b), len(es))
		}
		if err == nil && n != len(b) {
			t.Fatalf("no error, consumed %d of %d bytes", n, len(b))
		}
	})
}

func FuzzParseProducerSnapshot(f *testing.F) {
	f.Add(AppendProducerSnapshot(nil, []ProducerEntry{{ProducerID: 1, CurrentTxnFirstOffset: -1}, {ProducerID: 2, CurrentTxnFirstOffset: 5}}))
	f.Add(AppendProducerSnapshot(nil, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, n, err := ParseProducerSnapshot(b)
		if n < 0 || n > len(b) || len(es)*producerEntryLen > len(b) {
			t.Fatalf("consumed %d of %d bytes, %d entries", n, len(b), len(es))
		}
		if err == nil && !bytes.Equal(AppendProducerSnapshot(nil, es), b) {
			t.Fatal("a snapshot that parses does not re-encode to itself")
		}
	})
}

func FuzzParseCheckpoints(f *testing.F) {
	f.Add([]byte("0\n2\na.b-c 0 10\nx 3 -1\n"))
	f.Add([]byte("0\n1\n4 120\n"))
	f.Add([]byte("version: 0\ntopic_id: abc\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := ParseOffsetCheckpoint(b); err == nil && len(m) > len(b) {
			t.Fatalf("%d entries from %d bytes", len(m), len(b))
		}
		if es, err := ParseLeaderEpochCheckpoint(b); err == nil && len(es) > len(b) {
			t.Fatalf("%d entries from %d bytes", len(es), len(b))
		}
		_, _ = ParsePartitionMetadata(b)
	})
}

// FuzzDecodeRecords fuzzes what lies behind a valid CRC: the attributes, the
// record count and the (possibly compressed) records.
func FuzzDecodeRecords(f *testing.F) {
	for _, b := range fixtureBatches(f) {
		f.Add(int16(binary.BigEndian.Uint16(b[21:])), int32(binary.BigEndian.Uint32(b[57:])), b[61:])
	}
	tp := audit.TopicPartition{Topic: "t"}
	f.Fuzz(func(t *testing.T, attrs int16, count int32, body []byte) {
		b := make([]byte, batchHeaderLen, batchHeaderLen+len(body))
		binary.BigEndian.PutUint32(b[8:], uint32(batchHeaderLen-logOverhead+len(body)))
		b[16] = 2
		binary.BigEndian.PutUint16(b[21:], uint16(attrs))
		binary.BigEndian.PutUint32(b[57:], uint32(count))
		b = append(b, body...)
		binary.BigEndian.PutUint32(b[17:], crc32Castagnoli(b[21:]))
		_, recs, n, err := DecodeBatch(b, tp)
		if n > len(b) || (err == nil && n != len(b)) {
			t.Fatalf("consumed %d of %d bytes (err %v)", n, len(b), err)
		}
		if err == nil && len(recs) != int(count) {
			t.Fatalf("%d records, count says %d", len(recs), count)
		}
	})
}
