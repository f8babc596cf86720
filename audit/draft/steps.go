package draft

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/topology"
)

// stepKindOf is the spec's step kind for a chain node's operator; "" for
// what no step stands for.
var stepKindOf = map[topology.Op]spec.StepKind{
	topology.OpFilter:        spec.StepFilter,
	topology.OpMapValues:     spec.StepMapValues,
	topology.OpMap:           spec.StepMap,
	topology.OpFlatMapValues: spec.StepFlatMapValues,
	topology.OpFlatMap:       spec.StepFlatMap,
	topology.OpPeek:          spec.StepPeek,
	topology.OpBranch:        spec.StepBranch,
	topology.OpSelectKey:     spec.StepSelectKey,
	topology.OpProcess:       spec.StepProcess,
}

// topologySteps drafts a step for each node of a chain, each a TODO but
// a peek (no lambda to say) and a Processor API node (not modelled); the
// evidence fills in what it can (inferSteps). A chain of one selectKey is
// select_key's, and drafts no step.
func topologySteps(chain []topology.ChainNode) []draftStep {
	if len(chain) > 0 && chain[0].Op == topology.OpMerge {
		chain = chain[1:] // the merge right after the sources is source: [a, b]
	}
	if len(chain) == 1 && chain[0].Op == topology.OpSelectKey {
		return nil
	}
	var out []draftStep
	for _, c := range chain {
		node := c.Name
		if c.Child != "" {
			node = c.Child // the branch taken names the branch
		}
		k, ok := stepKindOf[c.Op]
		switch {
		case c.Op == topology.OpPeek:
			out = append(out, draftStep{kind: spec.StepPeek, node: node})
		case c.Op == topology.OpProcess:
			out = append(out, draftStep{kind: spec.StepProcess, node: node, note: "a Processor API node: kaudit does not model it, so the table is not judged"})
		case ok:
			out = append(out, draftStep{kind: k, expr: "TODO", node: node, note: todoNote(k)})
		default:
			// a node the app named, or a stateful one: the user says what it is
			out = append(out, draftStep{kind: spec.StepProcess, node: node, note: fmt.Sprintf("TODO: node %s (%s): replace process with its operator and lambda (filter, mapValues, flatMapValues, selectKey…), or leave it: the table is then not judged", c.Name, c.Op)})
		}
	}
	return out
}

func todoNote(k spec.StepKind) string {
	switch k {
	case spec.StepFilter:
		return "the predicate, over key and value (filterNot: write filterNot)"
	case spec.StepMapValues:
		return "the new value, e.g. {\"f\": value.g}"
	case spec.StepMap:
		return "[newKey, newValue]"
	case spec.StepFlatMapValues:
		return "a list of values, e.g. regexSplit(lower(value), \"\\\\W+\")"
	case spec.StepFlatMap:
		return "a list of [key, value]"
	case spec.StepBranch:
		return "true for the records of this branch (the first predicate that matches wins)"
	case spec.StepSelectKey:
		return "the new key, e.g. value.orderId"
	}
	return ""
}

// keyInSteps reports whether the drafted steps give the key themselves
// (a selectKey step that is not the chain's last), so that select_key is
// not written.
func (t *draftTable) keyInSteps() bool {
	for _, s := range t.steps {
		if s.kind.KeyChanging() && s.kind != spec.StepProcess {
			return true
		}
	}
	return false
}

