package draft_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/draft"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/golden"
)

// shape is everything of a spec the audit reads, a line per part, its
// lines left out: a step not yet answered says why, whether the spec
// says it as a TODO (read from YAML) or as Unknown (built in code).
func shape(s *spec.Spec) string {
	var b strings.Builder
	steps := func(what string, sts []*spec.Step) {
		for i, st := range sts {
			text := "expr " + st.Expr
			if st.TODO() && st.Kind != spec.StepProcess {
				text = "not known: " + strings.TrimPrefix(st.Expr+st.Unknown, "TODO: ")
			}
			fmt.Fprintf(&b, "  %s[%d]: %s node %q: %s\n", what, i, st.Kind, st.Node, text)
		}
	}
	serdes := func(what string, sd *spec.Serdes) {
		if sd != nil {
			fmt.Fprintf(&b, "  %s: %+v\n", what, *sd)
		}
	}
	fmt.Fprintf(&b, "app %s topology %q serdes %+v\n", s.AppID, s.Topology, s.Serdes)
	for _, t := range s.Tables {
		fmt.Fprintf(&b, "table %s: source %q store %q repartition %q changelog %q regroup %q\n", t.Name, t.SourceList, t.Store, t.Repartition, t.Changelog, t.Regroup)
		steps("steps", t.Steps)
		fmt.Fprintf(&b, "  select_key %q reduce %s unsettled %q\n", t.SelectKeyExpr, t.Reducer, t.Unsettled)
		if a := t.Aggregate; a != nil {
			fmt.Fprintf(&b, "  aggregate %+v\n", *a)
		}
		if w := t.Window; w != nil {
			fmt.Fprintf(&b, "  window size %d advance %d grace %d unknown %t\n", w.Size, w.Advance, w.Grace, w.GraceUnknown)
		}
		serdes("serdes", t.Serdes)
		serdes("store_serdes", t.StoreSerdes)
		fmt.Fprintf(&b, "  output %q\n", t.Output)
		serdes("output_serdes", t.OutputSerdes)
		steps("output_steps", t.OutputSteps)
		for i, m := range t.Cogroup {
			fmt.Fprintf(&b, "  cogroup[%d]: source %q select_key %q aggregate %q\n", i, m.SourceList, m.SelectKeyExpr, m.Aggregate)
			steps(fmt.Sprintf("cogroup[%d].steps", i), m.Steps)
		}
	}
	for _, j := range s.Joins {
		fmt.Fprintf(&b, "join %s: %s ⋈ %q type %s value %q unsettled %q\n", j.Output, j.Left, j.Right, j.Type, j.Value, j.Unsettled)
	}
	for _, j := range s.StreamJoins {
		fmt.Fprintf(&b, "stream join %s: %q ⋈ %s type %s value %q unsettled %q\n", j.Output, j.StreamList, j.Table, j.Type, j.Value, j.Unsettled)
		steps("steps", j.Steps)
	}
	for _, c := range s.Copies {
		fmt.Fprintf(&b, "copy %s → %s\n", c.Source, c.Output)
		steps("steps", c.Steps)
	}
	for _, d := range s.Dropped {
		fmt.Fprintf(&b, "dropped: %s\n", d)
	}
	return b.String()
}

// hiddenTopology is a capture whose describe() text is not read.
type hiddenTopology struct{ *snapshot.Snapshot }

func (hiddenTopology) Topology() string { return "" }

