package segment

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

var (
	tp0 = audit.TopicPartition{Topic: sourcetest.Topic, Partition: 0}
	tp1 = audit.TopicPartition{Topic: sourcetest.Topic, Partition: 1}
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		splits []int64
	}{
		{"one segment", nil},
		{"three segments", []int64{3, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sourcetest.RunSourceTests(t, func(t *testing.T, recs []audit.Record) audit.RecordSource {
				root := t.TempDir()
				writeLogDir(t, root, recs, tc.splits...)
				return mustOpen(t, root)
			})
		})
	}
}

func TestBatchRoundTrip(t *testing.T) {
	tp := audit.TopicPartition{Topic: "t", Partition: 3}
	mk := func(b audit.Batch, n int) []audit.Record {
		var out []audit.Record
		for i := range n {
			r := audit.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: b.BaseOffset + int64(i)*2,
				Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(strings.Repeat("v", 100*i)),
				Timestamp: 1_700_000_000_000 - int64(i), Batch: b}
			if b.LogAppendTime {
				r.Timestamp = b.MaxTimestamp
			}
			if i == 1 {
				r.Key, r.Headers = nil, []audit.Header{{Key: "a", Value: []byte("b")}, {Key: "null"}}
			}
			out = append(out, r)
		}
		return out
	}
	base := audit.Batch{BaseOffset: 1 << 40, LastOffsetDelta: 9, PartitionLeaderEpoch: 17, ProducerID: 99, ProducerEpoch: 2,
		BaseSequence: 1234, MaxTimestamp: 1_700_000_000_000}
	for _, tc := range []struct {
		name string
		edit func(*audit.Batch)
	}{
		{"none", func(*audit.Batch) {}},
		{"gzip", func(b *audit.Batch) { b.Compression = "gzip" }},
		{"snappy", func(b *audit.Batch) { b.Compression = "snappy" }},
		{"lz4", func(b *audit.Batch) { b.Compression = "lz4" }},
		{"zstd transactional", func(b *audit.Batch) { b.Compression = "zstd"; b.Transactional = true }},
		{"log append time", func(b *audit.Batch) { b.LogAppendTime = true; b.MaxTimestamp = 1_800_000_000_000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := base
			tc.edit(&b)
			if b.Compression == "" {
				b.Compression = "none"
			}
			recs := mk(b, 5)
			enc, err := AppendBatch([]byte("prefix"), recs)
			if err != nil {
				t.Fatal(err)
			}
			h, got, n, err := DecodeBatch(enc[6:], tp)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(enc)-6 {
				t.Errorf("consumed %d of %d bytes", n, len(enc)-6)
			}
			if h != b {
				t.Errorf("header %+v, want %+v", h, b)
			}
			if d := sourcetest.Diff(got, recs); d != "" {
				t.Fatal(d)
			}
		})
	}
}

// segmentBytes returns the single segment file of tp written under root.
func segmentPath(t *testing.T, root string, tp audit.TopicPartition, base int64) string {
	t.Helper()
	return filepath.Join(root, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), SegmentName(base))
}

// batchPositions lists the byte positions of the batches of a .log file.
func batchPositions(t *testing.T, b []byte) []int64 {
	t.Helper()
	var out []int64
	for pos := 0; pos < len(b); {
		out = append(out, int64(pos))
		pos += logOverhead + int(binary.BigEndian.Uint32(b[pos+8:]))
	}
	return out
}

