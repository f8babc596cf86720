package fakeapp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// The tests of the oracle: each cause the generator injects, on a small
// scenario with that one fault, against what the records it wrote say.
// The expected findings are derived here from the written logs (every
// record, deleted or not, with its transaction's fate), the group's
// committed offsets and the log starts, by the plain rule of each cause,
// never by the generator's own bookkeeping; and their number is pinned,
// counted by hand on the scenario.

// world is a generated scenario: what it wrote, and the oracle's truth.
type world struct {
	s     Scenario
	m     *Memory
	truth *Truth
}

func generate(t *testing.T, s Scenario) *world {
	t.Helper()
	m := NewMemory(time.UnixMilli(s.Now))
	truth, err := Generate(s, NewMemoryBackend(m))
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return &world{s: s, m: m, truth: truth}
}

// logRec is one data record as written, with its fate.
type logRec struct {
	audit.Record
	aborted bool // its transaction aborted
	open    bool // its transaction never ended
	deleted bool // below the log start
}

func (r logRec) committed() bool { return !r.aborted && !r.open }

// log returns every data record written to tp, in offset order, deleted or
// not, each with its transaction's fate read from the markers.
func (w *world) log(t *testing.T, tp audit.TopicPartition) []logRec {
	t.Helper()
	return writtenLog(t, w.m, tp)
}

func writtenLog(t *testing.T, m *Memory, tp audit.TopicPartition) []logRec {
	t.Helper()
	m.mu.Lock()
	mt := m.topics[tp.Topic]
	if mt == nil || int(tp.Partition) >= len(mt.parts) {
		m.mu.Unlock()
		t.Fatalf("no partition %s", tp)
	}
	recs := slices.Clone(mt.parts[tp.Partition].recs)
	m.mu.Unlock()
	start := logStartOf(t, m, tp)
	var out []logRec
	inTxn := map[int64][]int{} // producer id → its open transaction's records in out
	for _, r := range recs {
		if r.Marker != nil {
			for _, i := range inTxn[r.Batch.ProducerID] {
				out[i].aborted = r.Marker.Type == audit.MarkerAbort
			}
			delete(inTxn, r.Batch.ProducerID)
			continue
		}
		out = append(out, logRec{Record: r, deleted: r.Offset < start})
		if r.Batch.Transactional {
			inTxn[r.Batch.ProducerID] = append(inTxn[r.Batch.ProducerID], len(out)-1)
		}
	}
	for _, is := range inTxn {
		for _, i := range is {
			out[i].open = true
		}
	}
	return out
}

func (w *world) logStart(t *testing.T, tp audit.TopicPartition) int64 {
	t.Helper()
	return logStartOf(t, w.m, tp)
}

func logStartOf(t *testing.T, m *Memory, tp audit.TopicPartition) int64 {
	t.Helper()
	o, err := m.Offsets(t.Context(), tp)
	if err != nil {
		t.Fatal(err)
	}
	return o.LogStart
}

// committedOffset is the app's committed offset of tp.
func (w *world) committedOffset(t *testing.T, tp audit.TopicPartition) int64 {
	t.Helper()
	return committedOf(t, w.m, w.s.AppID, tp)
}

func committedOf(t *testing.T, m *Memory, group string, tp audit.TopicPartition) int64 {
	t.Helper()
	g, err := m.GroupOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := g.Offsets[tp]
	if !ok {
		t.Fatalf("no committed offset of %s", tp)
	}
	return c
}

