package fakeapp

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kaudit/kaudit/audit"
)

func (g *gen) producer(sub, idx int) string {
	return fmt.Sprintf("%s-6f1c0e2a-9d5d-4dd6-bc4c-cf8320df3bb2-%d-%d", g.s.AppID, sub, idx)
}

// txn writes one transaction's records, aborting and replaying it when the
// scenario says so. write is called once per attempt with commit telling
// which attempt it is.
func (g *gen) txn(prod string, forceAbort bool, write func(commit bool) error) error {
	g.txnCount++
	return writeTxn(g.b, prod, forceAbort || g.s.AbortEvery > 0 && g.txnCount%g.s.AbortEvery == 0, write)
}

// writeTxn writes one transaction of prod on b, first aborted (and then
// replayed) when abort is set; write is called once per attempt, commit
// telling which.
func writeTxn(b Backend, prod string, abort bool, write func(commit bool) error) error {
	if abort {
		if err := b.Begin(prod); err != nil {
			return err
		}
		if err := write(false); err != nil {
			return err
		}
		if err := b.End(prod, false); err != nil {
			return err
		}
	}
	if err := b.Begin(prod); err != nil {
		return err
	}
	if err := write(true); err != nil {
		return err
	}
	return b.End(prod, true)
}

// subtopology0 is the table's chain (its steps, selectKey) → repartition
// sink, one task per source partition, each with its own producer; their
// transactions interleave on the repartition partitions. A task of a
// table whose stream merges several topics reads the same partition of
// each, the record with the lowest timestamp first (Streams'
// PartitionGroup); a record's elements are written in the order the chain
// emits them.
func (g *gen) subtopology0() error {
	s := g.s
	g.repr = make([][][]*reprRec, len(s.Tables))
	for ti, t := range s.Tables {
		g.repr[ti] = make([][]*reprRec, s.Partitions)
		byPart := map[int32][]*srcIn{}
		for _, topic := range t.topics() {
			for _, in := range g.ins[topic] {
				if in.consumed {
					byPart[in.tp.Partition] = append(byPart[in.tp.Partition], in)
				}
			}
		}
		for p := range byPart {
			sort.SliceStable(byPart[p], func(i, j int) bool { return byPart[p][i].ts < byPart[p][j].ts })
			for i, in := range byPart[p] {
				in.seq = i
			}
		}
		for _, r := range g.srcs[ti] {
			r.pending = true
		}
		rtopic := s.Repartition(t)
		for start := 0; ; start += s.Commit {
			more := false
			for p := int32(0); p < s.Partitions; p++ {
				recs := byPart[p]
				if start >= len(recs) {
					continue
				}
				more = true
				batch := recs[start:min(start+s.Commit, len(recs))]
				force := false
				for _, in := range batch {
					for _, r := range in.elems[ti] {
						force = force || r.fault == FaultAbortNotReplayed
					}
				}
				err := g.txn(g.producer(0, int(p)), force, func(commit bool) error {
					for _, in := range batch {
						for _, r := range in.elems[ti] {
							if err := g.writeCopy(ti, rtopic, p, r, commit); err != nil {
								return err
							}
						}
					}
					return nil
				})
				if err != nil {
					return err
				}
				for _, in := range batch {
					g.offsets[in.tp] = in.offset + 1
				}
			}
			if !more {
				break
			}
		}
	}
	return nil
}

// writeCopy writes one element's repartition copy in the task's
// transaction (commit: the attempt that commits), as the faults say.
func (g *gen) writeCopy(ti int, rtopic string, p int32, r *srcRec, commit bool) error {
	s := g.s
	r.pending = false
	if r.key == "" || r.fault == FaultDrop || (commit && r.fault == FaultAbortNotReplayed) {
		return nil
	}
	val, err := g.encode(rtopic, r.value)
	if err != nil {
		return err
	}
	rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
	n := 1
	if commit && r.fault == FaultDuplicate {
		n = 2
	}
	for range n {
		tp := audit.TopicPartition{Topic: rtopic, Partition: rp}
		offs, err := g.b.TxnProduce(g.producer(0, int(p)), tp, []Out{{Key: []byte(r.key), Value: val, Timestamp: r.ts}})
		if err != nil {
			return err
		}
		if commit {
			g.repr[ti][rp] = append(g.repr[ti][rp], &reprRec{src: r, offset: offs[0], dup: n == 2 && len(g.repr[ti][rp]) > 0 && g.repr[ti][rp][len(g.repr[ti][rp])-1].src == r})
		} else if r.fault == FaultAbortNotReplayed {
			g.repr[ti][rp] = append(g.repr[ti][rp], &reprRec{src: r, offset: offs[0], dup: true}) // aborted copy
		}
	}
	return nil
}

