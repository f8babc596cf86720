package fuzzapps

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Families are the units a generated app is made of: what the spec models first, then what
// it only recognises (the app is then expected incomplete, naming them).
var Families = []string{"agg", "window", "copy", "split", "tablejoin", "streamjoin", "regroup", "cogroup",
	"ktablefilter", "fkjoin", "streamstream", "global", "session", "suppresstime"}

// UnmodelledFamilies make what the spec cannot describe.
var UnmodelledFamilies = map[string]bool{"ktablefilter": true, "fkjoin": true, "streamstream": true, "global": true,
	"session": true, "suppresstime": true}

var vocabulary = []string{"kafka", "stream", "table", "topic", "record", "offset", "commit", "broker", "window",
	"store", "task", "group", "fence", "abort", "batch", "join", "key", "value"}

// builder holds a description being generated.
type builder struct {
	rng  *rand.Rand
	d    *Desc
	n    int
	tops int
	unit int
}

// Generate makes the app of seed: 1 or 2 units (an unmodelled family always beside a modelled
// one), its settings, input plan and fault. The same seed gives the same description.
func Generate(seed uint64) *Desc {
	return GenerateWith(seed, nil)
}

// GenerateWith is Generate with the families forced (nil: chosen by the seed).
func GenerateWith(seed uint64, families []string) *Desc {
	rng := rand.New(rand.NewPCG(seed, 0x6b61756469742d41))
	d := &Desc{Seed: seed, AppID: fmt.Sprintf("kaudit-gen-%d", seed)}
	b := &builder{rng: rng, d: d}
	d.Guarantee = "exactly_once_v2"
	if rng.IntN(4) == 0 {
		d.Guarantee = "at_least_once"
	}
	if rng.IntN(2) == 0 {
		d.CacheBytes = 10 << 20
	}
	if d.Guarantee == "exactly_once_v2" {
		d.CommitMs = pick(rng, []int64{100, 200, 500, 1000})
	} else {
		d.CommitMs = pick(rng, []int64{500, 1000, 2000})
	}
	if rng.IntN(2) == 0 {
		d.PurgeMs = 3_600_000
	}
	d.Named = rng.IntN(10) < 3
	d.Partitions = pick(rng, []int32{1, 2, 2, 3, 4, 6})
	d.Input = Input{Waves: 2 + rng.IntN(3), PerWave: 20 + rng.IntN(40), Keys: 4 + rng.IntN(20), StepMs: 500, Late: 2 + rng.IntN(2)}
	if rng.IntN(10) < 3 {
		d.Input.PastMs = 2 * 3_600_000
	}
	if families == nil {
		if rng.IntN(100) < 15 {
			families = []string{b.family(true), b.family(false)}
		} else {
			families = []string{b.family(false)}
			if rng.IntN(100) < 30 {
				families = append(families, b.family(rng.IntN(2) == 0))
			}
		}
	}
	for _, f := range families {
		b.unit++
		b.build(f)
	}
	b.chooseFault()
	return d
}

func pick[T any](rng *rand.Rand, l []T) T { return l[rng.IntN(len(l))] }

// family picks a modelled family, or an unmodelled one.
func (b *builder) family(unmodelled bool) string {
	var l []string
	for _, f := range Families {
		if UnmodelledFamilies[f] == unmodelled {
			l = append(l, f)
		}
	}
	return pick(b.rng, l)
}

func (b *builder) build(f string) {
	switch f {
	case "agg":
		b.aggUnit(false)
	case "window":
		b.aggUnit(true)
	case "copy":
		b.copyUnit()
	case "split":
		b.splitUnit()
	case "tablejoin":
		b.tableJoinUnit()
	case "streamjoin":
		b.streamJoinUnit()
	case "regroup":
		b.regroupUnit()
	case "cogroup":
		b.cogroupUnit()
	case "ktablefilter":
		b.ktableFilterUnit()
	case "fkjoin":
		b.fkJoinUnit()
	case "streamstream":
		b.streamStreamUnit()
	case "global":
		b.globalUnit()
	case "session":
		b.sessionUnit()
	case "suppresstime":
		b.suppressTimeUnit()
	default:
		panic("fuzzapps: family " + f)
	}
}

