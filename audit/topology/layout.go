package topology

import (
	"cmp"
	"slices"
	"strings"
)

// Changelog is the changelog topic of a store: <app>-<store>-changelog.
func Changelog(appID, store string) string { return appID + "-" + store + "-changelog" }

// RepartitionTopic is the full name of an internal topic printed as name
// by describe(): <app>-<name>. For an unnamed repartition after
// selectKey().groupByKey().reduce() name is "<store>-repartition".
func RepartitionTopic(appID, name string) string { return appID + "-" + name }

// TopicRole says what a topic is to the application.
type TopicRole string

const (
	RoleSource       TopicRole = "source"          // read by the app, written by others
	RoleRepartition  TopicRole = "repartition"     // internal: written and read by the app to re-key
	RoleSubscription TopicRole = "fk-subscription" // internal: a foreign-key join's subscription or response topic
	RoleInternal     TopicRole = "internal"        // internal: written and read by the app, other
	RoleChangelog    TopicRole = "changelog"       // a store's changelog
	RoleOutput       TopicRole = "output"          // written by the app, read by others
	RoleGlobal       TopicRole = "global-source"   // the source of a global store
)

// Layout is what a topology says about an application's topics, stores and
// joins, with internal topics given their full <app>- names.
type Layout struct {
	AppID  string     `json:"app_id"`
	Topics []TopicUse `json:"topics"`
	Stores []StoreUse `json:"stores"`
	Joins  []JoinUse  `json:"joins,omitempty"`
	Edges  []FlowEdge `json:"flow"`
	Notes  []string   `json:"notes,omitempty"`
	topo   *Topology
	nodes  map[string]*nodeRef
	// writers and readers are the sink and source nodes of each topic (as
	// printed), in the topology's order: built once, so that Layout stays
	// linear in the topology's size.
	writers, readers map[string][]string
}

// TopicUse is one topic the topology names.
type TopicUse struct {
	Name string    `json:"name"` // full name (<app>-… for internal topics)
	As   string    `json:"as"`   // as printed by describe()
	Role TopicRole `json:"role"`
	// Pattern is set for a source subscribed by regular expression; Name
	// is then the pattern.
	Pattern bool `json:"pattern,omitempty"`
	// Store is the store a changelog belongs to.
	Store         string `json:"store,omitempty"`
	SubTopologies []int  `json:"sub_topologies"`
}

// StoreUse is one state store: who writes it, what feeds it.
type StoreUse struct {
	Name        string   `json:"name"`
	Changelog   string   `json:"changelog"`
	SubTopology int      `json:"sub_topology"`
	Global      bool     `json:"global,omitempty"`
	Writers     []string `json:"writers"`           // processors that update it
	Readers     []string `json:"readers,omitempty"` // processors that only look it up (joins)
	// Sources are the external topics (or patterns) whose records reach
	// the writers; Repartitions the internal topics on the way (full names).
	Sources      []string `json:"sources"`
	Repartitions []string `json:"repartitions,omitempty"`
	// Rekeyed says a key-changing operation (selectKey, map, groupBy) or a
	// repartition lies between a source and the store.
	Rekeyed bool `json:"rekeyed,omitempty"`
}

// JoinKind is the kind of a join.
type JoinKind string

const (
	JoinTableTable   JoinKind = "table-table"
	JoinStreamStream JoinKind = "stream-stream"
	JoinStreamTable  JoinKind = "stream-table"
	JoinForeignKey   JoinKind = "foreign-key"
)

// JoinUse is one join of the topology.
type JoinUse struct {
	Node string   `json:"node"` // the processor that emits the join result (KTABLE-MERGE-…)
	Kind JoinKind `json:"kind"`
	// LeftStores are the stores the right side looks up (the left table's
	// store, or every store of an unmaterialized left join chain);
	// RightStores those the left side looks up.
	LeftStores  []string `json:"left_stores,omitempty"`
	RightStores []string `json:"right_stores,omitempty"`
	// Next is the join fed by this one's result in a chain.
	Next string `json:"next,omitempty"`
	// Outputs are the external topics the result reaches.
	Outputs []string `json:"outputs,omitempty"`
}