// TestSpecIsTheYAMLs: the spec a draft builds (Draft.Spec) is the one its
// YAML parses to (spec.ParseDraft of WriteYAML's text), part for part,
// for drafts that hold every kind of guess and unknown (their YAML kept
// as goldens) and for every capture's draft, with and without its
// topology; a draft with no table is ErrNoTable both ways.
func TestSpecIsTheYAMLs(t *testing.T) {
	drafts := map[string]*draft.Draft{}
	for name, d := range built() {
		drafts[name] = d
		var yaml strings.Builder
		if err := d.WriteYAML(&yaml); err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join("testdata", "draft-"+name+".yaml"), []byte(yaml.String()))
	}
	dirs, err := filepath.Glob("../../testdata/apps/*/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range append(dirs, "../../testdata/incidents/dropped/manifest.json", "../../testdata/smoke/capture/manifest.json") {
		dir := filepath.Dir(m)
		man, err := snapshot.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, hide := range []bool{false, true} {
			s, err := snapshot.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			var src audit.Source = s
			name := filepath.Base(dir)
			if hide {
				src, name = hiddenTopology{s}, name+"-no-topology"
			}
			d, err := draft.Infer(t.Context(), src, draft.Options{AppID: man.AppID})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			drafts[name] = d
		}
	}
	for name, d := range drafts {
		t.Run(name, func(t *testing.T) {
			var yaml strings.Builder
			if err := d.WriteYAML(&yaml); err != nil {
				t.Fatal(err)
			}
			fromYAML, yerr := spec.ParseDraft(draft.SpecName, []byte(yaml.String()))
			got, err := d.Spec()
			switch {
			case errors.Is(err, draft.ErrNoTable):
				if yerr == nil || !strings.Contains(yerr.Error(), "at least one table") {
					t.Errorf("Spec: %v; from the YAML: %v", err, yerr)
				}
				return
			case err != nil || yerr != nil:
				t.Fatalf("Spec: %v; from the YAML: %v\n%s", err, yerr, yaml.String())
			}
			if g, w := shape(got), shape(fromYAML); g != w {
				t.Errorf("Spec:\n%s\nfrom the YAML:\n%s\nthe YAML:\n%s", g, w, yaml.String())
			}
		})
	}
}

