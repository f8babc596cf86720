package fuzzapps

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Record is one input record of a generated app, before it is produced.
type Record struct {
	Topic string `json:"topic"`
	Key   any    `json:"key"`   // string, int64 or nil
	Value any    `json:"value"` // map[string]any (a record), string, int64 or nil (a tombstone)
	ID    string `json:"id"`    // the record's id field, or topic/wave/index for other values
	Wave  int    `json:"wave"`
	Late  bool   `json:"late,omitempty"`
	// Seq is the record's place in production order (over the app's topics); its timestamp is
	// the run's base time + Seq*StepMs, or LateMs before that for a late record.
	Seq    int64 `json:"seq"`
	LateMs int64 `json:"late_ms,omitempty"`
}

// Timestamp is the record's event time for a run whose base time is base (ms).
func (r *Record) Timestamp(base, stepMs int64) int64 { return base + r.Seq*stepMs - r.LateMs }

// Records makes the app's input, wave by wave: every source topic's records of a wave
// interleaved, then (waves after the first) the late records of the windowed units. The same
// description gives the same records.
func Records(d *Desc) [][]*Record {
	var out [][]*Record
	seq := int64(0)
	windowed := windowedSources(d)
	for w := 1; w <= d.Input.Waves; w++ {
		rng := rand.New(rand.NewPCG(d.Seed, uint64(w)))
		var lists [][]*Record
		for _, src := range d.Sources() {
			n := d.Input.PerWave
			if src.Op != "stream" {
				n = max(n/2, 4)
			}
			var l []*Record
			for i := range n {
				l = append(l, genRecord(rng, d, src, w, i))
			}
			lists = append(lists, l)
		}
		var wave []*Record
		for i := 0; ; i++ {
			more := false
			for _, l := range lists {
				if i < len(l) {
					l[i].Seq = seq
					seq++
					wave = append(wave, l[i])
					more = true
				}
			}
			if !more {
				break
			}
		}
		if w > 1 {
			for _, src := range d.Sources() {
				win := windowed[src.ID]
				if win == nil {
					continue
				}
				for i := range d.Input.Late {
					r := genRecord(rng, d, src, w, 1000+i)
					if r.Value == nil {
						r.Value = genValue(rng, d, src, w, 1000+i)
					}
					r.Late, r.Seq = true, seq
					r.LateMs = win.SizeMs + win.GraceMs + 5000 + int64(i)*1000
					seq++
					wave = append(wave, r)
				}
			}
		}
		out = append(out, wave)
	}
	return out
}

// windowedSources maps each source feeding a time-windowed aggregation to its window.
func windowedSources(d *Desc) map[string]*Window {
	out := map[string]*Window{}
	for _, n := range d.Nodes {
		if n.Op != "windowedBy" || n.Window.Session {
			continue
		}
		for _, s := range upstreamSources(d, n) {
			out[s.ID] = n.Window
		}
	}
	return out
}

func upstreamSources(d *Desc, n *Node) []*Node {
	if n.Op == "stream" || n.Op == "table" || n.Op == "globalTable" {
		return []*Node{n}
	}
	var out []*Node
	for _, in := range n.In {
		if m := d.Node(in); m != nil {
			out = append(out, upstreamSources(d, m)...)
		}
	}
	return out
}

func genKey(rng *rand.Rand, d *Desc, src *Node) any {
	i := rng.IntN(max(d.Input.Keys, 1))
	switch src.Key {
	case SerdeInt, SerdeLong:
		return int64(i)
	}
	if src.NullKeys && rng.IntN(20) == 0 {
		return nil
	}
	return fmt.Sprintf("k-%02d", i)
}

func words(rng *rand.Rand) string {
	w := make([]string, 2+rng.IntN(4))
	for i := range w {
		w[i] = vocabulary[rng.IntN(len(vocabulary))]
	}
	return strings.Join(w, " ")
}

