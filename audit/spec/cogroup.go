package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/types"
	"github.com/expr-lang/expr/vm"

	"github.com/kaudit/kaudit/audit/topology"
)

// CogroupMember is one grouped stream of a cogroup
// (groupedStream.cogroup(aggregator)): its source topic, its steps and
// key (groupByKey: none; groupBy: select_key), and its aggregator over
// agg and value.
type CogroupMember struct {
	SourceList    StringList `yaml:"source"`
	Steps         []*Step    `yaml:"steps"`
	SelectKeyExpr string     `yaml:"select_key"`
	Aggregate     string     `yaml:"aggregate"`
	Repartition   string     `yaml:"repartition"`
	Line          int        `yaml:"-"`
	side          *TableSpec
	prog          *vm.Program
}

// Source is the member's source topic.
func (m *CogroupMember) Source() string { return m.side.Source }

// Apply runs the member's steps and key on one record of its source.
func (m *CogroupMember) Apply(r RecordEnv) ([]Element, error) { return m.side.Apply(r) }

// ValueChanging reports whether the member's steps may change values.
func (m *CogroupMember) ValueChanging() bool { return m.side.ValueChanging() }

// Rekeyed reports whether the member changes the key (groupBy,
// selectKey…): Streams repartitions it.
func (m *CogroupMember) Rekeyed() bool { return rekeyed(m.SelectKeyExpr, m.Steps) }

// Add is the member's aggregator: agg after value joins it; first says
// there is no aggregate yet (the cogroup's initializer's value is then
// the aggregate the value joins, as KStreamAggregate does).
func (t *TableSpec) CogroupAdd(member int, agg, value any, first bool) (any, error) {
	m := t.Cogroup[member]
	if first {
		init, err := expr.Run(t.Reducer.init, map[string]any{})
		if err != nil {
			return nil, fmt.Errorf("table %s: aggregate: init: %w", t.Name, err)
		}
		agg = init
	} else {
		agg = toExpr(agg)
	}
	out, err := expr.Run(m.prog, map[string]any{"agg": agg, "value": toExpr(value)})
	if err != nil {
		return nil, fmt.Errorf("table %s: cogroup member %d (%s): %w", t.Name, member+1, m.Source(), err)
	}
	return fromExpr(out)
}

// validateCogroup checks a cogroup: members each with a source and an
// aggregator, the table's aggregate the initializer only.
func (s *Spec) validateCogroup(l *errList, path, field string, t *TableSpec) {
	if len(t.Cogroup) == 0 {
		return
	}
	if len(t.SourceList) > 0 || len(t.Steps) > 0 || t.SelectKeyExpr != "" || t.Regroup != "" {
		l.add(path+".cogroup", field+".cogroup", "a cogroup's sources, steps and keys are its members': no source, steps, select_key or regroup of the table's own")
	}
	if t.Window != nil {
		l.add(path+".window", field+".window", "a windowed cogroup is not modelled")
	}
	switch {
	case t.Aggregate == nil || t.Aggregate.Init == "":
		l.add(path+".aggregate", field+".aggregate", "a cogroup needs its initializer: aggregate: {init: \"…\"} (each member has its own aggregator)")
	case t.Aggregate.Expr != "" || t.Aggregate.Subtract != "":
		l.add(path+".aggregate", field+".aggregate", "a cogroup's aggregators are its members': aggregate: {init: \"…\"} only")
	default:
		prog, err := compile(t.Aggregate.Init, types.Map{})
		if err != nil {
			l.add(path+".aggregate", field+".aggregate", "init: %v", err)
		}
		t.Reducer = Reducer{Kind: ReduceAggregate, Init: t.Aggregate.Init, init: prog, raw: "aggregate"}
	}
	for i, m := range t.Cogroup {
		mp := fmt.Sprintf("%s.cogroup[%d]", path, i)
		mf := fmt.Sprintf("%s.cogroup[%d]", field, i)
		if m == nil {
			l.add(mp, mf, "empty cogroup member")
			continue
		}
		m.Line = s.line(mp)
		if len(m.SourceList) != 1 || m.SourceList[0] == "" {
			l.add(mp+".source", mf+".source", "required: the one topic the grouped stream reads")
		}
		m.side = &TableSpec{Name: fmt.Sprintf("%s (cogroup member %d)", t.Name, i+1), SourceList: m.SourceList, Steps: m.Steps, SelectKeyExpr: m.SelectKeyExpr, Line: m.Line}
		if len(m.SourceList) > 0 {
			m.side.Source = m.SourceList[0]
		}
		if m.SelectKeyExpr != "" {
			prog, err := compile(m.SelectKeyExpr, recordEnv())
			if err != nil {
				l.add(mp+".select_key", mf+".select_key", "%v", err)
			}
			m.side.selectKey, m.side.selectPath = prog, fieldPath(m.SelectKeyExpr)
		}
		s.validateSteps(l, mp, mf, m.side)
		switch {
		case m.Aggregate == "":
			l.add(mp+".aggregate", mf+".aggregate", "required: the member's aggregator over agg and value")
		default:
			prog, err := compile(m.Aggregate, reduceEnv())
			if err != nil {
				l.add(mp+".aggregate", mf+".aggregate", "%v", err)
			}
			m.prog = prog
		}
	}
}

