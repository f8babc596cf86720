package offsetslog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// Replay replays one group's records of its __consumer_offsets partition
// the way the group coordinator loads them (GroupMetadataManager in 3.x):
// a plain commit replaces the partition's offset in log order; a null
// value deletes it; a transactional commit waits for its producer's marker
// in the same partition and, on COMMIT, replaces the offset unless a later
// record already did (ABORT drops it); group metadata and member records
// say who is in the group. Add it every record of the partition in offset
// order, control records included. With KeepHistory it also keeps every
// commit as it took effect (audit.CommitHistory).
type Replay struct {
	group   string
	offsets map[audit.TopicPartition]entry
	pending map[int64]map[audit.TopicPartition]entry // producer id → its open transaction's commits
	known   bool
	deleted bool
	members map[string]bool

	h           *audit.CommitHistory // nil: no history kept
	next        int64                // the offset the next record should have
	stopped     string               // why the read stopped before the end (damage)
	lastMembers int
	// prevGen is the members of the last generation record with members
	// (nil: none known)
	prevGen map[string]bool
}

// entry is an offset commit as the coordinator keeps it.
type entry struct {
	c        audit.Commit
	metadata string
}

// NewReplay starts the replay of group.
func NewReplay(group string) *Replay {
	return &Replay{group: group, offsets: map[audit.TopicPartition]entry{}, pending: map[int64]map[audit.TopicPartition]entry{},
		members: map[string]bool{}, lastMembers: -1}
}

// KeepHistory makes the replay keep the group's commit history of log, a
// partition of __consumer_offsets whose topic has partitions partitions
// and whose log starts at logStart. Call it before the first Add.
func (r *Replay) KeepHistory(log audit.TopicPartition, partitions int32, logStart int64) {
	r.h = &audit.CommitHistory{Group: r.group, Log: log, Partitions: partitions, LogStart: logStart, WholeSince: -1, CleanedTo: -1,
		Commits: map[audit.TopicPartition][]audit.Commit{}, Aborted: map[audit.TopicPartition][]audit.Commit{}, Pending: map[audit.TopicPartition][]audit.Commit{}}
}

// Add replays one record of the partition. An error wraps audit.ErrCorrupt
// (a record that does not decode); the caller names its offset.
func (r *Replay) Add(rec audit.Record) error {
	if r.h != nil {
		r.see(rec)
	}
	if rec.Batch.Control {
		if rec.Marker == nil || (rec.Marker.Type != audit.MarkerCommit && rec.Marker.Type != audit.MarkerAbort) {
			return nil
		}
		r.end(rec)
		return nil
	}
	or, err := Parse(rec.Key, rec.Value)
	if err != nil {
		if or.Group != "" && or.Group != r.group {
			return nil // another group's record, its key read: nothing of this group
		}
		return err
	}
	if or.Group != r.group {
		return nil
	}
	switch or.Kind {
	case Commit:
		r.known = true
		e := entry{c: audit.Commit{Offset: -1, Deleted: or.Tombstone, Time: rec.Timestamp, At: rec.Offset, Record: rec.Offset, ProducerID: -1, ProducerEpoch: -1}}
		if or.Commit != nil {
			e.c.Offset, e.metadata = or.Commit.Offset, or.Commit.Metadata
			if or.Commit.CommitTimestamp > 0 {
				e.c.Time = or.Commit.CommitTimestamp
			}
		}
		if rec.Batch.Transactional {
			pid := rec.Batch.ProducerID
			e.c.ProducerID, e.c.ProducerEpoch, e.c.Transactional = pid, rec.Batch.ProducerEpoch, true
			p := r.pending[pid]
			if p == nil {
				p = map[audit.TopicPartition]entry{}
				r.pending[pid] = p
			}
			if or.Tombstone {
				delete(p, or.TP)
			} else {
				p[or.TP] = e
			}
			return nil
		}
		if or.Tombstone {
			delete(r.offsets, or.TP)
		} else {
			r.offsets[or.TP] = e
		}
		r.took(or.TP, e.c)
	case Group:
		r.known, r.deleted = true, or.Tombstone
		fresh := false
		if or.Tombstone || or.Meta != nil {
			if or.Meta != nil && len(or.Meta.Members) > 0 && r.prevGen != nil {
				fresh = !slices.ContainsFunc(or.Meta.Members, func(m kmsg.GroupMetadataValueMember) bool { return r.prevGen[m.MemberID] })
			}
			clear(r.members)
		}
		if or.Meta != nil {
			for _, m := range or.Meta.Members {
				r.members[m.MemberID] = true
			}
			if len(or.Meta.Members) > 0 {
				r.prevGen = maps.Clone(r.members)
			}
		}
		if or.Tombstone {
			r.prevGen = nil // a group made again starts over
		}
		if r.h != nil && (or.Tombstone || or.Meta != nil) {
			g := audit.Generation{At: rec.Offset, Time: rec.Timestamp, Generation: -1, Members: len(r.members), Deleted: or.Tombstone, Fresh: fresh}
			if m := or.Meta; m != nil {
				g.Generation = m.Generation
				if m.Protocol != nil {
					g.Protocol = *m.Protocol
				}
				if m.Leader != nil {
					g.Leader = *m.Leader
				}
			}
			r.h.Generations = append(r.h.Generations, g)
			r.lastMembers = len(r.members)
		}
	case Member:
		r.known = true
		if or.Tombstone {
			delete(r.members, or.Member)
		} else {
			r.members[or.Member] = true
		}
		if r.h != nil && len(r.members) != r.lastMembers {
			r.h.Generations = append(r.h.Generations, audit.Generation{At: rec.Offset, Time: rec.Timestamp, Generation: -1, Members: len(r.members)})
			r.lastMembers = len(r.members)
		}
	}
	return nil
}

