package spec

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestProjectionIsTheProgram: a join value that only copies fields gives,
// by the projection, exactly what its program gives (value or error), on
// values of every shape: missing fields, nil sides and fields, numbers
// the program rewrites (1.50, 1e3, past int64), values that are not
// objects.
func TestProjectionIsTheProgram(t *testing.T) {
	exprs := []struct {
		src    string
		rights int
		proj   bool // a projection (else the program alone)
	}{
		{`{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}`, 2, true},
		{`{"a": left.x.y, "b": right?.x?.y, "c": r1.x}`, 1, true},
		{`{"a": left?.x.y, "b": r2?.x}`, 2, true},
		{`{"n": left.n}`, 0, true},
		{`{"a": left.x, "a2": left.x}`, 0, true},
		{`{"a": left.x + 1}`, 0, false},
		{`{"a": left["x"]}`, 0, true}, // the same member access as left.x
		{`left`, 0, false},
		{`{"a": r3?.x}`, 2, false}, // r3 is not in the environment: compile fails
		{`{"a": left.x, "a": left.y}`, 0, false},
	}
	leaves := []any{nil, "s", true, json.Number("7"), json.Number("1.50"), json.Number("1e3"), json.Number("-0"),
		json.Number("123456789012345678901234"), json.Number("NaN"), []any{json.Number("1"), "x"}, map[string]any{"z": json.Number("2.0")}}
	rng := rand.New(rand.NewPCG(1, 2))
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rng.IntN(6); {
		case k == 0 || depth > 2:
			return leaves[rng.IntN(len(leaves))]
		case k == 1:
			return nil
		default:
			m := map[string]any{}
			for _, f := range []string{"orderId", "amount", "x", "y", "n"} {
				if rng.IntN(3) > 0 {
					m[f] = value(depth + 1)
				}
			}
			return m
		}
	}
	for _, e := range exprs {
		j, err := NewJoin("out", "l", make([]string, e.rights), JoinOuter, e.src)
		if err != nil {
			if e.proj {
				t.Fatalf("%s: %v", e.src, err)
			}
			continue
		}
		if (j.proj != nil) != e.proj {
			t.Fatalf("%s: projection %v, want %v", e.src, j.proj != nil, e.proj)
		}
		fast, slow := 0, 0
		for i := range 3000 {
			left := value(0)
			rights := make([]any, e.rights)
			for r := range rights {
				rights[r] = value(0)
			}
			noProjection = true
			want, wantErr := j.Eval(left, rights)
			noProjection = false
			got, gotErr := j.Eval(left, rights)
			if (wantErr != nil) != (gotErr != nil) || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, case %d, left %v, rights %v: projection gives %#v, %v; the program %#v, %v", e.src, i, left, rights, got, gotErr, want, wantErr)
			}
			if fields := j.SideFields(); fields != nil {
				// the values cut to the fields the projection reads give the same
				cut := func(v any, fs []string) any {
					m, ok := v.(map[string]any)
					if !ok {
						return v
					}
					out := map[string]any{}
					for _, f := range fs {
						if x, ok := m[f]; ok {
							out[f] = x
						}
					}
					return out
				}
				cr := make([]any, len(rights))
				for r := range rights {
					cr[r] = cut(rights[r], fields[r+1])
				}
				got, gotErr := j.Eval(cut(left, fields[0]), cr)
				if (wantErr != nil) != (gotErr != nil) || !reflect.DeepEqual(got, want) {
					t.Fatalf("%s, case %d, left %v, rights %v cut to %v: %#v, %v; whole %#v, %v", e.src, i, left, rights, fields, got, gotErr, want, wantErr)
				}
			}
			if j.proj != nil {
				if _, ok, _ := j.proj.eval(left, rights); ok {
					fast++
				} else {
					slow++
				}
			}
		}
		if e.proj && fast < 300 {
			t.Errorf("%s: the projection answered %d of %d cases itself", e.src, fast, fast+slow)
		}
		t.Logf("%s: %d by the projection, %d by the program", e.src, fast, slow)
	}
}