// FlowEdge is one edge of the data flow between topics, stores and joins.
type FlowEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

type nodeRef struct {
	n   *Node
	sub *SubTopology
}

// internal reports whether topic (as printed) is internal: written by a
// sink and read by a source of the same topology, or ending in
// -repartition.
func (t *Topology) internal(topic string) bool {
	if strings.HasSuffix(topic, "-repartition") {
		return true
	}
	written, read := false, false
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			written = written || (n.Kind == KindSink && n.Topic == topic)
			read = read || (n.Kind == KindSource && slices.Contains(n.Topics, topic))
		}
	}
	return written && read
}

// internal is Topology.internal from the layout's index.
func (l *Layout) internal(topic string) bool {
	return strings.HasSuffix(topic, "-repartition") || (len(l.writers[topic]) > 0 && len(l.readers[topic]) > 0)
}

// indexTopics fills writers and readers.
func (l *Layout) indexTopics() {
	l.writers, l.readers = map[string][]string{}, map[string][]string{}
	for _, st := range l.topo.SubTopologies {
		for _, n := range st.Nodes {
			switch n.Kind {
			case KindSink:
				if n.Topic != "" {
					l.writers[n.Topic] = append(l.writers[n.Topic], n.Name)
				}
			case KindSource:
				for _, tp := range slices.Compact(slices.Clone(n.Topics)) {
					l.readers[tp] = append(l.readers[tp], n.Name)
				}
			}
		}
	}
}

// IsInternal reports whether describe() printed topic without the
// application.id prefix because the app creates and owns it.
func (t *Topology) IsInternal(topic string) bool { return t.internal(topic) }

func (t *Topology) index() map[string]*nodeRef {
	m := map[string]*nodeRef{}
	for i := range t.SubTopologies {
		st := &t.SubTopologies[i]
		for j := range st.Nodes {
			m[st.Nodes[j].Name] = &nodeRef{n: &st.Nodes[j], sub: st}
		}
	}
	return m
}

// joinReader reports whether a processor's name says it only looks stores
// up: join processors and foreign-key resolvers.
func joinReader(name string) bool {
	l := strings.ToLower(name)
	for _, w := range []string{"join", "resolver", "outerthis", "outerother"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// keyChanger reports whether a processor's name says it may change keys.
func keyChanger(name string) bool {
	for _, p := range []string{"KEY-SELECT", "KSTREAM-MAP-", "KSTREAM-FLATMAP-", "KTABLE-SELECT", "KSTREAM-TRANSFORM-", "KSTREAM-FLATTRANSFORM-", "KSTREAM-PROCESSOR-"} {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}

// Layout derives the application's topics, stores, joins and data flow.
func (t *Topology) Layout(appID string) *Layout {
	l := &Layout{AppID: appID, topo: t, nodes: t.index()}
	l.indexTopics()
	full := func(topic string) string {
		if l.internal(topic) {
			return RepartitionTopic(appID, topic)
		}
		return topic
	}
	topics := map[string]*TopicUse{}
	addTopic := func(as string, role TopicRole, pattern bool, sub int) {
		name := as
		if !pattern {
			name = full(as)
		}
		u, ok := topics[name]
		if !ok {
			u = &TopicUse{Name: name, As: as, Role: role, Pattern: pattern}
			topics[name] = u
		}
		if !slices.Contains(u.SubTopologies, sub) {
			u.SubTopologies = append(u.SubTopologies, sub)
		}
	}
	internalRole := func(topic string) TopicRole {
		lt := strings.ToLower(topic)
		switch {
		case strings.HasSuffix(lt, "-repartition"):
			return RoleRepartition
		case strings.Contains(lt, "subscription-registration") || strings.Contains(lt, "subscription-response"):
			return RoleSubscription
		}
		return RoleInternal
	}
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			switch {
			case n.Kind == KindSource && n.Pattern != "":
				addTopic(n.Pattern, RoleSource, true, st.ID)
			case n.Kind == KindSource:
				for _, tp := range n.Topics {
					switch {
					case l.internal(tp):
						addTopic(tp, internalRole(tp), false, st.ID)
					case st.Global:
						addTopic(tp, RoleGlobal, false, st.ID)
					default:
						addTopic(tp, RoleSource, false, st.ID)
					}
				}
			case n.Kind == KindSink && n.Topic != "":
				if l.internal(n.Topic) {
					addTopic(n.Topic, internalRole(n.Topic), false, st.ID)
				} else {
					addTopic(n.Topic, RoleOutput, false, st.ID)
				}
			}
		}
	}
	l.Stores = t.stores(l)
	for _, s := range l.Stores {
		topics[s.Changelog] = &TopicUse{Name: s.Changelog, As: s.Changelog, Role: RoleChangelog, Store: s.Name, SubTopologies: []int{s.SubTopology}}
	}
	for _, u := range topics {
		slices.Sort(u.SubTopologies)
		l.Topics = append(l.Topics, *u)
	}
	roleRank := map[TopicRole]int{RoleSource: 0, RoleGlobal: 1, RoleRepartition: 2, RoleSubscription: 3, RoleInternal: 4, RoleChangelog: 5, RoleOutput: 6}
	slices.SortFunc(l.Topics, func(a, b TopicUse) int {
		return cmp.Or(cmp.Compare(roleRank[a.Role], roleRank[b.Role]), cmp.Compare(a.Name, b.Name))
	})
	l.Joins = t.joins(l)
	l.Edges = t.flow(l)
	if l.Stores == nil {
		l.Stores = []StoreUse{}
	}
	if l.Edges == nil {
		l.Edges = []FlowEdge{}
	}
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			if n.Kind == KindSink && n.Extractor != "" {
				l.Notes = append(l.Notes, "sink "+n.Name+" picks its topic per record ("+n.Extractor+"): its output topics are not known")
			}
		}
	}
	for _, u := range l.Topics {
		if u.Pattern {
			l.Notes = append(l.Notes, "source topics matching "+u.Name+" are not known from the topology alone")
		}
	}
	return l
}

