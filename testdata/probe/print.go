package main

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

func codes(m map[int]int) string {
	var ks []int
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%d:%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}

func printEvidence(rep *evidenceReport, verbose bool) {
	fmt.Printf("## 1. Mutated evidence (%d runs, %s)\n\n", len(rep.runs), rep.elapsed.Round(time.Second))
	for _, t := range targets() {
		b := rep.baselines[t.name]
		fmt.Printf("- unmutated %s: verdict %s, %d loss findings\n", t.name, b.verdict, len(b.losses()))
	}
	fmt.Println()
	table := func(title string, rows []*evidenceRow) {
		fmt.Printf("| %s | tried | exit codes | panic | hang | wrote | confident, same | confident, other | said incomplete | wrong verdict | misleading cause |\n", title)
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
		for _, r := range rows {
			fmt.Printf("| %s | %d | %s | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.name, r.tried, codes(r.codes), r.panics, r.hangs, r.wrote,
				r.confidentSame, r.confidentDiff, r.qualified, r.wrong, r.misleading)
		}
		fmt.Println()
	}
	table("target", rep.rows(func(v verdictOf) string { return v.m.target.name }))
	table("damaged bundles (strict: every run must name the damage)", rep.rows(func(v verdictOf) string {
		if !v.m.strict {
			return ""
		}
		return v.m.target.name
	}))
	table("oracle class / mutation", rep.rows(func(v verdictOf) string {
		f := v.m.file
		if strings.HasSuffix(f, ".log") {
			f = ".log"
		} else if v.m.class != classSpec && f != "manifest.json" {
			f = "other file"
		}
		return v.m.class + " / " + f + " " + v.m.kind
	}))
	shown := 0
	for _, v := range rep.runs {
		bad := v.setupErr != nil || v.res.panicked || v.res.hang || len(v.wrote) > 0 || v.wrong || len(v.misleading) > 0
		judgement := !bad && v.confident && !v.same && v.m.class != classSpec
		if !bad && !(verbose && judgement) {
			continue
		}
		if shown++; shown > 60 && !verbose {
			continue
		}
		what := "judge"
		switch {
		case v.setupErr != nil:
			what = "setup error " + v.setupErr.Error()
		case v.res.panicked:
			what = "PANIC"
		case v.res.hang:
			what = fmt.Sprintf("HANG (SIGTERM obeyed: %v)", v.res.termOK)
		case len(v.wrote) > 0:
			what = "WROTE " + strings.Join(v.wrote, ", ")
		case v.wrong:
			what = "WRONG VERDICT"
		case len(v.misleading) > 0:
			what = "MISLEADING " + strings.Join(v.misleading, "; ")
		}
		fmt.Printf("- [%s #%d] %s %s: %s → exit %d, verdict %s, losses %d, missing %d; %s; stderr %s\n", v.m.target.name, v.m.seq, v.m.file, v.m.desc,
			what, v.res.code, v.out.verdict, len(v.out.losses()), v.out.missing, lossCauses(v.out), trim(v.res.stderr, 200))
	}
	if shown > 60 && !verbose {
		fmt.Printf("- … %d more (run with -v)\n", shown-60)
	}
	fmt.Println()
}

func lossCauses(o outcome) string {
	m := map[string]int{}
	for _, f := range o.findings {
		if f.Severity == "loss" || f.Severity == "anomaly" {
			m[f.Severity+" "+f.Cause]++
		}
	}
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(parts)
	return "[" + strings.Join(parts, ", ") + "]"
}

// summary is the closing table.
type summary struct {
	inputs, handled, panics, hangs, wroteRuns, wrong, misleading int
	damagedRuns, damagedPanics, damagedClean                     int
	writeRequests, liveRuns, liveWrong                           int
	secretRuns, leaks                                            int
	race                                                         []raceResult
}

func (s *summary) addEvidence(rep *evidenceReport) {
	for _, v := range rep.runs {
		s.inputs++
		if v.m.strict {
			s.damagedRuns++
			if v.res.panicked {
				s.damagedPanics++
			}
			if v.out.verdict == "clean" {
				s.damagedClean++
			}
		}
		if v.setupErr != nil {
			continue
		}
		bad := v.res.panicked || v.res.hang || len(v.wrote) > 0 || v.wrong || len(v.misleading) > 0
		if v.res.panicked {
			s.panics++
		}
		if v.res.hang {
			s.hangs++
		}
		if len(v.wrote) > 0 {
			s.wroteRuns++
		}
		if v.wrong {
			s.wrong++
		}
		if len(v.misleading) > 0 {
			s.misleading++
		}
		if !bad {
			s.handled++
		}
	}
}

func (s *summary) print(d time.Duration) {
	fmt.Printf("## Figures (whole probe: %s)\n\n", d.Round(time.Second))
	fmt.Println("| figure | value |")
	fmt.Println("|---|---|")
	fmt.Printf("| bad inputs tried (mutations + hand-made corpus) | %d |\n", s.inputs)
	fmt.Printf("| handled (no panic, hang, write, wrong verdict or misleading cause) | %d |\n", s.handled)
	fmt.Printf("| panics | %d |\n", s.panics)
	fmt.Printf("| hangs | %d |\n", s.hangs)
	fmt.Printf("| runs that changed their inputs | %d |\n", s.wroteRuns)
	fmt.Printf("| confident wrong verdicts on broken evidence | %d |\n", s.wrong)
	fmt.Printf("| runs with a misleading cause | %d |\n", s.misleading)
	fmt.Printf("| damaged-bundle runs / panics / clean | %d / %d / %d |\n", s.damagedRuns, s.damagedPanics, s.damagedClean)
	fmt.Printf("| live fault runs / confident wrong verdicts | %d / %d |\n", s.liveRuns, s.liveWrong)
	fmt.Printf("| write requests received by the brokers | %d |\n", s.writeRequests)
	fmt.Printf("| secret runs / secrets leaked | %d / %d |\n", s.secretRuns, s.leaks)
	for _, r := range s.race {
		fmt.Printf("| go test -race %s | %s |\n", r.pkg, r.status)
	}
	fmt.Println()
}
