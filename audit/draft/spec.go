package draft

import (
	"github.com/kaudit/kaudit/audit/spec"
)

// SpecName is the name a draft's spec goes by in errors and notes (its
// File): it has no file and no lines.
const SpecName = "the inferred spec"

// Spec is the draft as the spec kaudit diff audits with, built from its
// guesses: what the evidence does not settle leaves its part unjudged,
// never guessed. A table whose source is unknown is left out (Dropped),
// with the joins over it; one whose key, window or reducer is unknown is
// not judged (Unsettled); a join whose type is unknown is not judged, and
// one whose joiner is unknown checks presence only; an unknown step is
// not evaluated. ErrNoTable when no table and no copy is left.
func (d *Draft) Spec() (*spec.Spec, error) {
	s := &spec.Spec{File: SpecName, AppID: d.AppID, Topology: d.TopologyFile}
	if sd := d.Serdes; sd != nil {
		s.Serdes = spec.Serdes{Key: sd.Key.Value, Value: sd.Value.Value}
	}
	dropped := map[string]bool{}
	for _, t := range d.Tables {
		if t.Regroup == nil && t.Cogroup == nil && !t.Source.Known() {
			s.DropTable(t.Name, t.Source.Unknown)
			dropped[t.Name] = true
			continue
		}
		s.Tables = append(s.Tables, tableSpec(t))
	}
	for _, j := range d.Joins {
		if j.Skipped != "" {
			continue
		}
		if js := joinSpec(j, dropped); js != nil {
			s.Joins = append(s.Joins, js)
		} else {
			s.DropJoin(named(j.Output))
		}
	}
	for _, j := range d.StreamJoins {
		if j.Skipped != "" {
			continue
		}
		if !j.Source.Known() || !j.Table.Known() || dropped[j.Table.Value] {
			s.DropStreamJoin(j.Output)
			continue
		}
		s.StreamJoins = append(s.StreamJoins, &spec.StreamJoinSpec{Output: j.Output, StreamList: sourceList(j.Chain), Steps: stepSpecs(j.Steps),
			Table: j.Table.Value, Type: spec.JoinType(j.Type.Value), Value: j.Value.Value})
	}
	for _, c := range d.Copies {
		s.Copies = append(s.Copies, &spec.CopySpec{Source: c.Source.Value, Output: c.Output, Steps: stepSpecs(c.Steps)})
	}
	if len(s.Tables) == 0 && len(s.Copies) == 0 {
		return nil, ErrNoTable
	}
	return spec.New(s) // its errors name the spec (SpecName) and the field
}

// tableSpec is a table of the draft as the spec's, its unknowns
// unsettled.
func tableSpec(t Table) *spec.TableSpec {
	ts := &spec.TableSpec{Name: t.Name, Store: t.Store}
	if g := t.StoreSerdes; g.said() {
		ts.StoreSerdes = &spec.Serdes{Value: g.Value}
	}
	outputSpec(ts, t.Output)
	switch {
	case t.Cogroup != nil:
		for _, m := range t.Cogroup.Members {
			ts.Cogroup = append(ts.Cogroup, &spec.CogroupMember{SourceList: sourceList(m.Chain), Steps: stepSpecs(m.Steps),
				SelectKeyExpr: m.SelectKey.Value, Aggregate: m.Aggregate.Value})
		}
		ts.Aggregate = &spec.Aggregate{Init: t.Cogroup.Init}
		return ts
	case t.Regroup != nil:
		ts.Regroup = t.Regroup.Of
		if t.SelectKey.Unsettled() {
			ts.KeyUnsettled(t.SelectKey.Unknown)
		} else {
			ts.SelectKeyExpr = t.SelectKey.Value
		}
		switch {
		case t.Reduce.Unsettled():
			ts.ReducerUnsettled(t.Reduce.Unknown)
		case t.Regroup.Sum != "":
			ts.Aggregate = &spec.Aggregate{Init: "0", Expr: "agg + value." + t.Regroup.Sum, Subtract: "agg - value." + t.Regroup.Sum}
		default:
			ts.Reducer = reducer(t.Reduce.Value)
		}
		return ts
	}
	ts.SourceList, ts.Steps = sourceList(t.Chain), stepSpecs(t.Steps)
	switch g := t.SelectKey; {
	case g.Unsettled():
		ts.KeyUnsettled(g.Unknown)
	case g.Value != "key": // the key unchanged: no select_key
		ts.SelectKeyExpr = g.Value
	}
	switch w := t.Window; {
	case w == nil:
	case w.Unknown != "":
		ts.WindowUnsettled(w.Unknown)
	default:
		ts.Window = spec.NewWindow(w.Size, w.Advance, 0, true) // the grace is not in the evidence
	}
	if t.Reduce.Unsettled() {
		ts.ReducerUnsettled(t.Reduce.Unknown)
	} else {
		ts.Reducer = reducer(t.Reduce.Value)
	}
	if g := t.Serdes; g.said() {
		ts.Serdes = &spec.Serdes{Value: g.Value}
	}
	ts.Repartition = t.Repartition
	return ts
}

