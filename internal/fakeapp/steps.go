package fakeapp

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Elem is one record between two processors of a Streams app: its key
// (a string, or nil) and its value.
type Elem struct {
	Key   any
	Value any
}

// Step is one stateless operator of a table's chain, between its source
// and its repartition topic (Steps) or between toStream() and its output
// topic (OutputSteps): how a kaudit spec states it (Kind, Expr) and what
// the app's Java lambda does under Kafka Streams 3.6 (the simulation).
// Every operator keeps the input's timestamp; a flatMap forwards its
// elements in order (KStreamFlatMap); a split's record takes the first
// branch whose predicate matches (KStreamBranch); a null key never
// reaches the repartition topic (the null-key filter before its sink).
type Step struct {
	Name string // short, for test names
	Kind string // the spec's operator: filter, filterNot, mapValues, map, flatMapValues, flatMap, peek, branch, selectKey, groupBy, process
	Expr string // its expression, as the spec writes it (TODO: left to answer)
	// app is what the app does with one record: the records it forwards.
	app func(e Elem) []Elem
	// fails says the spec's expression fails on the record (the data
	// breaks it; the app's lambda copes): nil, never.
	fails func(e Elem) bool
	// keys: the operator may change the key (the chain then needs no
	// select_key after it).
	keys bool
}

// Unmodelled reports whether kaudit cannot evaluate the step: a TODO, or
// a Processor API node.
func (st Step) Unmodelled() bool { return st.Kind == "process" || strings.HasPrefix(st.Expr, "TODO") }

