package topology

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestProducts lists what each real 3.6 topology makes (its stores and
// outputs) with the nodes on the way kaudit does not model: a
// foreign-key join, a stream-stream join, a stream-table join, a KTable
// groupBy, a Processor API node each name theirs; the seed's reduce and
// join chain, and windowed folds, name none.
func TestProducts(t *testing.T) {
	files, err := filepath.Glob("../../testdata/kafka/describe/out/3.6/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no describe() texts: %v", err)
	}
	var b strings.Builder
	for _, f := range files {
		tp, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "== %s\n", filepath.Base(f))
		for _, p := range tp.Layout("app").Products() {
			what := "store " + p.Store
			if p.Topic != "" {
				what = "topic " + p.Topic
			}
			var un []string
			for _, n := range p.Unmodelled {
				un = append(un, n.Name)
			}
			fmt.Fprintf(&b, "%s by %s; unmodelled: %s\n", what, strings.Join(p.Writers, ","), strings.Join(un, ","))
		}
	}
	got := b.String()
	for _, must := range []string{
		"topic enriched-orders by KSTREAM-SINK-0000000021; unmodelled: KTABLE-FK-JOIN-",
		"topic sales-enriched by KSTREAM-SINK-0000000009; unmodelled: KSTREAM-LEFTJOIN-0000000008\n",
		"topic order-status by KSTREAM-SINK-0000000028; unmodelled: \n",
		"topic users-per-region by KSTREAM-SINK-0000000022; unmodelled: KTABLE-AGGREGATE-0000000020\n",
	} {
		if !strings.Contains(got, must) {
			t.Errorf("products lack %q", must)
		}
	}
	if strings.Contains(got, "store KSTREAM-JOINTHIS") || strings.Contains(got, "store KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE") {
		t.Errorf("an operator's own store is listed as a product")
	}
	golden(t, "products.txt", []byte(got))
}
