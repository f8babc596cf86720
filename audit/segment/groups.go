package segment

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// Internal topics whose log dirs hold what a live cluster answers from its
// coordinators and controller.
const (
	ConsumerOffsetsTopic  = "__consumer_offsets"
	TransactionStateTopic = "__transaction_state"
	ClusterMetadataTopic  = "__cluster_metadata"
)

// CoordinatorPartition is the partition of an internal topic of n
// partitions that holds a group's (or a transactional id's) records, as
// Kafka finds it: Utils.abs(id.hashCode()) % n, with Java's String.hashCode
// over UTF-16 code units and Utils.abs mapping MinInt32 to 0.
func CoordinatorPartition(id string, n int32) int32 {
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

// OffsetsRecordKind says what a __consumer_offsets record is.
type OffsetsRecordKind int

const (
	// OffsetsOther is a record kaudit does not need (assignments, share
	// group state, …): its group is known, nothing else is decoded.
	OffsetsOther OffsetsRecordKind = iota
	// OffsetsCommit is an offset commit (key types 0 and 1) or, with
	// Tombstone, a deleted offset.
	OffsetsCommit
	// OffsetsGroup is a classic group's metadata (key type 2), or a
	// consumer or streams group's (types 3, 17); Tombstone: the group was
	// deleted.
	OffsetsGroup
	// OffsetsMember is a consumer or streams group member (key types 5,
	// 19); Tombstone: the member left.
	OffsetsMember
)

// OffsetsRecord is one decoded __consumer_offsets record.
type OffsetsRecord struct {
	Kind      OffsetsRecordKind
	KeyType   int16 // the key's leading int16: its version (3.x) or record type (4.x)
	Group     string
	TP        audit.TopicPartition // OffsetsCommit
	Member    string               // OffsetsMember
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

// ParseOffsetsRecord decodes a __consumer_offsets record's key and value
// as Kafka 3.x and 4.x write them: offset commits (key types 0 and 1, value
// versions 0-4), classic group metadata (key type 2, value versions 0-4)
// and the group and member keys of consumer and streams groups (4.x). Other
// key types (assignments, share groups) decode their group id only. A nil
// value is a tombstone. Errors wrap audit.ErrCorrupt.
func ParseOffsetsRecord(key, value []byte) (OffsetsRecord, error) {
	if len(key) < 2 {
		return OffsetsRecord{}, fmt.Errorf("offsets record key of %d bytes: %w", len(key), ErrTruncated)
	}
	r := OffsetsRecord{KeyType: int16(binary.BigEndian.Uint16(key)), Tombstone: value == nil}
	switch r.KeyType {
	case keyLegacyOffsetCommit, keyOffsetCommit:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return r, fmt.Errorf("offset commit key: %v: %w", err, audit.ErrCorrupt)
		}
		if k.Partition < 0 {
			return r, fmt.Errorf("offset commit key: partition %d: %w", k.Partition, audit.ErrCorrupt)
		}
		r.Kind, r.Group, r.TP = OffsetsCommit, k.Group, audit.TopicPartition{Topic: k.Topic, Partition: k.Partition}
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
		r.Kind, r.Group = OffsetsGroup, k.Group
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
			r.Kind = OffsetsGroup
		case keyConsumerGroupMember, keyStreamsGroupMember:
			m, _, err := readInt16String(rest[n:])
			if err != nil {
				return r, fmt.Errorf("member key type %d of %s: %w", r.KeyType, g, err)
			}
			r.Kind, r.Member = OffsetsMember, m
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

// committedOffset is an offset commit as the group coordinator keeps it,
// with the log offset of its record (which decides between a plain commit
// and a transactional one).
type committedOffset struct {
	offset   int64
	metadata string
	at       int64 // the record's offset in __consumer_offsets
	pid      int64 // -1 for a plain commit
}

// PendingCommit is a transactional offset commit whose transaction has no
// marker in __consumer_offsets.
type PendingCommit struct {
	TP         audit.TopicPartition `json:"tp"`
	Offset     int64                `json:"offset"`
	ProducerID int64                `json:"producer_id"`
	At         int64                `json:"at"` // its record's offset in __consumer_offsets
	// Committed says the coordinator had decided to commit (its
	// __transaction_state says PrepareCommit or CompleteCommit for the
	// producer): the offset counts.
	Committed bool `json:"committed"`
}

// GroupLog is what the log dirs say about a consumer group.
type GroupLog struct {
	audit.GroupOffsets
	// Partition is the __consumer_offsets partition holding the group,
	// Replica the partition dir read.
	Partition int32
	Replica   string
	// Pending lists the transactional offset commits whose transaction
	// had not ended when the log stopped, by partition.
	Pending []PendingCommit
}

// GroupLog replays the group's __consumer_offsets partition the way the
// group coordinator loads it: plain commits replace the partition's offset
// in log order; a null value deletes it; a transactional commit waits for
// its producer's marker in the same partition and, on COMMIT, replaces the
// offset unless a later record already did (ABORT drops it). A commit
// whose transaction has no marker counts only when __transaction_state
// says the coordinator had decided to commit it: a transaction still open
// when the cluster stopped is aborted when it comes back. The log is read
// up to its end, as the coordinator loads it.
func (d *Dir) GroupLog(ctx context.Context, group string) (GroupLog, error) {
	gl := GroupLog{GroupOffsets: audit.GroupOffsets{Group: group, Offsets: map[audit.TopicPartition]int64{}, Metadata: map[audit.TopicPartition]string{}}, Partition: -1}
	n, err := d.internalPartitions(ctx, ConsumerOffsetsTopic)
	if errors.Is(err, errNeverCreated) {
		return gl, fmt.Errorf("group offsets of %s from log dirs: %w: %w", group, err, audit.ErrGroupNotFound)
	}
	if err != nil {
		return gl, fmt.Errorf("group offsets of %s from log dirs: %w", group, err)
	}
	gl.Partition = CoordinatorPartition(group, n)
	tp := audit.TopicPartition{Topic: ConsumerOffsetsTopic, Partition: gl.Partition}
	r, err := d.primary(tp)
	if errors.Is(err, audit.ErrPartitionNotFound) {
		return gl, fmt.Errorf("group offsets of %s: its coordinator partition %s is in none of the log dirs (add the log dir of the broker that led it): %w", group, tp, audit.ErrNotSupported)
	}
	if err != nil {
		return gl, fmt.Errorf("group offsets of %s: %w", group, err)
	}
	gl.Replica = r.path
	offsets := map[audit.TopicPartition]committedOffset{}
	pending := map[int64]map[audit.TopicPartition]committedOffset{} // producer id → its transaction's commits
	known, deleted := false, false
	members := map[string]bool{}
	for rec, err := range r.records(ctx, r.logStart, r.logEnd) {
		if err != nil {
			return gl, fmt.Errorf("group offsets of %s: %w", group, err)
		}
		if rec.Batch.Control {
			if rec.Marker == nil || (rec.Marker.Type != audit.MarkerCommit && rec.Marker.Type != audit.MarkerAbort) {
				continue
			}
			pid := rec.Batch.ProducerID
			if rec.Marker.Type == audit.MarkerCommit {
				for ptp, c := range pending[pid] {
					if cur, ok := offsets[ptp]; !ok || cur.at < c.at {
						offsets[ptp] = c
					}
				}
			}
			delete(pending, pid)
			continue
		}
		or, err := ParseOffsetsRecord(rec.Key, rec.Value)
		if err != nil {
			return gl, fmt.Errorf("group offsets of %s: %s at offset %d: %w", group, tp, rec.Offset, err)
		}
		if or.Group != group {
			continue
		}
		switch or.Kind {
		case OffsetsCommit:
			known = true
			c := committedOffset{at: rec.Offset, pid: -1}
			if or.Commit != nil {
				c.offset, c.metadata = or.Commit.Offset, or.Commit.Metadata
			}
			if rec.Batch.Transactional {
				c.pid = rec.Batch.ProducerID
				p := pending[c.pid]
				if p == nil {
					p = map[audit.TopicPartition]committedOffset{}
					pending[c.pid] = p
				}
				if or.Tombstone {
					delete(p, or.TP)
				} else {
					p[or.TP] = c
				}
				continue
			}
			if or.Tombstone {
				delete(offsets, or.TP)
			} else {
				offsets[or.TP] = c
			}
		case OffsetsGroup:
			known, deleted = true, or.Tombstone
			if or.Tombstone || or.Meta != nil {
				clear(members)
			}
			if or.Meta != nil {
				for _, m := range or.Meta.Members {
					members[m.MemberID] = true
				}
			}
		case OffsetsMember:
			known = true
			if or.Tombstone {
				delete(members, or.Member)
			} else {
				members[or.Member] = true
			}
		}
	}
	if len(pending) > 0 {
		decided := d.decidedCommits(ctx)
		for pid, cs := range pending {
			for ptp, c := range cs {
				pc := PendingCommit{TP: ptp, Offset: c.offset, ProducerID: pid, At: c.at, Committed: decided[pid]}
				gl.Pending = append(gl.Pending, pc)
				if pc.Committed {
					if cur, ok := offsets[ptp]; !ok || cur.at < c.at {
						offsets[ptp] = c
					}
				}
			}
		}
		slices.SortFunc(gl.Pending, func(a, b PendingCommit) int {
			return cmp.Or(cmp.Compare(a.TP.Topic, b.TP.Topic), cmp.Compare(a.TP.Partition, b.TP.Partition), cmp.Compare(a.At, b.At))
		})
	}
	for ptp, c := range offsets {
		gl.Offsets[ptp], gl.Metadata[ptp] = c.offset, c.metadata
	}
	gl.Members = len(members)
	switch {
	case !known || (deleted && len(offsets) == 0):
		return gl, fmt.Errorf("group %s in %s of the log dirs: %w", group, tp, audit.ErrGroupNotFound)
	case deleted:
		gl.State = "Empty" // offsets committed after the group was deleted
	case len(members) > 0:
		gl.State = "Stable" // as of the log's end: the members' sessions ended with the cluster
	default:
		gl.State = "Empty"
	}
	return gl, nil
}

// GroupOffsets returns the group's committed offsets replayed from its
// __consumer_offsets partition (see GroupLog), or an error wrapping
// audit.ErrGroupNotFound when the partition holds nothing of the group,
// or audit.ErrNotSupported when no log dir holds the partition.
func (d *Dir) GroupOffsets(ctx context.Context, group string) (audit.GroupOffsets, error) {
	gl, err := d.GroupLog(ctx, group)
	if err != nil {
		return audit.GroupOffsets{}, err
	}
	return gl.GroupOffsets, nil
}

// errNeverCreated says the metadata log has no such internal topic: the
// cluster never created it (no group committed, no transaction began).
var errNeverCreated = errors.New("the metadata log has no such topic: the cluster never created it")

// internalPartitions is the partition count of an internal topic: the
// metadata log's when it holds the topic, else one more than the highest
// partition dir found. It wraps errNeverCreated when the metadata log was
// read and lacks the topic and no dir holds it, and audit.ErrNotSupported
// when neither knows it.
func (d *Dir) internalPartitions(ctx context.Context, topic string) (int32, error) {
	m, err := d.Metadata(ctx)
	if err == nil && m != nil {
		if t, ok := m.Topic(topic); ok && t.Partitions > 0 {
			return t.Partitions, nil
		}
	}
	n, perr := d.Partitions(ctx, topic)
	switch {
	case perr == nil:
		return n, nil
	case err == nil && m != nil:
		return 0, fmt.Errorf("%s: %w", topic, errNeverCreated)
	}
	return 0, fmt.Errorf("no %s partition in the log dirs and no metadata log naming its partition count: %w", topic, audit.ErrNotSupported)
}
