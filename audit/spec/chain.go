package spec

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/topology"
)

// unmodelled says why a table's steps cannot be evaluated: a step left
// TODO, or a Processor API node; "" when every step can be.
func unmodelled(t *TableSpec, nodes map[*Step]string) string {
	return unmodelledSteps(t, t.NotModelled(), nodes)
}

// unmodelledIn is unmodelled for a table's own steps (its inputs'), and
// outputUnmodelled for its output steps: a TODO after toStream() leaves
// only the output unjudged, not the store.
func unmodelledIn(t *TableSpec, nodes map[*Step]string) string {
	return unmodelledSteps(t, slices.DeleteFunc(t.NotModelled(), func(st *Step) bool { return slices.Contains(t.OutputSteps, st) || slices.Contains(t.TableSteps, st) }), nodes)
}

func outputUnmodelled(t *TableSpec, nodes map[*Step]string) string {
	steps := slices.DeleteFunc(t.NotModelled(), func(st *Step) bool { return !slices.Contains(t.OutputSteps, st) && !slices.Contains(t.TableSteps, st) })
	if len(steps) == 0 {
		return ""
	}
	why := unmodelledSteps(t, steps, nodes)
	return strings.Replace(strings.TrimSuffix(why, ", so the records through it are not judged"), "its chain holds", "its output steps hold", 1)
}

// unsureSteps names the filters and branches whose predicate is TODO
// (PlannedTable.Unsure): "filter KSTREAM-FILTER-0000000001", or "a filter
// before the re-key" for one the draft supposes without a topology.
func unsureSteps(steps []*Step, nodes map[*Step]string) string {
	var names []string
	for _, st := range steps {
		switch {
		case st.Node != "":
			names = append(names, string(st.Kind)+" "+st.Node)
		case nodes[st] != "":
			names = append(names, string(st.Kind)+" "+nodes[st])
		case st.Line > 0:
			names = append(names, "a "+string(st.Kind)+" at line "+fmt.Sprint(st.Line))
		default:
			names = append(names, "a "+string(st.Kind)) // a spec built in code: the table names it
		}
	}
	return strings.Join(names, ", ")
}

