package offsetslog

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// log builds a __consumer_offsets partition, one record per batch, each
// batch stamped with its own time.
type log struct {
	recs []audit.Record
	next int64
	now  int64
}

func (l *log) rec(key, value []byte, pid int64, txn bool) {
	l.now += 10
	b := audit.Batch{BaseOffset: l.next, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: "none", MaxTimestamp: l.now}
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, 2, 0, txn
	}
	l.recs = append(l.recs, audit.Record{Topic: audit.ConsumerOffsetsTopic, Offset: l.next, Key: key, Value: value, Timestamp: l.now, Batch: b})
	l.next++
}

// commit writes an offset commit whose value says it was received at
// received (the broker's time at a TxnOffsetCommit's receipt).
func (l *log) commit(group string, p int32, off int64, pid int64, received int64) {
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.CommitTimestamp = 3, off, -1, received
	l.rec(offsetKey(1, group, "in", p), v.AppendTo(nil), pid, pid >= 0)
}

func (l *log) marker(pid int64, typ audit.MarkerType) {
	l.now += 10
	b := audit.Batch{BaseOffset: l.next, ProducerID: pid, ProducerEpoch: 2, BaseSequence: -1, Transactional: true, Control: true, Compression: "none", MaxTimestamp: l.now}
	l.recs = append(l.recs, audit.Record{Topic: audit.ConsumerOffsetsTopic, Offset: l.next, Timestamp: l.now - 5, Batch: b, Marker: &audit.Marker{Type: typ}})
	l.next++
}

func (l *log) group(group string, gen int32, members ...string) {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 3, "consumer", gen
	for _, m := range members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{MemberID: m})
	}
	l.rec((&kmsg.GroupMetadataKey{Version: 2, Group: group}).AppendTo(nil), v.AppendTo(nil), -1, false)
}

func replay(t *testing.T, group string, recs []audit.Record, end int64) (*Replay, *audit.CommitHistory) {
	t.Helper()
	r := NewReplay(group)
	r.KeepHistory(audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic}, 1, 0)
	for _, rec := range recs {
		if err := r.Add(rec); err != nil {
			t.Fatalf("offset %d: %v", rec.Offset, err)
		}
	}
	return r, r.Finish(end)
}

