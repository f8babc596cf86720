package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
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
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID()), goldmark.WithRendererOptions(gmhtml.WithXHTML()))
	if err := gm.Convert(md.Bytes(), &body); err != nil {
		return fmt.Errorf("render html: %w", err)
	}
	page := body.String()
	// the Mermaid block becomes the drawn pipeline
	if i := strings.Index(page, `<pre><code class="language-mermaid">`); i >= 0 {
		if j := strings.Index(page[i:], "</code></pre>"); j >= 0 {
			page = page[:i] + `<figure id="pipeline-drawing">` + FlowSVG(r.Edges) + "</figure>" + page[i+j+len("</code></pre>"):]
		}
	}
	if len(r.Timeline) > 0 {
		var svg bytes.Buffer
		if err := TimelineSVG(&svg, r); err != nil {
			return err
		}
		if i := strings.Index(page, ">Timeline</h2>"); i >= 0 {
			at := i + len(">Timeline</h2>")
			page = page[:at] + "\n" + `<figure id="timeline-drawing">` + stripXMLHeader(svg.String()) + "</figure>\n" + page[at:]
		}
	}
	page = unbreakWords(page)
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	fmt.Fprintf(&b, "<title>%s</title>\n", html.EscapeString("kaudit postmortem: "+orDash(r.AppID)))
	b.WriteString("<style>\n" + htmlStyle + "</style>\n</head>\n<body>\n<main>\n")
	b.WriteString(page)
	b.WriteString("</main>\n</body>\n</html>\n")
	return write(w, []byte(b.String()), "write html")
}

// htmlStyle lays the page out for a laptop's screen and for print: the
// text 1100 pixels wide at most; a table as wide as its content needs,
// each column at least as wide as its longest word (cells wrap at spaces,
// and a long identifier after its hyphens; numbers never, their headers
// at spaces), scrolling sideways on its own only when still wider than
// the page; the drawings scaled to the page's width.
const htmlStyle = `body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff;line-height:1.45}
main{max-width:1100px;margin:0 auto;padding:1.2em 2em}
table{border-collapse:collapse;margin:0.5em 0 1.2em;font-size:0.88em;display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:0.25em 0.55em;vertical-align:top;text-align:left;overflow-wrap:normal;word-break:normal}
th{background:#f6f8fa}
.w{white-space:nowrap}
td[align="right"]{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
th[align="right"]{text-align:right}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:0.9em}
pre{background:#f6f8fa;padding:0.8em;overflow-x:auto}
blockquote{border-left:4px solid #d29922;background:#fff8c5;margin:1em 0;padding:0.5em 1em}
figure{margin:1em 0}
figure svg{max-width:100%;height:auto;display:block}
h1{border-bottom:1px solid #d0d7de;padding-bottom:0.3em;margin-top:0.2em}
h2{border-bottom:1px solid #d0d7de;padding-bottom:0.2em;margin-top:1.6em}
ol li{margin:0.25em 0}
@media print{main{max-width:none}table{display:table}}
`

var (
	cellRE   = regexp.MustCompile(`(?s)(<t[dh][^>]*>)(.*?)(</t[dh]>)`)
	tagRE    = regexp.MustCompile(`<[^>]*>`)
	hyphenRE = regexp.MustCompile(`[^\s<>]*[-/][^\s<>]*`)
)

// unbreakWords keeps each word of a table cell on one line: a browser
// breaks "orders-v1/0@1005" or a key "o-1005" after its hyphen, and a
// column squeezed so reads as garbage. The words with a hyphen or a slash
// are wrapped in a span that does not break (class w); a cell still wraps
// at its spaces. Copied text is unchanged.
//
// A word longer than unbreakMax (an internal topic's name,
// kaudit-drill-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition/1) would
// make its column, and its table, wider than the page: it may break after
// its hyphens, slashes and underscores instead (a <wbr>, which copied text
// does not hold), never inside a part.
func unbreakWords(page string) string {
	keep := func(w string) string {
		if utf8.RuneCountInString(w) <= unbreakMax {
			return `<span class="w">` + w + `</span>`
		}
		return breakAfterRE.ReplaceAllString(w, "$0<wbr>")
	}
	return cellRE.ReplaceAllStringFunc(page, func(c string) string {
		m := cellRE.FindStringSubmatch(c)
		body := m[2]
		var b strings.Builder
		last := 0
		for _, loc := range tagRE.FindAllStringIndex(body, -1) {
			b.WriteString(hyphenRE.ReplaceAllStringFunc(body[last:loc[0]], keep))
			b.WriteString(body[loc[0]:loc[1]])
			last = loc[1]
		}
		b.WriteString(hyphenRE.ReplaceAllStringFunc(body[last:], keep))
		return m[1] + b.String() + m[3]
	})
}

// unbreakMax is the longest word (in runes) kept whole in a table cell.
const unbreakMax = 24

// breakAfterRE are the places a long identifier may break after.
var breakAfterRE = regexp.MustCompile(`[-/_,:]+`)

