package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// rawBatch frames already compressed records as a v2 batch of n records
// with a correct CRC.
func rawBatch(attrs int16, n int32, lastDelta int32, records []byte) []byte {
	rb := kmsg.RecordBatch{Magic: 2, Attributes: attrs, LastOffsetDelta: lastDelta, NumRecords: n,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: records}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-logOverhead))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], castagnoli))
	return b
}

// encodeRecord is one record as it sits in a batch: varint length, body.
func encodeRecord(delta int32, value []byte) []byte {
	kr := kmsg.Record{OffsetDelta: delta, Value: value}
	enc := kr.AppendTo(nil)
	return append(binary.AppendVarint(nil, int64(len(enc)-1)), enc[1:]...)
}

// gzipRepeat gzips plain once and repeats the member times: a valid
// multi-member stream inflating to times×len(plain) bytes.
func gzipRepeat(t *testing.T, plain []byte, times int) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(plain)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Repeat(buf.Bytes(), times)
}

// TestDecompressionBomb: a batch of about 1 MB of gzip inflating to 1 GiB
// fails fast, as corruption, with little memory, whatever its records
// declare.
func TestDecompressionBomb(t *testing.T) {
	const inflated = 1 << 30
	zeros := make([]byte, 16<<20)
	// one small record followed by zeros
	first := encodeRecord(0, []byte("v"))
	trailing := gzipRepeat(t, append(first, zeros[:16<<20-len(first)]...), 1)
	trailing = append(trailing, gzipRepeat(t, zeros, inflated/len(zeros)-1)...)
	// many records of zeros, each well-formed: 1 GiB of them
	rec := encodeRecord(0, make([]byte, 1<<20-8))
	many := gzipRepeat(t, bytes.Repeat(rec, 16), inflated/(16*len(rec)))
	// one record declaring a 1 GiB value
	huge := gzipRepeat(t, binary.AppendVarint(nil, inflated), 1)
	huge = append(huge, gzipRepeat(t, zeros, inflated/len(zeros))...)
	cases := []struct {
		name    string
		n       int32
		records []byte
		want    error
	}{
		{"bytes after the records", 1, trailing, audit.ErrCorrupt},
		{"records past the cap", 1 << 20, many, ErrTooLarge},
		{"a record declaring 1 GiB", 1, huge, ErrTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.records) > 2<<20 {
				t.Fatalf("the bomb is %d bytes compressed", len(c.records))
			}
			b := rawBatch(1, c.n, c.n, c.records) // attributes 1: gzip
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, _, _, err := DecodeBatch(b, audit.TopicPartition{Topic: "t"})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, c.want) {
				t.Fatalf("DecodeBatch of a %d-byte gzip bomb: %v, want an error wrapping %v", len(c.records), err, c.want)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes compressed: %v in %v, %d MiB allocated", len(c.records), err, took, alloc>>20)
			if alloc > 4*uint64(MaxBatchBytes) {
				t.Errorf("allocated %d MiB, want at most %d", alloc>>20, 4*MaxBatchBytes>>20)
			}
			if took > 5*time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}

// TestRecordCountBound: a batch cannot hold more records than offsets.
func TestRecordCountBound(t *testing.T) {
	b := rawBatch(0, 3, 1, append(append(encodeRecord(0, nil), encodeRecord(1, nil)...), encodeRecord(1, nil)...))
	if _, _, _, err := DecodeBatch(b, audit.TopicPartition{Topic: "t"}); !errors.Is(err, audit.ErrCorrupt) {
		t.Fatalf("3 records in 2 offsets: %v, want corrupt", err)
	}
}

// TestZstdBomb: a zstd batch inflating past MaxBatchBytes fails as too
// large, with about MaxBatchBytes allocated at most.
func TestZstdBomb(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	records := enc.EncodeAll(make([]byte, 2*MaxBatchBytes), nil)
	b := rawBatch(4, 1, 0, records) // attributes 4: zstd
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, _, err = DecodeBatch(b, audit.TopicPartition{Topic: "t"})
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d bytes of zstd: %v, %d MiB allocated", len(records), err, alloc>>20)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("DecodeBatch: %v, want %v", err, ErrTooLarge)
	}
	if alloc > 2*uint64(MaxBatchBytes) {
		t.Fatalf("allocated %d MiB", alloc>>20)
	}
}