// namable ops take a Named, Materialized, Grouped, Consumed, Produced or Joined name.
var namable = map[string]bool{"stream": true, "table": true, "filter": true, "filterNot": true, "mapValues": true,
	"flatMapValues": true, "selectKey": true, "map": true, "peek": true, "merge": true, "split": true, "groupByKey": true,
	"groupBy": true, "count": true, "reduce": true, "aggregate": true, "toStream": true, "to": true, "tableJoin": true,
	"streamTableJoin": true, "tableGroupBy": true, "tableCount": true, "tableAggregate": true, "tableReduce": true,
	"cogroup": true, "toTable": true, "tableFilter": true, "tableMapValues": true, "suppress": true}

func (b *builder) add(n *Node) *Node {
	b.n++
	n.ID = fmt.Sprintf("n%d", b.n)
	n.Unit = b.unit
	if b.d.Named && namable[n.Op] {
		n.Name = fmt.Sprintf("%s-%s", map[bool]string{true: "store", false: n.Op}[storeOp(n.Op)], n.ID)
	}
	b.d.Nodes = append(b.d.Nodes, n)
	return n
}

// storeOp ops materialize a store (their name is the store's).
func storeOp(op string) bool {
	return slices.Contains([]string{"table", "count", "reduce", "aggregate", "tableCount", "tableAggregate", "tableReduce", "cogroup", "toTable"}, op)
}

func (b *builder) topic(role string) string {
	b.tops++
	return fmt.Sprintf("g%d-%d-%s", b.d.Seed, b.tops, role)
}

// source adds a source node of op (stream, table, globalTable) with the serdes given.
func (b *builder) source(op, key, value string) *Node {
	n := &Node{Op: op, Topic: b.topic(map[string]string{"stream": "s", "table": "t", "globalTable": "g"}[op]), Key: key, Value: value}
	switch op {
	case "stream":
		n.Tombstones = b.rng.IntN(6) == 0
		n.NullKeys = key == SerdeString && b.rng.IntN(5) == 0
		switch r := b.rng.IntN(10); {
		case r < 2:
			n.Reset = "earliest"
		case r < 3:
			n.Reset = "latest"
		}
	case "table", "globalTable":
		n.Tombstones = true
	}
	return b.add(n)
}

func (b *builder) recSerde() string {
	if b.rng.IntN(3) == 0 {
		return SerdeAvro
	}
	return SerdeJSON
}

func (b *builder) anySerdes() (key, value string) {
	key = SerdeString
	switch r := b.rng.IntN(8); {
	case r == 0:
		key = SerdeInt
	case r == 1:
		key = SerdeLong
	}
	value = pick(b.rng, []string{SerdeJSON, SerdeJSON, SerdeJSON, SerdeAvro, SerdeAvro, SerdeString, SerdeInt, SerdeLong})
	return key, value
}

// ---- lambdas ----

func (b *builder) pred(value string) Fn {
	switch {
	case IsRec(value):
		switch b.rng.IntN(5) {
		case 0:
			return Fn{Kind: "eq", Field: "cat", Str: fmt.Sprintf("c%d", b.rng.IntN(5))}
		case 1:
			return Fn{Kind: "gt", Field: "n", N: int64(3 + b.rng.IntN(12))}
		case 2:
			return Fn{Kind: "gt", Field: "amount", N: int64(50 + b.rng.IntN(350))}
		case 3:
			return Fn{Kind: "even", Field: "n"}
		default:
			return Fn{Kind: "even", Field: "amount"}
		}
	case value == SerdeString:
		return Fn{Kind: "has", Str: pick(b.rng, vocabulary)}
	default:
		if b.rng.IntN(2) == 0 {
			return Fn{Kind: "even"}
		}
		return Fn{Kind: "gt", N: int64(10 + b.rng.IntN(70))}
	}
}

