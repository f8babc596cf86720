package topology

import (
	"slices"
	"strings"
)

// Product is one thing the app makes that an audit can judge: a store it
// folds records into, or a topic it writes for others.
type Product struct {
	// Store is the store's name; Topic the topic as describe() prints it
	// (the one real name of a topic the app writes and reads back).
	Store, Topic string
	// Writers are the processors that update the store, or the sinks that
	// write the topic.
	Writers []string
	// Unmodelled are the nodes on the way to it (from the app's source
	// topics, across its internal topics) whose operator kaudit does not
	// model as a step: a join other than a table-table chain, a Processor
	// API node, a stateful operator, a node the app named. Nil when every
	// node on the way is a stateless step, a store's writer or a hop.
	Unmodelled []ChainNode
}

// Products lists every store the app folds records into and every topic
// it writes for others, with the nodes on the way to each: what a spec
// must describe for the audit to be whole. The stores that belong to an
// operator rather than a table (a suppress buffer, a stream-stream join's
// windows, a foreign-key join's subscriptions) are not products of their
// own: the output they lead to is.
func (l *Layout) Products() []Product {
	var out []Product
	for _, s := range l.Stores {
		if s.Global || operatorStore(s) {
			continue
		}
		p := Product{Store: s.Name, Writers: slices.Clone(s.Writers)}
		p.Unmodelled = l.unmodelledBefore(s.Writers)
		out = append(out, p)
	}
	var topics []string
	for t := range l.writers {
		if strings.HasSuffix(t, "-repartition") || isSubscriptionTopic(t) {
			continue
		}
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, t := range topics {
		sinks := l.writers[t]
		out = append(out, Product{Topic: t, Writers: slices.Clone(sinks), Unmodelled: l.unmodelledBefore(sinks)})
	}
	return out
}

// operatorStore reports whether a store is an operator's own: written
// only by a suppress, a stream-stream join's window processors
// (KSTREAM-WINDOWED-, the JoinWindows' this and other stores) or a
// foreign-key join's subscription processors.
func operatorStore(s StoreUse) bool {
	if len(s.Writers) == 0 {
		return true // looked up only (a join's view of another store)
	}
	for _, w := range s.Writers {
		if !strings.HasPrefix(w, "KTABLE-SUPPRESS-") && !strings.Contains(w, "FK-JOIN") && !strings.HasPrefix(w, "KSTREAM-WINDOWED-") &&
			!strings.Contains(w, "JOINTHIS-") && !strings.Contains(w, "JOINOTHER-") &&
			!strings.Contains(w, "OUTERTHIS-") && !strings.Contains(w, "OUTEROTHER-") {
			return false
		}
	}
	return true
}

func isSubscriptionTopic(t string) bool {
	lt := strings.ToLower(t)
	return strings.Contains(lt, "subscription-registration") || strings.Contains(lt, "subscription-response")
}

// unmodelledBefore walks back from nodes to the app's source topics,
// across internal topics, and lists the nodes whose operator is not a
// step kaudit models, in topology order. A store's writer met on the way
// (a reduce, an aggregate, a table source) is where another table folds:
// what is before it is that table's business, so the walk stops there
// (naming the writer when it is a join's).
func (l *Layout) unmodelledBefore(nodes []string) []ChainNode {
	seen := map[string]bool{}
	var found []ChainNode
	var visit func(name string, start bool)
	visit = func(name string, start bool) {
		if seen[name] {
			return
		}
		seen[name] = true
		ref, ok := l.nodes[name]
		if !ok {
			return
		}
		n := ref.n
		switch n.Kind {
		case KindSource:
			for _, t := range n.Topics {
				if l.internal(t) {
					for _, w := range l.writers[t] {
						visit(w, false)
					}
				}
			}
			return
		case KindProcessor:
			op := OpOf(n.Name)
			if !modelledOp(op, n.Name) {
				found = append(found, ChainNode{Name: n.Name, Op: op, Line: n.Line})
			}
			if !start && l.writesStore(n) {
				return // another table's store: judged as that table
			}
		}
		for _, p := range n.Predecessors {
			visit(p, false)
		}
	}
	for _, s := range nodes {
		visit(s, true)
	}
	slices.SortFunc(found, func(a, b ChainNode) int { return a.Line - b.Line })
	return slices.CompactFunc(found, func(a, b ChainNode) bool { return a.Name == b.Name })
}

// writesStore reports whether a processor updates a store (not only
// looks one up, as a join's side does).
func (l *Layout) writesStore(n *Node) bool {
	for _, s := range n.Stores {
		if u, ok := l.Store(s); ok && slices.Contains(u.Writers, n.Name) {
			return true
		}
	}
	return false
}

// modelledOp reports whether kaudit models a node of this operator as a
// step of a chain, a table's fold or a table-table join.
func modelledOp(op Op, name string) bool {
	switch op {
	case OpProcess, OpNamed:
		return false
	case OpStateful:
		// the fold nodes and the table-table join chain (modelled as
		// joins:), and a table's own output (toStream, suppress)
		for _, p := range []string{"KSTREAM-REDUCE-", "KSTREAM-AGGREGATE-", "KTABLE-SOURCE-", "KSTREAM-TOTABLE-",
			"KTABLE-JOINTHIS-", "KTABLE-JOINOTHER-", "KTABLE-LEFTTHIS-", "KTABLE-LEFTOTHER-", "KTABLE-OUTERTHIS-", "KTABLE-OUTEROTHER-", "KTABLE-MERGE-"} {
			if strings.HasPrefix(name, p) {
				return true
			}
		}
		return false
	}
	return true
}
