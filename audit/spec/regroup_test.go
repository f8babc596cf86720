package spec

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRegroupStoreBehindTableStore (AB's V4): a KTable groupBy of a
// builder.table without store: looks for its store behind the table's own
// store (the one the source topic feeds first): with one groupBy the
// store is found, with two (the drill's regroup app) the spec is asked to
// say which, never told that no groupBy store is fed by the source.
func TestRegroupStoreBehindTableStore(t *testing.T) {
	topo := parseFile(t, filepath.Join("..", "..", "testdata", "apps", "regroup.describe.txt"))
	sp, err := ParseSpec("regroup.yaml", []byte(`app_id: kaudit-z-regroup
serdes: {key: string, value: json}
tables:
  - name: products
    source: zr-products
    reduce: table
  - name: per-category
    regroup: products
    select_key: value.category
    reduce: count
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(sp, topo, "kaudit-z-regroup")
	if err == nil || !strings.Contains(err.Error(), "KTABLE-AGGREGATE-STATE-STORE-0000000004") || !strings.Contains(err.Error(), "KTABLE-AGGREGATE-STATE-STORE-0000000010") {
		t.Errorf("error %v, want one naming both groupBy stores behind products' store", err)
	}
}

// TestRegroupNamedSelect: a KTable groupBy named with Grouped.as names its
// select node and its repartition topic; its store is still the one
// behind the table's (AB's seed 2000, refused before).
func TestRegroupNamedSelect(t *testing.T) {
	topo := parseFile(t, filepath.Join("testdata", "named-groupby.describe.txt"))
	sp, err := ParseSpec("kaudit.yaml", []byte(`app_id: kaudit-gen-2000
serdes: {key: string, value: json}
tables:
  - {name: t-n5, source: g2000-4-t, reduce: table}
  - name: t-n7
    regroup: t-n5
    select_key: 'value.cat'
    aggregate: {init: 0, expr: 'agg + value.n', subtract: 'agg - value.n'}
    output: g2000-5-out
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := Resolve(sp, topo, "kaudit-gen-2000")
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range plan.Tables {
		if pt.Name == "t-n7" && (pt.Store != "store-n7" || pt.Repartition != "kaudit-gen-2000-tableGroupBy-n6-repartition") {
			t.Errorf("t-n7: store %q, repartition %q; want store-n7 and kaudit-gen-2000-tableGroupBy-n6-repartition", pt.Store, pt.Repartition)
		}
	}
}