func rec(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func keep(pred func(v map[string]any) bool) func(Elem) []Elem {
	return func(e Elem) []Elem {
		if pred(rec(e.Value)) {
			return []Elem{e}
		}
		return nil
	}
}

func num(v any) int {
	switch n := v.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// The steps of a scenario's tables. Their source records carry, besides
// orderId, seq, amount and table: status (OK or TEST), void (a bool),
// text (one to four words) and items (zero to three of {sku, qty}),
// and code (digits, or n/a now and then).
var (
	// StepFilter keeps the records that are not tests.
	StepFilter = Step{Name: "filter", Kind: "filter", Expr: `value.status != "TEST"`,
		app: keep(func(v map[string]any) bool { return v["status"] != "TEST" })}
	// StepFilterNot drops the void records.
	StepFilterNot = Step{Name: "filterNot", Kind: "filterNot", Expr: `value.void`,
		app: keep(func(v map[string]any) bool { return v["void"] != true })}
	// StepPeek logs the record.
	StepPeek = Step{Name: "peek", Kind: "peek", app: func(e Elem) []Elem { return []Elem{e} }}
	// StepMapValues gives the amount in cents and renames status.
	StepMapValues = Step{Name: "mapValues", Kind: "mapValues",
		Expr: `{"orderId": value.orderId, "seq": value.seq, "table": value.table, "amount": value.amount * 100, "state": value.status}`,
		app: func(e Elem) []Elem {
			v := rec(e.Value)
			return []Elem{{Key: e.Key, Value: map[string]any{"orderId": v["orderId"], "seq": v["seq"], "table": v["table"], "amount": num(v["amount"]) * 100, "state": v["status"]}}}
		}}
	// StepMap re-keys by order id and adds one to the amount.
	StepMap = Step{Name: "map", Kind: "map", keys: true,
		Expr: `[value.orderId, {"orderId": value.orderId, "seq": value.seq, "table": value.table, "amount": value.amount + 1}]`,
		app: func(e Elem) []Elem {
			v := rec(e.Value)
			return []Elem{{Key: v["orderId"], Value: map[string]any{"orderId": v["orderId"], "seq": v["seq"], "table": v["table"], "amount": num(v["amount"]) + 1}}}
		}}
	// StepSelectKey and StepGroupBy key by order id.
	StepSelectKey = Step{Name: "selectKey", Kind: "selectKey", Expr: `value.orderId`, keys: true,
		app: func(e Elem) []Elem { return []Elem{{Key: rec(e.Value)["orderId"], Value: e.Value}} }}
	StepGroupBy = Step{Name: "groupBy", Kind: "groupBy", Expr: `value.orderId`, keys: true,
		app: func(e Elem) []Elem { return []Elem{{Key: rec(e.Value)["orderId"], Value: e.Value}} }}
	// StepWords splits the text into words (flatMapValues), and
	// StepGroupByWord keys each word by itself: a word count.
	StepWords = Step{Name: "flatMapValues", Kind: "flatMapValues", Expr: `split(value.text, " ")`,
		app: func(e Elem) []Elem {
			var out []Elem
			for _, w := range strings.Split(rec(e.Value)["text"].(string), " ") {
				out = append(out, Elem{Key: e.Key, Value: w})
			}
			return out
		}}
	StepGroupByWord = Step{Name: "groupByWord", Kind: "groupBy", Expr: `value`, keys: true,
		app: func(e Elem) []Elem { return []Elem{{Key: e.Value, Value: e.Value}} }}
	// StepItems emits one record per item, keyed by its sku (flatMap): none
	// for an order without items.
	StepItems = Step{Name: "flatMap", Kind: "flatMap", keys: true,
		Expr: `map(value.items, [#.sku, {"orderId": value.orderId, "seq": value.seq, "table": value.table, "amount": #.qty, "sku": #.sku}])`,
		app: func(e Elem) []Elem {
			v := rec(e.Value)
			var out []Elem
			for _, it := range v["items"].([]any) {
				m := it.(map[string]any)
				out = append(out, Elem{Key: m["sku"], Value: map[string]any{"orderId": v["orderId"], "seq": v["seq"], "table": v["table"], "amount": m["qty"], "sku": m["sku"]}})
			}
			return out
		}}
	// StepProcess is a Processor API node that drops some records by a
	// rule no spec can state.
	StepProcess = Step{Name: "process", Kind: "process",
		app: keep(func(v map[string]any) bool { return num(v["seq"])%7 != 3 })}
	// StepTODO is a flatMapValues whose lambda the spec leaves TODO (the
	// app's keeps the records that are not TEST): the table is not judged.
	StepTODO = Step{Name: "todo", Kind: "flatMapValues", Expr: "TODO: the lambda",
		app: keep(func(v map[string]any) bool { return v["status"] != "TEST" })}
	// StepTODOFilter is StepFilter with its predicate left TODO: the
	// copies tell what it kept (an input without one is not judged).
	StepTODOFilter = Step{Name: "todoFilter", Kind: "filter", Expr: "TODO: the predicate",
		app: keep(func(v map[string]any) bool { return v["status"] != "TEST" })}
	// StepFailing is a filter whose expression fails on the records whose
	// code is not a number (the app's lambda keeps them all).
	StepFailing = Step{Name: "failing", Kind: "filter", Expr: `int(value.code) >= 0`,
		app:   func(e Elem) []Elem { return []Elem{e} },
		fails: func(e Elem) bool { return rec(e.Value)["code"] == "n/a" }}
)

// branchAt is where the split's branches part: amount >= 6000 takes the
// first, amount >= 2000 the second, the rest the default branch.
var branchAt = []int{6000, 2000}

// StepBranch is the i-th branch of split().branch(amount >= 6000)
// .branch(amount >= 2000).defaultBranch(): the first predicate that
// matches wins, so the spec states the i-th branch with the earlier
// predicates negated.
func StepBranch(i int) Step {
	var conds []string
	for j := 0; j < i && j < len(branchAt); j++ {
		conds = append(conds, fmt.Sprintf("!(value.amount >= %d)", branchAt[j]))
	}
	if i < len(branchAt) {
		conds = append(conds, fmt.Sprintf("value.amount >= %d", branchAt[i]))
	}
	return Step{Name: fmt.Sprintf("branch%d", i), Kind: "branch", Expr: strings.Join(conds, " && "),
		app: keep(func(v map[string]any) bool {
			a := num(v["amount"])
			for j, min := range branchAt {
				if a >= min {
					return j == i
				}
			}
			return i == len(branchAt)
		})}
}

// OutputStep is a step after a table's toStream(): a filter, or a
// mapValues, on the table's states; its expression depends on whether the
// states are counts or records.
type OutputStep string

const (
	OutFilter    OutputStep = "filter"
	OutMapValues OutputStep = "mapValues"
)

// outStep is the step on states of a count (a number) or of records.
func outStep(o OutputStep, count bool) Step {
	switch {
	case o == OutFilter && count:
		return Step{Kind: "filter", Expr: "value >= 3", app: func(e Elem) []Elem {
			if num(e.Value) >= 3 {
				return []Elem{e}
			}
			return nil
		}}
	case o == OutFilter:
		return Step{Kind: "filter", Expr: "value.amount >= 1500", app: keep(func(v map[string]any) bool { return num(v["amount"]) >= 1500 })}
	case count:
		return Step{Kind: "mapValues", Expr: "value * 10", app: func(e Elem) []Elem { return []Elem{{Key: e.Key, Value: num(e.Value) * 10}} }}
	}
	return Step{Kind: "mapValues", Expr: `{"orderId": value.orderId, "total": value.amount}`, app: func(e Elem) []Elem {
		v := rec(e.Value)
		return []Elem{{Key: e.Key, Value: map[string]any{"orderId": v["orderId"], "total": v["amount"]}}}
	}}
}

// windowOutStep is an output step on a window store's Long states: a
// filter that keeps the even ones (states that pass and fail by turns, so
// that a window's last state may fail it after an earlier one passed), a
// mapValues times ten.
func windowOutStep(o OutputStep) Step {
	if o == OutFilter {
		return Step{Kind: "filter", Expr: "value % 2 == 0", app: func(e Elem) []Elem {
			if e.Value.(int64)%2 == 0 {
				return []Elem{e}
			}
			return nil
		}}
	}
	return Step{Kind: "mapValues", Expr: "value * 10", app: func(e Elem) []Elem { return []Elem{{Key: e.Key, Value: e.Value.(int64) * 10}} }}
}

// runApp runs steps on one record as the app does.
func runApp(steps []Step, e Elem) []Elem {
	cur := []Elem{e}
	for _, st := range steps {
		var next []Elem
		for _, x := range cur {
			next = append(next, st.app(x)...)
		}
		cur = next
	}
	return cur
}

// specEval is what kaudit makes of the chain on one record: the number of
// elements, or unknown when the record reaches a step it cannot evaluate
// (TODO, a Processor API node, an expression that fails on it).
func specEval(steps []Step, e Elem) (n int, unknown bool) {
	cur := []Elem{e}
	for _, st := range steps {
		if len(cur) == 0 {
			return 0, false
		}
		if st.Unmodelled() {
			return 0, true
		}
		var next []Elem
		for _, x := range cur {
			if st.fails != nil && st.fails(x) {
				return 0, true
			}
			next = append(next, st.app(x)...)
		}
		cur = next
	}
	return len(cur), false
}

// selectOrderID is select_key: value.orderId, the chain's last step where
// no step changes the key.
var selectOrderID = Step{Kind: "selectKey", Expr: "value.orderId", keys: true,
	app: func(e Elem) []Elem { return []Elem{{Key: rec(e.Value)["orderId"], Value: e.Value}} }}

// chain is the table's steps with select_key: value.orderId after them
// when none changes the key.
func (t TableSpec) chain() []Step {
	for _, st := range t.Steps {
		if st.keys {
			return t.Steps
		}
	}
	return append(append([]Step(nil), t.Steps...), selectOrderID)
}

// rekeys reports whether the table's own steps give the key.
func (t TableSpec) rekeys() bool { return len(t.chain()) == len(t.Steps) }

// topics lists the table's source topics: Source, then those merged in.
func (t TableSpec) topics() []string { return append([]string{t.Source}, t.Merged...) }

// Unmodelled reports whether the table's steps hold one kaudit cannot
// evaluate (TODO or process): the table is then not judged.
func (t TableSpec) Unmodelled() bool {
	for _, st := range append(append([]Step(nil), t.Steps...), t.outputSteps()...) {
		if st.Unmodelled() {
			return true
		}
	}
	return false
}

func (t TableSpec) outputSteps() []Step {
	var out []Step
	for _, o := range t.OutputSteps {
		out = append(out, outStep(o, t.Reducer == ReduceCount))
	}
	return out
}

// hasSteps reports whether any table reading topic has steps: its
// records then carry the fields the steps read.
func (s *Scenario) hasSteps(topic string) bool {
	for _, t := range s.Tables {
		for _, top := range t.topics() {
			if top == topic && len(t.Steps) > 0 {
				return true
			}
		}
	}
	return false
}

var words = strings.Fields(`apple banana cherry date elder fig grape hazel iris juniper kiwi lemon mango nectar olive peach
	quince rowan sage thyme acorn birch cedar daisy fern gorse heath ivy jasmine kale laurel maple nettle oak
	pine reed sorrel tansy umber violet willow yarrow zinnia alder beech clover dill elm`)

// extras adds the fields the steps read to a source value, drawn from
// their own generator (the scenario's other draws stay those of the same
// scenario without steps).
func extras(rng *rand.Rand, v map[string]any, keys int) {
	v["status"] = "OK"
	if rng.IntN(6) == 0 {
		v["status"] = "TEST"
	}
	v["void"] = rng.IntN(9) == 0
	n := 1 + rng.IntN(4)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[rng.IntN(len(words))]
	}
	v["text"] = strings.Join(ws, " ")
	skus := max(keys, 8)
	items := []any{}
	seen := map[string]bool{}
	for range rng.IntN(4) {
		sku := fmt.Sprintf("s-%03d", rng.IntN(skus))
		if seen[sku] {
			continue // an order names a sku once
		}
		seen[sku] = true
		items = append(items, map[string]any{"sku": sku, "qty": 1 + rng.IntN(999)})
	}
	v["items"] = items
	v["code"] = fmt.Sprint(rng.IntN(100))
	if rng.IntN(25) == 0 {
		v["code"] = "n/a"
	}
}

// Spec is the scenario's kaudit.yaml, in the steps: syntax.
func (s *Scenario) Spec() string {
	var b strings.Builder
	fmt.Fprintf(&b, "app_id: %s\nserdes: {key: string, value: json}\ntables:\n", s.AppID)
	for _, t := range s.Tables {
		fmt.Fprintf(&b, "  - name: %s\n", t.Name)
		if len(t.Merged) > 0 {
			fmt.Fprintf(&b, "    source: [%s]\n", strings.Join(t.topics(), ", "))
		} else {
			fmt.Fprintf(&b, "    source: %s\n", t.Source)
		}
		writeSteps(&b, "steps", t.Steps)
		if t.rekeys() {
			fmt.Fprintf(&b, "    repartition: %s\n", s.Repartition(t))
		} else {
			b.WriteString("    select_key: value.orderId\n")
		}
		red := string(t.Reducer)
		if t.Reducer == ReduceExpr {
			red = fmt.Sprintf("{expr: %q}", ExprReducer)
		}
		fmt.Fprintf(&b, "    reduce: %s\n    store: %s\n", red, t.Store)
		if t.Output != "" {
			fmt.Fprintf(&b, "    output: %s\n", t.Output)
			writeSteps(&b, "output_steps", t.outputSteps())
		}
	}
	if s.Output != "" && len(s.Tables) > 1 {
		var rights []string
		for _, t := range s.Tables[1:] {
			rights = append(rights, t.Name)
		}
		fmt.Fprintf(&b, "joins:\n  - output: %s\n    left: %s\n    right: [%s]\n    type: left\n", s.Output, s.Tables[0].Name, strings.Join(rights, ", "))
	}
	return b.String()
}

func writeSteps(b *strings.Builder, field string, steps []Step) {
	if len(steps) == 0 {
		return
	}
	fmt.Fprintf(b, "    %s:\n", field)
	for _, st := range steps {
		if st.Expr == "" {
			fmt.Fprintf(b, "      - %s\n", st.Kind)
			continue
		}
		fmt.Fprintf(b, "      - %s: '%s'\n", st.Kind, strings.ReplaceAll(st.Expr, "'", "''"))
	}
}
