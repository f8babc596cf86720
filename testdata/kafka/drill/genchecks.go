package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kaudit/kaudit/testdata/kafka/fuzzapps"
)

// The properties every generated app is checked for (issue AB, and AJ's audits while it runs).
// A violation is kaudit's (its report contradicts what the harness knows); what keeps the
// harness from judging is an error of the harness, reported apart.
const (
	propCleanSpec     = "clean-spec"           // a loss or anomaly with the generated spec on a run that lost nothing
	propCleanAppID    = "clean-app-id"         // … with --app-id alone
	propCleanDraft    = "clean-draft"          // … with the spec kaudit init drafts
	propFaultMissed   = "fault-missed"         // an injected loss not found, or not with its cause
	propFaultExtra    = "fault-extra"          // a loss beside the injected ones
	propFaultInferred = "fault-inferred-extra" // --app-id alone or the draft finds a loss the generated spec does not
	propSources       = "sources-differ"       // live, capture and log dirs disagree
	propDuring        = "during"               // a loss or anomaly (or clean↔loss flip) while the app processes
	propSpecRefused   = "spec-refused"         // kaudit refuses the generated spec (exit 2)
	// soft: expectations short of a violation
	softIncomplete = "unexpected-incomplete" // the spec models everything, the verdict is incomplete
	softCleanTODO  = "clean-unmodelled"      // the spec leaves a part out, the verdict is clean
	softUnnamed    = "unnamed"               // incomplete without naming what the spec leaves out
	softDraft      = "draft-unloadable"      // kaudit init's draft does not load (a TODO it must answer)
)

// audit modes: which spec.
const (
	modeSpec  = "spec"
	modeAppID = "app-id"
	modeDraft = "draft"
)

// genAudit is one kaudit diff of an app.
type genAudit struct {
	name   string // e.g. final/live-spec
	phase  string
	source string // live, capture, logdir
	mode   string
	rep    kauditReport
	raw    []byte
	code   int
	err    error
}

// lossFault reports whether a's fault took records away (and was injected).
func (a *genApp) lossFault() bool {
	switch a.d.Fault {
	case fuzzapps.FaultSourceGap, fuzzapps.FaultRepartitionGap, fuzzapps.FaultDropped:
		return a.truth.Injected
	}
	return false
}

// runGenDiff runs kaudit diff for a: source args, the mode's spec, extra flags; the JSON report
// goes to dir/kaudit-<name>.json.
func (d *drill) runGenDiff(ctx context.Context, a *genApp, dir, name string, source []string, mode string, extra ...string) genAudit {
	out := filepath.Join(dir, "kaudit-"+strings.ReplaceAll(name, "/", "-")+".json")
	args := append([]string{"diff", "--app-id", a.d.AppID}, source...)
	switch mode {
	case modeSpec:
		args = append(args, "--spec", a.specPath)
	case modeDraft:
		args = append(args, "--spec", filepath.Join(dir, "draft.yaml"))
	case modeAppID:
		args = append(args, "--save-spec", filepath.Join(dir, "inferred-"+strings.ReplaceAll(name, "/", "-")+".yaml"))
	}
	args = append(append(args, extra...), "--format", "json", "--output", out)
	g := genAudit{name: name, mode: mode}
	code, stderr, err := d.runKaudit(ctx, dir, strings.ReplaceAll(name, "/", "-"), args...)
	g.code, g.err = code, err
	if err != nil {
		return g
	}
	if code == 2 {
		g.err = fmt.Errorf("exit 2: %s", lastLines(stderr, 3))
		return g
	}
	b, rerr := os.ReadFile(out)
	if rerr != nil {
		g.err = fmt.Errorf("exit %d without JSON: %s", code, lastLines(stderr, 3))
		return g
	}
	g.raw = b
	if err := json.Unmarshal(b, &g.rep); err != nil {
		g.err = err
		return g
	}
	if want := map[string]int{"clean": 0, "loss": 1, "anomaly": 1, "incomplete": 3}[g.rep.Summary.Verdict]; code != want {
		g.err = fmt.Errorf("exit %d for verdict %s", code, g.rep.Summary.Verdict)
	}
	_ = os.Remove(filepath.Join(dir, "kaudit-"+strings.ReplaceAll(name, "/", "-")+".stderr"))
	return g
}

