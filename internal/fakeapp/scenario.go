package fakeapp

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/kaudit/kaudit/audit"
)

// Backend is where a scenario writes: memory, or a kfake cluster.
type Backend interface {
	CreateTopic(name string, partitions int32, compacted bool) error
	// Produce writes non-transactional records and returns their offsets.
	Produce(tp audit.TopicPartition, recs []Out) ([]int64, error)
	// Begin starts a transaction of producer (a StreamThread's producer).
	Begin(producer string) error
	// TxnProduce writes records in producer's open transaction.
	TxnProduce(producer string, tp audit.TopicPartition, recs []Out) ([]int64, error)
	// End commits or aborts producer's transaction.
	End(producer string, commit bool) error
	// DeleteRecords moves tp's log start to before.
	DeleteRecords(tp audit.TopicPartition, before int64) error
	// CommitOffsets sets the group's committed offsets.
	CommitOffsets(group string, offsets map[audit.TopicPartition]int64) error
}

// Out is one record a scenario writes.
type Out struct {
	Key, Value []byte
	Timestamp  int64
}

// Reducer names what a table's reduce does.
type Reducer string

const (
	ReduceLatest Reducer = "latest"
	ReduceCount  Reducer = "count"
	ReduceSum    Reducer = "sum(amount)" // the first value, its amount summed: order-dependent in its other fields
	ReduceExpr   Reducer = "expr"        // ExprReducer: the latest value's fields, the amounts summed
)

// ExprReducer is ReduceExpr's expression, as a spec writes it.
const ExprReducer = `{"orderId": value.orderId, "seq": value.seq, "table": value.table, "amount": agg.amount + value.amount}`

// Reducers lists every reducer a scenario's table can have.
var Reducers = []Reducer{ReduceLatest, ReduceCount, ReduceSum, ReduceExpr}

// FaultKind is one injectable fault.
type FaultKind string

const (
	FaultDrop               FaultKind = "drop"                // sub-topology 0 swallows the input: no repartition copy
	FaultAbortNotReplayed   FaultKind = "abort-not-replayed"  // its copy is only in an aborted transaction
	FaultStateDiverged      FaultKind = "state-diverged"      // applied from the repartition topic, never reflected in the store
	FaultPurgeBeforeCommit  FaultKind = "purge-before-commit" // a repartition partition purged past the committed offset
	FaultRetentionGap       FaultKind = "retention-gap"       // source records deleted past the committed offset
	FaultStateReset         FaultKind = "state-reset"         // the store is wiped and restarts from a raw input (count tables)
	FaultJoinMissing        FaultKind = "join-missing"        // the join never emits the key
	FaultDuplicate          FaultKind = "duplicate"           // one input's repartition copy committed twice
	FaultHangingTransaction FaultKind = "hanging-transaction" // an open transaction older than the timeout on the output
	// On a table's own output (TableSpec.Output): a key's every record
	// swallowed on the way, or every one after its first.
	FaultOutputMissing FaultKind = "output-missing"
	FaultOutputStale   FaultKind = "output-stale"
)

// Fault is one injected fault; Table picks the table it hits (for
// retention-gap and purge-before-commit, the partition).
type Fault struct {
	Kind      FaultKind
	Table     int
	Partition int32
}

// TableSpec is one of the app's tables.
type TableSpec struct {
	Name    string
	Source  string
	Reducer Reducer
	Store   string // store name, as Streams numbers it
	// Merged are further source topics merged into Source's stream
	// (builder.stream(a).merge(builder.stream(b))).
	Merged []string
	// Steps are the stateless operators between the source and the
	// repartition topic (steps.go); select_key: value.orderId follows them
	// unless one of them gives the key.
	Steps []Step
	// Output is the table's own output topic (toStream(), OutputSteps,
	// to(Output)), co-partitioned with the store; "" for none.
	Output      string
	OutputSteps []OutputStep
}

// Scenario is a Streams-shaped app: sources → selectKey → repartition →
// reduce → t1.leftJoin(t2).leftJoin(t3) → output, under exactly-once v2.
type Scenario struct {
	AppID      string
	Tables     []TableSpec
	Output     string
	Partitions int32 // of every topic but the output
	// SpreadSources puts source records in random partitions, as apps whose
	// record key is not the table key do (else a record's source partition
	// is its order id's, and re-keying moves nothing).
	SpreadSources bool
	// OutputPartitions is the output topic's partition count (0: Partitions);
	// its records go where the default partitioner puts their keys.
	OutputPartitions int32
	Inputs           int // records per source topic
	Keys             int // distinct order ids
	Seed             uint64
	Now              int64 // ms; source timestamps run up to about Now - 1h
	Commit           int   // records per transaction
	// AbortEvery aborts and replays every n-th transaction (0: never).
	AbortEvery int
	// Lag leaves the last n records of each source partition unconsumed,
	// and Inflight the last n repartition records of each partition
	// unapplied.
	Lag, Inflight int
	// Purge deletes applied repartition records, as Streams does.
	Purge  bool
	Faults []Fault
	// NullKeys is how many inputs per table carry no orderId.
	NullKeys int
	// Encode serializes a value for a topic (JSON when nil).
	Encode func(topic string, v map[string]any) ([]byte, error)
}

