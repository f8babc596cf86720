package report

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kaudit/kaudit/audit"
)

// FuzzReadJSON: ReadJSON never panics; whatever it accepts survives
// JSON → ReadJSON → JSON unchanged, renders in every format, and its CSV,
// Prometheus text and SVG parse back.
func FuzzReadJSON(f *testing.F) {
	// Small seeds: the fuzzer minimizes every new input it finds, and
	// minimizing a copy of a 60 KB golden file takes minutes.
	small := lossReport()
	small.Findings = append(small.Findings[:3:3], small.Findings[len(small.Findings)-4:]...)
	small.Timeline = small.Timeline[9:14]
	small.Lineage = []audit.Lineage{{Finding: 1, Hops: small.Lineage[0].Hops[:1]}}
	small.Cut = small.Cut[:2]
	for _, r := range []*audit.Report{small, incompleteReport(), {AppID: "a"}} {
		var b bytes.Buffer
		if err := JSON(&b, r); err != nil {
			f.Fatal(err)
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte(`{"findings":[{"stage":"source","cause":"x","offset":-1,"count":0}],"lineage":[{"finding":0}]}`))
	f.Add([]byte(`{"timeline":[{"start":0,"produced":1},{"start":9223372036854775807}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := ReadJSON(bytes.NewReader(in))
		if err != nil {
			return
		}
		var first bytes.Buffer
		if err := JSON(&first, r); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(bytes.NewReader(first.Bytes()))
		if err != nil {
			t.Fatalf("re-read of our own JSON: %v", err)
		}
		var second bytes.Buffer
		if err := JSON(&second, back); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("round trip changed the document:\n%s\n%s", first.Bytes(), second.Bytes())
		}
		for _, format := range Formats {
			var b bytes.Buffer
			if err := Render(&b, format, r, testOptions()); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			switch format {
			case "csv":
				rows, err := csv.NewReader(&b).ReadAll()
				if err != nil || len(rows) != len(r.Findings)+1 {
					t.Fatalf("csv: %d rows for %d findings, %v", len(rows), len(r.Findings), err)
				}
			case "prom":
				p := expfmt.NewTextParser(model.LegacyValidation)
				if _, err := p.TextToMetricFamilies(&b); err != nil {
					t.Fatalf("prom does not parse: %v\n%s", err, b.String())
				}
			}
		}
		var b bytes.Buffer
		if err := TimelineSVG(&b, r); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&b)
		for {
			_, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("svg does not parse: %v", err)
			}
		}
	})
}

// FuzzParseVersion: parseVersion never panics and only accepts what it can
// print back as a prefix-equivalent version.
func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"3.6.1", "3.6", "v3.7.2-ccs", "4.0.0+build", "", "3", "a.b.c", "1.2.3.4", "-1.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseVersion(s)
		if !ok {
			return
		}
		if v.major < 0 || v.minor < 0 || v.patch < 0 {
			t.Fatalf("%q parsed to negative %v", s, v)
		}
		for _, k := range KnownIssues {
			if st := k.Status(s); st == StatusUnknown {
				t.Fatalf("%q parses but %s cannot judge it", s, k.ID)
			}
		}
		if strings.Count(strings.TrimPrefix(strings.TrimSpace(s), "v"), ".") < 1 {
			t.Fatalf("%q accepted with no minor version", s)
		}
	})
}
