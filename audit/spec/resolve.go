package spec

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit/topology"
)

// Plan is what the engine reads per table and per join: the topics and
// store each one uses, resolved from the spec, the topology (when given)
// and Kafka Streams' naming conventions.
type Plan struct {
	AppID  string         `json:"app_id"`
	Tables []PlannedTable `json:"tables"`
	Joins  []PlannedJoin  `json:"joins,omitempty"`
	Copies []*CopySpec    `json:"copies,omitempty"`
	// StreamJoins are the stream-table joins, resolved.
	StreamJoins []PlannedStreamJoin `json:"stream_joins,omitempty"`
	// Warnings are contradictions that do not stop an audit.
	Warnings []string `json:"warnings,omitempty"`
	// Uncovered says, per store the app folds and topic it writes that no
	// table, join or copy of the spec describes, that it is not judged
	// and through which nodes the topology makes it (missing evidence:
	// an audit of part of the app is never clean).
	Uncovered []string `json:"uncovered,omitempty"`
}

// PlannedTable is one table with its topics resolved. Repartition is
// empty when records go from the source to the store without a
// repartition hop.
type PlannedTable struct {
	Spec        *TableSpec `json:"-"`
	Name        string     `json:"name"`
	Source      string     `json:"source"`
	Merged      []string   `json:"merged,omitempty"` // further sources merged into Source's stream
	Repartition string     `json:"repartition,omitempty"`
	Store       string     `json:"store"`
	Changelog   string     `json:"changelog"`
	// Uncached says the store writes every update to its changelog (the
	// table's caching: false, else the spec's).
	Uncached bool `json:"uncached,omitempty"`
	// Chain is the topology's chain of processors from the source to the
	// store (nil without a topology); OutputChain from the store to the
	// output, where the table has one.
	Chain       []topology.ChainNode `json:"chain,omitempty"`
	OutputChain []topology.ChainNode `json:"output_chain,omitempty"`
	// Unjudged says why the table cannot be judged from the spec and the
	// topology alone ("" judges it): a step that is TODO or a Processor
	// API node, a node of the topology's chain the spec leaves out. The
	// checks that need no key still run on its topics.
	Unjudged string `json:"unjudged,omitempty"`
	// OutputUnjudged says why the table's own output cannot be judged.
	OutputUnjudged string `json:"output_unjudged,omitempty"`
	// Unsure names the filters and branches of the table's chain whose
	// predicate the spec leaves TODO, on a table with a repartition topic:
	// the table is judged, its copies telling which inputs those steps
	// kept, and an input with no copy is not judged (it may have been
	// filtered on purpose); "" when there are none.
	Unsure string `json:"unsure,omitempty"`
	// Members are a cogroup's grouped streams, resolved.
	Members []PlannedMember `json:"members,omitempty"`
}

// PlannedJoin is one join chain with its output topic.
type PlannedJoin struct {
	Spec   *JoinSpec `json:"-"`
	Output string    `json:"output"`
	Left   string    `json:"left"`
	Right  []string  `json:"right"`
	Type   JoinType  `json:"type"`
	// Unjudged says why the join cannot be judged from the spec alone.
	Unjudged string `json:"unjudged,omitempty"`
}

// TopicSerdes returns the serdes of each table topic that differ from
// the spec's defaults: a table's serdes on its source, repartition topic
// and changelog, its store_serdes over them on its changelog (an empty
// field keeps the one below it), a join's on its output. A topic two tables give different serdes
// keeps the first table's.
func (p *Plan) TopicSerdes() map[string]Serdes {
	out := map[string]Serdes{}
	set := func(topic string, sd Serdes) {
		if _, ok := out[topic]; !ok && topic != "" && (sd.Key != "" || sd.Value != "") {
			out[topic] = sd
		}
	}
	for _, t := range p.Tables {
		if t.Spec == nil {
			continue
		}
		var sd Serdes
		if t.Spec.Serdes != nil {
			sd = *t.Spec.Serdes
		}
		cl := sd
		if st := t.Spec.StoreSerdes; st != nil {
			cl = Serdes{Key: cmp.Or(st.Key, sd.Key), Value: cmp.Or(st.Value, sd.Value)}
		}
		set(t.Changelog, cl)
		out := cl
		if os := t.Spec.OutputSerdes; os != nil {
			out = Serdes{Key: cmp.Or(os.Key, cl.Key), Value: cmp.Or(os.Value, cl.Value)}
		}
		set(t.Spec.Output, out)
		if t.Spec.Regroup != "" {
			set(t.Repartition, sd) // the group's values, inside the change records
			continue
		}
		for _, m := range t.Members {
			set(m.Source, sd)
			set(m.Repartition, sd)
		}
		set(t.Source, sd)
		for _, m := range t.Merged {
			set(m, sd)
		}
		set(t.Repartition, sd)
	}
	for _, j := range p.Joins {
		if j.Spec != nil && j.Spec.Serdes != nil {
			set(j.Output, *j.Spec.Serdes)
		}
	}
	for _, c := range p.Copies {
		if c.Serdes != nil {
			set(c.Output, *c.Serdes)
		}
	}
	for _, j := range p.StreamJoins {
		if j.Spec != nil && j.Spec.Serdes != nil {
			set(j.Output, *j.Spec.Serdes)
		}
	}
	return out
}