// outPred is a predicate on a table's states: a count or an aggregate gets a small threshold.
func (b *builder) outPred(t *Node, value string) Fn {
	if value == SerdeLong && t.Value == SerdeLong && (t.Op == "count" || t.Op == "aggregate" || t.Op == "tableCount" || t.Op == "suppress") {
		if b.rng.IntN(3) == 0 {
			return Fn{Kind: "even"}
		}
		return Fn{Kind: "gt", N: int64(1 + b.rng.IntN(4))}
	}
	return b.pred(value)
}

func (b *builder) mapper(value string) Fn {
	switch {
	case IsRec(value):
		switch b.rng.IntN(5) {
		case 0:
			return Fn{Kind: "scale", Field: "amount", Num: pick(b.rng, []float64{0.5, 1.5, 2.5, 0.1, 3})}
		case 1:
			return Fn{Kind: "add", Field: "n", N: int64(1 + b.rng.IntN(5))}
		case 2:
			return Fn{Kind: "copy", Field: "k", Str: "cat"}
		case 3:
			return Fn{Kind: "upper", Field: "text"}
		default:
			return Fn{Kind: "upper", Field: "cat"}
		}
	case value == SerdeString:
		return Fn{Kind: "upper"}
	default:
		if b.rng.IntN(2) == 0 {
			return Fn{Kind: "scale", Num: pick(b.rng, []float64{0.5, 1.5, 2.5})}
		}
		return Fn{Kind: "add", N: int64(1 + b.rng.IntN(9))}
	}
}

func (b *builder) flat(value string) Fn {
	switch {
	case IsRec(value):
		return Fn{Kind: "split", Field: "text"}
	case value == SerdeString:
		return Fn{Kind: "split"}
	default:
		return Fn{Kind: "pair"}
	}
}

// keyFn picks a key selector for a stream of key and value serdes; its result's serde.
func (b *builder) keyFn(key, value string) (Fn, string) {
	switch {
	case isNum(key):
		return Fn{Kind: "mod", N: int64(2 + b.rng.IntN(4))}, key
	case IsRec(value):
		switch b.rng.IntN(4) {
		case 0:
			return Fn{Kind: "field", Field: "cat"}, SerdeString
		case 1:
			return Fn{Kind: "upperkey"}, SerdeString
		default:
			return Fn{Kind: "field", Field: "k"}, SerdeString
		}
	case value == SerdeString && b.rng.IntN(2) == 0:
		return Fn{Kind: "firstword"}, SerdeString
	default:
		return Fn{Kind: "upperkey"}, SerdeString
	}
}

// ---- chains ----

// chain adds 0..max stateless steps after in (filter, filterNot, mapValues, flatMapValues,
// peek), none changing the key.
func (b *builder) chain(in *Node, maxSteps int) *Node {
	flat := false
	for range b.rng.IntN(maxSteps + 1) {
		n := &Node{In: []string{in.ID}, Key: in.Key, Value: in.Value}
		switch r := b.rng.IntN(10); {
		case r < 3:
			n.Op, n.Fn = "filter", ptr(b.pred(in.Value))
		case r < 4:
			n.Op, n.Fn = "filterNot", ptr(b.pred(in.Value))
		case r < 7:
			n.Op, n.Fn = "mapValues", ptr(b.mapper(in.Value))
		case r < 8 && !flat:
			n.Op, n.Fn = "flatMapValues", ptr(b.flat(in.Value))
			flat = true
		default:
			n.Op = "peek"
		}
		in = b.add(n)
	}
	return in
}

func ptr[T any](v T) *T { return &v }

// rekey adds a selectKey or map after in (when the serdes allow a new key) and returns it;
// with groupBy, the key change is left to the grouping (nil Fn returned when none).
func (b *builder) rekey(in *Node) (*Node, *Fn) {
	fn, key := b.keyFn(in.Key, in.Value)
	switch r := b.rng.IntN(10); {
	case r < 3:
		return b.add(&Node{Op: "selectKey", In: []string{in.ID}, Fn: &fn, Key: key, Value: in.Value}), nil
	case r < 4 && IsRec(in.Value) && in.Key == SerdeString:
		m := Fn{Kind: "field", Field: pick(b.rng, []string{"cat", "k"})}
		return b.add(&Node{Op: "map", In: []string{in.ID}, Fn: &m, Key: SerdeString, Value: in.Value}), nil
	case r < 7:
		return in, &fn
	}
	return in, nil
}

