package audit

import (
	"context"
	"fmt"
)

// ConsumerOffsetsTopic is the group coordinator's log: every offset commit
// and group generation of every group, each group in one partition of it
// (Kafka's hash of the group id).
const ConsumerOffsetsTopic = "__consumer_offsets"

// CommitHistory is a consumer group's offset commits in the order its
// partition of __consumer_offsets holds them, as the group coordinator
// makes them effective: a plain commit at its record, a transactional one
// (TxnOffsetCommit) at its producer's COMMIT marker, unless a later record
// of the log already replaced it; an ABORT marker discards it. It is the
// evidence that survives a restart: what the group's committed offset was,
// and when, long after the app has moved past a hole.
//
// Compaction keeps only the last record per key outside the active segment,
// so the history is whole only where no record is missing: Holes lists the
// offsets of the partition no record holds (compaction removed them), and
// from WholeFrom on every record is there.
type CommitHistory struct {
	Group string `json:"group"`
	// Log is the group's partition of __consumer_offsets, Partitions the
	// topic's partition count (50 unless offsets.topic.num.partitions
	// says otherwise).
	Log        TopicPartition `json:"log"`
	Partitions int32          `json:"partitions"`
	// LogStart and End bound what was read: [LogStart, End), End being the
	// partition's high watermark at the read.
	LogStart int64 `json:"log_start"`
	End      int64 `json:"end"`
	// Records is how many records of the partition were read, every
	// group's; Holes the offsets of [0, End) that no record holds, at most
	// MaxHoles ranges: the last ones, HolesDropped saying how many earlier
	// ones were left out; HoleOffsets counts the offsets of them all.
	Records      int64         `json:"records"`
	Holes        []OffsetRange `json:"holes,omitempty"`
	HolesDropped int64         `json:"holes_dropped,omitempty"`
	HoleOffsets  int64         `json:"hole_offsets"`
	// WholeFrom is the first offset from which every offset up to End holds
	// its record, WholeSince the time (ms) of the record there (-1 when no
	// record follows the last hole): every commit made since is listed.
	WholeFrom  int64 `json:"whole_from"`
	WholeSince int64 `json:"whole_since"`
	// CleanedTo is where the log cleaner's checkpoint says it has cleaned
	// the partition up to (broker log dirs only; -1 when not known).
	CleanedTo int64 `json:"cleaned_to"`
	// Unread lists the offsets of [LogStart, End) whose records could not
	// be read or decoded (a batch failing its CRC, and what follows it; a
	// record no decoder reads; a log cut short): damage, not compaction.
	// A commit or generation record may be missing there.
	Unread []UnreadRange `json:"unread,omitempty"`
	// Commits lists each partition's effective commits in log order;
	// Aborted the transactional commits an ABORT discarded; Pending those
	// whose transaction had no marker at End.
	Commits map[TopicPartition][]Commit `json:"-"`
	Aborted map[TopicPartition][]Commit `json:"-"`
	Pending map[TopicPartition][]Commit `json:"-"`
	// Generations lists the group's metadata records in log order: each
	// rebalance that completed, the group becoming empty, its deletion.
	Generations []Generation `json:"generations,omitempty"`
	// Notes say what the reader found about the history's extent.
	Notes []string `json:"notes,omitempty"`
}

// MaxHoles bounds CommitHistory.Holes: a partition compacted many times
// over has a hole between nearly every two records it kept.
const MaxHoles = 1024

// OffsetRange is the offsets [From, To).
type OffsetRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// UnreadRange is offsets [From, To) of a log that could not be read, and
// why.
type UnreadRange struct {
	OffsetRange
	Why string `json:"why"`
}

// MarkUnread records [from, to) as unread for why: records were there
// (a capture copied them, a batch claimed them) that could not be read.
// The holes inside it are no longer taken for compaction's.
func (h *CommitHistory) MarkUnread(from, to int64, why string) {
	if to <= from {
		return
	}
	var kept []OffsetRange
	for _, r := range h.Holes {
		if r.To <= from || r.From >= to {
			kept = append(kept, r)
			continue
		}
		h.HoleOffsets -= min(r.To, to) - max(r.From, from)
		if r.From < from {
			kept = append(kept, OffsetRange{From: r.From, To: from})
		}
		if r.To > to {
			kept = append(kept, OffsetRange{From: to, To: r.To})
		}
	}
	h.Holes = kept
	h.Unread = append(h.Unread, UnreadRange{OffsetRange: OffsetRange{From: from, To: to}, Why: why})
}

