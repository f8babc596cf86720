package topology

import (
	"fmt"
	"slices"
	"strings"
)

// Op is what a processor of a chain does, as far as describe() tells:
// Kafka Streams names each DSL node by its operator (KSTREAM-FILTER-…)
// unless the app named it (Named.as), and then only the place tells.
type Op string

const (
	OpFilter        Op = "filter"        // KSTREAM-FILTER-: filter or filterNot
	OpMapValues     Op = "mapValues"     // KSTREAM-MAPVALUES-
	OpMap           Op = "map"           // KSTREAM-MAP-
	OpFlatMapValues Op = "flatMapValues" // KSTREAM-FLATMAPVALUES-
	OpFlatMap       Op = "flatMap"       // KSTREAM-FLATMAP-
	OpPeek          Op = "peek"          // KSTREAM-PEEK-
	OpBranch        Op = "branch"        // split()'s splitter (KSTREAM-BRANCH-) and the branch taken
	OpSelectKey     Op = "selectKey"     // KSTREAM-KEY-SELECT-: selectKey, or KStream#groupBy
	OpMerge         Op = "merge"         // KSTREAM-MERGE-
	OpToStream      Op = "toStream"      // KTABLE-TOSTREAM-
	OpSuppress      Op = "suppress"      // KTABLE-SUPPRESS-
	// OpTableFilter and OpTableMapValues are KTable#filter (filterNot) and
	// mapValues, not materialized (a store of their own makes them
	// OpStateful): a table step.
	OpTableFilter    Op = "tableFilter"    // KTABLE-FILTER-
	OpTableMapValues Op = "tableMapValues" // KTABLE-MAPVALUES-
	// OpProcess is a Processor API node (process, processValues,
	// transform, transformValues, flatTransform…): what it does is code.
	OpProcess Op = "process"
	// OpStateful is a node of the DSL's stateful part on the way (a
	// join, a KTable operation): not a stateless step.
	OpStateful Op = "stateful"
	// OpNamed is a node the app named: its name does not say its operator.
	OpNamed Op = "named"
)

// ChainNode is one processor on the way from a source topic to a store,
// or from a store to an output topic.
type ChainNode struct {
	Name string `json:"name"`
	Op   Op     `json:"op"`
	// Child is, for a branch, the branch's own node (the splitter's
	// successor on the way): one step of the spec stands for both.
	Child string `json:"child,omitempty"`
	Line  int    `json:"-"`
}

func (c ChainNode) String() string {
	if c.Child != "" {
		return fmt.Sprintf("%s → %s (%s)", c.Name, c.Child, c.Op)
	}
	return fmt.Sprintf("%s (%s)", c.Name, c.Op)
}

// opPrefixes maps the generated name prefixes of the DSL's processors to
// their operators (Kafka Streams 3.6's KStreamImpl, KTableImpl).
var opPrefixes = []struct {
	prefix string
	op     Op
}{
	{"KSTREAM-FILTER-", OpFilter},
	{"KSTREAM-MAPVALUES-", OpMapValues},
	{"KSTREAM-MAP-", OpMap},
	{"KSTREAM-FLATMAPVALUES-", OpFlatMapValues},
	{"KSTREAM-FLATMAP-", OpFlatMap},
	{"KSTREAM-PEEK-", OpPeek},
	{"KSTREAM-BRANCHCHILD-", OpBranch},
	{"KSTREAM-BRANCH-", OpBranch},
	{"KSTREAM-KEY-SELECT-", OpSelectKey},
	{"KSTREAM-MERGE-", OpMerge},
	{"KTABLE-TOSTREAM-", OpToStream},
	{"KTABLE-SUPPRESS-", OpSuppress},
	{"KTABLE-FILTER-", OpTableFilter},
	{"KTABLE-MAPVALUES-", OpTableMapValues},
	{"KSTREAM-PROCESSOR-", OpProcess},
	{"KSTREAM-PROCESSVALUES-", OpProcess},
	{"KSTREAM-TRANSFORMVALUES-", OpProcess},
	{"KSTREAM-FLATTRANSFORMVALUES-", OpProcess},
	{"KSTREAM-TRANSFORM-", OpProcess},
	{"KSTREAM-FLATTRANSFORM-", OpProcess},
	{"KSTREAM-", OpStateful}, // joins, windows, toTable…
	{"KTABLE-", OpStateful},  // KTable filter, mapValues, joins, groupBy…
	{"COGROUPKSTREAM-", OpStateful},
}

// OpOf says what a processor does from its name.
func OpOf(name string) Op {
	for _, p := range opPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.op
		}
	}
	return OpNamed
}