// TestReplayHistory checks what the history keeps of each kind of record:
// a transactional commit takes effect at its COMMIT marker with the
// marker's time, not the value's receipt time; an ABORT discards it into
// Aborted; a plain commit recorded after a transactional one that commits
// later keeps the offset (log position decides, as the coordinator does);
// the same offset committed again is one entry; a tombstone deletes;
// records of other groups count only as records; offsets no record holds
// are holes, and the history is whole after the last; a commit left
// without a marker is pending; group metadata records are generations.
func TestReplayHistory(t *testing.T) {
	const g = "app"
	l := &log{}
	l.group(g, 1, "m1")                             // 0
	l.commit(g, 0, 10, -1, 5)                       // 1: plain, received at 5
	l.commit(g, 0, 20, 7, 999)                      // 2: txn 7, received at 999
	l.marker(7, audit.MarkerCommit)                 // 3: takes effect here, at this batch's time
	l.commit(g, 0, 20, 7, 999)                      // 4: txn 7 again, same offset
	l.marker(7, audit.MarkerCommit)                 // 5
	l.commit(g, 1, 30, 8, 1)                        // 6: txn 8 …
	l.marker(8, audit.MarkerAbort)                  // 7: … aborted
	l.commit(g, 1, 40, 9, 1)                        // 8: txn 9 …
	l.commit(g, 1, 35, -1, 77)                      // 9: … a later plain commit
	l.marker(9, audit.MarkerCommit)                 // 10: 35 stays
	l.next += 5                                     // 11-15: compacted away
	l.commit("other", 0, 1, -1, 1)                  // 16
	l.group(g, 2)                                   // 17: empty
	l.rec(offsetKey(1, g, "in", 1), nil, -1, false) // 18: deleted
	l.commit(g, 0, 50, 11, 1)                       // 19: open at the end
	r, h := replay(t, g, l.recs, 22)

	in := func(p int32) audit.TopicPartition { return audit.TopicPartition{Topic: "in", Partition: p} }
	want0 := []audit.Commit{
		{Offset: 10, Time: 5, At: 1, Record: 1, ProducerID: -1, ProducerEpoch: -1, LastAt: 1, LastTime: 5},
		{Offset: 20, Time: 40, At: 3, Record: 2, ProducerID: 7, ProducerEpoch: 2, Transactional: true, Repeats: 1, LastAt: 5, LastTime: 60},
	}
	if !reflect.DeepEqual(h.Commits[in(0)], want0) {
		t.Errorf("in/0 commits\n%+v\nwant\n%+v", h.Commits[in(0)], want0)
	}
	want1 := []audit.Commit{
		{Offset: 35, Time: 77, At: 9, Record: 9, ProducerID: -1, ProducerEpoch: -1, LastAt: 9, LastTime: 77},
		{Offset: -1, Deleted: true, Time: 140, At: 18, Record: 18, ProducerID: -1, ProducerEpoch: -1, LastAt: 18, LastTime: 140},
	}
	if !reflect.DeepEqual(h.Commits[in(1)], want1) {
		t.Errorf("in/1 commits\n%+v\nwant\n%+v", h.Commits[in(1)], want1)
	}
	if a := h.Aborted[in(1)]; len(a) != 1 || a[0].Offset != 30 || a[0].At != 7 || a[0].Time != 80 {
		t.Errorf("aborted %+v: want 30, at the ABORT marker", h.Aborted)
	}
	if p := h.Pending[in(0)]; len(p) != 1 || p[0].Offset != 50 || p[0].Record != 19 {
		t.Errorf("pending %+v: want 50", h.Pending)
	}
	if h.Records != 15 || h.HoleOffsets != 7 || !reflect.DeepEqual(h.Holes, []audit.OffsetRange{{From: 11, To: 16}, {From: 20, To: 22}}) ||
		h.WholeFrom != 22 || h.WholeSince != -1 || h.End != 22 {
		t.Errorf("records %d, holes %+v (%d offsets), whole from %d since %d, end %d", h.Records, h.Holes, h.HoleOffsets, h.WholeFrom, h.WholeSince, h.End)
	}
	if !h.Whole(1, 10) || h.Whole(10, 17) || h.Whole(19, 22) {
		t.Errorf("Whole: want [1, 10] whole, [10, 17] and [19, 22] not")
	}
	if len(h.Generations) != 2 || h.Generations[0].Members != 1 || h.Generations[0].Generation != 1 || !h.Generations[1].Empty() || h.Generations[1].At != 17 {
		t.Errorf("generations %+v", h.Generations)
	}
	offs, _ := r.Offsets()
	if !maps.Equal(offs, map[audit.TopicPartition]int64{in(0): 20}) {
		t.Errorf("offsets %v", offs)
	}
}

// FuzzReplay: any sequence of commits, markers, tombstones, group records
// and gaps replays without panic, and each partition's history ends in
// the offset the replay holds (or in a deletion when it holds none), with
// every offset of the log either read or in a hole.
func FuzzReplay(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	f.Add([]byte{1, 1, 1, 2, 2, 2, 3, 0, 4, 5, 9, 9, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 512 {
			return
		}
		l := &log{}
		for i, op := range ops {
			p, pid, off := int32(op>>6&1), int64(op>>4&3), int64(op>>2)
			switch op & 7 {
			case 0:
				l.commit("g", p, off, -1, int64(i))
			case 1, 2:
				l.commit("g", p, off, pid, int64(i))
			case 3:
				l.marker(pid, audit.MarkerCommit)
			case 4:
				l.marker(pid, audit.MarkerAbort)
			case 5:
				l.rec(offsetKey(1, "g", "in", p), nil, pid, op&8 != 0)
			case 6:
				l.next += int64(op >> 3)
			case 7:
				l.group("g", int32(i), "m")
			}
		}
		r := NewReplay("g")
		r.KeepHistory(audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic}, 1, 0)
		for _, rec := range l.recs {
			if err := r.Add(rec); err != nil {
				t.Fatal(err)
			}
		}
		h := r.Finish(l.next)
		offs, _ := r.Offsets()
		for tp, cs := range h.Commits {
			last := cs[len(cs)-1]
			o, ok := offs[tp]
			if ok != !last.Deleted || (ok && o != last.Offset) {
				t.Fatalf("%s: history ends in %+v, the replay holds %d (%v)", tp, last, o, ok)
			}
		}
		if h.Records+h.HoleOffsets != h.End {
			t.Fatalf("%d records and %d offsets in holes, the log ends at %d", h.Records, h.HoleOffsets, h.End)
		}
	})
}

