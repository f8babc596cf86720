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
		case c.Op == topology.OpBranch:
			out = append(out, draftStep{kind: k, node: node, note: todoNote(k), splitter: c.Name})
		case ok:
			out = append(out, draftStep{kind: k, node: node, note: todoNote(k)})
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
	if n, of := infer.PairedOrTwin(pairs, copies); n == of || partial(src) && n*10 >= of*9 {
		identitySteps(t, fmt.Sprintf("%d/%d copies on %s equal their source record", len(pairs), copies.Count(), t.repartition), [2]int{len(pairs), copies.Count()}, func() infer.Guess { return infer.GuessFilter(src, pairs) })
		return
	}
	// the values change on the way: try lambdas for the chain's steps
	var kinds []spec.StepKind
	var tries [][]string
	for _, s := range t.steps {
		kinds = append(kinds, s.kind)
		switch {
		case s.kind == spec.StepFlatMapValues && s.open():
			tries = append(tries, infer.SplitCandidates)
		case s.kind == spec.StepMapValues && s.open():
			g := infer.GuessMapValues(src, copies)
			if g.Value == "" {
				return
			}
			tries = append(tries, []string{g.Value})
		case (s.kind == spec.StepSelectKey) && s.open():
			// the new key: the element's value (groupBy((k, w) -> w)), or a field of it
			tries = append(tries, keyCandidates(copies))
		case s.open() || s.kind == spec.StepProcess:
			return // nothing to try
		default:
			tries = append(tries, []string{s.expr})
		}
	}
	exprs, g := infer.GuessChain(src, copies, kinds, tries)
	if exprs == nil {
		for i := range t.steps {
			if t.steps[i].open() {
				t.steps[i].note += " (" + g.Evidence + ")"
			}
		}
		return
	}
	for i := range t.steps {
		if t.steps[i].open() {
			t.steps[i].expr, t.steps[i].note, t.steps[i].matched = exprs[i], "the steps together "+g.Evidence, [2]int{g.Explained, g.Of}
		}
	}
}

// changelogSteps fills in the steps of a table with no repartition on
// the way (groupByKey after a split() or a filter) from its changelog:
// when its records are the source records as they are (value and
// timestamp, as a latest reduce writes them), the steps are the identity
// and a filter or branch keeps what reached the store. A store that
// changes the values (a count, a sum) tells nothing here.
func changelogSteps(t *draftTable, ev *infer.Evidence) {
	if !slices.ContainsFunc(t.steps, draftStep.open) {
		return
	}
	src, cl := ev.Topics[cmp.Or(t.evSource, t.source)], ev.Topics[t.changelog]
	if src == nil || cl == nil || cl.Count() == 0 {
		return
	}
	pairs := infer.MatchCopies(src, cl)
	if len(pairs)*10 < cl.Count()*9 {
		return
	}
	identitySteps(t, fmt.Sprintf("%d/%d records of its changelog %s equal a source record", len(pairs), cl.Count(), t.changelog), [2]int{len(pairs), cl.Count()}, func() infer.Guess { return infer.GuessFilterOverwritten(src, pairs) })
}

// defaultBranches fills in each split()'s default branch (the branch
// node Kafka Streams names after the splitter with 0, defaultBranch())
// from its siblings: when every other branch's predicate is inferred, the
// default branch takes the records none of them takes. It returns the
// tables whose steps it changed, for their other steps to be inferred
// again.
func defaultBranches(lay *topology.Layout, tables []draftTable) []int {
	settled := map[string]string{} // branch node -> its predicate; "" when two guesses differ
	for _, t := range tables {
		for _, s := range t.steps {
			if s.kind != spec.StepBranch || s.open() {
				continue
			}
			if e, ok := settled[s.node]; ok && e != s.expr {
				settled[s.node] = ""
				continue
			}
			settled[s.node] = s.expr
		}
	}
	var changed []int
	for i := range tables {
		for j := range tables[i].steps {
			s := &tables[i].steps[j]
			if s.kind != spec.StepBranch || !s.open() || s.splitter == "" || s.node != s.splitter+"0" {
				continue
			}
			var preds, from []string
			for _, b := range lay.Successors(s.splitter) {
				if b == s.node {
					continue
				}
				e := settled[b]
				if e == "" {
					preds = nil
					break
				}
				preds, from = append(preds, "!("+e+")"), append(from, b)
			}
			if len(preds) == 0 {
				continue
			}
			s.expr = strings.Join(preds, " && ")
			s.note = fmt.Sprintf("split()'s default branch: the records none of %s takes, as inferred there", strings.Join(from, ", "))
			changed = append(changed, i)
		}
	}
	return changed
}

// stepsAgain infers a table's steps again once one of them is known from
// elsewhere (a default branch from its siblings).
func stepsAgain(t *draftTable, ev *infer.Evidence) {
	if t.repartition == "" {
		changelogSteps(t, ev)
		return
	}
	if src, copies := ev.Topics[cmp.Or(t.evSource, t.source)], ev.Topics[t.repartition]; src != nil && copies != nil {
		inferSteps(t, ev, infer.MatchCopies(src, copies))
	}
}

// identitySteps fills in a chain whose records reach the store as they
// are (why says the evidence, matched how many records it counts of how
// many): each value-changing step is the identity on these records, a
// filter what guess finds (nil: it stays open), and a last selectKey is
// select_key's.
func identitySteps(t *draftTable, why string, matched [2]int, guess func() infer.Guess) {
	for i := range t.steps {
		s := &t.steps[i]
		if !s.open() {
			continue
		}
		switch s.kind {
		case spec.StepMapValues:
			s.expr, s.note, s.matched = "value", "the identity on these records: "+why, matched
		case spec.StepFlatMapValues:
			s.expr, s.note, s.matched = "[value]", "each record as it is: "+why, matched
		case spec.StepMap:
			// the values pass as they are: a last map only re-keys, as
			// select_key's guess says (map((k, user) -> pair(user, user)))
			if k := t.selectKey.Value; k != "" && i == len(t.steps)-1 {
				s.expr, s.note, s.matched = "["+k+", value]", "the values as they are ("+why+"); the key "+k+" "+t.selectKey.Evidence, matched
			}
		case spec.StepFilter, spec.StepBranch:
			// a branch's predicate, as the spec has it, is true for the
			// records of this branch: what tells them from the rest
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