func (a *genApp) liveArgs(d *drill) []string {
	return []string{"--bootstrap-server", d.bootstrap, "--topology", filepath.Join(a.dir, "describe.txt"), "--schema-registry-url", d.regURL}
}

// duringAudits audits every app live while it processes the wave just produced, with its spec
// and with --app-id alone (issue AJ).
func (d *drill) duringAudits(ctx context.Context, apps []*genApp, wave int) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, a := range apps {
		if a.d.Fault == fuzzapps.FaultDropped || a.run == nil {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			dir := filepath.Join(a.dir, "during")
			_ = os.MkdirAll(dir, 0o755)
			for _, mode := range []string{modeSpec, modeAppID} {
				name := fmt.Sprintf("during-w%d-%s", wave, mode)
				g := d.runGenDiff(ctx, a, dir, name, a.liveArgs(d), mode)
				if g.err != nil {
					if mode == modeSpec && g.code == 2 {
						a.violate(propSpecRefused, name, "%v", g.err)
					} else {
						a.fail("%s: %v", name, g.err)
					}
					continue
				}
				a.mu.Lock()
				a.during = append(a.during, fmt.Sprintf("w%d %s %s", wave, mode, g.rep.Summary.Verdict))
				a.mu.Unlock()
				if ids := g.rep.lossIDs(); len(ids) > 0 {
					a.violate(propDuring, name, "verdict %s while the app processes: %d loss/anomaly findings %v", g.rep.Summary.Verdict, len(ids), head(ids, 4))
				}
			}
		})
	}
	wg.Wait()
	for _, a := range apps {
		a.checkFlips()
	}
}

// checkFlips fails a's during audits where one mode's consecutive verdicts go between clean and
// loss.
func (a *genApp) checkFlips() {
	last := map[string]string{}
	for _, s := range a.during {
		f := strings.Fields(s)
		mode, v := f[1], f[2]
		if p := last[mode]; p == "clean" && v == "loss" || p == "loss" && v == "clean" {
			a.violate(propDuring, "during "+mode, "verdicts flip %s → %s: %v", p, v, a.during)
		}
		last[mode] = v
	}
}

// auditGenApps audits each app of apps in phase: live (spec, --app-id alone, the draft), its
// capture (the same three), the draft being kaudit init's on the capture; then judges them.
func (d *drill) auditGenApps(ctx context.Context, apps []*genApp, phase string) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, a := range apps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d.auditGenApp(ctx, a, phase)
		})
	}
	wg.Wait()
}

// logArgs are the app's and the brokers' logs (after a restart: what on-call has).
func (a *genApp) logArgs(d *drill, phase string) []string {
	if phase != "restarted" {
		return nil
	}
	var out []string
	for i := 1; i <= a.runs; i++ {
		out = append(out, "--app-log", filepath.Join(a.dir, fmt.Sprintf("app-%d.log", i)))
	}
	brokers := false
	for id := 1; id <= 100; id++ {
		f := filepath.Join(d.o.work, "cluster", "logs", fmt.Sprintf("n%d.log", id))
		if _, err := os.Stat(f); err == nil {
			out = append(out, "--broker-log", f)
			brokers = true
		}
	}
	if brokers {
		// the brokers log their local time without a zone and run in UTC
		// (cluster.sh): said as an operator would, or each time is ±14 h
		// and dates no deletion (brokerLogArgs)
		out = append(out, "--log-timezone", "UTC")
	}
	return out
}