// group adds groupByKey (fn nil) or groupBy(fn).
func (b *builder) group(in *Node, fn *Fn) *Node {
	if fn == nil {
		return b.add(&Node{Op: "groupByKey", In: []string{in.ID}, Key: in.Key, Value: in.Value})
	}
	_, key := b.keyFnSerde(in, *fn)
	return b.add(&Node{Op: "groupBy", In: []string{in.ID}, Fn: fn, Key: key, Value: in.Value})
}

func (b *builder) keyFnSerde(in *Node, fn Fn) (Fn, string) {
	if fn.Kind == "mod" {
		return fn, in.Key
	}
	return fn, SerdeString
}

// fold adds an aggregation of grouped g (count, reduce or aggregate).
func (b *builder) fold(g *Node) *Node {
	v := g.Value
	n := &Node{In: []string{g.ID}, Key: g.Key}
	switch r := b.rng.IntN(10); {
	case r < 3:
		n.Op, n.Value = "count", SerdeLong
	case r < 5:
		n.Op, n.Reduce, n.Value = "reduce", "latest", v
	case r < 7 && v != SerdeString:
		n.Op, n.Reduce, n.Value = "reduce", "sum", v
		if IsRec(v) {
			n.Field = pick(b.rng, []string{"amount", "n"})
		}
	case r < 8 && v != SerdeString:
		n.Op, n.Reduce, n.Value = "reduce", "max", v
		if IsRec(v) {
			n.Field = pick(b.rng, []string{"amount", "n"})
		}
	default:
		n.Op, n.Value = "aggregate", SerdeLong
		switch {
		case IsRec(v):
			n.Fn = &Fn{Kind: "sumfield", Field: pick(b.rng, []string{"amount", "n"})}
		case v == SerdeString:
			n.Fn = &Fn{Kind: "len"}
		default:
			n.Fn = &Fn{Kind: "sum"}
		}
	}
	return b.add(n)
}

// output adds toStream, 0..2 output steps and to() after table t (w: its window, if any).
func (b *builder) output(t *Node, w *Window, steps int) *Node {
	s := b.add(&Node{Op: "toStream", In: []string{t.ID}, Key: t.Key, Value: t.Value})
	for range b.rng.IntN(steps + 1) {
		n := &Node{In: []string{s.ID}, Key: s.Key, Value: s.Value}
		switch r := b.rng.IntN(10); {
		case r < 5:
			n.Op, n.Fn = "filter", ptr(b.outPred(t, s.Value))
		case r < 6:
			n.Op, n.Fn = "filterNot", ptr(b.outPred(t, s.Value))
		case r < 8 && w == nil:
			n.Op, n.Fn = "mapValues", ptr(b.mapper(s.Value))
		default:
			n.Op = "peek"
		}
		s = b.add(n)
	}
	return b.add(&Node{Op: "to", In: []string{s.ID}, Topic: b.topic("out"), Key: s.Key, Value: s.Value, Window: w})
}

// ---- modelled families ----

// aggUnit: stream [merge] → steps → [selectKey|map] → group → [windowedBy] → fold →
// [suppress] → [toStream → steps → to].
func (b *builder) aggUnit(windowed bool) {
	key, value := b.anySerdes()
	s := b.source("stream", key, value)
	if b.rng.IntN(5) == 0 {
		s2 := b.source("stream", key, value)
		s = b.add(&Node{Op: "merge", In: []string{s.ID, s2.ID}, Key: key, Value: value})
	}
	c := b.chain(s, 3)
	c, fn := b.rekey(c)
	g := b.group(c, fn)
	var w *Window
	if windowed {
		size := pick(b.rng, []int64{5000, 10000, 20000, 30000})
		w = &Window{SizeMs: size, GraceMs: pick(b.rng, []int64{0, 2000, 5000})}
		if b.rng.IntN(5) < 2 {
			w.AdvanceMs = size / 2
		}
		g = b.add(&Node{Op: "windowedBy", In: []string{g.ID}, Key: g.Key, Value: g.Value, Window: w})
	}
	t := b.fold(g)
	if windowed {
		if b.rng.IntN(4) == 0 {
			t = b.add(&Node{Op: "suppress", In: []string{t.ID}, Key: t.Key, Value: t.Value, Window: w})
		}
		b.output(t, w, 1)
		return
	}
	if b.rng.IntN(4) != 0 {
		b.output(t, nil, 2)
	}
}