func unmodelledSteps(t *TableSpec, steps []*Step, nodes map[*Step]string) string {
	var names []string
	for _, st := range steps {
		name := string(st.Kind)
		switch {
		case st.Node != "":
			name += " " + st.Node
		case nodes[st] != "":
			name += " " + nodes[st]
		}
		if st.Kind != StepProcess {
			name += " (TODO)"
		}
		names = append(names, name+atLine(st.Line))
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("table %s: its chain holds what kaudit cannot evaluate (%s), so the records through it are not judged", t.Name, strings.Join(names, ", "))
}

// judgeChain ties a table's steps to the topology's chain from its source
// to its store, and its output steps to the chain from its store to its
// output: a node the spec leaves out, a step with no node, or a node of
// another kind make the table (or its output) unjudged, with the reason.
func judgeChain(lay *topology.Layout, t *TableSpec, pt *PlannedTable, nodes map[*Step]string) {
	chain, err := lay.SourceChain(t.Source, pt.Store)
	if err != nil {
		if pt.Unjudged == "" {
			pt.Unjudged = fmt.Sprintf("table %s: %v", t.Name, err)
		}
	} else {
		pt.Chain = chain
		if why := mergedChains(lay, t, pt.Store, chain); why != "" && pt.Unjudged == "" {
			pt.Unjudged = fmt.Sprintf("table %s: %s", t.Name, why)
		}
		if len(t.Merged) > 0 {
			chain = chain[1:] // the merge is source:'s
		}
		if why := matchChain(t.Chain(), chain, nodes); why != "" && pt.Unjudged == "" {
			pt.Unjudged = fmt.Sprintf("table %s: between %s and store %s %s", t.Name, t.Source, pt.Store, why)
		}
	}
	judgeOutput(lay, t, pt, nodes)
}

// judgeOutput ties a table's output steps to the topology's chain from
// its store to its output: toStream() (and suppress()), then the steps.
func judgeOutput(lay *topology.Layout, t *TableSpec, pt *PlannedTable, nodes map[*Step]string) {
	if t.Output == "" {
		return
	}
	oc, err := lay.OutputChain(pt.Store, t.Output)
	if err != nil {
		pt.OutputUnjudged = fmt.Sprintf("table %s: %v", t.Name, err)
		return
	}
	pt.OutputChain = oc
	// toStream() and suppress() are the output's own: the KTable
	// operations before toStream() are the table steps, the steps follow it
	var before, rest []topology.ChainNode
	toStream := false
	for _, c := range oc {
		switch {
		case c.Op == topology.OpToStream && !toStream:
			toStream = true
		case c.Op == topology.OpSuppress && !toStream && t.Suppress != "":
		case !toStream && (c.Op == topology.OpTableFilter || c.Op == topology.OpTableMapValues):
			before = append(before, c)
		default:
			rest = append(rest, c)
		}
	}
	switch {
	case !toStream:
		pt.OutputUnjudged = fmt.Sprintf("table %s: the topology has no toStream() between store %s and %s", t.Name, pt.Store, t.Output)
	case matchChain(t.TableSteps, before, nodes) != "":
		pt.OutputUnjudged = fmt.Sprintf("table %s: between store %s and toStream() %s (KTable#filter and mapValues are table_steps)", t.Name, pt.Store, matchChain(t.TableSteps, before, nodes))
	default:
		why := matchChain(t.OutputSteps, rest, nodes)
		switch {
		case why != "" && t.OutputKeyChanging():
			pt.OutputUnjudged = fmt.Sprintf("table %s: its output steps change the key, which kaudit does not model for a table's output (and between store %s and %s %s)", t.Name, pt.Store, t.Output, why)
		case why != "":
			pt.OutputUnjudged = fmt.Sprintf("table %s: between store %s and %s %s", t.Name, pt.Store, t.Output, why)
		case t.OutputRekeyNotModelled() != nil:
			st := t.OutputRekeyNotModelled()
			pt.OutputUnjudged = fmt.Sprintf("table %s: its output step %s at node %s changes the key other than one state to one record (a map or selectKey is modelled), so %s is not judged", t.Name, st.Kind, nodes[st], t.Output)
		}
	}
}

// mergedChains checks that a table's chain begins with the merge of
// exactly its sources (source: [a, b]), or with no merge when it has one
// source, and that every merged source reaches the store through the same
// chain: a step before the merge, on one source only, is not modelled.
func mergedChains(lay *topology.Layout, t *TableSpec, store string, chain []topology.ChainNode) string {
	merges := len(chain) > 0 && chain[0].Op == topology.OpMerge
	switch {
	case len(t.Merged) == 0 && merges:
		return fmt.Sprintf("the topology merges other streams into %s's at %s: name every topic merged in source: [%s, …]", t.Source, chain[0].Name, t.Source)
	case len(t.Merged) == 0:
		return ""
	case !merges:
		return fmt.Sprintf("source: names %d topics, but the topology's chain from %s to store %s does not begin with their merge (steps before a merge are not modelled)", 1+len(t.Merged), t.Source, store)
	}
	for _, m := range t.Merged {
		mc, err := lay.SourceChain(m, store)
		if err != nil {
			return err.Error()
		}
		if !slices.Equal(mc, chain) {
			return fmt.Sprintf("%s reaches store %s through other nodes than %s (steps before a merge are not modelled)", m, store, t.Source)
		}
	}
	if n := lay.MergeInputs(chain[0].Name); n != 1+len(t.Merged) {
		return fmt.Sprintf("the merge %s has %d inputs, source: names %d topics", chain[0].Name, n, 1+len(t.Merged))
	}
	return ""
}

// chainFits reports whether the table's steps describe the topology's
// chain from its source to store, node for node (kaudit picks the store
// of a table this way when its source feeds several, as a split does).
func chainFits(lay *topology.Layout, t *TableSpec, store string) bool {
	chain, err := lay.SourceChain(t.Source, store)
	if err != nil || mergedChains(lay, t, store, chain) != "" {
		return false
	}
	if len(t.Merged) > 0 {
		chain = chain[1:]
	}
	return len(chain) > 0 && matchChain(t.Chain(), chain, map[*Step]string{}) == ""
}

// branchesAgree reports whether each branch step of the table's chain
// stands for the split() branch the topology's chain to store takes, by
// its place: the spec writes the k-th branch of split().branch(p1)…
// as !(p1) && … && pk, k-1 negated predicates and its own, and the default
// branch as every predicate negated; Kafka Streams names the k-th branch
// node after its splitter with k, the default with 0. A predicate that does
// not read so (a TODO, a single negation) agrees with every branch.
func branchesAgree(lay *topology.Layout, t *TableSpec, store string) bool {
	chain, err := lay.SourceChain(t.Source, store)
	if err != nil {
		return false
	}
	var branches []topology.ChainNode
	for _, c := range chain {
		if c.Op == topology.OpBranch && c.Child != "" {
			branches = append(branches, c)
		}
	}
	i := 0
	for _, st := range t.Steps {
		if st.Kind != StepBranch {
			continue
		}
		if i >= len(branches) {
			return false
		}
		c := branches[i]
		i++
		idx, err := strconv.Atoi(strings.TrimPrefix(c.Child, c.Name))
		want, known := branchIndex(st.Expr)
		if err != nil || !strings.HasPrefix(c.Child, c.Name) || !known || st.Unknown != "" {
			continue // a branch named with Branched.as, or a predicate that does not say
		}
		if idx != want {
			return false
		}
	}
	return true
}

// branchIndex reads a branch predicate as docs/spec.md writes a split()'s
// branches: k-1 negated conjuncts and a k-th that is not: branch k; every
// conjunct negated: the default branch, 0. false where it does not read so
// (a TODO).
func branchIndex(expr string) (int, bool) {
	if isTODO(expr) {
		return 0, false
	}
	conj := topLevel(expr, "&&")
	// the leading negated conjuncts are the earlier branches'; what
	// follows is the branch's own predicate, itself perhaps a conjunction
	// (value != nil && value % 2 == 0 is branch 1)
	neg := 0
	for _, c := range conj {
		c = strings.TrimSpace(c)
		if !strings.HasPrefix(c, "!(") || !strings.HasSuffix(c, ")") || len(topLevel(c[1:], "&&")) != 1 {
			break
		}
		neg++
	}
	if neg == len(conj) {
		return 0, true
	}
	for _, c := range conj[neg:] {
		if strings.HasPrefix(strings.TrimSpace(c), "!(") {
			return 0, false // a negation after the own predicate began: not read
		}
	}
	return neg + 1, true
}

// topLevel splits s around sep where it stands outside parentheses,
// brackets and quotes.
func topLevel(s, sep string) []string {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case depth == 0 && strings.HasPrefix(s[i:], sep):
			out = append(out, s[start:i])
			start = i + len(sep)
			i += len(sep) - 1
		}
	}
	return append(out, s[start:])
}

