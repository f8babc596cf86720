package spec

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"

	"github.com/kaudit/kaudit/audit/topology"
)

// validateRegroup checks a KTable groupBy (regroup:): the table it
// re-groups exists and is not itself windowed, no source or steps of its
// own, a select_key, and a reducer with a subtractor.
func (s *Spec) validateRegroup(l *errList, path, field string, t *TableSpec) {
	if t.Regroup == "" {
		if t.GroupValue != "" {
			l.add(path+".group_value", field+".group_value", "group_value is a KTable groupBy's (with regroup:)")
		}
		if t.Reducer.Subtract != "" {
			l.add(path, field, "subtract is a KTable groupBy's (with regroup:)")
		}
		return
	}
	src := s.Table(t.Regroup)
	switch {
	case src == nil:
		l.add(path+".regroup", field+".regroup", "no table named %q", t.Regroup)
	case src == t:
		l.add(path+".regroup", field+".regroup", "a table cannot re-group itself")
	case src.Window != nil || src.Regroup != "":
		l.add(path+".regroup", field+".regroup", "table %q is windowed or re-grouped itself: not modelled", t.Regroup)
	}
	if len(t.SourceList) > 0 || len(t.Steps) > 0 || t.Window != nil {
		l.add(path+".regroup", field+".regroup", "a KTable groupBy reads the table it re-groups: no source, steps or window of its own")
	}
	if t.SelectKeyExpr == "" {
		l.add(path+".select_key", field+".select_key", "required with regroup: the groupBy mapper's new key over key and value (the table's row)")
	}
	if t.GroupValue != "" {
		prog, err := compile(t.GroupValue, recordEnv())
		if err != nil {
			l.add(path+".group_value", field+".group_value", "%v", err)
		}
		t.groupValue = prog
	}
	r := &t.Reducer
	switch {
	case r.Kind == ReduceCount, r.Kind == ReduceSum && r.Field == "":
		if r.Subtract != "" {
			l.add(path+".reduce", field+".reduce", "%s has its own subtractor: no subtract", r.Kind)
		}
	case r.Kind == ReduceExpr || r.Kind == ReduceAggregate:
		if r.Subtract == "" {
			l.add(path+".reduce", field+".reduce", "a KTable groupBy needs its subtractor: {expr: \"…\", subtract: \"…\"} (or aggregate {init, expr, subtract})")
			break
		}
		prog, err := compile(r.Subtract, reduceEnv())
		if err != nil {
			l.add(path+".reduce", field+".reduce", "subtract: %v", err)
		}
		r.sub = prog
	case r.Kind != "":
		l.add(path+".reduce", field+".reduce", "a KTable groupBy needs a subtractor: count, sum, {expr, subtract} or aggregate {init, expr, subtract}, not %s", r)
	}
}

// GroupOf is a KTable groupBy's mapper on one row of the table it
// re-groups: the row's new key and value (nil when the mapper gives a
// null key or value: Streams' KTableRepartitionMap skips the pair).
func (t *TableSpec) GroupOf(key, value any) (gk, gv any, err error) {
	r := RecordEnv{Key: key, Value: value}
	if gk, err = t.SelectKey(r); err != nil {
		return nil, nil, err
	}
	gv = value
	if t.groupValue != nil {
		out, err := expr.Run(t.groupValue, r.env())
		if err != nil {
			return nil, nil, fmt.Errorf("table %s: group_value: %w", t.Name, err)
		}
		if gv, err = fromExpr(out); err != nil {
			return nil, nil, fmt.Errorf("table %s: group_value: %w", t.Name, err)
		}
	}
	return gk, gv, nil
}

// Add is a KTable groupBy's adder: the aggregate after value joins it;
// first says there is none yet (KTableAggregate starts from the
// initializer, KTableReduce from the value itself).
func (t *TableSpec) Add(agg, value any, first bool) (any, error) {
	return t.Reduce(agg, value, first)
}

// Subtract is a KTable groupBy's subtractor: the aggregate after value
// leaves it (count: minus one; sum: minus the value).
func (t *TableSpec) Subtract(agg, value any) (any, error) {
	r := t.Reducer
	switch r.Kind {
	case ReduceCount:
		n, err := addNumbers(agg, json.Number("-1"))
		if err != nil {
			return nil, fmt.Errorf("table %s: count: %w", t.Name, err)
		}
		return n, nil
	case ReduceSum:
		neg, err := negate(value)
		if err != nil {
			return nil, fmt.Errorf("table %s: sum: %w", t.Name, err)
		}
		n, err := addNumbers(agg, neg)
		if err != nil {
			return nil, fmt.Errorf("table %s: sum: %w", t.Name, err)
		}
		return n, nil
	}
	if r.sub == nil {
		return nil, fmt.Errorf("table %s: no subtractor", t.Name)
	}
	out, err := expr.Run(r.sub, map[string]any{"agg": toExpr(agg), "value": toExpr(value)})
	if err != nil {
		return nil, fmt.Errorf("table %s: subtract: %w", t.Name, err)
	}
	return fromExpr(out)
}

