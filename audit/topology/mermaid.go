package topology

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/internal/mermaid"
)

// Mermaid writes the layout's data flow as a Mermaid flowchart: source
// topics, repartition topics, stores with their changelogs, joins and
// output topics, internal topics under their full <app>- names.
func (l *Layout) Mermaid(w io.Writer) error {
	fc := mermaid.New()
	ids := map[string]string{}
	var order []string
	for _, e := range l.Edges {
		for _, ent := range []string{e.From, e.To} {
			if _, ok := ids[ent]; !ok {
				ids[ent] = ""
				order = append(order, ent)
			}
		}
	}
	// Topics that take part in no edge still belong in the chart.
	for _, u := range l.Topics {
		ent := entTopic + u.Name
		if u.Pattern {
			ent = entPattern + u.Name
		}
		if _, ok := ids[ent]; !ok {
			ids[ent] = ""
			order = append(order, ent)
		}
	}
	slices.Sort(order)
	roles := map[string]TopicRole{}
	for _, u := range l.Topics {
		roles[u.Name] = u.Role
	}
	counts := map[byte]int{}
	classes := map[string][]string{}
	for _, ent := range order {
		kind, name, _ := strings.Cut(ent, ":")
		prefix := kind[0]
		id := fmt.Sprintf("%c%d", prefix, counts[prefix])
		counts[prefix]++
		ids[ent] = id
		switch kind {
		case "topic", "pattern":
			role := roles[name]
			if kind == "pattern" {
				role = RoleSource
			}
			fc.Node(id, mermaid.Subroutine, name)
			classes[string(role)] = append(classes[string(role)], id)
		case "store":
			fc.Node(id, mermaid.Cylinder, name)
			classes["store"] = append(classes["store"], id)
		case "join":
			fc.Node(id, mermaid.Hexagon, name)
			classes["join"] = append(classes["join"], id)
		case "extractor":
			fc.Node(id, mermaid.Parallelogram, "topic per record: "+name)
			classes[string(RoleOutput)] = append(classes[string(RoleOutput)], id)
		}
	}
	for _, e := range l.Edges {
		arrow := "-->"
		if strings.HasPrefix(e.From, entStore) && roles[strings.TrimPrefix(e.To, entTopic)] == RoleChangelog {
			arrow = "-.->"
		}
		fc.Edge(ids[e.From], arrow, "", ids[e.To])
	}
	style := map[string]string{
		string(RoleSource):       "fill:#e3f2fd,stroke:#1565c0",
		string(RoleGlobal):       "fill:#e3f2fd,stroke:#1565c0",
		string(RoleRepartition):  "fill:#fff3e0,stroke:#ef6c00",
		string(RoleSubscription): "fill:#fff3e0,stroke:#ef6c00",
		string(RoleInternal):     "fill:#fff3e0,stroke:#ef6c00",
		string(RoleChangelog):    "fill:#f3e5f5,stroke:#6a1b9a",
		string(RoleOutput):       "fill:#e8f5e9,stroke:#2e7d32",
		"store":                  "fill:#ede7f6,stroke:#4527a0",
		"join":                   "fill:#fce4ec,stroke:#ad1457",
	}
	var names []string
	for c := range classes {
		names = append(names, c)
	}
	slices.Sort(names)
	for _, c := range names {
		fc.Class(strings.ReplaceAll(c, "-", "_"), style[c], classes[c])
	}
	_, err := io.WriteString(w, fc.String())
	return err
}