// compatible lists the step kinds each operator of the topology may be.
var compatible = map[topology.Op][]StepKind{
	topology.OpFilter:         {StepFilter, StepFilterNot},
	topology.OpMapValues:      {StepMapValues},
	topology.OpMap:            {StepMap},
	topology.OpFlatMapValues:  {StepFlatMapValues},
	topology.OpFlatMap:        {StepFlatMap},
	topology.OpPeek:           {StepPeek},
	topology.OpBranch:         {StepBranch},
	topology.OpTableFilter:    {StepFilter, StepFilterNot},
	topology.OpTableMapValues: {StepMapValues},
	topology.OpSelectKey:      {StepSelectKey, StepGroupBy},
	topology.OpProcess:        {StepProcess},
}

// matchChain says how the spec's steps and the topology's chain differ,
// "" when each step is its node's in order. A peek the spec leaves out is
// no difference (it changes nothing); a node the app named matches a step
// of any kind in its place, or the step that names it. nodes gets each
// step's node.
func matchChain(steps []*Step, chain []topology.ChainNode, nodes map[*Step]string) string {
	i := 0
	for j := 0; j < len(chain); j++ {
		c := chain[j]
		var st *Step
		if i < len(steps) {
			st = steps[i]
		}
		switch {
		case st != nil && st.Node != "" && (st.Node == c.Name || st.Node == c.Child):
		case c.Op == topology.OpPeek && (st == nil || st.Kind != StepPeek):
			continue // a peek changes nothing
		case c.Op == topology.OpMerge:
			return fmt.Sprintf("the topology merges streams at %s after other steps, which kaudit does not model (a merge right after the sources is source: [a, b])", c.Name)
		case c.Op == topology.OpStateful || c.Op == topology.OpToStream || c.Op == topology.OpSuppress:
			return fmt.Sprintf("the topology has %s, a stateful operation kaudit does not model on the way", c.Name)
		case st == nil:
			return fmt.Sprintf("the topology has %s, which the spec's steps leave out: add it to steps, in topology order", c)
		case st.Node != "":
			return fmt.Sprintf("the spec's step %d names node %s, but the topology's node there is %s", i+1, st.Node, c)
		case !fits(st, c):
			// a node left out (the step fits a later node), a step too many
			// (the node fits a later step), or another kind
			for _, later := range chain[j+1:] {
				if fits(st, later) {
					return fmt.Sprintf("the topology has %s, which the spec's steps leave out: add it to steps, in topology order", c)
				}
			}
			for _, later := range steps[i+1:] {
				if fits(later, c) {
					return fmt.Sprintf("the spec's step %d (%s%s) has no node in the topology", i+1, st.Kind, commaLine(st.Line))
				}
			}
			return fmt.Sprintf("the spec's step %d (%s%s) does not match the topology's node there, %s", i+1, st.Kind, commaLine(st.Line), c)
		}
		nodes[st] = c.Name
		i++
	}
	if i < len(steps) {
		st := steps[i]
		return fmt.Sprintf("the spec's step %d (%s%s) has no node in the topology", i+1, st.Kind, commaLine(st.Line))
	}
	return ""
}

// atLine is " at line N" for a step's line, "" for a spec built in code
// (the table or node named beside it says which).
func atLine(line int) string {
	if line <= 0 {
		return ""
	}
	return fmt.Sprintf(" at line %d", line)
}

// commaLine is ", line N" for a step's line, "" for a spec built in code.
func commaLine(line int) string {
	if line <= 0 {
		return ""
	}
	return fmt.Sprintf(", line %d", line)
}

// fits reports whether a step can stand for a chain node: its kind is
// the node's operator's, or the app named the node.
func fits(st *Step, c topology.ChainNode) bool {
	if c.Op == topology.OpNamed || st.Kind == StepProcess {
		return true // a process step says the node is not modelled, whatever it is
	}
	for _, k := range compatible[c.Op] {
		if k == st.Kind {
			return true
		}
	}
	return false
}
