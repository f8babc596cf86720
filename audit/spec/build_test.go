package spec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/internal/golden"
)

// built is what resolving a spec says of it: what it drops, and each
// table's and join's reasons, one per line.
func built(t *testing.T, s *Spec) string {
	t.Helper()
	p, err := Resolve(s, nil, "app")
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	var out []string
	for _, d := range s.Dropped {
		out = append(out, "dropped: "+d)
	}
	for _, pt := range p.Tables {
		out = append(out, fmt.Sprintf("table %s: unjudged %q unsure %q", pt.Name, pt.Unjudged, pt.Unsure))
	}
	for _, pj := range p.Joins {
		out = append(out, fmt.Sprintf("join %s %s: unjudged %q value %q", pj.Output, pj.Type, pj.Unjudged, pj.Spec.Value))
	}
	for _, sj := range s.StreamJoins {
		out = append(out, fmt.Sprintf("stream join %s %s: unsettled %q value %q", sj.Output, sj.Type, sj.Unsettled, sj.Value))
	}
	out = append(out, p.Warnings...)
	return strings.Join(out, "\n") + "\n"
}

// lineRefs are the places a spec read from a file cites its lines.
var lineRefs = regexp.MustCompile(` at line \d+|, line \d+|:\d+:`)

// TestNewDraftInCode: a draft built in code (New, its unknowns said with
// DropTable, KeyUnsettled and the like, its unknown steps UnknownStep's)
// resolves as the same draft read from YAML (ParseDraft, its unknowns
// TODOs) does, with no line: the same tables, joins and reasons, each
// naming the table or the node instead.
func TestNewDraftInCode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		build func() *Spec
	}{
		{"unsettled", `app_id: app
serdes: {key: string, value: json}
tables:
  - name: products
    source: products
    reduce: table
    store: P
  - name: per-category
    regroup: products
    select_key: "TODO: the groupBy mapper's new key over the row"
    reduce: "TODO: count, or {expr, subtract}"
    store: C
  - name: clicks
    source: clicks
    window: "TODO: one of {size: 1m}; {size: 1m, advance: 30s}, with the grace"
    reduce: count
    store: W
  - name: lost
    source: "TODO: which source topic feeds store L"
    reduce: latest
    store: L
  - name: orders
    source: orders
    select_key: "TODO: one of value.a, value.b (both explain every copy)"
    reduce: "TODO: one of latest, count (they explain the same keys)"
    store: O
joins:
  - output: status
    left: products
    right: [orders]
    type: "TODO: inner or left"
    value: "TODO: the joiner's result"
  - output: lost-status
    left: products
    right: [lost]
stream_joins:
  - output: enriched
    stream: clicks-stream
    table: products
    type: left
    value: "TODO: the joiner's result"
  - output: enriched-lost
    stream: clicks-stream
    table: lost
`, func() *Spec {
			s := &Spec{File: "draft", AppID: "app", Serdes: Serdes{Key: "string", Value: "json"}}
			table := mustReducer(t, "table")
			count := mustReducer(t, "count")
			cat := &TableSpec{Name: "per-category", Regroup: "products", Store: "C"}
			cat.KeyUnsettled("the groupBy mapper's new key over the row")
			cat.ReducerUnsettled("count, or {expr, subtract}")
			clicks := &TableSpec{Name: "clicks", SourceList: StringList{"clicks"}, Reducer: count, Store: "W"}
			clicks.WindowUnsettled("one of {size: 1m}; {size: 1m, advance: 30s}, with the grace")
			orders := &TableSpec{Name: "orders", SourceList: StringList{"orders"}, Store: "O"}
			orders.KeyUnsettled("one of value.a, value.b (both explain every copy)")
			orders.ReducerUnsettled("one of latest, count (they explain the same keys)")
			s.Tables = []*TableSpec{{Name: "products", SourceList: StringList{"products"}, Reducer: table, Store: "P"}, cat, clicks, orders}
			s.DropTable("lost", "which source topic feeds store L")
			j := &JoinSpec{Output: "status", Left: "products", Right: StringList{"orders"}}
			j.TypeUnsettled("inner or left")
			s.Joins = []*JoinSpec{j}
			s.DropJoin("lost-status")
			s.StreamJoins = []*StreamJoinSpec{{Output: "enriched", StreamList: StringList{"clicks-stream"}, Table: "products", Type: JoinLeft}}
			s.DropStreamJoin("enriched-lost")
			return s
		}},
		{"steps", `app_id: app
serdes: {key: string, value: json}
tables:
  - name: orders
    source: orders
    steps:
      - {filter: "TODO: the predicate"}
    select_key: value.id
    reduce: latest
    store: O
  - name: payments
    source: payments
    steps:
      - {mapValues: "TODO: the new value", node: KSTREAM-MAPVALUES-0000000005}
      - {filter: 'value.amount > 0'}
    select_key: value.id
    reduce: sum(amount)
    store: P
  - name: lines
    source: lines
    steps:
      - {flatMapValues: "TODO: a list of values"}
      - {process: '', node: KSTREAM-PROCESSOR-0000000009}
    reduce: count
    store: W
    window: {size: 60000, grace: unknown}
`, func() *Spec {
			s := &Spec{File: "draft", AppID: "app", Serdes: Serdes{Key: "string", Value: "json"}}
			s.Tables = []*TableSpec{
				{Name: "orders", SourceList: StringList{"orders"}, Steps: []*Step{UnknownStep(StepFilter, "", "the predicate")},
					SelectKeyExpr: "value.id", Reducer: mustReducer(t, "latest"), Store: "O"},
				{Name: "payments", SourceList: StringList{"payments"}, Steps: []*Step{UnknownStep(StepMapValues, "KSTREAM-MAPVALUES-0000000005", "the new value"),
					{Kind: StepFilter, Expr: "value.amount > 0"}}, SelectKeyExpr: "value.id", Reducer: mustReducer(t, "sum(amount)"), Store: "P"},
				{Name: "lines", SourceList: StringList{"lines"}, Steps: []*Step{UnknownStep(StepFlatMapValues, "", "a list of values"),
					{Kind: StepProcess, Node: "KSTREAM-PROCESSOR-0000000009"}}, Reducer: mustReducer(t, "count"), Store: "W",
					Window: NewWindow(60000, 60000, 0, true)},
			}
			return s
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fromYAML, err := ParseDraft("draft", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			inCode, err := New(tc.build())
			if err != nil {
				t.Fatal(err)
			}
			got := built(t, inCode)
			golden.Check(t, filepath.Join("testdata", "build", tc.name+".golden"), []byte(got))
			if want := lineRefs.ReplaceAllStringFunc(built(t, fromYAML), func(m string) string {
				if strings.HasPrefix(m, ":") {
					return ":"
				}
				return ""
			}); got != want {
				t.Errorf("built in code:\n%s\nread from YAML, its lines left out:\n%s", got, want)
			}
			if lineRefs.MatchString(got) {
				t.Errorf("a spec built in code cites a line:\n%s", got)
			}
			for i, tb := range inCode.Tables {
				if y := fromYAML.Tables[i]; !slices.Equal(tb.Unsettled, y.Unsettled) || tb.Reducer.String() != y.Reducer.String() || tb.SelectKeyExpr != y.SelectKeyExpr {
					t.Errorf("table %s: unsettled %q reducer %s key %q, from YAML %q %s %q", tb.Name, tb.Unsettled, tb.Reducer, tb.SelectKeyExpr, y.Unsettled, y.Reducer, y.SelectKeyExpr)
				}
				if w, y := windowOf(tb), windowOf(fromYAML.Tables[i]); w != y {
					t.Errorf("table %s: window %s, from YAML %s", tb.Name, w, y)
				}
			}
		})
	}
}

func mustReducer(t *testing.T, s string) Reducer {
	t.Helper()
	r, err := ParseReducer(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// windowOf says a table's window, "none" without one.
func windowOf(t *TableSpec) string {
	if t.Window == nil {
		return "none"
	}
	w := t.Window
	return fmt.Sprintf("size %d advance %d grace %d unknown %t", w.Size, w.Advance, w.Grace, w.GraceUnknown)
}