func TestCorruptFiles(t *testing.T) {
	for _, tc := range []struct {
		name    string
		splits  []int64
		damage  func(b []byte, pos []int64) []byte // returns the new file
		file    int64                              // segment base damaged
		wantPos int                                // index into batch positions
		wantErr error
		wantMsg string
	}{
		{"crc", nil, func(b []byte, pos []int64) []byte { b[pos[1]+70]++; return b }, 0, 1, audit.ErrCorrupt, "crc32c"},
		{"wrong magic", nil, func(b []byte, pos []int64) []byte { b[pos[2]+16] = 7; return b }, 0, 2, audit.ErrCorrupt, "magic byte 7"},
		{"old format", nil, func(b []byte, pos []int64) []byte { b[pos[0]+16] = 1; return b }, 0, 0, ErrOldFormat, "message set v1"},
		{"truncated inner segment", []int64{6}, func(b []byte, pos []int64) []byte { return b[:pos[1]+30] }, 0, 1, ErrTruncated, "ends inside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeLogDir(t, root, sourcetest.Fixture(), tc.splits...)
			path := segmentPath(t, root, tp0, tc.file)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			pos := batchPositions(t, b)
			if err := os.WriteFile(path, tc.damage(b, pos), 0o644); err != nil {
				t.Fatal(err)
			}
			var gotErr error
			if d, err := OpenDirs(root); err != nil {
				gotErr = err
			} else {
				if p := d.Problems(); len(p) > 1 || (len(p) == 1 && (p[0].Cause != audit.CauseUnreadable || p[0].Topic != tp0.Topic || !strings.Contains(p[0].Detail, path))) {
					t.Errorf("problems %+v", p)
				}
				for _, err := range d.Records(t.Context(), tp0, 0, -1) {
					if err != nil {
						gotErr = err
					}
				}
			}
			if !errors.Is(gotErr, tc.wantErr) {
				t.Fatalf("error %v; want %v", gotErr, tc.wantErr)
			}
			var fe *FileError
			if !errors.As(gotErr, &fe) || fe.File != path || fe.Pos != pos[tc.wantPos] {
				t.Fatalf("error %v; want a FileError at %s byte %d", gotErr, path, pos[tc.wantPos])
			}
			if msg := gotErr.Error(); !strings.Contains(msg, tc.wantMsg) || !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprintf("byte %d", fe.Pos)) {
				t.Fatalf("message %q lacks %q, the file or the byte offset", msg, tc.wantMsg)
			}
		})
	}
}

func TestTornTail(t *testing.T) {
	for _, tc := range []struct {
		name string
		tail func(last []byte) []byte
	}{
		{"half a batch", func(last []byte) []byte { return last[:len(last)/2] }},
		{"a partial header", func(last []byte) []byte { return last[:9] }},
		{"preallocated zeros", func(last []byte) []byte { return make([]byte, 4096) }},
		{"a whole batch with unflushed pages", func(last []byte) []byte {
			b := append([]byte(nil), last...)
			clear(b[40:])
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			recs := sourcetest.Fixture()
			writeLogDir(t, root, recs, 6)
			path := segmentPath(t, root, tp0, 6)
			b, _ := os.ReadFile(path)
			pos := batchPositions(t, b)
			extra := tc.tail(b[pos[len(pos)-1]:])
			if err := os.WriteFile(path, append(b, extra...), 0o644); err != nil {
				t.Fatal(err)
			}
			d := mustOpen(t, root)
			got := collectAll(t, d, tp0, 0, -1)
			if len(got) != 10 {
				t.Fatalf("%d records, want 10", len(got))
			}
			want := []TornTail{{TP: tp0, File: path, Pos: int64(len(b)), Bytes: int64(len(extra))}}
			if tt := d.TornTails(); !slices.Equal(tt, want) {
				t.Fatalf("torn tails %+v, want %+v", tt, want)
			}
			if o, err := d.Offsets(t.Context(), tp0); err != nil || o != sourcetest.Offsets0 {
				t.Fatalf("offsets %+v, %v", o, err)
			}
		})
	}
}

