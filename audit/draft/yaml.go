package draft

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
)

// WriteYAML writes the draft as kaudit init prints it: a kaudit.yaml
// whose comments say what each guess rests on and whose TODOs are its
// unknowns, each saying why and what it may be.
func (d *Draft) WriteYAML(w io.Writer) error {
	var b strings.Builder
	d.writeHeader(&b)
	d.writeTables(&b)
	d.writeJoins(&b)
	writeStreamJoins(&b, d.StreamJoins)
	writeCopies(&b, d.Copies)
	if len(d.Unknown) > 0 {
		b.WriteString("# Not known from the evidence:\n")
		for _, u := range d.Unknown {
			b.WriteString("#   - " + u + "\n")
		}
	}
	if len(d.Notes) > 0 {
		b.WriteString("# Read from the evidence:\n")
		for _, n := range d.Notes {
			b.WriteString("#   - " + n + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write the draft: %w", err)
	}
	return nil
}

// writeHeader writes what the draft was drawn from, what to do with it,
// the app id, the topology file and the serdes.
func (d *Draft) writeHeader(b *strings.Builder) {
	srcArgs := ""
	if d.sourceArgs != "" {
		srcArgs = " " + d.sourceArgs
	}
	b.WriteString("# kaudit spec, drafted by kaudit init")
	if d.Topology != "" {
		b.WriteString(" from " + d.Topology)
	}
	if d.sourced {
		b.WriteString(" and " + d.Source)
	}
	if d.Evidence {
		b.WriteString(".\n# Each guess from the evidence says what it rests on; fill in every TODO,\n")
		b.WriteString("# check with: kaudit spec check --spec kaudit.yaml" + srcArgs + ",\n# then audit with: kaudit diff --spec kaudit.yaml" + srcArgs + "\n")
	} else {
		b.WriteString(".\n# Fill in every TODO (select_key, reduce, value: what the app's Java lambdas do),\n")
		b.WriteString("# then audit with: kaudit diff --spec kaudit.yaml" + srcArgs + "\n")
	}
	b.WriteString("app_id: " + yamlScalar(d.AppID) + "\n")
	if d.TopologyFile != "" {
		b.WriteString("topology: " + yamlScalar(d.TopologyFile) + "\n")
	}
	switch sd := d.Serdes; {
	case sd != nil && !sd.Given:
		fmt.Fprintf(b, "serdes: {key: %s, value: %s}   # keys: %s; values: %s\n", yamlScalar(sd.Key.Value), yamlScalar(sd.Value.Value), sd.Key.Evidence, sd.Value.Evidence)
	case sd != nil:
		fmt.Fprintf(b, "serdes: {key: %s, value: %s}\n", yamlScalar(sd.Key.Value), yamlScalar(sd.Value.Value))
	default:
		b.WriteString("# serdes: {key: string, value: avro}   # else --key-serde/--value-serde apply\n")
	}
}

// writeTables writes the tables: section, a placeholder to fill in when
// the draft has no table and no copy.
func (d *Draft) writeTables(b *strings.Builder) {
	switch {
	case len(d.Tables) == 0 && len(d.Copies) > 0:
		b.WriteString("tables: []   # no store holds a table: the app copies (below)\n")
	default:
		b.WriteString("tables:\n")
	}
	if len(d.Tables) == 0 && len(d.Copies) == 0 {
		b.WriteString("  # No store holding a table was found (stream-stream join windows, suppression\n")
		b.WriteString("  # buffers and global stores are not tables): describe the tables by hand.\n")
		fmt.Fprintf(b, "  - name: %s\n    source: %s\n    reduce: %s\n    store: %s\n",
			yamlScalar("TODO: a name for the table"), yamlScalar("TODO: the topic it is folded from"),
			yamlScalar("TODO: latest | count | sum(FIELD) | sum | {expr: \"…agg…value…\"}"), yamlScalar("TODO: its state store"))
	}
	for _, t := range d.Tables {
		fmt.Fprintf(b, "  - name: %s\n", yamlScalar(t.Name))
		switch {
		case t.Cogroup != nil:
			writeCogroup(b, t)
		case t.Regroup != nil:
			writeRegroup(b, t)
		default:
			writeTable(b, t)
		}
		writeOutput(b, t.Output)
	}
}

// writeTable writes a table folded from a chain: its source, steps, key,
// window, reducer, store and serdes.
func writeTable(b *strings.Builder, t Table) {
	switch {
	case t.Source.Unsettled():
		fmt.Fprintf(b, "    source: %s\n", scalar(t.Source))
	case len(t.Merged) > 0:
		names := []string{yamlScalar(t.Source.Value)}
		for _, m := range t.Merged {
			names = append(names, yamlScalar(m))
		}
		fmt.Fprintf(b, "    source: [%s]%s\n", strings.Join(names, ", "), comment(t.Source.Evidence))
	default:
		fmt.Fprintf(b, "    source: %s%s\n", yamlScalar(t.Source.Value), comment(t.Source.Evidence))
	}
	writeSteps(b, t.Chain, "the store")
	switch g := t.SelectKey; {
	case g.Value == "key":
		fmt.Fprintf(b, "    # select_key: none, the key is unchanged: %s\n", g.Evidence)
	case g.Value != "":
		fmt.Fprintf(b, "    select_key: %s%s\n", yamlScalar(g.Value), comment(g.Evidence))
	case g.Unsettled() && len(g.Candidates) > 0:
		fmt.Fprintf(b, "    select_key: %s\n", scalar(g)) // the TODO cites the evidence
	case g.Unsettled():
		fmt.Fprintf(b, "    select_key: %s%s\n", scalar(g), comment(g.Evidence))
	}
	writeWindow(b, t.Window)
	if g := t.Reduce; g.Unsettled() {
		fmt.Fprintf(b, "    reduce: %s\n", scalar(g))
	} else {
		fmt.Fprintf(b, "    reduce: %s%s\n", yamlScalar(g.Value), comment(g.Evidence))
	}
	fmt.Fprintf(b, "    store: %s   # changelog %s\n", yamlScalar(t.Store), t.Changelog)
	if g := t.Serdes; g.said() {
		fmt.Fprintf(b, "    serdes: {value: %s}   # its topics' values: %s\n", yamlScalar(g.Value), g.Evidence)
	}
	writeStoreSerdes(b, t)
	if t.Repartition != "" {
		fmt.Fprintf(b, "    repartition: %s\n", yamlScalar(t.Repartition))
	}
}

// writeStoreSerdes writes a table's store_serdes, where its changelog's
// values are of their own serde.
func writeStoreSerdes(b *strings.Builder, t Table) {
	if g := t.StoreSerdes; g.said() {
		fmt.Fprintf(b, "    store_serdes: {value: %s}   # its changelog's values: %s\n", yamlScalar(g.Value), g.Evidence)
	}
}

// writeRegroup writes a KTable groupBy's table: the table it re-groups,
// the mapper's key and the aggregation as far as the evidence settles
// them (a TODO otherwise: the spec does not load until it is answered).
func writeRegroup(b *strings.Builder, t Table) {
	r := t.Regroup
	fmt.Fprintf(b, "    regroup: %s   # %s: KTable#groupBy of its rows\n", yamlScalar(r.Of), r.Node)
	if g := t.SelectKey; g.Unsettled() {
		fmt.Fprintf(b, "    select_key: %s\n", scalar(g))
	} else {
		fmt.Fprintf(b, "    select_key: %s%s\n", yamlScalar(g.Value), comment(g.Evidence+"; the row as it is: no group_value"))
	}
	switch {
	case r.Sum != "":
		fmt.Fprintf(b, "    aggregate: {init: 0, expr: %s, subtract: %s}   # the sum of %s: adder and subtractor\n", yamlScalar("agg + value."+r.Sum), yamlScalar("agg - value."+r.Sum), r.Sum)
	case t.Reduce.Known():
		b.WriteString("    reduce: count   # +1 on add, -1 on subtract\n")
	default:
		fmt.Fprintf(b, "    reduce: %s\n", scalar(t.Reduce))
	}
	fmt.Fprintf(b, "    store: %s   # changelog %s\n", yamlScalar(t.Store), t.Changelog)
	writeStoreSerdes(b, t)
}

// writeCogroup writes a settled cogroup's members and initializer in
// place of a table's source, steps, key and reducer.
func writeCogroup(b *strings.Builder, t Table) {
	b.WriteString("    cogroup:   # the grouped streams its COGROUPKSTREAM-AGGREGATE nodes fold, one aggregator each\n")
	for _, m := range t.Cogroup.Members {
		fmt.Fprintf(b, "      - source: %s%s\n", yamlScalar(m.Source.Value), comment(m.Source.Evidence))
		if len(m.Steps) > 0 {
			b.WriteString("        steps:\n")
			for _, s := range m.Steps {
				fmt.Fprintf(b, "          - %s%s\n", stepText(s), comment(stepNote(s)))
			}
		}
		if g := m.SelectKey; g.Known() {
			fmt.Fprintf(b, "        select_key: %s%s\n", yamlScalar(g.Value), comment(g.Evidence))
		}
		fmt.Fprintf(b, "        aggregate: %s%s\n", singleQuoted(m.Aggregate.Value), comment(m.Aggregate.Evidence))
	}
	fmt.Fprintf(b, "    aggregate: {init: %s}\n", singleQuoted(t.Cogroup.Init))
	fmt.Fprintf(b, "    store: %s   # changelog %s\n", yamlScalar(t.Store), t.Changelog)
	writeStoreSerdes(b, t)
}

// writeSteps writes a chain's steps, each with what it rests on (an
// unknown one's TODO says what it must be); dest names what the chain
// feeds.
func writeSteps(b *strings.Builder, c Chain, dest string) {
	if c.StepsUnknown != "" {
		fmt.Fprintf(b, "    # steps: not known: %s\n", c.StepsUnknown)
	}
	if len(c.Steps) == 0 && c.NoSteps != "" {
		fmt.Fprintf(b, "    # steps: none drafted: %s\n", c.NoSteps)
	}
	if len(c.Steps) == 0 {
		return
	}
	if c.FromTopology {
		b.WriteString("    steps:   # the topology's processors between the source and " + dest + ", in order\n")
	} else {
		b.WriteString("    steps:   # drafted without a topology, from the evidence: what stands between the source and the re-key\n")
	}
	for _, s := range c.Steps {
		fmt.Fprintf(b, "      - %s%s\n", stepText(s), comment(s.Expr.Evidence))
	}
}

// stepText writes one step as a YAML flow mapping.
func stepText(s Step) string {
	switch {
	case s.Kind == spec.StepPeek:
		return "peek"
	case s.Kind == spec.StepProcess:
		return fmt.Sprintf("{process: '', node: %s}", yamlScalar(s.Node))
	case s.Expr.Unsettled() && s.Node == "": // drafted without a topology
		return fmt.Sprintf("{%s: %s}", s.Kind, scalar(s.Expr))
	case s.Expr.Unsettled():
		return fmt.Sprintf("{%s: %s, node: %s}", s.Kind, scalar(s.Expr), yamlScalar(s.Node))
	case s.Node == "": // drafted without a topology
		return fmt.Sprintf("{%s: %s}", s.Kind, singleQuoted(s.Expr.Value))
	}
	return fmt.Sprintf("{%s: %s, node: %s}", s.Kind, singleQuoted(s.Expr.Value), yamlScalar(s.Node))
}

// stepNote is what a step rests on, or, unknown, what it must be.
func stepNote(s Step) string {
	if s.Expr.Unsettled() {
		return s.Expr.Unknown
	}
	return s.Expr.Evidence
}

// writeWindow writes a windowed table's window: its size and advance as
// inferred, its grace unknown (the evidence does not show it); or a TODO
// where the evidence did not settle them.
func writeWindow(b *strings.Builder, w *Window) {
	if w == nil {
		return
	}
	if w.Unknown != "" {
		fmt.Fprintf(b, "    window: %s   # %s\n", yamlScalar("TODO: "+w.Unknown), w.Keys)
		fmt.Fprintf(b, "    # %s\n", w.Evidence)
		return
	}
	adv := ""
	if w.Advance != w.Size {
		adv = ", advance: " + infer.Millis(w.Advance)
	}
	fmt.Fprintf(b, "    window: {size: %s%s, grace: unknown}   # %s; the grace is not in the evidence: write the app's (TimeWindows.ofSizeAndGrace) to judge late inputs\n", infer.Millis(w.Size), adv, w.Keys)
	if w.Suppressed {
		b.WriteString("    # a suppress() follows the store: its output is left out (suppress: until-window-closes emits a window once stream time passes its end plus the grace), so it is not judged\n")
	}
}

// writeOutput writes a table's own output: the topic, its serdes, the
// steps after toStream(), the topology's or the ones found without it.
func writeOutput(b *strings.Builder, o *Output) {
	if o == nil {
		return
	}
	if o.FromTopology {
		fmt.Fprintf(b, "    output: %s   # %s\n", yamlScalar(o.Topic), o.Evidence)
	} else {
		fmt.Fprintf(b, "    output: %s%s\n", yamlScalar(o.Topic), comment(o.Evidence))
	}
	if g := o.Serdes; g.said() {
		fmt.Fprintf(b, "    output_serdes: {value: %s}%s\n", yamlScalar(g.Value), comment(g.Evidence))
	}
	if len(o.TableSteps) > 0 {
		b.WriteString("    table_steps:   # the topology's KTable processors between the store and toStream()\n")
		for _, s := range o.TableSteps {
			b.WriteString("      - " + stepText(s) + comment(s.Expr.Evidence) + "\n")
		}
	}
	if len(o.Steps) == 0 {
		return
	}
	if !o.FromTopology {
		b.WriteString("    output_steps:\n")
		for _, s := range o.Steps {
			if s.Expr.Unsettled() {
				fmt.Fprintf(b, "      - %s: %s\n", s.Kind, scalar(s.Expr))
			} else {
				fmt.Fprintf(b, "      - %s: %s%s\n", s.Kind, yamlScalar(s.Expr.Value), comment(s.Expr.Evidence))
			}
		}
		return
	}
	b.WriteString("    output_steps:   # the topology's processors between toStream() and the output\n")
	for _, s := range o.Steps {
		b.WriteString("      - " + stepText(s) + comment(s.Expr.Evidence) + "\n")
	}
}

// writeJoins writes the joins: section, or why there is none.
func (d *Draft) writeJoins(b *strings.Builder) {
	drafted := 0
	for _, j := range d.Joins {
		if j.Skipped == "" {
			drafted++
		}
	}
	switch {
	case drafted > 0:
		b.WriteString("joins:\n")
	case len(d.Joins) > 0:
		b.WriteString("# joins:\n")
	case d.JoinsNote != "":
		b.WriteString("# joins: " + d.JoinsNote + "\n")
	}
	for _, j := range d.Joins {
		if j.Skipped != "" {
			b.WriteString("  # " + j.Skipped + "\n")
			continue
		}
		fmt.Fprintf(b, "  - output: %s%s\n", scalar(j.Output), comment(j.Output.Evidence))
		fmt.Fprintf(b, "    left: %s\n", scalar(j.Left))
		quoted := make([]string, len(j.Right))
		for i, r := range j.Right {
			quoted[i] = scalar(r)
		}
		right := ""
		if len(j.Nodes) == 0 {
			right = comment("the order of the chain is not known without a topology: check it")
		}
		fmt.Fprintf(b, "    right: [%s]%s\n", strings.Join(quoted, ", "), right)
		if j.Type.Unsettled() {
			fmt.Fprintf(b, "    type: %s\n", scalar(j.Type))
		} else {
			fmt.Fprintf(b, "    type: %s%s\n", j.Type.Value, comment(j.Type.Evidence))
		}
		for _, f := range j.Fields {
			fmt.Fprintf(b, "    # %s\n", f)
		}
		if j.Value.Unsettled() {
			fmt.Fprintf(b, "    value: %s\n", scalar(j.Value))
		} else {
			fmt.Fprintf(b, "    value: %s\n", singleQuoted(j.Value.Value))
		}
	}
}

// writeStreamJoins writes the stream_joins section.
func writeStreamJoins(b *strings.Builder, joins []StreamJoin) {
	if len(joins) == 0 {
		return
	}
	b.WriteString("stream_joins:   # stream.join / leftJoin(table), from the topology\n")
	for _, sj := range joins {
		if sj.Skipped != "" {
			fmt.Fprintf(b, "  # stream join into %s (%s): %s\n", sj.Output, sj.Node, sj.Skipped)
			continue
		}
		fmt.Fprintf(b, "  - output: %s   # %s\n", yamlScalar(sj.Output), sj.Node)
		if len(sj.Merged) > 0 {
			names := []string{yamlScalar(sj.Source.Value)}
			for _, m := range sj.Merged {
				names = append(names, yamlScalar(m))
			}
			fmt.Fprintf(b, "    stream: [%s]\n", strings.Join(names, ", "))
		} else {
			fmt.Fprintf(b, "    stream: %s%s\n", yamlScalar(sj.Source.Value), comment(sj.Source.Evidence))
		}
		writeSteps(b, sj.Chain, "the store")
		fmt.Fprintf(b, "    table: %s\n", scalar(sj.Table))
		fmt.Fprintf(b, "    type: %s   # %s\n", sj.Type.Value, sj.Type.Evidence)
		fmt.Fprintf(b, "    value: %s\n", scalar(sj.Value))
	}
}

// writeCopies writes the copies section: each copy's source, output and
// steps.
func writeCopies(b *strings.Builder, copies []Copy) {
	if len(copies) == 0 {
		return
	}
	b.WriteString("copies:   # builder.stream(source)[stateless steps].to(output), from the topology\n")
	for _, c := range copies {
		fmt.Fprintf(b, "  - source: %s%s\n", yamlScalar(c.Source.Value), comment(c.Source.Evidence))
		fmt.Fprintf(b, "    output: %s\n", yamlScalar(c.Output))
		writeSteps(b, c.Chain, "to()")
	}
}

// said reports whether a guess says anything: a value, its evidence, or
// why it is unknown (an inferred serde with no value is still said).
func (g Guess) said() bool { return g.Value != "" || g.Evidence != "" || g.Unknown != "" }

// scalar writes a guess as a YAML scalar: its value, or a TODO that says
// what it must be.
func scalar(g Guess) string {
	if g.Unsettled() {
		return yamlScalar("TODO: " + g.Unknown)
	}
	return yamlScalar(g.Value)
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

// singleQuoted writes s as a single-quoted YAML scalar.
func singleQuoted(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
