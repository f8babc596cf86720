package reconcile

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

type outRecord struct {
	tp     audit.TopicPartition
	offset int64
	ts     int64
	digest codec.Digest
	raw    []byte // serialized value, decoded for a finding
	null   bool
}

// side is one table's value for a key, actual or expected.
type side struct {
	value   audit.Value
	ts      int64
	present bool
}

// join checks the output topic against the joiner chain over the actual
// tables (a join-stage finding when they disagree), and notes in each
// vanished input's detail what the output should have held end to end.
func (r *run) join(ctx context.Context, j *Join) error {
	left := r.tables[j.Left]
	if left == nil {
		r.skipped("join into %s: its left table %s is not in the spec", j.Output, j.Left)
		return nil
	}
	rights := make([]*tableState, len(j.Right))
	for i, name := range j.Right {
		if rights[i] = r.tables[name]; rights[i] == nil {
			r.skipped("join into %s: its table %s is not in the spec", j.Output, name)
			return nil
		}
	}
	for _, ts := range append([]*tableState{left}, rights...) {
		if ts.t.Changelog == "" || r.topics[ts.t.Changelog].Name == "" {
			r.skipped("join into %s: table %s has no readable changelog", j.Output, ts.t.Name)
			return nil
		}
	}
	parts, ok := r.partitionsOf(j.Output, "output")
	if !ok {
		return nil
	}
	var unreadable []audit.TopicPartition
	for _, ts := range append([]*tableState{left}, rights...) {
		unreadable = append(unreadable, ts.unreadable...)
	}
	out := map[string]outRecord{}
	rd := r.read(ctx, tpsOf(j.Output, parts), "output", true)
	defer rd.stop()
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: j.Output, Partition: p}
		read := r.walk(ctx, rd, tp, func(it *item) {
			e := &it.Entry
			if e.Fate != audit.FateCommitted {
				return
			}
			if !r.decoded(it) {
				return
			}
			r.count("output", 1)
			out[it.keyText] = outRecord{tp: tp, offset: e.Record.Offset, ts: e.Record.Timestamp, digest: it.digest,
				raw: bytes.Clone(e.Record.Value), null: e.Record.Value == nil}
		})
		if !read {
			unreadable = append(unreadable, tp)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(unreadable) > 0 {
		r.missing("join into %s: %s could not be read, so the output is not judged", j.Output, tpList(unreadable))
		return nil
	}
	if b, ok := r.src.(audit.Bounded); ok {
		// a store's or the output's older records are not in a bounded
		// capture: a key's state or output may predate it
		for _, c := range r.rep.Cut {
			if c.Role != "changelog" && c.Role != "output" {
				continue
			}
			if _, bounded := b.ClusterLogStart(audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}); bounded {
				r.missing("join into %s: the capture holds %s/%d only from offset %d, so the output is not judged", j.Output, c.Topic, c.Partition, c.LogStart)
				return nil
			}
		}
	}
	outValue := func(o outRecord) string {
		if o.null {
			return "null"
		}
		v, err := r.opts.Decoder.Decode(ctx, j.Output, false, o.raw)
		if err != nil {
			return codec.RawText(o.raw)
		}
		return codec.Text(v)
	}
	keys := map[string]bool{}
	for k := range left.changelog {
		keys[k] = true
	}
	if j.Type == "outer" {
		for _, rt := range rights {
			for k := range rt.changelog {
				keys[k] = true
			}
		}
	}
	for k, o := range out {
		if !o.null {
			keys[k] = true
		}
	}
	lossByKey := map[string][]*input{}
	for _, in := range r.losses {
		lossByKey[in.key] = append(lossByKey[in.key], in)
	}
	for _, key := range sortedKeys(keys) {
		l := r.actual(left, key)
		rs := make([]side, len(rights))
		for i, rt := range rights {
			rs[i] = r.actual(rt, key)
		}
		want, wantPresent, err := r.joined(j, l, rs)
		if err != nil {
			r.note("join into %s key %s: the joiner failed (%v); the key is not checked", j.Output, key, err)
			continue
		}
		o, have := out[key]
		havePresent := have && !o.null
		switch {
		case wantPresent && !havePresent:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, audit.TopicPartition{Topic: j.Output, Partition: r.outPartition(j.Output, key, o, have)}, -1)
			f.Key, f.Expected = key, codec.Text(want.value)
			f.Timestamp = want.ts
			f.Detail = fmt.Sprintf("the tables hold key %s at the cut (left table %s), the output %s has no record for it", key, j.Left, j.Output)
			r.add(f)
		case !wantPresent && havePresent:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Actual, f.Expected = key, outValue(o), "absent"
			f.Timestamp = o.ts
			f.Detail = fmt.Sprintf("the output holds key %s, but the left table %s does not at the cut", key, j.Left)
			r.add(f)
		case wantPresent && havePresent:
			stale := ""
			if j.Value != nil {
				if codec.DigestOf(want.value) != o.digest {
					stale = "the output's last value differs from the joiner over the tables at the cut"
				}
			} else if want.ts != o.ts {
				stale = fmt.Sprintf("the output's last record has timestamp %d, the tables' latest update for the key has %d", o.ts, want.ts)
			}
			if stale == "" {
				continue
			}
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Actual, f.Timestamp = key, outValue(o), o.ts
			if j.Value != nil {
				f.Expected = codec.Text(want.value)
			}
			f.Detail = stale
			r.add(f)
		}
	}
	// End to end: what the output would hold over the expected tables.
	for key, ins := range lossByKey {
		l := r.expectedOf(ctx, left, key)
		rs := make([]side, len(rights))
		for i, rt := range rights {
			rs[i] = r.expectedOf(ctx, rt, key)
		}
		want, wantPresent, err := r.joined(j, l, rs)
		if err != nil {
			continue
		}
		o, have := out[key]
		var b strings.Builder
		fmt.Fprintf(&b, "downstream: output %s", j.Output)
		switch {
		case have && !o.null:
			fmt.Fprintf(&b, " key %s holds %s at %s@%d", key, outValue(o), o.tp, o.offset)
		default:
			fmt.Fprintf(&b, " has no record for key %s", key)
		}
		if wantPresent && j.Value != nil {
			fmt.Fprintf(&b, "; end to end it should hold %s", codec.Text(want.value))
		} else if wantPresent {
			b.WriteString("; end to end it should hold a joined record")
		}
		for _, in := range ins {
			if in.idx >= 0 && int(in.idx) < len(r.rep.Findings) {
				r.rep.Findings[in.idx].Detail += "; " + b.String()
			}
		}
	}
	return nil
}

