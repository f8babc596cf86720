package draft

import (
	"context"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit/discovery"
	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
)

// draft is the draft under way as its value: each guess with the
// evidence it rests on, or why it is unknown. Without a topology, a
// table's output and the joins are found here, from the evidence.
func (s *drafting) draft(ctx context.Context) *Draft {
	out := &Draft{AppID: s.o.AppID, TopologyFile: s.o.TopologyFile, Topology: s.topoFrom, Evidence: s.inf != nil, sourceArgs: s.o.SourceArgs}
	if s.src != nil {
		out.Source, out.sourced = s.src.Describe(), true
	}
	out.Serdes = s.serdes()
	for _, t := range s.tables {
		out.Tables = append(out.Tables, s.table(ctx, t))
	}
	out.Joins, out.JoinsNote = s.joins(ctx)
	for i := range s.sjoins {
		sj := &s.sjoins[i]
		sj.settleSelectKey()
		out.StreamJoins = append(out.StreamJoins, streamJoinOf(*sj))
	}
	for i := range s.copies {
		c := &s.copies[i]
		settleSelectKey(c)
		out.Copies = append(out.Copies, Copy{Chain: chainOf(*c), Output: c.repartition}) // repartition holds its output while it is inferred
	}
	out.Unknown = s.unknown()
	if s.inf != nil {
		for _, n := range s.inf.notes {
			out.Notes = append(out.Notes, strings.Join(strings.Fields(n), " ")) // an error's lines, one note
		}
	}
	return out
}

// serdes are the app's default serdes: inferred from the evidence, else
// the caller's; nil for neither.
func (s *drafting) serdes() *Serdes {
	switch inf := s.inf; {
	case inf != nil && inf.keySerde.Value != "" && inf.valueSerde.Value != "":
		return &Serdes{Key: guessOf(inf.keySerde), Value: guessOf(inf.valueSerde)}
	case s.o.KeySerde != "" || s.o.ValueSerde != "":
		return &Serdes{Key: Guess{Value: s.o.KeySerde}, Value: Guess{Value: s.o.ValueSerde}, Given: true}
	}
	return nil
}

// table is one drafted table as its value: a settled cogroup's, a KTable
// groupBy's, or a chain's with its key, window and reducer; its output
// as the topology shows it, else as the evidence does.
func (s *drafting) table(ctx context.Context, t draftTable) Table {
	out := Table{Name: t.name, Store: t.store, Changelog: t.changelog}
	if i := slices.IndexFunc(s.cogroups, func(cg draftCogroup) bool { return cg.table == t.name && cg.guess != nil }); i >= 0 {
		out.Cogroup = cogroupOf(s.cogroups[i])
		out.StoreSerdes = s.storeSerde(t) // a JSON aggregate of Avro streams (AB's V13)
		if s.topo != nil {
			out.Output = topologyOutput(s.lay, t)
		}
		return out
	}
	if t.regroupOf != "" {
		out.Regroup, out.SelectKey, out.Reduce = regroupOf(t)
		out.StoreSerdes = s.storeSerde(t)
		if s.topo != nil {
			out.Output = topologyOutput(s.lay, t)
		}
		return out
	}
	out.Chain = chainOf(t)
	switch {
	case t.source != "" && len(t.merged) > 0 && len(t.chain) > 0:
		out.Source.Evidence = "merged into one stream (" + t.chain[0].Name + ")"
		if t.sourceNote != "" {
			out.Source.Evidence += "; " + t.sourceNote
		}
	case t.source == "":
		hint := "which source topic feeds store " + t.store
		if len(t.candidates) > 0 {
			hint += "? the group commits offsets on " + strings.Join(t.candidates, ", ")
		}
		if t.sourceNote != "" {
			hint += "; " + t.sourceNote
		}
		out.Source = Guess{Unknown: hint, Evidence: t.sourceNote, Candidates: t.candidates, Explained: t.sourceMatched[0], Of: t.sourceMatched[1]}
	}
	out.SelectKey = selectKeyOf(t)
	out.Window = windowOf(t)
	out.Reduce = reduceOf(t)
	if s.inf != nil {
		if g, ok := s.inf.tableSerde(t); ok {
			out.Serdes = guessOf(g)
		}
	}
	out.StoreSerdes = s.storeSerde(t)
	if s.topo == nil {
		out.Repartition = t.repartition
	}
	switch {
	case s.topo != nil:
		out.Output = topologyOutput(s.lay, t)
	case s.inf != nil && s.d != nil && t.window != nil && t.window.Size > 0:
		out.Output = s.inf.windowedOutputWithoutTopology(ctx, s.src, s.d, t, s.tables)
	case s.inf != nil && s.d != nil && t.window == nil && !t.tableSource && t.windowNote == "":
		out.Output = s.inf.tableOutputWithoutTopology(ctx, s.src, s.d, t, s.tables)
	}
	return out
}

