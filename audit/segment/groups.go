package segment

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/offsetslog"
)

// Internal topics whose log dirs hold what a live cluster answers from its
// coordinators and controller.
const (
	ConsumerOffsetsTopic  = audit.ConsumerOffsetsTopic
	TransactionStateTopic = "__transaction_state"
	ClusterMetadataTopic  = "__cluster_metadata"
)

// CoordinatorPartition is the partition of an internal topic of n
// partitions that holds a group's (or a transactional id's) records, as
// Kafka finds it (offsetslog.Partition).
func CoordinatorPartition(id string, n int32) int32 { return offsetslog.Partition(id, n) }

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
	rp, r, err := d.replayGroup(ctx, group, false)
	if r != nil {
		gl.Partition, gl.Replica = r.tp.Partition, r.path
	}
	if err != nil {
		return gl, err
	}
	if pend := rp.Pending(); len(pend) > 0 {
		decided := d.decidedCommits(ctx)
		for _, p := range pend {
			pc := PendingCommit{TP: p.TP, Offset: p.Offset, ProducerID: p.ProducerID, At: p.At, Committed: decided[p.ProducerID]}
			gl.Pending = append(gl.Pending, pc)
			if pc.Committed {
				rp.Apply(p)
			}
		}
	}
	gl.Offsets, gl.Metadata = rp.Offsets()
	gl.Members = rp.Members()
	tp := audit.TopicPartition{Topic: ConsumerOffsetsTopic, Partition: gl.Partition}
	switch {
	case !rp.Known() || (rp.Deleted() && len(gl.Offsets) == 0):
		return gl, fmt.Errorf("group %s in %s of the log dirs: %w", group, tp, audit.ErrGroupNotFound)
	case rp.Deleted():
		gl.State = "Empty" // offsets committed after the group was deleted
	case gl.Members > 0:
		gl.State = "Stable" // as of the log's end: the members' sessions ended with the cluster
	default:
		gl.State = "Empty"
	}
	return gl, nil
}

// replayGroup replays the group's __consumer_offsets partition up to its
// log end, as the coordinator loads it, keeping its commit history when
// history is set. The replica read is returned with any error once known.
func (d *Dir) replayGroup(ctx context.Context, group string, history bool) (*offsetslog.Replay, *replica, error) {
	n, err := d.internalPartitions(ctx, ConsumerOffsetsTopic)
	if errors.Is(err, errNeverCreated) {
		return nil, nil, fmt.Errorf("group offsets of %s from log dirs: %w: %w", group, err, audit.ErrGroupNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("group offsets of %s from log dirs: %w", group, err)
	}
	tp := audit.TopicPartition{Topic: ConsumerOffsetsTopic, Partition: CoordinatorPartition(group, n)}
	r, err := d.primary(tp)
	if errors.Is(err, audit.ErrPartitionNotFound) {
		return nil, &replica{tp: tp}, fmt.Errorf("group offsets of %s: its coordinator partition %s is in none of the log dirs (add the log dir of the broker that led it): %w", group, tp, audit.ErrNotSupported)
	}
	if err != nil {
		return nil, &replica{tp: tp}, fmt.Errorf("group offsets of %s: %w", group, err)
	}
	rp := offsetslog.NewReplay(group)
	if history {
		rp.KeepHistory(tp, n, r.logStart)
	}
	for rec, err := range r.records(ctx, r.logStart, r.logEnd) {
		if err != nil {
			return nil, r, fmt.Errorf("group offsets of %s: %w", group, err)
		}
		if err := rp.Add(rec); err != nil {
			return nil, r, fmt.Errorf("group offsets of %s: %s at offset %d: %w", group, tp, rec.Offset, err)
		}
	}
	return rp, r, nil
}

var _ audit.CommitHistoryReader = (*Dir)(nil)

// CleanerCheckpoint is the file of a log dir's root where the log cleaner
// records, per compacted partition, the offset it has cleaned up to.
const CleanerCheckpoint = "cleaner-offset-checkpoint"

// CommitHistory replays the group's __consumer_offsets partition up to its
// log end and returns every commit as it took effect (offsetslog.Replay),
// with the holes compaction left and, from the log dir's
// cleaner-offset-checkpoint, how far the cleaner had cleaned the
// partition. A commit whose transaction has no marker is listed in
// Pending, whatever __transaction_state says.
func (d *Dir) CommitHistory(ctx context.Context, group string) (audit.CommitHistory, error) {
	rp, r, err := d.replayGroup(ctx, group, true)
	if err != nil {
		return audit.CommitHistory{}, fmt.Errorf("commit history: %w", err)
	}
	h := rp.Finish(r.logEnd)
	if cps, err := readOffsetCheckpoint(filepath.Join(filepath.Dir(r.path), CleanerCheckpoint)); err == nil {
		if at, ok := cps[r.tp]; ok {
			h.CleanedTo = at
			h.Notes = append(h.Notes, fmt.Sprintf("the log cleaner's checkpoint (%s) says it cleaned %s up to offset %d", CleanerCheckpoint, r.tp, at))
		}
	}
	if !rp.Known() {
		return *h, fmt.Errorf("commit history of group %s: %s of the log dirs holds no record of it: %w", group, r.tp, audit.ErrGroupNotFound)
	}
	return *h, nil
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