// input is one source record, decoded.
type input struct {
	tp         audit.TopicPartition
	offset, ts int64
	seq        int
	orderID    string // "": none
	status     string
	consumed   bool // below the committed offset
	deleted    bool
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func seqOf(t *testing.T, b []byte) int {
	t.Helper()
	seq, ok := decode(t, b)["seq"].(float64)
	if !ok {
		t.Fatalf("no seq in %s", b)
	}
	return int(seq)
}

// inputs lists a source topic's records, partition by partition in offset
// order.
func (w *world) inputs(t *testing.T, topic string) []input {
	t.Helper()
	var out []input
	for p := range w.s.Partitions {
		tp := audit.TopicPartition{Topic: topic, Partition: p}
		c := w.committedOffset(t, tp)
		for _, r := range w.log(t, tp) {
			v := decode(t, r.Value)
			id, _ := v["orderId"].(string)
			status, _ := v["status"].(string)
			out = append(out, input{tp: tp, offset: r.Offset, ts: r.Timestamp, seq: seqOf(t, r.Value), orderID: id, status: status,
				consumed: r.Offset < c, deleted: r.deleted})
		}
	}
	return out
}

// bySeq indexes inputs by their seq (one source topic: seq is unique).
func bySeq(ins []input) map[int]input {
	m := map[int]input{}
	for _, in := range ins {
		m[in.seq] = in
	}
	return m
}

// copyRec is one copy on a repartition topic.
type copyRec struct {
	logRec
	seq     int
	applied bool // below the group's committed offset
}

// copies lists table t's repartition copies, committed or aborted,
// partition by partition in offset order.
func (w *world) copies(t *testing.T, tab TableSpec) []copyRec {
	t.Helper()
	var out []copyRec
	for p := range w.s.Partitions {
		tp := audit.TopicPartition{Topic: w.s.Repartition(tab), Partition: p}
		recs := w.log(t, tp)
		if len(recs) == 0 {
			continue
		}
		c := w.committedOffset(t, tp)
		for _, r := range recs {
			out = append(out, copyRec{logRec: r, seq: seqOf(t, r.Value), applied: r.Offset < c})
		}
	}
	return out
}

// perKey groups the committed records of a topic by key, in offset order
// (a key is in one partition).
func (w *world) perKey(t *testing.T, topic string, partitions int32) map[string][]logRec {
	t.Helper()
	out := map[string][]logRec{}
	for p := range partitions {
		for _, r := range w.log(t, audit.TopicPartition{Topic: topic, Partition: p}) {
			if r.committed() {
				out[string(r.Key)] = append(out[string(r.Key)], r)
			}
		}
	}
	return out
}

// loss is a loss finding of an input.
func loss(in input, stage audit.Stage, cause audit.Cause) Expected {
	return Expected{Stage: stage, Cause: cause, Topic: in.tp.Topic, Partition: in.tp.Partition, Offset: in.offset,
		Key: strconv.Quote(in.orderID), Evident: true}
}

// small is a one-table app: two partitions, 16 inputs over 4 keys, a
// transaction every 3 records and every 4th one aborted and replayed;
// nothing lags, nothing is in flight, nothing purged. The join's output is
// the one table's states.
func small() Scenario {
	return Scenario{AppID: "oracle",
		Tables: []TableSpec{{Name: "orders", Source: "orders-v1", Reducer: ReduceLatest, Store: "KSTREAM-REDUCE-STATE-STORE-0000000002"}},
		Output: "order-status", Partitions: 2, Inputs: 16, Keys: 4, Seed: 3, Now: 1_780_000_000_000, Commit: 3, AbortEvery: 4}
}

// noCopy lists the consumed keyed inputs without a committed copy: those
// with an aborted one are aborted-not-replayed, the others dropped, if the
// repartition log is whole around them; else unapplied (no copy names
// them, the state alone proves them missing).
func noCopy(t *testing.T, w *world) []Expected {
	t.Helper()
	tab := w.s.Tables[0]
	committed, aborted := map[int]bool{}, map[int]bool{}
	anyDeleted := false
	for _, c := range w.copies(t, tab) {
		committed[c.seq] = committed[c.seq] || c.committed()
		aborted[c.seq] = aborted[c.seq] || c.aborted && !c.deleted
		anyDeleted = anyDeleted || c.deleted
	}
	var out []Expected
	for _, in := range w.inputs(t, tab.Source) {
		if !in.consumed || in.orderID == "" || committed[in.seq] {
			continue
		}
		switch {
		case aborted[in.seq]:
			out = append(out, loss(in, audit.StageRepartition, audit.CauseAbortedNotReplayed))
		case !anyDeleted:
			out = append(out, loss(in, audit.StageRepartition, audit.CauseDropped))
		default:
			// every copy around it purged: one source partition per key,
			// so the key's state proves it (evident)
			out = append(out, loss(in, audit.StageRepartition, audit.CauseUnapplied))
		}
	}
	return out
}

// notInStore lists, for a latest table, the keys whose store (the last
// committed changelog state) is not the last applied copy: that copy's
// input is lost, state-diverged where its copy is readable, unapplied
// where it is purged.
func notInStore(t *testing.T, w *world) []Expected {
	t.Helper()
	tab := w.s.Tables[0]
	ins := bySeq(w.inputs(t, tab.Source))
	last := map[string]copyRec{}
	for _, c := range w.copies(t, tab) {
		if c.committed() && c.applied {
			last[string(c.Key)] = c
		}
	}
	states := w.perKey(t, w.s.Changelog(tab), w.s.Partitions)
	var out []Expected
	for k, c := range last {
		st := states[k]
		if len(st) > 0 && seqOf(t, st[len(st)-1].Value) == c.seq {
			continue
		}
		cause := audit.CauseStateDiverged
		stage := audit.StageStore
		if c.deleted {
			stage, cause = audit.StageRepartition, audit.CauseUnapplied
		}
		out = append(out, loss(ins[c.seq], stage, cause))
	}
	return out
}

// TestTruth checks the oracle's findings of each cause on a small
// scenario with that one fault.
func TestTruth(t *testing.T) {
	for _, tt := range []struct {
		name   string
		faults []Fault
		mod    func(*Scenario)
		// want derives the truth from what the scenario wrote
		want func(t *testing.T, w *world) Truth
		// n counts, by hand on the scenario's records, the findings, the
		// filtered and null-key inputs and the doubled keys
		n int
	}{
		{"clean", nil, nil, none, 0},
		{"clean with lag, in-flight copies, purges", nil, func(s *Scenario) { s.Lag, s.Inflight, s.Purge = 2, 2, true },
			none, 0},
		{"dropped", []Fault{{Kind: FaultDrop}}, nil, findings(noCopy), 1},
		{"dropped, the copies around it purged: unapplied", []Fault{{Kind: FaultDrop}}, func(s *Scenario) { s.Purge = true }, findings(noCopy), 1},
		{"aborted-not-replayed", []Fault{{Kind: FaultAbortNotReplayed}}, nil, findings(noCopy), 1},
		{"state-diverged", []Fault{{Kind: FaultStateDiverged}}, nil, findings(notInStore), 1},
		{"state-diverged, its copy purged: unapplied", []Fault{{Kind: FaultStateDiverged}}, func(s *Scenario) { s.Purge = true }, findings(notInStore), 1},
		{"duplicate", []Fault{{Kind: FaultDuplicate}}, nil, findings(func(t *testing.T, w *world) []Expected {
			// an input with two committed copies: the first is the duplicate's
			n := map[int][]copyRec{}
			for _, c := range w.copies(t, w.s.Tables[0]) {
				if c.committed() {
					n[c.seq] = append(n[c.seq], c)
				}
			}
			var out []Expected
			for _, cs := range n {
				if len(cs) == 2 {
					out = append(out, Expected{Stage: audit.StageRepartition, Cause: audit.CauseDuplicate, Topic: cs[0].Topic,
						Partition: cs[0].Partition, Offset: cs[0].Offset, Key: strconv.Quote(string(cs[0].Key)), Evident: true})
				}
			}
			return out
		}), 1},
		{"purged-before-commit", []Fault{{Kind: FaultPurgeBeforeCommit, Partition: 1}}, func(s *Scenario) { s.Inflight = 2 },
			findings(func(t *testing.T, w *world) []Expected {
				// the copies from the committed offset to the log start: the
				// ones the app had not applied yet (Inflight), deleted
				tab := w.s.Tables[0]
				rtp := audit.TopicPartition{Topic: w.s.Repartition(tab), Partition: 1}
				c, start := w.committedOffset(t, rtp), w.logStart(t, rtp)
				if start <= c {
					t.Fatalf("%s: log start %d, committed %d: not purged past the commit", rtp, start, c)
				}
				ins := bySeq(w.inputs(t, tab.Source))
				var out []Expected
				for _, r := range w.log(t, rtp) {
					if r.committed() && r.Offset >= c && r.Offset < start {
						// a key read from one source partition: evident
						out = append(out, loss(ins[seqOf(t, r.Value)], audit.StageRepartition, audit.CausePurgedBeforeCommit))
					}
				}
				return out
			}), 2},
		{"retention-gap", []Fault{{Kind: FaultRetentionGap, Partition: 0}}, func(s *Scenario) { s.Lag = 2 },
			func(t *testing.T, w *world) Truth {
				// the unconsumed records from the committed offset deleted:
				// one finding at the committed offset; the consumed ones
				// below it are deleted too, and no longer judged
				tp := audit.TopicPartition{Topic: w.s.Tables[0].Source, Partition: 0}
				c, start := w.committedOffset(t, tp), w.logStart(t, tp)
				if start-c != int64(w.s.Lag) {
					t.Fatalf("%s: log start %d, committed %d: want the %d lagging records deleted", tp, start, c, w.s.Lag)
				}
				return Truth{Findings: []Expected{{Stage: audit.StageSource, Cause: audit.CauseRetentionGap, Topic: tp.Topic, Partition: 0, Offset: c, Evident: true}}}
			}, 1},
		{"state-reset", []Fault{{Kind: FaultStateReset, Partition: 1}}, func(s *Scenario) { s.Tables[0].Reducer = ReduceCount },
			findings(func(t *testing.T, w *world) []Expected {
				// a count: the key's last state counts its copies applied
				// since the wipe; the ones before are lost, where the key took
				// a copy after the wipe (else its state is the old count)
				tab := w.s.Tables[0]
				ins := bySeq(w.inputs(t, tab.Source))
				applied := map[string][]copyRec{}
				for _, c := range w.copies(t, tab) {
					if c.committed() && c.applied {
						applied[string(c.Key)] = append(applied[string(c.Key)], c)
					}
				}
				states := w.perKey(t, w.s.Changelog(tab), w.s.Partitions)
				var out []Expected
				for k, cs := range applied {
					st := states[k]
					if len(st) == 0 {
						t.Fatalf("key %s: %d copies applied, no state", k, len(cs))
					}
					var count int
					if err := json.Unmarshal(st[len(st)-1].Value, &count); err != nil {
						t.Fatal(err)
					}
					if count > len(cs) {
						t.Fatalf("key %s: count %d, only %d copies applied", k, count, len(cs))
					}
					for _, c := range cs[:len(cs)-count] {
						e := loss(ins[c.seq], audit.StageStore, audit.CauseStateReset)
						// the history may explain the restart: a candidate
						e.Evident, e.Flagged = false, true
						out = append(out, e)
					}
				}
				return out
			}), 2},
		{"join-missing", []Fault{{Kind: FaultJoinMissing}}, nil, findings(func(t *testing.T, w *world) []Expected {
			// a key of the left table's changelog without an output record
			out := w.perKey(t, w.s.Output, w.s.outputPartitions())
			var exp []Expected
			for k := range w.perKey(t, w.s.Changelog(w.s.Tables[0]), w.s.Partitions) {
				if len(out[k]) == 0 {
					exp = append(exp, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: w.s.Output,
						Partition: audit.DefaultPartition([]byte(k), w.s.outputPartitions()), Offset: -1, Key: strconv.Quote(k), Evident: true})
				}
			}
			return exp
		}), 1},
		{"hanging-transaction", []Fault{{Kind: FaultHangingTransaction}}, nil, findings(func(t *testing.T, w *world) []Expected {
			// the first record of the transaction never ended
			var out []Expected
			for p := range w.s.outputPartitions() {
				for _, r := range w.log(t, audit.TopicPartition{Topic: w.s.Output, Partition: p}) {
					if r.open {
						out = append(out, Expected{Stage: audit.StageTransactions, Cause: audit.CauseHangingTransaction,
							Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Evident: true})
					}
				}
			}
			return out
		}), 1},
		{"output-missing", []Fault{{Kind: FaultOutputMissing}}, func(s *Scenario) { s.Tables[0].Output = "orders-out" }, findings(tableOutput), 1},
		{"output-stale", []Fault{{Kind: FaultOutputStale}}, func(s *Scenario) { s.Tables[0].Output, s.Commit = "orders-out", 1 }, findings(tableOutput), 5},
		{"clean, three tables joined", nil, func(s *Scenario) { *s = SeedScenario("oracle", 60) }, none, 0},
		{"null keys", nil, func(s *Scenario) { s.NullKeys = 2 }, func(t *testing.T, w *world) Truth {
			// the first two inputs carry no orderId: one null key each
			nk := consumedWhere(t, w, func(in input) bool { return in.orderID == "" })
			return Truth{NullKeys: nk}
		}, 2},
		{"filtered", nil, func(s *Scenario) { s.Tables[0].Steps = []Step{StepFilter} }, func(t *testing.T, w *world) Truth {
			// the test orders the filter drops: one filtered each
			return Truth{Filtered: consumedWhere(t, w, func(in input) bool { return in.status == "TEST" })}
		}, 3},
		{"unjudged, purged-before-commit", []Fault{{Kind: FaultPurgeBeforeCommit, Partition: 1}},
			func(s *Scenario) { s.Tables[0].Steps, s.Inflight = []Step{StepTODO}, 2 }, func(t *testing.T, w *world) Truth {
				// a step the spec leaves TODO: the table is not judged by key
				// (nothing filtered either, the spec cannot say), and the
				// purge past the commit is one finding at the committed offset
				rtp := audit.TopicPartition{Topic: w.s.Repartition(w.s.Tables[0]), Partition: 1}
				c := w.committedOffset(t, rtp)
				if start := w.logStart(t, rtp); start <= c {
					t.Fatalf("%s: log start %d, committed %d: not purged past the commit", rtp, start, c)
				}
				return Truth{Unjudged: []string{"orders"}, Findings: []Expected{{Stage: audit.StageRepartition, Cause: audit.CausePurgedBeforeCommit,
					Topic: rtp.Topic, Partition: 1, Offset: c, Evident: true}}}
			}, 1},
		{"duplicate of a count, its copies purged: doubled", []Fault{{Kind: FaultDuplicate}},
			func(s *Scenario) { s.Tables[0].Reducer, s.Purge = ReduceCount, true }, func(t *testing.T, w *world) Truth {
				// an input with two committed copies, the first deleted: no
				// finding, a doubled key the count may show
				cs := map[int][]copyRec{}
				for _, c := range w.copies(t, w.s.Tables[0]) {
					if c.committed() {
						cs[c.seq] = append(cs[c.seq], c)
					}
				}
				doubled := map[string]bool{}
				for _, c := range cs {
					if len(c) == 2 && c[0].deleted {
						doubled[w.s.Tables[0].Source+" "+strconv.Quote(string(c[0].Key))] = true
					}
				}
				return Truth{Doubled: doubled}
			}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := small()
			s.Tables = slices.Clone(s.Tables)
			s.Faults = tt.faults
			if tt.mod != nil {
				tt.mod(&s)
			}
			w := generate(t, s)
			want := tt.want(t, w)
			n := len(want.Findings) + len(want.Doubled)
			for _, f := range append(slices.Clone(want.Filtered), want.NullKeys...) {
				n += int(f.Count)
			}
			if n != tt.n {
				t.Errorf("the written records show %d findings, filtered, null keys and doubled keys, counted %d by hand: %+v", n, tt.n, want)
			}
			checkFindings(t, w.truth.Findings, want.Findings)
			inputs := 0
			for _, tab := range s.Tables {
				inputs += len(w.inputs(t, tab.Source))
			}
			if w.truth.Inputs != inputs {
				t.Errorf("truth counts %d inputs, the sources hold %d", w.truth.Inputs, inputs)
			}
			if !maps.Equal(w.truth.Doubled, want.Doubled) {
				t.Errorf("doubled %v, want %v", w.truth.Doubled, want.Doubled)
			}
			if !slices.Equal(w.truth.Filtered, want.Filtered) {
				t.Errorf("filtered %+v, want %+v", w.truth.Filtered, want.Filtered)
			}
			if !slices.Equal(w.truth.NullKeys, want.NullKeys) {
				t.Errorf("null keys %+v, want %+v", w.truth.NullKeys, want.NullKeys)
			}
			if !slices.Equal(w.truth.Unjudged, want.Unjudged) {
				t.Errorf("unjudged %v, want %v", w.truth.Unjudged, want.Unjudged)
			}
		})
	}
}

