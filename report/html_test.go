package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	for _, id := range []string{`<figure id="pipeline"><svg`, `<figure id="timeline"><svg`} {
		i := strings.Index(page, id)
		if i < 0 {
			t.Fatalf("no %s", id)
		}
		svg := page[i+len(`<figure id="pipeline">`):]
		if strings.HasPrefix(id, `<figure id="timeline">`) {
			svg = page[i+len(`<figure id="timeline">`):]
		}
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

// TestHTMLRendersInChromium opens the page in headless Chromium and
// checks that the pipeline diagram was painted: the screenshot of the
// page with only the diagram has red (a lost hop) and dark (the text)
// pixels. CI installs chromium; without it the test skips.
func TestHTMLRendersInChromium(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install chromium): the HTML report is not opened in a browser")
	}
	r := lossReport()
	dir := t.TempDir()
	page := filepath.Join(dir, "diagram.html")
	// the diagram alone, at the top left, so that the screenshot holds it
	doc := "<!DOCTYPE html><html><body style=\"margin:0;background:#fff\">" + FlowSVG(r.Edges) + "</body></html>"
	if err := os.WriteFile(page, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+filepath.Join(dir, "profile"), "--window-size=1600,900", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
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
	dom, err := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir="+filepath.Join(dir, "profile2"), "--dump-dom", "file://"+full).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	if strings.Count(string(dom), "<svg") < 2 {
		t.Errorf("the browser's DOM holds %d drawings, want the pipeline and the timeline", strings.Count(string(dom), "<svg"))
	}
}
