// Command gen writes, into a real Kafka cluster, the data a clean run of the
// seed's Kafka Streams 3.6 app (application.id bench, exactly_once_v2) leaves
// behind, for the benchmark harness testdata/bench/run.sh:
//
//	orders-v1, payments-v1, shipments-v1 (12 partitions, Avro, keyed by an event id)
//	  → selectKey(orderId) → bench-KSTREAM-REDUCE-STATE-STORE-00000000NN-repartition
//	  → reduce (latest) → bench-KSTREAM-REDUCE-STATE-STORE-00000000NN-changelog (compacted)
//	  → orders.leftJoin(payments).leftJoin(shipments) → order-status
//
// It streams: records are derived from (table, index) by a hash, so memory is
// bounded by the distinct order ids (a few int arrays per table), never by the
// records. Sources are written by plain idempotent producers; every internal
// hop by one transactional producer per simulated task, committing every
// -commit records. At the end it commits group bench's offsets at the end
// offsets of the source and repartition partitions, and writes the spec
// (kaudit.yaml), the schemas (schemas/<id>.avsc) and the record counts
// (counts.txt) into -dir.
//
//	go run ./testdata/bench/gen -records 1000000 -brokers 127.0.0.1:19192 \
//	    -registry http://127.0.0.1:19381 -dir testdata/bench/work/data
//
// gen check and gen records are run.sh's helpers (check.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

// table is one source → repartition → reduce chain, with the per-key state
// of its store: the index of the input last on the repartition partition
// (what a latest reduce holds) and of the newest input (the changelog
// record's timestamp is the max of the inputs').
type table struct {
	idx         int
	name        string // the spec's table name
	record      string // Avro record name
	source      string
	store       string
	sub         int // sub-topology of its source → repartition chain
	keyPrefix   string
	statuses    []string
	n           int // records
	srcID       int // schema ids
	reprID      int
	clID        int
	repartTopic string
	clTopic     string

	mu      sync.Mutex
	lastOff []int64 // repartition offset of lastIdx
	lastIdx []int32
	maxIdx  []int32
}

type gen struct {
	app        string
	partitions int32
	keys       int
	seed       uint64
	base       int64 // ms: timestamp of index 0
	commit     int
	brokers    []string
	txnPrefix  string
	output     string
	outID      int
	tables     []*table
	part       []uint8 // repartition partition of each order id
	idWidth    int

	produced atomic.Int64
	errMu    sync.Mutex
	err      error
	cancel   context.CancelFunc
}

