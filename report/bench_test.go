package report

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// bigReport has n aborted-not-replayed findings over 8 partitions and a
// day of timeline.
func bigReport(n int) *audit.Report {
	r := lossReport()
	for i := range n {
		f := audit.NewFinding(audit.StageRepartition, audit.CauseAbortedNotReplayed, tp("orders-v1", int32(i%8)), int64(10000+i))
		f.Key = fmt.Sprintf("o-%d", i)
		f.Detail = "derived record only in aborted txn"
		r.Findings = append(r.Findings, f)
	}
	r.Timeline = steadyTimeline(24 * 60)
	r.Timeline[600].Aborted = 4
	r.Finish()
	return r
}

func BenchmarkRender100k(b *testing.B) {
	r := bigReport(100_000)
	for _, format := range Formats {
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				if err := Render(io.Discard, format, r, testOptions()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("svg", func(b *testing.B) {
		for b.Loop() {
			if err := TimelineSVG(io.Discard, r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestMarkdownCapsBigReports(t *testing.T) {
	r := bigReport(5000) // 5000 single-offset ranges: offsets interleave over 8 partitions
	md := string(renderMarkdown(t, r, testOptions()))
	if n := strings.Count(md, "\n| orders-v1 | "); n > mdRanges+mdRowsPerCause+len(r.Cut) {
		t.Errorf("%d orders-v1 rows: tables are not capped", n)
	}
	if n := strings.Count(md, "\nfor o in "); n == 0 || n%2 != 0 || n > 2*8 {
		t.Errorf("%d replay loops, want one to copy and one to produce for each partition shown", n)
	}
	for _, want := range []string{"more ranges (", "more `aborted-not-replayed` findings", "offsets), built the same way"} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q", want)
		}
	}
}
