// Package mermaid writes Mermaid flowcharts: the one renderer behind the
// layout kaudit topology draws and the pipeline with record counts the
// postmortem draws.
package mermaid

import (
	"fmt"
	"strings"
)

// Shape is how a node is drawn; the label goes where %s is.
type Shape string

// The node shapes kaudit draws.
const (
	Box           Shape = `["%s"]`
	Subroutine    Shape = `[["%s"]]` // a topic
	Cylinder      Shape = `[("%s")]` // a store
	Hexagon       Shape = `{{"%s"}}` // a join
	Parallelogram Shape = `[/"%s"/]` // a topic chosen per record
)

// Flowchart is a left-to-right flowchart being written.
type Flowchart struct{ b strings.Builder }

// New starts a flowchart.
func New() *Flowchart {
	f := &Flowchart{}
	f.b.WriteString("flowchart LR\n")
	return f
}

// Node declares node id drawn as shape with label (escaped).
func (f *Flowchart) Node(id string, shape Shape, label string) {
	fmt.Fprintf(&f.b, "  %s%s\n", id, fmt.Sprintf(string(shape), Label(label)))
}

// Edge draws from → to with arrow ("-->", "-.->"), labelled when label is
// not empty.
func (f *Flowchart) Edge(from, arrow, label, to string) {
	if label != "" {
		fmt.Fprintf(&f.b, "  %s %s|\"%s\"| %s\n", from, arrow, Label(label), to)
		return
	}
	fmt.Fprintf(&f.b, "  %s %s %s\n", from, arrow, to)
}

// Class defines class name with style and puts ids in it.
func (f *Flowchart) Class(name, style string, ids []string) {
	fmt.Fprintf(&f.b, "  classDef %s %s\n", name, style)
	fmt.Fprintf(&f.b, "  class %s %s\n", strings.Join(ids, ","), name)
}

// LinkStyle styles the links numbered links (in the order drawn).
func (f *Flowchart) LinkStyle(links []string, style string) {
	fmt.Fprintf(&f.b, "  linkStyle %s %s\n", strings.Join(links, ","), style)
}

// String is the flowchart's text.
func (f *Flowchart) String() string { return f.b.String() }

// Label escapes text for a quoted Mermaid label.
func Label(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "`", "#96;", "\n", " ").Replace(s)
}