// damagedSource yields a partition's records, then fails for damage.
type damagedSource struct {
	recs []audit.Record
	hw   int64
	err  error
}

func (s damagedSource) Partitions(context.Context, string) (int32, error) { return 1, nil }
func (s damagedSource) Offsets(context.Context, audit.TopicPartition) (audit.PartitionOffsets, error) {
	return audit.PartitionOffsets{LSO: s.hw, HW: s.hw}, nil
}
func (s damagedSource) Records(_ context.Context, _ audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		for _, r := range s.recs {
			if !yield(r, nil) {
				return
			}
		}
		if s.err != nil {
			yield(audit.Record{}, s.err)
		}
	}
}

// TestReadFromDamage: damage in the commit log is the history's Unread,
// never compaction's holes and never a history that passes for whole: a
// record of the group that does not decode is one unread offset (the read
// goes on), one of another group is nothing of this group's; a read that
// stops for damage (a batch failing its CRC) leaves the rest of the
// partition unread; a failure that is not damage stays an error.
func TestReadFromDamage(t *testing.T) {
	l := &log{}
	l.commit("g", 0, 10, -1, 0)
	l.rec(offsetKey(1, "g", "in", 0), []byte{0, 9, 1}, -1, false)     // this group's, value version 9
	l.rec(offsetKey(1, "other", "in", 0), []byte{0, 9, 1}, -1, false) // another group's
	l.commit("g", 0, 20, -1, 0)
	tp := audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic}
	h, err := ReadFrom(t.Context(), damagedSource{recs: l.recs, hw: 10, err: fmt.Errorf("batch at byte 700: crc32c: %w", audit.ErrCorrupt)}, "g", tp, 1, audit.PartitionOffsets{HW: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Commits[audit.TopicPartition{Topic: "in", Partition: 0}]) != 2 || len(h.Unread) != 2 || h.HoleOffsets != 0 ||
		h.Unread[0].From != 1 || h.Unread[0].To != 2 || h.Unread[1].From != 4 || h.Unread[1].To != 10 || !strings.Contains(h.Unread[1].Why, "crc32c") {
		t.Errorf("history %+v", h)
	}
	if h.Whole(0, 1) != true || h.Whole(0, 2) || h.Whole(5, 6) {
		t.Errorf("Whole: [0,1) %v, [0,2) %v, [5,6) %v", h.Whole(0, 1), h.Whole(0, 2), h.Whole(5, 6))
	}
	if _, err := ReadFrom(t.Context(), damagedSource{hw: 10, err: fmt.Errorf("broker closed the connection")}, "g", tp, 1, audit.PartitionOffsets{HW: 10}); err == nil {
		t.Error("a failed read: no error")
	}
	h, err = ReadFrom(t.Context(), damagedSource{hw: 10, err: fmt.Errorf("not captured: %w", audit.ErrCorrupt)}, "g", tp, 1, audit.PartitionOffsets{HW: 10})
	if err != nil || len(h.Unread) != 1 || h.Unread[0].From != 0 || h.Unread[0].To != 10 {
		t.Errorf("nothing read: %+v, %v; want every offset unread, not the group unknown", h, err)
	}
}