func writeCheckpoint(t *testing.T, path string, entries map[audit.TopicPartition]int64) {
	t.Helper()
	s := fmt.Sprintf("0\n%d\n", len(entries))
	for tp, o := range entries {
		s += fmt.Sprintf("%s %d %d\n", tp.Topic, tp.Partition, o)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpoints(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	writeCheckpoint(t, filepath.Join(root, LogStartCheckpoint), map[audit.TopicPartition]int64{tp0: 4})
	writeCheckpoint(t, filepath.Join(root, ReplicationCheckpoint), map[audit.TopicPartition]int64{tp0: 8, tp1: 1})
	d := mustOpen(t, root)
	for _, tc := range []struct {
		tp   audit.TopicPartition
		want audit.PartitionOffsets
		offs []int64
	}{
		{tp0, audit.PartitionOffsets{LogStart: 4, LSO: 6, HW: 8}, []int64{4, 5, 6, 7}},
		{tp1, audit.PartitionOffsets{LogStart: 0, LSO: 1, HW: 1}, []int64{0}},
	} {
		o, err := d.Offsets(t.Context(), tc.tp)
		if err != nil || o != tc.want {
			t.Errorf("Offsets(%s) = %+v, %v; want %+v", tc.tp, o, err, tc.want)
		}
		var got []int64
		for _, r := range collectAll(t, d, tc.tp, 0, -1) {
			got = append(got, r.Offset)
		}
		if !slices.Equal(got, tc.offs) {
			t.Errorf("Records(%s) offsets %v, want %v", tc.tp, got, tc.offs)
		}
	}
}

func TestIndexSeek(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	path := segmentPath(t, root, tp0, 0)
	b, _ := os.ReadFile(path)
	pos := batchPositions(t, b)
	idx := func(entries ...[2]int64) []byte {
		var out []byte
		for _, e := range entries {
			out = binary.BigEndian.AppendUint32(out, uint32(e[0]))
			out = binary.BigEndian.AppendUint32(out, uint32(e[1]))
		}
		return append(out, make([]byte, 80)...) // preallocated
	}
	for _, tc := range []struct {
		name  string
		index []byte
	}{
		// Entries name the last offset of the batch at the position.
		{"valid", idx([2]int64{4, pos[1]}, [2]int64{7, pos[3]})},
		{"stale positions", idx([2]int64{4, pos[2]}, [2]int64{7, pos[3] + 3})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(strings.TrimSuffix(path, ".log")+".index", tc.index, 0o644); err != nil {
				t.Fatal(err)
			}
			d := mustOpen(t, root)
			for from := int64(0); from <= 10; from++ {
				var want []audit.Record
				for _, r := range sourcetest.Fixture() {
					if r.TP() == tp0 && r.Offset >= from {
						want = append(want, r)
					}
				}
				if diff := sourcetest.Diff(collectAll(t, d, tp0, from, -1), want); diff != "" {
					t.Fatalf("from %d: %s", from, diff)
				}
			}
		})
	}
}

func TestReadCommitted(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	d := mustOpen(t, root)
	for _, tc := range []struct {
		tp       audit.TopicPartition
		from, to int64
		want     []int64
	}{
		{tp0, 0, -1, []int64{0, 1, 2, 3, 4, 9}},
		{tp0, 7, -1, []int64{9}},
		{tp0, 0, 4, []int64{0, 1, 2, 3}},
		{tp1, 0, -1, []int64{0, 1}},
		{tp1, 0, 100, []int64{0, 1}},
	} {
		var got []int64
		for r, err := range d.ReadCommitted(t.Context(), tc.tp, tc.from, tc.to) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r.Offset)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("ReadCommitted(%s, %d, %d) = %v, want %v", tc.tp, tc.from, tc.to, got, tc.want)
		}
	}
	txns, err := d.AbortedTxns(t.Context(), tp0)
	if want := []AbortedTxn{{ProducerID: 2001, FirstOffset: 6, LastOffset: 8, LSO: -1}}; err != nil || !slices.Equal(txns, want) {
		t.Fatalf("AbortedTxns = %+v, %v; want %+v", txns, err, want)
	}
}

// TestTxnIndex checks that an aborted transaction known only from the
// .txnindex (its marker and first batch below the log start, say) still
// filters the read_committed view.
func TestTxnIndex(t *testing.T) {
	root := t.TempDir()
	recs := sourcetest.Fixture()
	// Drop the ABORT marker at offset 8: the scan then sees the
	// transaction as open, the txnindex says it was aborted.
	recs = slices.DeleteFunc(recs, func(r audit.Record) bool { return r.TP() == tp0 && r.Offset == 8 })
	writeLogDir(t, root, recs)
	var ent []byte
	ent = binary.BigEndian.AppendUint16(ent, 0)
	for _, v := range []int64{2001, 6, 8, 6} {
		ent = binary.BigEndian.AppendUint64(ent, uint64(v))
	}
	path := strings.TrimSuffix(segmentPath(t, root, tp0, 0), ".log") + ".txnindex"
	if err := os.WriteFile(path, ent, 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, root)
	txns, err := d.AbortedTxns(t.Context(), tp0)
	if want := []AbortedTxn{{ProducerID: 2001, FirstOffset: 6, LastOffset: 8, LSO: 6}}; err != nil || !slices.Equal(txns, want) {
		t.Fatalf("AbortedTxns = %+v, %v; want %+v", txns, err, want)
	}
	o, err := d.Offsets(t.Context(), tp0)
	if err != nil || o.LSO != 6 {
		t.Fatalf("Offsets = %+v, %v; want LSO 6 (the transaction has no marker in the log)", o, err)
	}
}