// Table returns the planned table named name, or nil.
func (p *Plan) Table(name string) *PlannedTable {
	for i := range p.Tables {
		if p.Tables[i].Name == name {
			return &p.Tables[i]
		}
	}
	return nil
}

// Resolve maps each table of the spec to its source, repartition topic,
// store and changelog, and each join to its output. With a topology the
// store is the first one its source feeds and the repartition topic the
// one on the way; without one, the spec must name the store and the
// repartition topic is <app>-<store>-repartition when select_key changes
// the key. appID empty means the spec's. Errors name the spec's file and
// line.
func Resolve(spec *Spec, topo *topology.Topology, appID string) (*Plan, error) {
	if appID == "" {
		appID = spec.AppID
	}
	p := &Plan{AppID: appID, Copies: spec.Copies}
	var lay *topology.Layout
	if topo != nil {
		lay = topo.Layout(appID)
	}
	var errs []error
	fail := func(line int, field, format string, args ...any) {
		errs = append(errs, &SpecError{File: spec.File, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for i, t := range spec.Tables {
		field := fmt.Sprintf("tables[%d]", i)
		if t.Regroup != "" {
			if pt, ok := resolveRegroup(spec, lay, appID, t, field, fail); ok {
				unsettled(t, &pt)
				p.Tables = append(p.Tables, pt)
			}
			continue
		}
		if len(t.Cogroup) > 0 {
			pt := PlannedTable{Spec: t, Name: t.Name, Store: t.Store}
			if ms, ok := resolveCogroup(lay, appID, t, &pt, field, fail); ok {
				pt.Members = ms
				if t.Changelog != "" {
					pt.Changelog = t.Changelog
				}
				unsettled(t, &pt)
				p.Tables = append(p.Tables, pt)
			}
			continue
		}
		pt := PlannedTable{Spec: t, Name: t.Name, Source: t.Source, Merged: slices.Clone(t.Merged), Store: t.Store}
		switch {
		case t.Caching != nil:
			pt.Uncached = !*t.Caching
		case spec.Caching != nil:
			pt.Uncached = !*spec.Caching
		}
		var use topology.StoreUse
		switch {
		case lay != nil && t.Store != "":
			u, ok := lay.Store(t.Store)
			if !ok {
				fail(t.Line, field+".store", "the topology has no store %q", t.Store)
				continue
			}
			use = u
		case lay != nil:
			cands := lay.StoresFedBy(t.Source)
			switch len(cands) {
			case 0:
				fail(t.Line, field+".source", "no store of the topology is fed by topic %q", t.Source)
				continue
			case 1:
				use = cands[0]
				pt.Store = use.Name
			default:
				// the store whose chain the spec's steps describe, if one
				var fits []topology.StoreUse
				for _, c := range cands {
					if chainFits(lay, t, c.Name) {
						fits = append(fits, c)
					}
				}
				if len(fits) > 1 {
					// split()'s branches: the one whose place the spec's
					// predicate names (branchesAgree)
					fits = slices.DeleteFunc(fits, func(c topology.StoreUse) bool { return !branchesAgree(lay, t, c.Name) })
				}
				if len(fits) == 1 {
					use = fits[0]
					pt.Store = use.Name
					break
				}
				var names []string
				for _, c := range cands {
					names = append(names, c.Name)
				}
				fail(t.Line, field+".store", "topic %q feeds several stores (%s): say which with store:", t.Source, strings.Join(names, ", "))
				continue
			}
		case t.Store == "":
			fail(t.Line, field+".store", "required without a topology: the store the table is kept in")
			continue
		}
		pt.Changelog = cmp.Or(t.Changelog, topology.Changelog(appID, pt.Store))
		switch {
		case t.Repartition != "":
			pt.Repartition = t.Repartition
		case lay != nil:
			var reps []string
			for _, r := range use.Repartitions {
				if h := hopName(appID, r); h != "" {
					reps = append(reps, h)
				}
			}
			switch {
			case len(reps) == 1:
				pt.Repartition = reps[0]
			case len(reps) > 1:
				fail(t.Line, field+".repartition", "store %s is fed through several repartition topics (%s): say which with repartition:", use.Name, strings.Join(reps, ", "))
				continue
			}
			if t.SelectKeyExpr != "" && pt.Repartition == "" {
				p.Warnings = append(p.Warnings, fmt.Sprintf("%s: table %s has select_key but the topology has no repartition topic before store %s", spec.At(t.Line), t.Name, use.Name))
			}
		case rekeyed(t.SelectKeyExpr, t.Steps):
			// a groupBy or selectKey step repartitions as select_key does
			pt.Repartition = topology.RepartitionTopic(appID, pt.Store+"-repartition")
		}
		nodes := map[*Step]string{} // each step's node in the topology
		if lay != nil {
			judgeChain(lay, t, &pt, nodes)
		}
		if why := unmodelledIn(t, nodes); why != "" {
			switch ups := t.UnknownPredicates(); {
			case len(ups) > 0 && pt.Repartition != "" && pt.Unjudged == "":
				// the copies tell what the filters kept
				pt.Unsure = unsureSteps(ups, nodes)
			case len(ups) > 0 && pt.Unjudged != "":
				// the chain that differs names the node the spec lacks
			default:
				pt.Unjudged = why // a step not modelled says more than a chain that differs
			}
		}
		if why := outputUnmodelled(t, nodes); why != "" {
			pt.OutputUnjudged = why
		}
		unsettled(t, &pt)
		p.Tables = append(p.Tables, pt)
	}
	for i, j := range spec.Joins {
		field := fmt.Sprintf("joins[%d]", i)
		pj := PlannedJoin{Spec: j, Output: j.Output, Left: j.Left, Right: slices.Clone(j.Right), Type: j.Type}
		if len(j.Unsettled) > 0 {
			pj.Unjudged = fmt.Sprintf("join into %s is not judged: the evidence does not settle %s", j.Output, strings.Join(j.Unsettled, " and "))
		}
		if lay != nil {
			if u, ok := lay.Topic(j.Output); !ok || u.Role != topology.RoleOutput {
				fail(j.Line, field+".output", "the topology writes no output topic %q", j.Output)
				continue
			}
			for _, name := range append([]string{j.Left}, j.Right...) {
				pt := p.Table(name)
				if pt == nil {
					continue // reported above
				}
				if !lay.StoreReaches(pt.Store, j.Output) {
					p.Warnings = append(p.Warnings, fmt.Sprintf("%s: store %s of table %s does not reach output %s in the topology", spec.At(j.Line), pt.Store, name, j.Output))
				}
			}
		}
		if why := joinOutputChain(lay, j); why != "" && pj.Unjudged == "" {
			pj.Unjudged = fmt.Sprintf("join into %s is not judged: %s", j.Output, why)
		}
		p.Joins = append(p.Joins, pj)
	}
	for i, j := range spec.StreamJoins {
		if pj, ok := p.resolveStreamJoin(lay, j, fmt.Sprintf("stream_joins[%d]", i), fail); ok {
			p.StreamJoins = append(p.StreamJoins, pj)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if lay != nil {
		p.Uncovered = p.uncovered(lay)
	}
	return p, nil
}

// uncovered lists what the topology makes that the plan does not judge:
// each store no table folds and each topic the app writes that no table,
// join or copy has for its output (or its hop), naming the nodes on the
// way kaudit does not model.
func (p *Plan) uncovered(lay *topology.Layout) []string {
	stores, topics := map[string]bool{}, map[string]bool{}
	for _, t := range p.Tables {
		stores[t.Store] = true
		topics[t.Repartition] = true
		if t.Spec != nil && t.Spec.Output != "" {
			topics[t.Spec.Output] = true
		}
	}
	for _, j := range p.Joins {
		topics[j.Output] = true
	}
	for _, c := range p.Copies {
		topics[c.Output] = true
	}
	for _, j := range p.StreamJoins {
		topics[j.Output] = true
	}
	var out []string
	for _, pr := range lay.Products() {
		var what string
		switch {
		case pr.Store != "" && !stores[pr.Store]:
			what = fmt.Sprintf("store %s (written by %s) is not judged: no table of the spec folds it", pr.Store, strings.Join(pr.Writers, ", "))
		case pr.Topic != "" && !topics[pr.Topic] && !topics[topology.RepartitionTopic(p.AppID, pr.Topic)]:
			what = fmt.Sprintf("output %s (written by %s) is not judged: no table, join or copy of the spec writes it", pr.Topic, strings.Join(pr.Writers, ", "))
		default:
			continue
		}
		if len(pr.Unmodelled) > 0 {
			var names []string
			for _, n := range pr.Unmodelled {
				names = append(names, fmt.Sprintf("%s (%s)", n.Name, describeOp(n)))
			}
			what += "; on the way, nodes kaudit does not model: " + strings.Join(names, ", ")
		}
		out = append(out, what)
	}
	return out
}

// describeOp names what a node kaudit does not model is, from its name.
func describeOp(n topology.ChainNode) string {
	switch {
	case strings.Contains(n.Name, "FK-JOIN"):
		return "a foreign-key join"
	case strings.Contains(n.Name, "JOINTHIS") || strings.Contains(n.Name, "JOINOTHER") || strings.Contains(n.Name, "OUTERTHIS") || strings.Contains(n.Name, "OUTEROTHER"):
		return "a stream-stream join"
	case strings.HasPrefix(n.Name, "KSTREAM-LEFTJOIN-") || strings.HasPrefix(n.Name, "KSTREAM-JOIN-"):
		return "a stream-table join"
	case strings.HasPrefix(n.Name, "COGROUPKSTREAM-"):
		return "a cogroup"
	case strings.HasPrefix(n.Name, "KTABLE-SELECT-"), strings.HasPrefix(n.Name, "KTABLE-AGGREGATE-"), strings.HasPrefix(n.Name, "KTABLE-REDUCE-"):
		return "a KTable groupBy"
	case n.Op == topology.OpProcess:
		return "a Processor API node"
	case n.Op == topology.OpNamed:
		return "a node the app named"
	}
	return "a stateful operator"
}

// hopName returns the topic records cross on their way to a store, from
// one of the layout's internal topics (full names): a repartition topic
// as it is; a topic the app writes with to() and reads back with stream()
// under its own name (which describe() prints as an internal one would be)
// without the <app>- prefix the layout gives it; "" for the topics of a
// foreign-key join.
func hopName(appID, full string) string {
	printed := strings.TrimPrefix(full, appID+"-")
	lp := strings.ToLower(printed)
	switch {
	case strings.HasSuffix(printed, "-repartition"):
		return full
	case strings.Contains(lp, "subscription-registration"), strings.Contains(lp, "subscription-response"):
		return ""
	}
	return printed
}

// joinOutputChain says why a join's output steps cannot be judged: they
// change the key, the join has no value to run them on, or (with a
// topology) they are not the nodes between the join chain's last join
// and its output, after toStream(); "" when they can.
func joinOutputChain(lay *topology.Layout, j *JoinSpec) string {
	if j.side.OutputKeyChanging() {
		return "its output steps change the key, which kaudit does not model"
	}
	if len(j.OutputSteps) > 0 && j.Value == "" {
		return "its output steps need the joined value: give value:"
	}
	if lay == nil {
		return ""
	}
	for _, ju := range lay.Joins {
		if ju.Kind != topology.JoinTableTable || ju.Next != "" || !slices.Contains(ju.Outputs, j.Output) {
			continue
		}
		oc, err := lay.ChainFrom(ju.Node, j.Output)
		if err != nil {
			return ""
		}
		for len(oc) > 0 && (oc[0].Op == topology.OpToStream || strings.HasPrefix(oc[0].Name, "KTABLE-MERGE-")) {
			oc = oc[1:]
		}
		if why := matchChain(j.OutputSteps, oc, map[*Step]string{}); why != "" {
			return fmt.Sprintf("between its last join %s and %s %s", ju.Node, j.Output, why)
		}
		return ""
	}
	return ""
}

// unsettled leaves a drafted table that the evidence did not settle
// unjudged (ParseDraft's Unsettled), naming what it lacks.
func unsettled(t *TableSpec, pt *PlannedTable) {
	if len(t.Unsettled) > 0 {
		pt.Unjudged = fmt.Sprintf("table %s is not judged: the evidence does not settle %s", t.Name, strings.Join(t.Unsettled, " and "))
	}
}