// state is one table's store in one task.
type state struct {
	value any
	count int64
	ts    int64
}

// subtopology1 applies the repartition records of all three tables, one
// task per partition, flushing the cache (changelog and join output) at
// every commit: the changelog and output hold a subsequence of states.
func (g *gen) subtopology1() error {
	s := g.s
	for p := int32(0); p < s.Partitions; p++ {
		type item struct {
			ti int
			rr *reprRec
		}
		queues := make([][]*reprRec, len(s.Tables)) // per table, the records to apply in offset order
		for ti := range s.Tables {
			recs := g.repr[ti][p]
			var live []*reprRec
			for _, rr := range recs {
				if !(rr.dup && rr.src.fault == FaultAbortNotReplayed) {
					live = append(live, rr)
				}
			}
			cut := max(len(live)-s.Inflight, 0)
			queues[ti] = live[:cut]
			// committed offset of the repartition partition
			tp := audit.TopicPartition{Topic: s.Repartition(s.Tables[ti]), Partition: p}
			if cut > 0 {
				g.offsets[tp] = live[cut-1].offset + 1
			} else if len(recs) > 0 {
				g.offsets[tp] = recs[0].offset
			}
			for _, rr := range live[cut:] {
				rr.src.pending = true
			}
		}
		// A task applies each partition's records in offset order, and picks
		// among its partitions the one whose next record has the lowest
		// timestamp (Streams' PartitionGroup): a key's updates are applied in
		// the order of their copies, not of their timestamps.
		var items []item
		for {
			best := -1
			for ti, q := range queues {
				if len(q) > 0 && (best < 0 || q[0].src.ts < queues[best][0].src.ts) {
					best = ti
				}
			}
			if best < 0 {
				break
			}
			items = append(items, item{best, queues[best][0]})
			queues[best] = queues[best][1:]
		}
		stores := make([]map[string]*state, len(s.Tables))
		for ti := range stores {
			stores[ti] = map[string]*state{}
		}
		resetDone := false
		prod := g.producer(1, int(p))
		for start := 0; start < len(items); start += s.Commit {
			batch := items[start:min(start+s.Commit, len(items))]
			dirty := make([]map[string]bool, len(s.Tables))
			for ti := range dirty {
				dirty[ti] = map[string]bool{}
			}
			for _, it := range batch {
				r := it.rr.src
				r.applied = true
				g.appliedSeq++
				r.appliedAt = g.appliedSeq
				if r.fault == FaultStateDiverged {
					continue
				}
				for _, f := range g.faultOf[FaultStateReset] {
					if f.Table == it.ti && f.Partition == p && !resetDone && start >= len(items)/2 {
						stores[it.ti] = map[string]*state{}
						resetDone = true
						for _, q := range g.srcs[it.ti] {
							// the task's store holds the keys of its repartition partition
							if q.key != "" && q.shown && audit.DefaultPartition([]byte(q.key), s.Partitions) == p {
								q.wiped = true
							}
						}
					}
				}
				r.shown = true
				g.applied++
				r.order = g.applied
				st := stores[it.ti][r.key]
				if st == nil {
					st = &state{}
					stores[it.ti][r.key] = st
				}
				st.value = reduce(s.Tables[it.ti].Reducer, st, r.value)
				st.count++
				st.ts = max(st.ts, r.ts)
				dirty[it.ti][r.key] = true
			}
			err := g.txn(prod, false, func(commit bool) error { return g.flush(p, prod, stores, dirty, commit) })
			if err != nil {
				return err
			}
			if s.Purge && (start/s.Commit)%3 == 2 {
				if err := g.purge(p); err != nil {
					return err
				}
			}
		}
		if s.Purge {
			if err := g.purge(p); err != nil {
				return err
			}
		}
	}
	return nil
}

