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