// inferSteps fills in the drafted steps from the evidence: with the
// copies equal to their source records (value and timestamp), each
// value-changing step is the identity on these records and a filter keeps
// what has a copy (GuessFilter); else candidate lambdas are tried on the
// copies (a text split into words, field mappings for a mapValues).
func inferSteps(t *draftTable, ev *infer.Evidence, pairs []infer.Pair) {
	if len(t.steps) == 0 {
		return
	}
	src, copies := ev.Topics[cmp.Or(t.evSource, t.source)], ev.Topics[t.repartition]
	if src == nil || copies == nil || copies.Count() == 0 {
		return
	}
	if len(pairs)*10 >= copies.Count()*9 {
		identitySteps(t, fmt.Sprintf("%d/%d copies on %s equal their source record", len(pairs), copies.Count(), t.repartition), func() infer.Guess { return infer.GuessFilter(src, pairs) })
		return
	}
	// the values change on the way: try lambdas for the chain's steps
	var kinds []spec.StepKind
	var tries [][]string
	for _, s := range t.steps {
		kinds = append(kinds, s.kind)
		switch {
		case s.kind == spec.StepFlatMapValues && s.expr == "TODO":
			tries = append(tries, infer.SplitCandidates)
		case s.kind == spec.StepMapValues && s.expr == "TODO":
			g := infer.GuessMapValues(src, copies)
			if g.Value == "" {
				return
			}
			tries = append(tries, []string{g.Value})
		case (s.kind == spec.StepSelectKey) && s.expr == "TODO":
			// the new key: the element's value (groupBy((k, w) -> w)), or a field of it
			tries = append(tries, keyCandidates(copies))
		case s.expr == "TODO" || s.kind == spec.StepProcess:
			return // nothing to try
		default:
			tries = append(tries, []string{s.expr})
		}
	}
	exprs, g := infer.GuessChain(src, copies, kinds, tries)
	if exprs == nil {
		for i := range t.steps {
			if t.steps[i].expr == "TODO" {
				t.steps[i].note += " (" + g.Evidence + ")"
			}
		}
		return
	}
	for i := range t.steps {
		if t.steps[i].expr == "TODO" {
			t.steps[i].expr, t.steps[i].note = exprs[i], "the steps together "+g.Evidence
		}
	}
}

// identitySteps fills in a chain whose records reach the store as they
// are (why says the evidence): each value-changing step is the identity
// on these records, a filter what guess finds (nil: it stays TODO), and
// a last selectKey is select_key's.
func identitySteps(t *draftTable, why string, guess func() infer.Guess) {
	for i := range t.steps {
		s := &t.steps[i]
		if s.expr != "TODO" {
			continue
		}
		switch s.kind {
		case spec.StepMapValues:
			s.expr, s.note = "value", "the identity on these records: "+why
		case spec.StepFlatMapValues:
			s.expr, s.note = "[value]", "each record as it is: "+why
		case spec.StepFilter:
			if guess == nil {
				continue
			}
			g := guess()
			if g.Value != "" {
				s.expr = g.Value
			}
			s.note = g.Evidence
		}
	}
	keyExpr := t.selectKey.Value
	if n := len(t.steps); n > 0 && t.steps[n-1].kind == spec.StepSelectKey && t.chain[len(t.chain)-1].Op == topology.OpSelectKey && keyExpr != "" && keyExpr != "key" {
		t.steps = t.steps[:n-1] // the last selectKey is select_key's
	}
}

// keyCandidates are the key expressions tried after a value-changing
// step: the value itself, or one of its top-level fields.
func keyCandidates(copies *infer.Topic) []string {
	out := []string{"value"}
	for _, rs := range copies.Parts {
		for _, r := range rs {
			if m, ok := r.Value.(map[string]any); ok {
				for _, k := range slices.Sorted(maps.Keys(m)) {
					if spec.IsIdent(k) {
						out = append(out, "value."+k)
					}
				}
			}
			return out
		}
	}
	return out
}

// writeSteps writes a drafted table's steps, each with what it rests on.
func writeSteps(b *strings.Builder, t draftTable) {
	if t.chainErr != "" {
		fmt.Fprintf(b, "    # steps: not known: %s\n", t.chainErr)
	}
	if len(t.steps) == 0 {
		return
	}
	dest := "the store"
	if strings.HasPrefix(t.name, "copy ") {
		dest = "to()"
	}
	b.WriteString("    steps:   # the topology's processors between the source and " + dest + ", in order\n")
	for _, s := range t.steps {
		note := s.note
		if s.expr == "TODO" {
			note = "" // the TODO says it
		}
		fmt.Fprintf(b, "      - %s%s\n", stepText(s), comment(note))
	}
}

// stepText writes one drafted step as a YAML flow mapping.
func stepText(s draftStep) string {
	switch {
	case s.kind == spec.StepPeek:
		return "peek"
	case s.kind == spec.StepProcess:
		return fmt.Sprintf("{process: '', node: %s}", yamlScalar(s.node))
	case s.expr == "TODO":
		return fmt.Sprintf("{%s: %s, node: %s}", s.kind, yamlScalar("TODO: "+s.note), yamlScalar(s.node))
	}
	return fmt.Sprintf("{%s: %s, node: %s}", s.kind, singleQuoted(s.expr), yamlScalar(s.node))
}
