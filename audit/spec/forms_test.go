package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/topology"
)

func TestSpecJavaSerdeNames(t *testing.T) {
	in := "app_id: a\nserdes: {key: String, value: Integer}\ntables:\n  - name: x\n    source: y\n    store: s\n    reduce: latest\n" +
		"    serdes: {key: UUID, value: Long}\n  - {name: z, source: y, store: s2, reduce: latest, serdes: {key: Serdes.ByteArray(), value: org.apache.kafka.common.serialization.Serdes$DoubleSerde}}\n"
	s, err := ParseSpec("k.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Serdes.Key != "String" || s.Tables[0].Serdes.Value != "Long" {
		t.Errorf("serdes = %+v %+v", s.Serdes, s.Tables[0].Serdes)
	}
}

func fold(t *testing.T, tb *TableSpec, values ...any) any {
	t.Helper()
	var agg any
	for i, v := range values {
		out, err := tb.Reduce(agg, v, i == 0)
		if err != nil {
			t.Fatalf("%s: fold %v at %d: %v", tb.Reducer, values, i, err)
		}
		agg = out
	}
	return agg
}

func n(s string) json.Number { return json.Number(s) }

func TestReducerForms(t *testing.T) {
	obj := func(id string, amt any, note string) map[string]any {
		return map[string]any{"id": id, "amount": amt, "note": note}
	}
	for _, tt := range []struct {
		name   string
		yaml   string // the table's reducer lines
		values []any
		want   any
		order  bool // OrderDependent
	}{
		// EosTestClient: aggregate(() -> Integer.MAX_VALUE, (k, v, agg) -> (v < agg) ? v : agg)
		{"aggregate min", "aggregate: {init: 2147483647, expr: 'value < agg ? value : agg'}", []any{n("5"), n("3"), n("9")}, n("3"), true},
		{"aggregate min of one", "aggregate: {init: 2147483647, expr: 'value < agg ? value : agg'}", []any{n("7")}, n("7"), true},
		// the initializer is applied to the first value: 10 + 1 + 2
		{"aggregate init folds", "aggregate: {init: '10', expr: agg + value}", []any{n("1"), n("2")}, n("13"), true},
		{"aggregate init object", `aggregate: {init: '{"n": 0}', expr: '{"n": agg.n + value.amount}'}`, []any{obj("a", n("2"), ""), obj("a", n("3"), "")}, map[string]any{"n": n("5")}, true},
		// aggregate(() -> 0L, (k, v, agg) -> (long) v + agg)
		{"aggregate sum", "aggregate: {init: 0, expr: agg + value}", []any{n("2147483647"), n("1")}, n("2147483648"), true},
		{"count", "reduce: count", []any{n("4"), n("4"), obj("x", nil, "")}, n("3"), false},
		{"min", "reduce: min", []any{n("5"), n("-3"), n("9")}, n("-3"), false},
		{"max", "reduce: max", []any{n("5"), n("-3"), n("9"), n("9")}, n("9"), false},
		{"max double", "reduce: max", []any{n("1.5"), n("2"), n("1.75")}, n("2"), false},
		{"min field", "reduce: min(amount)", []any{obj("a", n("5"), "first"), obj("a", n("2"), "second"), obj("a", n("4"), "third")}, obj("a", n("2"), "first"), true},
		{"max field", "reduce: max(amount)", []any{obj("a", n("5"), "first"), obj("a", n("7"), "second")}, obj("a", n("7"), "first"), true},
		{"sum long", "reduce: sum", []any{n("9223372036854775000"), n("7")}, n("9223372036854775007"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - name: x\n    source: y\n    store: s\n    "+tt.yaml+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			tb := s.Tables[0]
			if got := fold(t, tb, tt.values...); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("fold = %#v, want %#v", got, tt.want)
			}
			if got := tb.OrderDependent() || tb.Reducer.Field != ""; got != tt.order {
				t.Errorf("order dependent = %v, want %v", got, tt.order)
			}
			if _, err := tb.Reduce(n("1"), nil, false); !errors.Is(err, ErrNullValue) {
				t.Errorf("null value: %v, want ErrNullValue", err)
			}
		})
	}
}

