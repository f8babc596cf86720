package report

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"
	"time"

	goldenfile "github.com/kaudit/kaudit/internal/golden"

	"github.com/kaudit/kaudit/audit"
)

var cases = []struct {
	name   string
	report func() *audit.Report
}{
	{"clean", cleanReport},
	{"loss", lossReport},
	{"incomplete", incompleteReport},
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, filepath.Join("testdata", name), got)
}

func TestGolden(t *testing.T) {
	formats := []struct {
		ext    string
		render func(*bytes.Buffer, *audit.Report) error
	}{
		{"md", func(b *bytes.Buffer, r *audit.Report) error { return Render(b, "md", r, testOptions()) }},
		{"csv", func(b *bytes.Buffer, r *audit.Report) error { return Render(b, "csv", r, testOptions()) }},
		{"json", func(b *bytes.Buffer, r *audit.Report) error { return Render(b, "json", r, testOptions()) }},
		{"txt", func(b *bytes.Buffer, r *audit.Report) error { return Render(b, "table", r, testOptions()) }},
		{"prom", func(b *bytes.Buffer, r *audit.Report) error { return Render(b, "prom", r, testOptions()) }},
		{"svg", func(b *bytes.Buffer, r *audit.Report) error { return TimelineSVG(b, r) }},
		{"html", func(b *bytes.Buffer, r *audit.Report) error { return Render(b, "html", r, testOptions()) }},
	}
	for _, c := range cases {
		for _, f := range formats {
			t.Run(c.name+"/"+f.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := f.render(&b, c.report()); err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+"."+f.ext+".golden", b.Bytes())
			})
		}
	}
	t.Run("loss-baseline", func(t *testing.T) {
		// judged against last night's report, which had every finding but
		// the hanging transaction
		r := lossReport()
		i := slices.IndexFunc(r.Findings, func(f audit.Finding) bool { return f.Cause == audit.CauseHangingTransaction })
		r.Baseline = &audit.Baseline{Report: "/reports/nightly/last.json", GeneratedAt: testGenerated.Add(-24 * time.Hour), New: []int{i}}
		r.Finish()
		for _, f := range []string{"md", "txt"} {
			var b bytes.Buffer
			if err := Render(&b, map[string]string{"md": "md", "txt": "table"}[f], r, testOptions()); err != nil {
				t.Fatal(err)
			}
			golden(t, "loss-baseline."+f+".golden", b.Bytes())
		}
	})
	t.Run("loss-no-version/md", func(t *testing.T) {
		var b bytes.Buffer
		if err := Markdown(&b, lossReport(), Options{Now: testNow}); err != nil {
			t.Fatal(err)
		}
		golden(t, "loss-no-version.md.golden", b.Bytes())
	})
}

func TestLedgerGolden(t *testing.T) {
	for _, c := range []struct {
		name    string
		offsets bool
	}{{"ledger", false}, {"ledger-offsets", true}} {
		for _, f := range []struct {
			ext    string
			render func(*bytes.Buffer, *audit.TopicLedger) error
		}{
			{"txt", func(b *bytes.Buffer, l *audit.TopicLedger) error { return LedgerTable(b, l) }},
			{"json", func(b *bytes.Buffer, l *audit.TopicLedger) error { return LedgerJSON(b, l) }},
			{"csv", func(b *bytes.Buffer, l *audit.TopicLedger) error { return LedgerCSV(b, l) }},
		} {
			t.Run(c.name+"/"+f.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := f.render(&b, testLedger(c.offsets)); err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+"."+f.ext+".golden", b.Bytes())
			})
		}
	}
}
