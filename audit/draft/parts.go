package draft

import (
	"fmt"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit/spec"
)

// Part is one guess of a table or join, named by the field of the spec it
// fills: source, steps[0], select_key, window, reduce, output,
// output_steps[0], cogroup[1].aggregate, type, value…
type Part struct {
	Field string
	Guess
}

// Parts lists the table's guesses, each named by its field, in the
// spec's order; a peek and a Processor API node are no guess.
func (t Table) Parts() []Part {
	var out []Part
	add := func(field string, g Guess) {
		if g.said() {
			out = append(out, Part{Field: field, Guess: g})
		}
	}
	switch {
	case t.Cogroup != nil:
		for i, m := range t.Cogroup.Members {
			f := fmt.Sprintf("cogroup[%d].", i)
			add(f+"source", m.Source)
			stepParts(add, f+"steps", m.Steps)
			add(f+"select_key", m.SelectKey)
			add(f+"aggregate", m.Aggregate)
		}
	case t.Regroup != nil:
		add("select_key", t.SelectKey)
		add("reduce", t.Reduce)
	default:
		src := t.Source
		if len(t.Merged) > 0 {
			src.Value = strings.Join(append([]string{src.Value}, t.Merged...), ", ")
		}
		add("source", src)
		stepParts(add, "steps", t.Steps)
		add("select_key", t.SelectKey)
		if w := t.Window; w != nil {
			add("window", Guess{Value: w.Describe(), Evidence: w.Evidence, Explained: w.Explained, Of: w.Of, Unknown: w.Unknown, Candidates: w.Candidates})
		}
		add("reduce", t.Reduce)
		add("serdes", t.Serdes)
	}
	add("store_serdes", t.StoreSerdes)
	if o := t.Output; o != nil {
		add("output", Guess{Value: o.Topic, Evidence: o.Evidence})
		add("output_serdes", o.Serdes)
		stepParts(add, "table_steps", o.TableSteps)
		stepParts(add, "output_steps", o.Steps)
	}
	return out
}

// stepParts adds each step's lambda as a part.
func stepParts(add func(string, Guess), field string, steps []Step) {
	for i, s := range steps {
		if s.Kind != spec.StepPeek && s.Kind != spec.StepProcess {
			add(fmt.Sprintf("%s[%d]", field, i), s.Expr)
		}
	}
}

// Parts lists the join's guesses: its output, type and value.
func (j Join) Parts() []Part {
	var out []Part
	for _, p := range []Part{{"output", j.Output}, {"type", j.Type}, {"value", j.Value}} {
		if p.said() {
			out = append(out, p)
		}
	}
	return out
}

// Describe says a window as the report does: "size 1m0s, advance 30s";
// "" where the evidence does not settle it.
func (w *Window) Describe() string {
	if w == nil || w.Size == 0 {
		return ""
	}
	return fmt.Sprintf("size %s, advance %s", time.Duration(w.Size)*time.Millisecond, time.Duration(w.Advance)*time.Millisecond)
}

// Label says a step as the report does: its kind, its lambda, its node.
func (s Step) Label() string {
	out := string(s.Kind)
	switch {
	case s.Expr.Unsettled():
		out += " (not known: " + s.Expr.Unknown + ")"
	case s.Expr.Value != "":
		out += ": " + s.Expr.Value
	}
	if s.Node != "" && s.Kind != spec.StepPeek {
		out += " (node " + s.Node + ")"
	}
	return out
}
