package fakeapp

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// WindowScenario is an app shaped like Kafka's EosTestClient: a topic
// data of String keys and Integer values, optionally re-keyed through a
// user topic (data.to("repartition"), builder.stream("repartition")),
// groupByKey, optionally windowedBy(TimeWindows), then
// aggregate(() -> 0L, sum) or count() into a Long store, with cache 0
// (every update on the changelog), optionally written to output
// (toStream().to, with suppress(untilWindowCloses) for final results).
// The simulation applies Kafka Streams 3.6's rules: each input to every
// window it falls in (TimeWindows.windowsFor), skipped for a window whose
// end <= the processor's observedStreamTime - grace, observedStreamTime
// a processor field that a restart resets, and the suppress processor's
// buffer evicted once its own stream time reaches a window's end + grace.
type WindowScenario struct {
	AppID        string
	Partitions   int32
	Inputs, Keys int
	Seed         uint64
	Base         int64 // the first timestamp, ms
	Commit       int   // records per transaction
	Hop          bool  // through the user topic repartition
	Window       *Win  // nil: a plain (unwindowed) table
	Count        bool  // count() instead of the Long sum
	Output       bool  // toStream().to("output")
	Suppress     bool  // suppress(untilWindowCloses) before the output
	Purge        bool  // delete applied repartition records, as Streams does
	// Lag leaves the last n records of each data partition unconsumed,
	// Inflight the last n copies of each repartition partition unapplied.
	Lag, Inflight int
	AbortEvery    int // abort and replay every n-th transaction
	// LateEvery sets every n-th input's timestamp back past its windows'
	// ends plus grace: Streams skips it for expired windows.
	LateEvery int
	// NullEvery gives every n-th input (not a late one) a null value:
	// KStreamWindowAggregate passes it to the aggregator, count() counts
	// it, the Long sum here leaves the state as it was and writes it again.
	NullEvery int
	// Restart restarts each task once, half way: its processors'
	// observedStreamTime starts over, so late inputs after it may be
	// applied; the stores and the suppress buffer are restored.
	Restart bool
	// NoCache says caching: false in the spec (the simulation writes every
	// update to the changelog either way, as with cache 0).
	NoCache bool
	// OutputSteps follow toStream() (and suppress) before to("output"):
	// a filter, a mapValues on the Long states.
	OutputSteps []OutputStep
	// KeyString writes the output under the window's toString(), as
	// toStream().map((w, v) -> KeyValue.pair(w.toString(), v)) does, with
	// the String serde: the spec's last output step a map by windowString.
	KeyString bool
	// KeyInner writes the output under the window's inner key, as
	// toStream((w, v) -> w.key()) (SmokeTestClient's Unwindow) does: every
	// window of a key under one output key, in the task's order.
	KeyInner bool
	// Faults: drop, abort-not-replayed, duplicate (hop only),
	// state-diverged, purge-before-commit and retention-gap (Partition),
	// state-reset (Partition), join-missing (an output record swallowed).
	Faults []Fault
}

// Win is a TimeWindows: size, advance (= size: tumbling) and grace, ms.
type Win struct{ Size, Advance, Grace int64 }

func (w *Win) starts(ts int64) []int64 {
	start := max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance
	var out []int64
	for ; start <= ts; start += w.Advance {
		out = append(out, start)
	}
	return out
}

// The EosTestClient-shaped app's names.
const (
	WindowSource = "data"
	WindowHop    = "repartition"
	WindowOutput = "output"
	WindowStore  = "KSTREAM-AGGREGATE-STATE-STORE-0000000003"
)

// Changelog is the store's changelog topic.
func (s *WindowScenario) Changelog() string { return s.AppID + "-" + WindowStore + "-changelog" }

