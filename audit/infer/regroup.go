package infer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/spec"
)

// RegroupGuess is what the evidence says of a KTable groupBy: the
// mapper's new key (a field of the rows: select_key) and the aggregation
// (count, or the sum of a numeric field with its subtractor).
type RegroupGuess struct {
	SelectKey Guess
	// Reduce is "count", or "sum:F" for aggregate(0, agg + value.F,
	// agg - value.F); "" when not settled.
	Reduce Guess
}

// GuessRegroup guesses a KTable groupBy's mapper and aggregation from
// the final state of the table it re-groups (rows: a topic of its rows,
// each key's last record, a tombstone deleting it) and of its own store
// (changelog: each group's last record): the top-level field F of the
// rows and the aggregation (count, or the sum of a numeric field P) whose
// fold over the rows grouped by F gives the store's value for at least
// 90 % of its groups (at least MinKeys). An emptied group holds 0 for
// both. Two candidates that explain as many groups (a field P that is 1
// in every row, two fields always equal) leave it unsettled.
func GuessRegroup(rows, changelog *Topic) RegroupGuess {
	if rows == nil || changelog == nil {
		return RegroupGuess{SelectKey: Guess{Evidence: "the table's rows or the store's changelog were not read"}}
	}
	if !allWhole(rows) || !allWhole(changelog) {
		return RegroupGuess{SelectKey: Guess{Evidence: "the table's rows or the store's changelog lost their first records: the final states are not known whole"}}
	}
	last := map[string]any{} // the table's rows: each key's last value
	for k, v := range finalStates(rows) {
		if v.v != nil {
			last[k] = v.v
		}
	}
	final := map[string]float64{}
	for k, v := range finalStates(changelog) {
		if f, ok := toFloat(v.v); ok {
			final[k] = f
		}
	}
	if len(final) < MinKeys || len(last) == 0 {
		return RegroupGuess{SelectKey: Guess{Evidence: fmt.Sprintf("%d groups in the store, %d rows in the table (want %d groups)", len(final), len(last), MinKeys)}}
	}
	// candidate fields: the rows' top-level scalar fields
	fields := map[string]bool{}
	numeric := map[string]bool{}
	for _, row := range last {
		m, ok := row.(map[string]any)
		if !ok {
			// a scalar row (a user's region): grouped by the value itself
			switch row.(type) {
			case []any:
			default:
				fields[""] = true
			}
			continue
		}
		for f, v := range m {
			if !spec.IsIdent(f) {
				continue
			}
			switch v.(type) {
			case map[string]any, []any:
			default:
				fields[f] = true
				if _, ok := toFloat(v); ok {
					numeric[f] = true
				}
			}
		}
	}
	type cand struct{ key, reduce string }
	var cands []cand
	for f := range fields {
		cands = append(cands, cand{f, "count"})
		for p := range numeric {
			cands = append(cands, cand{f, "sum:" + p})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return strings.Compare(a.key+" "+a.reduce, b.key+" "+b.reduce) })
	best, bestN, ties := cand{}, -1, 0
	for _, c := range cands {
		agg := map[string]float64{}
		for _, row := range last {
			g := row
			if c.key != "" {
				g = walk(row, []string{c.key})
			}
			if g == nil {
				continue // KTableRepartitionMap skips a null key
			}
			add := 1.0
			if p, ok := strings.CutPrefix(c.reduce, "sum:"); ok {
				v, ok := toFloat(walk(row, []string{p}))
				if !ok {
					continue
				}
				add = v
			}
			agg[codec.Text(g)] += add
		}
		n := 0
		for k, v := range final {
			if math.Abs(agg[k]-v) < 1e-9 {
				n++
			}
		}
		switch {
		case n > bestN:
			best, bestN, ties = c, n, 0
		case n == bestN:
			ties++
		}
	}
	total := len(final)
	why := fmt.Sprintf("explains %d/%d groups' final states in the store from the table's %d rows", bestN, total, len(last))
	if bestN*10 < total*9 {
		return RegroupGuess{SelectKey: Guess{Evidence: "no field and aggregation of the rows " + why}}
	}
	if ties > 0 {
		return RegroupGuess{SelectKey: Guess{Evidence: fmt.Sprintf("%d mappers and aggregations of the rows explain the store alike (%s)", ties+1, why)}}
	}
	key := "value"
	if best.key != "" {
		key += "." + best.key
	}
	return RegroupGuess{SelectKey: Guess{Value: key, Evidence: why}, Reduce: Guess{Value: best.reduce, Evidence: why}}
}

func allWhole(t *Topic) bool {
	for _, p := range slices.Collect(maps.Keys(t.Parts)) {
		if !t.Whole[p] {
			return false
		}
	}
	return true
}