// storeSerde is the value serde of a table's changelog where it is not
// the app's (a count's Longs).
func (s *drafting) storeSerde(t draftTable) Guess {
	if s.inf != nil {
		if g, ok := s.inf.storeSerde[t.changelog]; ok {
			return guessOf(g)
		}
	}
	return Guess{}
}

// joins are the drafted joins: the topology's chains, or, without one,
// the outputs keyed by a table's keys; note says why none is drafted.
func (s *drafting) joins(ctx context.Context) ([]Join, string) {
	var guess func(output, left string, rights []string) *infer.JoinGuess
	if s.inf != nil {
		guess = func(output, left string, rights []string) *infer.JoinGuess {
			g := s.inf.inferJoin(ctx, output, left, rights)
			return &g
		}
	}
	joins := draftJoins(s.lay, s.tables, guess)
	switch {
	case s.topo == nil && s.inf != nil && s.d != nil:
		js, note := s.inf.joinsWithoutTopology(ctx, s.src, s.d, s.tables)
		s.inf.foundJoins = len(js) > 0
		return js, note
	case s.topo == nil:
		return nil, "not known without a topology (--topology)"
	}
	return joins, ""
}

// unknown is what discovery could not tell, less what the evidence told:
// each table's source (from its copies), the outputs and joins (from the
// outputs' keys and values).
func (s *drafting) unknown() []string {
	if s.d == nil {
		return nil
	}
	sourced := !slices.ContainsFunc(s.tables, func(t draftTable) bool { return t.source == "" })
	var out []string
	for _, u := range s.d.Unknown {
		if s.inf != nil && sourced && u == discovery.UnknownFeeds {
			continue // inferred from the copies
		}
		if s.inf != nil && s.inf.foundJoins && (u == discovery.UnknownOutputs || u == discovery.UnknownJoins) {
			continue // inferred from the output's keys and values
		}
		out = append(out, u)
	}
	return out
}

// guessOf is an inferred guess as the draft's.
func guessOf(g infer.Guess) Guess {
	return Guess{Value: g.Value, Evidence: g.Evidence, Candidates: g.Candidates, Explained: g.Explained, Of: g.Of}
}

// chainOf is a drafted chain as its value.
func chainOf(t draftTable) Chain {
	return Chain{Source: Guess{Value: t.source, Evidence: t.sourceNote, Explained: t.sourceMatched[0], Of: t.sourceMatched[1]}, Merged: t.merged, Steps: stepsOf(t.steps),
		FromTopology: t.chain != nil, StepsUnknown: t.chainErr, NoSteps: t.unseenNote}
}

// stepsOf is drafted steps as their values.
func stepsOf(steps []draftStep) []Step {
	var out []Step
	for _, s := range steps {
		st := Step{Kind: s.kind, Node: s.node, Expr: Guess{Value: s.expr, Evidence: s.note, Explained: s.matched[0], Of: s.matched[1]}}
		if s.open() {
			st.Expr = Guess{Unknown: s.note}
		}
		out = append(out, st)
	}
	return out
}

// selectKeyOf is a table's select_key: none where its steps give the key,
// "key" where the key is unchanged, else the guess, or what it may be.
func selectKeyOf(t draftTable) Guess {
	g := t.selectKey
	switch {
	case t.keyInSteps():
	case g.Value != "":
		return guessOf(g)
	case len(g.Candidates) > 0:
		return Guess{Unknown: "one of " + strings.Join(g.Candidates, ", ") + " (" + g.Evidence + ")", Evidence: g.Evidence, Candidates: g.Candidates}
	case t.rekeyed:
		return Guess{Unknown: "the new key selectKey/groupBy computes, e.g. value.orderId; remove the line if the key is unchanged", Evidence: g.Evidence}
	}
	return Guess{}
}