func main() {
	if helper(os.Args) {
		return
	}
	var (
		records  = flag.Int("records", 1_000_000, "total source records over the 3 source topics")
		keys     = flag.Int("keys", 1_000_000, "distinct order ids the tables draw from")
		parts    = flag.Int("partitions", 12, "partitions of every topic")
		brokers  = flag.String("brokers", "127.0.0.1:19192", "bootstrap servers")
		regURL   = flag.String("registry", "http://127.0.0.1:19381", "Schema Registry URL")
		dir      = flag.String("dir", "", "where to write kaudit.yaml, schemas/ and counts.txt")
		app      = flag.String("app-id", "bench", "the Streams application.id")
		seed     = flag.Uint64("seed", 1, "seed of the generated values")
		commit   = flag.Int("commit", 5000, "records per transaction of a simulated task")
		baseFlag = flag.Int64("base", 0, "timestamp (ms) of the first record of each source; 0: so that the last is about now")
	)
	flag.Parse()
	if *dir == "" {
		log.Fatal("gen: -dir is required")
	}
	if *parts < 1 || *parts > 255 || *keys < 1 || *records < 3 || *commit < 1 {
		log.Fatal("gen: need 1 <= -partitions <= 255, -keys >= 1, -records >= 3, -commit >= 1")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := &gen{app: *app, partitions: int32(*parts), keys: *keys, seed: *seed, commit: *commit,
		brokers: strings.Split(*brokers, ","), output: "order-status", cancel: cancel,
		txnPrefix: *app + "-6f1c0e2a-9d5d-4dd6-bc4c-cf8320df3bb2-", idWidth: len(strconv.Itoa(*keys - 1))}
	defs := []struct {
		name, record, source, store, prefix string
		sub                                 int
		statuses                            []string
	}{
		{"orders", "Order", "orders-v1", "KSTREAM-REDUCE-STATE-STORE-0000000002", "ord-evt-", 0, []string{"NEW", "CONFIRMED", "CANCELLED", "AMENDED"}},
		{"payments", "Payment", "payments-v1", "KSTREAM-REDUCE-STATE-STORE-0000000009", "pay-evt-", 2, []string{"AUTHORIZED", "CAPTURED", "REFUNDED", "DECLINED"}},
		{"shipments", "Shipment", "shipments-v1", "KSTREAM-REDUCE-STATE-STORE-0000000016", "shp-evt-", 3, []string{"PACKED", "SHIPPED", "IN_TRANSIT", "DELIVERED"}},
	}
	for i, d := range defs {
		t := &table{idx: i, name: d.name, record: d.record, source: d.source, store: d.store, sub: d.sub, keyPrefix: d.prefix, statuses: d.statuses,
			n: *records / 3, repartTopic: *app + "-" + d.store + "-repartition", clTopic: *app + "-" + d.store + "-changelog"}
		if i < *records%3 {
			t.n++
		}
		g.tables = append(g.tables, t)
	}
	g.base = *baseFlag
	if g.base == 0 {
		g.base = time.Now().Add(-time.Minute).UnixMilli() - int64(g.tables[0].n)*3
	}
	start := time.Now()
	if err := g.run(ctx, *regURL, *dir); err != nil {
		log.Fatalf("gen: %v", err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Fprintf(os.Stderr, "gen: done in %s (Go heap peak in use about %d MiB)\n", time.Since(start).Round(time.Millisecond), ms.HeapSys>>20)
}

func (g *gen) fail(err error) {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	if g.err == nil {
		g.err = err
		g.cancel()
	}
}

func (g *gen) failed() error {
	g.errMu.Lock()
	defer g.errMu.Unlock()
	return g.err
}

func (g *gen) run(ctx context.Context, regURL, dir string) error {
	schemas := filepath.Join(dir, "schemas")
	if err := os.MkdirAll(schemas, 0o755); err != nil {
		return err
	}
	for _, t := range g.tables {
		var err error
		if t.srcID, err = register(regURL, t.source+"-value", eventSchema(t.record), schemas); err != nil {
			return err
		}
		// the app's serde registers the internal topics' subjects too;
		// an identical schema keeps its id
		if t.reprID, err = register(regURL, t.repartTopic+"-value", eventSchema(t.record), schemas); err != nil {
			return err
		}
		if t.clID, err = register(regURL, t.clTopic+"-value", eventSchema(t.record), schemas); err != nil {
			return err
		}
	}
	var err error
	if g.outID, err = register(regURL, g.output+"-value", statusSchema, schemas); err != nil {
		return err
	}

	admCl, err := kgo.NewClient(kgo.SeedBrokers(g.brokers...))
	if err != nil {
		return err
	}
	defer admCl.Close()
	adm := kadm.NewClient(admCl)
	if err := g.createTopics(ctx, adm); err != nil {
		return err
	}

	g.part = make([]uint8, g.keys)
	buf := make([]byte, 0, 32)
	for k := range g.part {
		buf = g.appendOrderID(buf[:0], k)
		g.part[k] = uint8(audit.DefaultPartition(buf, g.partitions))
	}
	for _, t := range g.tables {
		t.lastOff = make([]int64, g.keys)
		t.lastIdx = make([]int32, g.keys)
		t.maxIdx = make([]int32, g.keys)
		for k := range t.lastOff {
			t.lastOff[k], t.lastIdx[k], t.maxIdx[k] = -1, -1, -1
		}
	}

	stopProgress := g.progress()
	t0 := time.Now()
	if err := g.streams0(ctx); err != nil {
		stopProgress()
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: sources and repartition topics written in %s\n", time.Since(t0).Round(time.Millisecond))
	t1 := time.Now()
	counts, err := g.streams1(ctx)
	stopProgress()
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gen: changelogs and output written in %s\n", time.Since(t1).Round(time.Millisecond))
	if err := g.commitGroup(ctx, adm); err != nil {
		return err
	}
	return g.writeFiles(dir, counts)
}

// createTopics creates the app's topics with the configs Kafka Streams gives
// its internal topics.
func (g *gen) createTopics(ctx context.Context, adm *kadm.Client) error {
	str := func(s string) *string { return &s }
	internalRepart := map[string]*string{"cleanup.policy": str("delete"), "segment.bytes": str("52428800"), "retention.ms": str("-1"), "message.timestamp.type": str("CreateTime")}
	changelog := map[string]*string{"cleanup.policy": str("compact"), "message.timestamp.type": str("CreateTime")}
	type spec struct {
		name string
		cfg  map[string]*string
	}
	var topics []spec
	for _, t := range g.tables {
		topics = append(topics, spec{t.source, nil}, spec{t.repartTopic, internalRepart}, spec{t.clTopic, changelog})
	}
	topics = append(topics, spec{g.output, nil})
	for _, s := range topics {
		resp, err := adm.CreateTopic(ctx, g.partitions, 1, s.cfg, s.name)
		if err == nil {
			err = resp.Err
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("topic %s exists already: the generator writes into an empty cluster (wipe it first)", s.name)
		}
		if err != nil {
			return fmt.Errorf("create topic %s: %w", s.name, err)
		}
	}
	// a new topic's partitions take a moment to get leaders
	names := make([]string, len(topics))
	for i, s := range topics {
		names[i] = s.name
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		md, err := adm.Metadata(ctx, names...)
		ready := err == nil
		for _, n := range names {
			td, ok := md.Topics[n]
			ready = ready && ok && td.Err == nil && len(td.Partitions) == int(g.partitions)
			if ready {
				for _, p := range td.Partitions {
					ready = ready && p.Err == nil && p.Leader >= 0
				}
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the topics have no leaders after 60s (last error: %v)", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (g *gen) progress() func() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		last, lastT := int64(0), time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				n := g.produced.Load()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				fmt.Fprintf(os.Stderr, "gen: %d records written, %.0f/s, heap %d MiB\n", n, float64(n-last)/now.Sub(lastT).Seconds(), ms.HeapInuse>>20)
				last, lastT = n, now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// mix is splitmix64's finalizer: the generator's only source of randomness.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func (g *gen) hash(t *table, i int) uint64 {
	return mix(g.seed*0x100000001b3 ^ uint64(t.idx)<<48 ^ uint64(i))
}

// ts is input i's timestamp: rising within each source.
func (g *gen) ts(t *table, i int) int64 { return g.base + int64(i)*3 + int64(t.idx) }

func (g *gen) amount(t *table, i int) float64 {
	return float64(mix(g.hash(t, i))%10_000_000) / 100
}

func appendPadded(b []byte, n, width int) []byte {
	s := strconv.Itoa(n)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

func (g *gen) appendOrderID(b []byte, k int) []byte {
	return appendPadded(append(b, "order-"...), k, g.idWidth)
}

func (g *gen) sourceKey(t *table, i int) []byte {
	return appendPadded(append(make([]byte, 0, len(t.keyPrefix)+10), t.keyPrefix...), i, 10)
}

const lorem = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. " +
	"Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor " +
	"in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat cupidatat non proident, " +
	"sunt in culpa qui officia deserunt mollit anim id est laborum."

var currencies = []string{"EUR", "USD", "GBP", "CHF", "JPY", "SEK"}

const valueSize = 200

// value is input i of table t as Confluent-framed Avro under schema id,
// about valueSize bytes, and its order id.
func (g *gen) value(t *table, i int, id int) ([]byte, int) {
	h := g.hash(t, i)
	k := int(h % uint64(g.keys))
	b := make([]byte, 0, valueSize+8)
	b = frame(b, id)
	var tmp [32]byte
	b = appendBytesString(b, g.appendOrderID(tmp[:0], k))
	b = appendDouble(b, g.amount(t, i))
	b = appendBytesString(b, appendPadded(append(tmp[:0], "cust-"...), int(h>>20%500_000), 6))
	b = appendString(b, currencies[h>>40%uint64(len(currencies))])
	b = appendString(b, t.statuses[h>>44%uint64(len(t.statuses))])
	note := append(tmp[:0], t.name...)
	note = append(note, " event "...)
	note = strconv.AppendInt(note, int64(i), 10)
	note = append(note, ": "...)
	rest := max(valueSize-len(b)-2-len(note), 0)
	off := int(h >> 48 % 64)
	b = appendLong(b, int64(len(note)+rest))
	b = append(b, note...)
	b = append(b, lorem[off:off+rest]...)
	return b, k
}

func (g *gen) txnClient(id string) (*kgo.Client, error) {
	return kgo.NewClient(kgo.SeedBrokers(g.brokers...), kgo.TransactionalID(id), kgo.TransactionTimeout(60*time.Second),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(20*time.Millisecond),
		kgo.MaxBufferedRecords(20_000), kgo.ProducerBatchMaxBytes(1<<20))
}

// txn is one simulated task's transactional producer.
type txn struct {
	g     *gen
	cl    *kgo.Client
	open  bool
	n     int
	count int64
}

func (x *txn) produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error)) error {
	if !x.open {
		if err := x.cl.BeginTransaction(); err != nil {
			return err
		}
		x.open = true
	}
	x.cl.Produce(ctx, r, done)
	x.n++
	x.count++
	if x.n >= x.g.commit {
		return x.end(ctx)
	}
	return nil
}

func (x *txn) end(ctx context.Context) error {
	if !x.open {
		return nil
	}
	if err := x.cl.Flush(ctx); err != nil {
		return err
	}
	if err := x.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit a transaction: %w", err)
	}
	x.open, x.n = false, 0
	return nil
}

// streams0 writes the sources and, as sub-topologies 0, 2 and 3 would
// (selectKey → repartition sink), their repartition copies: one task per
// source partition, each with its own transactional producer, reading its
// partition in offset order. A dispatcher per table generates the inputs
// in index order and hands each to its source partition's task.
func (g *gen) streams0(ctx context.Context) error {
	var (
		wg     sync.WaitGroup
		plains []*kgo.Client
	)
	defer func() {
		for _, cl := range plains {
			cl.Close()
		}
	}()
	for _, t := range g.tables {
		// the sources' own producers: plain and idempotent, as an upstream
		// service's would be
		plain, err := kgo.NewClient(kgo.SeedBrokers(g.brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ProducerLinger(20*time.Millisecond), kgo.MaxBufferedRecords(50_000), kgo.ProducerBatchMaxBytes(1<<20))
		if err != nil {
			return err
		}
		plains = append(plains, plain)
		chans := make([]chan []int32, g.partitions)
		for p := range chans {
			chans[p] = make(chan []int32, 4)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := g.task0(ctx, t, int32(p), chans[p], plain); err != nil {
					g.fail(fmt.Errorf("task %d_%d: %w", t.sub, p, err))
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				for _, c := range chans {
					close(c)
				}
			}()
			const batch = 256
			pend := make([][]int32, g.partitions)
			send := func(p int32) bool {
				select {
				case chans[p] <- pend[p]:
					pend[p] = nil
					return true
				case <-ctx.Done():
					return false
				}
			}
			for i := range t.n {
				p := audit.DefaultPartition(g.sourceKey(t, i), g.partitions)
				pend[p] = append(pend[p], int32(i))
				if len(pend[p]) == batch && !send(p) {
					return
				}
			}
			for p := range pend {
				if len(pend[p]) > 0 && !send(int32(p)) {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, cl := range plains {
		if err := cl.Flush(ctx); err != nil {
			g.fail(fmt.Errorf("flush a source producer: %w", err))
		}
	}
	if err := g.failed(); err != nil {
		return err
	}
	return ctx.Err()
}

func (g *gen) task0(ctx context.Context, t *table, p int32, in <-chan []int32, plain *kgo.Client) error {
	cl, err := g.txnClient(g.txnPrefix + strconv.Itoa(t.sub) + "_" + strconv.Itoa(int(p)))
	if err != nil {
		return err
	}
	defer cl.Close()
	x := &txn{g: g, cl: cl}
	srcDone := func(_ *kgo.Record, err error) {
		if err != nil {
			g.fail(fmt.Errorf("produce to %s/%d: %w", t.source, p, err))
			return
		}
		g.produced.Add(1)
	}
	for batch := range in {
		for _, i32 := range batch {
			i := int(i32)
			val, k := g.value(t, i, t.srcID)
			ts := time.UnixMilli(g.ts(t, i))
			plain.Produce(ctx, &kgo.Record{Topic: t.source, Partition: p, Key: g.sourceKey(t, i), Value: val, Timestamp: ts}, srcDone)
			rval := val
			if t.reprID != t.srcID {
				rval = g.reframe(val, t.reprID)
			}
			r := &kgo.Record{Topic: t.repartTopic, Partition: int32(g.part[k]), Key: g.appendOrderID(nil, k), Value: rval, Timestamp: ts}
			err := x.produce(ctx, r, func(r *kgo.Record, err error) {
				if err != nil {
					g.fail(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
					return
				}
				g.produced.Add(1)
				t.applied(k, i32, r.Offset)
			})
			if err != nil {
				return err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return x.end(ctx)
}

func (g *gen) reframe(v []byte, id int) []byte {
	out := frame(make([]byte, 0, len(v)), id)
	return append(out, v[5:]...)
}

// applied records that input i of key k landed at offset off of its
// repartition partition: the reduce applies a key's copies in offset order.
func (t *table) applied(k int, i int32, off int64) {
	t.mu.Lock()
	if off > t.lastOff[k] {
		t.lastOff[k], t.lastIdx[k] = off, i
	}
	t.maxIdx[k] = max(t.maxIdx[k], i)
	t.mu.Unlock()
}

// streams1 writes what sub-topology 1 (the three reduces and the join)
// leaves after applying every repartition record: per task (repartition
// partition), each key's final store value to its changelog and the
// joined record to the output, in transactions of -commit records.
func (g *gen) streams1(ctx context.Context) (map[string]int64, error) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[string]int64{}
	)
	sem := make(chan struct{}, 6)
	for p := range g.partitions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			c, err := g.task1(ctx, p)
			if err != nil {
				g.fail(fmt.Errorf("task 1_%d: %w", p, err))
				return
			}
			mu.Lock()
			for k, v := range c {
				counts[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := g.failed(); err != nil {
		return nil, err
	}
	return counts, ctx.Err()
}

func (g *gen) task1(ctx context.Context, p int32) (map[string]int64, error) {
	cl, err := g.txnClient(g.txnPrefix + "1_" + strconv.Itoa(int(p)))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	x := &txn{g: g, cl: cl}
	counts := map[string]int64{}
	done := func(r *kgo.Record, err error) {
		if err != nil {
			g.fail(fmt.Errorf("produce to %s/%d: %w", r.Topic, r.Partition, err))
			return
		}
		g.produced.Add(1)
	}
	for k := range g.keys {
		if int32(g.part[k]) != p {
			continue
		}
		var (
			amounts [3]float64
			present [3]bool
			outTS   int64
		)
		oid := g.appendOrderID(nil, k)
		for ti, t := range g.tables {
			last := t.lastIdx[k]
			if last < 0 {
				continue
			}
			val, _ := g.value(t, int(last), t.clID)
			ts := g.ts(t, int(t.maxIdx[k]))
			present[ti], amounts[ti] = true, g.amount(t, int(last))
			outTS = max(outTS, ts)
			if err := x.produce(ctx, &kgo.Record{Topic: t.clTopic, Partition: p, Key: oid, Value: val, Timestamp: time.UnixMilli(ts)}, done); err != nil {
				return nil, err
			}
			counts[t.clTopic]++
		}
		if !present[0] {
			continue // a left join emits nothing for a key the left table lacks
		}
		v := frame(make([]byte, 0, 64), g.outID)
		v = appendBytesString(v, oid)
		v = appendDouble(v, amounts[0])
		v = appendOptDouble(v, amounts[1], present[1])
		v = appendOptDouble(v, amounts[2], present[2])
		if err := x.produce(ctx, &kgo.Record{Topic: g.output, Partition: p, Key: oid, Value: v, Timestamp: time.UnixMilli(outTS)}, done); err != nil {
			return nil, err
		}
		counts[g.output]++
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return counts, x.end(ctx)
}

// commitGroup commits what Streams commits for group bench once every
// record is processed: the end offsets of the source and repartition
// partitions (past the last COMMIT marker on the repartition topics).
func (g *gen) commitGroup(ctx context.Context, adm *kadm.Client) error {
	var topics []string
	for _, t := range g.tables {
		topics = append(topics, t.source, t.repartTopic)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	if err := ends.Error(); err != nil {
		return fmt.Errorf("list end offsets: %w", err)
	}
	offs := kadm.Offsets{}
	ends.Each(func(o kadm.ListedOffset) {
		offs.AddOffset(o.Topic, o.Partition, o.Offset, -1)
	})
	resp, err := adm.CommitOffsets(ctx, g.app, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit the offsets of group %s: %w", g.app, err)
	}
	return nil
}

func (g *gen) writeFiles(dir string, counts map[string]int64) error {
	var spec strings.Builder
	fmt.Fprintf(&spec, "app_id: %s\nserdes: {key: string, value: avro}\ntables:\n", g.app)
	for _, t := range g.tables {
		fmt.Fprintf(&spec, "  - {name: %s, source: %s, select_key: value.orderId, reduce: latest, store: %s}\n", t.name, t.source, t.store)
	}
	fmt.Fprintf(&spec, `joins:
  - output: %s
    left: orders
    right: [payments, shipments]
    type: left
    value: '{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}'
`, g.output)
	if err := os.WriteFile(filepath.Join(dir, "kaudit.yaml"), []byte(spec.String()), 0o644); err != nil {
		return err
	}
	for _, t := range g.tables {
		counts[t.source] = int64(t.n)
		counts[t.repartTopic] = int64(t.n)
	}
	names := make([]string, 0, len(counts))
	var total int64
	for n, c := range counts {
		names = append(names, n)
		total += c
	}
	sort.Strings(names)
	var out, line strings.Builder
	for _, n := range names {
		fmt.Fprintf(&out, "%s %d\n", n, counts[n])
		fmt.Fprintf(&line, " %s=%d", n, counts[n])
	}
	fmt.Fprintf(&out, "total %d\n", total)
	if err := os.WriteFile(filepath.Join(dir, "counts.txt"), []byte(out.String()), 0o644); err != nil {
		return err
	}
	fmt.Printf("gen: records%s total=%d\n", line.String(), total)
	return nil
}
