package audittest

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
}

type srcRec struct {
	table   int
	tp      audit.TopicPartition
	offset  int64
	key     string // order id, "" for a null selected key
	value   map[string]any
	ts      int64
	fault   FaultKind
	applied bool // applied from the repartition topic
	shown   bool // reflected in the store
	purged  bool
	pending bool
	wiped   bool // applied, then lost when the store was wiped
	order   int  // when it was applied, across the run (0: never)
}

type reprRec struct {
	src    *srcRec
	offset int64
	dup    bool
}

// Generate writes the scenario through b and returns its ground truth.
func Generate(s Scenario, b Backend) (*Truth, error) {
	g := &gen{s: s, b: b, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))}
	return g.run()
}

type gen struct {
	s     Scenario
	b     Backend
	rng   *rand.Rand
	truth Truth
	srcs  [][]*srcRec // per table, in offset order per partition
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
	// what the topics hold at the end: each table's last changelog state
	// (its timestamp) per key, and the output's last record per key
	lastCl  []map[string]int64
	lastOut map[string]outRec
}

func (g *gen) run() (*Truth, error) {
	s := g.s
	g.offsets = map[audit.TopicPartition]int64{}
	g.faultOf = map[FaultKind][]Fault{}
	for _, f := range s.Faults {
		g.faultOf[f.Kind] = append(g.faultOf[f.Kind], f)
	}
	for _, t := range s.Tables {
		for _, top := range []struct {
			name      string
			compacted bool
		}{{t.Source, false}, {s.Repartition(t), false}, {s.Changelog(t), true}} {
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

func (g *gen) encode(topic string, v map[string]any) ([]byte, error) {
	if g.s.Encode != nil {
		return g.s.Encode(topic, v)
	}
	return json.Marshal(v)
}

func orderID(i int) string { return fmt.Sprintf("o-%05d", i) }

// produceSources writes each source topic, keyed by order id so that one
// order's records stay in one partition, with timestamps rising.
func (g *gen) produceSources() error {
	s := g.s
	g.srcs = make([][]*srcRec, len(s.Tables))
	for ti, t := range s.Tables {
		perPart := map[int32][]*srcRec{}
		ts := s.Now - 3_600_000
		for i := 0; i < s.Inputs; i++ {
			ts += int64(1 + g.rng.IntN(200))
			id := orderID(g.rng.IntN(s.Keys))
			v := map[string]any{"orderId": id, "seq": i, "amount": g.rng.IntN(10000), "table": t.Name}
			key := id
			if i < s.NullKeys {
				delete(v, "orderId")
				key = ""
			}
			p := audit.DefaultPartition([]byte(id), s.Partitions)
			if s.SpreadSources {
				p = int32(g.rng.IntN(int(s.Partitions)))
			}
			perPart[p] = append(perPart[p], &srcRec{table: ti, tp: audit.TopicPartition{Topic: t.Source, Partition: p}, key: key, value: v, ts: ts})
		}
		for p := int32(0); p < s.Partitions; p++ {
			recs := perPart[p]
			outs := make([]Out, len(recs))
			for i, r := range recs {
				val, err := g.encode(t.Source, r.value)
				if err != nil {
					return err
				}
				// the source key is an event id; the app re-keys by orderId
				outs[i] = Out{Key: []byte("evt-" + t.Name + "-" + strconv.Itoa(p2i(p)) + "-" + strconv.Itoa(i)), Value: val, Timestamp: r.ts}
			}
			offs, err := g.b.Produce(audit.TopicPartition{Topic: t.Source, Partition: p}, outs)
			if err != nil {
				return err
			}
			for i, r := range recs {
				r.offset = offs[i]
			}
			g.srcs[ti] = append(g.srcs[ti], recs...)
			g.truth.Inputs += len(recs)
		}
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
		sort.Slice(out, func(i, j int) bool { return out[i].ts < out[j].ts })
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

// consumedOf returns table ti's inputs that sub-topology 0 will consume.
func (g *gen) consumedOf(ti int) []*srcRec {
	var out []*srcRec
	byPart := map[int32][]*srcRec{}
	for _, r := range g.srcs[ti] {
		byPart[r.tp.Partition] = append(byPart[r.tp.Partition], r)
	}
	for p := int32(0); p < g.s.Partitions; p++ {
		recs := byPart[p]
		out = append(out, recs[:max(len(recs)-g.s.Lag, 0)]...)
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
