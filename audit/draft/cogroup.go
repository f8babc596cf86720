package draft

import (
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/audit/topology"
)

// draftCogroup is a cogroup's store (several COGROUPKSTREAM-AGGREGATE
// nodes writing it): the drafted table that stands for it, its grouped
// streams (each drafted as a table's chain is, with no store) and, once
// the evidence settles them, their aggregators.
type draftCogroup struct {
	table   string // the drafted table of the store
	members []draftTable
	guess   *infer.CogroupGuess
}

// draftCogroups finds the cogroups among the drafted tables' stores and
// drafts each grouped stream: its source, its chain up to its
// aggregator, the repartition topic on the way.
func draftCogroups(lay *topology.Layout, tables []draftTable) []draftCogroup {
	var out []draftCogroup
	for _, t := range tables {
		s, ok := lay.Store(t.store)
		if !ok || len(s.Writers) < 2 || !allPrefixed(s.Writers, "COGROUPKSTREAM-AGGREGATE-") {
			continue
		}
		cg := draftCogroup{table: t.name}
		for _, w := range s.Writers {
			srcs := lay.UpstreamSources(w)
			if len(srcs) != 1 {
				cg.members = nil
				break
			}
			chain, hops, err := lay.NodeChain(srcs[0], w)
			if err != nil || len(hops) > 1 {
				cg.members = nil
				break
			}
			m := draftTable{name: fmt.Sprintf("cogroup %s ← %s", t.store, srcs[0]), source: srcs[0], evSource: srcs[0], chain: chain, rekeyed: len(hops) == 1}
			if len(hops) == 1 {
				m.repartition = hops[0]
			}
			m.steps = topologySteps(chain)
			cg.members = append(cg.members, m)
		}
		if len(cg.members) > 1 {
			out = append(out, cg)
		}
	}
	return out
}

func allPrefixed(names []string, prefix string) bool {
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			return false
		}
	}
	return true
}

// inferCogroup settles a cogroup's aggregators once its grouped streams'
// steps and keys are inferred (each a TODO leaves it unsettled).
func inferCogroup(cg *draftCogroup, changelog string, ev *infer.Evidence) {
	var inputs []infer.CogroupInput
	for _, m := range cg.members {
		var steps []*spec.Step
		for _, s := range m.steps {
			if s.open() || s.kind == spec.StepProcess {
				return
			}
			st, err := spec.NewStep(s.kind, s.expr, s.node)
			if err != nil {
				return
			}
			steps = append(steps, st)
		}
		if m.rekeyed && !m.keyInSteps() {
			if m.selectKey.Value == "" {
				return
			}
			if m.selectKey.Value != "key" {
				st, err := spec.NewStep(spec.StepSelectKey, m.selectKey.Value, "")
				if err != nil {
					return
				}
				steps = append(steps, st)
			}
		}
		inputs = append(inputs, infer.CogroupInput{Source: ev.Topics[m.evSource], Steps: steps})
	}
	g := infer.GuessCogroup(inputs, ev.Topics[changelog])
	if len(g.Aggregators) == len(cg.members) {
		cg.guess = &g
	}
}
