package spec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

func loadSeedSpec(t *testing.T) *Spec {
	t.Helper()
	s, err := LoadSpec(filepath.Join("testdata", "spec", "seed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadSpec(t *testing.T) {
	s := loadSeedSpec(t)
	if want := filepath.Join("testdata", "spec", "../../../../testdata/kafka/describe/out/3.6/seed.txt"); s.TopologyPath() != want {
		t.Errorf("TopologyPath = %s, want %s", s.TopologyPath(), want)
	}
	if _, err := os.Stat(s.TopologyPath()); err != nil {
		t.Error(err)
	}
	if s.AppID != "orders-app" || len(s.Tables) != 3 || len(s.Joins) != 1 {
		t.Fatalf("spec = %+v", s)
	}
	for i, want := range []struct {
		kind  ReducerKind
		field string
		line  int
	}{{ReduceLatest, "", 5}, {ReduceSum, "amount", 9}, {ReduceExpr, "", 10}} {
		tb := s.Tables[i]
		if tb.Reducer.Kind != want.kind || tb.Reducer.Field != want.field || tb.Line != want.line {
			t.Errorf("table %d: reducer %+v line %d, want %s(%s) line %d", i, tb.Reducer, tb.Line, want.kind, want.field, want.line)
		}
	}
	if j := s.Joins[0]; j.Type != JoinLeft || !j.HasValue() || !reflect.DeepEqual([]string(j.Right), []string{"payments", "shipments"}) {
		t.Errorf("join = %+v", j)
	}
}

func TestParseSpecErrors(t *testing.T) {
	const table = "app_id: a\ntables:\n  - name: x\n    source: y\n"
	for _, tt := range []struct {
		name string
		in   string
		want string // "file:line: field: message" prefix
	}{
		{"misspelt field", table + "    selct_key: value.id\n    reduce: latest\n", `k.yaml:5: tables[0].selct_key: unknown field "selct_key"`},
		{"expression that does not compile", table + "    select_key: value.id +\n    reduce: latest\n", `k.yaml:5: tables[0].select_key: compile expression "value.id +"`},
		{"unknown name in an expression", table + "    select_key: val.id\n    reduce: latest\n", `k.yaml:5: tables[0].select_key: compile expression "val.id": unknown name val`},
		{"reducer expression", table + "    reduce: {expr: 'agg +* value'}\n", `k.yaml:5: tables[0].reduce: compile expression`},
		{"reducer sees no key", table + "    reduce: {expr: 'key'}\n", `k.yaml:5: tables[0].reduce: compile expression "key": unknown name key`},
		{"unknown reducer", table + "    reduce: avg\n", `k.yaml:5: tables[0].reduce: unknown reducer "avg"`},
		{"reducer mapping without expr", table + "    reduce: {exp: x}\n", `k.yaml:5: tables[0].reduce: want a mapping with the key expr`},
		{"reducer left TODO", table + "    reduce: TODO\n", `k.yaml:5: tables[0].reduce: still TODO`},
		{"select_key left TODO", table + "    select_key: 'TODO: which field is the key?'\n    reduce: latest\n", `k.yaml:5: tables[0].select_key: still TODO`},
		{"bad sum", table + "    reduce: sum(a b)\n", `k.yaml:5: tables[0].reduce: bad "sum(a b)"`},
		{"missing reduce", table, `k.yaml:3: tables[0].reduce: required`},
		{"missing app_id", "tables:\n  - {name: x, source: y, reduce: latest}\n", `k.yaml:1: app_id: required`},
		{"unknown serde", "app_id: a\nserdes: {key: strng}\ntables:\n  - {name: x, source: y, reduce: latest}\n", `k.yaml:2: serdes.key: unknown serde "strng"`},
		{"duplicate table", "app_id: a\ntables:\n  - {name: x, source: y, reduce: latest}\n  - {name: x, source: z, reduce: latest}\n", `k.yaml:4: tables[1].name: table "x" defined twice`},
		{"join to an unknown table", "app_id: a\ntables:\n  - {name: x, source: y, reduce: latest}\njoins:\n  - output: o\n    left: x\n    right: [z]\n", `k.yaml:7: joins[0].right: no table named "z"`},
		{"join type", "app_id: a\ntables:\n  - {name: x, source: y, reduce: latest}\njoins:\n  - {output: o, left: x, right: x, type: full}\n", `k.yaml:5: joins[0].type: unknown join type "full"`},
		{"joiner with r2 of one right table", "app_id: a\ntables:\n  - {name: x, source: y, reduce: latest}\njoins:\n  - {output: o, left: x, right: x, value: 'r2'}\n", `k.yaml:5: joins[0].value: compile expression "r2": unknown name r2`},
		{"yaml syntax", "app_id: [\n", `k.yaml:1: `},
		{"wrong type", "app_id: a\ntables: 3\n", `k.yaml:2: tables: `},
		{"wrong type deeper", "app_id: a\ntables:\n  - {name: [x], source: y, reduce: latest}\n", `k.yaml:3: tables[0].name: `},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSpec("k.yaml", []byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("err %T is not a *SpecError: %v", err, err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %v\nwant prefix %s", err, tt.want)
			}
		})
	}
}

func num(s string) json.Number { return json.Number(s) }

func tableWith(t *testing.T, reduce string) *TableSpec {
	t.Helper()
	s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - name: x\n    source: y\n    reduce: "+reduce+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return s.Tables[0]
}

func TestReduce(t *testing.T) {
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for _, tt := range []struct {
		name   string
		reduce string
		inputs []any
		want   any
		order  bool
	}{
		{"latest", "latest", []any{obj("v", num("1")), obj("v", num("2"))}, obj("v", num("2")), true},
		{"count", "count", []any{"a", "b", "c"}, num("3"), false},
		{"sum of a field keeps the other fields of the aggregate", "sum(amount)",
			[]any{obj("id", "o1", "amount", num("1.5"), "cur", "EUR"), obj("id", "o1", "amount", num("2"), "cur", "USD")},
			obj("id", "o1", "amount", num("3.5"), "cur", "EUR"), false},
		{"sum of a nested field", "sum(totals.n)",
			[]any{obj("totals", obj("n", num("1"))), obj("totals", obj("n", num("41")))}, obj("totals", obj("n", num("42"))), false},
		{"plain sum", "sum", []any{num("9007199254740993"), num("1")}, num("9007199254740994"), false},
		{"plain sum overflowing int64", "sum", []any{num("9223372036854775807"), num("1")}, num("9223372036854775808"), false},
		{"expression", `{expr: '{"n": agg.n + value.n, "last": value.id}'}`,
			[]any{obj("n", num("1"), "id", "a"), obj("n", num("2"), "id", "b")}, obj("n", num("3"), "last", "b"), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tb := tableWith(t, tt.reduce)
			var agg any
			for i, v := range tt.inputs {
				var err error
				if agg, err = tb.Reduce(agg, v, i == 0); err != nil {
					t.Fatal(err)
				}
			}
			if !reflect.DeepEqual(agg, tt.want) {
				t.Errorf("reduce = %#v, want %#v", agg, tt.want)
			}
			if tb.OrderDependent() != tt.order {
				t.Errorf("OrderDependent = %v", tb.OrderDependent())
			}
		})
	}
	t.Run("null value is skipped", func(t *testing.T) {
		tb := tableWith(t, "count")
		got, err := tb.Reduce(num("2"), nil, false)
		if !errors.Is(err, ErrNullValue) || got != num("2") {
			t.Errorf("got %v, %v", got, err)
		}
	})
	t.Run("sum of a missing field is an error", func(t *testing.T) {
		tb := tableWith(t, "sum(amount)")
		if _, err := tb.Reduce(map[string]any{"amount": num("1")}, map[string]any{}, false); err == nil {
			t.Error("no error")
		}
	})
}