// end applies a COMMIT or ABORT marker to its producer's pending commits.
func (r *Replay) end(rec audit.Record) {
	pid := rec.Batch.ProducerID
	p := r.pending[pid]
	delete(r.pending, pid)
	at := rec.Batch.MaxTimestamp
	if at < 0 {
		at = rec.Timestamp
	}
	for _, tp := range slices.SortedFunc(maps.Keys(p), audit.CompareTopicPartitions) {
		e := p[tp]
		e.c.At, e.c.Time = rec.Offset, at
		if rec.Marker.Type == audit.MarkerAbort {
			if r.h != nil {
				e.c.LastAt, e.c.LastTime = e.c.At, e.c.Time
				r.h.Aborted[tp] = append(r.h.Aborted[tp], e.c)
			}
			continue
		}
		if cur, ok := r.offsets[tp]; ok && cur.c.Record >= e.c.Record {
			continue // a later plain commit already replaced it
		}
		r.offsets[tp] = e
		r.took(tp, e.c)
	}
}

// took adds an effective commit to the history: a commit of the same
// offset by the same producer as the partition's last one is counted on
// it.
func (r *Replay) took(tp audit.TopicPartition, c audit.Commit) {
	if r.h == nil {
		return
	}
	c.LastAt, c.LastTime = c.At, c.Time
	cs := r.h.Commits[tp]
	if n := len(cs); n > 0 {
		last := &cs[n-1]
		if !c.Deleted && !last.Deleted && last.Offset == c.Offset && last.Transactional == c.Transactional &&
			last.ProducerID == c.ProducerID && last.ProducerEpoch == c.ProducerEpoch {
			last.Repeats++
			last.LastAt, last.LastTime = c.At, c.Time
			return
		}
	}
	r.h.Commits[tp] = append(cs, c)
}

// see notes a record's offset: the offsets skipped since the last one are
// a hole (compaction removed their records).
func (r *Replay) see(rec audit.Record) {
	r.h.Records++
	if rec.Offset > r.next {
		r.hole(r.next, rec.Offset)
	}
	if r.h.WholeSince < 0 && rec.Offset >= r.h.WholeFrom {
		r.h.WholeSince = rec.Timestamp
	}
	r.next = max(r.next, rec.Offset+1)
}

func (r *Replay) hole(from, to int64) {
	h := r.h
	h.HoleOffsets += to - from
	if len(h.Holes) == audit.MaxHoles {
		h.Holes = append(h.Holes[:0], h.Holes[1:]...)
		h.HolesDropped++
	}
	h.Holes = append(h.Holes, audit.OffsetRange{From: from, To: to})
	h.WholeFrom, h.WholeSince = to, -1
}

// Unreadable records that the record at offset at could not be decoded
// (an error of Add), for the history: it goes on with the next.
func (r *Replay) Unreadable(at int64, err error) {
	if r.h != nil {
		r.h.MarkUnread(at, at+1, fmt.Sprintf("the record at offset %d does not decode: %v", at, err))
	}
}

// Stop records that the read stopped before its end for err (a batch
// failing its CRC, a log cut short): Finish makes the rest of the
// partition unread, not a hole compaction left.
func (r *Replay) Stop(err error) { r.stopped = err.Error() }

// Finish ends the history at end (the partition's high watermark, where
// the read stopped) and returns it; nil without KeepHistory. Commits still
// pending are listed in its Pending, in the order of their records.
func (r *Replay) Finish(end int64) *audit.CommitHistory {
	if r.h == nil {
		return nil
	}
	if r.stopped != "" {
		r.h.MarkUnread(r.next, max(end, r.next+1), fmt.Sprintf("the read stopped at offset %d: %s", r.next, r.stopped))
	} else if end > r.next {
		r.hole(r.next, end)
	}
	r.h.End = max(end, r.next)
	for _, p := range r.Pending() {
		c := audit.Commit{Offset: p.Offset, Time: p.Time, At: p.At, Record: p.At, ProducerID: p.ProducerID, ProducerEpoch: p.ProducerEpoch,
			Transactional: true, LastAt: p.At, LastTime: p.Time}
		r.h.Pending[p.TP] = append(r.h.Pending[p.TP], c)
	}
	return r.h
}