func (d *drill) auditGenApp(ctx context.Context, a *genApp, phase string) {
	dir := filepath.Join(a.dir, phase)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		a.fail("%v", err)
		return
	}
	if phase == "final" {
		a.droppedTruth()
		if err := a.checkSwallowed(); err != nil {
			a.fail("%v", err)
		}
	}
	logs := a.logArgs(d, phase)
	s, err := a.observe(ctx, d)
	if err != nil {
		a.fail("observe: %v", err)
		return
	}
	var audits []genAudit
	add := func(source string, g genAudit) genAudit {
		g.phase, g.source = phase, source
		audits = append(audits, g)
		return g
	}
	live := a.liveArgs(d)
	add("live", d.runGenDiff(ctx, a, dir, phase+"/live-spec", live, modeSpec, logs...))
	add("live", d.runGenDiff(ctx, a, dir, phase+"/live-app-id", live, modeAppID, logs...))
	// the capture, every topic of the app, with the registry's schemas
	capture := filepath.Join(dir, "capture")
	args := []string{"capture", "--app-id", a.d.AppID, "--bootstrap-server", d.bootstrap, "--out", capture,
		"--topology", filepath.Join(a.dir, "describe.txt"), "--schema-registry-url", d.regURL}
	for _, t := range slices.Concat(a.topics(), s.internal) {
		args = append(args, "--topic", t)
	}
	if code, stderr, err := d.runKaudit(ctx, dir, "capture", args...); err != nil || code != 0 {
		a.fail("%s: kaudit capture exited %d (%v): %s", phase, code, err, lastLines(stderr, 3))
		return
	}
	var draft bytes.Buffer
	code, stderr, err := d.runKauditTo(ctx, dir, "init", &draft, "init", "--app-id", a.d.AppID, "--snapshot", capture)
	draftOK := err == nil && code == 0
	if draftOK {
		draftOK = os.WriteFile(filepath.Join(dir, "draft.yaml"), draft.Bytes(), 0o644) == nil
	} else {
		a.fail("%s: kaudit init exited %d (%v): %s", phase, code, err, lastLines(stderr, 3))
	}
	if draftOK {
		g := add("live", d.runGenDiff(ctx, a, dir, phase+"/live-draft", live, modeDraft, logs...))
		if g.code == 2 {
			a.softly(softDraft, g.name, "%v", g.err)
			draftOK = false
			audits = audits[:len(audits)-1]
		}
	}
	snap := []string{"--snapshot", capture}
	add("capture", d.runGenDiff(ctx, a, dir, phase+"/capture-spec", snap, modeSpec, logs...))
	add("capture", d.runGenDiff(ctx, a, dir, phase+"/capture-app-id", snap, modeAppID, logs...))
	if draftOK {
		add("capture", d.runGenDiff(ctx, a, dir, phase+"/capture-draft", snap, modeDraft, logs...))
	}
	for _, g := range audits {
		if g.err != nil {
			if g.mode == modeSpec && g.code == 2 {
				a.violate(propSpecRefused, g.name, "%v", g.err)
			} else {
				a.fail("%s: %v", g.name, g.err)
			}
			continue
		}
		a.judge(g, audits)
		if g.source == "live" {
			a.lives = append(a.lives, &liveDiff{report: g.raw, tag: g.name, dir: dir, app: a.d.AppID, extra: logs, spec: g.mode})
		}
	}
	// the capture says what the live audit said
	for _, mode := range []string{modeSpec, modeAppID, modeDraft} {
		l, c := findAudit(audits, "live", mode), findAudit(audits, "capture", mode)
		if l != nil && c != nil && l.err == nil && c.err == nil {
			if diff := essentialsDiff(l.rep, c.rep); diff != "" {
				a.violate(propSources, phase+" live/capture "+mode, "%s", diff)
			}
		}
	}
}

func findAudit(l []genAudit, source, mode string) *genAudit {
	for i := range l {
		if l[i].source == source && l[i].mode == mode {
			return &l[i]
		}
	}
	return nil
}