// purge deletes applied repartition records below the committed offsets,
// as Streams does every repartition.purge.interval.ms.
func (g *gen) purge(p int32) error {
	for _, t := range g.s.Tables {
		tp := audit.TopicPartition{Topic: g.s.Repartition(t), Partition: p}
		if c, ok := g.offsets[tp]; ok {
			if err := g.b.DeleteRecords(tp, c); err != nil {
				return err
			}
			g.logStart(tp, c)
		}
	}
	return nil
}

func (g *gen) logStart(tp audit.TopicPartition, off int64) {
	if g.starts == nil {
		g.starts = map[audit.TopicPartition]int64{}
	}
	g.starts[tp] = max(g.starts[tp], off)
}

// flush writes each dirty key's state to its changelog and, for keys the
// left table holds, the joined record to the output.
func (g *gen) flush(p int32, prod string, stores []map[string]*state, dirty []map[string]bool, commit bool) error {
	s := g.s
	keys := map[string]bool{}
	for ti, d := range dirty {
		t := s.Tables[ti]
		for _, k := range sortedSet(d) {
			st := stores[ti][k]
			if st == nil {
				continue
			}
			val, err := g.stateValue(t, st)
			if err != nil {
				return err
			}
			tp := audit.TopicPartition{Topic: s.Changelog(t), Partition: p}
			if _, err := g.b.TxnProduce(prod, tp, []Out{{Key: []byte(k), Value: val, Timestamp: st.ts}}); err != nil {
				return err
			}
			if commit {
				g.lastState(ti)[k] = st.ts
			}
			keys[k] = true
			if t.Output != "" {
				if err := g.writeOutput(ti, p, prod, k, st, commit); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range sortedSet(keys) {
		left := stores[0][k]
		if left == nil || g.joinMissing(k) {
			continue
		}
		ts := left.ts
		joined := map[string]any{"orderId": k, "order": left.value}
		for ti := 1; ti < len(s.Tables); ti++ {
			if st := stores[ti][k]; st != nil {
				joined[s.Tables[ti].Name] = st.value
				ts = max(ts, st.ts)
			}
		}
		val, err := g.encode(s.Output, joined)
		if err != nil {
			return err
		}
		tp := audit.TopicPartition{Topic: s.Output, Partition: p}
		if s.OutputPartitions > 0 {
			tp.Partition = audit.DefaultPartition([]byte(k), s.OutputPartitions)
		}
		offs, err := g.b.TxnProduce(prod, tp, []Out{{Key: []byte(k), Value: val, Timestamp: ts}})
		if err != nil {
			return err
		}
		if commit {
			if g.lastOut == nil {
				g.lastOut = map[string]outRec{}
			}
			g.lastOut[k] = outRec{tp: tp, offset: offs[0], ts: ts}
		}
	}
	return nil
}

func (g *gen) stateValue(t TableSpec, st *state) ([]byte, error) {
	if t.Reducer == ReduceCount {
		return json.Marshal(st.count)
	}
	return g.encode(g.s.Changelog(t), st.value)
}

func (g *gen) joinMissing(k string) bool {
	return g.joinMissingKey != "" && k == g.joinMissingKey
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reduce is what the table's reducer makes of the state and a new value.
func reduce(red Reducer, st *state, val any) any {
	v, ok := val.(map[string]any)
	prev, okPrev := st.value.(map[string]any)
	if st.count == 0 || red == ReduceLatest || red == ReduceCount || !ok || !okPrev {
		return val
	}
	amount := func(m map[string]any) int {
		switch n := m["amount"].(type) {
		case int:
			return n
		case float64:
			return int(n)
		}
		return 0
	}
	switch red {
	case ReduceSum:
		out := make(map[string]any, len(prev))
		for k, x := range prev {
			out[k] = x
		}
		out["amount"] = amount(prev) + amount(v)
		return out
	case ReduceExpr:
		return map[string]any{"orderId": v["orderId"], "seq": v["seq"], "table": v["table"], "amount": amount(prev) + amount(v)}
	}
	return v
}

// outRec is the output's last committed record of a key.
type outRec struct {
	tp     audit.TopicPartition
	offset int64
	ts     int64
}

// lastState is table ti's last committed changelog timestamp per key.
func (g *gen) lastState(ti int) map[string]int64 {
	if g.lastCl == nil {
		g.lastCl = make([]map[string]int64, len(g.s.Tables))
	}
	if g.lastCl[ti] == nil {
		g.lastCl[ti] = map[string]int64{}
	}
	return g.lastCl[ti]
}
