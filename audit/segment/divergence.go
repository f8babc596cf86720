package segment

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/kaudit/kaudit/audit"
)

// Divergence compares the replicas of every partition held in more than one
// of the dirs with the replica read first (latest leader epoch, longest
// log), over the offsets both still hold above their log starts. A replica
// missing offsets another holds, or holding different content at the same
// offset, gives one truncated finding per contiguous run of offsets, with
// the replicas named in the detail. A replica whose files cannot be read
// gives an unreadable finding.
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
		for _, r := range rs {
			if r.err != nil {
				f := audit.NewFinding(audit.StageOffsets, audit.CauseUnreadable, tp, -1)
				f.Detail = "replica " + r.path + ": " + r.err.Error()
				out = append(out, f)
			}
		}
		if rs[0].err != nil {
			continue
		}
		for _, o := range rs[1:] {
			if o.err != nil {
				continue
			}
			fs, err := compareReplicas(ctx, rs[0], o)
			if err != nil {
				return out, err
			}
			out = append(out, fs...)
		}
	}
	return out, nil
}

type divergenceKind int

const (
	onlyInRef   divergenceKind = iota // the other replica lacks it
	onlyInOther                       // the read replica lacks it
	different
)

// divergentRange is consecutive offsets where two replicas diverge the same way.
type divergentRange struct {
	kind  divergenceKind
	first audit.Record
	last  int64
	count int64
}

func compareReplicas(ctx context.Context, ref, other *replica) ([]audit.Finding, error) {
	lo := max(ref.logStart, other.logStart)
	hi := max(ref.logEnd, other.logEnd)
	nextA, stopA := iter.Pull2(ref.records(ctx, lo, hi))
	defer stopA()
	nextB, stopB := iter.Pull2(other.records(ctx, lo, hi))
	defer stopB()

	var (
		out []audit.Finding
		cur *divergentRange
	)
	emit := func() {
		if cur == nil {
			return
		}
		f := audit.NewFinding(audit.StageOffsets, audit.CauseTruncated, ref.tp, cur.first.Offset)
		f.Count = cur.count
		f.Timestamp = cur.first.Timestamp
		f.ProducerID, f.ProducerEpoch = cur.first.Batch.ProducerID, cur.first.Batch.ProducerEpoch
		span := fmt.Sprintf("offsets %d-%d (%d records)", cur.first.Offset, cur.last, cur.count)
		switch cur.kind {
		case onlyInRef:
			f.Detail = fmt.Sprintf("%s lacks %s that %s holds", other.label(), span, ref.label())
		case onlyInOther:
			f.Detail = fmt.Sprintf("%s lacks %s that %s holds", ref.label(), span, other.label())
		case different:
			f.Detail = fmt.Sprintf("replicas %s and %s hold different records at %s", ref.short(), other.short(), span)
		}
		if hw := max(ref.hw, other.hw); cur.first.Offset >= hw {
			f.Detail += fmt.Sprintf("; above the high watermark %d", hw)
		}
		f.Detail += fmt.Sprintf("; the audit reads %s (leader epoch %d, log end %d: the last leader's by the leader-epoch history)", ref.label(), ref.lastEpoch(), ref.logEnd)
		out = append(out, f)
		cur = nil
	}
	add := func(kind divergenceKind, r audit.Record) {
		if cur != nil && cur.kind != kind {
			emit()
		}
		if cur == nil {
			cur = &divergentRange{kind: kind, first: r}
		}
		cur.last = r.Offset
		cur.count++
	}
	a, errA, okA := nextA()
	b, errB, okB := nextB()
	for okA || okB {
		if errA != nil {
			return out, errA
		}
		if errB != nil {
			return out, errB
		}
		switch {
		case okA && okB && a.Offset == b.Offset:
			if !sameRecord(&a, &b) {
				add(different, a)
			} else {
				emit()
			}
			a, errA, okA = nextA()
			b, errB, okB = nextB()
		case okA && (!okB || a.Offset < b.Offset):
			add(onlyInRef, a)
			a, errA, okA = nextA()
		default:
			add(onlyInOther, b)
			b, errB, okB = nextB()
		}
	}
	emit()
	return out, nil
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
