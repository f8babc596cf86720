package draft

import (
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/topology"
)

// draftStreamJoin is one stream-table join of the topology: its stream
// side drafted as a table's chain is (source, steps, the repartition
// topic before the join), the table it looks up, its output.
type draftStreamJoin struct {
	side   draftTable
	node   string
	table  Guess
	output string
	inner  bool
	why    string // why it cannot be drafted, "" when it can
}

// draftStreamJoins drafts each stream-table join of the topology whose
// table is a drafted table, one per output it reaches.
func draftStreamJoins(lay *topology.Layout, tables []draftTable) []draftStreamJoin {
	byStore := map[string]string{}
	for _, t := range tables {
		byStore[t.store] = t.name
	}
	var out []draftStreamJoin
	for _, j := range lay.Joins {
		if j.Kind != topology.JoinStreamTable {
			continue
		}
		table := tableOf(j.RightStores, byStore)
		srcs := lay.UpstreamSources(j.Node)
		for _, output := range j.Outputs {
			sj := draftStreamJoin{node: j.Node, table: table, output: output, inner: strings.HasPrefix(j.Node, "KSTREAM-JOIN-")}
			sj.side.name = "stream join into " + output
			if len(j.RightStores) == 0 {
				sj.why = "a join with a GlobalKTable (its store is global): not modelled, so " + output + " is not judged"
				out = append(out, sj)
				continue
			}
			switch len(srcs) {
			case 0:
				sj.why = "no source topic of the topology reaches " + j.Node
			case 1:
				sj.side.source = srcs[0]
			default:
				sj.side.source, sj.side.merged = srcs[0], srcs[1:]
			}
			if sj.why == "" {
				chain, hops, err := lay.NodeChain(sj.side.source, j.Node)
				switch {
				case err != nil:
					sj.side.chainErr = err.Error()
				case len(hops) > 1:
					sj.side.chainErr = fmt.Sprintf("the stream crosses %d internal topics before the join", len(hops))
				default:
					sj.side.chain = chain
					if len(hops) == 1 {
						sj.side.repartition, sj.side.rekeyed = hops[0], true
					}
				}
				sj.side.steps = topologySteps(sj.side.chain)
			}
			out = append(out, sj)
		}
	}
	return out
}

// settleSelectKey states the stream side's last selectKey as a step,
// which a table's draft leaves to select_key: the key guessed from the
// repartition copies, else a TODO.
func (sj *draftStreamJoin) settleSelectKey() { settleSelectKey(&sj.side) }

// settleSelectKey states a chain's last selectKey as a step (a stream
// join's side, a copy), which a table's draft leaves to select_key: the
// key guessed from the records downstream, else a TODO.
func settleSelectKey(t *draftTable) {
	if len(t.chain) == 0 || t.chain[len(t.chain)-1].Op != topology.OpSelectKey {
		return
	}
	if n := len(t.steps); n == 0 || t.steps[n-1].kind != spec.StepSelectKey {
		last := t.chain[len(t.chain)-1]
		t.steps = append(t.steps, draftStep{kind: spec.StepSelectKey, node: last.Name, note: todoNote(spec.StepSelectKey)})
	}
	s := &t.steps[len(t.steps)-1]
	if g := t.selectKey; s.open() && g.Value != "" && g.Value != "key" {
		s.expr, s.note, s.matched = g.Value, g.Evidence, [2]int{g.Explained, g.Of}
	}
}
