package segment

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"github.com/kaudit/kaudit/internal/input"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// OffsetIndexEntry is one .index entry: the absolute offset of a batch
// (base + relative offset) and its byte position in the .log.
type OffsetIndexEntry struct {
	Offset int64
	Pos    int64
}

// TimeIndexEntry is one .timeindex entry: a max timestamp so far and the
// offset from which it holds.
type TimeIndexEntry struct {
	Timestamp int64
	Offset    int64
}

// AbortedTxn is one .txnindex entry: an aborted transaction's producer, its
// first and last offsets (the last is the ABORT marker's) and the LSO when
// it ended.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	LSO         int64
}

// ProducerEntry is one producer's state in a producer .snapshot file.
type ProducerEntry struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastOffset            int64
	OffsetDelta           int32
	Timestamp             int64
	CoordinatorEpoch      int32
	CurrentTxnFirstOffset int64 // -1 when no transaction is open
}

// EpochEntry is one leader-epoch-checkpoint line: a leader epoch and the
// first offset written in it.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

const (
	offsetIndexEntryLen = 8
	timeIndexEntryLen   = 12
	txnIndexEntryLen    = 34
	producerEntryLen    = 46
)

// ParseOffsetIndex parses a .index file of the segment starting at base.
// The active segment's index is preallocated with zeros: trailing all-zero
// entries are ignored (entry 0 may legitimately be 0/0). It returns the
// bytes consumed (whole entries, never more than len(b)).
func ParseOffsetIndex(b []byte, base int64) ([]OffsetIndexEntry, int, error) {
	n := len(b) / offsetIndexEntryLen
	end := n
	for end > 1 && allZero(b[(end-1)*offsetIndexEntryLen:end*offsetIndexEntryLen]) {
		end--
	}
	if end == 1 && n > 1 && allZero(b[:offsetIndexEntryLen]) {
		end = 0 // a fresh, empty preallocated index
	}
	var out []OffsetIndexEntry
	for i := range end {
		e := b[i*offsetIndexEntryLen:]
		rel := int32(binary.BigEndian.Uint32(e[0:4]))
		pos := int32(binary.BigEndian.Uint32(e[4:8]))
		if rel < 0 || pos < 0 || (i > 0 && (int64(rel)+base <= out[i-1].Offset || int64(pos) <= out[i-1].Pos)) {
			return out, i * offsetIndexEntryLen, fmt.Errorf("index entry %d (relative offset %d, position %d) out of order: %w", i, rel, pos, audit.ErrCorrupt)
		}
		out = append(out, OffsetIndexEntry{Offset: base + int64(rel), Pos: int64(pos)})
	}
	if len(b)%offsetIndexEntryLen != 0 {
		return out, n * offsetIndexEntryLen, fmt.Errorf("%d bytes after the last whole entry: %w", len(b)%offsetIndexEntryLen, ErrTruncated)
	}
	return out, n * offsetIndexEntryLen, nil
}

// ParseTimeIndex parses a .timeindex file of the segment starting at base,
// ignoring preallocated all-zero entries at its end.
func ParseTimeIndex(b []byte, base int64) ([]TimeIndexEntry, int, error) {
	n := len(b) / timeIndexEntryLen
	end := n
	for end > 0 && allZero(b[(end-1)*timeIndexEntryLen:end*timeIndexEntryLen]) {
		end--
	}
	var out []TimeIndexEntry
	for i := range end {
		e := b[i*timeIndexEntryLen:]
		ts := int64(binary.BigEndian.Uint64(e[0:8]))
		rel := int32(binary.BigEndian.Uint32(e[8:12]))
		if rel < 0 || (i > 0 && (ts < out[i-1].Timestamp || base+int64(rel) < out[i-1].Offset)) {
			return out, i * timeIndexEntryLen, fmt.Errorf("time index entry %d (timestamp %d, relative offset %d) out of order: %w", i, ts, rel, audit.ErrCorrupt)
		}
		out = append(out, TimeIndexEntry{Timestamp: ts, Offset: base + int64(rel)})
	}
	if len(b)%timeIndexEntryLen != 0 {
		return out, n * timeIndexEntryLen, fmt.Errorf("%d bytes after the last whole entry: %w", len(b)%timeIndexEntryLen, ErrTruncated)
	}
	return out, n * timeIndexEntryLen, nil
}