// SourceChain lists the processors between the source nodes reading topic
// and the processors that write store, in order: the stateless steps of
// the table's chain. The repartition hop's own nodes (the null-key filter,
// the sink and the source of the repartition topic) are left out. A
// store reached by no path from topic, or by several, is an error.
func (l *Layout) SourceChain(topic, store string) ([]ChainNode, error) {
	s, ok := l.Store(store)
	if !ok {
		return nil, fmt.Errorf("the topology has no store %q", store)
	}
	var starts []string
	for _, name := range l.readers[topic] {
		starts = append(starts, name)
	}
	if len(starts) == 0 {
		return nil, fmt.Errorf("no source of the topology reads %q", topic)
	}
	paths := l.paths(starts, func(n *Node) bool { return slices.Contains(s.Writers, n.Name) })
	switch len(paths) {
	case 0:
		return nil, fmt.Errorf("no path of the topology leads from %s to store %s", topic, store)
	case 1:
	default:
		return nil, fmt.Errorf("%d paths of the topology lead from %s to store %s", len(paths), topic, store)
	}
	path := paths[0]
	return l.chainOf(path[1 : len(path)-1]), nil
}

// OutputChain lists the processors between the processors that write
// store and the sinks writing topic, in order (toStream first).
func (l *Layout) OutputChain(store, topic string) ([]ChainNode, error) {
	s, ok := l.Store(store)
	if !ok {
		return nil, fmt.Errorf("the topology has no store %q", store)
	}
	sinks := l.writers[topic]
	paths := l.paths(s.Writers, func(n *Node) bool { return slices.Contains(sinks, n.Name) })
	if len(paths) > 1 && slices.IndexFunc(paths, func(p []string) bool { return len(p) < 2 || !slices.Equal(p[1:], paths[0][1:]) }) < 0 {
		paths = paths[:1] // the store's writers (a cogroup's aggregators) meet in one node: one chain
	}
	switch len(paths) {
	case 0:
		return nil, fmt.Errorf("no path of the topology leads from store %s to %s", store, topic)
	case 1:
	default:
		return nil, fmt.Errorf("%d paths of the topology lead from store %s to %s", len(paths), store, topic)
	}
	path := paths[0]
	return l.chainOf(path[1 : len(path)-1]), nil
}

// maxPaths bounds the search: a chain has one path, a topology that
// offers more is not a chain.
const maxPaths = 16

// paths lists the paths (node names) from a start node to a node end
// accepts, following successors and, from a sink of an internal topic,
// the sources that read it; each stops at the first node end accepts.
func (l *Layout) paths(starts []string, end func(*Node) bool) [][]string {
	var out [][]string
	var cur []string
	onPath := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		ref, ok := l.nodes[name]
		if !ok || onPath[name] || len(out) >= maxPaths {
			return
		}
		cur = append(cur, name)
		onPath[name] = true
		defer func() { cur = cur[:len(cur)-1]; onPath[name] = false }()
		if len(cur) > 1 && end(ref.n) {
			out = append(out, slices.Clone(cur))
			return
		}
		next := ref.n.Successors
		if ref.n.Kind == KindSink && ref.n.Topic != "" && l.internal(ref.n.Topic) {
			next = l.readers[ref.n.Topic]
		}
		for _, s := range next {
			visit(s)
		}
	}
	for _, s := range starts {
		visit(s)
	}
	return out
}

// chainOf turns a path's inner nodes into the chain's steps: the
// repartition hops' nodes are left out, a splitter and its branch are one.
func (l *Layout) chainOf(path []string) []ChainNode {
	var out []ChainNode
	for i := 0; i < len(path); i++ {
		ref := l.nodes[path[i]]
		n := ref.n
		if n.Kind != KindProcessor {
			continue // the sink and source of a repartition (or user) topic on the way
		}
		if i+1 < len(path) && l.repartitionFilter(n, path[i+1]) {
			continue
		}
		c := ChainNode{Name: n.Name, Op: OpOf(n.Name), Line: n.Line}
		if (c.Op == OpTableFilter || c.Op == OpTableMapValues) && len(n.Stores) > 0 {
			c.Op = OpStateful // materialized: a store of its own, with its cache, is not modelled
		}
		if i+1 < len(path) && l.splitter(n) {
			c.Op, c.Child = OpBranch, path[i+1]
			i++
		} else if c.Op == OpBranch {
			// a branch child reached without its splitter cannot be: keep it named
			c.Op = OpNamed
		}
		out = append(out, c)
	}
	return out
}

// repartitionFilter reports whether n is the filter Kafka Streams puts
// before a repartition sink (it drops null keys): a processor whose next
// node on the way is a sink to a repartition topic.
func (l *Layout) repartitionFilter(n *Node, next string) bool {
	ref, ok := l.nodes[next]
	if !ok || ref.n.Kind != KindSink || !strings.HasSuffix(ref.n.Topic, "-repartition") {
		return false
	}
	return OpOf(n.Name) == OpFilter || strings.HasSuffix(n.Name, "-repartition-filter")
}