// copyUnit: stream → 1..3 steps (a key change among them, sometimes) → to.
func (b *builder) copyUnit() {
	key, value := b.anySerdes()
	s := b.source("stream", key, value)
	c := b.chain(s, 3)
	if c == s || b.rng.IntN(4) == 0 {
		if IsRec(c.Value) && c.Key == SerdeString && b.rng.IntN(2) == 0 {
			m := Fn{Kind: "field", Field: "cat"}
			c = b.add(&Node{Op: "map", In: []string{c.ID}, Fn: &m, Key: SerdeString, Value: c.Value})
		} else {
			fn, k := b.keyFn(c.Key, c.Value)
			c = b.add(&Node{Op: "selectKey", In: []string{c.ID}, Fn: &fn, Key: k, Value: c.Value})
		}
	}
	b.add(&Node{Op: "to", In: []string{c.ID}, Topic: b.topic("out"), Key: c.Key, Value: c.Value})
}

// splitUnit: stream [merge] → 0..1 step → split(p1, p2 [, default]) → each branch folded or
// written.
func (b *builder) splitUnit() {
	key, value := b.anySerdes()
	s := b.source("stream", key, value)
	merged := b.rng.IntN(3) == 0
	if merged {
		s2 := b.source("stream", key, value)
		s = b.add(&Node{Op: "merge", In: []string{s.ID, s2.ID}, Key: key, Value: value})
	}
	c := b.chain(s, 1)
	sp := &Node{Op: "split", In: []string{c.ID}, Key: c.Key, Value: c.Value, Default: b.rng.IntN(2) == 0}
	for range 1 + b.rng.IntN(2) {
		sp.Preds = append(sp.Preds, b.pred(c.Value))
	}
	b.add(sp)
	n := len(sp.Preds)
	if sp.Default {
		n++
	}
	for i := range n {
		br := b.add(&Node{Op: "branch", In: []string{sp.ID}, Index: i, Key: c.Key, Value: c.Value})
		if !merged && b.rng.IntN(3) == 0 { // a copy reads one topic: no copy of merged streams
			b.add(&Node{Op: "to", In: []string{br.ID}, Topic: b.topic("out"), Key: br.Key, Value: br.Value})
			continue
		}
		var fn *Fn
		if b.rng.IntN(2) == 0 {
			f, _ := b.keyFn(br.Key, br.Value)
			fn = &f
		}
		t := b.fold(b.group(br, fn))
		if b.rng.IntN(2) == 0 {
			b.output(t, nil, 0)
		}
	}
}

// recTable adds a table of records keyed from the key pool: builder.table, stream.toTable(),
// or a stream grouped by value.k and folded (count or latest).
func (b *builder) recTable(allowFold bool) *Node {
	switch r := b.rng.IntN(10); {
	case r < 6 || !allowFold && r < 8:
		return b.source("table", SerdeString, b.recSerde())
	case r < 8:
		s := b.source("stream", SerdeString, b.recSerde())
		s.Reset, s.NullKeys = "", false
		return b.add(&Node{Op: "toTable", In: []string{s.ID}, Key: SerdeString, Value: s.Value})
	default:
		s := b.source("stream", SerdeString, b.recSerde())
		s.Reset = ""
		g := b.add(&Node{Op: "groupBy", In: []string{s.ID}, Fn: &Fn{Kind: "field", Field: "k"}, Key: SerdeString, Value: s.Value})
		if b.rng.IntN(2) == 0 {
			return b.add(&Node{Op: "count", In: []string{g.ID}, Key: SerdeString, Value: SerdeLong})
		}
		return b.add(&Node{Op: "reduce", In: []string{g.ID}, Reduce: "latest", Key: SerdeString, Value: s.Value})
	}
}

