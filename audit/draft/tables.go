package draft

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/discovery"
	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/topology"
)

// draftTables picks the stores that hold tables: those a source topic
// feeds first, other than the stores of stream-stream join windows,
// suppression buffers and foreign-key subscriptions.
func draftTables(lay *topology.Layout, haveTopology bool, d *discovery.Discovery) []draftTable {
	var out []draftTable
	used := map[string]bool{}
	uniqueName := func(base string) string {
		name := base
		for i := 2; used[name]; i++ {
			name = base + "-" + strconv.Itoa(i)
		}
		used[name] = true
		return name
	}
	if !haveTopology {
		var candidates []string
		if d != nil {
			for _, t := range d.ByRole(topology.RoleSource) {
				candidates = append(candidates, t.Name)
			}
		}
		for _, s := range lay.Stores {
			out = append(out, draftTable{name: uniqueName(s.Name), candidates: candidates, store: s.Name, changelog: s.Changelog,
				repartition: strings.Join(s.Repartitions, ""), rekeyed: s.Rekeyed})
		}
		return out
	}
	for _, u := range lay.Topics {
		if u.Role != topology.RoleSource || u.Pattern {
			continue
		}
		for _, s := range lay.StoresFedBy(u.Name) {
			if !tableStore(s) {
				continue
			}
			if i := slices.IndexFunc(out, func(t draftTable) bool { return t.store == s.Name }); i >= 0 {
				// another source of a store already drafted: merged into its stream
				if chain, err := lay.SourceChain(u.Name, s.Name); err == nil && len(chain) > 0 && chain[0].Op == topology.OpMerge {
					out[i].merged = append(out[i].merged, u.Name)
				}
				continue
			}
			name := u.Name
			if len(lay.StoresFedBy(u.Name)) > 1 {
				name = s.Name
			}
			var reps []string
			for _, r := range s.Repartitions {
				if strings.HasSuffix(r, "-repartition") {
					reps = append(reps, r)
				}
			}
			rep := ""
			if len(reps) == 1 {
				rep = reps[0]
			}
			t := draftTable{name: uniqueName(name), source: u.Name, store: s.Name, changelog: s.Changelog,
				repartition: rep, rekeyed: s.Rekeyed, tableSource: fromTableSource(s)}
			if chain, err := lay.SourceChain(u.Name, s.Name); err != nil {
				t.chainErr = err.Error()
			} else {
				t.chain = chain
			}
			t.steps = topologySteps(t.chain)
			out = append(out, t)
		}
	}
	// KTable groupBys: a store fed through a KTABLE-SELECT node from a
	// drafted table's store
	for _, s := range lay.Stores {
		if !tableStore(s) || slices.ContainsFunc(out, func(t draftTable) bool { return t.store == s.Name }) {
			continue
		}
		from, sel, ok := lay.RegroupOf(s.Name)
		if !ok {
			continue
		}
		i := slices.IndexFunc(out, func(t draftTable) bool { return t.store == from })
		if i < 0 || out[i].regroupOf != "" {
			continue
		}
		out = append(out, draftTable{name: uniqueName(s.Name), store: s.Name, changelog: s.Changelog, regroupOf: out[i].name, regroupNode: sel})
	}
	return out
}