// resolveCogroup resolves a cogroup: its store is the one the members'
// aggregators (COGROUPKSTREAM-AGGREGATE-) write, each member's chain the
// topology's from its source to its aggregator, its repartition topic
// the one on the way.
func resolveCogroup(lay *topology.Layout, appID string, t *TableSpec, pt *PlannedTable, field string, fail func(line int, field, format string, args ...any)) ([]PlannedMember, bool) {
	var out []PlannedMember
	if lay == nil {
		if pt.Store == "" {
			fail(t.Line, field+".store", "required without a topology: the store the cogroup aggregates into")
			return nil, false
		}
		pt.Changelog = topology.Changelog(appID, pt.Store)
		for _, m := range t.Cogroup {
			pm := PlannedMember{Source: m.Source(), Repartition: m.Repartition}
			if pm.Repartition == "" && m.Rekeyed() {
				pm.Repartition = topology.RepartitionTopic(appID, pt.Store+"-repartition")
			}
			out = append(out, pm)
		}
		return out, true
	}
	var use topology.StoreUse
	for _, m := range t.Cogroup {
		for _, u := range lay.StoresFedBy(m.Source()) {
			if slices.ContainsFunc(u.Writers, func(w string) bool { return strings.HasPrefix(w, "COGROUPKSTREAM-AGGREGATE-") }) && (pt.Store == "" || u.Name == pt.Store) {
				use = u
			}
		}
	}
	if use.Name == "" {
		fail(t.Line, field+".cogroup", "no cogroup store of the topology is fed by the members' sources")
		return nil, false
	}
	pt.Store, pt.Changelog = use.Name, use.Changelog
	nodes := map[*Step]string{}
	for i, m := range t.Cogroup {
		pm := PlannedMember{Source: m.Source(), Repartition: m.Repartition}
		var why string
		for _, w := range use.Writers {
			chain, hops, err := lay.NodeChain(m.Source(), w)
			if err != nil {
				continue
			}
			pm.Node, why = w, ""
			if len(hops) > 1 {
				why = fmt.Sprintf("member %d crosses %d internal topics before its aggregator", i+1, len(hops))
			}
			if len(hops) == 1 && pm.Repartition == "" {
				pm.Repartition = hopName(appID, hops[0])
			}
			if w2 := matchChain(m.side.Chain(), chain, nodes); w2 != "" && why == "" {
				why = fmt.Sprintf("between %s and its aggregator %s %s", m.Source(), w, w2)
			}
			break
		}
		switch {
		case pm.Node == "":
			why = fmt.Sprintf("no aggregator of store %s is reached from %s", use.Name, m.Source())
		case why == "" && unmodelled(m.side, nodes) != "":
			why = unmodelled(m.side, nodes)
		}
		if why != "" && pt.Unjudged == "" {
			pt.Unjudged = fmt.Sprintf("table %s: %s", t.Name, why)
		}
		out = append(out, pm)
	}
	if t.Output != "" {
		// the output's chain from one aggregator: the cogroup's merge,
		// toStream(), then the output steps
		oc, err := lay.ChainFrom(use.Writers[0], t.Output)
		if err != nil {
			pt.OutputUnjudged = fmt.Sprintf("table %s: %v", t.Name, err)
		} else {
			oc = slices.DeleteFunc(oc, func(c topology.ChainNode) bool { return strings.HasPrefix(c.Name, "COGROUPKSTREAM-MERGE-") })
			pt.OutputChain = oc
			if len(oc) == 0 || oc[0].Op != topology.OpToStream {
				pt.OutputUnjudged = fmt.Sprintf("table %s: the topology has no toStream() between store %s and %s", t.Name, pt.Store, t.Output)
			} else if w := matchChain(t.OutputSteps, oc[1:], nodes); w != "" {
				pt.OutputUnjudged = fmt.Sprintf("table %s: between store %s and %s %s", t.Name, pt.Store, t.Output, w)
			}
		}
	}
	return out, true
}

// PlannedMember is one member of a cogroup with its topics resolved.
type PlannedMember struct {
	Source      string `json:"source"`
	Repartition string `json:"repartition,omitempty"`
	Node        string `json:"node,omitempty"` // its aggregator
}