// ParseTxnIndex parses a .txnindex file: 34-byte AbortedTxn entries
// (int16 version 0, producer id, first offset, last offset, LSO).
func ParseTxnIndex(b []byte) ([]AbortedTxn, int, error) {
	var out []AbortedTxn
	n := 0
	for ; len(b)-n >= txnIndexEntryLen; n += txnIndexEntryLen {
		e := b[n:]
		if v := int16(binary.BigEndian.Uint16(e[0:2])); v != 0 {
			return out, n, fmt.Errorf("aborted transaction entry at byte %d: version %d: %w", n, v, audit.ErrCorrupt)
		}
		t := AbortedTxn{
			ProducerID:  int64(binary.BigEndian.Uint64(e[2:10])),
			FirstOffset: int64(binary.BigEndian.Uint64(e[10:18])),
			LastOffset:  int64(binary.BigEndian.Uint64(e[18:26])),
			LSO:         int64(binary.BigEndian.Uint64(e[26:34])),
		}
		if t.LastOffset < t.FirstOffset {
			return out, n, fmt.Errorf("aborted transaction entry at byte %d: last offset %d before first %d: %w", n, t.LastOffset, t.FirstOffset, audit.ErrCorrupt)
		}
		out = append(out, t)
	}
	if n != len(b) {
		return out, n, fmt.Errorf("%d bytes after the last whole entry: %w", len(b)-n, ErrTruncated)
	}
	return out, n, nil
}

// ParseProducerSnapshot parses a producer-state .snapshot file (version 1):
// int16 version, uint32 CRC-32C of the rest, int32 count, then 46-byte
// producer entries.
func ParseProducerSnapshot(b []byte) ([]ProducerEntry, int, error) {
	if len(b) < 10 {
		return nil, 0, fmt.Errorf("%d bytes, a snapshot header needs 10: %w", len(b), ErrTruncated)
	}
	if v := int16(binary.BigEndian.Uint16(b[0:2])); v != 1 {
		return nil, 0, fmt.Errorf("snapshot version %d, want 1: %w", v, audit.ErrCorrupt)
	}
	if got, want := crc32.Checksum(b[6:], castagnoli), binary.BigEndian.Uint32(b[2:6]); got != want {
		return nil, 0, fmt.Errorf("crc32c %08x, snapshot says %08x: %w", got, want, audit.ErrCorrupt)
	}
	count := int32(binary.BigEndian.Uint32(b[6:10]))
	if count < 0 || int64(count)*producerEntryLen != int64(len(b)-10) {
		return nil, 10, fmt.Errorf("%d producer entries in %d bytes: %w", count, len(b)-10, audit.ErrCorrupt)
	}
	out := make([]ProducerEntry, count)
	for i := range out {
		e := b[10+i*producerEntryLen:]
		out[i] = ProducerEntry{
			ProducerID:            int64(binary.BigEndian.Uint64(e[0:8])),
			ProducerEpoch:         int16(binary.BigEndian.Uint16(e[8:10])),
			LastSequence:          int32(binary.BigEndian.Uint32(e[10:14])),
			LastOffset:            int64(binary.BigEndian.Uint64(e[14:22])),
			OffsetDelta:           int32(binary.BigEndian.Uint32(e[22:26])),
			Timestamp:             int64(binary.BigEndian.Uint64(e[26:34])),
			CoordinatorEpoch:      int32(binary.BigEndian.Uint32(e[34:38])),
			CurrentTxnFirstOffset: int64(binary.BigEndian.Uint64(e[38:46])),
		}
	}
	return out, len(b), nil
}

// AppendProducerSnapshot encodes entries as a version 1 producer snapshot.
func AppendProducerSnapshot(dst []byte, entries []ProducerEntry) []byte {
	start := len(dst)
	dst = binary.BigEndian.AppendUint16(dst, 1)
	dst = binary.BigEndian.AppendUint32(dst, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(entries)))
	for _, e := range entries {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.ProducerEpoch))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.LastSequence))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastOffset))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.OffsetDelta))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.Timestamp))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.CoordinatorEpoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.CurrentTxnFirstOffset))
	}
	binary.BigEndian.PutUint32(dst[start+2:], crc32.Checksum(dst[start+6:], castagnoli))
	return dst
}

// ParseLeaderEpochCheckpoint parses a leader-epoch-checkpoint file: a
// version line (0), a count line, then "epoch startOffset" lines.
func ParseLeaderEpochCheckpoint(b []byte) ([]EpochEntry, error) {
	lines, err := checkpointLines(b, 2)
	if err != nil {
		return nil, err
	}
	out := make([]EpochEntry, 0, len(lines))
	for i, f := range lines {
		e, err1 := strconv.ParseInt(f[0], 10, 32)
		o, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("line %d: bad epoch entry %q: %w", i+3, strings.Join(f, " "), audit.ErrCorrupt)
		}
		out = append(out, EpochEntry{Epoch: int32(e), StartOffset: o})
	}
	return out, nil
}

