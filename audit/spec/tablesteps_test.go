package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/topology"
)

// countFiltered is builder.stream(a).groupByKey().count().filter(c >= 2)
// .toStream().to(out), as Kafka Streams 3.6 describes it.
const countFiltered = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-FILTER-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-FILTER-0000000003 (stores: [])
      --> KTABLE-TOSTREAM-0000000004
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KTABLE-FILTER-0000000003
    Sink: KSTREAM-SINK-0000000005 (topic: out)
      <-- KTABLE-TOSTREAM-0000000004
`

// TestTableSteps (issue AD): a KTable#filter between a table and its
// output is a table step: a state it rejects reaches the output as a
// tombstone (KTableFilter without old values, as toStream() leaves it),
// mapValues maps, a tombstone stays one; the topology's KTABLE-FILTER
// node is matched by table_steps, and left out of them it leaves the
// output unjudged, naming it.
func TestTableSteps(t *testing.T) {
	topo, err := topology.ParseString(countFiltered)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(table string) *Spec {
		sp, err := ParseSpec("s.yaml", []byte(`app_id: app
serdes: {key: string, value: json}
tables:
  - name: counts
    source: a
    reduce: count
    store_serdes: {value: long}
    output: out
    output_serdes: {value: long}
`+table))
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	sp := spec("    table_steps:\n      - filter: 'value >= 2'\n")
	p, err := Resolve(sp, topo, "app")
	if err != nil {
		t.Fatal(err)
	}
	if u := p.Tables[0].OutputUnjudged; u != "" {
		t.Errorf("output unjudged with its table step: %s", u)
	}
	// the semantics, on a filter then a mapValues
	sp = spec("    store: s\n    table_steps:\n      - filter: 'value >= 2'\n      - mapValues: 'value * 10'\n")
	for _, c := range []struct {
		in   any
		want string
	}{{int64(1), "<nil>"}, {int64(2), "20"}, {nil, "<nil>"}} {
		els, err := sp.Tables[0].ApplyOutput(RecordEnv{Key: "k", Value: c.in})
		if err != nil || len(els) != 1 {
			t.Fatalf("ApplyOutput(%v): %v, %v", c.in, els, err)
		}
		if got := fmt.Sprint(els[0].Value); got != c.want {
			t.Errorf("ApplyOutput(%v) = %s, want %s", c.in, got, c.want)
		}
	}
	p, err = Resolve(spec(""), topo, "app")
	if err != nil {
		t.Fatal(err)
	}
	if u := p.Tables[0].OutputUnjudged; !strings.Contains(u, "KTABLE-FILTER-0000000003") || !strings.Contains(u, "table_steps") {
		t.Errorf("output unjudged %q, want it to name KTABLE-FILTER-0000000003 and table_steps", u)
	}
	if _, err := ParseSpec("s.yaml", []byte("app_id: app\ntables:\n  - {name: counts, source: a, reduce: count, store: s, output: out, table_steps: [{flatMapValues: '[value]'}]}\n")); err == nil || !strings.Contains(err.Error(), "table_steps holds") {
		t.Errorf("a flatMapValues in table_steps: %v, want refused", err)
	}
}