func TestSelectKey(t *testing.T) {
	s := loadSeedSpec(t)
	rec := RecordEnv{Key: "k1", Value: map[string]any{"orderId": "o-7", "amount": num("3")}, Headers: []audit.Header{{Key: "h", Value: []byte("v")}}, Timestamp: 5}
	got, err := s.Tables[0].SelectKey(rec)
	if err != nil || got != "o-7" {
		t.Errorf("SelectKey = %v, %v", got, err)
	}
	plain := tableWith(t, "latest")
	if got, err := plain.SelectKey(rec); err != nil || got != "k1" {
		t.Errorf("SelectKey without select_key = %v, %v", got, err)
	}
	s2, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, reduce: latest, select_key: 'headers.h + \":\" + string(value.amount * 2) + \":\" + string(timestamp)'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Tables[0].SelectKey(rec); err != nil || got != "v:6:5" {
		t.Errorf("SelectKey over headers, numbers and timestamp = %v, %v", got, err)
	}
	// A missing field gives a nil key: Kafka Streams drops the record.
	if got, err := s.Tables[0].SelectKey(RecordEnv{Value: map[string]any{}}); err != nil || got != nil {
		t.Errorf("SelectKey of a missing field = %v, %v", got, err)
	}
}

func TestJoinEval(t *testing.T) {
	s := loadSeedSpec(t)
	j := s.Joins[0]
	left := map[string]any{"orderId": "o1"}
	pay := map[string]any{"amount": num("10")}
	ship := map[string]any{"carrier": "dhl"}
	for _, tt := range []struct {
		name   string
		typ    JoinType
		left   any
		rights []any
		want   any
	}{
		{"left join, all present", JoinLeft, left, []any{pay, ship}, map[string]any{"orderId": "o1", "paid": num("10"), "shipped": "dhl"}},
		{"left join, rights absent", JoinLeft, left, []any{nil, nil}, map[string]any{"orderId": "o1", "paid": nil, "shipped": nil}},
		{"left join, left absent", JoinLeft, nil, []any{pay, ship}, nil},
		{"inner join, a right absent", JoinInner, left, []any{pay, nil}, nil},
		{"inner join, all present", JoinInner, left, []any{pay, ship}, map[string]any{"orderId": "o1", "paid": num("10"), "shipped": "dhl"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			j.Type = tt.typ
			got, err := j.Eval(tt.left, tt.rights)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Eval = %#v, want %#v", got, tt.want)
			}
		})
	}
	j.Type = JoinOuter
	if !j.Present(nil, []any{nil, ship}) || j.Present(nil, []any{nil, nil}) {
		t.Error("outer join presence")
	}
	noValue := &JoinSpec{Output: "o", Right: StringList{"b"}, Type: JoinLeft}
	if _, err := noValue.Eval(left, []any{nil}); !errors.Is(err, ErrNoValue) || noValue.HasValue() {
		t.Errorf("Eval without value: %v", err)
	}
}