func TestReducerFormErrors(t *testing.T) {
	const table = "app_id: a\ntables:\n  - name: x\n    source: y\n    store: s\n"
	for _, tt := range []struct{ in, want string }{
		{"    reduce: latest\n    aggregate: {init: 0, expr: agg}\n", `k.yaml:7: tables[0].aggregate: give reduce or aggregate, not both`},
		{"    aggregate: {expr: agg}\n", `k.yaml:6: tables[0].aggregate: want {init: "…", expr: "…"}`},
		{"    aggregate: {init: 0, expr: agg, x: 1}\n", `k.yaml:6: tables[0].aggregate: unknown key "x"`},
		{"    aggregate: {init: value, expr: agg}\n", `k.yaml:6: tables[0].aggregate: init: compile expression "value"`},
		{"    aggregate: {init: 0, expr: agg + key}\n", `k.yaml:6: tables[0].aggregate: expr: compile expression "agg + key"`},
		{"    aggregate: 0\n", `k.yaml:6: tables[0].aggregate: want {init: "…", expr: "…"}`},
		{"    reduce: min(\n", `k.yaml:6: tables[0].reduce: bad "min(": want min(FIELD)`},
		{"    reduce: avg\n", `k.yaml:6: tables[0].reduce: unknown reducer "avg"`},
	} {
		_, err := ParseSpec("k.yaml", []byte(table+tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want prefix %s", tt.in, err, tt.want)
		}
	}
}

func TestExpressionsOfNewForms(t *testing.T) {
	s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, store: s, reduce: min(p.amount)}\n  - {name: z, source: y, store: s2, aggregate: {init: 0, expr: agg + value.n}}\n  - {name: c, source: y, store: s3, reduce: max}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range s.Expressions() {
		got = append(got, e.Field+" "+fmt.Sprint(e.Paths))
	}
	want := []string{"tables[0].reduce [value.p.amount agg.p.amount]", "tables[1].reduce [value.n]"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expressions = %q, want %q", got, want)
	}
}