func proj(t *Node, rng *rand.Rand) string {
	if IsRec(t.Value) {
		return pick(rng, []string{"id", "amount"})
	}
	return ""
}

// tableJoinUnit: 2..3 tables joined in a chain of one type → toStream → to.
func (b *builder) tableJoinUnit() {
	typ := pick(b.rng, []string{"inner", "left", "left", "outer"})
	l := b.recTable(true)
	ps := []string{proj(l, b.rng)}
	for range 1 + b.rng.IntN(2) {
		r := b.recTable(true)
		ps = append(ps, proj(r, b.rng))
		l = b.add(&Node{Op: "tableJoin", In: []string{l.ID, r.ID}, Join: typ, Proj: append([]string(nil), ps...), Key: SerdeString, Value: SerdeJSON})
	}
	b.output(l, nil, 0)
}

// streamJoinUnit: a stream of records (re-keyed by value.k, or keyed from the pool) joined
// with a table (inner or left) → to.
func (b *builder) streamJoinUnit() {
	t := b.recTable(true)
	s := b.source("stream", SerdeString, b.recSerde())
	c := b.chain(s, 2)
	if b.rng.IntN(3) != 0 {
		c = b.add(&Node{Op: "selectKey", In: []string{c.ID}, Fn: &Fn{Kind: "field", Field: "k"}, Key: SerdeString, Value: c.Value})
	}
	j := b.add(&Node{Op: "streamTableJoin", In: []string{c.ID, t.ID}, Join: pick(b.rng, []string{"inner", "left"}),
		Proj: []string{"id", proj(t, b.rng)}, Key: SerdeString, Value: SerdeJSON})
	b.add(&Node{Op: "to", In: []string{j.ID}, Topic: b.topic("out"), Key: SerdeString, Value: SerdeJSON})
}

// regroupUnit: builder.table → groupBy(value.cat[, value.amount]) → count, aggregate or
// reduce with a subtractor → toStream → to.
func (b *builder) regroupUnit() {
	t := b.source("table", SerdeString, b.recSerde())
	g := &Node{Op: "tableGroupBy", In: []string{t.ID}, Fn: &Fn{Kind: "field", Field: "cat"}, Key: SerdeString, Value: t.Value}
	var op string
	switch b.rng.IntN(3) {
	case 0:
		op = "tableCount"
	case 1:
		op = "tableAggregate"
	default:
		op = "tableReduce"
		g.Fn2, g.Value = &Fn{Kind: "field", Field: "amount"}, SerdeLong
	}
	b.add(g)
	a := b.add(&Node{Op: op, In: []string{g.ID}, Key: SerdeString, Value: SerdeLong})
	if op == "tableAggregate" {
		a.Fn = &Fn{Kind: "sumfield", Field: pick(b.rng, []string{"amount", "n"})}
	}
	b.output(a, nil, 0)
}

// cogroupUnit: a stream keyed from the pool (groupByKey, +1) and a stream re-keyed by value.k
// (groupBy, + value.amount), cogrouped → toStream → to.
func (b *builder) cogroupUnit() {
	v := b.recSerde()
	a := b.source("stream", SerdeString, v)
	a.Reset = ""
	ga := b.add(&Node{Op: "groupByKey", In: []string{a.ID}, Key: SerdeString, Value: v})
	s := b.source("stream", SerdeString, v)
	c := s
	if b.rng.IntN(2) == 0 {
		c = b.add(&Node{Op: "filter", In: []string{s.ID}, Fn: ptr(b.pred(v)), Key: SerdeString, Value: v})
	}
	gb := b.add(&Node{Op: "groupBy", In: []string{c.ID}, Fn: &Fn{Kind: "field", Field: "k"}, Key: SerdeString, Value: v})
	cg := b.add(&Node{Op: "cogroup", In: []string{ga.ID, gb.ID}, Key: SerdeString, Value: SerdeJSON})
	b.output(cg, nil, 0)
}

