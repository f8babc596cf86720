package infer

import (
	"fmt"
	"testing"
)

// TestGuessRegroup: a KTable groupBy's mapper (a field of the rows) and
// aggregation (count, or the sum of a numeric field) from the final
// states of the table and of the store; a row deleted since is no row, an
// emptied group holds 0. Candidates that explain the store alike (a field
// that is 1 in every row sums as count does) leave it unsettled, and so
// does a store most of whose groups no candidate explains.
func TestGuessRegroup(t *testing.T) {
	cats := []string{"toys", "books", "garden", "tools", "games", "food"}
	var rows []Rec
	count, sum := map[string]int64{}, map[string]int64{}
	for i := range 18 {
		c := cats[i%len(cats)]
		v := map[string]any{"id": fmt.Sprintf("p%d", i), "category": c, "price": float64(10 + i), "one": float64(1)}
		rows = append(rows, Rec{Key: fmt.Sprintf("p%d", i), Value: v})
		count[c]++
		sum[c] += int64(10 + i)
	}
	// p0 deleted, and its group's states with it
	rows = append(rows, Rec{Key: "p0", Value: nil})
	count["toys"]--
	sum["toys"] -= 10
	store := func(m map[string]int64) []Rec {
		var out []Rec
		for _, c := range cats {
			out = append(out, Rec{Key: c, Value: m[c]})
		}
		return out
	}
	noOne := func(rs []Rec) []Rec {
		out := make([]Rec, len(rs))
		for i, r := range rs {
			out[i] = r
			if m, ok := r.Value.(map[string]any); ok {
				c := map[string]any{}
				for k, v := range m {
					if k != "one" {
						c[k] = v
					}
				}
				out[i].Value = c
			}
		}
		return out
	}
	var regions []Rec
	for i, r := range rows {
		if r.Value != nil {
			regions = append(regions, Rec{Key: r.Key, Value: r.Value.(map[string]any)["category"]})
		} else {
			regions = append(regions, rows[i])
		}
	}
	wrong := map[string]int64{}
	for i, c := range cats {
		wrong[c] = int64(100 + i)
	}
	for _, tc := range []struct {
		name       string
		rows       []Rec
		store      map[string]int64
		key, redce string
	}{
		{"count", noOne(rows), count, "value.category", "count"},
		{"sum of price", noOne(rows), sum, "value.category", "sum:price"},
		{"count, or the sum of a field that is always 1: unsettled", rows, count, "", ""},
		{"no candidate explains the store: unsettled", noOne(rows), wrong, "", ""},
		{"scalar rows grouped by their value (a user's region): count", regions, count, "value", "count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := GuessRegroup(topicOf("rows", tc.rows...), topicOf("store", store(tc.store)...))
			if g.SelectKey.Value != tc.key || g.Reduce.Value != tc.redce {
				t.Errorf("guess %q, %q (%s), want %q, %q", g.SelectKey.Value, g.Reduce.Value, g.SelectKey.Evidence, tc.key, tc.redce)
			}
		})
	}
}
