package infer

import "testing"

// TestGuessSelectKey: the key of the repartition copies is a field of
// the source records' values, the record key itself, or one constant
// (selectKey((k, v) -> "temp"), Kafka's TemperatureDemo); fewer than 90 %
// alike leaves it to the user.
func TestGuessSelectKey(t *testing.T) {
	pair := func(srcKey string, v map[string]any, copyKey any) Pair {
		return Pair{Src: Rec{Key: srcKey, Value: v}, Copy: Rec{Key: copyKey, Value: v}}
	}
	var field, constant, mixed, fewConst, whole []Pair
	for i := range 10 {
		// map((k, user) -> pair(user, user)): the value itself, a String
		user := "user-" + string(rune('a'+i%3))
		whole = append(whole, Pair{Src: Rec{Value: user}, Copy: Rec{Key: user, Value: user}})
		v := map[string]any{"orderId": "o" + string(rune('a'+i)), "temp": float64(20 + i)}
		field = append(field, pair("k"+string(rune('a'+i)), v, "o"+string(rune('a'+i))))
		constant = append(constant, pair("k"+string(rune('a'+i)), v, "temp"))
		if i%2 == 0 {
			mixed = append(mixed, pair("k", v, "temp"))
		} else {
			mixed = append(mixed, pair("k", v, "other"))
		}
		if i < 4 {
			fewConst = append(fewConst, pair("k"+string(rune('a'+i)), v, "temp"))
		}
	}
	for _, tc := range []struct {
		name  string
		pairs []Pair
		want  string
	}{
		{"a field of the value", field, "value.orderId"},
		{"the value itself", whole, "value"},
		{"one constant key", constant, `"temp"`},
		{"two keys: no guess", mixed, ""},
		{"a constant over too few copies: no guess", fewConst, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if g := GuessSelectKey(tc.pairs, true); g.Value != tc.want {
				t.Errorf("guess %q (%s), want %q", g.Value, g.Evidence, tc.want)
			}
		})
	}
}
