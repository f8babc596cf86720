package offsetslog

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// ErrTruncated is wrapped by errors about a key or value that ends early.
var ErrTruncated = fmt.Errorf("truncated: %w", audit.ErrCorrupt)

// Partition is the partition of an internal topic of n partitions that
// holds a group's (or a transactional id's) records, as Kafka finds it:
// Utils.abs(id.hashCode()) % n, with Java's String.hashCode over UTF-16
// code units and Utils.abs mapping MinInt32 to 0. It is -1 when n ≤ 0.
func Partition(id string, n int32) int32 {
	if n <= 0 {
		return -1
	}
	var h int32
	for _, u := range utf16.Encode([]rune(id)) {
		h = 31*h + int32(u)
	}
	switch {
	case h == math.MinInt32:
		h = 0
	case h < 0:
		h = -h
	}
	return h % n
}

// Kind says what a __consumer_offsets record is.
type Kind int

const (
	// Other is a record kaudit does not need (assignments, share group
	// state, …): its group is known, nothing else is decoded.
	Other Kind = iota
	// Commit is an offset commit (key types 0 and 1) or, with Tombstone,
	// a deleted offset.
	Commit
	// Group is a classic group's metadata (key type 2), or a consumer or
	// streams group's (types 3, 17); Tombstone: the group was deleted.
	Group
	// Member is a consumer or streams group member (key types 5, 19);
	// Tombstone: the member left.
	Member
)

// Record is one decoded __consumer_offsets record.
type Record struct {
	Kind      Kind
	KeyType   int16 // the key's leading int16: its version (3.x) or record type (4.x)
	Group     string
	TP        audit.TopicPartition // Commit
	Member    string               // Member
	Tombstone bool                 // a null value
	Commit    *kmsg.OffsetCommitValue
	Meta      *kmsg.GroupMetadataValue // key type 2 only
}

// Key types of __consumer_offsets records (their leading int16).
const (
	keyLegacyOffsetCommit  = 0
	keyOffsetCommit        = 1
	keyGroupMetadata       = 2
	keyConsumerGroup       = 3
	keyConsumerGroupMember = 5
	keyStreamsGroup        = 17
	keyStreamsGroupMember  = 19
	maxCoordinatorKeyType  = 1 << 10 // past any type Kafka writes: corrupt
)

// Parse decodes a __consumer_offsets record's key and value as Kafka 3.x
// and 4.x write them: offset commits (key types 0 and 1, value versions
// 0-4), classic group metadata (key type 2, value versions 0-4) and the
// group and member keys of consumer and streams groups (4.x). Other key
// types (assignments, share groups) decode their group id only. A nil
// value is a tombstone. Errors wrap audit.ErrCorrupt.
func Parse(key, value []byte) (Record, error) {
	if len(key) < 2 {
		return Record{}, fmt.Errorf("offsets record key of %d bytes: %w", len(key), ErrTruncated)
	}
	r := Record{KeyType: int16(binary.BigEndian.Uint16(key)), Tombstone: value == nil}
	switch r.KeyType {
	case keyLegacyOffsetCommit, keyOffsetCommit:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return r, fmt.Errorf("offset commit key: %v: %w", err, audit.ErrCorrupt)
		}
		if k.Partition < 0 {
			return r, fmt.Errorf("offset commit key: partition %d: %w", k.Partition, audit.ErrCorrupt)
		}
		r.Kind, r.Group, r.TP = Commit, k.Group, audit.TopicPartition{Topic: k.Topic, Partition: k.Partition}
		if value == nil {
			return r, nil
		}
		var v kmsg.OffsetCommitValue
		if err := readVersioned(value, 4, v.ReadFrom); err != nil {
			return r, fmt.Errorf("offset commit value of %s %s: %w", k.Group, r.TP, err)
		}
		r.Commit = &v
	case keyGroupMetadata:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return r, fmt.Errorf("group metadata key: %v: %w", err, audit.ErrCorrupt)
		}
		r.Kind, r.Group = Group, k.Group
		if value == nil {
			return r, nil
		}
		var v kmsg.GroupMetadataValue
		if err := readVersioned(value, 4, v.ReadFrom); err != nil {
			return r, fmt.Errorf("group metadata value of %s: %w", k.Group, err)
		}
		r.Meta = &v
	default:
		if r.KeyType < 0 || r.KeyType > maxCoordinatorKeyType {
			return r, fmt.Errorf("offsets record key type %d: %w", r.KeyType, audit.ErrCorrupt)
		}
		// Every newer coordinator key starts with the group id (int16
		// length string); member keys follow it with the member id.
		rest := key[2:]
		g, n, err := readInt16String(rest)
		if err != nil {
			return r, fmt.Errorf("offsets record key type %d: %w", r.KeyType, err)
		}
		r.Group = g
		switch r.KeyType {
		case keyConsumerGroup, keyStreamsGroup:
			r.Kind = Group
		case keyConsumerGroupMember, keyStreamsGroupMember:
			m, _, err := readInt16String(rest[n:])
			if err != nil {
				return r, fmt.Errorf("member key type %d of %s: %w", r.KeyType, g, err)
			}
			r.Kind, r.Member = Member, m
		}
	}
	return r, nil
}

// readVersioned checks a value's leading version against 0..max, then
// decodes it with read.
func readVersioned(value []byte, maxVersion int16, read func([]byte) error) error {
	if len(value) < 2 {
		return fmt.Errorf("%d bytes: %w", len(value), ErrTruncated)
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxVersion {
		return fmt.Errorf("version %d, want 0-%d: %w", v, maxVersion, audit.ErrCorrupt)
	}
	if err := read(value); err != nil {
		return fmt.Errorf("%v: %w", err, audit.ErrCorrupt)
	}
	return nil
}

func readInt16String(b []byte) (string, int, error) {
	if len(b) < 2 {
		return "", 0, fmt.Errorf("string length: %w", ErrTruncated)
	}
	l := int16(binary.BigEndian.Uint16(b))
	if l < 0 || int(l) > len(b)-2 {
		return "", 0, fmt.Errorf("string of %d bytes in %d: %w", l, len(b)-2, audit.ErrCorrupt)
	}
	return string(b[2 : 2+int(l)]), 2 + int(l), nil
}