func TestResolve(t *testing.T) {
	s := loadSeedSpec(t)
	seed := parseFile(t, filepath.Join(describeDir, "3.6", "seed.txt"))
	want := func(store string) PlannedTable {
		return PlannedTable{Store: store, Changelog: "orders-app-" + store + "-changelog", Repartition: "orders-app-" + store + "-repartition"}
	}
	t.Run("with the topology", func(t *testing.T) {
		p, err := Resolve(s, seed, "")
		if err != nil {
			t.Fatal(err)
		}
		for i, store := range []string{"KSTREAM-REDUCE-STATE-STORE-0000000002", "KSTREAM-REDUCE-STATE-STORE-0000000009", "KSTREAM-REDUCE-STATE-STORE-0000000016"} {
			got, w := p.Tables[i], want(store)
			if got.Store != w.Store || got.Changelog != w.Changelog || got.Repartition != w.Repartition {
				t.Errorf("table %s = %+v, want %+v", got.Name, got, w)
			}
		}
		if len(p.Joins) != 1 || p.Joins[0].Output != "order-status" || len(p.Warnings) != 0 {
			t.Errorf("joins %+v warnings %v", p.Joins, p.Warnings)
		}
	})
	t.Run("without a topology the store is required", func(t *testing.T) {
		_, err := Resolve(s, nil, "")
		if err == nil || !strings.Contains(err.Error(), "seed.yaml:5: tables[0].store: required without a topology") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("without a topology, by naming convention", func(t *testing.T) {
		// a groupBy or selectKey step repartitions as select_key does
		// (WordCountDemo: flatMapValues, groupBy); a filter does not
		s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, select_key: value.id, reduce: latest, store: st}\n  - {name: z, source: w, reduce: count, store: st2}\n"+
			"  - {name: words, source: lines, steps: [{flatMapValues: 'split(value, \" \")'}, {groupBy: value}], reduce: count, store: st3}\n"+
			"  - {name: f, source: v, steps: [{filter: 'value.n > 0'}], reduce: count, store: st4}\n"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Resolve(s, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if x := p.Tables[0]; x.Repartition != "a-st-repartition" || x.Changelog != "a-st-changelog" {
			t.Errorf("x = %+v", x)
		}
		if z := p.Tables[1]; z.Repartition != "" || z.Changelog != "a-st2-changelog" {
			t.Errorf("z = %+v", z)
		}
		if w := p.Tables[2]; w.Repartition != "a-st3-repartition" {
			t.Errorf("words = %+v, want the repartition topic a-st3-repartition", w)
		}
		if f := p.Tables[3]; f.Repartition != "" {
			t.Errorf("f = %+v, want no repartition topic", f)
		}
	})
	t.Run("a source feeding no store", func(t *testing.T) {
		s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: nope, reduce: latest}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(s, seed, ""); err == nil || !strings.Contains(err.Error(), `k.yaml:3: tables[0].source: no store of the topology is fed by topic "nope"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("an output the topology does not write", func(t *testing.T) {
		s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: orders-v1, reduce: latest}\njoins:\n  - {output: elsewhere, left: x, right: x}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Resolve(s, seed, ""); err == nil || !strings.Contains(err.Error(), `k.yaml:5: joins[0].output: the topology writes no output topic "elsewhere"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("named operations", func(t *testing.T) {
		s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: orders, source: orders, select_key: value.id, reduce: latest}\n  - {name: payments, source: payments, reduce: latest}\njoins:\n  - {output: order-status, left: orders, right: payments}\n"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Resolve(s, parseFile(t, filepath.Join(describeDir, "3.6", "named.txt")), "")
		if err != nil {
			t.Fatal(err)
		}
		got := []string{p.Tables[0].Store, p.Tables[0].Repartition, p.Tables[1].Store, p.Tables[1].Repartition}
		want := []string{"orders-store", "a-orders-by-id-repartition", "payments-store", "a-payments-rekeyed-repartition"}
		if !reflect.DeepEqual(got, want) || len(p.Warnings) != 0 {
			t.Errorf("got %v warnings %v, want %v", got, p.Warnings, want)
		}
	})
}

// FuzzParseSpec: ParseSpec never panics, and every error it returns is a
// *SpecError naming the file.
func FuzzParseSpec(f *testing.F) {
	f.Add([]byte("app_id: a\ntables:\n  - {name: x, source: y, reduce: latest}\n"))
	f.Add([]byte("app_id: a\ntables:\n  - name: x\n    source: y\n    reduce: {expr: 'agg + value'}\njoins:\n  - {output: o, left: x, right: [x], value: 'left'}\n"))
	f.Add([]byte("app_id: a\ntables:\n  - {name: x, source: y, store: s, reduce: count, window: {size: 1m, advance: 30s, grace: 10s}, output: o, suppress: until-window-closes}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := ParseSpec("k.yaml", data)
		if err == nil {
			return
		}
		var se *SpecError
		if !errors.As(err, &se) || se.File != "k.yaml" {
			t.Fatalf("err %T: %v", err, err)
		}
	})
}

// TestSelectKeyPath: a select_key that is a field path is walked without
// the expression VM, and must give exactly what the VM gives.
func TestSelectKeyPath(t *testing.T) {
	for _, src := range []string{"value.orderId", "value.a.b", "key.id", "value.n", "value.f", "value.list", "value.nested"} {
		s, err := ParseSpec("k.yaml", []byte("app_id: a\ntables:\n  - {name: x, source: y, reduce: latest, select_key: '"+src+"'}\n"))
		if err != nil {
			t.Fatal(err)
		}
		fast := s.Tables[0]
		if fast.selectPath == nil {
			t.Fatalf("%s: not recognized as a field path", src)
		}
		vm := *fast
		vm.selectPath = nil
		for i, rec := range []RecordEnv{
			{Value: map[string]any{"orderId": "o-7", "n": num("42"), "f": num("1.50"), "list": []any{num("1"), "x"},
				"nested": map[string]any{"z": num("2.0")}, "a": map[string]any{"b": true}}, Key: map[string]any{"id": num("9")}},
			{Value: map[string]any{"orderId": nil, "a": "not a map"}, Key: "plain"},
			{Value: map[string]any{}},
			{},
		} {
			want, werr := vm.SelectKey(rec)
			got, gerr := fast.SelectKey(rec)
			if (werr == nil) != (gerr == nil) || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
				t.Errorf("%s on record %d: path walk gives %#v, %v; the VM %#v, %v", src, i, got, gerr, want, werr)
			}
		}
	}
	for _, src := range []string{"value.orderId + 'x'", "value", "headers.h", "value.a[0]", "lower(value.x)"} {
		if p := fieldPath(src); p != nil {
			t.Errorf("fieldPath(%q) = %v, want nil", src, p)
		}
	}
}

// TestSerdesFormats: Schema Registry's three formats are serdes of a spec, a message name
// after protobuf: keeps its case, and a table's own serdes may name another format.
func TestSerdesFormats(t *testing.T) {
	sp, err := ParseSpec("k.yaml", []byte("app_id: a\nserdes: {key: string, value: 'protobuf:drill.Order'}\ntables:\n"+
		"  - {name: x, source: y, reduce: latest, store: s, serdes: {value: json-schema}}\n  - {name: z, source: w, reduce: latest, store: u, serdes: {value: avro}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sp.Serdes.Value != "protobuf:drill.Order" || sp.Tables[0].Serdes.Value != "json-schema" {
		t.Errorf("serdes %+v, table serdes %+v", sp.Serdes, sp.Tables[0].Serdes)
	}
	if _, err := ParseSpec("k.yaml", []byte("app_id: a\nserdes: {value: thrift}\ntables:\n  - {name: x, source: y, reduce: latest, store: s}\n")); err == nil ||
		!strings.Contains(err.Error(), "json-schema") {
		t.Errorf("an unknown serde: %v, want the formats listed", err)
	}
}