// built are drafts made by hand, each guess and unknown of every kind:
// with a topology, without one, and with no table at all.
func built() map[string]*draft.Draft {
	known := func(v, ev string) draft.Guess { return draft.Guess{Value: v, Evidence: ev} }
	unknown := func(why string) draft.Guess { return draft.Guess{Unknown: why} }
	step := func(kind spec.StepKind, node string, g draft.Guess) draft.Step {
		return draft.Step{Kind: kind, Node: node, Expr: g}
	}
	topo := &draft.Draft{AppID: "shop", Topology: "the snapshot's topology", Source: "snapshot bundle/", Evidence: true,
		Serdes: &draft.Serdes{Key: known("string", "9/9 UTF-8 text"), Value: known("json", "9/9 JSON")},
		Tables: []draft.Table{
			{Name: "orders", Chain: draft.Chain{Source: known("orders", "9/9 copies match"), FromTopology: true, Steps: []draft.Step{
				step(spec.StepFilter, "KSTREAM-FILTER-0000000001", known(`value.type != "TEST"`, "the 3 records without a copy")),
				step(spec.StepMapValues, "KSTREAM-MAPVALUES-0000000002", unknown("the new value, e.g. {\"f\": value.g}")),
				step(spec.StepPeek, "KSTREAM-PEEK-0000000003", draft.Guess{}),
				step(spec.StepProcess, "KSTREAM-PROCESSOR-0000000004", draft.Guess{Evidence: "a Processor API node"})}},
				SelectKey: known("value.orderId", "9/9 copies"), Reduce: known("latest", "explains 9/9 keys"),
				Store: "S1", Changelog: "shop-S1-changelog", Serdes: known("json", "its values"),
				Output: &draft.Output{Topic: "orders-out", Evidence: "KSTREAM-TOSTREAM-0000000009", FromTopology: true,
					Steps: []draft.Step{step(spec.StepFilter, "KSTREAM-FILTER-0000000010", unknown("the predicate"))}}},
			{Name: "payments", Chain: draft.Chain{Source: known("payments-a", "merged"), Merged: []string{"payments-b"}, FromTopology: true},
				SelectKey: draft.Guess{Unknown: "one of value.a, value.b (both)", Candidates: []string{"value.a", "value.b"}},
				Reduce:    draft.Guess{Unknown: "one of count, latest, or {expr: \"…agg…value…\"} (alike)", Candidates: []string{"count", "latest"}},
				Store:     "S2", Changelog: "shop-S2-changelog", StoreSerdes: known("long", "8/8 8-byte binary")},
			{Name: "lost", Chain: draft.Chain{Source: unknown("which source topic feeds store S3")}, Reduce: unknown("latest | count"), Store: "S3"},
			{Name: "clicks", Chain: draft.Chain{Source: known("clicks", ""), StepsUnknown: "the chain forks"}, SelectKey: known("key", "the key"),
				Window: &draft.Window{Size: 60000, Advance: 30000, Keys: "window keys", Suppressed: true}, Reduce: known("count", "with the window"), Store: "S4"},
			{Name: "views", Chain: draft.Chain{Source: known("views", "")},
				Window: &draft.Window{Keys: "window keys", Evidence: "3 starts", Unknown: "one of {size: 1m}, with the grace"},
				Reduce: unknown("latest | count | sum(FIELD) | sum | {expr: \"…agg…value…\"}"), Store: "S5"},
			{Name: "rekeyed", Chain: draft.Chain{Source: known("rekeyed", "")},
				SelectKey: draft.Guess{Unknown: "the new key selectKey/groupBy computes", Evidence: "no copy matched"}, Reduce: known("sum(amount)", ""), Store: "S6"},
			{Name: "products", Chain: draft.Chain{Source: known("products", "")}, Reduce: known("table", "builder.table()"), Store: "S7"},
			{Name: "per-category", Regroup: &draft.Regroup{Of: "products", Node: "KTABLE-SELECT-0000000011"},
				SelectKey: known("value.category", "explains 9 groups"), Reduce: known("count", ""), Store: "S8",
				Output: &draft.Output{Topic: "per-category-out", Evidence: "KTABLE-TOSTREAM-0000000013", FromTopology: true}},
			{Name: "per-region", Regroup: &draft.Regroup{Of: "products", Node: "KTABLE-SELECT-0000000014", Sum: "price"},
				SelectKey: unknown("the groupBy mapper's new key over the row"), Reduce: known("sum(price)", ""), Store: "S9", StoreSerdes: known("long", "")},
			{Name: "per-brand", Regroup: &draft.Regroup{Of: "products", Node: "KTABLE-SELECT-0000000015"},
				SelectKey: known("value.brand", "explains 9 groups"), Reduce: unknown("count, or {expr: …}"), Store: "S10"},
			{Name: "activity", Store: "S11", StoreSerdes: known("json", "9/9 JSON: a JSON aggregate of Avro streams"), Cogroup: &draft.Cogroup{Init: `{"n": 0}`, Members: []draft.CogroupMember{
				{Chain: draft.Chain{Source: known("taps", "")}, Aggregate: known(`{"n": agg.n + 1}`, "explains 9 keys")},
				{Chain: draft.Chain{Source: known("swipes", ""), FromTopology: true, Steps: []draft.Step{step(spec.StepFilter, "KSTREAM-FILTER-0000000020", known("value.ms > 0", ""))}},
					SelectKey: known("value.user", "9/9"), Aggregate: known(`{"n": agg.n + value.ms}`, "")}}},
				Output: &draft.Output{Topic: "activity-out", Evidence: "KTABLE-TOSTREAM-0000000022", FromTopology: true}},
		},
		Joins: []draft.Join{
			{Skipped: "foreign-key join KTABLE-FK-JOIN-0000000030 → fk-out: not audited by the spec (table-table joins only)"},
			{Output: known("status", "KTABLE-JOINTHIS-0000000031"), Nodes: []string{"KTABLE-JOINTHIS-0000000031"}, Left: known("orders", ""),
				Right: []draft.Guess{known("payments", "")}, Type: known("left", "3 of 9 output keys lack a right state"),
				Value: known(`{"id": left.orderId, "paid": r1?.amount}`, ""), Fields: []string{"id = left.orderId: 9/9 keys"}},
			{Output: known("status2", "n1 → n2"), Nodes: []string{"n1", "n2"}, Left: known("orders", ""), Right: []draft.Guess{known("products", ""), known("rekeyed", "")},
				Type: unknown("every output key has every state"), Value: unknown("x: nothing explains it; or remove this line to check presence only")},
			{Output: known("status3", "n3"), Nodes: []string{"n3"}, Left: unknown("the table kept in X"), Right: []draft.Guess{known("orders", "")},
				Type: unknown("left | inner | outer"), Value: unknown("the joiner's result")},
			{Output: known("status4", "n4"), Nodes: []string{"n4"}, Left: known("orders", ""), Right: []draft.Guess{known("lost", "")},
				Type: known("left", "check the code"), Value: unknown("the joiner's result")},
			{Output: unknown("the topic the join result is written to"), Nodes: []string{"n5"}, Left: known("orders", ""), Right: []draft.Guess{known("payments", "")},
				Type: known("left", "check the code"), Value: unknown("the joiner's result")},
		},
		StreamJoins: []draft.StreamJoin{
			{Output: "global-out", Node: "KSTREAM-LEFTJOIN-0000000040", Skipped: "a join with a GlobalKTable"},
			{Output: "enriched", Node: "KSTREAM-JOIN-0000000041", Chain: draft.Chain{Source: known("taps", ""), Merged: []string{"swipes"}, FromTopology: true,
				Steps: []draft.Step{step(spec.StepSelectKey, "KSTREAM-KEY-SELECT-0000000042", known("value.user", "9/9"))}},
				Table: known("products", ""), Type: known("inner", "KSTREAM-JOIN-: join()"), Value: unknown("the joiner's result")},
			{Output: "enriched2", Node: "KSTREAM-LEFTJOIN-0000000043", Chain: draft.Chain{Source: known("taps", "9/9")},
				Table: unknown("the table kept in S99"), Type: known("left", "leftJoin()"), Value: unknown("the joiner's result")},
			{Output: "enriched3", Node: "KSTREAM-LEFTJOIN-0000000044", Chain: draft.Chain{Source: known("taps", "")},
				Table: known("lost", ""), Type: known("left", "leftJoin()"), Value: unknown("the joiner's result")},
		},
		Copies: []draft.Copy{{Chain: draft.Chain{Source: known("lines", "9/9"), FromTopology: true, Steps: []draft.Step{
			step(spec.StepFlatMapValues, "KSTREAM-FLATMAPVALUES-0000000050", known(`regexSplit(value, "\\W+")`, "explains 9 of 9")),
			step(spec.StepSelectKey, "KSTREAM-KEY-SELECT-0000000051", unknown("the new key"))}}, Output: "words"}},
		Unknown: []string{"the group commits offsets on x, which the topology does not read"},
		Notes:   []string{"topic y does not exist"},
	}
	bare := &draft.Draft{AppID: "shop", Source: "log dirs d/", Evidence: true,
		Serdes: &draft.Serdes{Key: known("string", "9/9 UTF-8 text"), Value: known("json", "9/9 JSON")},
		Tables: []draft.Table{
			{Name: "orders", Chain: draft.Chain{Source: known("orders", "9/9 copies match"), NoSteps: "no consumed record lacks its copy"},
				SelectKey: known("value.orderId", ""), Reduce: known("latest", ""), Store: "KSTREAM-REDUCE-STATE-STORE-0000000003",
				Repartition: "shop-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition",
				Output: &draft.Output{Topic: "orders-out", Evidence: "9/9 records are the changelog's (found without a topology)", Serdes: known("long", "the changelog's values, as its records are"),
					Steps: []draft.Step{step(spec.StepFilter, "", unknown("3 states of the changelog are not on the output"))}}},
			{Name: "payments", Chain: draft.Chain{Source: known("payments", ""), Steps: []draft.Step{step(spec.StepFilter, "", unknown("a filter may stand before the re-key"))}},
				SelectKey: known("value.orderId", ""), Reduce: known("sum(amount)", ""), Store: "KSTREAM-REDUCE-STATE-STORE-0000000010",
				Repartition: "shop-KSTREAM-REDUCE-STATE-STORE-0000000010-repartition"},
			{Name: "busy", Chain: draft.Chain{Source: known("clicks", ""), Steps: []draft.Step{step(spec.StepFilter, "", known("value.n > 3", "inferred without a topology"))}},
				Window: &draft.Window{Size: 60000, Advance: 60000, Keys: "window keys"}, Reduce: known("count", ""), Store: "KSTREAM-AGGREGATE-STATE-STORE-0000000020",
				Output: &draft.Output{Topic: "busy-out", Evidence: "keyed by its windows: 9/9 records (found without a topology)",
					Steps: []draft.Step{step(spec.StepFilter, "", known("value >= 4", "the states"))}}},
		},
		Joins: []draft.Join{{Output: draft.Guess{Value: "status", Evidence: "keyed by table orders's keys: 9/9 (found without a topology)"},
			Left: known("orders", ""), Right: []draft.Guess{known("payments", "")}, Type: known("left", "3 of 9"), Value: known(`{"paid": r1?.amount}`, "")}},
	}
	for _, d := range []*draft.Draft{topo, bare} {
		for i := range d.Tables {
			if t := &d.Tables[i]; t.Changelog == "" {
				t.Changelog = d.AppID + "-" + t.Store + "-changelog"
			}
		}
	}
	none := &draft.Draft{AppID: "shop", TopologyFile: "topology.txt", Topology: "topology.txt", Serdes: &draft.Serdes{Value: draft.Guess{Value: "json"}, Given: true},
		JoinsNote: "not known without a topology (--topology)"}
	return map[string]*draft.Draft{"topology": topo, "no-topology": bare, "no-table": none}
}