// essentials are the parts of a report two sources must agree on: the verdict, every finding
// (but its detail) and the missing evidence.
func essentials(r kauditReport) []string {
	out := []string{"verdict " + r.Summary.Verdict}
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s/%s/%s %s/%d@%d+%d key=%s", f.Severity, f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Count, f.keyString()))
	}
	for _, m := range r.Summary.Missing {
		// a missing-evidence line may say when the audit read a partition, cite a line of the
		// spec inferred for the run (whose header names the source), or say in its source's
		// words that a schema is unknown (the registry's answer, the schemas dir's): not a
		// difference
		m = readTime.ReplaceAllString(m, "<time>")
		m = unknownSchema.ReplaceAllString(m, "unknown schema)")
		out = append(out, "missing "+specLine.ReplaceAllString(m, "line <n>"))
	}
	slices.Sort(out)
	return out
}

var (
	readTime      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	specLine      = regexp.MustCompile(`\bline \d+`)
	unknownSchema = regexp.MustCompile(`unknown schema: [^)]*\)`)
)

// essentialsDiff says how a and b differ ("": they agree).
func essentialsDiff(a, b kauditReport) string {
	ea, eb := essentials(a), essentials(b)
	var only []string
	for _, x := range ea {
		if !slices.Contains(eb, x) {
			only = append(only, "first only: "+x)
		}
	}
	for _, x := range eb {
		if !slices.Contains(ea, x) {
			only = append(only, "second only: "+x)
		}
	}
	if len(only) == 0 {
		return ""
	}
	return fmt.Sprintf("%d differences: %v", len(only), head(only, 4))
}

// checkSwallowed fails unless the app's logs show each dropped record swallowed.
func (a *genApp) checkSwallowed() error {
	if a.d.Fault != fuzzapps.FaultDropped {
		return nil
	}
	var all strings.Builder
	for i := 1; i <= a.runs; i++ {
		b, err := os.ReadFile(filepath.Join(a.dir, fmt.Sprintf("app-%d.log", i)))
		if err != nil {
			return err
		}
		all.Write(b)
	}
	for _, id := range a.d.DropIDs {
		if !strings.Contains(all.String(), "swallowed record id="+id) {
			return fmt.Errorf("the app's log does not show record %s swallowed", id)
		}
	}
	return nil
}

// judge checks one audit against what the harness knows.
func (a *genApp) judge(g genAudit, all []genAudit) {
	rep := g.rep
	if !a.lossFault() {
		if ids := rep.lossIDs(); len(ids) > 0 {
			prop := map[string]string{modeSpec: propCleanSpec, modeAppID: propCleanAppID, modeDraft: propCleanDraft}[g.mode]
			a.violate(prop, g.name, "verdict %s on a run that lost nothing: %d loss/anomaly findings %v", rep.Summary.Verdict, len(ids), head(ids, 4))
			return
		}
		if g.mode != modeSpec {
			return
		}
		switch exp := a.spec.Expect(); {
		case rep.Summary.Verdict == "incomplete" && exp == "clean":
			a.softly(softIncomplete, g.name, "missing: %v", head(rep.Summary.Missing, 3))
		case rep.Summary.Verdict == "clean" && exp == "incomplete":
			a.softly(softCleanTODO, g.name, "the spec leaves out %v", a.spec.Unmodelled)
		case rep.Summary.Verdict == "incomplete" && exp == "incomplete" && !a.namesUnmodelled(rep):
			a.softly(softUnnamed, g.name, "missing %v does not name %v", head(rep.Summary.Missing, 3), a.spec.Unmodelled)
		}
		return
	}
	if g.mode != modeSpec {
		spec := findAudit(all, g.source, modeSpec)
		if spec == nil || spec.err != nil {
			return
		}
		var extra []string
		purgeNamed := len(spec.rep.byCause("purged-before-commit"))+len(spec.rep.byCause("unapplied")) > 0
		for _, f := range rep.Findings {
			if p := a.truth.Purge; p != nil && purgeNamed && f.Cause == "purged-before-commit" && f.Topic == p.Topic && f.Partition == p.Partition &&
				f.Offset < p.To && f.Offset+max(f.Count, 1) > p.From {
				continue // the injected purge's range, which the spec names by its records
			}
			if (f.Severity == "loss" || f.Severity == "anomaly") && !coveredBy(f, spec.rep) {
				extra = append(extra, f.String())
			}
		}
		if len(extra) > 0 {
			a.violate(propFaultInferred, g.name, "%d loss findings the generated spec does not give %v", len(extra), head(extra, 4))
		}
		return
	}
	a.judgeFault(g)
}

