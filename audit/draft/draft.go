package draft

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/topology"
)

// draftTable is one table of the draft.
type draftTable struct {
	name, source string
	merged       []string // further sources merged into source's stream (source: [a, b])
	evSource     string   // the evidence's topic of its inputs (sources merged: their union)
	candidates   []string // when the source is not known
	store        string
	changelog    string
	repartition  string
	rekeyed      bool
	tableSource  bool // builder.table() or toTable(): no reducer to decide
	// regroupOf is, for a KTable groupBy's store, the drafted table it
	// re-groups (regroup:), and regroupNode its KTABLE-SELECT node
	regroupOf, regroupNode string
	regroup                *infer.RegroupGuess
	// chain is the topology's chain of processors from the source to the
	// store; chainErr why it is not known
	chain    []topology.ChainNode
	chainErr string
	// inferred from the evidence (kaudit init with a source)
	sourceNote string
	selectKey  infer.Guess
	reduce     *infer.Guess
	steps      []draftStep // the chain's steps, as far as the evidence tells them
	// window is, for a store whose changelog keys are a window store's,
	// what the evidence tells of its TimeWindows and reducer; suppressed
	// says a suppress() follows the store (its output needs the grace)
	window     *infer.WindowGuess
	windowNote string
	suppressed bool
	// outputFilter is the filter between a windowed store and its output,
	// inferred from the states that reached the output
	outputFilter *infer.Guess
	// unseen says, drafted without a topology, why a processor may stand
	// between the source and the re-key ("" when the node numbers rule
	// one out: unseenSteps); unseenExtra how many nodes more than its
	// chain needs stand below its store (-1: not known)
	unseen      string
	unseenExtra int
	unseenNote  string // what the evidence says of a filter there (unseenFilter)
}

// draftStep is one step of a drafted table's chain: its kind and
// expression (a TODO where the evidence cannot tell), the node it stands
// for, and what the guess rests on.
type draftStep struct {
	kind spec.StepKind
	expr string
	node string
	note string
	// splitter is, for a branch, the split()'s own node (node is the
	// branch's)
	splitter string
}

// Options say what to draft from.
type Options struct {
	AppID string
	// TopologyFile is a Topology#describe() text file; "" takes the one
	// the source carries, else none.
	TopologyFile string
	// KeySerde and ValueSerde are the serdes the caller names for the
	// draft; "" infers them from the evidence.
	KeySerde, ValueSerde string
	// Codec is how to decode the evidence (a registry, offline schemas,
	// client properties); its serdes are ignored.
	Codec codec.Config
	// SourceArgs are the command-line flags that name the source
	// ("--snapshot DIR"), written into the commands the draft's header
	// tells the user to run next; "" leaves them out.
	SourceArgs string
}

