package audit

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Sentinel errors shared by every source.
var (
	ErrTopicNotFound     = errors.New("topic not found")
	ErrPartitionNotFound = errors.New("partition not found")
	ErrGroupNotFound     = errors.New("group not found")
	ErrNotSupported      = errors.New("not supported by this source")
	ErrCorrupt           = errors.New("corrupt evidence")
	// ErrUnreadable is wrapped by errors about evidence that may exist but
	// could not be read: a topic the client may not describe (an ACL), a
	// metadata answer that kept failing (LEADER_NOT_AVAILABLE during an
	// outage), a partition with no leader. Unlike ErrTopicNotFound it says
	// nothing about whether the records exist: what needs them cannot be
	// judged.
	ErrUnreadable = errors.New("evidence could not be read")
)

// PartitionOffsets are a partition's offsets as the broker (or the capture)
// reports them.
type PartitionOffsets struct {
	LogStart int64 `json:"log_start"`
	LSO      int64 `json:"lso"` // last stable offset: end of read_committed
	HW       int64 `json:"hw"`  // high watermark: end of read_uncommitted
}

// TopicInfo describes one topic: partitions, replication and the configs
// that matter to an audit (cleanup.policy, retention.ms, min.insync.replicas,
// unclean.leader.election.enable, segment settings…).
type TopicInfo struct {
	Name              string            `json:"name"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

// Compacted reports whether the topic's cleanup.policy includes compact.
func (t TopicInfo) Compacted() bool {
	p := t.Configs["cleanup.policy"]
	for i := 0; i+7 <= len(p); i++ {
		if p[i:i+7] == "compact" {
			return true
		}
	}
	return false
}

// GroupOffsets is a consumer group's state and committed offsets, read with
// require_stable so that pending transactional commits are not mistaken for
// the cut.
type GroupOffsets struct {
	Group   string                   `json:"group"`
	State   string                   `json:"state"`
	Members int                      `json:"members"`
	Offsets map[TopicPartition]int64 `json:"-"`
	// Metadata holds the commit metadata per partition (Streams writes its
	// partition time there).
	Metadata map[TopicPartition]string `json:"-"`
}

// Producer is one producer's state on a partition (DescribeProducers).
type Producer struct {
	ProducerID            int64 `json:"producer_id"`
	ProducerEpoch         int16 `json:"producer_epoch"`
	LastSequence          int32 `json:"last_sequence"`
	LastTimestamp         int64 `json:"last_timestamp"`
	CoordinatorEpoch      int32 `json:"coordinator_epoch"`
	CurrentTxnStartOffset int64 `json:"current_txn_start_offset"` // -1 when none is open
}

// Transaction is a transactional id's coordinator state
// (ListTransactions/DescribeTransactions).
type Transaction struct {
	TransactionalID string           `json:"transactional_id"`
	State           string           `json:"state"`
	ProducerID      int64            `json:"producer_id"`
	ProducerEpoch   int16            `json:"producer_epoch"`
	TimeoutMillis   int32            `json:"timeout_ms"`
	StartTimestamp  int64            `json:"start_timestamp"` // ms; -1 when no transaction is open
	Partitions      []TopicPartition `json:"partitions,omitempty"`
}

// RecordSource yields one partition's records in offset order. It is the
// seam every source of evidence serves: a live cluster, a snapshot, broker
// log dirs, or memory in tests.
type RecordSource interface {
	// Partitions returns the topic's partition count, or an error wrapping
	// ErrTopicNotFound when the source knows the topic does not exist, or
	// ErrUnreadable when it could not find out (an ACL hides the topic, the
	// metadata kept failing).
	Partitions(ctx context.Context, topic string) (int32, error)
	// Offsets returns the partition's log-start offset, LSO and high
	// watermark, or an error wrapping ErrPartitionNotFound.
	Offsets(ctx context.Context, tp TopicPartition) (PartitionOffsets, error)
	// Records yields the records with offsets in [from, to), read
	// uncommitted, control records included, in offset order; to < 0 means
	// up to the high watermark. Offsets that no longer exist are skipped.
	// Errors are final: yielded once, then the sequence ends.
	Records(ctx context.Context, tp TopicPartition, from, to int64) iter.Seq2[Record, error]
}

// Source is everything an audit reads. Sources that cannot provide a piece of
// evidence return an error wrapping ErrNotSupported for it; the run is then
// incomplete for the checks that need it.
type Source interface {
	RecordSource
	// Topics lists every topic the source can describe, with its configs.
	// A topic missing from the list may still exist (Kafka leaves out the
	// topics an ACL hides, and a live source leaves out those whose
	// metadata kept failing): ask Partitions about a topic that is needed
	// and not listed.
	Topics(ctx context.Context) ([]TopicInfo, error)
	// GroupOffsets returns the group's committed offsets (require_stable),
	// or an error wrapping ErrGroupNotFound.
	GroupOffsets(ctx context.Context, group string) (GroupOffsets, error)
	// Transactions lists the transactional ids starting with prefix and
	// their coordinator state.
	Transactions(ctx context.Context, prefix string) ([]Transaction, error)
	// Producers returns the producers active on each partition.
	Producers(ctx context.Context, tps []TopicPartition) (map[TopicPartition][]Producer, error)
	// Describe says what the source is, for reports ("live 127.0.0.1:9092",
	// "snapshot DIR captured 2026-…").
	Describe() string
}

// GroupLister is implemented by sources that can list the consumer groups
// they hold: an application id no group has is then named with the
// groups there are.
type GroupLister interface {
	Groups(ctx context.Context) ([]string, error)
}

// CommittedReader is implemented by sources that can read a partition the
// way a read_committed consumer sees it, through the broker's own filtering.
// The ledger compares it with the view it derives from markers.
type CommittedReader interface {
	ReadCommitted(ctx context.Context, tp TopicPartition, from, to int64) iter.Seq2[Record, error]
}

// AbortedTxn is one entry of a partition's aborted-transaction index, as a
// read_committed Fetch response lists it: a transaction that ended in
// ABORT, by its producer and the first offset of its data on the partition.
type AbortedTxn struct {
	ProducerID  int64 `json:"producer_id"`
	FirstOffset int64 `json:"first_offset"`
}

// CommittedIndex is the broker's read_committed view of a range of a
// partition in the form a Fetch response gives it. The batches below the
// LSO are the raw ones, the same bytes read_uncommitted returns; a
// read_committed consumer drops the control records, a producer's
// transactional data from the first offset of one of its aborted
// transactions up to its next ABORT marker, and everything at or above the
// LSO. So the LSO and the aborted transactions define the view.
type CommittedIndex struct {
	// LSO is the last stable offset the broker reported with the view;
	// -1 when the range needed no read.
	LSO int64
	// Aborted lists the aborted transactions the broker named for the
	// range, each once, ordered by first offset, then producer id.
	Aborted []AbortedTxn
}

// IndexedReader is implemented by sources that learn the broker's
// read_committed view of a partition from the reads that yield its raw
// records: fetching read_committed up to the LSO returns the raw batches
// with the aborted-transaction index, and read_uncommitted goes on from
// the LSO. The ledger cross-checks against it instead of reading the
// partition a second time through CommittedReader.
type IndexedReader interface {
	// RecordsIndexed yields what Records yields for [from, to). When the
	// sequence ends without error, *idx holds the broker's read_committed
	// view of [from, to).
	RecordsIndexed(ctx context.Context, tp TopicPartition, from, to int64, idx *CommittedIndex) iter.Seq2[Record, error]
}

// SampleReader is implemented by sources whose reads fetch ahead of the
// reader, and decode what they fetch (a live cluster fetches megabytes of
// a partition at a time). RecordsSample yields what Records yields,
// fetching little at first and more as the reader goes on: a read that
// stops after a partition's first records (a sample) costs little more
// than them.
type SampleReader interface {
	RecordsSample(ctx context.Context, tp TopicPartition, from, to int64) iter.Seq2[Record, error]
}

// Clock returns the time the evidence describes: now for a live cluster,
// the capture time for a snapshot. Sources that are not live implement it.
type Clock interface {
	Now() time.Time
}

// SourceClock is the time the evidence describes and the name of that
// clock: a source's own clock (a snapshot's capture time, a log dir's last
// write) when it has one, else now. Every audit takes its "now" from it.
func SourceClock(src Source) (time.Time, string) {
	if c, ok := src.(Clock); ok {
		if t := c.Now(); !t.IsZero() {
			return t, "the source's clock"
		}
	}
	return time.Now(), "now"
}

// TopologyHolder is implemented by sources that carry the app's
// Topology#describe() text (a capture made with --topology).
type TopologyHolder interface {
	Topology() string
}

// SchemaHolder is implemented by sources that carry the schemas their
// records were written with (a capture), by schema id.
type SchemaHolder interface {
	Schemas() map[int32]Schema
}

// TopologyOf is the describe() text src carries, or "".
func TopologyOf(src Source) string {
	if h, ok := src.(TopologyHolder); ok {
		return h.Topology()
	}
	return ""
}

// SchemasOf is the schemas src carries, or nil.
func SchemasOf(src Source) map[int32]Schema {
	if h, ok := src.(SchemaHolder); ok {
		return h.Schemas()
	}
	return nil
}

// UnreadablePartition is the finding for evidence of tp that could not be
// read: everything that depends on it is unchecked. It counts no record.
func UnreadablePartition(tp TopicPartition, detail string) Finding {
	return Unreadable(tp, -1, 0, detail)
}

// Unreadable is the finding for count offsets of tp from offset (-1 and 0:
// the partition as a whole) whose evidence could not be read. Every
// unreadable finding is built here.
func Unreadable(tp TopicPartition, offset, count int64, detail string) Finding {
	f := NewFinding(StageOffsets, CauseUnreadable, tp, offset)
	f.Count = count
	f.Detail = detail
	return f
}

// UsageError is an error in what the caller asked for (its options, its
// spec, a file it named) rather than in the evidence: the CLI exits 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// NotRunError is an audit that could not run, so there is no report: the
// evidence could not be opened or read midway. The CLI exits 4.
type NotRunError struct{ Err error }

func (e NotRunError) Error() string { return e.Err.Error() }
func (e NotRunError) Unwrap() error { return e.Err }

// Value is a decoded key or value in canonical JSON form: nil, bool, string,
// json.Number, []any or map[string]any.
type Value = any

// Decoder turns record bytes into a canonical Value.
type Decoder interface {
	// Decode decodes data read from topic; isKey says which serde applies.
	Decode(ctx context.Context, topic string, isKey bool, data []byte) (Value, error)
}

// Bounded is implemented by sources that hold only part of some
// partitions: a capture bounded with --since starts later than the
// cluster's log start. ClusterLogStart returns the cluster's log start at
// the capture for such a partition, and false for a partition held whole.
// Offsets then reports the first offset held as the log start; below it,
// records are not missing from the cluster, only from the evidence.
type Bounded interface {
	ClusterLogStart(tp TopicPartition) (int64, bool)
}
