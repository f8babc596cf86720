package report

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// TimelineSVG draws the per-minute timeline: records produced per minute
// (with the vanished ones in red over them), and committed and aborted
// transactions below, with the incident windows shaded.
func TimelineSVG(w io.Writer, r *audit.Report) error {
	ms := timeline(r)
	var b bytes.Buffer
	const (
		left, right, top = 60, 20, 40
		prodH, txnH, gap = 160, 80, 30
		labelH           = 40
	)
	barW := 12
	if len(ms) > 0 {
		barW = max(1, min(12, 1200/len(ms)))
	}
	width := left + right + max(len(ms), 1)*barW
	if width < 400 {
		width = 400
	}
	height := top + prodH + gap + txnH + labelH
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<title>%s</title>`+"\n", esc("kaudit timeline: "+orDash(r.AppID)))
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc("Timeline of "+orDash(r.AppID)+" (UTC, per minute)"))
	if len(ms) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no timeline data in the report</text>`+"\n", left, top+prodH/2)
		b.WriteString("</svg>\n")
		return write(w, b.Bytes(), "write timeline svg")
	}
	var maxProd, maxTxn int64 = 1, 1
	for _, m := range ms {
		maxProd = max(maxProd, m.Produced, m.Vanished)
		maxTxn = max(maxTxn, m.Committed+m.Aborted)
	}
	x := func(i int) int { return left + i*barW }
	// Incident windows.
	windows, runs := incidentRuns(ms)
	for k, win := range windows {
		i0, n := runs[k].first, runs[k].last-runs[k].first+1
		fmt.Fprintf(&b, `<rect class="incident" x="%d" y="%d" width="%d" height="%d" fill="#fde2e2"><title>%s</title></rect>`+"\n",
			x(i0), top, n*barW, prodH+gap+txnH, esc(fmt.Sprintf("incident window %s–%s", win.Start.Format("15:04"), win.End.Format("15:04"))))
	}
	// Axes.
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top+prodH, x(len(ms)), top+prodH)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#333"/>`+"\n", left, top+prodH+gap+txnH, x(len(ms)), top+prodH+gap+txnH)
	fmt.Fprintf(&b, `<text x="4" y="%d">%d</text><text x="4" y="%d">records</text>`+"\n", top+10, maxProd, top+prodH)
	fmt.Fprintf(&b, `<text x="4" y="%d">%d</text><text x="4" y="%d">txns</text>`+"\n", top+prodH+gap+10, maxTxn, top+prodH+gap+txnH)
	bw := max(barW-1, 1)
	for i, m := range ms {
		t := time.UnixMilli(m.Start).UTC().Format("15:04")
		if h := int(m.Produced * prodH / maxProd); h > 0 {
			fmt.Fprintf(&b, `<rect class="produced" x="%d" y="%d" width="%d" height="%d" fill="#6b8fc7"><title>%s produced %d</title></rect>`+"\n", x(i), top+prodH-h, bw, h, t, m.Produced)
		}
		if m.Vanished > 0 {
			h := max(int(m.Vanished*prodH/maxProd), 2)
			fmt.Fprintf(&b, `<rect class="vanished" x="%d" y="%d" width="%d" height="%d" fill="#d62728"><title>%s vanished %d</title></rect>`+"\n", x(i), top+prodH-h, bw, h, t, m.Vanished)
		}
		base := top + prodH + gap + txnH
		hc := int(m.Committed * txnH / maxTxn)
		ha := int(m.Aborted * txnH / maxTxn)
		if m.Aborted > 0 {
			ha = max(ha, 2)
		}
		if hc > 0 {
			fmt.Fprintf(&b, `<rect class="committed" x="%d" y="%d" width="%d" height="%d" fill="#2ca02c"><title>%s committed %d</title></rect>`+"\n", x(i), base-hc, bw, hc, t, m.Committed)
		}
		if ha > 0 {
			fmt.Fprintf(&b, `<rect class="aborted" x="%d" y="%d" width="%d" height="%d" fill="#ff7f0e"><title>%s aborted %d</title></rect>`+"\n", x(i), base-hc-ha, bw, ha, t, m.Aborted)
		}
	}
	// Time labels, about every 80 pixels.
	every := max(1, 80/barW)
	for i := 0; i < len(ms); i += every {
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x(i), top+prodH+gap+txnH+15, time.UnixMilli(ms[i].Start).UTC().Format("15:04"))
	}
	ly := height - 8
	fmt.Fprintf(&b, `<text x="%d" y="%d"><tspan fill="#6b8fc7">■ produced</tspan> <tspan fill="#d62728">■ vanished</tspan> <tspan fill="#2ca02c">■ txns committed</tspan> <tspan fill="#ff7f0e">■ txns aborted</tspan> <tspan fill="#e88">■ incident window</tspan></text>`+"\n", left, ly)
	b.WriteString("</svg>\n")
	return write(w, b.Bytes(), "write timeline svg")
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // writes to a buffer: cannot fail
	return b.String()
}

func write(w io.Writer, p []byte, what string) error {
	if _, err := w.Write(p); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