// none is the truth of a clean scenario: nothing.
func none(*testing.T, *world) Truth { return Truth{} }

// findings is the truth of a scenario whose only findings f derives.
func findings(f func(t *testing.T, w *world) []Expected) func(t *testing.T, w *world) Truth {
	return func(t *testing.T, w *world) Truth { return Truth{Findings: f(t, w)} }
}

// consumedWhere lists, per source partition of table 0, the consumed
// inputs that match: one Filtered each (the first offset, the count).
func consumedWhere(t *testing.T, w *world, match func(input) bool) []Filtered {
	t.Helper()
	tab := w.s.Tables[0]
	var out []Filtered
	for _, in := range w.inputs(t, tab.Source) {
		if !in.consumed || in.deleted || !match(in) {
			continue
		}
		if n := len(out); n > 0 && out[n-1].Partition == in.tp.Partition {
			out[n-1].Count++
			continue
		}
		out = append(out, Filtered{Table: tab.Name, Topic: in.tp.Topic, Partition: in.tp.Partition, First: in.offset, Count: 1})
	}
	return out
}

// tableOutput derives the findings of a table's own output: the output
// must hold, in order, every committed changelog state of a key (no output
// steps); a key without an output record is join-missing, a state before
// the last that the output lacks is join-missing at the output (one each),
// a last output record that is not the last state is join-stale.
func tableOutput(t *testing.T, w *world) []Expected {
	t.Helper()
	tab := w.s.Tables[0]
	outs := w.perKey(t, tab.Output, w.s.Partitions)
	var exp []Expected
	for k, states := range w.perKey(t, w.s.Changelog(tab), w.s.Partitions) {
		o := outs[k]
		if len(o) == 0 {
			exp = append(exp, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: tab.Output,
				Partition: audit.DefaultPartition([]byte(k), w.s.Partitions), Offset: -1, Key: strconv.Quote(k), Evident: true})
			continue
		}
		same := func(a, b logRec) bool { return a.Timestamp == b.Timestamp && string(a.Value) == string(b.Value) }
		j := 0
		for _, st := range states[:len(states)-1] {
			if j < len(o) && same(o[j], st) {
				j++
				continue
			}
			exp = append(exp, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: tab.Output,
				Partition: o[0].Partition, Offset: -1, Key: strconv.Quote(k), Evident: true})
		}
		if last := o[len(o)-1]; !same(last, states[len(states)-1]) {
			exp = append(exp, Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinStale, Topic: tab.Output,
				Partition: last.Partition, Offset: last.Offset, Key: strconv.Quote(k), Evident: true})
		}
	}
	return exp
}

