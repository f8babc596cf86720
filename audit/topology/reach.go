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
