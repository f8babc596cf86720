package infer

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/spec"
)

// CogroupInput is one cogrouped stream: its source's records and the
// steps (the member's filter and the like, then its key) that make the
// aggregator's inputs.
type CogroupInput struct {
	Source *Topic
	Steps  []*spec.Step
}

// CogroupGuess is a cogroup's aggregators (one per input, in order) and
// initializer, as the spec writes them; none when not settled.
type CogroupGuess struct {
	Aggregators []string
	Init        string
	Evidence    string
}

// maxCogroupCombos bounds the aggregators GuessCogroup tries per field.
const maxCogroupCombos = 4096

// GuessCogroup guesses a cogroup's aggregators from the store's final
// states (records of numeric fields): for each field F, each input's
// aggregator leaves it (agg.F), counts (agg.F + 1) or adds one of the
// input's numeric fields (agg.F + value.X), from 0; the choice whose fold
// over each key's inputs gives F's final value for at least 90 % of the
// store's keys (at least MinKeys), and no other as well. A state that is
// no record of numbers, or a field no choice settles, leaves it unsettled.
func GuessCogroup(inputs []CogroupInput, changelog *Topic) CogroupGuess {
	if changelog == nil || !allWhole(changelog) {
		return CogroupGuess{Evidence: "the store's changelog was not read whole"}
	}
	final := map[string]map[string]float64{}
	var fields []string
	for k, v := range finalStates(changelog) {
		if v.v == nil {
			continue // deleted
		}
		m, ok := v.v.(map[string]any)
		if !ok {
			return CogroupGuess{Evidence: "the store's states are not records"}
		}
		st := map[string]float64{}
		for f, v := range m {
			x, ok := toFloat(v)
			if !ok || !spec.IsIdent(f) {
				return CogroupGuess{Evidence: fmt.Sprintf("field %s of the store's states is not a number", f)}
			}
			st[f] = x
			if !slices.Contains(fields, f) {
				fields = append(fields, f)
			}
		}
		final[k] = st
	}
	if len(final) < MinKeys || len(fields) == 0 {
		return CogroupGuess{Evidence: fmt.Sprintf("%d keys in the store (want %d)", len(final), MinKeys)}
	}
	slices.Sort(fields)
	// each input's elements per key, and the numeric fields of its values
	type input struct {
		byKey   map[string][]map[string]any
		numeric []string
	}
	ins := make([]input, len(inputs))
	for i, in := range inputs {
		if in.Source == nil {
			return CogroupGuess{Evidence: "an input's source was not read"}
		}
		ins[i].byKey = map[string][]map[string]any{}
		num := map[string]bool{}
		for r := range in.Source.each() {
			if r.Undecodable || r.Value == nil {
				continue
			}
			els, err := spec.ApplySteps(in.Steps, spec.RecordEnv{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
			if err != nil {
				return CogroupGuess{Evidence: "an input's steps failed on its records: " + err.Error()}
			}
			for _, e := range els {
				m, ok := e.Value.(map[string]any)
				if e.Key == nil || !ok {
					continue
				}
				k := codec.Text(e.Key)
				ins[i].byKey[k] = append(ins[i].byKey[k], m)
				for f, v := range m {
					if _, ok := toFloat(v); ok && spec.IsIdent(f) {
						num[f] = true
					}
				}
			}
		}
		ins[i].numeric = slices.Sorted(maps.Keys(num))
	}
	choices := make([][]string, len(ins)) // per input: "" (leaves it), "1", or a field
	combos := 1
	for i := range ins {
		choices[i] = append([]string{"", "1"}, ins[i].numeric...)
		combos *= len(choices[i])
	}
	if combos > maxCogroupCombos {
		return CogroupGuess{Evidence: fmt.Sprintf("%d aggregator choices per field: too many to try", combos)}
	}
	picked := make([][]string, len(ins)) // per input, per field (fields order): the choice
	for i := range picked {
		picked[i] = make([]string, len(fields))
	}
	total := len(final)
	for fi, f := range fields {
		best, bestN, ties := []string(nil), -1, 0
		cur := make([]string, len(ins))
		var walk func(i int)
		walk = func(i int) {
			if i < len(ins) {
				for _, c := range choices[i] {
					cur[i] = c
					walk(i + 1)
				}
				return
			}
			n := 0
			for k, st := range final {
				sum := 0.0
				for j, c := range cur {
					for _, v := range ins[j].byKey[k] {
						switch c {
						case "":
						case "1":
							sum++
						default:
							x, _ := toFloat(v[c])
							sum += x
						}
					}
				}
				if math.Abs(sum-st[f]) < 1e-9 {
					n++
				}
			}
			switch {
			case n > bestN:
				best, bestN, ties = slices.Clone(cur), n, 0
			case n == bestN:
				ties++
			}
		}
		walk(0)
		if bestN*10 < total*9 || ties > 0 {
			return CogroupGuess{Evidence: fmt.Sprintf("field %s: the best aggregators explain %d/%d keys' final states, %d others as many", f, bestN, total, ties)}
		}
		for i := range ins {
			picked[i][fi] = best[i]
		}
	}
	g := CogroupGuess{Evidence: fmt.Sprintf("each field explains at least 90%% of the %d keys' final states from 0", total)}
	var init []string
	for _, f := range fields {
		init = append(init, strconv.Quote(f)+": 0")
	}
	g.Init = "{" + strings.Join(init, ", ") + "}"
	for i := range ins {
		var parts []string
		for fi, f := range fields {
			e := "agg." + f
			switch c := picked[i][fi]; c {
			case "":
			case "1":
				e += " + 1"
			default:
				e += " + value." + c
			}
			parts = append(parts, strconv.Quote(f)+": "+e)
		}
		g.Aggregators = append(g.Aggregators, "{"+strings.Join(parts, ", ")+"}")
	}
	return g
}