// Topic returns the use of a topic by full name.
func (l *Layout) Topic(name string) (TopicUse, bool) {
	for _, u := range l.Topics {
		if u.Name == name {
			return u, true
		}
	}
	return TopicUse{}, false
}

// Store returns a store by name.
func (l *Layout) Store(name string) (StoreUse, bool) {
	for _, s := range l.Stores {
		if s.Name == name {
			return s, true
		}
	}
	return StoreUse{}, false
}

func (t *Topology) stores(l *Layout) []StoreUse {
	type acc struct {
		sub     *SubTopology
		procs   []*Node
		dist    map[string]int
		readers []string
	}
	byStore := map[string]*acc{}
	var order []string
	for i := range t.SubTopologies {
		st := &t.SubTopologies[i]
		dist := distances(st)
		for j := range st.Nodes {
			n := &st.Nodes[j]
			for _, s := range n.Stores {
				a, ok := byStore[s]
				if !ok {
					a = &acc{sub: st, dist: dist}
					byStore[s] = a
					order = append(order, s)
				}
				a.procs = append(a.procs, n)
			}
		}
	}
	var out []StoreUse
	for _, name := range order {
		a := byStore[name]
		var writers, readers []*Node
		for _, p := range a.procs {
			if joinReader(p.Name) {
				readers = append(readers, p)
			} else {
				writers = append(writers, p)
			}
		}
		if len(writers) == 0 {
			// Only join-like processors: those closest to a source write
			// (a stream-stream outer join's shared store, a foreign-key
			// subscription store).
			best := -1
			for _, p := range readers {
				if d := a.dist[p.Name]; best < 0 || d < best {
					best = d
				}
			}
			var rest []*Node
			for _, p := range readers {
				if a.dist[p.Name] == best {
					writers = append(writers, p)
				} else {
					rest = append(rest, p)
				}
			}
			readers = rest
		}
		s := StoreUse{Name: name, Changelog: Changelog(l.AppID, name), SubTopology: a.sub.ID, Global: a.sub.Global}
		for _, w := range writers {
			s.Writers = append(s.Writers, w.Name)
		}
		for _, r := range readers {
			s.Readers = append(s.Readers, r.Name)
		}
		slices.Sort(s.Writers)
		slices.Sort(s.Readers)
		srcs, reps, rekey := t.upstream(l, s.Writers)
		s.Sources, s.Repartitions, s.Rekeyed = srcs, reps, rekey
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b StoreUse) int {
		return cmp.Or(cmp.Compare(a.SubTopology, b.SubTopology), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// distances is each node's distance from the nearest source node of its
// sub-topology.
func distances(st *SubTopology) map[string]int {
	byName := map[string]*Node{}
	d := map[string]int{}
	var queue []string
	for i := range st.Nodes {
		n := &st.Nodes[i]
		byName[n.Name] = n
		if n.Kind == KindSource {
			d[n.Name] = 0
			queue = append(queue, n.Name)
		}
	}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, s := range byName[cur].Successors {
			if _, ok := d[s]; !ok {
				d[s] = d[cur] + 1
				queue = append(queue, s)
			}
		}
	}
	return d
}

// upstream walks back from the given processors across sub-topologies
// (through internal topics) and returns the external source topics, the
// internal topics crossed (full names) and whether keys may change on the
// way.
func (t *Topology) upstream(l *Layout, from []string) (sources, internals []string, rekeyed bool) {
	l.walk(from, func(n *Node) []string {
		if keyChanger(n.Name) {
			rekeyed = true
		}
		if n.Kind != KindSource {
			return n.Predecessors
		}
		if n.Pattern != "" {
			sources = appendUnique(sources, n.Pattern)
			return nil
		}
		var next []string
		for _, tp := range n.Topics {
			if !l.internal(tp) {
				sources = appendUnique(sources, tp)
				continue
			}
			internals = appendUnique(internals, RepartitionTopic(l.AppID, tp))
			if strings.HasSuffix(tp, "-repartition") {
				rekeyed = true
			}
			next = append(next, l.writersOf(tp)...)
		}
		return next
	})
	slices.Sort(sources)
	slices.Sort(internals)
	return sources, internals, rekeyed
}

// walk visits, depth first and once each, the nodes reachable from start;
// visit returns the names of the nodes to go on to.
func (l *Layout) walk(start []string, visit func(n *Node) []string) {
	seen := map[string]bool{}
	stack := slices.Clone(start)
	for len(stack) > 0 {
		name := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[name] {
			continue
		}
		seen[name] = true
		if ref, ok := l.nodes[name]; ok {
			stack = append(stack, visit(ref.n)...)
		}
	}
}

// writersOf lists the sink nodes writing topic (as printed).
func (l *Layout) writersOf(topic string) []string { return slices.Clone(l.writers[topic]) }

func appendUnique(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

func isThis(name string) bool {
	for _, p := range []string{"JOINTHIS", "OUTERTHIS", "-join-this", "-this-join", "-outer-this-join"} {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}

func isOther(name string) bool {
	for _, p := range []string{"JOINOTHER", "OUTEROTHER", "-join-other", "-other-join", "-outer-other-join"} {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}

func (t *Topology) joins(l *Layout) []JoinUse {
	var out []JoinUse
	joinNodes := map[string]bool{}
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			var this, other []*Node
			for _, p := range n.Predecessors {
				if ref, ok := l.nodes[p]; ok {
					switch {
					case isThis(p):
						this = append(this, ref.n)
					case isOther(p):
						other = append(other, ref.n)
					}
				}
			}
			switch {
			case len(this) > 0 && len(other) > 0:
				j := JoinUse{Node: n.Name, Kind: JoinTableTable}
				if strings.HasPrefix(this[0].Name, "KSTREAM-") {
					j.Kind = JoinStreamStream
				}
				// The "this" side looks up the other table's store and the
				// "other" side the left's.
				for _, p := range other {
					j.LeftStores = appendAll(j.LeftStores, l.storesRead(p))
				}
				for _, p := range this {
					j.RightStores = appendAll(j.RightStores, l.storesRead(p))
				}
				out = append(out, j)
				joinNodes[n.Name] = true
			case n.Kind == KindProcessor && (strings.HasPrefix(n.Name, "KSTREAM-LEFTJOIN-") || strings.HasPrefix(n.Name, "KSTREAM-JOIN-")):
				j := JoinUse{Node: n.Name, Kind: JoinStreamTable, RightStores: slices.Clone(n.Stores)}
				out = append(out, j)
				joinNodes[n.Name] = true
			case n.Kind == KindProcessor && (strings.Contains(n.Name, "RESPONSE-RESOLVER") || strings.HasSuffix(n.Name, "-response-resolver")):
				j := JoinUse{Node: n.Name, Kind: JoinForeignKey, LeftStores: slices.Clone(n.Stores)}
				j.RightStores = l.fkRightStores(&n)
				out = append(out, j)
				joinNodes[n.Name] = true
			case n.Kind == KindProcessor && !strings.HasPrefix(n.Name, "KTABLE-") && !isThis(n.Name) && !isOther(n.Name) && l.looksUpOnly(&n) && l.streamFed(&n):
				// a stream-table join the app named (Joined.as): a stream's
				// processor that only looks up a table's store
				j := JoinUse{Node: n.Name, Kind: JoinStreamTable, RightStores: slices.Clone(n.Stores)}
				out = append(out, j)
				joinNodes[n.Name] = true
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].LeftStores)
		slices.Sort(out[i].RightStores)
		next, outputs := l.downstream(out[i].Node, joinNodes)
		out[i].Next, out[i].Outputs = next, outputs
	}
	slices.SortFunc(out, func(a, b JoinUse) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// looksUpOnly reports whether a processor holds stores and only reads
// each (another processor writes it: StoreUse.Readers).
func (l *Layout) looksUpOnly(n *Node) bool {
	if len(n.Stores) == 0 || strings.Contains(n.Name, "SUBSCRIPTION") || strings.Contains(strings.ToLower(n.Name), "subscription") {
		return false
	}
	for _, s := range n.Stores {
		u, ok := l.Store(s)
		if !ok || !slices.Contains(u.Readers, n.Name) || len(u.Writers) == 0 {
			return false
		}
	}
	return true
}

// streamFed reports whether a processor's predecessors are a stream's
// (no KTABLE- node, which a table-table join's sides are).
func (l *Layout) streamFed(n *Node) bool {
	for _, p := range n.Predecessors {
		if strings.HasPrefix(p, "KTABLE-") {
			return false
		}
	}
	return len(n.Predecessors) > 0
}

func appendAll(l, more []string) []string {
	for _, s := range more {
		l = appendUnique(l, s)
	}
	return l
}

// storesRead are the stores a join-side processor looks up.
func (l *Layout) storesRead(n *Node) []string { return slices.Clone(n.Stores) }

// fkRightStores finds the foreign table's stores of a foreign-key join:
// those looked up by the processors that write its response topic, other
// than the subscription store.
func (l *Layout) fkRightStores(resolver *Node) []string {
	var out []string
	for _, p := range resolver.Predecessors {
		ref, ok := l.nodes[p]
		if !ok || ref.n.Kind != KindSource {
			continue
		}
		for _, tp := range ref.n.Topics {
			for _, sink := range l.writersOf(tp) {
				for _, w := range l.nodes[sink].n.Predecessors {
					for _, s := range l.nodes[w].n.Stores {
						if !strings.Contains(strings.ToLower(s), "subscription") {
							out = appendUnique(out, s)
						}
					}
				}
			}
		}
	}
	return out
}

// downstream walks forward from a join node across sub-topologies and
// returns the first join reached and the external topics reached.
func (l *Layout) downstream(from string, joins map[string]bool) (next string, outputs []string) {
	var start []string
	if ref, ok := l.nodes[from]; ok {
		start = ref.n.Successors
	}
	l.walk(start, func(n *Node) []string {
		if joins[n.Name] && next == "" {
			next = n.Name
		}
		if n.Kind != KindSink {
			return n.Successors
		}
		switch {
		case n.Extractor != "":
			outputs = appendUnique(outputs, "("+n.Extractor+")")
		case l.internal(n.Topic):
			return l.readersOf(n.Topic)
		default:
			outputs = appendUnique(outputs, n.Topic)
		}
		return nil
	})
	slices.Sort(outputs)
	return next, outputs
}

// readersOf lists the source nodes reading topic (as printed).
func (l *Layout) readersOf(topic string) []string { return slices.Clone(l.readers[topic]) }