// Spec is the scenario's kaudit.yaml.
func (s *WindowScenario) Spec() string {
	var b strings.Builder
	fmt.Fprintf(&b, "app_id: %s\nserdes: {key: String, value: Integer}\ntables:\n  - name: agg\n    source: %s\n    store: %s\n", s.AppID, WindowSource, WindowStore)
	if s.Hop {
		fmt.Fprintf(&b, "    repartition: %s\n", WindowHop)
	}
	if s.Count {
		b.WriteString("    reduce: count\n")
	} else {
		b.WriteString("    aggregate: {init: 0, expr: \"agg + value\"}\n")
	}
	b.WriteString("    store_serdes: {value: Long}\n")
	if s.NoCache {
		b.WriteString("    caching: false\n") // the simulation writes every update, as EosTestClient's cache 0
	}
	if w := s.Window; w != nil {
		fmt.Fprintf(&b, "    window: {size: %d, advance: %d, grace: %d}\n", w.Size, w.Advance, w.Grace)
	}
	if s.Output {
		fmt.Fprintf(&b, "    output: %s\n", WindowOutput)
		if s.Suppress {
			b.WriteString("    suppress: until-window-closes\n")
		}
		steps := s.outputSteps()
		if s.KeyString {
			steps = append(steps, Step{Kind: "map", Expr: "[windowString(key), value]"})
		}
		if s.KeyInner {
			steps = append(steps, Step{Kind: "selectKey", Expr: "key.key"})
		}
		writeSteps(&b, "output_steps", steps)
	}
	return b.String()
}

func (s *WindowScenario) outputSteps() []Step {
	var out []Step
	for _, o := range s.OutputSteps {
		out = append(out, windowOutStep(o))
	}
	return out
}

// outValue is what the output steps forward of a state: its value, or
// false when they filter it out.
func (s *WindowScenario) outValue(st *wstate) ([]byte, bool) {
	v := st.sum
	if s.Count {
		v = st.count
	}
	els := runApp(s.outputSteps(), Elem{Value: v})
	if len(els) == 0 {
		return nil, false
	}
	return int64Value(els[0].Value.(int64)), true
}

// WindowTruth is what a window scenario wrote and what an audit must
// find: Truth, and the inputs Streams skipped for an expired window
// ("topic/partition@offset"), each a late finding.
type WindowTruth struct {
	Truth
	Late map[string]bool
	// LateApplied are inputs late under the stream time without restarts
	// that a window applied after a restart: no finding.
	LateApplied map[string]bool
	// LateMaybe are late inputs the evidence cannot tell from lost ones:
	// a late finding or missing evidence, either is right.
	LateMaybe map[string]bool
	// Unprovable: a loss the evidence cannot tell from a late input (its
	// copy purged): the verdict must not be clean.
	Unprovable bool
	// Partial: retention deleted consumed source records, so the fold is
	// judged only for the losses the copies prove (no late finding).
	Partial bool
}

type wapp struct {
	start          int64
	applied, shown bool // reached the window (not late), reflected in the store
	late           bool // skipped for the expired window
	wiped          bool
	order          int
}

type wrec struct {
	tp        audit.TopicPartition
	offset    int64
	key       string
	amount    int32
	ts        int64
	fault     FaultKind
	lateTs    bool // its timestamp was set back (LateEvery)
	null      bool // its value is null (NullEvery)
	consumed  bool
	copies    []int64 // committed copies on repartition
	aborted   int64   // its aborted copy, -1 none
	pending   bool    // its copy is in flight
	purged    bool    // … and purged before the commit
	processed bool
	wins      []*wapp
}

type wgen struct {
	s        WindowScenario
	b        Backend
	rng      *rand.Rand
	recs     map[int32][]*wrec // per data partition, in offset order
	offsets  map[audit.TopicPartition]int64
	starts   map[audit.TopicPartition]int64
	txnCount int
	faults   map[FaultKind][]Fault
	// per repartition partition: the committed copies in offset order
	copies map[int32][]wcopy
	// processed lists, per task, the records it processed (offset in
	// its input and timestamp)
	processed map[int32][]timeRec
	truth     WindowTruth
	purged    map[audit.TopicPartition]bool
	// the output's records per window key; the swallowed emission
	missingOut  map[string]bool
	missingPart int32
	lastState   map[string]bool // window keys the store holds at the cut
	order       int
}

type wcopy struct {
	r      *wrec
	offset int64
}

type timeRec struct{ offset, ts int64 }

