package segment

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Divergence compares the replicas of every partition held in more than one
// of the dirs with the replica read first (latest leader epoch, longest
// log), over the offsets each still holds above both log starts. Every
// replica is compared at once, offset by offset, so that a range several
// replicas hold alike and the read one lacks (the old leader and its
// followers after an unclean election) is one truncated finding naming all
// of them, counted once: one finding per contiguous run of offsets where the
// same replicas lack, hold or differ. A replica whose files cannot be read
// gives an unreadable finding.
//
// A range that reaches above the high watermark is said so; when a replica
// holding it was not shut down cleanly, its checkpointed high watermark may
// trail what it had acknowledged (the checkpoint is flushed every 5 s), and
// the detail says that whether those offsets were acknowledged is not known.
//
// Internal topics are not compared: a broker's copy of the KRaft metadata
// log trails the controller's by design (it is a Raft log its observers
// fetch), and the coordinators' topics hold no app record, only the state
// the audit reads from the replica read first (the leader's), as the
// coordinator loads it on restart.
func (d *Dir) Divergence(ctx context.Context) ([]audit.Finding, error) {
	tps := make([]audit.TopicPartition, 0, len(d.replicas))
	for tp, rs := range d.replicas {
		if len(rs) > 1 && !internalTopic(tp.Topic) {
			tps = append(tps, tp)
		}
	}
	slices.SortFunc(tps, func(a, b audit.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var out []audit.Finding
	for _, tp := range tps {
		rs := d.replicas[tp]
		var others []*replica
		for _, r := range rs {
			if r.err != nil {
				out = append(out, audit.UnreadablePartition(tp, "replica "+r.path+": "+r.err.Error()))
			} else if r != rs[0] {
				others = append(others, r)
			}
		}
		if rs[0].err != nil || len(others) == 0 {
			continue
		}
		fs, err := compareReplicas(ctx, rs[0], others)
		if err != nil {
			return out, err
		}
		out = append(out, fs...)
	}
	return out, nil
}

type divergenceKind int

const (
	onlyInRef   divergenceKind = iota // other replicas lack it
	onlyInOther                       // the read replica lacks it, other replicas hold it
	different                         // other replicas hold different records
	kinds
)

// divergentRange is a contiguous range of offsets where the same replicas (who, a
// bit per other replica) lack, hold or differ.
type divergentRange struct {
	who   uint64
	first audit.Record
	last  int64
	count int64
}

// maxCompared bounds the replicas of one partition compared at once (the
// bits of divergentRange.who); more are compared in groups.
const maxCompared = 64

func compareReplicas(ctx context.Context, ref *replica, others []*replica) ([]audit.Finding, error) {
	if len(others) > maxCompared {
		a, err := compareReplicas(ctx, ref, others[:maxCompared])
		if err != nil {
			return a, err
		}
		b, err := compareReplicas(ctx, ref, others[maxCompared:])
		return append(a, b...), err
	}
	type cursor struct {
		r    *replica
		lo   int64 // compared from here: both log starts
		next func() (audit.Record, error, bool)
		stop func()
		rec  audit.Record
		ok   bool
	}
	lo, hi := int64(-1), ref.logEnd
	cs := make([]*cursor, len(others))
	for i, o := range others {
		c := &cursor{r: o, lo: max(ref.logStart, o.logStart)}
		if lo < 0 || c.lo < lo {
			lo = c.lo
		}
		hi = max(hi, o.logEnd)
		cs[i] = c
	}
	refNext, refStop := iter.Pull2(ref.records(ctx, lo, hi))
	defer refStop()
	for _, c := range cs {
		c.next, c.stop = iter.Pull2(c.r.records(ctx, c.lo, hi))
		defer c.stop()
	}
	advance := func(next func() (audit.Record, error, bool)) (audit.Record, bool, error) {
		r, err, ok := next()
		if ok && err != nil {
			return r, false, err
		}
		return r, ok, nil
	}
	a, okA, err := advance(refNext)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.rec, c.ok, err = advance(c.next); err != nil {
			return nil, err
		}
	}
	var (
		out []audit.Finding
		cur [kinds]*divergentRange
	)
	emit := func(k divergenceKind) {
		if cur[k] != nil {
			out = append(out, divergenceFinding(ref, others, k, cur[k]))
			cur[k] = nil
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("compare replicas of %s: %w", ref.tp, err)
		}
		o, any := int64(0), false
		if okA {
			o, any = a.Offset, true
		}
		for _, c := range cs {
			if c.ok && (!any || c.rec.Offset < o) {
				o, any = c.rec.Offset, true
			}
		}
		if !any {
			break
		}
		refHas := okA && a.Offset == o
		var who [kinds]uint64
		var first [kinds]audit.Record
		for i, c := range cs {
			has := c.ok && c.rec.Offset == o
			switch {
			case o < c.lo:
				// below this replica's log start or the read one's: not compared
			case refHas && !has:
				who[onlyInRef] |= 1 << i
				first[onlyInRef] = a
			case refHas && !sameRecord(&a, &c.rec):
				who[different] |= 1 << i
				first[different] = a
			case !refHas && has:
				if who[onlyInOther] == 0 {
					first[onlyInOther] = c.rec
				}
				who[onlyInOther] |= 1 << i
			}
		}
		for k := range kinds {
			if cur[k] != nil && cur[k].who != who[k] {
				emit(k)
			}
			if who[k] == 0 {
				continue
			}
			if cur[k] == nil {
				cur[k] = &divergentRange{who: who[k], first: first[k]}
			}
			cur[k].last = o
			cur[k].count++
		}
		if refHas {
			if a, okA, err = advance(refNext); err != nil {
				return out, err
			}
		}
		for _, c := range cs {
			if c.ok && c.rec.Offset == o {
				if c.rec, c.ok, err = advance(c.next); err != nil {
					return out, err
				}
			}
		}
	}
	for k := range kinds {
		emit(k)
	}
	slices.SortStableFunc(out, func(x, y audit.Finding) int { return cmp.Compare(x.Offset, y.Offset) })
	return out, nil
}

// divergenceFinding is the finding of run cur of kind k: truncated where
// the read replica lacks records or holds others, under-replicated where
// only other replicas lack them (a follower behind or cut back: the records
// are in the log the audit reads, so nothing is lost).
func divergenceFinding(ref *replica, others []*replica, k divergenceKind, cur *divergentRange) audit.Finding {
	var who []*replica
	for i, o := range others {
		if cur.who&(1<<i) != 0 {
			who = append(who, o)
		}
	}
	cause := audit.CauseTruncated
	if k == onlyInRef {
		cause = audit.CauseUnderReplicated
	}
	f := audit.NewFinding(audit.StageOffsets, cause, ref.tp, cur.first.Offset)
	f.Count = cur.count
	f.Timestamp = cur.first.Timestamp
	f.ProducerID, f.ProducerEpoch = cur.first.Batch.ProducerID, cur.first.Batch.ProducerEpoch
	span := fmt.Sprintf("offsets %d-%d (%d records)", cur.first.Offset, cur.last, cur.count)
	names := func(label bool) string {
		l := make([]string, len(who))
		for i, r := range who {
			l[i] = r.short()
		}
		s := joinAnd(l)
		if label {
			s = map[bool]string{true: "replica ", false: "replicas "}[len(who) == 1] + s
		}
		return s
	}
	verb := map[bool][2]string{true: {"lacks", "holds"}, false: {"lack", "hold"}}[len(who) == 1]
	switch k {
	case onlyInRef:
		f.Detail = fmt.Sprintf("%s %s %s that %s holds", names(true), verb[0], span, ref.label())
	case onlyInOther:
		f.Detail = fmt.Sprintf("%s lacks %s that %s %s", ref.label(), span, names(true), verb[1])
	case different:
		f.Detail = fmt.Sprintf("replicas %s and %s hold different records at %s", ref.short(), names(false), span)
	}
	hw := ref.hw
	for _, r := range who {
		hw = max(hw, r.hw)
	}
	switch {
	case cur.first.Offset >= hw:
		f.Detail += fmt.Sprintf("; above the high watermark %d", hw)
	case cur.last >= hw:
		f.Detail += fmt.Sprintf("; offsets %d-%d of it are above the high watermark %d", hw, cur.last, hw)
	}
	if cur.last >= hw && k != onlyInRef {
		// a broker killed -9 checkpointed its HW up to 5 s before it died
		for _, r := range who {
			if r.hw < r.logEnd && !r.cleanShutdown() {
				f.Detail += fmt.Sprintf("; %s was not shut down cleanly: its checkpointed high watermark %d trails its log end %d, so whether it acknowledged offsets %d-%d is not known", r.short(), r.hw, r.logEnd, max(hw, cur.first.Offset), min(cur.last, r.logEnd-1))
			}
		}
	}
	f.Detail += fmt.Sprintf("; the audit reads %s (leader epoch %d, log end %d: the last leader's by the leader-epoch history)", ref.label(), ref.lastEpoch(), ref.logEnd)
	return f
}

// cleanShutdown reports whether the replica's log dir holds the marker of
// a clean broker shutdown.
func (r *replica) cleanShutdown() bool {
	_, err := os.Stat(filepath.Join(filepath.Dir(r.path), CleanShutdownFile))
	return err == nil
}

// joinAnd joins names as "a", "a and b", "a, b and c".
func joinAnd(l []string) string {
	if len(l) <= 1 {
		return strings.Join(l, "")
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}

// sameRecord compares what a replica must hold identically at one offset.
func sameRecord(a, b *audit.Record) bool {
	if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || a.Timestamp != b.Timestamp ||
		(a.Key == nil) != (b.Key == nil) || (a.Value == nil) != (b.Value == nil) ||
		a.Batch.ProducerID != b.Batch.ProducerID || a.Batch.ProducerEpoch != b.Batch.ProducerEpoch ||
		a.Batch.Control != b.Batch.Control || a.Batch.Transactional != b.Batch.Transactional ||
		len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Headers {
		if a.Headers[i].Key != b.Headers[i].Key || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}