// ---- recognised, not modelled ----

// ktableFilterUnit: builder.table → KTable filter or mapValues → toStream → to.
func (b *builder) ktableFilterUnit() {
	t := b.source("table", SerdeString, b.recSerde())
	n := &Node{In: []string{t.ID}, Key: SerdeString, Value: t.Value}
	if b.rng.IntN(2) == 0 {
		n.Op, n.Fn = "tableFilter", ptr(b.pred(t.Value))
	} else {
		n.Op, n.Fn = "tableMapValues", ptr(b.mapper(t.Value))
	}
	b.output(b.add(n), nil, 0)
}

// fkJoinUnit: a table of records whose value.k names a row of another table → join on it.
func (b *builder) fkJoinUnit() {
	l := b.source("table", SerdeString, b.recSerde())
	r := b.source("table", SerdeString, b.recSerde())
	j := b.add(&Node{Op: "fkJoin", In: []string{l.ID, r.ID}, Fn: &Fn{Kind: "field", Field: "k"}, Join: pick(b.rng, []string{"inner", "left"}),
		Proj: []string{"id", "amount"}, Key: SerdeString, Value: SerdeJSON})
	b.output(j, nil, 0)
}

// streamStreamUnit: two streams keyed from the pool joined in a 10 s window → to.
func (b *builder) streamStreamUnit() {
	l := b.source("stream", SerdeString, b.recSerde())
	r := b.source("stream", SerdeString, b.recSerde())
	l.Reset, r.Reset, l.NullKeys, r.NullKeys = "", "", false, false
	j := b.add(&Node{Op: "streamJoin", In: []string{l.ID, r.ID}, Join: pick(b.rng, []string{"inner", "left"}),
		Window: &Window{SizeMs: 10000}, Proj: []string{"id", "id"}, Key: SerdeString, Value: SerdeJSON})
	b.add(&Node{Op: "to", In: []string{j.ID}, Topic: b.topic("out"), Key: SerdeString, Value: SerdeJSON})
}

// globalUnit: a stream joined with a GlobalKTable on value.k → to.
func (b *builder) globalUnit() {
	g := b.source("globalTable", SerdeString, b.recSerde())
	s := b.source("stream", SerdeString, b.recSerde())
	j := b.add(&Node{Op: "globalJoin", In: []string{s.ID, g.ID}, Fn: &Fn{Kind: "field", Field: "k"}, Join: pick(b.rng, []string{"inner", "left"}),
		Proj: []string{"id", "amount"}, Key: SerdeString, Value: SerdeJSON})
	b.add(&Node{Op: "to", In: []string{j.ID}, Topic: b.topic("out"), Key: SerdeString, Value: SerdeJSON})
}

// sessionUnit: stream → groupByKey → session windows → count → toStream → to.
func (b *builder) sessionUnit() {
	s := b.source("stream", SerdeString, b.recSerde())
	s.NullKeys = false
	g := b.add(&Node{Op: "groupByKey", In: []string{s.ID}, Key: SerdeString, Value: s.Value})
	w := &Window{SizeMs: 3000, Session: true}
	wg := b.add(&Node{Op: "windowedBy", In: []string{g.ID}, Key: SerdeString, Value: s.Value, Window: w})
	c := b.add(&Node{Op: "count", In: []string{wg.ID}, Key: SerdeString, Value: SerdeLong})
	b.output(c, w, 0)
}

// suppressTimeUnit: stream → groupByKey → count → suppress(untilTimeLimit) → toStream → to.
func (b *builder) suppressTimeUnit() {
	s := b.source("stream", SerdeString, b.recSerde())
	s.NullKeys = false
	g := b.add(&Node{Op: "groupByKey", In: []string{s.ID}, Key: SerdeString, Value: s.Value})
	c := b.add(&Node{Op: "count", In: []string{g.ID}, Key: SerdeString, Value: SerdeLong})
	sp := b.add(&Node{Op: "suppress", In: []string{c.ID}, Key: SerdeString, Value: SerdeLong})
	b.output(sp, nil, 0)
}

