package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/topology"
)

func stepsSpec(t *testing.T, steps string) *TableSpec {
	t.Helper()
	s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - name: x\n    source: y\n    reduce: count\n    steps:\n"+steps))
	if err != nil {
		t.Fatal(err)
	}
	return s.Tables[0]
}

// TestStepsApply pins what each operator emits, as Kafka Streams 3.6's
// processors do (KStreamFilter, KStreamMapValues, KStreamMap,
// KStreamFlatMapValues, KStreamFlatMap, KStreamPeek, KStreamBranch,
// selectKey): the elements' keys and values, none for a rejected record.
func TestStepsApply(t *testing.T) {
	rec := RecordEnv{Key: "k1", Value: map[string]any{"id": "o-1", "amount": json.Number("12.5"), "text": "Hello, big World", "test": false}, Timestamp: 7}
	for _, tt := range []struct {
		name, steps string
		want        string // the elements as key=value, canonical
	}{
		{"filter keeps", "      - filter: value.amount > 10\n", `k1={"amount":12.5,"id":"o-1","test":false,"text":"Hello, big World"}`},
		{"filter rejects", "      - filter: value.amount > 100\n", ``},
		{"filterNot", "      - filterNot: value.test\n", `k1={"amount":12.5,"id":"o-1","test":false,"text":"Hello, big World"}`},
		{"mapValues", "      - mapValues: '{\"id\": value.id, \"cents\": value.amount * 100}'\n", `k1={"cents":1250,"id":"o-1"}`},
		{"map", "      - map: '[value.id, value.amount]'\n", `"o-1"=12.5`},
		{"flatMapValues split", "      - flatMapValues: 'regexSplit(lower(value.text), \"\\\\W+\")'\n", `k1="hello" k1="big" k1="world"`},
		{"flatMapValues split with expr's split", "      - flatMapValues: 'split(value.text, \" \")'\n", `k1="Hello," k1="big" k1="World"`},
		{"flatMapValues empty", "      - flatMapValues: '[]'\n", ``},
		{"flatMap", "      - flatMap: '[[value.id, 1], [key, 2]]'\n", `"o-1"=1 k1=2`},
		{"peek", "      - peek\n", `k1={"amount":12.5,"id":"o-1","test":false,"text":"Hello, big World"}`},
		{"branch taken", "      - branch: value.amount >= 10\n", `k1={"amount":12.5,"id":"o-1","test":false,"text":"Hello, big World"}`},
		{"branch not taken", "      - branch: '!(value.amount >= 10) && value.amount < 5'\n", ``},
		{"selectKey", "      - selectKey: value.id\n", `"o-1"={"amount":12.5,"id":"o-1","test":false,"text":"Hello, big World"}`},
		{"groupBy after a split", "      - flatMapValues: 'regexSplit(lower(value.text), \"\\\\W+\")'\n      - groupBy: value\n", `"hello"="hello" "big"="big" "world"="world"`},
		{"mapValues then filter on the new value", "      - mapValues: value.amount * 2\n      - filter: value > 20\n", `k1=25`},
		{"a filter after a flatMap rejects some", "      - flatMapValues: '[1, 20, 3]'\n      - filter: value > 2\n", `k1=20 k1=3`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := stepsSpec(t, tt.steps)
			els, err := ts.Apply(rec)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range els {
				k, _ := json.Marshal(e.Key)
				if s, ok := e.Key.(string); ok && s == "k1" {
					k = []byte("k1")
				}
				v, _ := json.Marshal(e.Value)
				got = append(got, string(k)+"="+string(v))
			}
			if g := strings.Join(got, " "); g != tt.want {
				t.Errorf("got %s\nwant %s", g, tt.want)
			}
		})
	}
}

// TestStepsErrors: a step that cannot run on a record names itself; one
// the spec leaves TODO or a Processor API node is not modelled.
func TestStepsErrors(t *testing.T) {
	rec := RecordEnv{Key: "k", Value: map[string]any{"n": json.Number("1")}}
	for _, tt := range []struct {
		name, steps, want string
		notModelled       bool
	}{
		{"a predicate that is no boolean", "      - filter: value.n\n", "step 1 (filter): the predicate gave int64 1, not true or false", false},
		{"a flatMap that gives no list", "      - flatMapValues: value.n\n", "not a list", false},
		{"a flatMap that gives null", "      - flatMapValues: nil\n", "NullPointerException", false},
		{"a map that gives no pair", "      - map: '[1, 2, 3]'\n", "not a pair", false},
		{"TODO", "      - filter: TODO\n", "not modelled", true},
		{"process", "      - {process: '', node: KSTREAM-PROCESSOR-0000000002}\n", "step 1 (process KSTREAM-PROCESSOR-0000000002): not modelled", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := stepsSpec(t, tt.steps)
			_, err := ts.Apply(rec)
			var se *StepError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want a StepError with %q", err, tt.want)
			}
			if got := errors.Is(err, ErrNotModelled); got != tt.notModelled {
				t.Errorf("not modelled: %v, want %v", got, tt.notModelled)
			}
			if got := len(ts.NotModelled()) > 0; got != tt.notModelled {
				t.Errorf("NotModelled: %v, want %v", got, tt.notModelled)
			}
		})
	}
}

