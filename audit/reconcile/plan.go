package reconcile

// FromPlan: the engine's pipeline from a resolved spec.

import (
	"errors"
	"strings"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// FromPlan builds the engine's pipeline from a resolved spec. keySerde is
// the serde of table keys (the spec's, else the command line's), by any
// name codec accepts (Kafka's Java names are normalized: Integer is int).
func FromPlan(p *spec.Plan, keySerde string) *Pipeline {
	out := &Pipeline{AppID: p.AppID, KeySerde: codec.NormalizeSerde(keySerde)}
	for _, pt := range p.Tables {
		t := Table{Name: pt.Name, Source: pt.Source, Merged: pt.Merged, Repartition: pt.Repartition, Store: pt.Store, Changelog: pt.Changelog, Uncached: pt.Uncached,
			Unjudged: pt.Unjudged, OutputUnjudged: pt.OutputUnjudged, Unsure: pt.Unsure}
		if pt.Spec != nil {
			t.Output = pt.Spec.Output
			if sd := pt.Spec.Serdes; sd != nil && sd.Key != "" {
				t.KeySerde = codec.NormalizeSerde(sd.Key)
			}
			if w := pt.Spec.Window; w != nil {
				t.Window = &Window{Size: w.Size, Advance: w.Advance, Grace: w.Grace, GraceUnknown: w.GraceUnknown, Suppress: pt.Spec.Suppress == spec.SuppressUntilWindowCloses}
			}
		}
		if ts := pt.Spec; ts != nil && ts.Regroup != "" {
			t.Regroup = regroupOf(ts, p)
			out.Tables = append(out.Tables, t)
			continue
		}
		if ts := pt.Spec; ts != nil && len(ts.Cogroup) > 0 {
			t.Cogroup = cogroupOf(ts, pt.Members)
			out.Tables = append(out.Tables, t)
			continue
		}
		if ts := pt.Spec; ts != nil {
			t.SelectKey = func(e Env) (audit.Value, error) {
				return ts.SelectKey(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp})
			}
			t.SelectField = valueField(ts.SelectKeyExpr)
			if ts.HasSteps() {
				apply := ts.Apply
				if pt.Unsure != "" {
					apply = ts.ApplyUnsure // the copies tell what a TODO filter kept
				}
				t.Steps = func(e Env) ([]Element, error) {
					return elements(apply(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
				}
				t.ValueChanging, t.Flat, t.SelectField = ts.ValueChanging(), ts.Flat(), ""
			}
			if len(ts.OutputSteps)+len(ts.TableSteps) > 0 {
				t.OutputSteps = func(e Env) ([]Element, error) {
					return elements(ts.ApplyOutput(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
				}
				t.OutputRekeys = ts.OutputKeyChanging()
			}
			if ts.Reducer.Kind != "" {
				t.Reduce = func(agg, v audit.Value, first bool) (audit.Value, error) {
					out, err := ts.Reduce(agg, v, first)
					if errors.Is(err, spec.ErrNullValue) {
						return agg, nil
					}
					return out, err
				}
				// sum(FIELD), min(FIELD) and max(FIELD) keep the first
				// input's other fields, so their result depends on the order
				// too (seen in the real drill); aggregate's adder is any
				// expression
				t.OrderDependent = ts.OrderDependent() || ts.Reducer.Field != ""
				t.Latest = ts.Reducer.Kind == spec.ReduceLatest
				t.TableSource = ts.Reducer.Table
			}
		}
		out.Tables = append(out.Tables, t)
	}
	for _, c := range p.Copies {
		cp := Copy{Source: c.Source, Output: c.Output, Unjudged: c.Unjudged()}
		if len(c.Steps) > 0 && cp.Unjudged == "" {
			cp.Steps = func(e Env) ([]Element, error) {
				return elements(c.Apply(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
			}
			cp.ValueChanging, cp.KeyChanging = c.ValueChanging(), c.KeyChanging()
		}
		out.Copies = append(out.Copies, cp)
	}
	for _, ps := range p.StreamJoins {
		sj := StreamJoin{Name: ps.Spec.Name(), Output: ps.Output, Sources: append([]string{ps.Stream}, ps.Merged...), Repartition: ps.Repartition,
			Table: ps.Table, Inner: ps.Type == spec.JoinInner, Unjudged: ps.Unjudged}
		js := ps.Spec
		if js.HasSteps() {
			sj.Steps = func(e Env) ([]Element, error) {
				return elements(js.Apply(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
			}
			sj.ValueChanging = js.ValueChanging()
		}
		if len(js.OutputSteps) > 0 {
			sj.OutputSteps = func(e Env) ([]Element, error) {
				return elements(js.ApplyOutput(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
			}
		}
		if js.HasValue() {
			sj.Value = func(key, stream, table audit.Value) (audit.Value, error) { return js.Join(key, stream, table) }
		}
		out.StreamJoins = append(out.StreamJoins, sj)
	}
	for _, pj := range p.Joins {
		j := Join{Output: pj.Output, Left: pj.Left, Right: pj.Right, Type: string(pj.Type), Unjudged: pj.Unjudged, concurrent: true}
		if js := pj.Spec; js != nil && js.HasValue() {
			j.Value = func(left audit.Value, rights []audit.Value) (audit.Value, error) { return js.Eval(left, rights) }
			j.Fields = js.SideFields()
			j.Copies = js.Copies()
			if js.HasOutputSteps() {
				j.OutputSteps = func(e Env) ([]Element, error) {
					return elements(js.ApplyOutput(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
				}
			}
		}
		out.Joins = append(out.Joins, j)
	}
	return out
}

// elements converts the spec's elements to the engine's.
func elements(els []spec.Element, err error) ([]Element, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Element, len(els))
	for i, e := range els {
		out[i] = Element{Key: e.Key, Value: e.Value, Unsure: e.Unsure}
	}
	return out, nil
}

// valueField returns FIELD for a select_key of the form value.FIELD, which
// spec.TableSpec.SelectKey answers by walking the path (its own test of
// a field path, on one step), else "".
func valueField(src string) string {
	parts := strings.Split(strings.TrimSpace(src), ".")
	if len(parts) != 2 || parts[0] != "value" || parts[1] == "" || !spec.IsIdent(parts[1]) {
		return ""
	}
	return parts[1]
}

// regroupOf is a KTable groupBy's mapper, adder and subtractor from its
// spec.
func regroupOf(ts *spec.TableSpec, p *spec.Plan) *Regroup {
	g := &Regroup{
		GroupOf: func(key, value audit.Value) (audit.Value, audit.Value, error) { return ts.GroupOf(key, value) },
		Add:     func(agg, v audit.Value, first bool) (audit.Value, error) { return ts.Add(agg, v, first) },
		Sub:     func(agg, v audit.Value) (audit.Value, error) { return ts.Subtract(agg, v) },
	}
	g.Empty, g.HasEmpty = ts.Empty()
	if src := p.Table(ts.Regroup); src != nil && src.Spec != nil {
		g.TableSource = src.Spec.Reducer.Table
	}
	return g
}

// cogroupOf is a cogroup's members and aggregators from its spec.
func cogroupOf(ts *spec.TableSpec, members []spec.PlannedMember) *Cogroup {
	cg := &Cogroup{Add: func(i int, agg, v audit.Value, first bool) (audit.Value, error) {
		return ts.CogroupAdd(i, agg, v, first)
	}}
	for i, pm := range members {
		m := ts.Cogroup[i]
		cm := CogroupMember{Source: pm.Source, Repartition: pm.Repartition, ValueChanging: m.ValueChanging()}
		if len(m.Steps) > 0 || m.SelectKeyExpr != "" {
			cm.Steps = func(e Env) ([]Element, error) {
				return elements(m.Apply(spec.RecordEnv{Key: e.Key, Value: e.Value, Headers: e.Headers, Timestamp: e.Timestamp}))
			}
		}
		cg.Members = append(cg.Members, cm)
	}
	return cg
}