// GenerateWindow writes the scenario through b and returns its ground
// truth, from the simulation (never from the engine).
func GenerateWindow(s WindowScenario, b Backend) (*WindowTruth, error) {
	g := &wgen{s: s, b: b, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x51ed27)), recs: map[int32][]*wrec{},
		offsets: map[audit.TopicPartition]int64{}, starts: map[audit.TopicPartition]int64{}, faults: map[FaultKind][]Fault{},
		copies: map[int32][]wcopy{}, processed: map[int32][]timeRec{}, purged: map[audit.TopicPartition]bool{},
		missingOut: map[string]bool{}, lastState: map[string]bool{}, missingPart: -1}
	g.truth.Late, g.truth.LateApplied, g.truth.LateMaybe = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, f := range s.Faults {
		g.faults[f.Kind] = append(g.faults[f.Kind], f)
	}
	return &g.truth, g.run()
}

func (g *wgen) run() error {
	s := g.s
	topics := []struct {
		name      string
		compacted bool
	}{{WindowSource, false}, {s.Changelog(), true}}
	if s.Hop {
		topics = append(topics, struct {
			name      string
			compacted bool
		}{WindowHop, false})
	}
	if s.Output {
		topics = append(topics, struct {
			name      string
			compacted bool
		}{WindowOutput, false})
	}
	for _, t := range topics {
		if err := g.b.CreateTopic(t.name, s.Partitions, t.compacted); err != nil {
			return err
		}
	}
	if err := g.produce(); err != nil {
		return err
	}
	g.pickFaults()
	if s.Hop {
		if err := g.hop(); err != nil {
			return err
		}
	}
	for p := range s.Partitions {
		if err := g.task(p); err != nil {
			return err
		}
	}
	if err := g.post(); err != nil {
		return err
	}
	if err := g.b.CommitOffsets(s.AppID, g.offsets); err != nil {
		return err
	}
	g.groundTruth()
	return nil
}

