package topology

import "testing"

// namedStreamTableJoin is a stream re-keyed and joined with a table, the
// join named by the app (Joined.as("enrichJoin")), the table's store
// too (Materialized.as), as Kafka Streams 3.6 describes it.
const namedStreamTableJoin = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [s])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-KEY-SELECT-0000000001-repartition)
      <-- KSTREAM-FILTER-0000000005

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-KEY-SELECT-0000000001-repartition])
      --> enrichJoin
    Source: KSTREAM-SOURCE-0000000002 (topics: [t])
      --> KSTREAM-TOTABLE-0000000003
    Processor: enrichJoin (stores: [store-n2])
      --> KSTREAM-SINK-0000000007
      <-- KSTREAM-SOURCE-0000000006
    Processor: KSTREAM-TOTABLE-0000000003 (stores: [store-n2])
      --> none
      <-- KSTREAM-SOURCE-0000000002
    Sink: KSTREAM-SINK-0000000007 (topic: out)
      <-- enrichJoin
`

// TestNamedStreamTableJoin (AB's V5): a stream-table join the app named is
// found by its shape (a stream's processor that only looks up a table's
// store), not only by Streams' generated KSTREAM-JOIN- name, so a spec's
// stream_joins: resolve on it.
func TestNamedStreamTableJoin(t *testing.T) {
	topo, err := ParseString(namedStreamTableJoin)
	if err != nil {
		t.Fatal(err)
	}
	lay := topo.Layout("app")
	var found *JoinUse
	for i, j := range lay.Joins {
		if j.Node == "enrichJoin" {
			found = &lay.Joins[i]
		}
	}
	if found == nil || found.Kind != JoinStreamTable || len(found.RightStores) != 1 || found.RightStores[0] != "store-n2" {
		t.Fatalf("joins %+v: want enrichJoin, a stream-table join looking up store-n2", lay.Joins)
	}
	if len(found.Outputs) != 1 || found.Outputs[0] != "out" {
		t.Errorf("enrichJoin writes %v, want [out]", found.Outputs)
	}
}
