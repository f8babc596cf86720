package infer

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kaudit/kaudit/audit/spec"
)

// fieldSample bounds the records per partition whose fields are listed.
const fieldSample = 2000

// fieldsAt lists the field names found at path (from the values of
// recs) and whether any value there is an object; path is what follows
// the root (value, agg, left…).
func fieldsAt(vals []any, path []string) (names []string, objects int) {
	set := map[string]bool{}
	for _, v := range vals {
		for _, name := range path {
			m, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = m[name]
		}
		if m, ok := v.(map[string]any); ok {
			objects++
			for k := range m {
				set[k] = true
			}
		}
	}
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	return names, objects
}

// hasField reports whether a value (of vals) holds an object at path
// with a field name.
func hasField(vals []any, path []string, name string) bool {
	for _, v := range vals {
		if m, ok := walk(v, path).(map[string]any); ok {
			if _, ok := m[name]; ok {
				return true
			}
		}
	}
	return false
}

// CheckFields checks that every field a select_key, reducer or join value
// names exists in the values (or keys) it reads: select_key the source's
// records, a reducer's value the repartition topic's (the source's when
// the key is unchanged) and agg the changelog's, a join's left, right and
// rN their tables' changelogs. Avro values hold every field of their
// writer schema, so the fields of the records read are the schema's. It
// returns the errors as *spec.SpecError joined, and notes for the
// expressions it could not check (no decoded record).
func CheckFields(sp *spec.Spec, plan *spec.Plan, ev *Evidence) (notes []string, err error) {
	var errs []*spec.SpecError
	for _, x := range sp.Expressions() {
		for _, p := range x.Paths {
			topic, isKey, what := rootTopic(x, p[0], plan)
			if topic == "" {
				continue
			}
			t := ev.Topics[topic]
			if name, ok := strings.CutPrefix(topic, stepsTopic); ok {
				// what the steps emit, worked out from the source's records
				pt := plan.Table(name)
				if src := ev.Topics[pt.Source]; src != nil && pt.Spec != nil {
					t, _ = elementsOf(src, pt.Spec.Steps) // the steps before select_key's
					topic = pt.Source
				}
			}
			if t == nil {
				continue
			}
			var vals []any
			for _, rs := range t.Parts {
				for i, r := range rs {
					if i >= fieldSample {
						break
					}
					if isKey {
						vals = append(vals, r.Key)
					} else if r.Value != nil {
						vals = append(vals, r.Value)
					}
				}
			}
			if len(vals) == 0 {
				if t.Undecodable > 0 {
					// missing evidence (a registry down) or wrong serdes: the
					// engine reports the records undecodable either way
					notes = append(notes, fmt.Sprintf("%s: %s: %s not checked against the evidence: no record of topic %s decodes (%d undecodable, the first: %v): check serdes", sp.At(x.Line), x.Field, p, topic, t.Undecodable, t.FirstError))
					continue
				}
				notes = append(notes, fmt.Sprintf("%s: %s: %s not checked against the evidence: topic %s has no decoded record", sp.At(x.Line), x.Field, p, topic))
				continue
			}
			// walk the path one name at a time: the first missing
			// name is the one to report
			for depth := 1; depth < len(p); depth++ {
				if hasField(vals, p[1:depth], p[depth]) {
					continue // every name found is wanted only for an error
				}
				names, objects := fieldsAt(vals, p[1:depth])
				if objects == 0 {
					hint := "check serdes"
					if depth == 1 {
						var raws [][]byte
						for r := range t.each() {
							if isKey {
								raws = append(raws, r.RawKey)
							} else {
								raws = append(raws, r.RawValue)
							}
						}
						if g := GuessSerde(raws, nil); g.Value != "" {
							hint = fmt.Sprintf("check serdes: the bytes look like %s (%s)", g.Value, g.Evidence)
						}
					}
					errs = append(errs, &spec.SpecError{File: sp.File, Line: x.Line, Field: x.Field,
						Msg: fmt.Sprintf("%s in %s: %s of topic %s holds no record with fields (its values decode as %s): %s", p, x.Src, strings.Join(p[:depth], "."), topic, kindOf(vals), hint)})
					break
				}
				if !slices.Contains(names, p[depth]) {
					msg := fmt.Sprintf("%s in %s: no field %q in %s (%s of topic %s); the fields are %s", p, x.Src, p[depth], strings.Join(p[:depth], "."), what, topic, strings.Join(names, ", "))
					if s := closest(p[depth], names); s != "" {
						msg += fmt.Sprintf(" (did you mean %s?)", s)
					}
					errs = append(errs, &spec.SpecError{File: sp.File, Line: x.Line, Field: x.Field, Msg: msg})
					break
				}
			}
		}
	}
	if len(errs) == 0 {
		return notes, nil
	}
	slices.SortStableFunc(errs, func(a, b *spec.SpecError) int { return cmp.Compare(a.Line, b.Line) })
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return notes, errors.Join(all...)
}

// stepsTopic prefixes, in rootTopic's answer, a table whose steps'
// elements an expression reads.
const stepsTopic = "\x00steps:"

// rootTopic names the topic whose records an expression's root name
// stands for.
func rootTopic(x spec.Expression, root string, plan *spec.Plan) (topic string, isKey bool, what string) {
	if x.Table != nil {
		pt := plan.Table(x.Table.Name)
		if pt == nil {
			return "", false, ""
		}
		switch {
		case strings.HasSuffix(x.Field, ".select_key") && root == "value" && x.Table.ValueChanging():
			return stepsTopic + pt.Name, false, "the values the table's steps emit for the source's records"
		case (strings.HasSuffix(x.Field, ".select_key") || strings.Contains(x.Field, ".steps[")) && root == "value":
			return pt.Source, false, "the source's values"
		case (strings.HasSuffix(x.Field, ".select_key") || strings.Contains(x.Field, ".steps[")) && root == "key":
			return pt.Source, true, "the source's keys"
		case root == "value" && pt.Repartition == "" && x.Table.ValueChanging():
			return "", false, "" // the steps' values, which no topic holds
		case root == "value":
			return cmp.Or(pt.Repartition, pt.Source), false, "the inputs' values"
		case root == "agg":
			return pt.Changelog, false, "the table's states"
		}
		return "", false, ""
	}
	if x.Join != nil {
		name, ok := x.Join.JoinRoot(root)
		if !ok {
			return "", false, ""
		}
		pt := plan.Table(name)
		if pt == nil {
			return "", false, ""
		}
		return pt.Changelog, false, "the states of table " + name
	}
	return "", false, ""
}

func kindOf(vals []any) string {
	switch vals[0].(type) {
	case string:
		return "strings"
	case []any:
		return "arrays"
	case bool:
		return "booleans"
	case nil:
		return "nulls"
	}
	return "numbers"
}

// closest returns the name at edit distance 1 or 2 from s, if one.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev = cur
	}
	return prev[len(b)]
}
