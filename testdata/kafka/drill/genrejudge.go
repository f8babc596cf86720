package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	"github.com/kaudit/kaudit/testdata/kafka/fuzzapps"
)

// rejudgeGen judges again the generated apps whose results are under root (results/gen of a
// run), from what each run kept: its description, its ground truth and every kaudit report. The
// properties' judges may have changed since the run (genchecks.go); kaudit is not run again.
// What needs no report (the spec kaudit refused, the harness's own errors) is taken from the
// run's truth.json as it was. It writes root/summary-rejudged.json and prints the figures.
func rejudgeGen(root string) int {
	dirs, err := filepath.Glob(filepath.Join(root, "kaudit-gen-*"))
	if err != nil || len(dirs) == 0 {
		logf("no generated app under %s", root)
		return 2
	}
	var apps []*genApp
	for _, dir := range dirs {
		a, err := rejudgeApp(dir)
		if err != nil {
			logf("%s: %v", dir, err)
			continue
		}
		apps = append(apps, a)
	}
	sort.Slice(apps, func(i, j int) bool { return apps[i].d.Seed < apps[j].d.Seed })
	sum := genSummary(apps)
	if err := writeJSON(filepath.Join(root, "summary-rejudged.json"), sum); err != nil {
		logf("%v", err)
	}
	fmt.Print(sum.table())
	return 0
}

var duringName = regexp.MustCompile(`^kaudit-during-w(\d+)-(spec|app-id)\.json$`)

func rejudgeApp(dir string) (*genApp, error) {
	var d fuzzapps.Desc
	if err := readJSON(filepath.Join(dir, "desc.json"), &d); err != nil {
		return nil, err
	}
	var kept struct {
		Truth      genTruth    `json:"truth"`
		Violations []violation `json:"violations"`
		Soft       []violation `json:"soft"`
		Errors     []string    `json:"errors"`
	}
	if err := readJSON(filepath.Join(dir, "truth.json"), &kept); err != nil {
		return nil, err
	}
	a := &genApp{d: &d, spec: fuzzapps.GenerateSpec(&d), dir: dir, truth: kept.Truth, errs: kept.Errors, quiet: true}
	for _, v := range kept.Violations {
		if v.Property == propSpecRefused {
			a.viol = append(a.viol, v)
		}
	}
	for _, v := range kept.Soft {
		if v.Property == softDraft {
			a.soft = append(a.soft, v)
		}
	}
	// the audits while the app processed, wave by wave
	files, _ := os.ReadDir(filepath.Join(dir, "during"))
	type duringRep struct {
		wave int
		mode string
		file string
	}
	var ds []duringRep
	for _, f := range files {
		if m := duringName.FindStringSubmatch(f.Name()); m != nil {
			w, _ := strconv.Atoi(m[1])
			ds = append(ds, duringRep{w, m[2], filepath.Join(dir, "during", f.Name())})
		}
	}
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].wave != ds[j].wave {
			return ds[i].wave < ds[j].wave
		}
		return ds[i].mode > ds[j].mode // spec before app-id, as they ran
	})
	for _, x := range ds {
		var rep kauditReport
		if readJSON(x.file, &rep) != nil {
			continue
		}
		a.during = append(a.during, fmt.Sprintf("w%d %s %s", x.wave, x.mode, rep.Summary.Verdict))
		if ids := rep.lossIDs(); len(ids) > 0 {
			a.violate(propDuring, fmt.Sprintf("during-w%d-%s", x.wave, x.mode), "verdict %s while the app processes: %d loss/anomaly findings %v", rep.Summary.Verdict, len(ids), head(ids, 4))
		}
	}
	a.checkFlips()
	for _, phase := range []string{"final", "restarted"} {
		var audits []genAudit
		for _, source := range []string{"live", "capture", "logdir"} {
			for _, mode := range []string{modeSpec, modeAppID, modeDraft} {
				name := phase + "/" + source + "-" + mode
				b, err := os.ReadFile(filepath.Join(dir, phase, "kaudit-"+phase+"-"+source+"-"+mode+".json"))
				if err != nil {
					continue
				}
				g := genAudit{name: name, phase: phase, source: source, mode: mode, raw: b}
				if err := json.Unmarshal(b, &g.rep); err != nil {
					return nil, fmt.Errorf("%s: %w", name, err)
				}
				audits = append(audits, g)
			}
		}
		for _, g := range audits {
			if g.source != "logdir" {
				a.judge(g, audits)
			}
		}
		for _, mode := range []string{modeSpec, modeAppID, modeDraft} {
			l := findAudit(audits, "live", mode)
			for _, other := range []string{"capture", "logdir"} {
				if o := findAudit(audits, other, mode); l != nil && o != nil {
					if diff := essentialsDiff(l.rep, o.rep); diff != "" {
						a.violate(propSources, phase+" live/"+other+" "+mode, "%s", diff)
					}
				}
			}
		}
	}
	return a, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