// checkRegroupChanges keeps a KTable groupBy's inferred sum only where
// its repartition topic's changes carry the rows as they are: a mapper
// that makes a new value (KeyValue.pair(p.category, p.price)) folds
// that value, which the draft does not infer (group_value). A count
// ignores the values. The changes are ChangedSerializer's: a new value
// alone ends in flag byte 1.
func checkRegroupChanges(ctx context.Context, src audit.Source, lay *topology.Layout, t *draftTable) error {
	field, ok := strings.CutPrefix(t.regroup.Reduce.Value, "sum:")
	if !ok {
		return nil
	}
	s, ok := lay.Store(t.store)
	if !ok || len(s.Repartitions) != 1 {
		return nil
	}
	rep, err := infer.Read(ctx, src, nil, s.Repartitions[0], infer.ReadOptions{PerPartition: 200})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		t.regroup.Reduce = infer.Guess{Evidence: "its repartition topic was not read: " + err.Error()}
		return nil
	}
	rows, checked := 0, 0
	for _, r := range rep.Records() {
		if n := len(r.RawValue); n < 2 || r.RawValue[n-1] != 1 {
			continue
		}
		checked++
		body := r.RawValue[:len(r.RawValue)-1]
		var m map[string]json.RawMessage
		if body[0] == 0 || json.Unmarshal(body, &m) == nil && m[field] != nil {
			rows++ // the row itself (Confluent-framed Avro: its own schema, taken as the row's)
		}
	}
	if checked > 0 && rows*10 < checked*9 {
		t.regroup.Reduce = infer.Guess{Evidence: fmt.Sprintf("%d of %d changes on %s carry a row with %s: the mapper makes a new value (group_value), which is not inferred", rows, checked, s.Repartitions[0], field)}
	}
	return nil
}

// fromTableSource reports whether a store is written only by a table
// source (builder.table) or a toTable().
func fromTableSource(s topology.StoreUse) bool {
	for _, w := range s.Writers {
		if !strings.HasPrefix(w, "KTABLE-SOURCE-") && !strings.HasPrefix(w, "KSTREAM-TOTABLE-") {
			return false
		}
	}
	return len(s.Writers) > 0 && !s.Rekeyed
}

func tableStore(s topology.StoreUse) bool {
	if s.Global {
		return false
	}
	for _, w := range s.Writers {
		if strings.HasPrefix(w, "KSTREAM-WINDOWED-") {
			return false
		}
	}
	l := strings.ToLower(s.Name)
	return !strings.Contains(l, "suppress") && !strings.Contains(l, "subscription") && !strings.HasSuffix(l, "-join-store")
}

// suppressedAfter reports whether a suppress() node follows store on its
// way to an output.
func suppressedAfter(lay *topology.Layout, store string) bool {
	if lay == nil || store == "" {
		return false
	}
	for _, u := range lay.Topics {
		if u.Role != topology.RoleOutput || u.Pattern {
			continue
		}
		oc, err := lay.OutputChain(store, u.Name)
		if err == nil && slices.ContainsFunc(oc, func(n topology.ChainNode) bool { return n.Op == topology.OpSuppress }) {
			return true
		}
	}
	return false
}

// windowedOutputFilter infers the processors of a table's output from
// the states that reached it: a windowed table's toStream().filter(…)
// (GuessWindowedOutputFilter), and a KTable filter before toStream(), a
// filter after it and a map or selectKey that re-keys the output
// (GuessTableOutput).
func windowedOutputFilter(lay *topology.Layout, t *draftTable, ev *infer.Evidence) {
	if lay == nil {
		return
	}
	for _, u := range lay.Topics {
		if u.Role != topology.RoleOutput || u.Pattern {
			continue
		}
		oc, err := lay.OutputChain(t.store, u.Name)
		if err != nil || len(oc) == 0 {
			continue
		}
		windowed := t.window != nil && t.window.Size > 0
		if windowed && len(oc) == 2 && oc[0].Op == topology.OpToStream && oc[1].Op == topology.OpFilter {
			g := infer.GuessWindowedOutputFilter(ev.Topics[t.changelog], ev.Topics[u.Name])
			t.outputFilter = &g
			return
		}
		shape, ok := outputShape(oc)
		if !ok || !shape.TableFilter && shape.Rekey == "" {
			return
		}
		if windowed {
			shape.Window = t.window.Size
		}
		g := infer.GuessTableOutput(ev.Topics[t.changelog], ev.Topics[u.Name], shape)
		t.tableOutput = &g
		return
	}
}