func int32Value(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func int64Value(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func (g *wgen) produce() error {
	s := g.s
	ts := s.Base
	per := map[int32][]*wrec{}
	for i := range s.Inputs {
		ts += int64(1 + g.rng.IntN(200))
		key := fmt.Sprintf("k-%03d", g.rng.IntN(s.Keys))
		r := &wrec{key: key, amount: int32(1 + g.rng.IntN(1000)), ts: ts, aborted: -1}
		if w := s.Window; w != nil && s.LateEvery > 0 && i%s.LateEvery == s.LateEvery-1 && i > s.Inputs/10 {
			r.ts, r.lateTs = max(0, ts-3*w.Size-w.Grace), true
		}
		if s.NullEvery > 0 && i%s.NullEvery == s.NullEvery-1 && !r.lateTs {
			r.null, r.amount = true, 0
		}
		p := audit.DefaultPartition([]byte(key), s.Partitions)
		r.tp = audit.TopicPartition{Topic: WindowSource, Partition: p}
		if w := s.Window; w != nil {
			for _, st := range w.starts(r.ts) {
				r.wins = append(r.wins, &wapp{start: st})
			}
		} else {
			r.wins = []*wapp{{start: -1}}
		}
		per[p] = append(per[p], r)
	}
	for p := range s.Partitions {
		recs := per[p]
		outs := make([]Out, len(recs))
		for i, r := range recs {
			outs[i] = Out{Key: []byte(r.key), Value: r.value(), Timestamp: r.ts}
		}
		offs, err := g.b.Produce(audit.TopicPartition{Topic: WindowSource, Partition: p}, outs)
		if err != nil {
			return err
		}
		for i, r := range recs {
			r.offset = offs[i]
			r.consumed = i < len(recs)-s.Lag
		}
		g.recs[p] = recs
		tp := audit.TopicPartition{Topic: WindowSource, Partition: p}
		g.offsets[tp] = 0
		if n := len(recs) - s.Lag; n > 0 {
			g.offsets[tp] = recs[n-1].offset + 1
		}
	}
	return nil
}

// pickFaults marks, for each fault on an input, one consumed input in the
// middle of the run that is not late.
func (g *wgen) pickFaults() {
	for _, kind := range []FaultKind{FaultDrop, FaultAbortNotReplayed, FaultStateDiverged, FaultDuplicate} {
		for range g.faults[kind] {
			var cands []*wrec
			for p := range g.s.Partitions {
				for _, r := range g.recs[p] {
					if r.consumed && r.fault == "" && !r.lateTs {
						cands = append(cands, r)
					}
				}
			}
			if len(cands) < 3 {
				continue
			}
			sort.Slice(cands, func(i, j int) bool { return cands[i].ts < cands[j].ts })
			cands[len(cands)/3+g.rng.IntN(max(len(cands)/3, 1))].fault = kind
		}
	}
}

func (g *wgen) producer(sub int, p int32) string {
	return fmt.Sprintf("%s-2b4f7c1e-0d7a-4b7e-9d6e-5a0c2f1e8b3d-%d-%d", g.s.AppID, sub, p)
}

// txn writes one transaction, first aborted when AbortEvery or force
// says so (and replayed).
func (g *wgen) txn(prod string, force bool, write func(commit bool) error) error {
	g.txnCount++
	return writeTxn(g.b, prod, force || g.s.AbortEvery > 0 && g.txnCount%g.s.AbortEvery == 0, write)
}

// hop is data.to("repartition"): one task per data partition.
func (g *wgen) hop() error {
	s := g.s
	for p := range s.Partitions {
		var recs []*wrec
		for _, r := range g.recs[p] {
			if r.consumed {
				recs = append(recs, r)
			}
		}
		for start := 0; start < len(recs); start += s.Commit {
			batch := recs[start:min(start+s.Commit, len(recs))]
			force := slices.ContainsFunc(batch, func(r *wrec) bool { return r.fault == FaultAbortNotReplayed })
			err := g.txn(g.producer(0, p), force, func(commit bool) error {
				for _, r := range batch {
					if r.fault == FaultDrop || commit && r.fault == FaultAbortNotReplayed {
						continue
					}
					rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
					n := 1
					if commit && r.fault == FaultDuplicate {
						n = 2
					}
					for range n {
						offs, err := g.b.TxnProduce(g.producer(0, p), audit.TopicPartition{Topic: WindowHop, Partition: rp}, []Out{{Key: []byte(r.key), Value: r.value(), Timestamp: r.ts}})
						if err != nil {
							return err
						}
						switch {
						case commit:
							r.copies = append(r.copies, offs[0])
							g.copies[rp] = append(g.copies[rp], wcopy{r, offs[0]})
						case r.fault == FaultAbortNotReplayed:
							r.aborted = offs[0]
						}
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	for rp := range s.Partitions {
		sort.Slice(g.copies[rp], func(i, j int) bool { return g.copies[rp][i].offset < g.copies[rp][j].offset })
	}
	return nil
}

type wstate struct {
	sum, count, ts int64
}

func (s *WindowScenario) windowKey(key string, start int64) string {
	if s.Window == nil {
		return codec.Text(key)
	}
	return codec.Text(codec.WindowedKey(key, start, start+s.Window.Size))
}

func (s *WindowScenario) storeKey(key string, start int64, withSeq bool) []byte {
	if s.Window == nil {
		return []byte(key)
	}
	return codec.AppendWindowedKey(nil, []byte(key), start, withSeq, 0)
}

// outKey is the key the output holds a window's state under: the windowed
// serde's bytes, or with KeyString the window's toString() (Windowed's
// "[key@start/end]").
func (s *WindowScenario) outKey(key string, start int64) []byte {
	switch {
	case s.KeyString && s.Window != nil:
		return []byte(s.keyString(key, start))
	case s.KeyInner:
		return []byte(key)
	}
	return s.storeKey(key, start, false)
}

func (s *WindowScenario) keyString(key string, start int64) string {
	return fmt.Sprintf("[%s@%d/%d]", key, start, start+s.Window.Size)
}

// outPartition is the output partition of a window's state: the windowed
// serde's records go by their inner key (WindowedStreamPartitioner), a
// toString() key by its own bytes.
func (s *WindowScenario) outPartition(key string, start int64) int32 {
	if s.KeyString && s.Window != nil {
		return audit.DefaultPartition([]byte(s.keyString(key, start)), s.Partitions)
	}
	return audit.DefaultPartition([]byte(key), s.Partitions)
}

// value is the record's value as the source holds it.
func (r *wrec) value() []byte {
	if r.null {
		return nil
	}
	return int32Value(r.amount)
}

type bufEntry struct {
	key   string
	start int64
	end   int64
	st    wstate
}

// task is the aggregation's task of partition p: it processes the hop's
// committed copies (all but Inflight) or the consumed data records, in
// offset order, one transaction per Commit records.
func (g *wgen) task(p int32) error {
	s := g.s
	type item struct {
		r   *wrec
		pos int64
	}
	var items []item
	if s.Hop {
		cs := g.copies[p]
		cut := max(len(cs)-s.Inflight, 0)
		for _, c := range cs[:cut] {
			items = append(items, item{c.r, c.offset})
		}
		for _, c := range cs[cut:] {
			c.r.pending = true
		}
		tp := audit.TopicPartition{Topic: WindowHop, Partition: p}
		switch {
		case cut > 0:
			g.offsets[tp] = cs[cut-1].offset + 1
		case len(cs) > 0:
			g.offsets[tp] = cs[0].offset
		default:
			g.offsets[tp] = 0
		}
	} else {
		for _, r := range g.recs[p] {
			if r.consumed {
				items = append(items, item{r, r.offset})
			}
		}
	}
	stream, supp := int64(-1), int64(-1)
	store := map[string]*wstate{}
	buffer := map[string]bufEntry{}
	emitted := map[string]bool{}
	reset := slices.ContainsFunc(g.faults[FaultStateReset], func(f Fault) bool { return f.Partition == p })
	swallow := slices.ContainsFunc(g.faults[FaultJoinMissing], func(f Fault) bool { return f.Partition == p })
	half := len(items) / 2 / max(s.Commit, 1) * s.Commit
	if s.Restart && s.Window != nil {
		// a restart just before the first late input after half way: the
		// next records see a fresh stream time, and the late one is applied
		for i := half; i < len(items); i++ {
			if items[i].r.lateTs {
				half = i
				break
			}
		}
	}
	// the transactions: every Commit records, and one ending at half
	var bounds []int
	for start := 0; start < len(items); start += s.Commit {
		if start < half && half < start+s.Commit {
			bounds = append(bounds, start, half)
			continue
		}
		bounds = append(bounds, start)
	}
	prod := g.producer(1, p)
	grace := int64(0)
	if s.Window != nil {
		grace = s.Window.Grace
	}
	for bi, start := range bounds {
		end := len(items)
		if bi+1 < len(bounds) {
			end = bounds[bi+1]
		}
		if start == half && start > 0 {
			if s.Restart {
				stream, supp = -1, -1 // the processors are created again; stores and buffer restored
			}
			if reset {
				store = map[string]*wstate{}
				for _, rs := range g.recs {
					for _, r := range rs {
						for _, w := range r.wins {
							if w.shown && audit.DefaultPartition([]byte(r.key), s.Partitions) == p {
								w.wiped = true
							}
						}
					}
				}
			}
		}
		var outs []struct {
			tp  audit.TopicPartition
			out Out
		}
		write := func(topic string, part int32, o Out) {
			outs = append(outs, struct {
				tp  audit.TopicPartition
				out Out
			}{audit.TopicPartition{Topic: topic, Partition: part}, o})
		}
		value := func(st *wstate) []byte {
			if s.Count {
				return int64Value(st.count)
			}
			return int64Value(st.sum)
		}
		batch := items[start:end]
		for _, it := range batch {
			r := it.r
			r.processed = true
			g.processed[p] = append(g.processed[p], timeRec{it.pos, r.ts})
			stream = max(stream, r.ts)
			for _, w := range r.wins {
				wk := s.windowKey(r.key, w.start)
				if s.Window != nil && w.start+s.Window.Size <= stream-grace {
					if !w.applied {
						w.late = true
					}
					continue
				}
				w.applied, w.late = true, false
				if r.fault == FaultStateDiverged {
					continue
				}
				w.shown, w.wiped = true, false
				g.order++
				w.order = g.order
				st := store[wk]
				if st == nil {
					st = &wstate{ts: r.ts}
					store[wk] = st
				}
				st.sum += int64(r.amount)
				st.count++
				st.ts = max(st.ts, r.ts)
				write(s.Changelog(), p, Out{Key: s.storeKey(r.key, w.start, true), Value: value(st), Timestamp: st.ts})
				g.lastState[wk] = true
				if !s.Output {
					continue
				}
				if !s.Suppress {
					ov, pass := s.outValue(st)
					if !pass {
						continue
					}
					first := !emitted[wk]
					emitted[wk] = true
					if !(swallow && g.swallowed(wk, first)) {
						write(WindowOutput, s.outPartition(r.key, w.start), Out{Key: s.outKey(r.key, w.start), Value: ov, Timestamp: st.ts})
					}
					continue
				}
				supp = max(supp, st.ts)
				buffer[wk] = bufEntry{key: r.key, start: w.start, end: w.start + s.Window.Size, st: *st}
			}
			if s.Suppress {
				var due []string
				for wk, e := range buffer {
					if e.end <= supp-grace {
						due = append(due, wk)
					}
				}
				sort.Slice(due, func(i, j int) bool {
					a, b := buffer[due[i]], buffer[due[j]]
					return a.end < b.end || a.end == b.end && due[i] < due[j]
				})
				for _, wk := range due {
					e := buffer[wk]
					delete(buffer, wk)
					ov, pass := s.outValue(&e.st)
					if !pass {
						continue
					}
					first := !emitted[wk]
					emitted[wk] = true
					if swallow && g.swallowed(wk, first) {
						continue
					}
					write(WindowOutput, s.outPartition(e.key, e.start), Out{Key: s.outKey(e.key, e.start), Value: ov, Timestamp: e.st.ts})
				}
			}
		}
		err := g.txn(prod, false, func(bool) error {
			for _, o := range outs {
				if _, err := g.b.TxnProduce(prod, o.tp, []Out{o.out}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if s.Hop && s.Purge && bi%3 == 2 {
			if err := g.purge(p, batch[len(batch)-1].pos+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// swallowed picks the first window key the join-missing fault meets in
// its partition at its first output record, and reports whether wk is it.
func (g *wgen) swallowed(wk string, first bool) bool {
	if len(g.missingOut) == 0 && first && g.order > g.s.Inputs/10 {
		g.missingOut[wk] = true
	}
	return g.missingOut[wk]
}

func (g *wgen) purge(p int32, before int64) error {
	tp := audit.TopicPartition{Topic: WindowHop, Partition: p}
	if err := g.b.DeleteRecords(tp, before); err != nil {
		return err
	}
	g.starts[tp] = max(g.starts[tp], before)
	return nil
}

// post deletes records past the committed offsets.
func (g *wgen) post() error {
	s := g.s
	for _, f := range g.faults[FaultRetentionGap] {
		tp := audit.TopicPartition{Topic: WindowSource, Partition: f.Partition}
		if len(g.recs[f.Partition]) <= s.Lag {
			continue // nothing consumed there: nothing to delete past the committed offset
		}
		to := g.offsets[tp] + int64(max(s.Lag, 1))
		if err := g.b.DeleteRecords(tp, to); err != nil {
			return err
		}
		g.starts[tp] = to
		g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageSource, Cause: audit.CauseRetentionGap, Topic: tp.Topic, Partition: tp.Partition, Offset: g.offsets[tp], Evident: true})
	}
	for _, f := range g.faults[FaultPurgeBeforeCommit] {
		cs := g.copies[f.Partition]
		if !s.Hop || len(cs) == 0 {
			continue
		}
		tp := audit.TopicPartition{Topic: WindowHop, Partition: f.Partition}
		end := cs[len(cs)-1].offset + 2 // past the last copy and its marker
		if err := g.b.DeleteRecords(tp, end); err != nil {
			return err
		}
		g.starts[tp] = end
		g.purged[tp] = true
		for _, c := range cs {
			if c.r.pending {
				c.r.purged = true
			}
		}
	}
	return nil
}

// groundTruth derives the findings from what the simulation did.
func (g *wgen) groundTruth() {
	s := g.s
	partial := false // the folds' source history is not whole
	for p := range s.Partitions {
		partial = partial || g.starts[audit.TopicPartition{Topic: WindowSource, Partition: p}] > 0
	}
	g.truth.Partial = partial
	ref := func(r *wrec) string { return fmt.Sprintf("%s/%d@%d", r.tp.Topic, r.tp.Partition, r.offset) }
	// whether the copies of a data partition's earlier and later inputs are
	// readable on the input's repartition partition (its neighbours')
	readable := func(r *wrec) bool {
		rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
		start := g.starts[audit.TopicPartition{Topic: WindowHop, Partition: rp}]
		before, after := false, false
		for _, q := range g.recs[r.tp.Partition] {
			if !q.consumed || len(q.copies) == 0 || q.copies[0] < start || audit.DefaultPartition([]byte(q.key), s.Partitions) != rp {
				continue
			}
			before = before || q.offset < r.offset
			after = after || q.offset > r.offset
		}
		return before && after
	}
	// windows whose store was wiped and that took inputs after it
	resetKeys := map[string]bool{}
	lastWiped := map[string]int{}
	for _, rs := range g.recs {
		for _, r := range rs {
			for _, w := range r.wins {
				if w.wiped {
					k := s.windowKey(r.key, w.start)
					lastWiped[k] = max(lastWiped[k], w.order)
				}
			}
		}
	}
	for _, rs := range g.recs {
		for _, r := range rs {
			for _, w := range r.wins {
				k := s.windowKey(r.key, w.start)
				if lw, ok := lastWiped[k]; ok && w.shown && !w.wiped && w.order > lw {
					resetKeys[k] = true
				}
			}
		}
	}
	// the engine's upper bound of stream time where copies are purged: the
	// latest timestamp of an input with no readable copy
	purgedMax := map[int32]int64{}
	for p := range s.Partitions {
		for _, r := range g.recs[p] {
			rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
			rtp := audit.TopicPartition{Topic: WindowHop, Partition: rp}
			if !s.Hop || !r.consumed || r.offset < g.starts[r.tp] || g.starts[rtp] == 0 ||
				len(r.copies) > 0 && r.copies[0] >= g.starts[rtp] || r.aborted >= g.starts[rtp] {
				continue
			}
			if m, ok := purgedMax[rp]; !ok || r.ts > m {
				purgedMax[rp] = r.ts
			}
		}
	}
	for p := range s.Partitions {
		for _, r := range g.recs[p] {
			if !r.consumed || r.offset < g.starts[r.tp] || r.pending && !r.purged {
				continue
			}
			rp := audit.DefaultPartition([]byte(r.key), s.Partitions)
			rtp := audit.TopicPartition{Topic: WindowHop, Partition: rp}
			late, lateApplied := false, false
			for _, w := range r.wins {
				k := s.windowKey(r.key, w.start)
				if w.late {
					late = true
					continue
				}
				if r.lateTs && w.applied {
					lateApplied = true
				}
				lost := r.purged || !w.shown || w.wiped && resetKeys[k]
				if !lost {
					continue
				}
				e := Expected{Topic: r.tp.Topic, Partition: r.tp.Partition, Offset: r.offset, Key: k, Evident: true}
				copyReadable := len(r.copies) > 0 && r.copies[0] >= g.starts[rtp]
				switch {
				case w.wiped && resetKeys[k]:
					e.Stage, e.Cause, e.Evident, e.Flagged = audit.StageStore, audit.CauseStateReset, false, true
				case !s.Hop:
					e.Stage, e.Cause = audit.StageStore, audit.CauseUnapplied
				case w.applied && copyReadable:
					e.Stage, e.Cause = audit.StageStore, audit.CauseStateDiverged
				case len(r.copies) == 0 && r.fault == FaultAbortNotReplayed && r.aborted >= g.starts[rtp]:
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseAbortedNotReplayed
				case len(r.copies) == 0 && (readable(r) || g.starts[rtp] == 0):
					e.Stage, e.Cause = audit.StageRepartition, audit.CauseDropped
				case g.purged[rtp]:
					e.Stage, e.Cause = audit.StageRepartition, audit.CausePurgedBeforeCommit
				default:
					e.Stage, e.Cause, e.Evident, e.Flagged = audit.StageRepartition, audit.CauseUnapplied, false, true
				}
				if m, ok := purgedMax[rp]; ok && !copyReadable && s.Window != nil && w.start+s.Window.Size+s.Window.Grace <= m &&
					e.Cause != audit.CauseDropped && e.Cause != audit.CauseAbortedNotReplayed {
					// its copy purged, its window may have closed before it (an
					// input whose copy is purged may precede it, with a later
					// timestamp): late or lost cannot be told, and the run is
					// not clean
					e.Evident, e.Flagged = false, false
					g.truth.Unprovable = true
				}
				if partial && e.Cause != audit.CauseDropped && e.Cause != audit.CauseAbortedNotReplayed {
					e.Evident, e.Flagged = false, false
				}
				g.truth.Findings = append(g.truth.Findings, e)
			}
			if late {
				g.truth.Late[ref(r)] = true
				if s.Hop && g.purged[rtp] && !(len(r.copies) > 0 && r.copies[0] >= g.starts[rtp]) {
					// its copy purged with the range above the commit: it may
					// never have been processed, so late cannot be told from lost
					g.truth.LateMaybe[ref(r)] = true
				}
			} else if lateApplied {
				g.truth.LateApplied[ref(r)] = true
			}
			if r.fault == FaultDuplicate && s.Hop {
				if len(r.copies) == 2 && r.copies[0] >= g.starts[rtp] {
					g.truth.Findings = append(g.truth.Findings, Expected{Stage: audit.StageRepartition, Cause: audit.CauseDuplicate, Topic: WindowHop, Partition: rp, Offset: r.copies[0], Key: codec.Text(r.key), Evident: true})
				} else {
					if g.truth.Doubled == nil {
						g.truth.Doubled = map[string]bool{}
					}
					for _, w := range r.wins {
						g.truth.Doubled[WindowSource+" "+s.windowKey(r.key, w.start)] = true
					}
				}
			}
		}
	}
	// the swallowed output record: join-missing when the engine's rule
	// proves the window's result due (a record at or past its end plus
	// grace processed after the window's last input)
	for wk := range g.missingOut {
		if !g.lastState[wk] {
			continue
		}
		e := Expected{Stage: audit.StageJoin, Cause: audit.CauseJoinMissing, Topic: WindowOutput, Offset: -1, Key: wk, Evident: true}
		for _, rs := range g.recs {
			for _, r := range rs {
				for _, w := range r.wins {
					if s.windowKey(r.key, w.start) == wk {
						e.Partition = s.outPartition(r.key, w.start)
						if s.KeyString {
							e.Key = codec.Text(s.keyString(r.key, w.start))
						}
						if s.KeyInner {
							e.Key = codec.Text(r.key)
						}
						if s.Suppress {
							// due by the engine's rule, on inputs it can read
							e.Evident = g.due(r, w) && !g.truth.Partial
						}
					}
				}
			}
		}
		g.truth.Findings = append(g.truth.Findings, e)
	}
	sort.Slice(g.truth.Findings, func(i, j int) bool { return g.truth.Findings[i].String() < g.truth.Findings[j].String() })
}

// due reports whether the task of r's key processed, after the last
// input of r's window w, a record at or past the window's end + grace.
func (g *wgen) due(r *wrec, w *wapp) bool {
	s := g.s
	p := audit.DefaultPartition([]byte(r.key), s.Partitions)
	last := int64(-1)
	for _, q := range g.recs[p] {
		if q.key != r.key || !q.processed {
			continue
		}
		for _, qw := range q.wins {
			if qw.start == w.start {
				pos := q.offset
				if s.Hop {
					pos = q.copies[0] // as the engine: the first committed copy
					if start := g.starts[audit.TopicPartition{Topic: WindowHop, Partition: p}]; pos < start {
						pos = start - 1 // purged: the engine places it just before the readable ones
					}
				}
				last = max(last, pos)
			}
		}
	}
	for _, x := range g.processed[p] {
		if x.offset > last && x.ts >= w.start+s.Window.Size+s.Window.Grace {
			return true
		}
	}
	return false
}