func TestDivergence(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	recs := sourcetest.Fixture()
	writeLogDir(t, a, recs)
	// Broker b: offset 1 holds different content, offsets 9 (and the
	// marker 8) are missing, partition 1 is identical.
	var other []audit.Record
	for _, r := range recs {
		switch {
		case r.TP() == tp0 && r.Offset >= 8:
			continue
		case r.TP() == tp0 && r.Offset == 1:
			r.Value = []byte("rewritten")
		}
		other = append(other, r)
	}
	writeLogDir(t, b, other)
	epochs := "0\n1\n4 0\n"
	if err := os.WriteFile(filepath.Join(a, tp0.Topic+"-0", LeaderEpochCheckpoint), []byte(epochs), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, b, a) // a is read first: it has the latest leader epoch
	if got := d.Replicas(tp0); len(got) != 2 || !strings.HasPrefix(got[0], a) {
		t.Fatalf("replicas %v, want %s first", got, a)
	}
	fs, err := d.Divergence(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	// offset 1 differs (the read replica's record may not be the one
	// acknowledged): truncated; offsets 8-9 only the read replica holds:
	// under-replicated, a risk, since the audit reads them
	wantCause := []audit.Cause{audit.CauseTruncated, audit.CauseUnderReplicated}
	for i, f := range fs {
		if i < len(wantCause) && f.Cause != wantCause[i] {
			t.Errorf("finding %+v: want %s", f, wantCause[i])
		}
		got = append(got, fmt.Sprintf("%s@%d+%d %s", f.Topic, f.Offset, f.Count, strings.Fields(f.Detail)[0]))
	}
	want := []string{tp0.Topic + "@1+1 replicas", tp0.Topic + "@8+2 replica"}
	if !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	if !strings.Contains(fs[1].Detail, b) || !strings.Contains(fs[1].Detail, "lacks offsets 8-9") {
		t.Errorf("detail %q does not name the replica lacking offsets 8-9", fs[1].Detail)
	}
}

func TestTopicsAndUnsupported(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	if err := os.MkdirAll(filepath.Join(root, "other-topic-0.9f3c-delete"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, tp0.Topic+"-0", PartitionMetadataFile), []byte("version: 0\ntopic_id: kx3V5GlQRBahA1W3nCFI8g\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, root)
	ts, err := d.Topics(t.Context())
	if want := []audit.TopicInfo{{Name: tp0.Topic, Partitions: 2, ReplicationFactor: 1}}; err != nil || !slices.EqualFunc(ts, want, func(a, b audit.TopicInfo) bool {
		return a.Name == b.Name && a.Partitions == b.Partitions && a.ReplicationFactor == b.ReplicationFactor
	}) {
		t.Fatalf("Topics = %+v, %v; want %+v", ts, err, want)
	}
	if _, err := d.GroupOffsets(t.Context(), "app"); !errors.Is(err, audit.ErrNotSupported) {
		t.Errorf("GroupOffsets error %v", err)
	}
	if _, err := d.Transactions(t.Context(), "app"); !errors.Is(err, audit.ErrNotSupported) {
		t.Errorf("Transactions error %v", err)
	}
	// producers are rebuilt from the batch headers (no .snapshot here)
	if ps, err := d.Producers(t.Context(), []audit.TopicPartition{tp0}); err != nil || len(ps[tp0]) == 0 {
		t.Errorf("Producers = %+v, %v", ps, err)
	}
}

func TestProducerSnapshot(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	entries := []ProducerEntry{
		{ProducerID: 2000, ProducerEpoch: 3, LastSequence: 1, LastOffset: 4, OffsetDelta: 1, Timestamp: 5, CoordinatorEpoch: 7, CurrentTxnFirstOffset: -1},
		{ProducerID: 3000, ProducerEpoch: 0, LastSequence: 1, LastOffset: 3, OffsetDelta: 1, Timestamp: 6, CoordinatorEpoch: -1, CurrentTxnFirstOffset: 2},
	}
	dir := filepath.Join(root, tp1.Topic+"-1")
	for name, es := range map[string][]ProducerEntry{"00000000000000000002.snapshot": entries[:1], "00000000000000000004.snapshot": entries} {
		if err := os.WriteFile(filepath.Join(dir, name), AppendProducerSnapshot(nil, es), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := mustOpen(t, root)
	at, got, err := d.ProducerSnapshot(tp1)
	if err != nil || at != 4 || !slices.Equal(got, entries) {
		t.Fatalf("ProducerSnapshot = %d, %+v, %v", at, got, err)
	}
	b := AppendProducerSnapshot(nil, entries)
	b[20]++
	if _, _, err := ParseProducerSnapshot(b); !errors.Is(err, audit.ErrCorrupt) {
		t.Fatalf("damaged snapshot: %v, want ErrCorrupt", err)
	}
}

func TestParseFiles(t *testing.T) {
	t.Run("leader epochs", func(t *testing.T) {
		got, err := ParseLeaderEpochCheckpoint([]byte("0\n2\n0 0\n3 120\n"))
		if want := []EpochEntry{{0, 0}, {3, 120}}; err != nil || !slices.Equal(got, want) {
			t.Fatalf("got %v, %v", got, err)
		}
	})
	for _, bad := range []string{"", "1\n0\n", "0\n2\n0 0\n", "0\n1\nx 0\n", "0\n1\n1 2 3\n"} {
		t.Run(fmt.Sprintf("bad epochs %q", bad), func(t *testing.T) {
			if _, err := ParseLeaderEpochCheckpoint([]byte(bad)); !errors.Is(err, audit.ErrCorrupt) {
				t.Fatalf("error %v, want ErrCorrupt", err)
			}
		})
	}
	t.Run("offset checkpoint", func(t *testing.T) {
		got, err := ParseOffsetCheckpoint([]byte("0\n2\na.b-c 0 10\nx 3 -1\n"))
		if err != nil || len(got) != 2 || got[audit.TopicPartition{Topic: "a.b-c"}] != 10 || got[audit.TopicPartition{Topic: "x", Partition: 3}] != -1 {
			t.Fatalf("got %v, %v", got, err)
		}
	})
	t.Run("partition metadata", func(t *testing.T) {
		m, err := ParsePartitionMetadata([]byte("version: 0\ntopic_id: abc\n"))
		if err != nil || m != (PartitionMetadata{0, "abc"}) {
			t.Fatalf("got %+v, %v", m, err)
		}
		if _, err := ParsePartitionMetadata([]byte("version: 0\n")); err == nil {
			t.Fatal("no error without topic_id")
		}
	})
	t.Run("time index", func(t *testing.T) {
		var b []byte
		for _, e := range [][2]int64{{100, 0}, {150, 4}} {
			b = binary.BigEndian.AppendUint64(b, uint64(e[0]))
			b = binary.BigEndian.AppendUint32(b, uint32(e[1]))
		}
		b = append(b, make([]byte, 24)...)
		got, n, err := ParseTimeIndex(b, 10)
		if want := []TimeIndexEntry{{100, 10}, {150, 14}}; err != nil || n != len(b) || !slices.Equal(got, want) {
			t.Fatalf("got %v, %d, %v", got, n, err)
		}
	})
}

// TestRealSegments decodes every .log file the real-broker drill left under
// testdata/real/: each must decode to its end, or to a torn tail.
func TestRealSegments(t *testing.T) {
	var files []string
	_ = filepath.WalkDir(filepath.Join("testdata", "real"), func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && strings.HasSuffix(path, ".log") {
			files = append(files, path)
		}
		return nil
	})
	if len(files) == 0 {
		t.Skip("no real-broker segments under testdata/real")
	}
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tp := audit.TopicPartition{Topic: filepath.Base(filepath.Dir(path))}
			batches, records := 0, 0
			for pos := 0; pos < len(b); {
				_, recs, n, err := DecodeBatch(b[pos:], tp)
				if errors.Is(err, ErrTruncated) || (err != nil && allZero(b[pos:min(pos+logOverhead, len(b))])) {
					t.Logf("torn tail of %d bytes at %d", len(b)-pos, pos)
					break
				}
				if err != nil {
					t.Fatalf("byte %d: %v", pos, err)
				}
				pos += n
				batches++
				records += len(recs)
			}
			t.Logf("%d batches, %d records", batches, records)
		})
	}
}

func TestAppendLegacy(t *testing.T) {
	r := sourcetest.Fixture()[0]
	r.Batch = audit.Batch{BaseOffset: r.Offset, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
		Compression: "legacy", MaxTimestamp: r.Timestamp}
	b, err := AppendBatch(nil, []audit.Record{r})
	if err != nil {
		t.Fatal(err)
	}
	h, recs, _, err := DecodeBatch(b, r.TP())
	if err != nil || len(recs) != 1 || h.Compression != "none" || !strings.Contains(string(recs[0].Value), "o-1") {
		t.Fatalf("legacy batch: %+v, %d records, %v", h, len(recs), err)
	}
}

// TestRealLogDir reads the log dirs a real broker left under testdata/real/
// and compares them with what the broker served over the wire at the time
// (expected.json, read through audit/kafka): every record, batch header and
// marker, and each partition's log start, LSO and HW.
func TestRealLogDir(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "real", "*", "expected.json"))
	if len(dirs) == 0 {
		t.Skip("no real-broker log dir with an expected.json under testdata/real")
	}
	for _, exp := range dirs {
		dir := filepath.Dir(exp)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(exp)
			if err != nil {
				t.Fatal(err)
			}
			var want struct {
				Partitions []struct {
					Topic     string
					Partition int32
					Offsets   audit.PartitionOffsets
					Records   []audit.Record
				}
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			d := mustOpen(t, dir)
			if tt := d.TornTails(); len(tt) != 0 {
				t.Errorf("torn tails after a clean shutdown: %+v", tt)
			}
			for _, p := range want.Partitions {
				tp := audit.TopicPartition{Topic: p.Topic, Partition: p.Partition}
				o, err := d.Offsets(t.Context(), tp)
				if err != nil || o != p.Offsets {
					t.Errorf("Offsets(%s) = %+v, %v; the broker said %+v", tp, o, err, p.Offsets)
				}
				if diff := sourcetest.Diff(collectAll(t, d, tp, 0, -1), p.Records); diff != "" {
					t.Errorf("Records(%s): %s", tp, diff)
				}
			}
			// Every other partition dir (internal topics too) decodes.
			ts, _ := d.Topics(t.Context())
			for _, ti := range ts {
				for p := range ti.Partitions {
					tp := audit.TopicPartition{Topic: ti.Name, Partition: p}
					if _, err := d.Offsets(t.Context(), tp); errors.Is(err, audit.ErrPartitionNotFound) {
						continue
					}
					collectAll(t, d, tp, 0, -1)
					if _, _, err := d.ProducerSnapshot(tp); err != nil {
						t.Errorf("ProducerSnapshot(%s): %v", tp, err)
					}
				}
			}
		})
	}
}

