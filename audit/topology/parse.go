package topology

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// NodeKind is the kind of a topology node.
type NodeKind string

const (
	KindSource    NodeKind = "source"
	KindProcessor NodeKind = "processor"
	KindSink      NodeKind = "sink"
)

// Node is one node of a sub-topology as describe() prints it. Lists are
// kept sorted: describe() prints topics and stores from hash sets, so their
// printed order means nothing.
type Node struct {
	Kind NodeKind `json:"kind"`
	Name string   `json:"name"`
	// Topics are a source's topics; Pattern is set instead for a source
	// subscribed by regular expression.
	Topics  []string `json:"topics,omitempty"`
	Pattern string   `json:"pattern,omitempty"`
	// Stores are the state stores a processor is connected to (read or
	// written).
	Stores []string `json:"stores,omitempty"`
	// Topic is a sink's topic; Extractor is set instead for a sink whose
	// topic is chosen per record by a TopicNameExtractor.
	Topic        string   `json:"topic,omitempty"`
	Extractor    string   `json:"extractor,omitempty"`
	Successors   []string `json:"successors,omitempty"`
	Predecessors []string `json:"predecessors,omitempty"`
	// Line is the line of the node in the parsed text (0 when built in code).
	Line int `json:"-"`
}

// SubTopology is one sub-topology: a connected part of the graph that runs
// as tasks <ID>_<partition>, or a global store's source and processor.
type SubTopology struct {
	ID     int    `json:"id"`
	Global bool   `json:"global,omitempty"`
	Nodes  []Node `json:"nodes"`
}

// Topology is the graph of a Kafka Streams application, parsed from the
// text of Topology#describe().
type Topology struct {
	SubTopologies []SubTopology `json:"sub_topologies"`
}

// ParseError is a describe text that could not be parsed; Line is 1-based.
type ParseError struct {
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Msg }