// UnreadAfter returns the first unread range that ends after offset at,
// or nil.
func (h *CommitHistory) UnreadAfter(at int64) *UnreadRange {
	var first *UnreadRange
	for i := range h.Unread {
		if u := &h.Unread[i]; u.To > at && (first == nil || u.From < first.From) {
			first = u
		}
	}
	return first
}

// Commit is one effective offset commit of a partition.
type Commit struct {
	// Offset is the committed offset: the next offset the group consumes.
	// Deleted says the record was a tombstone (the offset was deleted or
	// expired): the group has no committed offset from then on.
	Offset  int64 `json:"offset"`
	Deleted bool  `json:"deleted,omitempty"`
	// Time is when the commit took effect (ms): a transactional commit's
	// COMMIT marker's batch timestamp, else the value's commit timestamp
	// (the broker's time at receipt), else the record's.
	Time int64 `json:"time"`
	// At is the offset in __consumer_offsets where it took effect: its
	// record's, or its COMMIT marker's; Record is its record's.
	At     int64 `json:"at"`
	Record int64 `json:"record"`
	// ProducerID and ProducerEpoch name a transactional commit's producer
	// (-1 for a plain OffsetCommit).
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	Transactional bool  `json:"transactional"`
	// Repeats counts the commits of the same offset by the same kind of
	// commit and producer that followed it with no other commit of the
	// partition between; LastAt and LastTime are the last one's.
	Repeats  int32 `json:"repeats,omitempty"`
	LastAt   int64 `json:"last_at"`
	LastTime int64 `json:"last_time"`
}

// By says who made the commit, for a report.
func (c Commit) By() string {
	if c.Transactional {
		return fmt.Sprintf("a transaction of producer %d (epoch %d)", c.ProducerID, c.ProducerEpoch)
	}
	return "a plain OffsetCommit (no transaction)"
}

// Generation is one group metadata record: a generation that completed a
// rebalance, the group becoming empty (no member), or its deletion.
type Generation struct {
	At         int64  `json:"at"`
	Time       int64  `json:"time"`       // the record's timestamp (ms)
	Generation int32  `json:"generation"` // -1 for a consumer or streams group's (KIP-848) member change
	Members    int    `json:"members"`
	Protocol   string `json:"protocol,omitempty"`
	Leader     string `json:"leader,omitempty"`
	Deleted    bool   `json:"deleted,omitempty"`
	// Fresh: none of its members was a member of the group's generation
	// before it (known, with members): the whole app was replaced, a
	// restart, and every consumer resumed from the committed offsets
	// (Kafka Streams' consumers do not leave the group on close, so a
	// quick restart leaves no empty generation between).
	Fresh bool `json:"fresh,omitempty"`
}

// Empty reports whether the group had no member from this record on.
func (g Generation) Empty() bool { return g.Deleted || g.Members == 0 }

// Whole reports whether no record of the partition is missing between the
// offsets a and b of __consumer_offsets (a ≤ b): every commit made between
// them is in the history.
func (h *CommitHistory) Whole(a, b int64) bool {
	for _, u := range h.Unread {
		if u.To > a && u.From < b {
			return false
		}
	}
	if a >= h.WholeFrom {
		return true
	}
	if h.HolesDropped > 0 && len(h.Holes) > 0 && a < h.Holes[0].From {
		return false // holes older than those kept may lie between
	}
	for _, r := range h.Holes {
		if r.To > a && r.From < b {
			return false
		}
	}
	return true
}

// CommitHistoryReader is implemented by sources that can read a consumer
// group's commit history: its partition of __consumer_offsets, read raw.
// The error wraps ErrGroupNotFound when the partition holds nothing of the
// group, ErrUnreadable when the partition could not be read (an ACL: the
// text names it), ErrNotSupported when the source does not hold it.
type CommitHistoryReader interface {
	CommitHistory(ctx context.Context, group string) (CommitHistory, error)
}

// CommitHistoryOf reads group's commit history from src, or returns an
// error wrapping ErrNotSupported when src cannot give one.
func CommitHistoryOf(ctx context.Context, src Source, group string) (CommitHistory, error) {
	r, ok := src.(CommitHistoryReader)
	if !ok {
		return CommitHistory{}, fmt.Errorf("commit history of group %s: %s cannot give it: %w", group, src.Describe(), ErrNotSupported)
	}
	return r.CommitHistory(ctx, group)
}