// ParseOffsetCheckpoint parses a log dir's offset checkpoint
// (replication-offset-checkpoint, log-start-offset-checkpoint,
// recovery-point-offset-checkpoint): a version line (0), a count line, then
// "topic partition offset" lines.
func ParseOffsetCheckpoint(b []byte) (map[audit.TopicPartition]int64, error) {
	lines, err := checkpointLines(b, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[audit.TopicPartition]int64, len(lines))
	for i, f := range lines {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || p < 0 {
			return nil, fmt.Errorf("line %d: bad offset entry %q: %w", i+3, strings.Join(f, " "), audit.ErrCorrupt)
		}
		out[audit.TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	return out, nil
}

// checkpointLines splits a Kafka checkpoint file into its entry lines of
// fields each, after checking the version (0) and the count.
func checkpointLines(b []byte, fields int) ([][]string, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan checkpoint: %v: %w", err, audit.ErrCorrupt)
	}
	if len(lines) < 2 {
		return nil, fmt.Errorf("%d lines, want a version and a count: %w", len(lines), ErrTruncated)
	}
	if strings.TrimSpace(lines[0]) != "0" {
		return nil, fmt.Errorf("line 1: version %q, want 0: %w", lines[0], audit.ErrCorrupt)
	}
	count, err := strconv.Atoi(strings.TrimSpace(lines[1]))
	if err != nil || count < 0 {
		return nil, fmt.Errorf("line 2: bad count %q: %w", lines[1], audit.ErrCorrupt)
	}
	if len(lines)-2 != count {
		return nil, fmt.Errorf("count %d, %d entry lines: %w", count, len(lines)-2, audit.ErrCorrupt)
	}
	out := make([][]string, count)
	for i, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, fmt.Errorf("line %d: %d fields, want %d: %w", i+3, len(f), fields, audit.ErrCorrupt)
		}
		out[i] = f
	}
	return out, nil
}

// PartitionMetadata is a partition dir's partition.metadata file.
type PartitionMetadata struct {
	Version int
	TopicID string
}

// ParsePartitionMetadata parses "version: 0" and "topic_id: …" lines.
func ParsePartitionMetadata(b []byte) (PartitionMetadata, error) {
	var m PartitionMetadata
	seen := 0
	for l := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "version":
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return m, fmt.Errorf("bad version %q: %w", v, audit.ErrCorrupt)
			}
			m.Version, seen = n, seen|1
		case "topic_id":
			m.TopicID, seen = strings.TrimSpace(v), seen|2
		}
	}
	if seen != 3 {
		return m, fmt.Errorf("want version and topic_id lines: %w", audit.ErrCorrupt)
	}
	return m, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// MaxMetaFileBytes bounds the files of a log dir that are read whole:
// checkpoints, partition.metadata, indexes (segment.index.bytes is 10 MiB
// by default) and producer snapshots.
const MaxMetaFileBytes = 128 << 20

// maxPropertiesBytes bounds a log dir's meta.properties (a few lines).
const maxPropertiesBytes = 1 << 20

// ErrNotRegular is wrapped by errors about a path that should be a regular
// file and is not (a device, a pipe, a directory): reading one could block
// or never end. It also wraps audit.ErrCorrupt.
var ErrNotRegular = fmt.Errorf("not a regular file: %w", audit.ErrCorrupt)

// OpenRegular opens path for reading after checking, on the opened file,
// that it is a regular file (a symlink is followed: a log dir may be one).
// It opens without blocking: a named pipe would block the open itself
// until a writer came, where no cancelled context reaches it.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := OpenNonblock(path)
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, nil, &FileError{File: path, Pos: 0, Err: fmt.Errorf("%s: %w", KindOf(info.Mode()), ErrNotRegular)}
	}
	return f, info, nil
}

// OpenNonblock opens path without blocking (input.OpenNonblock).
func OpenNonblock(path string) (*os.File, error) { return input.OpenNonblock(path) }

// ReadRegular reads a regular file of at most limit bytes whole, checking
// its size before reading.
func ReadRegular(path string, limit int64) ([]byte, error) {
	f, info, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > limit {
		return nil, &FileError{File: path, Pos: 0, Err: fmt.Errorf("%d bytes, more than the %d this file may hold: %w", info.Size(), limit, audit.ErrCorrupt)}
	}
	b := make([]byte, info.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, &FileError{File: path, Pos: 0, Err: fmt.Errorf("%v: %w", err, ErrTruncated)}
	}
	return b, nil
}

// KindOf names what a non-regular file is, for error messages.
func KindOf(m fs.FileMode) string { return input.KindOf(m) }
