package fuzzapps

import (
	"fmt"
	"slices"
	"strings"
)

// Spec is the kaudit spec of a generated app as its team would write it from the code
// (docs/spec.md), with what kaudit must make of a clean run: Unmodelled names each part the spec
// cannot express (left out of the spec, or a TODO: the verdict is then incomplete, never a
// loss), each with the words kaudit's missing evidence may name it by.
type Spec struct {
	YAML       string
	Unmodelled []Unmodelled
}

// Unmodelled is one part of the app the spec leaves out.
type Unmodelled struct {
	What  string   // e.g. "fkJoin n7"
	Names []string // node names, name prefixes or topics kaudit may name it by
}

// Expect is what kaudit must say of a clean run with the spec: clean, or incomplete when the
// spec leaves parts out.
func (s Spec) Expect() string {
	if len(s.Unmodelled) > 0 {
		return "incomplete"
	}
	return "clean"
}

type serdes struct{ key, value string }

// kauditSerde is the spec's name of a serde.
func kauditSerde(s string) string {
	switch s {
	case SerdeInt:
		return "int"
	case SerdeLong:
		return "long"
	}
	return s
}

func (s serdes) flow() string {
	var parts []string
	if s.key != "" {
		parts = append(parts, "key: "+kauditSerde(s.key))
	}
	if s.value != "" {
		parts = append(parts, "value: "+kauditSerde(s.value))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// differ is s where it differs from def ("" fields where equal).
func (s serdes) differ(def serdes) serdes {
	out := s
	if out.key == def.key {
		out.key = ""
	}
	if out.value == def.value {
		out.value = ""
	}
	return out
}

func (s serdes) empty() bool { return s.key == "" && s.value == "" }

// sTable is one entry of tables:.
type sTable struct {
	name        string
	node        *Node
	source      []string
	steps       []string
	selectKey   string
	reduce      string
	aggregate   string
	window      *Window
	suppress    bool
	serdes      serdes // the table's topics (source, repartition, changelog)
	storeSerdes string
	output      string
	outSteps    []string
	outSerdes   serdes
	regroup     string
	groupValue  string
	members     []sMember
	init        string
	comments    []string
}

type sMember struct {
	source, selectKey, aggregate string
	steps                        []string
}

type sJoin struct {
	output, left string
	right        []string
	typ, value   string
	serdes       serdes
}

type sStreamJoin struct {
	output, stream, table, typ, value string
	steps, outSteps                   []string
	serdes                            serdes
}

type sCopy struct {
	source, output string
	steps          []string
	serdes         serdes
}

// sctx is what the spec knows of a node's output.
type sctx struct {
	kind     string
	sources  []string
	srcSerde serdes
	steps    []string
	nullable bool // values may be null
	nullKeys bool // keys may be null
	bad      string
	table    *sTable
	join     *sJoin // a KTable-KTable join chain (kind table), or after its toStream
	joinProj []string
	joinTyp  string
	sjoin    *sStreamJoin
	fromTab  *sTable // after toStream of a table
	out      bool    // after toStream or a stream-table join: steps go to output_steps
	outSteps []string
	window   *Window
	split    *Node
	groupKey string // groupBy's key expression (a cogroup member's select_key)
}

func (c *sctx) clone() *sctx {
	x := *c
	x.sources = slices.Clone(c.sources)
	x.steps = slices.Clone(c.steps)
	x.outSteps = slices.Clone(c.outSteps)
	return &x
}

func yq(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func step(kind, expr string) string {
	if expr == "" {
		return kind
	}
	return "{" + kind + ": " + yq(expr) + "}"
}

// Materialized reports whether builder.table or toTable node n has a store: when the app
// names it (Materialized.as), or when what reads it needs its values (a join, a KTable groupBy);
// a KTable filter or mapValues alone does not (Kafka Streams 3.6 materializes a source KTable
// only on demand).
func Materialized(d *Desc, n *Node) bool {
	if n.Name != "" {
		return true
	}
	for _, u := range d.Users(n.ID) {
		switch u.Op {
		case "tableJoin", "streamTableJoin", "tableGroupBy", "fkJoin":
			return true
		}
	}
	return false
}

// GenerateSpec writes d's spec.
func GenerateSpec(d *Desc) Spec {
	w := &specWriter{d: d, ctx: map[string]*sctx{}}
	w.defaults()
	for _, n := range d.Nodes {
		w.node(n)
	}
	return Spec{YAML: w.yaml(), Unmodelled: w.unmodelled}
}

type specWriter struct {
	d          *Desc
	def        serdes
	ctx        map[string]*sctx
	tables     []*sTable
	joins      []*sJoin
	sjoins     []*sStreamJoin
	copies     []*sCopy
	todo       []string
	unmodelled []Unmodelled
}

// defaults picks the spec's default serdes: those of the first stream a copy or a stream-table
// join reads (the spec has no serdes for their sources), else of the first source.
func (w *specWriter) defaults() {
	for _, n := range w.d.Nodes {
		if n.Op == "to" || n.Op == "streamTableJoin" {
			if src := w.streamSource(n.In[0]); src != nil {
				w.def = serdes{src.Key, src.Value}
				return
			}
		}
	}
	if s := w.d.Sources(); len(s) > 0 {
		w.def = serdes{s[0].Key, s[0].Value}
	}
}

// streamSource is the stream source a plain stream node comes from (nil: none, or a table's).
func (w *specWriter) streamSource(id string) *Node {
	for n := w.d.Node(id); n != nil; n = w.d.Node(n.In[0]) {
		switch {
		case n.Op == "stream":
			return n
		case n.Op == "toStream" || n.Op == "streamTableJoin" || n.Op == "streamJoin" || n.Op == "globalJoin" || len(n.In) == 0:
			return nil
		}
	}
	return nil
}

func (w *specWriter) miss(n *Node, what string, names ...string) {
	if n.Name != "" {
		names = append(names, n.Name)
	}
	w.unmodelled = append(w.unmodelled, Unmodelled{What: what + " " + n.ID, Names: names})
}

func (w *specWriter) node(n *Node) {
	in := func(i int) *sctx { return w.ctx[n.In[i]] }
	var c *sctx
	switch n.Op {
	case "stream":
		c = &sctx{kind: "stream", sources: []string{n.Topic}, srcSerde: serdes{n.Key, n.Value}, nullable: n.Tombstones, nullKeys: n.NullKeys}
	case "table":
		c = &sctx{kind: "table"}
		if !Materialized(w.d, n) {
			c.bad = "a table with no store " + n.ID
			break
		}
		t := w.newTable(n, []string{n.Topic}, serdes{n.Key, n.Value})
		t.reduce = "table"
		c.table = t
	case "globalTable":
		c = &sctx{kind: "global", bad: "GlobalKTable " + n.ID}
	case "filter", "filterNot", "mapValues", "flatMapValues", "peek", "selectKey", "map":
		c = in(0).clone()
		var s string
		switch n.Op {
		case "filter", "filterNot":
			s = step(n.Op, n.Fn.PredExpr(c.nullable))
		case "mapValues":
			s = step(n.Op, n.Fn.MapExpr(c.nullable))
		case "flatMapValues":
			s = step(n.Op, n.Fn.FlatExpr(c.nullable))
			c.nullable = false
		case "peek":
			s = step("peek", "")
		case "selectKey":
			s = step(n.Op, n.Fn.KeyExpr(c.nullable, c.nullKeys))
			c.nullKeys = true
		case "map":
			s = step(n.Op, "["+n.Fn.KeyExpr(c.nullable, c.nullKeys)+", value]")
			c.nullKeys = true
		}
		if c.out {
			if n.Op == "selectKey" || n.Op == "map" || n.Op == "flatMapValues" {
				c.bad = "a key-changing step after toStream " + n.ID
			}
			c.outSteps = append(c.outSteps, s)
		} else {
			c.steps = append(c.steps, s)
		}
	case "merge":
		a, b := in(0), in(1)
		c = a.clone()
		c.sources = append(c.sources, b.sources...)
		c.nullable, c.nullKeys = a.nullable || b.nullable, a.nullKeys || b.nullKeys
		if len(a.steps) > 0 || len(b.steps) > 0 || a.kind != "stream" || b.kind != "stream" {
			c.bad = "a merge after other steps " + n.ID
		}
	case "split":
		c = in(0).clone()
		c.kind, c.split = "split", n
	case "branch":
		base := in(0)
		c = base.clone()
		c.kind, c.split = "stream", nil
		sp := base.split
		var conj []string
		for i, p := range sp.Preds {
			if i == n.Index {
				conj = append(conj, p.PredExpr(base.nullable))
				break
			}
			conj = append(conj, "!("+p.PredExpr(base.nullable)+")")
		}
		c.steps = append(c.steps, step("branch", strings.Join(conj, " && ")))
	case "groupByKey":
		c = in(0).clone()
		c.kind = "grouped"
	case "groupBy":
		c = in(0).clone()
		c.kind = "grouped"
		c.groupKey = n.Fn.KeyExpr(c.nullable, c.nullKeys)
		c.steps = append(c.steps, step("groupBy", c.groupKey))
	case "windowedBy":
		c = in(0).clone()
		c.kind, c.window = "wgrouped", n.Window
		if n.Window.Session {
			c.bad = "session windows " + n.ID
		}
	case "count", "reduce", "aggregate":
		g := in(0)
		c = &sctx{kind: "table", window: g.window, bad: g.bad}
		if g.bad != "" {
			w.miss(n, "a store after "+g.bad, "KSTREAM-AGGREGATE-STATE-STORE", "KSTREAM-REDUCE-STATE-STORE")
			break
		}
		t := w.newTable(n, g.sources, g.srcSerde)
		t.steps, t.window = g.steps, g.window
		switch n.Op {
		case "count":
			t.reduce, t.storeSerdes = "count", "Long"
		case "reduce":
			t.reduce = n.Reduce
			if n.Reduce != "latest" && n.Field != "" {
				t.reduce += "(" + n.Field + ")"
			}
		case "aggregate":
			t.aggregate = fmt.Sprintf("{init: 0, expr: %s}", yq(aggExpr(*n.Fn)))
			t.storeSerdes = "Long"
		}
		c.table = t
	case "suppress":
		c = in(0).clone()
		if n.Window != nil && c.table != nil {
			c.table.suppress = true
		} else {
			c.bad = "suppress(untilTimeLimit) " + n.ID
		}
	case "toStream":
		t := in(0)
		c = &sctx{kind: "stream", out: true, bad: t.bad, fromTab: t.table, join: t.join, window: t.window}
	case "toTable":
		s := in(0)
		c = &sctx{kind: "table", bad: s.bad}
		if s.bad == "" && !Materialized(w.d, n) {
			c.bad = "a table with no store " + n.ID
		}
		if c.bad == "" {
			t := w.newTable(n, s.sources, s.srcSerde)
			t.steps, t.reduce = s.steps, "table"
			c.table = t
		}
	case "tableJoin":
		l, r := in(0), in(1)
		c = &sctx{kind: "table", joinTyp: n.Join}
		switch {
		case l.bad != "" || r.bad != "" || r.table == nil || l.table == nil && l.join == nil:
			c.bad = "a join of what the spec does not describe " + n.ID
		case l.join != nil:
			j := *l.join
			j.right = append(slices.Clone(j.right), r.table.name)
			c.join = &j
		default:
			c.join = &sJoin{left: l.table.name, right: []string{r.table.name}, typ: n.Join}
		}
		if c.join != nil {
			c.join.value = joinValue(n.Join, n.Proj)
		}
	case "streamTableJoin":
		s, t := in(0), in(1)
		c = &sctx{kind: "stream", out: true}
		if s.bad != "" || t.bad != "" || t.table == nil || len(s.sources) != 1 {
			c.bad = "a stream-table join of what the spec does not describe " + n.ID
			break
		}
		tv := "table"
		switch {
		case n.Proj[1] != "" && n.Join == "left":
			tv = "table?." + n.Proj[1]
		case n.Proj[1] != "":
			tv = "table." + n.Proj[1]
		}
		c.sjoin = &sStreamJoin{stream: s.sources[0], steps: s.steps, table: t.table.name, typ: n.Join,
			value: fmt.Sprintf(`{"s": stream.%s, "t": %s}`, n.Proj[0], tv)}
		if sd := s.srcSerde.differ(w.def); !sd.empty() {
			c.bad = "a stream-table join whose stream's serdes the spec cannot give " + n.ID
			w.todo = append(w.todo, fmt.Sprintf("the stream of %s is read with serdes %s, the spec's defaults are %s: a stream join's stream has no serdes of its own", n.ID, s.srcSerde.flow(), w.def.flow()))
		}
	case "tableGroupBy":
		t := in(0)
		c = &sctx{kind: "gtable", bad: t.bad, table: t.table}
		c.groupKey = n.Fn.KeyExpr(false, false)
		if n.Fn2 != nil {
			c.steps = []string{n.Fn2.KeyExpr(false, false)}
		}
	case "tableCount", "tableAggregate", "tableReduce":
		g := in(0)
		c = &sctx{kind: "table", bad: g.bad}
		if g.bad != "" || g.table == nil {
			break
		}
		t := w.newTable(n, nil, serdes{})
		t.regroup, t.selectKey = g.table.name, g.groupKey
		if len(g.steps) > 0 {
			t.groupValue = g.steps[0]
			t.serdes = serdes{value: SerdeLong}.differ(w.def)
		}
		t.storeSerdes = "Long"
		switch n.Op {
		case "tableCount":
			t.reduce = "count"
		case "tableAggregate":
			t.aggregate = fmt.Sprintf("{init: 0, expr: %s, subtract: %s}", yq("agg + value."+n.Fn.Field), yq("agg - value."+n.Fn.Field))
		case "tableReduce":
			t.reduce = fmt.Sprintf("{expr: %s, subtract: %s}", yq("agg + value"), yq("agg - value"))
		}
		c.table = t
	case "cogroup":
		a, b := in(0), in(1)
		c = &sctx{kind: "table"}
		if a.bad != "" || b.bad != "" {
			c.bad = "a cogroup of what the spec does not describe " + n.ID
			break
		}
		t := w.newTable(n, nil, a.srcSerde)
		t.init = `{"m0": 0, "m1": 0}`
		if a.srcSerde.value != SerdeJSON {
			t.storeSerdes = "json"
		}
		for i, m := range []*sctx{a, b} {
			steps := m.steps
			if m.groupKey != "" {
				steps = steps[:len(steps)-1]
			}
			agg := `{"m0": agg.m0 + 1, "m1": agg.m1}`
			if i == 1 {
				agg = `{"m0": agg.m0, "m1": agg.m1 + value.amount}`
			}
			t.members = append(t.members, sMember{source: m.sources[0], steps: steps, selectKey: m.groupKey, aggregate: agg})
		}
		c.table = t
	case "tableFilter", "tableMapValues":
		c = &sctx{kind: "table", bad: n.Op + " " + n.ID}
		w.miss(n, "KTable#"+strings.TrimPrefix(n.Op, "table"), "KTABLE-FILTER-", "KTABLE-MAPVALUES-")
	case "fkJoin":
		c = &sctx{kind: "table", bad: "fkJoin " + n.ID}
		w.miss(n, "foreign-key join", "KTABLE-FK-JOIN")
	case "streamJoin":
		c = &sctx{kind: "stream", bad: "streamJoin " + n.ID}
		w.miss(n, "KStream-KStream join", "KSTREAM-JOINTHIS-", "KSTREAM-OUTERTHIS-", "KSTREAM-JOINOTHER-", "KSTREAM-OUTEROTHER-", "KSTREAM-MERGE-")
	case "globalJoin":
		c = &sctx{kind: "stream", bad: "globalJoin " + n.ID}
		w.miss(n, "KStream-GlobalKTable join", "KSTREAM-JOIN-", "KSTREAM-LEFTJOIN-")
	case "to":
		c = in(0).clone()
		w.to(n, c)
	default:
		panic("fuzzapps: spec of op " + n.Op)
	}
	if c.bad != "" && n.Op == "windowedBy" {
		w.miss(n, "session windows", "KSTREAM-AGGREGATE-", "KSTREAM-SESSION")
	}
	if n.Op == "suppress" && n.Window == nil {
		w.miss(n, "suppress(untilTimeLimit)", "KTABLE-SUPPRESS-")
	}
	w.ctx[n.ID] = c
}

func aggExpr(f Fn) string {
	switch f.Kind {
	case "sumfield":
		return "agg + value." + f.Field
	case "len":
		return "agg + len(value)"
	default:
		return "agg + value"
	}
}

// joinValue is a KTable-KTable join chain's value: the joiner's field of each side.
func joinValue(typ string, proj []string) string {
	var parts []string
	for i, p := range proj {
		side := "left"
		label := "l"
		if i > 0 {
			side = fmt.Sprintf("r%d", i)
			label = side
		}
		opt := typ == "outer" || i > 0 && typ == "left"
		v := side
		if p != "" {
			if opt {
				v += "?"
			}
			v += "." + p
		}
		parts = append(parts, fmt.Sprintf("%q: %s", label, v))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (w *specWriter) newTable(n *Node, sources []string, sd serdes) *sTable {
	t := &sTable{name: "t-" + n.ID, node: n, source: sources, serdes: sd.differ(w.def)}
	w.tables = append(w.tables, t)
	return t
}

// to: what a to() writes is a table's output, a join's, a stream join's or a copy.
func (w *specWriter) to(n *Node, c *sctx) {
	outSerdes := serdes{n.Key, n.Value}
	switch {
	case c.bad != "":
		w.todo = append(w.todo, fmt.Sprintf("%s (%s) is written through %s: not expressible in the spec", n.Topic, n.ID, c.bad))
		w.unmodelled = append(w.unmodelled, Unmodelled{What: "output " + n.Topic, Names: []string{n.Topic}})
		if strings.HasPrefix(c.bad, "a key-changing step") || strings.HasPrefix(c.bad, "a merge after") || strings.HasPrefix(c.bad, "a stream-table join whose") {
			return
		}
	case c.fromTab != nil:
		t := c.fromTab
		t.output, t.outSteps = n.Topic, c.outSteps
		store := serdes{cmpOr(t.serdes.key, w.def.key), cmpOr(t.serdes.value, w.def.value)}
		if t.storeSerdes == "Long" {
			store.value = SerdeLong
		} else if t.storeSerdes == "json" {
			store.value = SerdeJSON
		}
		t.outSerdes = outSerdes.differ(store)
		if t.outSerdes.value == SerdeLong && t.storeSerdes == "Long" {
			t.outSerdes.value = ""
		}
	case c.join != nil:
		j := *c.join
		j.output = n.Topic
		j.serdes = outSerdes.differ(w.def)
		if len(c.outSteps) > 0 {
			w.todo = append(w.todo, fmt.Sprintf("%s: steps after a join's toStream", n.Topic))
			w.unmodelled = append(w.unmodelled, Unmodelled{What: "output " + n.Topic, Names: []string{n.Topic}})
			return
		}
		w.joins = append(w.joins, &j)
	case c.sjoin != nil:
		j := *c.sjoin
		j.output, j.outSteps = n.Topic, c.outSteps
		j.serdes = outSerdes.differ(w.def)
		w.sjoins = append(w.sjoins, &j)
	case len(c.sources) == 1 && c.kind == "stream":
		cp := &sCopy{source: c.sources[0], output: n.Topic, steps: c.steps, serdes: outSerdes.differ(w.def)}
		if sd := c.srcSerde.differ(w.def); !sd.empty() {
			w.todo = append(w.todo, fmt.Sprintf("the copy to %s reads %s with serdes %s, the spec's defaults are %s: a copy's source has no serdes of its own", n.Topic, c.sources[0], c.srcSerde.flow(), w.def.flow()))
			w.unmodelled = append(w.unmodelled, Unmodelled{What: "output " + n.Topic, Names: []string{n.Topic}})
			return
		}
		w.copies = append(w.copies, cp)
	default:
		w.todo = append(w.todo, fmt.Sprintf("%s (%s): a copy of merged streams is not expressible", n.Topic, n.ID))
		w.unmodelled = append(w.unmodelled, Unmodelled{What: "output " + n.Topic, Names: []string{n.Topic}})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (w *specWriter) yaml() string {
	var b strings.Builder
	d := w.d
	fmt.Fprintf(&b, "# kaudit spec of the generated app %s (seed %d), written from its description as its team would\n", d.AppID, d.Seed)
	fmt.Fprintf(&b, "# write it from the code (testdata/kafka/fuzzapps). Families: %s; settings: %s.\n", strings.Join(d.Families(), ", "), strings.Join(d.Settings(), ", "))
	for _, t := range w.todo {
		fmt.Fprintf(&b, "# TODO (not expressible): %s\n", t)
	}
	fmt.Fprintf(&b, "app_id: %s\n", d.AppID)
	fmt.Fprintf(&b, "serdes: %s\n", w.def.flow())
	if d.CacheBytes == 0 {
		b.WriteString("caching: false\n")
	}
	if len(w.tables) > 0 {
		b.WriteString("tables:\n")
	}
	for _, t := range w.tables {
		fmt.Fprintf(&b, "  - name: %s\n", t.name)
		switch {
		case t.regroup != "":
			fmt.Fprintf(&b, "    regroup: %s\n", t.regroup)
			fmt.Fprintf(&b, "    select_key: %s\n", yq(t.selectKey))
			if t.groupValue != "" {
				fmt.Fprintf(&b, "    group_value: %s\n", yq(t.groupValue))
			}
		case len(t.members) > 0:
			b.WriteString("    cogroup:\n")
			for _, m := range t.members {
				fmt.Fprintf(&b, "      - source: %s\n", m.source)
				writeSteps(&b, "        ", "steps", m.steps)
				if m.selectKey != "" {
					fmt.Fprintf(&b, "        select_key: %s\n", yq(m.selectKey))
				}
				fmt.Fprintf(&b, "        aggregate: %s\n", yq(m.aggregate))
			}
		default:
			if len(t.source) == 1 {
				fmt.Fprintf(&b, "    source: %s\n", t.source[0])
			} else {
				fmt.Fprintf(&b, "    source: [%s]\n", strings.Join(t.source, ", "))
			}
			writeSteps(&b, "    ", "steps", t.steps)
		}
		if t.init != "" {
			fmt.Fprintf(&b, "    aggregate: {init: %s}\n", yq(t.init))
		} else if t.aggregate != "" {
			fmt.Fprintf(&b, "    aggregate: %s\n", t.aggregate)
		} else {
			fmt.Fprintf(&b, "    reduce: %s\n", t.reduce)
		}
		if !t.serdes.empty() {
			fmt.Fprintf(&b, "    serdes: %s\n", t.serdes.flow())
		}
		if t.storeSerdes != "" {
			fmt.Fprintf(&b, "    store_serdes: {value: %s}\n", t.storeSerdes)
		}
		if t.window != nil {
			wd := fmt.Sprintf("size: %s", ms(t.window.SizeMs))
			if t.window.AdvanceMs > 0 && t.window.AdvanceMs != t.window.SizeMs {
				wd += ", advance: " + ms(t.window.AdvanceMs)
			}
			wd += ", grace: " + ms(t.window.GraceMs)
			fmt.Fprintf(&b, "    window: {%s}\n", wd)
		}
		if t.output != "" {
			fmt.Fprintf(&b, "    output: %s\n", t.output)
			if !t.outSerdes.empty() {
				fmt.Fprintf(&b, "    output_serdes: %s\n", t.outSerdes.flow())
			}
			writeSteps(&b, "    ", "output_steps", t.outSteps)
			if t.suppress {
				b.WriteString("    suppress: until-window-closes\n")
			}
		}
	}
	if len(w.joins) > 0 {
		b.WriteString("joins:\n")
		for _, j := range w.joins {
			fmt.Fprintf(&b, "  - output: %s\n    left: %s\n    right: [%s]\n    type: %s\n    value: %s\n", j.output, j.left, strings.Join(j.right, ", "), j.typ, yq(j.value))
			if !j.serdes.empty() {
				fmt.Fprintf(&b, "    serdes: %s\n", j.serdes.flow())
			}
		}
	}
	if len(w.copies) > 0 {
		b.WriteString("copies:\n")
		for _, c := range w.copies {
			fmt.Fprintf(&b, "  - source: %s\n    output: %s\n", c.source, c.output)
			writeSteps(&b, "    ", "steps", c.steps)
			if !c.serdes.empty() {
				fmt.Fprintf(&b, "    serdes: %s\n", c.serdes.flow())
			}
		}
	}
	if len(w.sjoins) > 0 {
		b.WriteString("stream_joins:\n")
		for _, j := range w.sjoins {
			fmt.Fprintf(&b, "  - output: %s\n    stream: %s\n", j.output, j.stream)
			writeSteps(&b, "    ", "steps", j.steps)
			fmt.Fprintf(&b, "    table: %s\n    type: %s\n    value: %s\n", j.table, j.typ, yq(j.value))
			writeSteps(&b, "    ", "output_steps", j.outSteps)
			if !j.serdes.empty() {
				fmt.Fprintf(&b, "    serdes: %s\n", j.serdes.flow())
			}
		}
	}
	return b.String()
}

func writeSteps(b *strings.Builder, indent, name string, steps []string) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(b, "%s%s:\n", indent, name)
	for _, s := range steps {
		fmt.Fprintf(b, "%s  - %s\n", indent, s)
	}
}

func ms(v int64) string {
	if v%1000 == 0 {
		return fmt.Sprintf("%ds", v/1000)
	}
	return fmt.Sprintf("%dms", v)
}