// Empty is what a KTable groupBy's store holds for a group whose rows
// all left it: count 0, sum 0, an aggregate its initializer after one
// value came and went (its initializer, for the usual subtractor); nil
// when the reducer does not say (reduce {expr, subtract}).
func (t *TableSpec) Empty() (any, bool) {
	switch t.Reducer.Kind {
	case ReduceCount, ReduceSum:
		return json.Number("0"), true
	case ReduceAggregate:
		out, err := expr.Run(t.Reducer.init, map[string]any{})
		if err != nil {
			return nil, false
		}
		v, err := fromExpr(out)
		return v, err == nil
	}
	return nil, false
}

// negate is -v for a JSON number.
func negate(v any) (any, error) {
	n, err := addNumbers(json.Number("0"), v)
	if err != nil {
		return nil, err
	}
	s := string(n)
	if len(s) > 0 && s[0] == '-' {
		return json.Number(s[1:]), nil
	}
	if s == "0" {
		return n, nil
	}
	return json.Number("-" + s), nil
}

// resolveRegroup resolves a KTable groupBy: its rows are the re-grouped
// table's source's, its store the KTable aggregate the topology feeds
// from that source (store: says which where there are several), its
// repartition topic the one before the store.
func resolveRegroup(s *Spec, lay *topology.Layout, appID string, t *TableSpec, field string, fail func(line int, field, format string, args ...any)) (PlannedTable, bool) {
	src := s.Table(t.Regroup)
	if src == nil {
		return PlannedTable{}, false // a spec error already
	}
	pt := PlannedTable{Spec: t, Name: t.Name, Source: src.Source, Store: t.Store, Repartition: t.Repartition}
	if t.Caching != nil {
		pt.Uncached = !*t.Caching
	} else if s.Caching != nil {
		pt.Uncached = !*s.Caching
	}
	if lay == nil {
		if pt.Store == "" {
			fail(t.Line, field+".store", "required without a topology: the store the KTable groupBy aggregates into")
			return pt, false
		}
		pt.Changelog = cmp.Or(t.Changelog, topology.Changelog(appID, pt.Store))
		if pt.Repartition == "" {
			pt.Repartition = topology.RepartitionTopic(appID, pt.Store+"-repartition")
		}
		return pt, true
	}
	var use topology.StoreUse
	if pt.Store != "" {
		u, ok := lay.Store(pt.Store)
		if !ok {
			fail(t.Line, field+".store", "the topology has no store %q", pt.Store)
			return pt, false
		}
		use = u
	} else {
		// the KTable groupBy stores the source feeds first, and those a
		// KTABLE-SELECT re-groups a store of the source's into (a
		// builder.table's own store comes first: its groupBy's is behind it)
		var cands []topology.StoreUse
		fed := lay.StoresFedBy(src.Source)
		for _, u := range lay.Stores {
			if !slices.ContainsFunc(u.Writers, regroupWriter) || !slices.Contains(u.Sources, src.Source) {
				continue
			}
			first := slices.ContainsFunc(fed, func(f topology.StoreUse) bool { return f.Name == u.Name })
			from, _, ok := lay.RegroupOf(u.Name)
			behind := ok && slices.ContainsFunc(fed, func(f topology.StoreUse) bool { return f.Name == from })
			if first || behind {
				cands = append(cands, u)
			}
		}
		switch len(cands) {
		case 0:
			fail(t.Line, field+".regroup", "no KTable groupBy store of the topology is fed by %s (table %s)", src.Source, src.Name)
			return pt, false
		case 1:
			use = cands[0]
		default:
			var names []string
			for _, c := range cands {
				names = append(names, c.Name)
			}
			fail(t.Line, field+".store", "table %s is re-grouped into several stores (%s): say which with store:", src.Name, strings.Join(names, ", "))
			return pt, false
		}
		pt.Store = use.Name
	}
	if !slices.ContainsFunc(use.Writers, regroupWriter) {
		pt.Unjudged = fmt.Sprintf("table %s is not judged: store %s is written by %s, not by a KTable groupBy's aggregate", t.Name, use.Name, strings.Join(use.Writers, ", "))
	}
	pt.Changelog = cmp.Or(t.Changelog, use.Changelog)
	if pt.Repartition == "" {
		var reps []string
		for _, r := range use.Repartitions {
			if h := hopName(appID, r); h != "" {
				reps = append(reps, h)
			}
		}
		if len(reps) > 1 {
			// a table read back from a topic the app writes is a hop of
			// the store's too: the groupBy's own topic is the repartition
			var own []string
			for _, r := range reps {
				if strings.HasSuffix(r, "-repartition") {
					own = append(own, r)
				}
			}
			if len(own) == 1 {
				reps = own
			}
		}
		if len(reps) != 1 {
			fail(t.Line, field+".repartition", "store %s is fed through %d repartition topics (%s): say which with repartition:", use.Name, len(reps), strings.Join(reps, ", "))
			return pt, false
		}
		pt.Repartition = reps[0]
	}
	judgeOutput(lay, t, &pt, map[*Step]string{})
	return pt, true
}

// regroupWriter reports whether a processor is a KTable groupBy's
// aggregate (KTableAggregate, KTableReduce).
func regroupWriter(name string) bool {
	return strings.HasPrefix(name, "KTABLE-AGGREGATE-") || strings.HasPrefix(name, "KTABLE-REDUCE-")
}