// outputShape is the shape GuessTableOutput reads of an output chain:
// KTable filters, toStream(), at most one filter, at most one map or
// selectKey last; false for any other chain.
func outputShape(oc []topology.ChainNode) (infer.OutputShape, bool) {
	var s infer.OutputShape
	i := 0
	for ; i < len(oc) && oc[i].Op == topology.OpTableFilter; i++ {
		s.TableFilter = true
	}
	if i > 1 || i >= len(oc) || oc[i].Op != topology.OpToStream {
		return s, false
	}
	rest := oc[i+1:]
	if len(rest) > 0 && rest[0].Op == topology.OpFilter {
		s.StreamFilter, rest = true, rest[1:]
	}
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && rest[0].Op == topology.OpMap:
		s.Rekey = "map"
	case len(rest) == 1 && rest[0].Op == topology.OpSelectKey:
		s.Rekey = "selectKey"
	default:
		return s, false
	}
	return s, true
}

// draftJoins drafts one join per output of each chain of table-table
// joins: the left table of the first join, the right table of each, the
// output; guess (nil: no evidence read) infers each one's type and value.
func draftJoins(lay *topology.Layout, tables []draftTable, guess func(output, left string, rights []string) *infer.JoinGuess) []Join {
	byStore := map[string]string{}
	for _, t := range tables {
		byStore[t.store] = t.name
	}
	byNode := map[string]topology.JoinUse{}
	isNext := map[string]bool{}
	for _, j := range lay.Joins {
		byNode[j.Node] = j
		if j.Next != "" {
			isNext[j.Next] = true
		}
	}
	var out []Join
	for _, head := range lay.Joins {
		if head.Kind == topology.JoinStreamTable {
			continue // stream_joins:
		}
		if head.Kind != topology.JoinTableTable && !isNext[head.Node] {
			out = append(out, Join{Skipped: fmt.Sprintf("%s join %s → %s: not audited by the spec (table-table joins only)",
				head.Kind, head.Node, strings.Join(head.Outputs, ", "))})
			continue
		}
		if isNext[head.Node] {
			continue
		}
		left := tableOf(head.LeftStores, byStore)
		var rights []Guess
		var nodes []string
		last := head
		for j, ok := head, true; ok; j, ok = byNode[j.Next] {
			rights = append(rights, tableOf(j.RightStores, byStore))
			nodes = append(nodes, j.Node)
			last = j
			if j.Next == "" {
				break
			}
		}
		var outputs []Guess
		for _, o := range last.Outputs {
			outputs = append(outputs, Guess{Value: o})
		}
		if len(outputs) == 0 {
			outputs = []Guess{{Unknown: "the topic the join result is written to"}}
		}
		for _, output := range outputs {
			output.Evidence = strings.Join(nodes, " → ")
			out = append(out, draftJoin(Join{Output: output, Nodes: nodes, Left: left, Right: rights}, guess))
		}
	}
	return out
}

// draftJoin infers a drafted join's type and value where its output and
// tables are known and the evidence was read (guess), else leaves them
// to be answered: with evidence read and no key of it telling the type,
// a join judged as a left one it may not be would be false losses.
func draftJoin(j Join, guess func(output, left string, rights []string) *infer.JoinGuess) Join {
	known := j.Output.Known() && j.Left.Known()
	var names []string
	for _, r := range j.Right {
		known = known && r.Known()
		names = append(names, r.Value)
	}
	if guess != nil && known {
		if g := guess(j.Output.Value, j.Left.Value, names); g.Keys > 0 {
			j.Type, j.Value, j.Fields = joinGuess(g)
			return j
		}
	}
	if guess != nil {
		j.Type = Guess{Unknown: "left | inner | outer: describe() does not say which, and no output key read tells"}
	} else {
		j.Type = Guess{Value: string(spec.JoinLeft), Evidence: "left | inner | outer: describe() does not say which; check the code"}
	}
	vars := []string{"left"}
	for i := range j.Right {
		vars = append(vars, "r"+strconv.Itoa(i+1))
	}
	j.Value = Guess{Unknown: "the joiner's result over " + strings.Join(vars, ", ") + ", or remove this line to check presence only"}
	return j
}

