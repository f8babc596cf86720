package infer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/codec"
)

// finalStates is each key's last committed state in a changelog (nil for
// a tombstone).
func finalStates(t *Topic) map[string]val {
	out := map[string]val{}
	if t == nil {
		return out
	}
	for _, rs := range t.Parts {
		for i := range rs {
			r := &rs[i]
			if r.Undecodable || r.Key == nil {
				continue
			}
			out[keyOf(r.Key)] = r.value()
		}
	}
	return out
}

// joinRow is one output key: its last output value and its tables' final
// states (rights as values, and with their digests: rightVals).
type joinRow struct {
	out       val
	left      val
	rights    []any
	rightVals []val
}

// joinRows pairs each output key's last committed value with the final
// states of the join's tables; false when a topic was not read.
func joinRows(pj spec.PlannedJoin, plan *spec.Plan, ev *Evidence) ([]joinRow, bool) {
	out := ev.Topics[pj.Output]
	if out == nil {
		return nil, false
	}
	var states []map[string]val
	for _, name := range append([]string{pj.Left}, pj.Right...) {
		pt := plan.Table(name)
		if pt == nil || ev.Topics[pt.Changelog] == nil {
			return nil, false
		}
		states = append(states, finalStates(ev.Topics[pt.Changelog]))
	}
	last := map[string]val{}
	var keys []string
	for _, rs := range out.Parts {
		for i := range rs {
			r := &rs[i]
			if r.Undecodable || r.Key == nil {
				continue
			}
			k := keyOf(r.Key)
			if _, ok := last[k]; !ok {
				keys = append(keys, k)
			}
			last[k] = r.value()
		}
	}
	sort.Strings(keys)
	var rows []joinRow
	for _, k := range keys {
		if last[k].v == nil {
			continue
		}
		row := joinRow{out: last[k], left: states[0][k]}
		for _, s := range states[1:] {
			row.rights = append(row.rights, s[k].v)
			row.rightVals = append(row.rightVals, s[k])
		}
		rows = append(rows, row)
	}
	return rows, true
}

// JoinGuess is a join's value and type as the evidence shows them.
type JoinGuess struct {
	Type spec.JoinType
	// TypeNote says what the type rests on; with TypeUnknown, why the
	// evidence does not tell the type (Type is then left, a placeholder).
	TypeNote    string
	TypeUnknown bool
	// Value is the value expression; "" when the evidence settles none.
	Value string
	// Fields are the output fields with the source each was matched to
	// and how many keys agree, for the draft's comments; TODO lists the
	// fields nothing explains.
	Fields []string
	TODO   []string
	Keys   int
	// Whole is how many of the Keys output values the value built
	// rebuilds whole.
	Whole int
}

// roots names the join's environment: left, r1, r2…
func roots(n int) []string {
	out := []string{"left"}
	for i := 1; i <= n; i++ {
		out = append(out, "r"+strconv.Itoa(i))
	}
	return out
}

// InferJoin guesses a join's type and value from its output and its
// tables' final states: each output field is the field of the left or a
// right state that equals it for the most keys (a right table without
// the key gives null, as in a left join). order is the output fields'
// order (the writer schema's); nil sorts them.
func InferJoin(pj spec.PlannedJoin, plan *spec.Plan, ev *Evidence, order []string) JoinGuess {
	rows, ok := joinRows(pj, plan, ev)
	return inferJoin(pj, rows, ok, order)
}