func stripXMLHeader(s string) string {
	if strings.HasPrefix(s, "<?xml") {
		if i := strings.Index(s, "?>"); i >= 0 {
			return strings.TrimLeft(s[i+2:], "\n")
		}
	}
	return s
}

// FlowSVG draws the pipeline's hops as an SVG flowchart: one box per
// topic or store, placed in columns by its distance from the sources, its
// name on up to three lines, one arrow per hop labelled with its record
// count, red where records vanished. It is drawn to fit a page 1,100
// pixels wide (four columns); wider pipelines scale down with the page.
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
	const boxW, colGap, rowGap, pad, lineH = 180, 110, 34, 12, 14
	labels := map[string][]string{}
	boxH := 0
	for _, n := range names {
		labels[n] = labelLines(n, 22, 3)
		boxH = max(boxH, 14+lineH*len(labels[n]))
	}
	rows := 0
	for _, c := range cols {
		rows = max(rows, len(c))
	}
	width := pad*2 + (maxDepth+1)*boxW + maxDepth*colGap
	height := pad*2 + max(rows, 1)*boxH + max(rows-1, 0)*rowGap + 12
	type pt struct{ x, y int }
	at := map[string]pt{}
	for d := 0; d <= maxDepth; d++ {
		c := cols[d]
		off := (height - 12 - pad*2 - (len(c)*boxH + max(len(c)-1, 0)*rowGap)) / 2
		for i, n := range c {
			at[n] = pt{pad + d*(boxW+colGap), pad + 12 + off + i*(boxH+rowGap)}
		}
	}
	lostInto := map[string]bool{}
	for _, e := range edges {
		if e.Vanished > 0 {
			lostInto[e.To] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11" role="img" aria-label="pipeline">`+"\n", width, height, width, height)
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
		lost := ""
		if e.Vanished > 0 {
			stroke, marker, sw = "#d62728", "arrow-lost", 3
			lost = num(e.Vanished) + " lost"
		}
		fmt.Fprintf(&b, `<line class="hop" x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%.1f" marker-end="url(#%s)"/>`+"\n", x1, y1, x2, y2, stroke, sw, marker)
		// the label at the middle of the arrow, its count above and what
		// was lost below, each short enough for the gap between columns
		mx, my := (x1+x2)/2, (y1+y2)/2
		if y1 != y2 && x1 != x2 {
			// a sloped arrow (hops converging on a join): near its
			// start, so that the labels of arrows into one box part
			mx, my = x1+(x2-x1)*3/10, y1+(y2-y1)*3/10
		}
		fmt.Fprintf(&b, `<text class="hop-label" x="%d" y="%d" text-anchor="middle" fill="%s" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`+"\n", mx, my-5, stroke, esc(num(e.Records)+" records"))
		if lost != "" {
			fmt.Fprintf(&b, `<text class="hop-label" x="%d" y="%d" text-anchor="middle" fill="%s" font-weight="bold" stroke="#fff" stroke-width="3" paint-order="stroke">%s</text>`+"\n", mx, my+13, stroke, esc(lost))
		}
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted) // a stable drawing order
	for _, n := range sorted {
		p := at[n]
		fill, stroke := "#f6f8fa", "#57606a"
		if lostInto[n] {
			fill, stroke = "#fde2e2", "#d62728"
		}
		fmt.Fprintf(&b, `<g class="node"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="%s"/>`, esc(n), p.x, p.y, boxW, boxH, fill, stroke)
		ls := labels[n]
		y0 := p.y + boxH/2 - (len(ls)-1)*lineH/2 + 4
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">`, p.x+boxW/2, y0)
		for i, l := range ls {
			fmt.Fprintf(&b, `<tspan x="%d" dy="%d">%s</tspan>`, p.x+boxW/2, map[bool]int{true: 0, false: lineH}[i == 0], esc(l))
		}
		b.WriteString("</text></g>\n")
	}
	b.WriteString("</svg>")
	return b.String()
}

// labelLines breaks a topic or store name into at most maxLines lines of
// at most perLine characters, after a '-', '.' or '_' where it can; what
// does not fit is elided in the middle of the last line.
func labelLines(name string, perLine, maxLines int) []string {
	rs := []rune(name)
	var lines []string
	for len(rs) > 0 && len(lines) < maxLines {
		if len(rs) <= perLine {
			lines = append(lines, string(rs))
			rs = nil
			break
		}
		cut := perLine
		for i := perLine; i > perLine/2; i-- {
			if c := rs[i-1]; c == '-' || c == '.' || c == '_' {
				cut = i
				break
			}
		}
		lines = append(lines, string(rs[:cut]))
		rs = rs[cut:]
	}
	if len(rs) > 0 {
		last := []rune(lines[len(lines)-1] + string(rs))
		keep := perLine - 1
		lines[len(lines)-1] = string(last[:keep/2]) + "…" + string(last[len(last)-(keep-keep/2):])
	}
	return lines
}