// Known reports whether the partition holds any record of the group, and
// Deleted whether its last group metadata record was a tombstone.
func (r *Replay) Known() bool   { return r.known }
func (r *Replay) Deleted() bool { return r.deleted }

// Members is the number of members as of the last record.
func (r *Replay) Members() int { return len(r.members) }

// Offsets returns the committed offsets and their metadata as of the last
// record (pending commits not counted).
func (r *Replay) Offsets() (map[audit.TopicPartition]int64, map[audit.TopicPartition]string) {
	offs, meta := make(map[audit.TopicPartition]int64, len(r.offsets)), make(map[audit.TopicPartition]string, len(r.offsets))
	for tp, e := range r.offsets {
		offs[tp], meta[tp] = e.c.Offset, e.metadata
	}
	return offs, meta
}

// Pending is a transactional commit whose transaction had no marker when
// the replay ended.
type Pending struct {
	TP            audit.TopicPartition
	Offset        int64
	Metadata      string
	ProducerID    int64
	ProducerEpoch int16
	At            int64 // its record's offset in __consumer_offsets
	Time          int64
}

// Pending lists the commits waiting for a marker, by partition then log
// position.
func (r *Replay) Pending() []Pending {
	var out []Pending
	for pid, cs := range r.pending {
		for tp, e := range cs {
			out = append(out, Pending{TP: tp, Offset: e.c.Offset, Metadata: e.metadata, ProducerID: pid, ProducerEpoch: e.c.ProducerEpoch, At: e.c.Record, Time: e.c.Time})
		}
	}
	slices.SortFunc(out, func(a, b Pending) int {
		return cmp.Or(audit.CompareTopicPartitions(a.TP, b.TP), cmp.Compare(a.At, b.At))
	})
	return out
}

// Apply counts a pending commit as committed (its transaction was decided
// to commit), unless a later record already replaced the offset.
func (r *Replay) Apply(p Pending) {
	if cur, ok := r.offsets[p.TP]; ok && cur.c.Record >= p.At {
		return
	}
	r.offsets[p.TP] = entry{c: audit.Commit{Offset: p.Offset, Time: p.Time, At: p.At, Record: p.At, ProducerID: p.ProducerID,
		ProducerEpoch: p.ProducerEpoch, Transactional: true}, metadata: p.Metadata}
}

// Read replays group's partition of __consumer_offsets from src (a live
// cluster, a snapshot holding it, log dirs), read raw up to its high
// watermark, and returns its commit history. The error wraps
// audit.ErrGroupNotFound when the partition holds nothing of the group,
// and whatever src says when the partition cannot be read.
func Read(ctx context.Context, src audit.RecordSource, group string) (audit.CommitHistory, error) {
	n, err := src.Partitions(ctx, audit.ConsumerOffsetsTopic)
	if err != nil {
		return audit.CommitHistory{}, fmt.Errorf("read the commit history of group %s: %w", group, err)
	}
	tp := audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic, Partition: Partition(group, n)}
	o, err := src.Offsets(ctx, tp)
	if err != nil {
		return audit.CommitHistory{}, fmt.Errorf("read the commit history of group %s: %w", group, err)
	}
	return ReadFrom(ctx, src, group, tp, n, o)
}

// ReadFrom is Read of the partition tp of __consumer_offsets (of n
// partitions) whose offsets are o. Damage is not an error but the
// history's Unread: a record that does not decode is unread and the read
// goes on; a read that fails for damage (an error wrapping
// audit.ErrCorrupt: a batch failing its CRC, a bundle's file cut) leaves
// the rest of the partition unread. Any other failure is an error.
func ReadFrom(ctx context.Context, src audit.RecordSource, group string, tp audit.TopicPartition, n int32, o audit.PartitionOffsets) (audit.CommitHistory, error) {
	r := NewReplay(group)
	r.KeepHistory(tp, n, o.LogStart)
	for rec, err := range src.Records(ctx, tp, o.LogStart, o.HW) {
		if err != nil {
			if errors.Is(err, audit.ErrCorrupt) && ctx.Err() == nil {
				r.Stop(err)
				break
			}
			return audit.CommitHistory{}, fmt.Errorf("read the commit history of group %s: %w", group, err)
		}
		if err := r.Add(rec); err != nil {
			r.Unreadable(rec.Offset, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return audit.CommitHistory{}, err
	}
	h := r.Finish(o.HW)
	if !r.Known() && len(h.Unread) == 0 {
		// (with records unread, the group's may be among them)
		return *h, fmt.Errorf("commit history of group %s: %s holds no record of it: %w", group, tp, audit.ErrGroupNotFound)
	}
	return *h, nil
}