// coveredBy reports whether a loss finding f is one of rep's losses: an offset of its range
// in the range of one of them, or its key.
func coveredBy(f finding, rep kauditReport) bool {
	for _, g := range rep.Findings {
		if g.Severity != f.Severity {
			continue
		}
		if k := f.keyString(); k != "" && k == g.keyString() {
			return true
		}
		if g.Topic == f.Topic && g.Partition == f.Partition && g.Offset < f.Offset+max(f.Count, 1) && f.Offset < g.Offset+max(g.Count, 1) {
			return true
		}
	}
	return false
}

// namesKey reports whether finding f names one of keys: its key, or a window key's inner key
// ({"key": K, "start": S, "end": E}).
func namesKey(f finding, keys []string) bool {
	if slices.Contains(keys, f.keyString()) {
		return true
	}
	var w struct {
		Key any `json:"key"`
	}
	if json.Unmarshal(f.Key, &w) == nil && w.Key != nil {
		return slices.Contains(keys, fmt.Sprint(w.Key))
	}
	return false
}

// namesUnmodelled reports whether the missing evidence names a part the spec leaves out.
func (a *genApp) namesUnmodelled(rep kauditReport) bool {
	for _, m := range rep.Summary.Missing {
		for _, u := range a.spec.Unmodelled {
			for _, n := range u.Names {
				if strings.Contains(m, n) {
					return true
				}
			}
		}
	}
	return false
}

// judgeFault checks an audit with the generated spec of a run that lost records.
func (a *genApp) judgeFault(g genAudit) {
	rep, t := g.rep, a.truth
	if rep.Summary.Verdict != "loss" {
		a.violate(propFaultMissed, g.name, "verdict %s, want loss (%s)", rep.Summary.Verdict, rep.summary())
		return
	}
	var allowed []string
	switch a.d.Fault {
	case fuzzapps.FaultSourceGap:
		allowed = []string{"retention-gap"}
		if err := expectRange("retention-gap", rep.byCause("retention-gap"), t.Gap.Topic, t.Gap.Partition, t.Gap.From, t.Gap.To); err != nil {
			a.violate(propFaultMissed, g.name, "%v", err)
		}
	case fuzzapps.FaultRepartitionGap:
		allowed = []string{"purged-before-commit", "unapplied"}
		pbc := rep.byCause("purged-before-commit")
		if g.phase == "final" && len(pbc) == 0 {
			a.violate(propFaultMissed, g.name, "no purged-before-commit finding for the purge of %s/%d [%d, %d)", t.Purge.Topic, t.Purge.Partition, t.Purge.From, t.Purge.To)
		} else if g.phase != "final" && len(pbc)+len(rep.byCause("unapplied")) == 0 {
			a.violate(propFaultMissed, g.name, "no purged-before-commit or unapplied finding for the purge of %s/%d [%d, %d)", t.Purge.Topic, t.Purge.Partition, t.Purge.From, t.Purge.To)
		}
		for _, f := range pbc {
			if !(f.Topic == t.Purge.Topic && f.Partition == t.Purge.Partition && f.Offset < t.Purge.To && f.Offset+max(f.Count, 1) > t.Purge.From) && !namesKey(f, t.Purge.Keys) {
				a.violate(propFaultExtra, g.name, "purged-before-commit outside the purge: %s", f)
			}
		}
		for _, f := range rep.byCause("unapplied") {
			if !namesKey(f, t.Purge.Keys) {
				a.violate(propFaultExtra, g.name, "unapplied finding of a key the purge of %s/%d [%d, %d) did not hold: %s", t.Purge.Topic, t.Purge.Partition, t.Purge.From, t.Purge.To, f)
			}
		}
	case fuzzapps.FaultDropped:
		allowed = []string{"dropped", "unapplied", "join-missing"}
		covered := map[string]bool{}
		for _, f := range rep.loss() {
			hit := false
			for o := f.Offset; o < f.Offset+max(f.Count, 1); o++ {
				id := recordID(f.Topic, f.Partition, o)
				if slices.Contains(t.Dropped, id) {
					covered[id], hit = true, true
				}
			}
			if !hit && !namesKey(f, t.DropKeys) && slices.Contains(allowed, f.Cause) {
				a.violate(propFaultExtra, g.name, "a loss of no swallowed record: %s", f)
			}
		}
		for _, id := range t.Dropped {
			if !covered[id] {
				a.violate(propFaultMissed, g.name, "swallowed record %s not named (of %v)", id, t.Dropped)
			}
		}
	}
	var bad []string
	for _, f := range rep.loss() {
		if !slices.Contains(allowed, f.Cause) {
			bad = append(bad, f.String())
		}
	}
	if len(bad) > 0 {
		a.violate(propFaultExtra, g.name, "%d loss findings of another cause (allowed %v): %v", len(bad), allowed, head(bad, 4))
	}
	for _, f := range rep.Findings {
		if f.Severity == "anomaly" {
			a.violate(propFaultExtra, g.name, "an anomaly: %s", f)
			break
		}
	}
}