// TestResolveHops: groupByKey on a keyed stream has no repartition hop
// (the source partition is the task); a user topic named as the hop is
// used as it is; store_serdes apply to the changelog only.
func TestResolveHops(t *testing.T) {
	s, err := LoadSpec("../../testdata/eos/eos.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(s, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pt := range p.Tables {
		got = append(got, fmt.Sprintf("%s: %s -> %q -> %s (%s)", pt.Name, pt.Source, pt.Repartition, pt.Store, pt.Changelog))
	}
	want := []string{
		`min: data -> "" -> KSTREAM-AGGREGATE-STATE-STORE-0000000003 (EosTest-KSTREAM-AGGREGATE-STATE-STORE-0000000003-changelog)`,
		`sum: data -> "" -> KSTREAM-AGGREGATE-STATE-STORE-0000000007 (EosTest-KSTREAM-AGGREGATE-STATE-STORE-0000000007-changelog)`,
		`max: data -> "repartition" -> KSTREAM-AGGREGATE-STATE-STORE-0000000014 (EosTest-KSTREAM-AGGREGATE-STATE-STORE-0000000014-changelog)`,
		`cnt: data -> "repartition" -> KSTREAM-AGGREGATE-STATE-STORE-0000000018 (EosTest-KSTREAM-AGGREGATE-STATE-STORE-0000000018-changelog)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plan =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantSerdes := map[string]Serdes{
		"EosTest-KSTREAM-AGGREGATE-STATE-STORE-0000000007-changelog": {Value: "Long"},
		"EosTest-KSTREAM-AGGREGATE-STATE-STORE-0000000018-changelog": {Value: "Long"},
		// a table's output carries the store's serdes
		"sum": {Value: "Long"},
		"cnt": {Value: "Long"},
	}
	if ts := p.TopicSerdes(); !reflect.DeepEqual(ts, wantSerdes) {
		t.Errorf("TopicSerdes = %v, want %v", ts, wantSerdes)
	}
	// a table's serdes cover its source and hop, store_serdes the changelog over them
	s2, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, store: s, reduce: count, repartition: r, serdes: {key: Integer, value: json}, store_serdes: {value: Long}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Resolve(s2, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	want2 := map[string]Serdes{"y": {"Integer", "json"}, "r": {"Integer", "json"}, "a-s-changelog": {"Integer", "Long"}}
	if ts := p2.TopicSerdes(); !reflect.DeepEqual(ts, want2) {
		t.Errorf("TopicSerdes = %v, want %v", ts, want2)
	}
}

// TestResolveEOSWithTopology: EosTestClient's describe() text (captured
// from the real app by the drill) gives the same plan as the spec's store
// names alone, and shows why the user topic must be named: a topology's hops are the
// -repartition topics only.
func TestResolveEOSWithTopology(t *testing.T) {
	s, err := LoadSpec("../../testdata/eos/eos.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile("../../testdata/eos/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.ParseString(string(text))
	if err != nil {
		t.Fatal(err)
	}
	without, err := Resolve(s, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	with, err := Resolve(s, topo, "")
	if err != nil {
		t.Fatal(err)
	}
	noChains := func(ts []PlannedTable) []PlannedTable {
		out := slices.Clone(ts)
		for i := range out {
			if out[i].Unjudged != "" || out[i].OutputUnjudged != "" {
				t.Errorf("table %s: %s %s", out[i].Name, out[i].Unjudged, out[i].OutputUnjudged)
			}
			out[i].Chain, out[i].OutputChain = nil, nil
		}
		return out
	}
	if !reflect.DeepEqual(noChains(with.Tables), without.Tables) || len(with.Warnings) > 0 {
		t.Errorf("with the topology: %+v %q\nwithout: %+v", with.Tables, with.Warnings, without.Tables)
	}
	// without repartition:, the topology's user topic is the hop, under
	// its own name (not <app>-repartition)
	s.Tables[2].Repartition, s.Tables[3].Repartition = "", ""
	p, err := Resolve(s, topo, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(noChains(p.Tables), without.Tables) {
		t.Errorf("without repartition: %+v\nwant %+v", p.Tables, without.Tables)
	}
	// data's records reach every store: a spec must say which is which
	var fed []string
	for _, u := range topo.Layout("EosTest").StoresFedBy("data") {
		fed = append(fed, u.Name)
	}
	if len(fed) != 4 {
		t.Errorf("stores fed by data = %q, want the four", fed)
	}
}

func TestHopName(t *testing.T) {
	for full, want := range map[string]string{
		"app-KSTREAM-AGGREGATE-STATE-STORE-0000000006-repartition":      "app-KSTREAM-AGGREGATE-STATE-STORE-0000000006-repartition",
		"app-by-order-repartition":                                      "app-by-order-repartition",
		"app-repartition":                                               "repartition",
		"app-through-topic":                                             "through-topic",
		"app-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic": "",
		"app-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000011-topic":     "",
	} {
		if got := hopName("app", full); got != want {
			t.Errorf("hopName(%s) = %q, want %q", full, got, want)
		}
	}
}

// FuzzReducerForms parses arbitrary reducer and aggregate text and folds
// arbitrary JSON values with it. Invariants: no panic; a spec error is a
// *SpecError; a fold result is a canonical value (what fromExpr accepts).
func FuzzReducerForms(f *testing.F) {
	f.Add("reduce: min", `[5, 3, 9]`)
	f.Add("reduce: max(amount)", `[{"amount": 1, "n": "a"}, {"amount": 2.5}, {"amount": null}]`)
	f.Add("aggregate: {init: 2147483647, expr: 'value < agg ? value : agg'}", `[7, -1, 1e300]`)
	f.Add(`aggregate: {init: '{"n": 0}', expr: '{"n": agg.n + value}'}`, `[1, 2, "x"]`)
	f.Add("reduce: count", `[null, true, {}]`)
	f.Add("reduce: sum", `[9223372036854775807, 1]`)
	f.Fuzz(func(t *testing.T, reducer, values string) {
		s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - name: x\n    source: y\n    store: s\n    "+reducer+"\n"))
		if err != nil {
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("err %T: %v", err, err)
			}
			return
		}
		var vs []any
		dec := json.NewDecoder(strings.NewReader(values))
		dec.UseNumber()
		if dec.Decode(&vs) != nil || len(vs) > 20 {
			return
		}
		var agg any
		first := true
		for _, v := range vs {
			out, err := s.Tables[0].Reduce(agg, v, first)
			if err != nil {
				continue
			}
			if _, err := fromExpr(out); err != nil {
				t.Fatalf("%s over %v: result %#v is not canonical: %v", reducer, vs, out, err)
			}
			agg, first = out, false
		}
	})
}

// TestCaching: caching: false on the spec applies to every table, a
// table's own wins, and a misspelt field is an error with its line.
func TestCaching(t *testing.T) {
	in := "app_id: a\ncaching: false\ntables:\n  - {name: x, source: y, store: s, reduce: count}\n  - {name: z, source: y, store: s2, reduce: count, caching: true}\n" +
		"  - {name: w, source: y, store: s3, reduce: count, caching: false}\n"
	s, err := ParseSpec("k.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Resolve(s, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, pt := range p.Tables {
		got = append(got, pt.Uncached)
	}
	if !reflect.DeepEqual(got, []bool{true, false, true}) {
		t.Errorf("uncached = %v, want [true false true]", got)
	}
	s, err = ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, store: s, reduce: count}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, err = Resolve(s, nil, ""); err != nil || p.Tables[0].Uncached {
		t.Errorf("no caching field: uncached %v, %v; want cached", p.Tables[0].Uncached, err)
	}
	if _, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, store: s, reduce: count, cachng: false}\n")); err == nil || !strings.Contains(err.Error(), "cachng") {
		t.Errorf("misspelt caching: %v", err)
	}
}
