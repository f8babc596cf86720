package draft

import (
	"github.com/kaudit/kaudit/audit/topology"
)

// draftCopies drafts a copy for each topic the app writes from one source
// topic through stateless steps only, with no store and no internal topic
// on the way: builder.stream(s)[.filter|mapValues|flatMapValues|map|
// selectKey|peek|branch…].to(t) (Kafka's PipeDemo, a line splitter). The
// outputs of tables and joins have a store on the way and are not copies.
func draftCopies(lay *topology.Layout) []draftTable {
	var out []draftTable
	for _, p := range lay.Products() {
		if p.Topic == "" || len(p.Writers) != 1 {
			continue
		}
		srcs := lay.UpstreamSources(p.Writers[0])
		if len(srcs) != 1 {
			continue // a merged stream: not drafted as a copy
		}
		chain, hops, err := lay.NodeChain(srcs[0], p.Writers[0])
		if err != nil || len(hops) > 0 {
			continue
		}
		stateless := true
		for _, c := range chain {
			if _, ok := stepKindOf[c.Op]; !ok {
				stateless = false
			}
		}
		if !stateless {
			continue
		}
		t := draftTable{name: "copy " + srcs[0] + " → " + p.Topic, source: srcs[0], evSource: srcs[0], repartition: p.Topic, chain: chain}
		if len(chain) == 1 && chain[0].Op == topology.OpSelectKey {
			// a copy's lone selectKey is a step (a table's is select_key)
			t.steps = []draftStep{{kind: stepKindOf[topology.OpSelectKey], node: chain[0].Name, note: todoNote(stepKindOf[topology.OpSelectKey])}}
		} else {
			t.steps = topologySteps(chain)
		}
		out = append(out, t)
	}
	return out
}