// splitter reports whether n is a split()'s splitter: every successor is
// a processor named after it (KSTREAM-BRANCH-00000000011, route-big), or
// the deprecated branch()'s KSTREAM-BRANCHCHILD- nodes. A successor that
// is a repartition's null-key filter is none of its branches: a KStream
// groupBy named with Grouped.as("X") names its key selection X and the
// filter X-repartition-filter (KStreamImpl#groupBy,
// createRepartitionedSource), where a split's children are X and a
// branch index or a Branched name (BranchedKStreamImpl).
func (l *Layout) splitter(n *Node) bool {
	if len(n.Successors) == 0 {
		return false
	}
	for _, s := range n.Successors {
		ref, ok := l.nodes[s]
		if !ok || ref.n.Kind != KindProcessor {
			return false
		}
		if slices.ContainsFunc(ref.n.Successors, func(next string) bool { return l.repartitionFilter(ref.n, next) }) {
			return false
		}
		if !(strings.HasPrefix(s, n.Name) && len(s) > len(n.Name)) && !strings.HasPrefix(s, "KSTREAM-BRANCHCHILD-") {
			return false
		}
	}
	return true
}

// MergeInputs is how many nodes a merge node's records come from.
func (l *Layout) MergeInputs(merge string) int {
	ref, ok := l.nodes[merge]
	if !ok {
		return 0
	}
	return len(ref.n.Predecessors)
}

// NodeChain lists the processors between the source nodes reading topic
// and the processor node, in order (the repartition hops' own nodes left
// out, as SourceChain does), and the internal topics the way crosses,
// by full name: the stream side of a stream-table join.
func (l *Layout) NodeChain(topic, node string) ([]ChainNode, []string, error) {
	if _, ok := l.nodes[node]; !ok {
		return nil, nil, fmt.Errorf("the topology has no node %q", node)
	}
	starts := slices.Clone(l.readers[topic])
	if len(starts) == 0 {
		return nil, nil, fmt.Errorf("no source of the topology reads %q", topic)
	}
	paths := l.paths(starts, func(n *Node) bool { return n.Name == node })
	switch len(paths) {
	case 0:
		return nil, nil, fmt.Errorf("no path of the topology leads from %s to %s", topic, node)
	case 1:
	default:
		return nil, nil, fmt.Errorf("%d paths of the topology lead from %s to %s", len(paths), topic, node)
	}
	path := paths[0]
	var hops []string
	for _, name := range path {
		if n := l.nodes[name].n; n.Kind == KindSink && n.Topic != "" && l.internal(n.Topic) {
			hops = append(hops, RepartitionTopic(l.AppID, n.Topic))
		}
	}
	return l.chainOf(path[1 : len(path)-1]), hops, nil
}

// ChainFrom lists the processors between the processor node and the
// sinks writing topic, in order: what follows a join before to(topic).
func (l *Layout) ChainFrom(node, topic string) ([]ChainNode, error) {
	if _, ok := l.nodes[node]; !ok {
		return nil, fmt.Errorf("the topology has no node %q", node)
	}
	sinks := l.writers[topic]
	paths := l.paths([]string{node}, func(n *Node) bool { return slices.Contains(sinks, n.Name) })
	switch len(paths) {
	case 0:
		return nil, fmt.Errorf("no path of the topology leads from %s to %s", node, topic)
	case 1:
	default:
		return nil, fmt.Errorf("%d paths of the topology lead from %s to %s", len(paths), node, topic)
	}
	path := paths[0]
	return l.chainOf(path[1 : len(path)-1]), nil
}

// Successors lists the nodes node forwards to, as describe() prints them
// (a split()'s branches, for one); nil for a node it does not have.
func (l *Layout) Successors(node string) []string {
	ref, ok := l.nodes[node]
	if !ok {
		return nil
	}
	return slices.Clone(ref.n.Successors)
}

// UpstreamSources lists the external topics whose records reach the
// processor node (across the app's internal topics), in topology order:
// the stream side of a stream-table join, whose table side only looks
// its store up.
func (l *Layout) UpstreamSources(node string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		ref, ok := l.nodes[name]
		if !ok || seen[name] {
			return
		}
		seen[name] = true
		n := ref.n
		if n.Kind == KindSource {
			for _, t := range n.Topics {
				if l.internal(t) {
					for _, w := range l.writers[t] {
						visit(w)
					}
				} else if !slices.Contains(out, t) {
					out = append(out, t)
				}
			}
			return
		}
		for _, p := range n.Predecessors {
			visit(p)
		}
	}
	visit(node)
	return out
}