// inferJoin is InferJoin on joinRows' rows.
func inferJoin(pj spec.PlannedJoin, rows []joinRow, ok bool, order []string) JoinGuess {
	g := JoinGuess{Type: spec.JoinLeft}
	if !ok || len(rows) == 0 {
		g.TypeNote = "no output record to infer from"
		return g
	}
	g.Keys = len(rows)
	leftNil, rightNil := 0, 0
	for _, r := range rows {
		if r.left.v == nil {
			leftNil++
		}
		if slices.Contains(r.rights, nil) {
			rightNil++
		}
	}
	switch {
	case leftNil > 0:
		g.Type, g.TypeNote = spec.JoinOuter, fmt.Sprintf("%d of %d output keys have no left state", leftNil, len(rows))
	case rightNil > 0:
		g.Type, g.TypeNote = spec.JoinLeft, fmt.Sprintf("%d of %d output keys lack a right state", rightNil, len(rows))
	default:
		g.Type, g.TypeNote, g.TypeUnknown = spec.JoinLeft, "every output key has every state: inner or left, the evidence cannot tell", true
	}
	names := roots(len(pj.Right))
	rootVal := func(r joinRow, i int) val {
		if i == 0 {
			return r.left
		}
		return r.rightVals[i-1]
	}
	ref := func(i int, field string) string {
		opt := "?."
		if i == 0 && g.Type != spec.JoinOuter {
			opt = "."
		}
		if field == "" {
			return names[i]
		}
		return names[i] + opt + field
	}
	outs, objects := []any{}, true
	for _, r := range rows {
		outs = append(outs, r.out.v)
		if _, ok := r.out.v.(map[string]any); !ok {
			objects = false
		}
	}
	need := len(rows) * 9 / 10 // a field's source must explain 90 % of the keys
	if !objects {
		// the output is one table's value whole
		best, bestN := -1, 0
		for i := range names {
			n := 0
			for _, r := range rows {
				if r.out.same(rootVal(r, i)) {
					n++
				}
			}
			if n > bestN {
				best, bestN = i, n
			}
		}
		if best >= 0 && bestN >= need {
			g.Value = names[best]
			g.Fields = append(g.Fields, fmt.Sprintf("the output is %s: %d/%d keys", names[best], bestN, len(rows)))
		}
		return g
	}
	fields, _ := fieldsAt(outs, nil)
	if order != nil {
		fields = orderLike(fields, order)
	}
	// each source field's values (by root, then field), and each output
	// field's, digested once for all the comparisons below
	type srcField struct {
		name string
		vals []val // by row
	}
	srcs := make([][]srcField, len(names))
	for i := range names {
		var vals []any
		for _, r := range rows {
			if v := rootVal(r, i).v; v != nil {
				vals = append(vals, v)
			}
		}
		srcFields, _ := fieldsAt(vals, nil)
		for _, sf := range srcFields {
			if !spec.IsIdent(sf) {
				continue
			}
			vs := make([]val, len(rows))
			for j, r := range rows {
				if m, ok := rootVal(r, i).v.(map[string]any); ok {
					vs[j] = valOf(m[sf])
				}
			}
			srcs[i] = append(srcs[i], srcField{sf, vs})
		}
	}
	outVals := make([]val, len(rows))
	var parts []string
	for _, f := range fields {
		type cand struct {
			ref string
			n   int
			pri int
		}
		for j, r := range rows {
			outVals[j] = valOf(r.out.v.(map[string]any)[f])
		}
		var cands []cand
		for i := range names {
			// the whole of a side's state, as a field of the output
			// ({"order": left, "payments": r1})
			n := 0
			for j, r := range rows {
				if outVals[j].same(rootVal(r, i)) {
					n++
				}
			}
			whole := ref(i, "")
			if i > 0 || g.Type == spec.JoinOuter {
				whole = names[i] // a right side may be nil: the field is null then
			}
			cands = append(cands, cand{whole, n, i*2 + 1})
			for _, src := range srcs[i] {
				sf := src.name
				n := 0
				for j, v := range src.vals {
					if outVals[j].same(v) {
						n++
					}
				}
				pri := i * 2
				if sf != f {
					pri++
				}
				cands = append(cands, cand{ref(i, sf), n, pri})
			}
		}
		sort.SliceStable(cands, func(a, b int) bool {
			if cands[a].n != cands[b].n {
				return cands[a].n > cands[b].n
			}
			return cands[a].pri < cands[b].pri
		})
		if len(cands) == 0 || cands[0].n < need {
			var alts []string
			for _, c := range cands[:min(3, len(cands))] {
				alts = append(alts, fmt.Sprintf("%s %d/%d", c.ref, c.n, len(rows)))
			}
			g.TODO = append(g.TODO, fmt.Sprintf("%s: nothing explains it (closest: %s)", f, strings.Join(alts, ", ")))
			continue
		}
		note := fmt.Sprintf("%s = %s: %d/%d keys", f, cands[0].ref, cands[0].n, len(rows))
		if len(cands) > 1 && cands[1].n == cands[0].n {
			note += fmt.Sprintf(" (as does %s)", cands[1].ref)
		}
		g.Fields = append(g.Fields, note)
		parts = append(parts, strconv.Quote(f)+": "+cands[0].ref)
	}
	if len(g.TODO) == 0 {
		g.Value = "{" + strings.Join(parts, ", ") + "}"
		// field by field is not whole: the value built must be the output's
		// (a field the app leaves out where a side is null is no null field)
		if j, err := spec.NewJoin(pj.Output, pj.Left, pj.Right, g.Type, g.Value); err == nil {
			n, nils, nilsOK := 0, 0, 0
			for _, r := range rows {
				ok := false
				if got, err := j.Eval(r.left.v, r.rights); err == nil && valOf(got).same(r.out) {
					n++
					ok = true
				}
				if r.left.v == nil || slices.Contains(r.rights, nil) {
					nils++
					if ok {
						nilsOK++
					}
				}
			}
			g.Whole = n
			switch {
			case n < need:
				g.TODO = append(g.TODO, fmt.Sprintf("%s reproduces %d of %d output values whole", g.Value, n, len(rows)))
				g.Value = ""
			case nils >= 3 && nilsOK*2 < nils:
				// a loss is one key's; every key a side is missing for is the
				// value's own shape (a field the app leaves out, not null)
				g.TODO = append(g.TODO, fmt.Sprintf("%s reproduces the output of %d of the %d keys a table has no state for (does the app leave the field out, rather than null?)", g.Value, nilsOK, nils))
				g.Value = ""
			}
		}
	}
	return g
}

