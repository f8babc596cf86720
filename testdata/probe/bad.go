package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// badRun is one run over the hand-made corpus testdata/bad.
type badRun struct {
	name    string
	args    []string
	control bool // the unbroken control: must be clean
	maybe   bool // clean is right too (see testdata/bad/README.md)
	res     result
	wrote   []string
	ok      bool
	why     string
}

// badRuns lists the runs over a copy of testdata/bad at dir.
func badRuns(dir string) ([]badRun, error) {
	p := func(rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }
	spec := p("spec/good/kaudit.yaml")
	list := func(sub string) []string {
		es, _ := os.ReadDir(p(sub))
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	var rs []badRun
	for _, d := range list("logdir") {
		ctl := d == "good" || d == "partition-negative"
		rs = append(rs,
			badRun{name: "logdir/" + d + " ledger", args: []string{"ledger", "--log-dir", p("logdir/" + d), "--topic", "events", "--format", "json"}, control: ctl},
			badRun{name: "logdir/" + d + " diff", args: []string{"diff", "--log-dir", p("logdir/" + d), "--app-id", "events", "--format", "json"}})
	}
	for _, d := range list("snapshot") {
		ctl := d == "base"
		rs = append(rs,
			badRun{name: "snapshot/" + d + " diff", args: []string{"diff", "--snapshot", p("snapshot/" + d), "--spec", spec, "--format", "json"}, control: ctl, maybe: d == "with-schemas"},
			badRun{name: "snapshot/" + d + " ledger", args: []string{"ledger", "--snapshot", p("snapshot/" + d), "--topic", "orders-v1", "--format", "json"}, control: ctl,
				maybe: slices.Contains([]string{"schema-garbage", "group-garbage", "with-schemas"}, d)})
	}
	for _, f := range list("topology") {
		rs = append(rs, badRun{name: "topology/" + f, args: []string{"topology", "--topology", p("topology/" + f)}, maybe: f == "cycle.txt"})
	}
	for _, d := range list("spec") {
		if strings.HasSuffix(d, ".txt") {
			continue
		}
		rs = append(rs, badRun{name: "spec/" + d, args: []string{"diff", "--snapshot", p("snapshot/base"), "--spec", p("spec/" + d + "/kaudit.yaml"), "--format", "json"}, control: d == "good"})
	}
	for _, d := range list("statedir") {
		rs = append(rs, badRun{name: "statedir/" + d, args: []string{"diff", "--snapshot", p("snapshot/base"), "--spec", spec, "--state-dir", p("statedir/" + d), "--format", "json"}, control: d == "good"})
	}
	for _, f := range list("reports") {
		// merged with the control, as a nightly merge would (other-app is
		// only wrong beside another app's report)
		rs = append(rs, badRun{name: "reports/" + f, args: []string{"merge", "--format", "json", p("reports/clean.json"), p("reports/" + f)}, control: f == "clean.json"})
	}
	for _, d := range list("schemas") {
		rs = append(rs, badRun{name: "schemas/" + d, args: []string{"diff", "--snapshot", p("snapshot/base"), "--spec", spec, "--value-serde", "avro", "--schemas", p("schemas/" + d), "--format", "json"}})
	}
	return rs, nil
}

// runBadCorpus runs kaudit over a copy of testdata/bad, one run at a time
// (each run's writes are checked over the whole copy and its working dir).
func runBadCorpus(root, bin, work string, _ int, timeout time.Duration) ([]badRun, error) {
	top := filepath.Join(work, "badrun")
	dir := filepath.Join(top, "bad")
	if err := copyTree(filepath.Join(root, "testdata", "bad"), dir); err != nil {
		return nil, err
	}
	cwd := filepath.Join(top, "cwd")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		return nil, err
	}
	rs, err := badRuns(dir)
	if err != nil {
		return nil, err
	}
	for i := range rs {
		r := &rs[i]
		before, err := treeState(top)
		if err != nil {
			return nil, err
		}
		r.res = runKaudit(bin, runOpts{dir: cwd, timeout: timeout}, r.args...)
		after, err := treeState(top)
		if err != nil {
			return nil, err
		}
		r.wrote = sameTree(before, after)
		r.ok, r.why = judgeBad(r)
	}
	return rs, nil
}

func judgeBad(r *badRun) (bool, string) {
	switch {
	case r.res.panicked:
		return false, "panic"
	case r.res.hang:
		return false, "hang"
	case len(r.wrote) > 0:
		return false, "wrote " + strings.Join(r.wrote, ", ")
	case r.control && r.res.code != 0:
		return false, fmt.Sprintf("control: exit %d", r.res.code)
	case r.control:
		return true, ""
	case r.res.code == 0 && !r.maybe:
		return false, "clean on bad input"
	case r.res.code == 2 || r.res.code == 4:
		if r.res.stdout != "" && r.res.code == 2 {
			return false, "usage error with output on stdout"
		}
		if !strings.HasPrefix(r.res.stderr, "kaudit: ") {
			return false, "error not one kaudit: line"
		}
	case r.res.code == 1 || r.res.code == 3:
		if o := parseOutcome(r.res.stdout, r.res.code); o.parsed && o.verdict == "clean" {
			return false, "verdict clean with a non-zero exit"
		}
	case r.res.code != 0:
		return false, fmt.Sprintf("exit %d", r.res.code)
	}
	return true, ""
}

func printBad(rs []badRun, verbose bool) {
	byGroup := map[string]*evidenceRow{}
	var groups []string
	for _, r := range rs {
		g := strings.SplitN(r.name, "/", 2)[0]
		row := byGroup[g]
		if row == nil {
			row = &evidenceRow{name: g, codes: map[int]int{}}
			byGroup[g] = row
			groups = append(groups, g)
		}
		row.tried++
		row.codes[r.res.code]++
		if r.res.panicked {
			row.panics++
		}
		if r.res.hang {
			row.hangs++
		}
		if len(r.wrote) > 0 {
			row.wrote++
		}
		if !r.ok {
			row.wrong++
		}
	}
	fmt.Printf("## 2. Hand-made bad inputs (testdata/bad, %d runs)\n\n", len(rs))
	fmt.Println("| corpus dir | runs | exit codes | panic | hang | wrote | not handled |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, g := range groups {
		r := byGroup[g]
		fmt.Printf("| %s | %d | %s | %d | %d | %d | %d |\n", g, r.tried, codes(r.codes), r.panics, r.hangs, r.wrote, r.wrong)
	}
	fmt.Println()
	for _, r := range rs {
		if !r.ok || verbose {
			fmt.Printf("- %s: exit %d, ok %v %s; stderr %s\n", r.name, r.res.code, r.ok, r.why, trim(r.res.stderr, 160))
		}
	}
	fmt.Println()
}

func (s *summary) addBad(rs []badRun) {
	for _, r := range rs {
		s.inputs++
		if r.ok {
			s.handled++
		}
		if r.res.panicked {
			s.panics++
		}
		if r.res.hang {
			s.hangs++
		}
		if len(r.wrote) > 0 {
			s.wroteRuns++
		}
	}
}