// SeedScenario returns the seed's app with n inputs per source.
func SeedScenario(appID string, n int) Scenario {
	return Scenario{
		AppID: appID,
		Tables: []TableSpec{
			{Name: "orders", Source: "orders-v1", Reducer: ReduceLatest, Store: "KSTREAM-REDUCE-STATE-STORE-0000000002"},
			{Name: "payments", Source: "payments-v1", Reducer: ReduceLatest, Store: "KSTREAM-REDUCE-STATE-STORE-0000000009"},
			{Name: "shipments", Source: "shipments-v1", Reducer: ReduceLatest, Store: "KSTREAM-REDUCE-STATE-STORE-0000000016"},
		},
		Output: "order-status", Partitions: 3, Inputs: n, Keys: max(n/3, 1), Seed: 1, Now: 1_780_000_000_000,
		Commit: 10, AbortEvery: 7, Lag: 2, Inflight: 2, Purge: true,
	}
}

// Repartition, Changelog name a table's internal topics.
func (s *Scenario) Repartition(t TableSpec) string { return s.AppID + "-" + t.Store + "-repartition" }
func (s *Scenario) Changelog(t TableSpec) string   { return s.AppID + "-" + t.Store + "-changelog" }

// Expected is one finding the engine must report: the ground truth.
type Expected struct {
	Stage     audit.Stage
	Cause     audit.Cause
	Topic     string
	Partition int32
	Offset    int64
	Key       string
	// Evident is false for a loss the evidence may not prove on its own
	// (a latest input another partition's input may have preceded, a
	// fold's input the copies no longer name): an audit must report it, or
	// the key's undecided finding must list it, or (latest only) it may
	// stay silent. It is not part of String.
	Evident bool `json:"-"`
	// Flagged: reported, or listed among the candidates of the key's
	// undecided finding (a fold's input whose copy is purged: the state
	// proves a loss, not always which input).
	Flagged bool `json:"-"`
}

func (e Expected) String() string {
	return fmt.Sprintf("%s/%s %s/%d@%d key=%s", e.Stage, e.Cause, e.Topic, e.Partition, e.Offset, e.Key)
}

// Truth is what a scenario wrote and what an audit must find.
type Truth struct {
	Findings []Expected // loss and anomaly findings, exactly
	Inputs   int        // source records written
	// Doubled names the keys ("source topic" + " " + key) a fold applied an
	// input twice with its copies purged: a duplicate the state may show.
	Doubled map[string]bool
	// Filtered lists, per table and source partition, the consumed inputs
	// the table's steps emit nothing for, as the spec states them: one
	// filtered finding (info) each, never a loss.
	Filtered []Filtered
	// NullKeys lists, per table and source partition, the elements of
	// consumed inputs whose key is null (a map or selectKey to a missing
	// field, an input without orderId): Streams drops them before the
	// repartition sink, one null-key finding (info) each.
	NullKeys []Filtered
	// Unjudged names the tables kaudit cannot judge (a step TODO, a
	// Processor API node, an expression that fails on a consumed input):
	// the verdict is not clean, and only the findings that need no key are
	// reported of them.
	Unjudged []string
}

// Filtered is one filtered (or null-key) finding: Count consumed inputs
// (elements) of a source partition, the first at offset First.
type Filtered struct {
	Table        string
	Topic        string
	Partition    int32
	First, Count int64
}

// srcIn is one source record.
type srcIn struct {
	tp       audit.TopicPartition
	offset   int64
	ts       int64
	key      string // the record key: an event id
	value    map[string]any
	consumed bool
	seq      int         // its place in the order its task processed its inputs
	elems    [][]*srcRec // per table: what its chain emits for the record
}

// srcRec is one element a table's chain emits for a source record (the
// record itself, keyed by its order id, for a table without steps).
type srcRec struct {
	table   int
	in      *srcIn
	elem    int // its index among the record's elements
	tp      audit.TopicPartition
	offset  int64
	key     string // order id, "" for a null selected key
	value   any
	ts      int64
	fault   FaultKind
	applied bool // applied from the repartition topic
	shown   bool // reflected in the store
	purged  bool
	pending bool
	wiped   bool // applied, then lost when the store was wiped
	order   int  // when it was applied, across the run (0: never)
	// appliedAt is when its copy was applied, reflected in the store or
	// not (0: never)
	appliedAt int
}