// Write writes a draft spec to w; src may be nil (the topology alone).
func Write(ctx context.Context, w io.Writer, src audit.Source, o Options) error {
	if o.AppID == "" {
		return audit.UsageError{Err: errors.New("kaudit init needs --app-id ID")}
	}
	if o.TopologyFile == "" && src == nil {
		return audit.UsageError{Err: errors.New("kaudit init needs --topology FILE or a source (--bootstrap-server, --snapshot, --log-dir)")}
	}
	var topo *topology.Topology
	topoFrom := o.TopologyFile
	if o.TopologyFile != "" {
		var err error
		if topo, err = topology.ReadFile(o.TopologyFile); err != nil {
			return audit.UsageError{Err: err}
		}
	} else if text := audit.TopologyOf(src); text != "" {
		// a capture carries the app's describe() text
		t, err := topology.ParseString(text)
		if err != nil {
			return audit.NotRunError{Err: fmt.Errorf("parse the snapshot's topology: %w", err)}
		}
		topo, topoFrom = t, "the snapshot's topology"
	}
	var d *discovery.Discovery
	if src != nil {
		var err error
		if d, err = discovery.Discover(ctx, src, o.AppID, topo); err != nil {
			return audit.NotRunError{Err: fmt.Errorf("discover %s: %w", o.AppID, err)}
		}
	}
	var lay *topology.Layout
	switch {
	case topo != nil:
		lay = topo.Layout(o.AppID)
	default:
		lay = d.NamingLayout()
	}
	tables := draftTables(lay, topo != nil, d)
	if topo == nil {
		unseen := unseenSteps(o.AppID, lay)
		for i := range tables {
			if c, ok := unseen[tables[i].store]; ok || tables[i].rekeyed {
				tables[i].unseen, tables[i].unseenExtra = c.why, c.extra
				if !ok {
					tables[i].unseen, tables[i].unseenExtra = "its store's name carries no number Kafka Streams generated, so nothing rules out a processor between its source and the re-key", -1
				}
			}
		}
	}
	sjoins := draftStreamJoins(lay, tables)
	var copies []draftTable
	var cogroups []draftCogroup
	if topo != nil {
		copies = draftCopies(lay)
		cogroups = draftCogroups(lay, tables)
	}
	var inf *inferred
	if src != nil && len(tables)+len(copies) > 0 {
		var outputs []string
		for _, u := range lay.Topics {
			if u.Role == topology.RoleOutput && !u.Pattern {
				outputs = append(outputs, u.Name)
			}
		}
		// the stream joins' sides and the copies are inferred as a
		// table's chain is (a copy's output stands for the repartition
		// copies)
		all := slices.Clone(tables)
		for _, sj := range sjoins {
			all = append(all, sj.side)
		}
		all = append(all, copies...)
		for _, cg := range cogroups {
			all = append(all, cg.members...) // each grouped stream as a table's chain
		}
		for i := range all {
			all[i].suppressed = suppressedAfter(lay, all[i].store)
		}
		var err error
		inf, err = inferTables(ctx, o, src, all, outputs)
		if err == nil && inf != nil && inf.ev != nil {
			for _, i := range defaultBranches(lay, all) {
				stepsAgain(&all[i], inf.ev)
			}
			for i := range all {
				if err == nil && all[i].regroup != nil {
					err = checkRegroupChanges(ctx, src, lay, &all[i])
				}
			}
		}
		if err == nil && inf != nil && inf.ev != nil {
			for i := range all {
				windowedOutputFilter(lay, &all[i], inf.ev)
			}
		}
		tables = all[:len(tables)]
		for i := range sjoins {
			sjoins[i].side = all[len(tables)+i]
		}
		n := len(tables) + len(sjoins) + len(copies)
		copies = all[len(tables)+len(sjoins) : n]
		for i := range cogroups {
			cogroups[i].members = all[n : n+len(cogroups[i].members)]
			n += len(cogroups[i].members)
			if err == nil && inf != nil && inf.ev != nil {
				if j := slices.IndexFunc(tables, func(t draftTable) bool { return t.name == cogroups[i].table }); j >= 0 {
					inferCogroup(&cogroups[i], tables[j].changelog, inf.ev)
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ue audit.UsageError
			if errors.As(err, &ue) {
				return err
			}
			return audit.NotRunError{Err: err}
		}
	}
	srcArgs := ""
	if o.SourceArgs != "" {
		srcArgs = " " + o.SourceArgs
	}
	var b strings.Builder
	b.WriteString("# kaudit spec, drafted by kaudit init")
	if topoFrom != "" {
		b.WriteString(" from " + topoFrom)
	}
	if src != nil {
		b.WriteString(" and " + src.Describe())
	}
	if inf != nil {
		b.WriteString(".\n# Each guess from the evidence says what it rests on; fill in every TODO,\n")
		b.WriteString("# check with: kaudit spec check --spec kaudit.yaml" + srcArgs + ",\n# then audit with: kaudit diff --spec kaudit.yaml" + srcArgs + "\n")
	} else {
		b.WriteString(".\n# Fill in every TODO (select_key, reduce, value: what the app's Java lambdas do),\n")
		b.WriteString("# then audit with: kaudit diff --spec kaudit.yaml" + srcArgs + "\n")
	}
	b.WriteString("app_id: " + yamlScalar(o.AppID) + "\n")
	if o.TopologyFile != "" {
		b.WriteString("topology: " + yamlScalar(o.TopologyFile) + "\n")
	}
	switch {
	case inf != nil && inf.keySerde.Value != "" && inf.valueSerde.Value != "":
		fmt.Fprintf(&b, "serdes: {key: %s, value: %s}   # keys: %s; values: %s\n", yamlScalar(inf.keySerde.Value), yamlScalar(inf.valueSerde.Value),
			inf.keySerde.Evidence, inf.valueSerde.Evidence)
	case o.KeySerde != "" || o.ValueSerde != "":
		fmt.Fprintf(&b, "serdes: {key: %s, value: %s}\n", yamlScalar(o.KeySerde), yamlScalar(o.ValueSerde))
	default:
		b.WriteString("# serdes: {key: string, value: avro}   # else --key-serde/--value-serde apply\n")
	}
	switch {
	case len(tables) == 0 && len(copies) > 0:
		b.WriteString("tables: []   # no store holds a table: the app copies (below)\n")
	default:
		b.WriteString("tables:\n")
	}
	if len(tables) == 0 && len(copies) == 0 {
		b.WriteString("  # No store holding a table was found (stream-stream join windows, suppression\n")
		b.WriteString("  # buffers and global stores are not tables): describe the tables by hand.\n")
		fmt.Fprintf(&b, "  - name: %s\n    source: %s\n    reduce: %s\n    store: %s\n",
			yamlScalar("TODO: a name for the table"), yamlScalar("TODO: the topic it is folded from"),
			yamlScalar("TODO: latest | count | sum(FIELD) | sum | {expr: \"…agg…value…\"}"), yamlScalar("TODO: its state store"))
	}
	for _, t := range tables {
		fmt.Fprintf(&b, "  - name: %s\n", yamlScalar(t.name))
		if cg, ok := cogroupOf(cogroups, t.name); ok {
			writeCogroup(&b, t, cg)
			if topo != nil {
				writeOutput(&b, lay, t)
			}
			continue
		}
		if t.regroupOf != "" {
			writeRegroup(&b, t, tables)
			if inf != nil {
				if g, ok := inf.storeSerde[t.changelog]; ok {
					fmt.Fprintf(&b, "    store_serdes: {value: %s}   # its changelog's values: %s\n", yamlScalar(g.Value), g.Evidence)
				}
			}
			if topo != nil {
				writeOutput(&b, lay, t)
			}
			continue
		}
		if t.source != "" && len(t.merged) > 0 {
			names := []string{yamlScalar(t.source)}
			for _, m := range t.merged {
				names = append(names, yamlScalar(m))
			}
			note := t.sourceNote
			if len(t.chain) > 0 {
				note = "merged into one stream (" + t.chain[0].Name + ")"
				if t.sourceNote != "" {
					note += "; " + t.sourceNote
				}
			}
			fmt.Fprintf(&b, "    source: [%s]%s\n", strings.Join(names, ", "), comment(note))
		} else if t.source != "" {
			fmt.Fprintf(&b, "    source: %s%s\n", yamlScalar(t.source), comment(t.sourceNote))
		} else {
			hint := "which source topic feeds store " + t.store
			if len(t.candidates) > 0 {
				hint += "? the group commits offsets on " + strings.Join(t.candidates, ", ")
			}
			if t.sourceNote != "" {
				hint += "; " + t.sourceNote
			}
			fmt.Fprintf(&b, "    source: %s\n", yamlScalar("TODO: "+hint))
		}
		writeSteps(&b, t)
		g := t.selectKey
		switch {
		case t.keyInSteps():
		case g.Value == "key":
			fmt.Fprintf(&b, "    # select_key: none, the key is unchanged: %s\n", g.Evidence)
		case g.Value != "":
			fmt.Fprintf(&b, "    select_key: %s%s\n", yamlScalar(g.Value), comment(g.Evidence))
		case len(g.Candidates) > 0:
			fmt.Fprintf(&b, "    select_key: %s\n", yamlScalar("TODO: one of "+strings.Join(g.Candidates, ", ")+" ("+g.Evidence+")"))
		case t.rekeyed:
			fmt.Fprintf(&b, "    select_key: %s%s\n", yamlScalar("TODO: the new key selectKey/groupBy computes, e.g. value.orderId; remove the line if the key is unchanged"), comment(g.Evidence))
		}
		writeWindow(&b, t)
		switch {
		case t.tableSource:
			b.WriteString("    reduce: table   # builder.table(): the latest value per key, a null value deletes it\n")
		case t.reduce != nil && t.reduce.Value != "":
			fmt.Fprintf(&b, "    reduce: %s%s\n", yamlScalar(t.reduce.Value), comment(t.reduce.Evidence))
		case t.reduce != nil:
			fmt.Fprintf(&b, "    reduce: %s\n", yamlScalar("TODO: one of "+strings.Join(t.reduce.Candidates, ", ")+", or {expr: \"…agg…value…\"} ("+t.reduce.Evidence+")"))
		default:
			fmt.Fprintf(&b, "    reduce: %s\n", yamlScalar("TODO: latest | count | sum(FIELD) | sum | {expr: \"…agg…value…\"}"))
		}
		fmt.Fprintf(&b, "    store: %s   # changelog %s\n", yamlScalar(t.store), t.changelog)
		if inf != nil {
			if g, ok := inf.tableSerde(t); ok {
				fmt.Fprintf(&b, "    serdes: {value: %s}   # its topics' values: %s\n", yamlScalar(g.Value), g.Evidence)
			}
			if g, ok := inf.storeSerde[t.changelog]; ok {
				fmt.Fprintf(&b, "    store_serdes: {value: %s}   # its changelog's values: %s\n", yamlScalar(g.Value), g.Evidence)
			}
		}
		if t.repartition != "" && topo == nil {
			fmt.Fprintf(&b, "    repartition: %s\n", yamlScalar(t.repartition))
		}
		if topo != nil {
			writeOutput(&b, lay, t)
		} else if inf != nil && d != nil && t.window != nil && t.window.Size > 0 {
			b.WriteString(inf.windowedOutputWithoutTopology(ctx, src, d, t, tables))
		} else if inf != nil && d != nil && t.window == nil && !t.tableSource && t.windowNote == "" {
			b.WriteString(inf.tableOutputWithoutTopology(ctx, src, d, t, tables))
		}
	}
	var guess func(output, left string, rights []string) *infer.JoinGuess
	if inf != nil {
		guess = func(output, left string, rights []string) *infer.JoinGuess {
			g := inf.inferJoin(ctx, output, left, rights)
			return &g
		}
	}
	joins := draftJoins(lay, tables, guess)
	switch {
	case topo == nil && inf != nil && d != nil:
		js := inf.joinsWithoutTopology(ctx, src, d, tables)
		b.WriteString(js)
		if strings.HasPrefix(js, "joins:") {
			inf.foundJoins = true
		}
	case topo == nil:
		b.WriteString("# joins: not known without a topology (--topology)\n")
	case len(joins) > 0:
		all := strings.Join(joins, "")
		if strings.Contains(all, "  - output:") {
			b.WriteString("joins:\n")
		} else {
			b.WriteString("# joins:\n")
		}
		b.WriteString(all)
	}
	for i := range sjoins {
		sjoins[i].settleSelectKey()
	}
	writeStreamJoins(&b, sjoins)
	for i := range copies {
		settleSelectKey(&copies[i])
	}
	writeCopies(&b, copies)
	var unknown []string
	if d != nil {
		sourced := !slices.ContainsFunc(tables, func(t draftTable) bool { return t.source == "" })
		for _, u := range d.Unknown {
			if inf != nil && sourced && u == discovery.UnknownFeeds {
				continue // inferred from the copies
			}
			if inf != nil && inf.foundJoins && (u == discovery.UnknownOutputs || u == discovery.UnknownJoins) {
				continue // inferred from the output's keys and values
			}
			unknown = append(unknown, u)
		}
	}
	if len(unknown) > 0 {
		b.WriteString("# Not known from the evidence:\n")
		for _, u := range unknown {
			b.WriteString("#   - " + u + "\n")
		}
	}
	if inf != nil && len(inf.notes) > 0 {
		b.WriteString("# Read from the evidence:\n")
		for _, n := range inf.notes {
			b.WriteString("#   - " + strings.Join(strings.Fields(n), " ") + "\n") // an error's lines, one comment
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

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

// writeRegroup writes a KTable groupBy's table: the table it re-groups,
// the mapper's key and the aggregation as far as the evidence settles
// them (a TODO otherwise: the spec does not load until it is answered).
func writeRegroup(b *strings.Builder, t draftTable, tables []draftTable) {
	fmt.Fprintf(b, "    regroup: %s   # %s: KTable#groupBy of its rows\n", yamlScalar(t.regroupOf), t.regroupNode)
	g := infer.RegroupGuess{SelectKey: infer.Guess{Evidence: "no evidence read"}}
	if t.regroup != nil {
		g = *t.regroup
	}
	if g.SelectKey.Value != "" {
		fmt.Fprintf(b, "    select_key: %s%s\n", yamlScalar(g.SelectKey.Value), comment(g.SelectKey.Evidence+"; the row as it is: no group_value"))
	} else {
		fmt.Fprintf(b, "    select_key: %s\n", yamlScalar("TODO: the groupBy mapper's new key over the row, e.g. value.category ("+g.SelectKey.Evidence+")"))
	}
	switch r := g.Reduce.Value; {
	case r == "count":
		b.WriteString("    reduce: count   # +1 on add, -1 on subtract\n")
	case strings.HasPrefix(r, "sum:"):
		f := strings.TrimPrefix(r, "sum:")
		fmt.Fprintf(b, "    aggregate: {init: 0, expr: %s, subtract: %s}   # the sum of %s: adder and subtractor\n", yamlScalar("agg + value."+f), yamlScalar("agg - value."+f), f)
	default:
		fmt.Fprintf(b, "    reduce: %s\n", yamlScalar("TODO: count, or {expr: \"…agg…value…\", subtract: \"…\"}, or aggregate {init, expr, subtract}"))
	}
	fmt.Fprintf(b, "    store: %s   # changelog %s\n", yamlScalar(t.store), t.changelog)
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

// draftJoins writes one join entry per chain of table-table joins: the
// left table of the first join, the right table of each, the output.
func draftJoins(lay *topology.Layout, tables []draftTable, guess func(output, left string, rights []string) *infer.JoinGuess) []string {
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
	var out []string
	for _, head := range lay.Joins {
		if head.Kind == topology.JoinStreamTable {
			continue // stream_joins:
		}
		if head.Kind != topology.JoinTableTable && !isNext[head.Node] {
			out = append(out, fmt.Sprintf("  # %s join %s → %s: not audited by the spec (table-table joins only)\n",
				head.Kind, head.Node, strings.Join(head.Outputs, ", ")))
			continue
		}
		if isNext[head.Node] {
			continue
		}
		left := tableOf(head.LeftStores, byStore)
		var rights, nodes []string
		last := head
		for j, ok := head, true; ok; j, ok = byNode[j.Next] {
			rights = append(rights, tableOf(j.RightStores, byStore))
			nodes = append(nodes, j.Node)
			last = j
			if j.Next == "" {
				break
			}
		}
		var b strings.Builder
		outputs := last.Outputs
		if len(outputs) == 0 {
			outputs = []string{"TODO: the topic the join result is written to"}
		}
		for _, output := range outputs {
			fmt.Fprintf(&b, "  - output: %s   # %s\n", yamlScalar(output), strings.Join(nodes, " → "))
			fmt.Fprintf(&b, "    left: %s\n", yamlScalar(left))
			quoted := make([]string, len(rights))
			for i, r := range rights {
				quoted[i] = yamlScalar(r)
			}
			fmt.Fprintf(&b, "    right: [%s]\n", strings.Join(quoted, ", "))
			if guess != nil && !strings.HasPrefix(left, "TODO") && !slices.ContainsFunc(rights, func(r string) bool { return strings.HasPrefix(r, "TODO") }) {
				if g := guess(output, left, rights); g.Keys > 0 {
					writeJoinGuess(&b, g)
					continue
				}
			}
			if guess != nil {
				// evidence read, and no key of it tells the type: a join
				// judged as a left one it may not be would be false losses
				b.WriteString("    type: " + yamlScalar("TODO: left | inner | outer: describe() does not say which, and no output key read tells") + "\n")
			} else {
				b.WriteString("    type: left   # left | inner | outer: describe() does not say which; check the code\n")
			}
			var vars []string
			vars = append(vars, "left")
			for i := range rights {
				vars = append(vars, "r"+strconv.Itoa(i+1))
			}
			fmt.Fprintf(&b, "    value: %s\n", yamlScalar("TODO: the joiner's result over "+strings.Join(vars, ", ")+", or remove this line to check presence only"))
		}
		out = append(out, b.String())
	}
	return out
}

// tableOf names the draft table of the first store of stores that is one.
func tableOf(stores []string, byStore map[string]string) string {
	for _, s := range slices.Sorted(slices.Values(stores)) {
		if n, ok := byStore[s]; ok {
			return n
		}
	}
	return "TODO: the table kept in " + strings.Join(stores, " or ")
}

// yamlScalar quotes s when it is not a plain YAML scalar.
func yamlScalar(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' || r == '/') {
			plain = false
			break
		}
	}
	if plain && s != "true" && s != "false" && s != "null" && s != "~" && !strings.HasPrefix(s, "-") {
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			return s
		}
	}
	return strconv.Quote(s)
}

// comment is a YAML end-of-line comment, "" for no text.
func comment(text string) string {
	if text == "" {
		return ""
	}
	return "   # " + text
}

// writeJoinGuess writes a join's inferred type and value, the evidence of
// each output field as comments.
func writeJoinGuess(b *strings.Builder, g *infer.JoinGuess) {
	if g.TypeUnknown {
		fmt.Fprintf(b, "    type: %s\n", yamlScalar("TODO: "+g.TypeNote))
	} else {
		fmt.Fprintf(b, "    type: %s%s\n", g.Type, comment(g.TypeNote))
	}
	for _, f := range g.Fields {
		fmt.Fprintf(b, "    # %s\n", f)
	}
	if g.Value != "" {
		fmt.Fprintf(b, "    value: %s\n", singleQuoted(g.Value))
		return
	}
	fmt.Fprintf(b, "    value: %s\n", yamlScalar("TODO: "+strings.Join(g.TODO, "; ")+"; or remove this line to check presence only"))
}

// singleQuoted writes s as a single-quoted YAML scalar.
func singleQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// writeOutput drafts a table's own output: the output topic its store
// reaches through toStream() (table.toStream()…to(t)), with the nodes
// after it as output steps, each a TODO (a peek as is).
func writeOutput(b *strings.Builder, lay *topology.Layout, t draftTable) {
	for _, u := range lay.Topics {
		if u.Role != topology.RoleOutput || u.Pattern {
			continue
		}
		oc, err := lay.OutputChain(t.store, u.Name)
		if err == nil && len(oc) > 0 && strings.HasPrefix(oc[0].Name, "COGROUPKSTREAM-MERGE-") {
			oc = oc[1:] // a cogroup's aggregators meet in their merge node before toStream()
		}
		if err != nil || len(oc) == 0 || oc[0].Op != topology.OpToStream {
			continue
		}
		fmt.Fprintf(b, "    output: %s   # %s\n", yamlScalar(u.Name), oc[0].Name)
		steps := topologySteps(oc[1:])
		if len(oc) == 2 && oc[1].Op == topology.OpSelectKey {
			steps = []draftStep{{kind: spec.StepSelectKey, expr: "TODO", node: oc[1].Name, note: todoNote(spec.StepSelectKey)}}
		}
		if g := t.outputFilter; g != nil && len(steps) == 1 && steps[0].kind == spec.StepFilter {
			steps[0].expr, steps[0].note = cmp.Or(g.Value, "TODO"), g.Evidence
		}
		if len(steps) > 0 {
			b.WriteString("    output_steps:   # the topology's processors between toStream() and the output\n")
			for _, s := range steps {
				note := s.note
				if s.expr == "TODO" {
					note = ""
				}
				b.WriteString("      - " + stepText(s) + comment(note) + "\n")
			}
		}
		return // one output per table
	}
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

// writeWindow writes a windowed table's window: its size and advance as
// inferred, its grace unknown (the evidence does not show it); or a TODO
// where the evidence did not settle them.
func writeWindow(b *strings.Builder, t draftTable) {
	g := t.window
	if g == nil {
		return
	}
	if g.Size == 0 {
		what := "{size: DURATION, advance: DURATION, grace: DURATION}, as windowedBy(TimeWindows…)"
		if len(g.Candidates) > 0 {
			what = "one of " + strings.Join(g.Candidates, "; ") + ", with the grace"
		}
		fmt.Fprintf(b, "    window: %s   # %s\n", yamlScalar("TODO: "+what), t.windowNote)
		fmt.Fprintf(b, "    # %s\n", g.Evidence)
		return
	}
	adv := ""
	if g.Advance != g.Size {
		adv = ", advance: " + infer.Millis(g.Advance)
	}
	fmt.Fprintf(b, "    window: {size: %s%s, grace: unknown}   # %s; the grace is not in the evidence: write the app's (TimeWindows.ofSizeAndGrace) to judge late inputs\n", infer.Millis(g.Size), adv, t.windowNote)
	if t.suppressed {
		b.WriteString("    # a suppress() follows the store: its output is left out (suppress: until-window-closes emits a window once stream time passes its end plus the grace), so it is not judged\n")
	}
}

// windowedOutputFilter infers the filter of a windowed table's output
// (toStream().filter(…).to(…)) from the states that reached it.
func windowedOutputFilter(lay *topology.Layout, t *draftTable, ev *infer.Evidence) {
	if t.window == nil || t.window.Size == 0 || lay == nil {
		return
	}
	for _, u := range lay.Topics {
		if u.Role != topology.RoleOutput || u.Pattern {
			continue
		}
		oc, err := lay.OutputChain(t.store, u.Name)
		if err != nil || len(oc) != 2 || oc[0].Op != topology.OpToStream || oc[1].Op != topology.OpFilter {
			continue
		}
		g := infer.GuessWindowedOutputFilter(ev.Topics[t.changelog], ev.Topics[u.Name])
		t.outputFilter = &g
		return
	}
}
