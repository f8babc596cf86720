package spec

import (
	"strings"
	"testing"
)

// TestParseDraftUnsettled: a draft loads whatever its TODOs; a table the
// evidence did not settle, a KTable groupBy and a cogroup among them (no
// source: of their own), resolves unjudged, naming what it lacks, never
// judged with a placeholder.
func TestParseDraftUnsettled(t *testing.T) {
	draft := `app_id: app
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
  - name: settled
    regroup: products
    select_key: value.category
    reduce: count
    store: D
  - name: clicks
    source: clicks
    window: "TODO: one of {size: 1m}; {size: 1m, advance: 30s}, with the grace"
    reduce: count
    store: W
`
	sp, err := ParseDraft("draft.yaml", []byte(draft))
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Dropped) > 0 {
		t.Fatalf("dropped %v: a KTable groupBy has no source of its own", sp.Dropped)
	}
	plan, err := Resolve(sp, nil, "app")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, pt := range plan.Tables {
		got[pt.Name] = pt.Unjudged
	}
	if u := got["per-category"]; !strings.Contains(u, "per-category is not judged") || !strings.Contains(u, "select_key") {
		t.Errorf("per-category: unjudged %q, want it to name select_key", u)
	}
	if u := got["clicks"]; !strings.Contains(u, "clicks is not judged") || !strings.Contains(u, "the window (one of") {
		t.Errorf("clicks: unjudged %q, want it to name the window", u)
	}
	if w := sp.Table("clicks").Window; w == nil {
		t.Error("clicks: the window is gone: its keys would be read as plain keys")
	}
	if u := got["settled"]; u != "" {
		t.Errorf("settled: unjudged %q, want judged", u)
	}
}