// joinGuess is an inferred join's type and value, and what each output
// field was matched to.
func joinGuess(g *infer.JoinGuess) (typ, value Guess, fields []string) {
	typ = Guess{Value: string(g.Type), Evidence: g.TypeNote}
	if g.TypeUnknown {
		typ = Guess{Unknown: g.TypeNote}
	}
	value = Guess{Value: g.Value, Evidence: strings.Join(g.Fields, "; "), Explained: g.Whole, Of: g.Keys}
	if g.Value == "" {
		value = Guess{Unknown: strings.Join(g.TODO, "; ") + "; or remove this line to check presence only", Explained: g.Whole, Of: g.Keys}
	}
	return typ, value, g.Fields
}

// tableOf names the draft table of the first store of stores that is
// one; unknown where none is.
func tableOf(stores []string, byStore map[string]string) Guess {
	for _, s := range slices.Sorted(slices.Values(stores)) {
		if n, ok := byStore[s]; ok {
			return Guess{Value: n}
		}
	}
	return Guess{Unknown: "the table kept in " + strings.Join(stores, " or ")}
}

// topologyOutput is a table's own output, as the topology shows it: the
// output topic its store reaches through toStream() (table.toStream()…
// to(t)), with the nodes after it as output steps, each to be answered
// (a peek as is), a windowed store's filter as the states that reached
// the output tell it; nil for none.
func topologyOutput(lay *topology.Layout, t draftTable) *Output {
	for _, u := range lay.Topics {
		if u.Role != topology.RoleOutput || u.Pattern {
			continue
		}
		oc, err := lay.OutputChain(t.store, u.Name)
		if err == nil && len(oc) > 0 && strings.HasPrefix(oc[0].Name, "COGROUPKSTREAM-MERGE-") {
			oc = oc[1:] // a cogroup's aggregators meet in their merge node before toStream()
		}
		// KTable filters and mapValues before toStream() are table steps
		var tableSteps []draftStep
		for err == nil && len(oc) > 0 && (oc[0].Op == topology.OpTableFilter || oc[0].Op == topology.OpTableMapValues) {
			k := spec.StepFilter
			if oc[0].Op == topology.OpTableMapValues {
				k = spec.StepMapValues
			}
			tableSteps = append(tableSteps, draftStep{kind: k, node: oc[0].Name, note: todoNote(k)})
			oc = oc[1:]
		}
		if err != nil || len(oc) == 0 || oc[0].Op != topology.OpToStream {
			continue
		}
		steps := topologySteps(oc[1:])
		if len(oc) == 2 && oc[1].Op == topology.OpSelectKey {
			steps = []draftStep{{kind: spec.StepSelectKey, node: oc[1].Name, note: todoNote(spec.StepSelectKey)}}
		}
		if g := t.outputFilter; g != nil && len(steps) == 1 && steps[0].kind == spec.StepFilter {
			steps[0].expr, steps[0].note, steps[0].matched = g.Value, g.Evidence, [2]int{g.Explained, g.Of}
		}
		if g := t.tableOutput; g != nil {
			settle := func(st *draftStep, g infer.Guess) {
				if g.Value != "" {
					st.expr, st.note, st.matched = g.Value, g.Evidence, [2]int{g.Explained, g.Of}
				}
			}
			if len(tableSteps) == 1 && tableSteps[0].kind == spec.StepFilter {
				settle(&tableSteps[0], g.TableFilter)
			}
			for i := range steps {
				switch steps[i].kind {
				case spec.StepFilter:
					settle(&steps[i], g.StreamFilter)
				case spec.StepMap, spec.StepSelectKey:
					settle(&steps[i], g.Rekey)
				}
			}
		}
		return &Output{Topic: u.Name, Evidence: oc[0].Name, FromTopology: true, Steps: stepsOf(steps), TableSteps: stepsOf(tableSteps)}
	}
	return nil // one output per table
}
