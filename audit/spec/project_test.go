package spec

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"

	"github.com/kaudit/kaudit/audit/codec"
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

// TestCopiesText: where the join's value copies top-level fields (Copies),
// the canonical text of Eval's value is the object of the copied fields'
// own texts, keys in Copies' order, null for a field the side lacks or an
// absent side read with ?., for every kind of value an Avro field that is
// no record, array or map decodes to (strings, booleans, null, integers
// to ±2^63, doubles and floats as the codec prints them, a duration):
// what the join writes its expected values' digests from.
func TestCopiesText(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	leaf := func() any {
		switch rng.IntN(9) {
		case 0:
			return nil
		case 1:
			return rng.IntN(2) == 0
		case 2:
			return []string{"s", "NaN", "Infinity", "-12.30", "1e3", "2026-11-30T10:01:02.345Z", "é\"\\\n"}[rng.IntN(7)]
		case 3:
			return json.Number(strconv.FormatInt(rng.Int64()-rng.Int64(), 10))
		case 4:
			return json.Number(strconv.FormatInt([]int64{math.MaxInt64, math.MinInt64, 0, -1, 1 << 53, 1<<53 + 1}[rng.IntN(6)], 10))
		case 5:
			f := []float64{1e20, 1e21, 1e-7, 123.45, -0.0, 5, 0.1, 1.0 / 3, math.MaxFloat64, math.SmallestNonzeroFloat64, 4.35, 1e300}[rng.IntN(12)]
			return json.Number(codec.Text(f))
		case 6:
			return json.Number(codec.Text(math.Float64frombits(rng.Uint64()&^(0x7ff<<52) | uint64(rng.IntN(2047))<<52)))
		case 7:
			return json.Number(codec.Text(float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(60)-30)))))
		default:
			return map[string]any{"months": json.Number("1"), "days": json.Number("2"), "milliseconds": json.Number(strconv.Itoa(rng.IntN(1 << 30)))}
		}
	}
	record := func() any {
		if rng.IntN(5) == 0 {
			return nil // an absent side
		}
		m := map[string]any{}
		for _, f := range []string{"orderId", "amount", "x", "y"} {
			if rng.IntN(4) > 0 {
				m[f] = leaf()
			}
		}
		return m
	}
	for _, src := range []string{
		`{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}`,
		`{"b": r1?.x, "a": left?.x, "é": r2?.y, "A": left?.amount, "z": r1?.orderId}`,
		`{}`,
	} {
		j, err := NewJoin("out", "l", []string{"r1", "r2"}, JoinOuter, src)
		if err != nil {
			t.Fatal(err)
		}
		copies := j.Copies()
		if copies == nil {
			t.Fatalf("%s: no Copies", src)
		}
		for i := range 5000 {
			sides := []any{record(), record(), record()}
			if sides[0] == nil && sides[1] == nil && sides[2] == nil {
				continue
			}
			got := []byte{'{'}
			ok := true
			for k, c := range copies {
				if k > 0 {
					got = append(got, ',')
				}
				got = append(got, codec.Text(c.Key)+":"...)
				side, _ := sides[c.Side].(map[string]any)
				x, has := side[c.Field]
				switch {
				case side == nil && !c.Optional:
					ok = false
				case !has:
					got = append(got, "null"...)
				default:
					got = append(got, codec.Text(x)...)
				}
			}
			got = append(got, '}')
			if !ok {
				continue // a copy reads an absent side without ?.: the join declines
			}
			var want []byte
			for _, noProj := range []bool{true, false} {
				noProjection = noProj
				v, err := j.Eval(sides[0], sides[1:])
				noProjection = false
				if err != nil {
					t.Fatalf("%s, case %d: %v", src, i, err)
				}
				if noProj {
					want = []byte(codec.Text(v))
				} else if codec.Text(v) != string(want) {
					t.Fatalf("%s, case %d: the projection gives %s, the program %s", src, i, codec.Text(v), want)
				}
			}
			if string(got) != string(want) {
				t.Fatalf("%s, case %d, sides %v: the copies' texts give %s, Eval %s", src, i, sides, got, want)
			}
		}
	}
}