// outPartition is where the output holds, or would hold, key.
func (r *run) outPartition(topic, key string, o outRecord, have bool) int32 {
	if have {
		return o.tp.Partition
	}
	if kb, ok := keyBytes(r.p.KeySerde, key); ok && r.topics[topic].Partitions > 0 {
		return audit.DefaultPartition(kb, r.topics[topic].Partitions)
	}
	return -1
}

// joined evaluates the join chain for one key.
func (r *run) joined(j *Join, l side, rs []side) (side, bool, error) {
	switch j.Type {
	case "inner":
		if !l.present {
			return side{}, false, nil
		}
		for _, s := range rs {
			if !s.present {
				return side{}, false, nil
			}
		}
	case "outer":
		any := l.present
		for _, s := range rs {
			any = any || s.present
		}
		if !any {
			return side{}, false, nil
		}
	default: // left
		if !l.present {
			return side{}, false, nil
		}
	}
	ts := int64(-1)
	if l.present {
		ts = l.ts
	}
	vals := make([]audit.Value, len(rs))
	for i, s := range rs {
		if s.present {
			vals[i] = s.value
			ts = max(ts, s.ts)
		}
	}
	out := side{ts: ts, present: true}
	if j.Value != nil {
		v, err := j.Value(l.value, vals)
		if err != nil {
			return side{}, false, err
		}
		out.value = v
		if v == nil {
			return side{}, false, nil
		}
	}
	return out, true, nil
}