// reduceOf is a table's reducer: builder.table()'s, the guess, or what it
// may be.
func reduceOf(t draftTable) Guess {
	switch {
	case t.tableSource:
		return Guess{Value: "table", Evidence: "builder.table(): the latest value per key, a null value deletes it"}
	case t.reduce != nil && t.reduce.Value != "":
		return guessOf(*t.reduce)
	case t.reduce != nil:
		return Guess{Unknown: "one of " + strings.Join(t.reduce.Candidates, ", ") + ", or {expr: \"…agg…value…\"} (" + t.reduce.Evidence + ")",
			Evidence: t.reduce.Evidence, Candidates: t.reduce.Candidates}
	}
	return Guess{Unknown: "latest | count | sum(FIELD) | sum | {expr: \"…agg…value…\"}"}
}

// windowOf is a windowed table's window: its size and advance as
// inferred, or what they may be; nil for a store of plain keys.
func windowOf(t draftTable) *Window {
	g := t.window
	if g == nil {
		return nil
	}
	w := &Window{Keys: t.windowNote, Evidence: g.Evidence, Explained: g.Explained, Of: g.Of, Candidates: g.Candidates, Suppressed: t.suppressed}
	if g.Size == 0 {
		w.Unknown = "{size: DURATION, advance: DURATION, grace: DURATION}, as windowedBy(TimeWindows…)"
		if len(g.Candidates) > 0 {
			w.Unknown = "one of " + strings.Join(g.Candidates, "; ") + ", with the grace"
		}
		return w
	}
	w.Size, w.Advance = g.Size, g.Advance
	return w
}

// regroupOf is a KTable groupBy: the table it re-groups, the mapper's
// key and the aggregation as far as the evidence settles them.
func regroupOf(t draftTable) (*Regroup, Guess, Guess) {
	r := &Regroup{Of: t.regroupOf, Node: t.regroupNode}
	g := infer.RegroupGuess{SelectKey: infer.Guess{Evidence: "no evidence read"}}
	if t.regroup != nil {
		g = *t.regroup
	}
	key := guessOf(g.SelectKey)
	if g.SelectKey.Value == "" {
		key = Guess{Unknown: "the groupBy mapper's new key over the row, e.g. value.category (" + g.SelectKey.Evidence + ")", Evidence: g.SelectKey.Evidence}
	}
	reduce := Guess{Unknown: "count, or {expr: \"…agg…value…\", subtract: \"…\"}, or aggregate {init, expr, subtract}", Evidence: g.Reduce.Evidence}
	switch v := g.Reduce.Value; {
	case v == "count":
		reduce = guessOf(g.Reduce)
	case strings.HasPrefix(v, "sum:"):
		r.Sum = strings.TrimPrefix(v, "sum:") // RegroupGuess's "sum:F"
		reduce = Guess{Value: "sum(" + r.Sum + ")", Evidence: g.Reduce.Evidence}
	}
	return r, key, reduce
}

// cogroupOf is a settled cogroup: each grouped stream with its key where
// it re-keys, and its aggregator.
func cogroupOf(cg draftCogroup) *Cogroup {
	out := &Cogroup{Init: cg.guess.Init}
	for i, m := range cg.members {
		cm := CogroupMember{Chain: chainOf(m), Aggregate: Guess{Value: cg.guess.Aggregators[i], Evidence: cg.guess.Evidence}}
		if m.rekeyed && !m.keyInSteps() && m.selectKey.Value != "" && m.selectKey.Value != "key" {
			cm.SelectKey = guessOf(m.selectKey)
		}
		out.Members = append(out.Members, cm)
	}
	return out
}

// streamJoinOf is a drafted stream-table join as its value: its joiner is
// never inferred.
func streamJoinOf(sj draftStreamJoin) StreamJoin {
	j := StreamJoin{Output: sj.output, Node: sj.node, Skipped: sj.why, Chain: chainOf(sj.side), Table: sj.table,
		Type:  Guess{Value: string(spec.JoinLeft), Evidence: "KSTREAM-LEFTJOIN-: leftJoin()"},
		Value: Guess{Unknown: "the joiner's result over stream, table and key, or remove this line to check presence only"}}
	if sj.inner {
		j.Type = Guess{Value: string(spec.JoinInner), Evidence: "KSTREAM-JOIN-: join()"}
	}
	return j
}
