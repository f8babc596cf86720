package topology

import (
	"slices"
	"strings"
)

// StoresFedBy lists the stores that topic feeds first: stores it reaches
// without passing through another store it feeds.
func (l *Layout) StoresFedBy(topic string) []StoreUse {
	var fed []StoreUse
	for _, s := range l.Stores {
		if slices.Contains(s.Sources, topic) {
			fed = append(fed, s)
		}
	}
	var out []StoreUse
	for _, s := range fed {
		first := true
		for _, o := range fed {
			if o.Name != s.Name && l.reachable("store:"+o.Name, "store:"+s.Name) {
				first = false
				break
			}
		}
		if first {
			out = append(out, s)
		}
	}
	return out
}

// reachable reports whether the flow leads from entity a to entity b.
func (l *Layout) reachable(a, b string) bool {
	seen := map[string]bool{a: true}
	stack := []string{a}
	for len(stack) > 0 {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range l.Edges {
			if e.From != cur || seen[e.To] {
				continue
			}
			if e.To == b {
				return true
			}
			// A store's changelog is where its data rests, not a hop.
			if strings.HasPrefix(e.From, entStore) && strings.HasSuffix(e.To, "-changelog") {
				continue
			}
			seen[e.To] = true
			stack = append(stack, e.To)
		}
	}
	return false
}

// StoreReaches reports whether a store's data flows to topic, through the
// stores' join lookups or the flow.
func (l *Layout) StoreReaches(store, topic string) bool {
	if l.reachable(entStore+store, entTopic+topic) {
		return true
	}
	for _, j := range l.Joins {
		if (slices.Contains(j.LeftStores, store) || slices.Contains(j.RightStores, store)) && l.reachable(entJoin+j.Node, entTopic+topic) {
			return true
		}
	}
	return false
}

// groupBySelect reports whether a node writing a KTable groupBy's
// repartition topic is its select node: KTABLE-SELECT-, or the name the
// app gave it (Grouped.as names it and the topic, AB's seed 2000).
func groupBySelect(name string) bool {
	return strings.HasPrefix(name, "KTABLE-SELECT-") || !strings.HasPrefix(name, "KTABLE-") && !strings.HasPrefix(name, "KSTREAM-")
}

// RegroupOf reports, for a store a KTable groupBy aggregates into (a
// KTABLE-AGGREGATE or KTABLE-REDUCE node reading a repartition topic that
// a KTABLE-SELECT node, or one the app named, writes), the store of the table it re-groups (the
// store the KTABLE-SELECT node's predecessor writes) and the
// KTABLE-SELECT node. A KTable mapValues or filter between the table and
// its groupBy is not modelled: no answer then.
func (l *Layout) RegroupOf(store string) (from, selectNode string, ok bool) {
	s, found := l.Store(store)
	if !found || len(s.Writers) != 1 || len(s.Repartitions) != 1 {
		return "", "", false
	}
	if w := s.Writers[0]; !strings.HasPrefix(w, "KTABLE-AGGREGATE-") && !strings.HasPrefix(w, "KTABLE-REDUCE-") {
		return "", "", false
	}
	as := ""
	for _, u := range l.Topics {
		if u.Name == s.Repartitions[0] {
			as = u.As
		}
	}
	for _, sink := range l.writers[as] {
		ref, ok := l.nodes[sink]
		if !ok || len(ref.n.Predecessors) != 1 || !groupBySelect(ref.n.Predecessors[0]) {
			continue
		}
		sel, ok := l.nodes[ref.n.Predecessors[0]]
		if !ok || len(sel.n.Predecessors) != 1 {
			continue
		}
		if up, ok := l.nodes[sel.n.Predecessors[0]]; ok && len(up.n.Stores) == 1 {
			return up.n.Stores[0], sel.n.Name, true
		}
	}
	return "", "", false
}
