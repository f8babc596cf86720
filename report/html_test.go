package report

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/kaudit/kaudit/internal/golden"
)

// TestHTMLSelfContained: one file, no network: no script, no stylesheet
// or image from elsewhere, the pipeline and the timeline inline as SVG
// that parses.
func TestHTMLSelfContained(t *testing.T) {
	var b bytes.Buffer
	if err := Render(&b, "html", lossReport(), testOptions()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<link", "<img", "@import", "language-mermaid", `src="http`, `href="http`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page has %q", bad)
		}
	}
	for _, id := range []string{`<figure id="pipeline-drawing">`, `<figure id="timeline-drawing">`} {
		i := strings.Index(page, id+"<svg")
		if i < 0 {
			t.Fatalf("no %s", id)
		}
		svg := page[i+len(id):]
		svg = svg[:strings.Index(svg, "</svg>")+len("</svg>")]
		if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
			t.Errorf("%s: the SVG does not parse: %v", id, err)
		}
	}
	if n := strings.Count(page, `class="hop"`); n != len(lossReport().Edges) {
		t.Errorf("%d hops drawn, the report has %d", n, len(lossReport().Edges))
	}
	if !strings.Contains(page, "lost</text>") {
		t.Error("no hop says what was lost")
	}
}

// chromium is the headless browser's path; the test skips without one.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is not installed (apt-get install chromium, or .ci/tools): the HTML report is not opened in a browser"
	if os.Getenv("KAUDIT_REQUIRE_TOOLS") != "" {
		t.Fatal(msg + " (KAUDIT_REQUIRE_TOOLS is set, as CI sets it)")
	}
	t.Skip(msg)
	return ""
}

// runChromium runs headless Chromium on a page with args and returns
// what it prints on stdout.
func runChromium(t *testing.T, bin, dir, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	profile, err := os.MkdirTemp(dir, "profile")
	if err != nil {
		t.Fatal(err)
	}
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage", "--hide-scrollbars",
		"--user-data-dir=" + profile}, args...)
	out, err := exec.CommandContext(ctx, bin, append(all, "file://"+page)...).Output()
	if err != nil {
		t.Fatalf("chromium %v: %v", args, err)
	}
	return out
}

// layoutProbe measures the page as laid out and writes what it finds
// into the DOM, which --dump-dom prints: the page's width, each drawing's
// right edge, each diagram label against its box, each table cell against
// its longest word, and where "What to do next" starts.
const layoutProbe = `<pre id="kaudit-layout"></pre><script>
(function(){
  var out = {viewport: document.documentElement.clientWidth, page: document.documentElement.scrollWidth, figures: [], labels: [], cells: [], next: -1};
  document.querySelectorAll("figure").forEach(function(f){
    var svg = f.querySelector("svg"), r = svg.getBoundingClientRect();
    out.figures.push({id: f.id, right: r.right, scroll: f.scrollWidth, client: f.clientWidth});
  });
  document.querySelectorAll("g.node").forEach(function(g){
    var box = g.querySelector("rect").getBBox(), tb = g.querySelector("text").getBBox();
    out.labels.push({name: g.querySelector("title").textContent, inside: tb.x >= box.x && tb.x+tb.width <= box.x+box.width && tb.y >= box.y && tb.y+tb.height <= box.y+box.height,
      text: [tb.x, tb.width], box: [box.x, box.width]});
  });
  var canvas = document.createElement("canvas").getContext("2d");
  document.querySelectorAll("td, th").forEach(function(c){
    var st = getComputedStyle(c), inner = c.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight);
    var widest = 0, word = "";
    // each text node in its own font (code, bold)
    var walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
    for (var n = walk.nextNode(); n; n = walk.nextNode()) {
      var ps = getComputedStyle(n.parentElement);
      canvas.font = ps.fontWeight + " " + ps.fontSize + " " + ps.fontFamily;
      n.textContent.split(/\s+/).forEach(function(w){
        var m = canvas.measureText(w).width;
        if (m > widest) { widest = m; word = w; }
      });
    }
    if (widest > inner + 1) out.cells.push({word: word, word_px: widest, cell_px: inner});
  });
  var h = Array.prototype.find.call(document.querySelectorAll("h2"), function(e){ return e.textContent == "What to do next"; });
  if (h) out.next = h.getBoundingClientRect().top + window.scrollY;
  document.getElementById("kaudit-layout").textContent = JSON.stringify(out);
})();
</script>`

// screenshotPath is the screenshot of the postmortem a person would
// attach: the first screen of the HTML at 1280 pixels, written by
// TestHTMLLayoutInChromium under -update.
const screenshotPath = "../testdata/screenshots/postmortem-html.png"