func genValue(rng *rand.Rand, d *Desc, src *Node, wave, i int) any {
	switch {
	case IsRec(src.Value):
		var k any = fmt.Sprintf("k-%02d", rng.IntN(max(d.Input.Keys, 1)))
		if src.NullKeys && rng.IntN(20) == 0 {
			k = nil
		}
		return map[string]any{
			"id":     recID(src, wave, i),
			"k":      k,
			"cat":    fmt.Sprintf("c%d", rng.IntN(5)),
			"n":      int64(1 + rng.IntN(20)),
			"amount": int64(1 + rng.IntN(500)),
			"text":   words(rng),
		}
	case src.Value == SerdeString:
		return words(rng)
	default:
		return int64(1 + rng.IntN(100))
	}
}

func recID(src *Node, wave, i int) string {
	return fmt.Sprintf("%s-w%d-%04d", src.ID, wave, i)
}

func genRecord(rng *rand.Rand, d *Desc, src *Node, wave, i int) *Record {
	r := &Record{Topic: src.Topic, Key: genKey(rng, d, src), Wave: wave, ID: recID(src, wave, i)}
	tomb := src.Tombstones && (src.Op != "stream" && rng.IntN(10) == 0 || src.Op == "stream" && rng.IntN(25) == 0)
	v := genValue(rng, d, src, wave, i)
	if !tomb {
		r.Value = v
	}
	if r.Key == nil && src.Op != "stream" {
		r.Key = "k-00"
	}
	return r
}

// ---- what the app does with a record, in Go ----

// Element is a record on its way through a chain.
type Element struct {
	Key, Value any
}

// Reaches says whether the record (key, value) entering node n (a filter or flatMapValues,
// the swallowing node) goes on, every element of it, to a repartition topic: the records the
// dropped fault can take away so that kaudit must see it (their copy is missing).
func Reaches(d *Desc, n *Node, key, value any) bool {
	ok, _ := HopKeys(d, n, key, value)
	return ok
}

// HopKeys is Reaches with the keys the record's elements carry at the grouping (or the join):
// the table keys kaudit may name the record by.
func HopKeys(d *Desc, n *Node, key, value any) (bool, []any) {
	els := []Element{{key, value}}
	var keys []any
	for {
		var next []Element
		for _, e := range els {
			switch n.Op {
			case "filter":
				if n.Fn.Pred(e.Key, e.Value) {
					next = append(next, e)
				} else {
					return false, nil
				}
			case "filterNot":
				if !n.Fn.Pred(e.Key, e.Value) {
					next = append(next, e)
				} else {
					return false, nil
				}
			case "mapValues":
				next = append(next, Element{e.Key, n.Fn.MapValue(e.Value)})
			case "flatMapValues":
				for _, v := range n.Fn.FlatMap(e.Value) {
					next = append(next, Element{e.Key, v})
				}
			case "peek":
				next = append(next, e)
			case "selectKey", "map":
				next = append(next, Element{n.Fn.SelectKey(e.Key, e.Value), e.Value})
			case "groupBy":
				k := n.Fn.SelectKey(e.Key, e.Value)
				if k == nil || e.Value == nil {
					return false, nil
				}
				keys = append(keys, k)
			case "groupByKey", "streamTableJoin":
				if e.Key == nil || e.Value == nil {
					return false, nil
				}
				keys = append(keys, e.Key)
			default:
				return false, nil
			}
		}
		if slices.Contains([]string{"groupBy", "groupByKey", "streamTableJoin"}, n.Op) {
			return len(keys) > 0, keys
		}
		if len(next) == 0 {
			return false, nil
		}
		els = next
		users := d.Users(n.ID)
		if len(users) != 1 {
			return false, nil
		}
		n = users[0]
	}
}