// TestStepsSpecErrors: malformed steps are spec errors naming their line.
func TestStepsSpecErrors(t *testing.T) {
	const head = "app_id: a\ntables:\n  - name: x\n    source: y\n    reduce: count\n"
	for _, tt := range []struct {
		name, in, want string
	}{
		{"unknown operator", head + "    steps:\n      - filtr: value.x\n", `k.yaml:7: tables[0].steps[0]: unknown operator "filtr"`},
		{"two operators in one step", head + "    steps:\n      - {filter: value.x, mapValues: value}\n", "two operators"},
		{"an expression for peek", head + "    steps:\n      - peek: value\n", "peek takes no expression"},
		{"no expression", head + "    steps:\n      - mapValues: ''\n", "mapValues needs an expression (or TODO)"},
		{"a select_key and a selectKey step", head + "    select_key: value.a\n    steps:\n      - selectKey: value.b\n", "select_key is the last selectKey step"},
		{"an expression that does not compile", head + "    steps:\n      - filter: value.x >\n", "compile expression"},
		{"a source named twice", "app_id: a\ntables:\n  - name: x\n    source: [y, y]\n    reduce: count\n", "the topics merged must be named once each"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSpec("k.yaml", []byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
		})
	}
}

// TestChainOfTopologies ties specs to the chains of real describe()
// texts: a spec that states every node judges the table; one that leaves
// a node out, states another kind, or states a step the topology lacks
// leaves it unjudged, naming the node.
func TestChainOfTopologies(t *testing.T) {
	for _, tt := range []struct {
		name, topo, table, want string
	}{
		{"the incident: flatMapValues then selectKey", "../../testdata/incidents/dropped", "    source: orders\n    steps: [flatMapValues: '[value]']\n    select_key: value.orderId\n", ""},
		{"the incident without its flatMapValues", "../../testdata/incidents/dropped", "    source: orders\n    select_key: value.orderId\n", "KSTREAM-FLATMAPVALUES-0000000001 (flatMapValues), which the spec's steps leave out"},
		{"the incident with a filter in its place", "../../testdata/incidents/dropped", "    source: orders\n    steps: [filter: 'true']\n    select_key: value.orderId\n", "does not match the topology's node there, KSTREAM-FLATMAPVALUES-0000000001 (flatMapValues)"},
		{"a step the topology lacks", "../../testdata/incidents/dropped", "    source: orders\n    steps: [flatMapValues: '[value]', peek, filter: 'true']\n    select_key: value.orderId\n", "has no node in the topology"},
		{"a TODO names its node", "../../testdata/incidents/dropped", "    source: orders\n    steps: [flatMapValues: TODO]\n    select_key: value.orderId\n", "flatMapValues KSTREAM-FLATMAPVALUES-0000000001 (TODO)"},
		{"a merge split into branches", "../../testdata/apps/routes.describe.txt", "    source: [sr-web, sr-mobile]\n    steps: [branch: 'value.amount >= 100', groupBy: value.customer]\n", ""},
		{"a merge the spec leaves out", "../../testdata/apps/routes.describe.txt", "    source: sr-web\n    store: KSTREAM-AGGREGATE-STATE-STORE-0000000006\n    steps: [branch: 'value.amount >= 100', groupBy: value.customer]\n", "name every topic merged in source: [sr-web, …]"},
		{"a named node matches by place", "../../testdata/kafka/describe/out/3.6/named.txt", "    source: orders\n    store: orders-store\n    steps: [selectKey: value.id]\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - name: x\n    reduce: count\n"+tt.table))
			if err != nil {
				t.Fatal(err)
			}
			topo := readTopology(t, tt.topo)
			p, err := Resolve(s, topo, "a")
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Tables[0].Unjudged; tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Errorf("unjudged %q, want %q", got, tt.want)
			}
		})
	}
}

// readTopology reads a describe() text file, or a capture's manifest.
func readTopology(t *testing.T, path string) *topology.Topology {
	t.Helper()
	if !strings.HasSuffix(path, ".txt") {
		data, err := readBounded(path+"/manifest.json", 1<<24)
		if err != nil {
			t.Fatal(err)
		}
		var m struct {
			Topology string `json:"topology"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		topo, err := topology.ParseString(m.Topology)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	return parseFile(t, path)
}

// TestOutputChain: a table's output steps after toStream() are checked
// against the topology, and a key-changing one leaves the output unjudged.
func TestOutputChain(t *testing.T) {
	topo := readTopology(t, "../../testdata/apps/windows.describe.txt")
	for _, tt := range []struct {
		steps, want string
	}{
		{"    output_steps: [filter: 'value > 3']\n", ""},
		{"", "which the spec's steps leave out"},
		{"    output_steps: [mapValues: 'value']\n", "does not match"},
		{"    output_steps: [filter: 'value > 3', selectKey: key]\n", "change the key"},
	} {
		spec := "app_id: a\ntables:\n  - name: x\n    source: sc-clicks\n    reduce: count\n    window: {size: 1m, grace: 5s}\n    output: sc-busy-minutes\n" + tt.steps
		s, err := ParseSpec("k.yaml", []byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Resolve(s, topo, "a")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Tables[0].OutputUnjudged; tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("%q: output unjudged %q, want %q", tt.steps, got, tt.want)
		}
	}
	_ = fmt.Sprint
}