// orderLike orders names as order lists them, the others after, sorted.
func orderLike(names, order []string) []string {
	var out []string
	for _, o := range order {
		if slices.Contains(names, o) {
			out = append(out, o)
		}
	}
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// CheckJoin measures how many output keys the join's value explains (the
// last output equals the joiner over the tables' final states), against
// the value the evidence suggests. A value that fails on the data, or
// that the suggestion beats by the rule, leaves the join unjudged.
func CheckJoin(pj spec.PlannedJoin, plan *spec.Plan, ev *Evidence, order []string) Verdict {
	v := Verdict{Name: pj.Output, Explained: map[string]int{}, of: "output keys"}
	rows, ok := joinRows(pj, plan, ev)
	if ok {
		if why := contradictsType(pj, rows); why != "" {
			v.Unjudged = fmt.Sprintf("join %s is not judged: the spec does not describe the app: %s", pj.Output, why)
			return v
		}
	}
	if pj.Spec == nil || !pj.Spec.HasValue() {
		v.Note = fmt.Sprintf("join %s has no value: only presence is checked", pj.Output)
		return v
	}
	v.Spec = pj.Spec.Value
	if !ok {
		v.Note = fmt.Sprintf("join %s not checked against the evidence: a topic was not read", pj.Output)
		return v
	}
	var fail error
	count := func(j *spec.JoinSpec) int {
		n := 0
		for _, r := range rows {
			if !j.Present(r.left.v, r.rights) {
				continue
			}
			got, err := j.Eval(r.left.v, r.rights)
			if err != nil {
				if fail == nil && j == pj.Spec {
					fail = err
				}
				continue
			}
			if valOf(got).same(r.out) {
				n++
			}
		}
		return n
	}
	for _, r := range rows {
		if pj.Spec.Present(r.left.v, r.rights) {
			v.Keys++
		}
	}
	v.Explained[v.Spec] = count(pj.Spec)
	if g := inferJoin(pj, rows, true, order); g.Value != "" && g.Value != v.Spec {
		if j, err := spec.NewJoin(pj.Output, pj.Left, pj.Right, pj.Type, g.Value); err == nil {
			v.Explained[g.Value] = count(j)
		}
	}
	v.decide("join")
	if fail != nil {
		v.Unjudged = fmt.Sprintf("join %s is not judged: its value fails on the data: %v (%s)", pj.Output, fail, v.Summary())
	}
	return v
}

// contradictsType says how the output contradicts the join's type, ""
// when it does not: an inner join emits no key a right table lacks, a left
// join none the left table lacks. A few such keys may be a loss the audit
// is to find (a state reset); the type is refuted by at least MinKeys of
// them, or a tenth of the output keys.
func contradictsType(pj spec.PlannedJoin, rows []joinRow) string {
	leftNil, rightNil := 0, 0
	for _, r := range rows {
		if r.out.v == nil {
			continue // a tombstone: the join deleted the key
		}
		if r.left.v == nil {
			leftNil++
		}
		if slices.Contains(r.rights, nil) {
			rightNil++
		}
	}
	many := func(n int) bool { return n >= MinKeys || n > 0 && n*10 >= len(rows) }
	switch {
	case pj.Type == spec.JoinInner && many(rightNil):
		return fmt.Sprintf("type inner, but %d of %d output keys hold a value while a right table has no state for them (a left join)", rightNil, len(rows))
	case pj.Type != spec.JoinOuter && many(leftNil):
		return fmt.Sprintf("type %s, but %d of %d output keys hold a value while the left table has no state for them (an outer join)", pj.Type, leftNil, len(rows))
	}
	return ""
}

// OutputOrder is the field order of a topic's first record value, its
// schemas looked up through dec; nil when t is nil or holds no value.
func OutputOrder(ctx context.Context, t *Topic, dec *codec.Codec) []string {
	if t == nil {
		return nil
	}
	for r := range t.each() {
		if r.RawValue != nil {
			return FieldOrder(r.RawValue, func(id int32) (string, bool) {
				s, err := dec.Schema(ctx, id)
				return s.Schema, err == nil
			})
		}
	}
	return nil
}

// FieldOrder returns the field names of a record value in the order its
// writer wrote them: the Avro writer schema's (schema looks a schema id
// up) or the JSON text's; nil when unknown.
func FieldOrder(raw []byte, schema func(id int32) (string, bool)) []string {
	if id, ok := codec.SchemaID(raw); ok && schema != nil {
		text, ok := schema(id)
		if !ok {
			return nil
		}
		var s struct {
			Fields []struct {
				Name string `json:"name"`
			} `json:"fields"`
		}
		if json.Unmarshal([]byte(text), &s) != nil {
			return nil
		}
		var out []string
		for _, f := range s.Fields {
			out = append(out, f.Name)
		}
		return out
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return out
		}
		k, _ := t.(string)
		out = append(out, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return out
		}
	}
	return out
}

// KeyCoverage counts the keys of out (with a value) that are keys of
// changelog, and out's keys.
func KeyCoverage(out, changelog *Topic) (covered, total int) {
	states := finalStates(changelog)
	seen := map[string]bool{}
	for r := range out.each() {
		if r.Key == nil || r.Value == nil || r.Undecodable {
			continue
		}
		k := keyOf(r.Key)
		if seen[k] {
			continue
		}
		seen[k] = true
		total++
		if _, ok := states[k]; ok {
			covered++
		}
	}
	return covered, total
}