// outputSpec sets a table's output, its serdes and steps.
func outputSpec(ts *spec.TableSpec, o *Output) {
	if o == nil {
		return
	}
	ts.Output, ts.OutputSteps, ts.TableSteps = o.Topic, stepSpecs(o.Steps), stepSpecs(o.TableSteps)
	if g := o.Serdes; g.said() {
		ts.OutputSerdes = &spec.Serdes{Value: g.Value}
	}
}

// reducer is a reducer the draft settled. One that does not parse is
// spec.New's to report, naming the table's field, as a spec's is.
func reducer(s string) spec.Reducer {
	r, _ := spec.ParseReducer(s) //nolint:errcheck // spec.New reports it
	return r
}

// joinSpec is a join of the draft as the spec's, nil when its output or
// a table of it is unknown or left out.
func joinSpec(j Join, dropped map[string]bool) *spec.JoinSpec {
	if !j.Output.Known() || !j.Left.Known() || dropped[j.Left.Value] {
		return nil
	}
	js := &spec.JoinSpec{Output: j.Output.Value, Left: j.Left.Value, Type: spec.JoinType(j.Type.Value), Value: j.Value.Value}
	for _, r := range j.Right {
		if !r.Known() || dropped[r.Value] {
			return nil
		}
		js.Right = append(js.Right, r.Value)
	}
	if j.Type.Unsettled() {
		js.TypeUnsettled(j.Type.Unknown)
	}
	return js
}

// named is how the draft names a guess it cannot settle where a value
// belongs, as kaudit init writes it: TODO, and what it must be.
func named(g Guess) string {
	if g.Unsettled() {
		return "TODO: " + g.Unknown
	}
	return g.Value
}

// sourceList is a chain's source: and the topics merged into it.
func sourceList(c Chain) spec.StringList {
	if c.Source.Value == "" {
		return nil
	}
	return append(spec.StringList{c.Source.Value}, c.Merged...)
}

// stepSpecs are a chain's steps as the spec's: an unknown one not
// evaluated, a peek with no node (as the draft writes it).
func stepSpecs(steps []Step) []*spec.Step {
	var out []*spec.Step
	for _, s := range steps {
		switch {
		case s.Kind == spec.StepPeek:
			out = append(out, &spec.Step{Kind: s.Kind})
		case s.Kind == spec.StepProcess:
			out = append(out, &spec.Step{Kind: s.Kind, Node: s.Node})
		case s.Expr.Unsettled():
			out = append(out, spec.UnknownStep(s.Kind, s.Node, s.Expr.Unknown))
		default:
			out = append(out, &spec.Step{Kind: s.Kind, Expr: s.Expr.Value, Node: s.Node})
		}
	}
	return out
}
