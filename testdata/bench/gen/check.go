package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/report"
)

// The harness's helpers, so that run.sh needs no JSON tool:
//
//	gen check REPORT.json [REPORT.json…]   every report says clean, all name the same findings
//	gen records MANIFEST.json              the records a capture holds

func readReport(path string) (*audit.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := report.ReadJSON(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// names lists the report's findings, one line each, sorted.
func names(r *audit.Report) []string {
	out := make([]string, 0, len(r.Findings))
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s/%s %s %s/%d@%d count=%d key=%s", f.Stage, f.Cause, f.Severity, f.Topic, f.Partition, f.Offset, f.Count, f.Key))
	}
	sort.Strings(out)
	return out
}

// check prints each report's verdict and findings summary; it fails when a
// report is not clean or when the reports name different findings.
func check(paths []string) error {
	var (
		first []string
		bad   []string
	)
	for i, p := range paths {
		r, err := readReport(p)
		if err != nil {
			return err
		}
		causes := make([]string, 0, len(r.Summary.ByCause))
		for c, n := range r.Summary.ByCause {
			causes = append(causes, fmt.Sprintf("%s=%d", c, n))
		}
		sort.Strings(causes)
		fmt.Printf("%s: verdict %s, %d findings %s, records %v\n", p, r.Summary.Verdict, len(r.Findings), strings.Join(causes, " "), r.Summary.Records)
		if r.Summary.Verdict != "clean" {
			bad = append(bad, fmt.Sprintf("%s says %s", p, r.Summary.Verdict))
			for j, f := range r.Findings {
				if j == 20 {
					fmt.Printf("  … %d more\n", len(r.Findings)-j)
					break
				}
				fmt.Printf("  %s/%s %s %s/%d@%d key=%s: %s\n", f.Stage, f.Cause, f.Severity, f.Topic, f.Partition, f.Offset, f.Key, f.Detail)
			}
		}
		got := names(r)
		if i == 0 {
			first = got
			continue
		}
		if d := diffNames(first, got); d != "" {
			bad = append(bad, fmt.Sprintf("%s and %s name different findings:\n%s", paths[0], p, d))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s", strings.Join(bad, "\n"))
	}
	return nil
}

func diffNames(a, b []string) string {
	in := func(s []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range s {
			m[x] = true
		}
		return m
	}
	ma, mb := in(a), in(b)
	var out strings.Builder
	for _, x := range a {
		if !mb[x] {
			fmt.Fprintf(&out, "  only in the first: %s\n", x)
		}
	}
	for _, x := range b {
		if !ma[x] {
			fmt.Fprintf(&out, "  only in the second: %s\n", x)
		}
	}
	return out.String()
}

// captureRecords sums the records of a capture's partitions.
func captureRecords(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var m struct {
		Complete   bool `json:"complete"`
		Partitions []struct {
			Records int64 `json:"records"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if !m.Complete {
		return 0, fmt.Errorf("%s: the capture is not complete", path)
	}
	var n int64
	for _, p := range m.Partitions {
		n += p.Records
	}
	return n, nil
}

// helper runs a helper subcommand; it reports whether args named one.
func helper(args []string) bool {
	if len(args) < 2 {
		return false
	}
	switch args[1] {
	case "check":
		if err := check(args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "gen check:", err)
			os.Exit(1)
		}
	case "records":
		if len(args) != 3 {
			fmt.Fprintln(os.Stderr, "usage: gen records MANIFEST.json")
			os.Exit(2)
		}
		n, err := captureRecords(args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen records:", err)
			os.Exit(1)
		}
		fmt.Println(n)
	default:
		return false
	}
	return true
}