// genLogDirs stops the cluster, audits every live audit of apps in phase again from the
// brokers' log dirs, compares, and starts the cluster again on its data.
func (d *drill) genLogDirs(ctx context.Context, apps []*genApp, phase string) error {
	if !d.o.logDirs {
		return nil
	}
	schemas := filepath.Join(d.o.work, "results", "gen", "schemas")
	if err := exportSchemas(ctx, d.regURL, schemas); err != nil && !strings.Contains(err.Error(), "holds none") {
		return err
	}
	dirs, err := d.dataDirs()
	if err != nil {
		return err
	}
	d.stopCluster(ctx)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, a := range apps {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			for _, l := range a.lives {
				if l.done || !strings.HasPrefix(l.tag, phase+"/") {
					continue
				}
				l.done = true
				src := []string{"--topology", filepath.Join(a.dir, "describe.txt"), "--schemas", schemas}
				for _, dd := range dirs {
					src = append(src, "--log-dir", dd)
				}
				name := strings.Replace(l.tag, "/live-", "/logdir-", 1)
				g := d.runGenDiff(ctx, a, l.dir, name, src, l.spec, l.extra...)
				if g.err != nil {
					a.fail("%s: %v", name, g.err)
					continue
				}
				var live kauditReport
				_ = json.Unmarshal(l.report, &live)
				if diff := essentialsDiff(live, g.rep); diff != "" {
					a.violate(propSources, phase+" live/logdir "+l.spec, "%s", diff)
				}
			}
		})
	}
	wg.Wait()
	return d.restartCluster(ctx)
}

// ---- figures ----

// genFigures are the figures of a run of generated apps (docs/real-kafka.md tables them).
type genFigures struct {
	Apps       int            `json:"apps"`
	Passed     int            `json:"passed"`
	Failed     int            `json:"failed"`
	Errors     int            `json:"harness_errors"`
	Families   map[string]int `json:"families"`
	Settings   map[string]int `json:"settings"`
	Violations map[string]int `json:"violations"` // apps violating each property
	Soft       map[string]int `json:"soft"`
	Failing    []genFailure   `json:"failing"`
}

type genFailure struct {
	App        string      `json:"app"`
	Seed       uint64      `json:"seed"`
	Rerun      string      `json:"rerun"`
	Fault      string      `json:"fault"`
	Families   []string    `json:"families"`
	Violations []violation `json:"violations"`
	Errors     []string    `json:"errors,omitempty"`
}

