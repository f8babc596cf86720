package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"

	"github.com/kaudit/kaudit/audit"
)

// HTML writes the postmortem as one self-contained HTML file: the
// Markdown postmortem rendered, with the pipeline and the timeline as
// inline SVG instead of a Mermaid block and a separate picture, so that it
// opens anywhere, offline, and survives being mailed or attached.
func HTML(w io.Writer, r *audit.Report, o Options) error {
	o.SVGPath = "" // the timeline is inline
	var md bytes.Buffer
	if err := Markdown(&md, r, o); err != nil {
		return err
	}
	var body bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithXHTML()))
	if err := gm.Convert(md.Bytes(), &body); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	page := body.String()
	// the Mermaid block becomes the drawn pipeline
	if i := strings.Index(page, `<pre><code class="language-mermaid">`); i >= 0 {
		if j := strings.Index(page[i:], "</code></pre>"); j >= 0 {
			page = page[:i] + `<figure id="pipeline">` + FlowSVG(r.Edges) + "</figure>" + page[i+j+len("</code></pre>"):]
		}
	}
	if len(r.Timeline) > 0 {
		var svg bytes.Buffer
		if err := TimelineSVG(&svg, r); err != nil {
			return err
		}
		if i := strings.Index(page, "<h2>Timeline</h2>"); i >= 0 {
			at := i + len("<h2>Timeline</h2>")
			page = page[:at] + "\n" + `<figure id="timeline">` + stripXMLHeader(svg.String()) + "</figure>\n" + page[at:]
		}
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString("kaudit postmortem: "+orDash(r.AppID)))
	b.WriteString("<style>\n" + htmlStyle + "</style>\n</head>\n<body>\n<main>\n")
	b.WriteString(page)
	b.WriteString("</main>\n</body>\n</html>\n")
	return write(w, []byte(b.String()), "write html")
}

const htmlStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1200px;margin:0 auto;padding:1.5em 2em}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.9em;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:0.3em 0.6em;vertical-align:top;text-align:left;overflow-wrap:anywhere}
th{background:#f6f8fa}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:0.9em}
pre{background:#f6f8fa;padding:0.8em;overflow-x:auto}
blockquote{border-left:4px solid #d29922;background:#fff8c5;margin:1em 0;padding:0.5em 1em}
figure{margin:1em 0;overflow-x:auto}
h1{border-bottom:1px solid #d0d7de;padding-bottom:0.3em}
h2{border-bottom:1px solid #d0d7de;padding-bottom:0.2em;margin-top:1.6em}
`

func stripXMLHeader(s string) string {
	if strings.HasPrefix(s, "<?xml") {
		if i := strings.Index(s, "?>"); i >= 0 {
			return strings.TrimLeft(s[i+2:], "\n")
		}
	}
	return s
}

// FlowSVG draws the pipeline's hops as an SVG flowchart: one box per
// topic or store, placed in columns by its distance from the sources, one
// arrow per hop labelled with its record count, red where records
// vanished.
func FlowSVG(edges []audit.Edge) string {
	var names []string
	seen := map[string]bool{}
	for _, e := range edges {
		for _, n := range []string{e.From, e.To} {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	// depth: the longest path from a node without inputs (cycles, which a
	// Streams topology has not, are cut by the bound)
	depth := map[string]int{}
	for range names {
		changed := false
		for _, e := range edges {
			if d := depth[e.From] + 1; d > depth[e.To] && d < len(names) {
				depth[e.To], changed = d, true
			}
		}
		if !changed {
			break
		}
	}
	cols := map[int][]string{}
	maxDepth := 0
	for _, n := range names {
		cols[depth[n]] = append(cols[depth[n]], n)
		maxDepth = max(maxDepth, depth[n])
	}
	const boxW, boxH, colGap, rowGap, pad = 200, 44, 170, 40, 20
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	width := pad*2 + (maxDepth+1)*boxW + maxDepth*colGap
	height := pad*2 + max(rows, 1)*boxH + max(rows-1, 0)*rowGap
	type pt struct{ x, y int }
	at := map[string]pt{}
	for d := 0; d <= maxDepth; d++ {
		c := cols[d]
		off := (height - pad*2 - (len(c)*boxH + max(len(c)-1, 0)*rowGap)) / 2
		for i, n := range c {
			at[n] = pt{pad + d*(boxW+colGap), pad + off + i*(boxH+rowGap)}
		}
	}
	lostInto := map[string]bool{}
	for _, e := range edges {
		if e.Vanished > 0 {
			lostInto[e.To] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12" role="img" aria-label="pipeline">`+"\n", width, height, width, height)
	b.WriteString(`<title>pipeline: record counts per hop</title>` + "\n")
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#57606a"/></marker>` +
		`<marker id="arrow-lost" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0L10,5L0,10z" fill="#d62728"/></marker></defs>` + "\n")
	for _, e := range edges {
		a, z := at[e.From], at[e.To]
		x1, y1, x2, y2 := a.x+boxW, a.y+boxH/2, z.x, z.y+boxH/2
		if z.x <= a.x { // not left to right: draw it below
			x1, y1, x2, y2 = a.x+boxW/2, a.y+boxH, z.x+boxW/2, z.y+boxH
		}
		stroke, marker, sw := "#57606a", "arrow", 1.5
		label := num(e.Records) + " records"
		if e.Vanished > 0 {
			stroke, marker, sw = "#d62728", "arrow-lost", 3
			label += ", " + num(e.Vanished) + " lost"
		}
		fmt.Fprintf(&b, `<line class="hop" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%.1f" marker-end="url(#%s)"/>`+"\n", x1, y1, x2, y2, stroke, sw, marker)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text>`+"\n", (x1+x2)/2, (y1+y2)/2-6, stroke, esc(label))
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted) // a stable drawing order
	for _, n := range sorted {
		p := at[n]
		fill, stroke := "#f6f8fa", "#57606a"
		if lostInto[n] {
			fill, stroke = "#fde2e2", "#d62728"
		}
		fmt.Fprintf(&b, `<rect class="node" x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="%s"/>`+"\n", p.x, p.y, boxW, boxH, fill, stroke)
		label := n
		if r := []rune(label); len(r) > 30 {
			label = string(r[:14]) + "…" + string(r[len(r)-15:])
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle"><title>%s</title>%s</text>`+"\n", p.x+boxW/2, p.y+boxH/2+4, esc(n), esc(label))
	}
	b.WriteString("</svg>")
	return b.String()
}