// checkFindings compares the oracle's findings with the derived ones,
// every field (Evident and Flagged too), as multisets.
func checkFindings(t *testing.T, got, want []Expected) {
	t.Helper()
	norm := func(es []Expected) []Expected {
		out := slices.Clone(es)
		sort.Slice(out, func(i, j int) bool { return show(out[i:i+1]) < show(out[j:j+1]) })
		return out
	}
	if g, x := norm(got), norm(want); !slices.Equal(g, x) {
		t.Errorf("the oracle's findings:\n%s\nthe written records':\n%s", show(g), show(x))
	}
}

// show lists findings with the fields String leaves out.
func show(es []Expected) string {
	s := ""
	for _, e := range es {
		s += fmt.Sprintf("  %s evident=%v flagged=%v\n", e, e.Evident, e.Flagged)
	}
	return s
}

// TestWindowTruth checks the window oracle (GenerateWindow) on a plain
// (unwindowed) sum fed through the user topic: a clean run, a dropped
// input, and a retention gap on the last of four data partitions, which
// leaves the fold judged only for what its copies prove (Partial).
func TestWindowTruth(t *testing.T) {
	for _, tt := range []struct {
		name    string
		faults  []Fault
		lag     int
		want    func(t *testing.T, m *Memory, s WindowScenario) []Expected
		n       int // findings, counted by hand
		partial bool
	}{
		{"clean", nil, 2, func(*testing.T, *Memory, WindowScenario) []Expected { return nil }, 0, false},
		{"dropped", []Fault{{Kind: FaultDrop}}, 0, func(t *testing.T, m *Memory, s WindowScenario) []Expected {
			// a consumed data record without a committed copy on the user
			// topic, whose log is whole: dropped
			type id struct {
				key string
				ts  int64
			}
			copied := map[id]bool{}
			for p := range s.Partitions {
				for _, r := range writtenLog(t, m, audit.TopicPartition{Topic: WindowHop, Partition: p}) {
					if r.deleted {
						t.Fatalf("%s/%d@%d deleted: want the user topic whole", WindowHop, p, r.Offset)
					}
					copied[id{string(r.Key), r.Timestamp}] = copied[id{string(r.Key), r.Timestamp}] || r.committed()
				}
			}
			var out []Expected
			for p := range s.Partitions {
				tp := audit.TopicPartition{Topic: WindowSource, Partition: p}
				c := committedOf(t, m, s.AppID, tp)
				for _, r := range writtenLog(t, m, tp) {
					if r.Offset < c && !copied[id{string(r.Key), r.Timestamp}] {
						out = append(out, Expected{Stage: audit.StageRepartition, Cause: audit.CauseDropped, Topic: WindowSource, Partition: p,
							Offset: r.Offset, Key: strconv.Quote(string(r.Key)), Evident: true})
					}
				}
			}
			return out
		}, 1, false},
		{"retention-gap on partition 3", []Fault{{Kind: FaultRetentionGap, Partition: 3}}, 2, func(t *testing.T, m *Memory, s WindowScenario) []Expected {
			// the lagging records past the commit deleted, and the consumed
			// ones below it: one finding at the committed offset
			tp := audit.TopicPartition{Topic: WindowSource, Partition: 3}
			c, start := committedOf(t, m, s.AppID, tp), logStartOf(t, m, tp)
			if start-c != int64(s.Lag) || c == 0 {
				t.Fatalf("%s: log start %d, committed %d: want %d lagging records deleted past consumed ones", tp, start, c, s.Lag)
			}
			return []Expected{{Stage: audit.StageSource, Cause: audit.CauseRetentionGap, Topic: WindowSource, Partition: 3, Offset: c, Evident: true}}
		}, 1, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := WindowScenario{AppID: "win", Partitions: 4, Inputs: 40, Keys: 8, Seed: 3, Base: 1_780_000_000_000,
				Commit: 3, Hop: true, AbortEvery: 4, Lag: tt.lag, Faults: tt.faults}
			m := NewMemory(time.UnixMilli(s.Base + 3_600_000))
			truth, err := GenerateWindow(s, NewMemoryBackend(m))
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want(t, m, s)
			if len(want) != tt.n {
				t.Errorf("the written records show %d findings, counted %d by hand: %v", len(want), tt.n, want)
			}
			checkFindings(t, truth.Findings, want)
			if truth.Partial != tt.partial {
				t.Errorf("partial %v, want %v", truth.Partial, tt.partial)
			}
			if len(truth.Late)+len(truth.LateApplied)+len(truth.LateMaybe) > 0 || truth.Unprovable || truth.Doubled != nil {
				t.Errorf("late %v, late applied %v, late maybe %v, unprovable %v, doubled %v: want none (no window)",
					truth.Late, truth.LateApplied, truth.LateMaybe, truth.Unprovable, truth.Doubled)
			}
		})
	}
}