type reprRec struct {
	src    *srcRec
	offset int64
	dup    bool
}

// Generate writes the scenario through b and returns its ground truth.
func Generate(s Scenario, b Backend) (*Truth, error) {
	g := &gen{s: s, b: b, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15)),
		xrng: rand.New(rand.NewPCG(s.Seed, 0x5eed57e95))}
	return g.run()
}

type gen struct {
	s     Scenario
	b     Backend
	rng   *rand.Rand
	xrng  *rand.Rand // the steps' fields of source values
	truth Truth
	srcs  [][]*srcRec         // per table, its elements in offset order per partition
	ins   map[string][]*srcIn // per source topic, in offset order per partition
	// repr[table][partition]: repartition records in offset order
	repr     [][][]*reprRec
	offsets  map[audit.TopicPartition]int64
	faultOf  map[FaultKind][]Fault
	txnCount int
	starts   map[audit.TopicPartition]int64 // log-start offsets after deletes
	// joinMissingKey is the key the join never emits (FaultJoinMissing).
	joinMissingKey string
	purgedRepr     []audit.TopicPartition
	applied        int // inputs applied so far, across tasks
	appliedSeq     int // copies applied so far, reflected in the store or not
	// what the topics hold at the end: each table's last changelog state
	// (its timestamp) per key, and the output's last record per key
	lastCl  []map[string]int64
	lastOut map[string]outRec
	// per table with an output: each key's committed changelog states and
	// output records, in order, and the keys whose output records a fault
	// swallows
	clHist  []map[string][]written
	outHist []map[string][]written
	outKeys map[FaultKind]map[int]string
}

func (g *gen) run() (*Truth, error) {
	s := g.s
	g.offsets = map[audit.TopicPartition]int64{}
	g.faultOf = map[FaultKind][]Fault{}
	for _, f := range s.Faults {
		g.faultOf[f.Kind] = append(g.faultOf[f.Kind], f)
	}
	created := map[string]bool{}
	for _, t := range s.Tables {
		type topic struct {
			name      string
			compacted bool
		}
		var tops []topic
		for _, src := range t.topics() {
			tops = append(tops, topic{src, false})
		}
		tops = append(tops, topic{s.Repartition(t), false}, topic{s.Changelog(t), true})
		if t.Output != "" {
			tops = append(tops, topic{t.Output, false})
		}
		for _, top := range tops {
			if created[top.name] {
				continue // a source two tables read (a split)
			}
			created[top.name] = true
			if err := g.b.CreateTopic(top.name, s.Partitions, top.compacted); err != nil {
				return nil, err
			}
		}
	}
	if err := g.b.CreateTopic(s.Output, s.outputPartitions(), false); err != nil {
		return nil, err
	}
	if err := g.produceSources(); err != nil {
		return nil, err
	}
	g.pickFaults()
	g.pickJoinMissing()
	g.pickOutputFaults()
	if err := g.subtopology0(); err != nil {
		return nil, err
	}
	if err := g.subtopology1(); err != nil {
		return nil, err
	}
	if err := g.postFaults(); err != nil {
		return nil, err
	}
	if err := g.b.CommitOffsets(s.AppID, g.offsets); err != nil {
		return nil, err
	}
	g.groundTruth()
	return &g.truth, nil
}

func (g *gen) encode(topic string, v any) ([]byte, error) {
	if m, ok := v.(map[string]any); ok && g.s.Encode != nil {
		return g.s.Encode(topic, m)
	}
	return json.Marshal(v)
}

func orderID(i int) string { return fmt.Sprintf("o-%05d", i) }

// produceSources writes each source topic, keyed by order id so that one
// order's records stay in one partition, with timestamps rising, and
// runs each table's chain on them.
func (g *gen) produceSources() error {
	s := g.s
	g.srcs = make([][]*srcRec, len(s.Tables))
	g.ins = map[string][]*srcIn{}
	for _, t := range s.Tables {
		for _, topic := range t.topics() {
			if _, ok := g.ins[topic]; ok {
				continue // a source two tables read (a split)
			}
			if err := g.produceTopic(t, topic); err != nil {
				return err
			}
		}
	}
	for ti, t := range s.Tables {
		chain := t.chain()
		for _, topic := range t.topics() {
			for _, in := range g.ins[topic] {
				if in.elems == nil {
					in.elems = make([][]*srcRec, len(s.Tables))
				}
				for ei, e := range runApp(chain, Elem{Key: in.key, Value: in.value}) {
					key, _ := e.Key.(string) // "": a null key
					r := &srcRec{table: ti, in: in, elem: ei, tp: in.tp, offset: in.offset, key: key, value: e.Value, ts: in.ts}
					in.elems[ti] = append(in.elems[ti], r)
					g.srcs[ti] = append(g.srcs[ti], r)
				}
			}
		}
	}
	return nil
}

