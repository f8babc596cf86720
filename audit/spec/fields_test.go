package spec

import (
	"fmt"
	"testing"
)

func TestFieldPaths(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want string
	}{
		{"value.orderId", "[value.orderId]"},
		{"value.customer.id", "[value.customer.id]"},
		{`value["order"].id + key`, "[value.order.id]"},
		{`{"a": left.orderId, "b": r1?.amount, "c": r2?.carier}`, "[left.orderId r1.amount r2.carier]"},
		{"agg.amount + value.amount", "[agg.amount value.amount]"},
		{"value.a.b + value.a.c", "[value.a.b value.a.c]"},
		{"value", "[]"},
		{"len(value.items) > 0 ? value.items[0].sku : key", "[value.items]"},
	} {
		ps, err := FieldPaths(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if got := fmt.Sprint(ps); got != tc.want {
			t.Errorf("FieldPaths(%s) = %s, want %s", tc.src, got, tc.want)
		}
	}
}

// FuzzFieldPaths: any expression gives paths or an error, never a panic,
// and every path starts from a name.
func FuzzFieldPaths(f *testing.F) {
	for _, s := range []string{"value.orderId", `{"a": left.x, "b": r2?.y}`, `value["a"].b`, "agg.amount + value.amount", "1 +"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		ps, err := FieldPaths(src)
		if err != nil {
			return
		}
		for _, p := range ps {
			if len(p) < 2 {
				t.Fatalf("%q: path %v has no field", src, p)
			}
		}
	})
}
