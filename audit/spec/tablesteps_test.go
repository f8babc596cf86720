package spec

import (
	"encoding/json"
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

// TestWindowString (issue AD): windowString(key) is Windowed#toString of Kafka Streams 3.6.2,
// "[" + key + "@" + start + "/" + end + "]", for a String or a number inside the window; a
// record inside it has a toString kaudit cannot know, and the step fails.
func TestWindowString(t *testing.T) {
	sp, err := ParseSpec("s.yaml", []byte(`app_id: app
tables:
  - name: counts
    source: a
    reduce: count
    window: {size: 60000}
    output: out
    output_steps: [map: '[windowString(key), value]']
`))
	if err != nil {
		t.Fatal(err)
	}
	tab := sp.Tables[0]
	if tab.OutputRekeyNotModelled() != nil || !tab.OutputKeyChanging() {
		t.Fatalf("a map re-keying the output: modelled and key-changing, got %v, %v", tab.OutputRekeyNotModelled(), tab.OutputKeyChanging())
	}
	win := func(k any) map[string]any {
		return map[string]any{"key": k, "start": json.Number("1700000000000"), "end": json.Number("1700000060000")}
	}
	for _, c := range []struct {
		key  any
		want string
	}{
		{"alice", "[alice@1700000000000/1700000060000]"},
		{json.Number("42"), "[42@1700000000000/1700000060000]"},
		{int64(-7), "[-7@1700000000000/1700000060000]"},
	} {
		els, err := tab.ApplyOutput(RecordEnv{Key: win(c.key), Value: int64(3)})
		if err != nil || len(els) != 1 {
			t.Fatalf("key %v: %v, %v", c.key, els, err)
		}
		if els[0].Key != c.want {
			t.Errorf("key %v: %v, want %s", c.key, els[0].Key, c.want)
		}
	}
	if _, err := tab.ApplyOutput(RecordEnv{Key: win(map[string]any{"id": 1}), Value: int64(3)}); err == nil || !strings.Contains(err.Error(), "toString") {
		t.Errorf("a record inside the window: %v, want an error naming toString", err)
	}
	flat, err := ParseSpec("s.yaml", []byte("app_id: app\ntables:\n  - {name: c, source: a, reduce: count, output: out, output_steps: [{flatMap: '[[key, value]]'}]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st := flat.Tables[0].OutputRekeyNotModelled(); st == nil || st.Kind != StepFlatMap {
		t.Errorf("a flatMap re-keying the output: %v, want it not modelled", st)
	}
}