// ChooseDrops picks the records the dropped fault swallows: up to five records of the
// swallowing node's source, spread over the waves, each of which reaches the repartition topic.
func ChooseDrops(d *Desc, waves [][]*Record) []string {
	sp := SwallowPoint(d)
	if sp == nil {
		return nil
	}
	src := d.Node(sp.In[0])
	var cands []*Record
	for _, w := range waves {
		for _, r := range w {
			if r.Topic == src.Topic && r.Value != nil && !r.Late && Reaches(d, sp, r.Key, r.Value) {
				cands = append(cands, r)
			}
		}
	}
	var out []string
	for i := 0; i < 5 && len(cands) > 0; i++ {
		r := cands[(i*len(cands))/5]
		if !slices.Contains(out, r.ID) {
			out = append(out, r.ID)
		}
	}
	return out
}

// Path is the chain of nodes from source node from to node to (both included), or nil.
func Path(d *Desc, from, to *Node) []*Node {
	if from.ID == to.ID {
		return []*Node{to}
	}
	for _, in := range to.In {
		if p := Path(d, from, d.Node(in)); p != nil {
			return append(p, to)
		}
	}
	return nil
}

// Apply runs the stateless nodes of path (after its first, the source) on one record, as the
// Java interpreter does: what reaches the path's last node, with the key a groupBy gives.
func Apply(d *Desc, path []*Node, key, value any) []Element {
	els := []Element{{key, value}}
	for i, n := range path {
		if i == 0 {
			continue
		}
		var next []Element
		for _, e := range els {
			switch n.Op {
			case "filter":
				if n.Fn.Pred(e.Key, e.Value) {
					next = append(next, e)
				}
			case "filterNot":
				if !n.Fn.Pred(e.Key, e.Value) {
					next = append(next, e)
				}
			case "mapValues":
				next = append(next, Element{e.Key, n.Fn.MapValue(e.Value)})
			case "flatMapValues":
				for _, v := range n.Fn.FlatMap(e.Value) {
					next = append(next, Element{e.Key, v})
				}
			case "selectKey", "map", "groupBy":
				next = append(next, Element{n.Fn.SelectKey(e.Key, e.Value), e.Value})
			case "branch":
				sp := path[i-1]
				taken := len(sp.Preds)
				for j, p := range sp.Preds {
					if p.Pred(e.Key, e.Value) {
						taken = j
						break
					}
				}
				if taken == n.Index && (taken < len(sp.Preds) || sp.Default) {
					next = append(next, e)
				}
			default: // peek, merge, split, groupByKey
				next = append(next, e)
			}
		}
		els = next
	}
	return els
}

// Fold applies aggregation node n (count, reduce, aggregate) to one input as the Java
// interpreter does: first says there is no aggregate yet; a null value is skipped (Kafka Streams
// skips it before a plain reduce or aggregate, the interpreter's windowed reducers and adders
// skip it themselves; a windowed count() counts it: KStreamWindowAggregate passes null values
// to its aggregator, which kaudit does not model, violation V17).
func Fold(n *Node, agg, v any, first bool) any {
	if v == nil {
		return agg
	}
	switch n.Op {
	case "count":
		if first {
			return int64(1)
		}
		a, _ := num(agg)
		return a + 1
	case "aggregate":
		var a int64
		if !first {
			a, _ = num(agg)
		}
		switch n.Fn.Kind {
		case "sumfield":
			x, _ := num(field(v, n.Fn.Field))
			return a + x
		case "len":
			s, _ := str(v)
			return a + int64(len(s))
		default:
			x, _ := num(v)
			return a + x
		}
	}
	if first || n.Reduce == "latest" {
		return v
	}
	get := func(x any) int64 {
		if n.Field != "" {
			x = field(x, n.Field)
		}
		y, _ := num(x)
		return y
	}
	var out int64
	switch n.Reduce {
	case "sum":
		out = get(agg) + get(v)
	case "max":
		if get(v) <= get(agg) {
			return agg
		}
		out = get(v)
		if n.Field == "" {
			return v
		}
	}
	if n.Field == "" {
		return out
	}
	return withField(agg, n.Field, out)
}