func TestConformanceProducedHeaders(t *testing.T) {
	// The relaxed suite must still pass on a faithful source.
	sourcetest.RunSourceTestsWith(t, sourcetest.Options{ProducedHeaders: true}, func(t *testing.T, recs []audit.Record) audit.RecordSource {
		root := t.TempDir()
		writeLogDir(t, root, recs)
		return mustOpen(t, root)
	})
}

// TestCompactedBatch reads a batch the cleaner thinned: offsets missing
// inside it are skipped, the batch keeps its last offset delta.
func TestCompactedBatch(t *testing.T) {
	b := audit.Batch{BaseOffset: 10, LastOffsetDelta: 5, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: "none", MaxTimestamp: 5}
	tp := audit.TopicPartition{Topic: "cl-changelog"}
	recs := []audit.Record{
		{Topic: tp.Topic, Offset: 11, Key: []byte("a"), Value: []byte("1"), Timestamp: 1, Batch: b},
		{Topic: tp.Topic, Offset: 15, Key: []byte("b"), Value: nil, Timestamp: 5, Batch: b}, // a tombstone
	}
	root := t.TempDir()
	writeLogDir(t, root, recs)
	d := mustOpen(t, root)
	o, err := d.Offsets(t.Context(), tp)
	if want := (audit.PartitionOffsets{LogStart: 10, LSO: 16, HW: 16}); err != nil || o != want {
		t.Fatalf("Offsets = %+v, %v; want %+v", o, err, want)
	}
	for _, tc := range []struct {
		from, to int64
		want     []audit.Record
	}{{0, -1, recs}, {12, -1, recs[1:]}, {10, 15, recs[:1]}, {12, 15, nil}} {
		if diff := sourcetest.Diff(collectAll(t, d, tp, tc.from, tc.to), tc.want); diff != "" {
			t.Errorf("[%d, %d): %s", tc.from, tc.to, diff)
		}
	}
}