func errAt(line int, format string, args ...any) error {
	return &ParseError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// ParseString parses the text of Topology#describe().
func ParseString(s string) (*Topology, error) { return Parse(strings.NewReader(s)) }

// Parse parses the text of Topology#describe() as printed by Kafka Streams
// 2.x to 4.x. Indentation is not significant, CRLF line ends and trailing
// spaces are accepted, and topic and store lists may come in any order.
// Every error is a *ParseError naming the line.
func Parse(r io.Reader) (*Topology, error) {
	p := parser{t: &Topology{}}
	lr := &io.LimitedReader{R: r, N: MaxTopologyBytes + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		p.line++
		text := sc.Text()
		if p.line == 1 {
			text = strings.TrimPrefix(text, string(utf8BOM))
		}
		if err := p.parseLine(strings.TrimRight(text, " \t\r")); err != nil {
			return nil, err
		}
	}
	if lr.N <= 0 {
		return nil, errAt(p.line, "the text passes %d bytes: a describe() text is far smaller", MaxTopologyBytes)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read topology: %w", err)
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	return p.t, nil
}

type parser struct {
	t      *Topology
	line   int
	header bool
	sub    *SubTopology
	node   *Node
	// seen is set for a node once its --> or <-- line is read.
	succSeen, predSeen bool
	names              map[string]int // node name → line
	globals            bool           // after Kafka 1.x's "Global Stores:"
	ids                map[int]bool
}

func (p *parser) parseLine(s string) error {
	trimmed := strings.TrimLeft(s, " \t")
	switch {
	case trimmed == "":
		return nil
	case trimmed == "Global Stores:":
		// Kafka 1.x's footer, followed by "none" or nothing.
		if err := p.closeNode(); err != nil {
			return err
		}
		p.globals = true
		return nil
	case trimmed == "none" && p.globals:
		return nil
	case trimmed == "Topologies:" || trimmed == "Sub-topologies:":
		if p.header || p.sub != nil {
			return errAt(p.line, "unexpected %q", trimmed)
		}
		p.header = true
		return nil
	case strings.HasPrefix(trimmed, "Sub-topology:"):
		p.globals = false
		return p.subTopology(trimmed)
	case strings.HasPrefix(trimmed, "Source:"), strings.HasPrefix(trimmed, "Processor:"), strings.HasPrefix(trimmed, "Sink:"):
		return p.nodeLine(trimmed)
	case strings.HasPrefix(trimmed, "-->"), strings.HasPrefix(trimmed, "<--"):
		return p.edgeLine(trimmed)
	}
	if p.sub == nil && !p.header {
		return errAt(p.line, "not a topology description: want \"Topologies:\", got %q", clip(trimmed))
	}
	return errAt(p.line, "unexpected %q", clip(trimmed))
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

const globalSuffix = " for global store (will not generate tasks)"

func (p *parser) subTopology(s string) error {
	if err := p.closeNode(); err != nil {
		return err
	}
	rest := strings.TrimPrefix(s, "Sub-topology:")
	rest = strings.TrimLeft(rest, " ")
	global := false
	if r, ok := strings.CutSuffix(rest, globalSuffix); ok {
		rest, global = r, true
	}
	id, err := strconv.Atoi(rest)
	if err != nil || id < 0 || strconv.Itoa(id) != rest {
		return errAt(p.line, "bad sub-topology id %q", clip(rest))
	}
	if p.ids == nil {
		p.ids = map[int]bool{}
	}
	if p.ids[id] {
		return errAt(p.line, "sub-topology %d appears twice", id)
	}
	p.ids[id] = true
	p.t.SubTopologies = append(p.t.SubTopologies, SubTopology{ID: id, Global: global})
	p.sub = &p.t.SubTopologies[len(p.t.SubTopologies)-1]
	return nil
}

// closeNode checks that the node being read got the edge lines its kind
// prints.
func (p *parser) closeNode() error {
	n := p.node
	if n == nil {
		return nil
	}
	p.node = nil
	if n.Kind != KindSink && !p.succSeen {
		return errAt(n.Line, "%s %s has no successors line (-->): truncated?", n.Kind, n.Name)
	}
	if n.Kind != KindSource && !p.predSeen {
		return errAt(n.Line, "%s %s has no predecessors line (<--): truncated?", n.Kind, n.Name)
	}
	return nil
}

func (p *parser) nodeLine(s string) error {
	if p.sub == nil {
		return errAt(p.line, "node before any \"Sub-topology:\" line")
	}
	if p.globals {
		return errAt(p.line, "global stores in the Kafka 1.x layout are not supported: print the topology with Kafka 2.0 or later")
	}
	if err := p.closeNode(); err != nil {
		return err
	}
	kindWord, rest, _ := strings.Cut(s, ":")
	rest = strings.TrimLeft(rest, " ")
	n := Node{Line: p.line}
	var markers []string
	switch kindWord {
	case "Source":
		n.Kind, markers = KindSource, []string{"(topics: "}
	case "Processor":
		n.Kind, markers = KindProcessor, []string{"(stores: "}
	case "Sink":
		n.Kind, markers = KindSink, []string{"(topic: ", "(extractor class: "}
	}
	i, open := -1, ""
	for _, m := range markers {
		if j := strings.Index(rest, m); j >= 0 && (i < 0 || j < i) {
			i, open = j, m
		}
	}
	if i < 0 {
		return errAt(p.line, "%s line: want %q…\")\"", strings.ToLower(kindWord), markers[0])
	}
	// Kafka 2.x+ prints "name (topics: …)" on a line of its own; Kafka 1.x
	// printed "name(topics: …) --> a <-- b" with the edges inline.
	name, legacy := rest[:i], true
	if strings.HasSuffix(name, " ") {
		name, legacy = name[:len(name)-1], false
	}
	n.Name = name
	remainder := rest[i+len(open):]
	body, edges := "", ""
	j := strings.Index(remainder, ") --> ")
	if k := strings.Index(remainder, ") <-- "); k >= 0 && (j < 0 || k < j) {
		j = k
	}
	switch {
	case j >= 0:
		body, edges = remainder[:j], remainder[j+2:]
	case strings.HasSuffix(remainder, ")"):
		body = remainder[:len(remainder)-1]
	default:
		return errAt(p.line, "%s line: no closing \")\"", strings.ToLower(kindWord))
	}
	if err := checkName(n.Name); err != nil {
		return errAt(p.line, "%v", err)
	}
	switch open {
	case "(topics: ":
		l, ok := bracketList(body)
		switch {
		case ok && len(l) == 0:
			return errAt(p.line, "source %s reads no topic", n.Name)
		case ok:
			n.Topics = l
		case body == "":
			return errAt(p.line, "source %s has an empty pattern", n.Name)
		case legacy:
			n.Topics = strings.Split(body, ", ")
			slices.Sort(n.Topics)
		default:
			n.Pattern = body
		}
	case "(stores: ":
		l, ok := bracketList(body)
		if !ok {
			return errAt(p.line, "processor %s: want a store list in brackets, got %q", n.Name, clip(body))
		}
		n.Stores = l
	case "(topic: ":
		if body == "" {
			return errAt(p.line, "sink %s has an empty topic", n.Name)
		}
		n.Topic = body
	default:
		if body == "" {
			return errAt(p.line, "sink %s has an empty extractor class", n.Name)
		}
		n.Extractor = body
	}
	if p.names == nil {
		p.names = map[string]int{}
	}
	if l, ok := p.names[n.Name]; ok {
		return errAt(p.line, "node %s already defined on line %d", n.Name, l)
	}
	p.names[n.Name] = p.line
	p.sub.Nodes = append(p.sub.Nodes, n)
	p.node = &p.sub.Nodes[len(p.sub.Nodes)-1]
	p.succSeen, p.predSeen = false, false
	// Inline edges: "--> a, b <-- c", "--> a" or "<-- c".
	if edges != "" {
		succ, pred, hasPred := edges, "", false
		if strings.HasPrefix(edges, "<-- ") {
			succ, pred, hasPred = "", edges, true
		} else if a, b, ok := strings.Cut(edges, " <-- "); ok {
			succ, pred, hasPred = a, "<-- "+b, true
		}
		if succ != "" {
			if err := p.edgeLine(succ); err != nil {
				return err
			}
		}
		if hasPred {
			if err := p.edgeLine(pred); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty node name")
	case name == "none":
		return errors.New(`a node named "none" cannot be told from an empty list`)
	case strings.Contains(name, ", "):
		return fmt.Errorf("node name %q contains \", \"", clip(name))
	case strings.TrimSpace(name) != name:
		return fmt.Errorf("node name %q has leading or trailing spaces", clip(name))
	}
	return nil
}

// bracketList parses "[a, b]" into a sorted list.
func bracketList(s string) ([]string, bool) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	inner := s[1 : len(s)-1]
	if inner == "" {
		return []string{}, true
	}
	l := strings.Split(inner, ", ")
	slices.Sort(l)
	return l, true
}

func (p *parser) edgeLine(s string) error {
	if p.node == nil {
		return errAt(p.line, "%q outside a node", clip(s))
	}
	arrow, rest := s[:3], strings.TrimPrefix(s[3:], " ")
	var names []string
	if rest != "none" {
		if rest == "" {
			return errAt(p.line, "empty %s list", arrow)
		}
		names = strings.Split(rest, ", ")
		slices.Sort(names)
		if i := slices.Index(names, ""); i >= 0 {
			return errAt(p.line, "empty name in %s list", arrow)
		}
		if len(slices.Compact(slices.Clone(names))) != len(names) {
			return errAt(p.line, "a name appears twice in %s list", arrow)
		}
	}
	n := p.node
	switch {
	case arrow == "-->" && n.Kind == KindSink:
		return errAt(p.line, "sink %s cannot have successors", n.Name)
	case arrow == "<--" && n.Kind == KindSource:
		return errAt(p.line, "source %s cannot have predecessors", n.Name)
	case arrow == "-->" && (p.succSeen || p.predSeen):
		return errAt(p.line, "unexpected successors line for %s", n.Name)
	case arrow == "<--" && p.predSeen:
		return errAt(p.line, "second predecessors line for %s", n.Name)
	}
	if arrow == "-->" {
		n.Successors, p.succSeen = names, true
	} else {
		n.Predecessors, p.predSeen = names, true
	}
	return nil
}

// finish checks the graph: at least one sub-topology, every edge between
// nodes of one sub-topology and printed on both ends.
func (p *parser) finish() error {
	if err := p.closeNode(); err != nil {
		return err
	}
	if len(p.t.SubTopologies) == 0 {
		if p.header {
			return errAt(p.line, "no sub-topology: truncated?")
		}
		return errAt(max(p.line, 1), "not a topology description: no \"Topologies:\" line")
	}
	for _, st := range p.t.SubTopologies {
		if len(st.Nodes) == 0 {
			return errAt(p.line, "sub-topology %d has no nodes: truncated?", st.ID)
		}
		byName := map[string]*Node{}
		for i := range st.Nodes {
			byName[st.Nodes[i].Name] = &st.Nodes[i]
		}
		for _, n := range st.Nodes {
			for _, s := range n.Successors {
				m, ok := byName[s]
				switch {
				case !ok:
					return errAt(n.Line, "%s %s: successor %s is not a node of sub-topology %d: truncated?", n.Kind, n.Name, s, st.ID)
				case m.Kind == KindSource:
					return errAt(n.Line, "%s %s: successor %s is a source", n.Kind, n.Name, s)
				case !slices.Contains(m.Predecessors, n.Name):
					return errAt(m.Line, "%s %s does not list %s among its predecessors", m.Kind, m.Name, n.Name)
				}
			}
			for _, s := range n.Predecessors {
				m, ok := byName[s]
				switch {
				case !ok:
					return errAt(n.Line, "%s %s: predecessor %s is not a node of sub-topology %d: truncated?", n.Kind, n.Name, s, st.ID)
				case !slices.Contains(m.Successors, n.Name):
					return errAt(m.Line, "%s %s does not list %s among its successors", m.Kind, m.Name, n.Name)
				}
			}
		}
	}
	return nil
}

// Format prints the topology as Topology#describe() does (Kafka 3.x
// layout): what it prints parses back to the same graph.
func (t *Topology) Format(w io.Writer) error {
	_, err := io.WriteString(w, t.String())
	return err
}

// String is the describe() text of the topology.
func (t *Topology) String() string {
	var b bytes.Buffer
	b.WriteString("Topologies:\n")
	for i, st := range t.SubTopologies {
		if i == 0 {
			b.WriteString("   ")
		} else {
			b.WriteString("  ")
		}
		b.WriteString("Sub-topology: " + strconv.Itoa(st.ID))
		if st.Global {
			b.WriteString(globalSuffix)
		}
		b.WriteByte('\n')
		for _, n := range st.Nodes {
			b.WriteString("    ")
			switch n.Kind {
			case KindSource:
				if n.Pattern != "" {
					fmt.Fprintf(&b, "Source: %s (topics: %s)\n", n.Name, n.Pattern)
				} else {
					fmt.Fprintf(&b, "Source: %s (topics: [%s])\n", n.Name, strings.Join(n.Topics, ", "))
				}
			case KindProcessor:
				fmt.Fprintf(&b, "Processor: %s (stores: [%s])\n", n.Name, strings.Join(n.Stores, ", "))
			case KindSink:
				if n.Extractor != "" {
					fmt.Fprintf(&b, "Sink: %s (extractor class: %s)\n", n.Name, n.Extractor)
				} else {
					fmt.Fprintf(&b, "Sink: %s (topic: %s)\n", n.Name, n.Topic)
				}
			}
			if n.Kind != KindSink {
				b.WriteString("      --> " + nodeList(n.Successors) + "\n")
			}
			if n.Kind != KindSource {
				b.WriteString("      <-- " + nodeList(n.Predecessors) + "\n")
			}
		}
		if !st.Global {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func nodeList(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}