// ---- faults ----

// chooseFault picks the app's fault among those its shape allows.
func (b *builder) chooseFault() {
	d := b.d
	options := []string{FaultNone, FaultNone, FaultNone, FaultKill9, FaultKill9, FaultRestart, FaultBrokerRestart, FaultSourceGap, FaultSourceGap}
	if HasHop(d) {
		options = append(options, FaultRepartitionGap, FaultRepartitionGap)
	}
	if SwallowPoint(d) != nil {
		options = append(options, FaultDropped, FaultDropped)
	}
	d.Fault = pick(b.rng, options)
	SetFault(d, d.Fault)
}

// SetFault sets d's fault and what it needs: a swallowing node for dropped, no purge for the
// faults that need the repartition topics whole.
func SetFault(d *Desc, f string) {
	d.Fault = f
	if f != FaultDropped {
		d.DropIDs = nil
	}
	for _, n := range d.Nodes {
		n.Swallow = false
	}
	switch f {
	case FaultDropped:
		d.DropIDs = nil
		if sp := SwallowPoint(d); sp != nil {
			sp.Swallow = true
			d.PurgeMs = 3_600_000
			d.DropIDs = ChooseDrops(d, Records(d))
		}
		if len(d.DropIDs) == 0 {
			SetFault(d, FaultNone)
		}
	case FaultRepartitionGap:
		d.PurgeMs = 3_600_000
	}
}

// HasHop reports whether the app has a repartition topic (a key change before a grouping or
// a stream-table join, a KTable groupBy, a re-keyed cogroup member).
func HasHop(d *Desc) bool {
	for _, n := range d.Nodes {
		switch n.Op {
		case "groupBy", "tableGroupBy":
			return true
		case "groupByKey", "streamTableJoin":
			if rekeyed(d, n.In[0]) {
				return true
			}
		}
	}
	return false
}

// rekeyed reports whether the stream node id reaches its grouping with a changed key.
func rekeyed(d *Desc, id string) bool {
	for n := d.Node(id); n != nil; {
		switch n.Op {
		case "selectKey", "map", "groupBy":
			return true
		case "stream", "table", "toStream":
			return false
		}
		if len(n.In) == 0 {
			return false
		}
		if n.Op == "merge" {
			return rekeyed(d, n.In[0]) || rekeyed(d, n.In[1])
		}
		n = d.Node(n.In[0])
	}
	return false
}

// SwallowPoint is the node that can swallow records for the dropped fault: the first filter
// or flatMapValues after a stream source of records, in a modelled unit whose records then
// reach a repartition topic (so a swallowed record's missing copy shows), or nil.
func SwallowPoint(d *Desc) *Node {
	for _, n := range d.Nodes {
		if n.Op != "filter" && n.Op != "flatMapValues" || !IsRec(n.Value) {
			continue
		}
		src := d.Node(n.In[0])
		if src == nil || src.Op != "stream" || unitUnmodelled(d, n.Unit) {
			continue
		}
		if reachesHop(d, n) {
			return n
		}
	}
	return nil
}

// reachesHop reports whether every record node n emits goes on through a key change to a
// grouping or stream-table join (one path: no split).
func reachesHop(d *Desc, n *Node) bool {
	changed := false
	for {
		users := d.Users(n.ID)
		if len(users) != 1 {
			return false
		}
		n = users[0]
		switch n.Op {
		case "selectKey", "map":
			changed = true
		case "groupBy":
			return true
		case "groupByKey", "streamTableJoin":
			return changed
		case "filter", "filterNot", "mapValues", "flatMapValues", "peek":
		default:
			return false
		}
	}
}

func unitUnmodelled(d *Desc, unit int) bool {
	for _, n := range d.Nodes {
		if n.Unit == unit && (UnmodelledOps[n.Op] || n.Op == "globalTable" || n.Window != nil && n.Window.Session ||
			n.Op == "suppress" && n.Window == nil) {
			return true
		}
	}
	return false
}