// TestHTMLLayoutInChromium opens the HTML postmortem in headless
// Chromium at 1280 pixels wide and checks its layout: no column of any
// table narrower than its content's longest word, every drawing within
// the page's width, every diagram label inside its box, no sideways
// scrolling of the page, and "What to do next" on the first screen. It
// writes the screenshot under -update.
func TestHTMLLayoutInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	var b bytes.Buffer
	if err := Render(&b, "html", lossReport(), testOptions()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	probe := filepath.Join(dir, "probe.html")
	if err := os.WriteFile(probe, []byte(strings.Replace(page, "</body>", layoutProbe+"</body>", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, bin, dir, probe, "--window-size=1280,900", "--virtual-time-budget=5000", "--dump-dom")
	m := regexp.MustCompile(`<pre id="kaudit-layout">([^<]*)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe wrote nothing: the page's script did not run\n%.2000s", dom)
	}
	var got struct {
		Viewport, Page float64
		Figures        []struct {
			ID                    string
			Right, Scroll, Client float64
		}
		Labels []struct {
			Name      string
			Inside    bool
			Text, Box []float64
		}
		Cells []struct {
			Word   string
			WordPx float64 `json:"word_px"`
			CellPx float64 `json:"cell_px"`
		}
		Next float64
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatalf("%v: %s", err, m[1])
	}
	if got.Page > got.Viewport {
		t.Errorf("the page is %v pixels wide in a %v-pixel window: it scrolls sideways", got.Page, got.Viewport)
	}
	if len(got.Figures) != 2 {
		t.Errorf("%d drawings, want the pipeline and the timeline", len(got.Figures))
	}
	for _, f := range got.Figures {
		if f.Right > got.Viewport || f.Scroll > f.Client {
			t.Errorf("drawing %s ends at %v (window %v), scrolls %v in %v: clipped", f.ID, f.Right, got.Viewport, f.Scroll, f.Client)
		}
	}
	if len(got.Labels) == 0 {
		t.Error("no diagram boxes measured")
	}
	for _, l := range got.Labels {
		if !l.Inside {
			t.Errorf("label %q overflows its box: text %v, box %v", l.Name, l.Text, l.Box)
		}
	}
	for _, c := range got.Cells {
		t.Errorf("a column is %.0f pixels wide, narrower than its word %q (%.0f pixels)", c.CellPx, c.Word, c.WordPx)
	}
	if got.Next < 0 || got.Next > 900 {
		t.Errorf(`"What to do next" starts %v pixels down: not on the first screen (900 pixels)`, got.Next)
	}

	// the screenshot a person attaches: the first screen
	full := filepath.Join(dir, "report.html")
	if err := os.WriteFile(full, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	runChromium(t, bin, dir, full, "--window-size=1280,1000", "--screenshot="+shot)
	img := readPNG(t, shot)
	if bd := img.Bounds(); bd.Dx() != 1280 {
		t.Errorf("screenshot %v wide, want 1280", bd.Dx())
	}
	if goldenfile.Updating() {
		src, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(screenshotPath, src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestHTMLRendersInChromium opens the page in headless Chromium and
// checks that the pipeline diagram was painted: the screenshot of the
// page with only the diagram has red (a lost hop) and dark (the text)
// pixels. CI installs chromium; without it the test skips.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	r := lossReport()
	dir := t.TempDir()
	page := filepath.Join(dir, "diagram.html")
	// the diagram alone, at the top left, so that the screenshot holds it
	doc := "<!DOCTYPE html><html><body style=\"margin:0;background:#fff\">" + FlowSVG(r.Edges) + "</body></html>"
	if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	runChromium(t, bin, dir, page, "--window-size=1600,900", "--screenshot="+shot)
	img := readPNG(t, shot)
	var red, dark int
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			r, g, b = r>>8, g>>8, b>>8
			switch {
			case r > 180 && g < 90 && b < 90:
				red++
			case r < 120 && g < 120 && b < 120:
				dark++
			}
		}
	}
	if red < 50 || dark < 200 {
		t.Errorf("the diagram was not painted: %d red and %d dark pixels", red, dark)
	}
	// and the whole report opens: the DOM holds both drawings
	var b bytes.Buffer
	if err := Render(&b, "html", r, testOptions()); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "report.html")
	if err := os.WriteFile(full, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := runChromium(t, bin, dir, full, "--dump-dom")
	if strings.Count(string(dom), "<svg") < 2 {
		t.Errorf("the browser's DOM holds %d drawings, want the pipeline and the timeline", strings.Count(string(dom), "<svg"))
	}
}
