package topology

import (
	"cmp"
	"slices"
	"strings"
)

// Flow entity ids: "topic:<full name>", "pattern:<regex>", "store:<name>",
// "join:<node>", "extractor:<class>".
const (
	entTopic     = "topic:"
	entPattern   = "pattern:"
	entStore     = "store:"
	entJoin      = "join:"
	entExtractor = "extractor:"
)

// flow derives the data flow between topics, stores and joins: an edge per
// pair of entities connected by processors that are neither.
func (t *Topology) flow(l *Layout) []FlowEdge {
	joinAt := map[string]bool{}
	for _, j := range l.Joins {
		joinAt[j.Node] = true
	}
	writes := map[string][]string{}
	for _, s := range l.Stores {
		for _, w := range s.Writers {
			writes[w] = append(writes[w], entStore+s.Name)
		}
	}
	full := func(topic string) string {
		if l.internal(topic) {
			return entTopic + RepartitionTopic(l.AppID, topic)
		}
		return entTopic + topic
	}
	var edges []FlowEdge
	seen := map[FlowEdge]bool{}
	add := func(from, to string) {
		e := FlowEdge{From: from, To: to}
		if from != to && !seen[e] {
			seen[e] = true
			edges = append(edges, e)
		}
	}
	// ins and outs of a node: the entities a path enters and leaves it by.
	ends := func(n *Node) (ins, outs []string) {
		switch n.Kind {
		case KindSource:
			if n.Pattern != "" {
				return []string{entPattern + n.Pattern}, []string{entPattern + n.Pattern}
			}
			for _, tp := range n.Topics {
				ins = append(ins, full(tp))
			}
			return ins, ins
		case KindSink:
			if n.Extractor != "" {
				return []string{entExtractor + n.Extractor}, nil
			}
			return []string{full(n.Topic)}, []string{full(n.Topic)}
		}
		st := writes[n.Name]
		if joinAt[n.Name] {
			j := entJoin + n.Name
			for _, s := range st {
				add(j, s)
			}
			if len(st) == 0 {
				return []string{j}, []string{j}
			}
			return []string{j}, st
		}
		return st, st
	}
	for _, sub := range t.SubTopologies {
		for i := range sub.Nodes {
			n := &sub.Nodes[i]
			_, outs := ends(n)
			if len(outs) == 0 {
				continue
			}
			l.walk(n.Successors, func(m *Node) []string {
				ins, _ := ends(m)
				if len(ins) == 0 {
					return m.Successors
				}
				for _, o := range outs {
					for _, in := range ins {
						add(o, in)
					}
				}
				return nil
			})
		}
	}
	for _, j := range l.Joins {
		if j.Kind == JoinStreamTable {
			for _, s := range j.RightStores {
				add(entStore+s, entJoin+j.Node)
			}
		}
	}
	for _, s := range l.Stores {
		add(entStore+s.Name, entTopic+s.Changelog)
	}
	slices.SortFunc(edges, func(a, b FlowEdge) int {
		if c := strings.Compare(a.From, b.From); c != 0 {
			return c
		}
		return strings.Compare(a.To, b.To)
	})
	return edges
}

// NamingLayout is the layout naming conventions allow without a topology:
// the topics as used, a store per changelog, and an edge from
// <app>-<store>-repartition to the store where that topic exists (has
// says which do).
func NamingLayout(appID string, topics []TopicUse, has func(topic string) bool) *Layout {
	l := &Layout{AppID: appID}
	for _, u := range topics {
		l.Topics = append(l.Topics, u)
		if u.Role != RoleChangelog {
			continue
		}
		s := StoreUse{Name: u.Store, Changelog: u.Name, SubTopology: -1}
		l.Edges = append(l.Edges, FlowEdge{From: entStore + u.Store, To: entTopic + u.Name})
		rep := RepartitionTopic(appID, u.Store+"-repartition")
		if has(rep) {
			s.Repartitions = []string{rep}
			s.Rekeyed = true
			l.Edges = append(l.Edges, FlowEdge{From: entTopic + rep, To: entStore + u.Store})
		}
		l.Stores = append(l.Stores, s)
	}
	slices.SortFunc(l.Edges, func(a, b FlowEdge) int { return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To)) })
	return l
}