// produceTopic writes one source topic of table t.
func (g *gen) produceTopic(t TableSpec, topic string) error {
	s := g.s
	perPart := map[int32][]*srcIn{}
	ts := s.Now - 3_600_000
	steps := s.hasSteps(topic)
	for i := 0; i < s.Inputs; i++ {
		ts += int64(1 + g.rng.IntN(200))
		id := orderID(g.rng.IntN(s.Keys))
		v := map[string]any{"orderId": id, "seq": i, "amount": g.rng.IntN(10000), "table": t.Name}
		if i < s.NullKeys {
			delete(v, "orderId")
		}
		p := audit.DefaultPartition([]byte(id), s.Partitions)
		if s.SpreadSources {
			p = int32(g.rng.IntN(int(s.Partitions)))
		}
		if steps {
			extras(g.xrng, v, s.Keys)
		}
		perPart[p] = append(perPart[p], &srcIn{tp: audit.TopicPartition{Topic: topic, Partition: p}, value: v, ts: ts})
	}
	for p := int32(0); p < s.Partitions; p++ {
		recs := perPart[p]
		outs := make([]Out, len(recs))
		for i, r := range recs {
			val, err := g.encode(topic, r.value)
			if err != nil {
				return err
			}
			// the source key is an event id; the app re-keys by orderId
			r.key = "evt-" + t.Name + "-" + strconv.Itoa(p2i(p)) + "-" + strconv.Itoa(i)
			if topic != t.Source {
				r.key = "evt-" + topic + "-" + strconv.Itoa(p2i(p)) + "-" + strconv.Itoa(i)
			}
			outs[i] = Out{Key: []byte(r.key), Value: val, Timestamp: r.ts}
			r.consumed = i < len(recs)-s.Lag
		}
		offs, err := g.b.Produce(audit.TopicPartition{Topic: topic, Partition: p}, outs)
		if err != nil {
			return err
		}
		for i, r := range recs {
			r.offset = offs[i]
		}
		g.ins[topic] = append(g.ins[topic], recs...)
		g.truth.Inputs += len(recs)
	}
	return nil
}

// pickFaults marks the inputs the faults hit: the last input of a key, so
// that no later input overwrites the loss under latest.
func (g *gen) pickFaults() {
	last := func(ti int) []*srcRec {
		seen := map[string]bool{}
		var out []*srcRec
		recs := g.consumedOf(ti)
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if r.key == "" || seen[r.key] || r.fault != "" {
				seen[r.key] = true
				continue
			}
			seen[r.key] = true
			out = append(out, r)
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
		return out
	}
	for _, kind := range []FaultKind{FaultDrop, FaultAbortNotReplayed, FaultStateDiverged, FaultDuplicate} {
		for _, f := range g.faultOf[kind] {
			cands := last(f.Table)
			if len(cands) < 3 {
				continue
			}
			// middle of the run: neighbours on both sides
			c := cands[len(cands)/3+g.rng.IntN(max(len(cands)/3, 1))]
			c.fault = kind
		}
	}
}

// consumedOf returns the elements of table ti's inputs that sub-topology
// 0 will consume.
func (g *gen) consumedOf(ti int) []*srcRec {
	var out []*srcRec
	for _, topic := range g.s.Tables[ti].topics() {
		for _, in := range g.ins[topic] {
			if in.consumed {
				out = append(out, in.elems[ti]...)
			}
		}
	}
	return out
}

func p2i(p int32) int { return int(p) }

// Match compares findings with the ground truth: what the truth has that
// got lacks, and what got has that the truth lacks.
func Match(truth, got []Expected) (missed, extra []Expected) {
	want := map[string]bool{}
	for _, e := range truth {
		want[e.String()] = true
	}
	have := map[string]bool{}
	for _, e := range got {
		have[e.String()] = true
		if !want[e.String()] {
			extra = append(extra, e)
		}
	}
	for _, e := range truth {
		if !have[e.String()] {
			missed = append(missed, e)
		}
	}
	return missed, extra
}

func (s *Scenario) outputPartitions() int32 {
	if s.OutputPartitions > 0 {
		return s.OutputPartitions
	}
	return s.Partitions
}