func genSummary(apps []*genApp) genFigures {
	f := genFigures{Families: map[string]int{}, Settings: map[string]int{}, Violations: map[string]int{}, Soft: map[string]int{}}
	for _, a := range apps {
		f.Apps++
		for _, x := range a.d.Families() {
			f.Families[x]++
		}
		for _, x := range a.d.Settings() {
			f.Settings[x]++
		}
		props := map[string]bool{}
		for _, v := range a.viol {
			props[v.Property] = true
		}
		for p := range props {
			f.Violations[p]++
		}
		soft := map[string]bool{}
		for _, v := range a.soft {
			soft[v.Property] = true
		}
		for p := range soft {
			f.Soft[p]++
		}
		switch {
		case len(a.errs) > 0:
			f.Errors++
		case len(a.viol) > 0:
			f.Failed++
		default:
			f.Passed++
		}
		if len(a.viol) > 0 || len(a.errs) > 0 {
			f.Failing = append(f.Failing, genFailure{App: a.d.AppID, Seed: a.d.Seed, Rerun: a.rerun, Fault: a.d.Fault,
				Families: a.d.Families(), Violations: a.viol, Errors: a.errs})
		}
	}
	return f
}

// table prints the figures as Markdown.
func (f genFigures) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d apps: %d pass, %d fail (a kaudit violation), %d harness errors\n\n", f.Apps, f.Passed, f.Failed, f.Errors)
	section := func(title string, m map[string]int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "| %s | apps |\n|---|---|\n", title)
		for _, k := range keys {
			fmt.Fprintf(&b, "| %s | %d |\n", k, m[k])
		}
		b.WriteString("\n")
	}
	section("operator family", f.Families)
	section("setting", f.Settings)
	section("property violated", f.Violations)
	section("soft expectation missed", f.Soft)
	return b.String()
}

// ---- shrinking ----

// shrinkApp makes a failing app smaller while its first violation's property still fails:
// the candidates of fuzzapps.Shrink run in batches (the batch's size at once, most reducing
// first); the first that fails the same way is kept and shrunk again, until none does or 24
// runs are spent. The smallest is written beside the app (shrunk.json, with its spec) with the
// command that reruns it.
func (d *drill) shrinkApp(ctx context.Context, root string, a *genApp, g genOptions) {
	prop := a.viol[0].Property
	cur := a.d
	runs := 0
	par := max(g.parallel, 1)
	logf("shrink %s (%s)", a.d.AppID, prop)
	for progress := true; progress && runs < 24 && ctx.Err() == nil; {
		progress = false
		cands := fuzzapps.Shrink(cur)
		for i := 0; i < len(cands) && runs < 24 && !progress && ctx.Err() == nil; i += par {
			batch := cands[i:min(i+par, len(cands))]
			for j, c := range batch {
				c.AppID = fmt.Sprintf("%s-s%d", a.d.AppID, runs+j+1)
			}
			runs += len(batch)
			apps, err := d.runGenBatch(ctx, filepath.Join(root, "shrink"), batch, genOptions{during: g.during, descs: "shrink"})
			if err != nil {
				logf("shrink %s: %v", a.d.AppID, err)
				_ = d.freshCluster(ctx, 1)
				continue
			}
			for _, x := range apps {
				if slices.ContainsFunc(x.viol, func(v violation) bool { return v.Property == prop }) {
					logf("shrink %s: %s (%d nodes, %d waves of %d) still fails %s", a.d.AppID, x.d.AppID, len(x.d.Nodes), x.d.Input.Waves, x.d.Input.PerWave, prop)
					cur, progress = x.d, true
					break
				}
			}
		}
	}
	path := filepath.Join(a.dir, "shrunk.json")
	if err := writeJSON(path, cur); err != nil {
		logf("%v", err)
		return
	}
	_ = os.WriteFile(filepath.Join(a.dir, "shrunk.kaudit.yaml"), []byte(fuzzapps.GenerateSpec(cur).YAML), 0o644)
	a.rerun += "; shrunk: .ci/fuzz-apps -desc " + path
	logf("shrink %s: done after %d runs: %d nodes (from %d), rerun: .ci/fuzz-apps -desc %s", a.d.AppID, runs, len(cur.Nodes), len(a.d.Nodes), path)
}
