package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/testdata/kafka/fuzzapps"
)

// Issue AB on the real cluster: generated apps (testdata/kafka/fuzzapps), one jar
// (kaudit.drill.GenApp) interpreting each description, run in batches on one single-broker
// cluster, each with its fault, each audited with its generated spec, with --app-id alone and
// with the spec kaudit init drafts, live, from a capture and from the brokers' log dirs, and
// (issue AJ) while it processes. genchecks.go holds the properties; .ci/fuzz-apps runs it.

// genOptions are the -gen-* flags.
type genOptions struct {
	n        int
	seed     uint64
	seeds    string // comma-separated seeds (over -gen-seed/-gen-apps)
	descs    string // comma-separated description files
	parallel int    // apps per batch
	during   bool   // audits while the apps process (issue AJ)
	shrink   bool   // shrink each failing app
	summary  string // where the figures go (JSON); default results/gen/summary.json
	rejudge  string // judge again the results under this dir (no Kafka)
}

func (g genOptions) active() bool {
	return g.n > 0 || g.seeds != "" || g.descs != "" || g.rejudge != ""
}

// genApp is one generated app in a batch.
type genApp struct {
	d        *fuzzapps.Desc
	spec     fuzzapps.Spec
	dir      string
	stateDir string
	specPath string
	descPath string
	waves    [][]*fuzzapps.Record
	recs     []*genRec // produced, with their partitions and offsets
	run      *appRun
	runs     int
	base     int64 // the run's base event time (ms)
	srcs     []string
	globals  []string
	outs     []string
	truth    genTruth
	during   []string // the verdicts of the audits during processing, in order
	viol     []violation
	soft     []violation
	errs     []string // what kept the harness from judging (not kaudit's)
	lives    []*liveDiff
	mu       sync.Mutex
	rerun    string
	took     time.Duration
	quiet    bool // judged again from a run's results (genrejudge.go): no log
}

// genRec is a produced record.
type genRec struct {
	*fuzzapps.Record
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	TS        int64 `json:"ts"`
}

// genTruth is what the harness did to the app and what kaudit must find.
type genTruth struct {
	Fault    string   `json:"fault"`
	Kills    int      `json:"kills,omitempty"`
	Landed   int      `json:"landed,omitempty"`
	Restarts int      `json:"restarts,omitempty"`
	Gap      *fault   `json:"gap,omitempty"`
	Purge    *fault   `json:"purge,omitempty"`
	Dropped  []string `json:"dropped,omitempty"` // topic/partition@offset of the swallowed records
	// DropKeys are the keys a finding of a swallowed record may carry (its source key, its keys
	// at the grouping).
	DropKeys []string `json:"drop_keys,omitempty"`
	Injected bool     `json:"injected"`
	Note     string   `json:"note,omitempty"`
}

// violation is one property kaudit broke (or, soft, a weaker expectation it missed).
type violation struct {
	Property string `json:"property"`
	Audit    string `json:"audit"`
	Detail   string `json:"detail"`
}

func (a *genApp) violate(prop, audit, format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v := violation{prop, audit, fmt.Sprintf(format, args...)}
	a.viol = append(a.viol, v)
	if !a.quiet {
		logf("app %s: VIOLATION %s (%s): %s", a.d.AppID, prop, audit, v.Detail)
	}
}

func (a *genApp) softly(prop, audit, format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.soft = append(a.soft, violation{prop, audit, fmt.Sprintf(format, args...)})
}

func (a *genApp) fail(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	a.errs = append(a.errs, msg)
	logf("app %s: harness: %s", a.d.AppID, msg)
}

// runGen is the drill's -gen-* mode: it runs the generated apps in batches and prints one
// PASS/FAIL line per app with the command that reruns it.
func runGen(ctx context.Context, o options) int {
	if o.gen.rejudge != "" {
		return rejudgeGen(o.gen.rejudge)
	}
	start := time.Now()
	descs, err := genDescs(o.gen)
	if err != nil {
		logf("%v", err)
		return 2
	}
	o.scenarios = nil // the scenarios' builds are not needed
	d, err := newDrill(ctx, o)
	if err != nil {
		logf("set up the drill: %v", err)
		return 1
	}
	defer d.close()
	if err := d.freshCluster(ctx, 1); err != nil {
		logf("%v", err)
		return 1
	}
	root := filepath.Join(d.o.work, "results", "gen")
	if err := os.MkdirAll(root, 0o755); err != nil {
		logf("%v", err)
		return 2
	}
	var all []*genApp
	par := max(o.gen.parallel, 1)
	for i := 0; i < len(descs) && ctx.Err() == nil; i += par {
		batch := descs[i:min(i+par, len(descs))]
		apps, err := d.runGenBatch(ctx, root, batch, o.gen)
		all = append(all, apps...)
		if err != nil {
			logf("batch %d: %v", i/par+1, err)
			for _, a := range apps {
				a.fail("the batch stopped: %v", err)
			}
			if ctx.Err() != nil {
				break
			}
			// a broken cluster: start a fresh one for the next batch
			if err := d.freshCluster(ctx, 1); err != nil {
				logf("%v", err)
				return 1
			}
		}
	}
	if o.gen.shrink {
		for _, a := range all {
			if len(a.viol) > 0 && ctx.Err() == nil {
				d.shrinkApp(ctx, root, a, o.gen)
			}
		}
	}
	sum := genSummary(all)
	path := o.gen.summary
	if path == "" {
		path = filepath.Join(root, "summary.json")
	}
	if err := writeJSON(path, sum); err != nil {
		logf("%v", err)
	}
	fmt.Println("--- generated apps (results in " + root + ")")
	failed := false
	for _, a := range all {
		status := "PASS"
		switch {
		case len(a.errs) > 0:
			status = "ERR "
			failed = true
		case len(a.viol) > 0:
			status = "FAIL"
			failed = true
		}
		fmt.Printf("%s %-20s %-18s %6s  %s\n", status, a.d.AppID, a.d.Fault, a.took.Round(time.Second), strings.Join(a.d.Families(), ","))
		for _, v := range a.viol {
			fmt.Printf("     %s (%s): %s\n", v.Property, v.Audit, v.Detail)
		}
		for _, e := range a.errs {
			fmt.Printf("     harness: %s\n", e)
		}
		if status != "PASS" {
			fmt.Printf("     rerun: %s\n", a.rerun)
		}
	}
	fmt.Print(sum.table())
	fmt.Printf("generated apps: %d run in %s\n", len(all), time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		return 130
	}
	if failed {
		return 1
	}
	return 0
}

// genDescs reads the descriptions to run: the files of -gen-desc, else the seeds.
func genDescs(g genOptions) ([]*fuzzapps.Desc, error) {
	var out []*fuzzapps.Desc
	if g.descs != "" {
		for _, f := range strings.Split(g.descs, ",") {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			var d fuzzapps.Desc
			if err := json.Unmarshal(b, &d); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out = append(out, &d)
		}
		return out, nil
	}
	if g.seeds != "" {
		for _, s := range strings.Split(g.seeds, ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("-gen-seeds: %w", err)
			}
			out = append(out, fuzzapps.Generate(v))
		}
		return out, nil
	}
	for i := range g.n {
		out = append(out, fuzzapps.Generate(g.seed+uint64(i)))
	}
	return out, nil
}

// rerunCommand is the one line that reruns app d.
func rerunCommand(d *fuzzapps.Desc, descPath string, fromSeed bool) string {
	if fromSeed {
		return fmt.Sprintf(".ci/fuzz-apps -seeds %d", d.Seed)
	}
	return ".ci/fuzz-apps -desc " + descPath
}

// runGenBatch runs one batch of apps on the running cluster: set-up, input with the apps
// running (audits in between), the faults, the audits, the log dirs.
func (d *drill) runGenBatch(ctx context.Context, root string, descs []*fuzzapps.Desc, g genOptions) ([]*genApp, error) {
	t0 := time.Now()
	var apps []*genApp
	for _, desc := range descs {
		a, err := d.newGenApp(root, desc, g.descs == "")
		if err != nil {
			return nil, err
		}
		apps = append(apps, a)
	}
	defer func() {
		for _, a := range apps {
			if a.run != nil {
				a.run.kill9()
				a.run = nil
			}
			a.took = time.Since(t0)
			_ = writeJSON(filepath.Join(a.dir, "truth.json"), map[string]any{"truth": a.truth, "records": a.recs,
				"violations": a.viol, "soft": a.soft, "errors": a.errs, "during": a.during})
		}
	}()
	logf("=== batch of %d generated apps: %s", len(apps), genNames(apps))
	if err := d.resetGen(ctx, apps); err != nil {
		return apps, err
	}
	if err := d.createGenTopics(ctx, apps); err != nil {
		return apps, err
	}
	live := func(l []*genApp) []*genApp {
		return slices.DeleteFunc(slices.Clone(l), func(a *genApp) bool { return len(a.errs) > 0 })
	}
	d.startGenApps(ctx, live(apps))
	// wave by wave: input, then audits while the apps process it; the mid-run faults
	lastDown := map[*genApp]bool{}
	for _, a := range apps {
		lastDown[a] = a.d.Fault == fuzzapps.FaultSourceGap || a.d.Fault == fuzzapps.FaultRepartitionGap
	}
	nw := 0
	for _, a := range apps {
		nw = max(nw, len(a.waves))
	}
	brokerRestart := slices.ContainsFunc(apps, func(a *genApp) bool { return a.d.Fault == fuzzapps.FaultBrokerRestart })
	for w := range nw {
		var wg sync.WaitGroup
		for _, a := range live(apps) {
			if w >= len(a.waves) || lastDown[a] && w == len(a.waves)-1 {
				continue
			}
			wg.Go(func() {
				if err := d.produceGen(ctx, a, a.waves[w], 10, 40*time.Millisecond); err != nil {
					a.fail("produce wave %d: %v", w+1, err)
				}
			})
		}
		wg.Wait()
		if g.during {
			d.duringAudits(ctx, live(apps), w+1)
		}
		if w == 0 {
			d.midRunFaults(ctx, live(apps))
		}
		if w == 1 && brokerRestart {
			if err := d.restartBroker(ctx, apps); err != nil {
				return apps, err
			}
		}
	}
	d.waitGenCaughtUp(ctx, live(apps))
	d.stopGenApps(live(apps))
	// the faults that need the apps down
	for _, a := range live(apps) {
		switch a.d.Fault {
		case fuzzapps.FaultSourceGap:
			d.injectGenGap(ctx, a)
		case fuzzapps.FaultRepartitionGap:
			d.injectGenPurge(ctx, a)
		}
	}
	if err := d.waitGenGroupsEmpty(ctx, live(apps)); err != nil {
		return apps, err
	}
	// the audits: every app, live and from its capture; then the log dirs
	d.auditGenApps(ctx, live(apps), "final")
	if err := d.genLogDirs(ctx, live(apps), "final"); err != nil {
		return apps, err
	}
	// after the restart (the faults that lose records): the same losses, with the logs
	var again []*genApp
	for _, a := range live(apps) {
		switch a.d.Fault {
		case fuzzapps.FaultSourceGap, fuzzapps.FaultRepartitionGap, fuzzapps.FaultDropped:
			if a.truth.Injected {
				again = append(again, a)
			}
		}
	}
	if len(again) > 0 {
		d.startGenApps(ctx, again)
		d.waitGenCaughtUp(ctx, live(again))
		d.stopGenApps(live(again))
		if err := d.waitGenGroupsEmpty(ctx, live(again)); err != nil {
			return apps, err
		}
		d.auditGenApps(ctx, live(again), "restarted")
		if err := d.genLogDirs(ctx, live(again), "restarted"); err != nil {
			return apps, err
		}
	}
	logf("batch %s done in %s", genNames(apps), time.Since(t0).Round(time.Second))
	return apps, nil
}

func genNames(apps []*genApp) string {
	var n []string
	for _, a := range apps {
		n = append(n, a.d.AppID)
	}
	return strings.Join(n, ",")
}

func (d *drill) newGenApp(root string, desc *fuzzapps.Desc, fromSeed bool) (*genApp, error) {
	a := &genApp{d: desc, dir: filepath.Join(root, desc.AppID), stateDir: filepath.Join(d.o.work, "state", "gen", desc.AppID)}
	for _, p := range []string{a.dir, a.stateDir} {
		if err := os.RemoveAll(p); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, err
		}
	}
	a.spec = fuzzapps.GenerateSpec(desc)
	a.specPath = filepath.Join(a.dir, "kaudit.yaml")
	a.descPath = filepath.Join(a.dir, "desc.json")
	if err := os.WriteFile(a.specPath, []byte(a.spec.YAML), 0o644); err != nil {
		return nil, err
	}
	if err := writeJSON(a.descPath, desc); err != nil {
		return nil, err
	}
	a.waves = fuzzapps.Records(desc)
	// event times end about now (or PastMs before): the last record's is base + its seq × step
	n := int64(0)
	for _, w := range a.waves {
		n += int64(len(w))
	}
	a.base = time.Now().Truncate(time.Second).UnixMilli() - n*desc.Input.StepMs - desc.Input.PastMs
	for _, s := range desc.Sources() {
		if s.Op == "globalTable" {
			a.globals = append(a.globals, s.Topic)
		} else {
			a.srcs = append(a.srcs, s.Topic)
		}
	}
	a.outs = desc.Outputs()
	a.truth.Fault = desc.Fault
	a.truth.Injected = desc.Fault == fuzzapps.FaultNone
	a.rerun = rerunCommand(desc, a.descPath, fromSeed)
	return a, nil
}

// topics are every topic of the app but its internal ones.
func (a *genApp) topics() []string {
	return slices.Concat(a.srcs, a.globals, a.outs)
}

// resetGen deletes every topic and the batch's groups (a new batch starts on an empty cluster).
func (d *drill) resetGen(ctx context.Context, apps []*genApp) error {
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	c, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for _, a := range apps {
		if res, err := adm.DeleteGroups(c, a.d.AppID); err == nil {
			if err := res.Error(); err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
				logf("delete group %s: %v", a.d.AppID, err)
			}
		}
	}
	td, err := adm.ListTopics(c)
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	if names := td.Names(); len(names) > 0 {
		if _, err := adm.DeleteTopics(c, names...); err != nil {
			return fmt.Errorf("delete topics: %w", err)
		}
	}
	return waitTopicsGone(c, adm)
}

func (d *drill) createGenTopics(ctx context.Context, apps []*genApp) error {
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	for _, a := range apps {
		res, err := adm.CreateTopics(ctx, a.d.Partitions, 1, nil, a.topics()...)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			return fmt.Errorf("create the topics of %s: %w", a.d.AppID, err)
		}
	}
	return nil
}

// startGenApp starts one more JVM of a (extra: -D properties of this run).
func (d *drill) startGenApp(a *genApp, extra ...string) error {
	if a.run != nil && a.run.alive() {
		return fmt.Errorf("a run is still alive")
	}
	a.runs++
	props := []string{"-Ddescribe.file=" + filepath.Join(a.dir, "describe.txt")}
	if len(a.d.DropIDs) > 0 {
		props = append(props, "-Ddrop.ids="+strings.Join(a.d.DropIDs, ","))
	}
	for _, x := range extra {
		props = append(props, "-D"+x)
	}
	args := append([]string{"-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.io.tmpdir=" + filepath.Join(d.o.work, "tmp")}, props...)
	args = append(args, "-cp", filepath.Join(d.appLib, "classes")+":"+filepath.Join(d.appLib, "lib")+"/*",
		"kaudit.drill.GenApp", a.descPath, d.bootstrap, a.stateDir, d.regURL)
	r, err := d.spawnJava(args, filepath.Join(a.dir, fmt.Sprintf("app-%d.log", a.runs)))
	if err != nil {
		return err
	}
	a.run = r
	return nil
}

// startGenApps starts apps together and waits until each is RUNNING (a source read from the
// latest offset gets 5 s more, so that its first input is not produced before its position).
func (d *drill) startGenApps(ctx context.Context, apps []*genApp, extra ...string) {
	t0 := time.Now()
	for _, a := range apps {
		if err := d.startGenApp(a, extra...); err != nil {
			a.fail("start: %v", err)
		}
	}
	latest := false
	for _, a := range apps {
		if a.run == nil {
			continue
		}
		if err := a.run.waitRunning(ctx, 180*time.Second); err != nil {
			a.fail("start run %d: %v", a.runs, err)
			a.run.kill9()
			a.run = nil
		}
		latest = latest || len(a.latestSources()) > 0 && a.runs == 1
	}
	if latest {
		// a source read with Consumed's LATEST policy has its position only once its consumer
		// logs "Resetting offset for partition T-P to position …" (RUNNING comes before): an
		// input produced earlier is skipped by design, a loss the harness did not make
		for _, a := range apps {
			if a.run != nil && a.runs == 1 {
				a.waitLatestPositions(ctx, 60*time.Second)
			}
		}
		time.Sleep(time.Second)
	}
	logf("apps %s RUNNING after %s", genNames(apps), time.Since(t0).Round(100*time.Millisecond))
}

// latestSources are the app's source topics read with Consumed's LATEST policy.
func (a *genApp) latestSources() []string {
	var out []string
	for _, n := range a.d.Sources() {
		if n.Reset == "latest" {
			out = append(out, n.Topic)
		}
	}
	return out
}

// waitLatestPositions waits until the app's log shows the position of every partition of its
// sources read with Consumed's LATEST policy, or timeout (then says so and goes on).
func (a *genApp) waitLatestPositions(ctx context.Context, timeout time.Duration) {
	var want []string
	for _, t := range a.latestSources() {
		for p := range a.d.Partitions {
			want = append(want, fmt.Sprintf("Resetting offset for partition %s-%d to position", t, p))
		}
	}
	if len(want) == 0 {
		return
	}
	log := filepath.Join(a.dir, fmt.Sprintf("app-%d.log", a.runs))
	deadline := time.Now().Add(timeout)
	for {
		b, _ := os.ReadFile(log)
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return bytes.Contains(b, []byte(w)) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			logf("app %s: no position logged after %s for %d partitions read from the latest offset (the first: %q): producing anyway", a.d.AppID, timeout, len(missing), missing[0])
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (d *drill) stopGenApps(apps []*genApp) {
	var wg sync.WaitGroup
	for _, a := range apps {
		if a.run == nil {
			continue
		}
		wg.Go(func() {
			if err := a.run.stop(); err != nil {
				a.fail("stop run %d: %v", a.runs, err)
			}
			a.run = nil
		})
	}
	wg.Wait()
}

func (d *drill) waitGenGroupsEmpty(ctx context.Context, apps []*genApp) error {
	for _, a := range apps {
		if err := d.waitGroupEmptyOf(ctx, a.d.AppID); err != nil {
			return err
		}
	}
	return nil
}

// ---- input ----

func encodeGenKey(serde string, k any) []byte {
	if k == nil {
		return nil
	}
	switch serde {
	case fuzzapps.SerdeInt:
		b := make([]byte, 4)
		binary.BigEndian.PutUint32(b, uint32(int32(k.(int64))))
		return b
	case fuzzapps.SerdeLong:
		b := make([]byte, 8)
		binary.BigEndian.PutUint64(b, uint64(k.(int64)))
		return b
	}
	return []byte(k.(string))
}

func (d *drill) encodeGenValue(topic, serde string, v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	switch serde {
	case fuzzapps.SerdeJSON:
		return json.Marshal(v)
	case fuzzapps.SerdeAvro:
		id, err := d.schemas.register(d.regURL, topic+"-value", "GenRec")
		if err != nil {
			return nil, err
		}
		return d.schemas.encode(id, "GenRec", v.(map[string]any))
	case fuzzapps.SerdeString:
		return []byte(v.(string)), nil
	}
	return encodeGenKey(serde, v), nil
}

// produceGen writes recs for app a, chunk at a time, pause between chunks.
func (d *drill) produceGen(ctx context.Context, a *genApp, recs []*fuzzapps.Record, chunk int, pause time.Duration) error {
	cl, err := d.client(kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	serdeOf := map[string]*fuzzapps.Node{}
	for _, s := range a.d.Sources() {
		serdeOf[s.Topic] = s
	}
	for start := 0; start < len(recs); start += chunk {
		end := min(start+chunk, len(recs))
		batch := make([]*kgo.Record, 0, end-start)
		for _, r := range recs[start:end] {
			src := serdeOf[r.Topic]
			v, err := d.encodeGenValue(r.Topic, src.Value, r.Value)
			if err != nil {
				return err
			}
			batch = append(batch, &kgo.Record{Topic: r.Topic, Key: encodeGenKey(src.Key, r.Key), Value: v,
				Timestamp: time.UnixMilli(r.Timestamp(a.base, a.d.Input.StepMs))})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		a.mu.Lock()
		for i, kr := range batch {
			a.recs = append(a.recs, &genRec{Record: recs[start+i], Partition: kr.Partition, Offset: kr.Offset, TS: kr.Timestamp.UnixMilli()})
		}
		a.mu.Unlock()
		if pause > 0 && end < len(recs) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// ---- progress ----

// observe reads the offsets of a's topics and its internal ones, and its group's.
func (a *genApp) observe(ctx context.Context, d *drill) (state, error) {
	return d.observeApp(ctx, a.d.AppID, a.topics())
}

// caughtUp says why s is not a finished run of a ("": finished).
// A partition whose records were all deleted (a gap or a purge up to its end) has nothing
// left to commit past.
func (a *genApp) caughtUp(s state) string {
	for _, t := range a.srcs {
		for part, hw := range s.hw[t] {
			start, _ := s.start.get(t, part)
			if c, ok := s.committed.get(t, part); hw > 0 && start < hw && (!ok || c < hw) {
				return fmt.Sprintf("%s/%d committed %d < hw %d", t, part, c, hw)
			}
		}
	}
	for _, t := range s.hops() {
		for part, hw := range s.hw[t] {
			start, _ := s.start.get(t, part)
			if c, ok := s.committed.get(t, part); hw > 0 && start < hw-1 && (!ok || c < hw-1) {
				return fmt.Sprintf("%s/%d committed %d < hw %d - 1", t, part, c, hw)
			}
		}
	}
	if open := s.openNote(); open != "" {
		return open
	}
	return ""
}

// waitGenCaughtUp waits until every app of apps processed and committed all its input; an app
// whose JVM died is restarted once.
func (d *drill) waitGenCaughtUp(ctx context.Context, apps []*genApp) {
	var wg sync.WaitGroup
	for _, a := range apps {
		wg.Go(func() {
			for attempt := 0; attempt < 2; attempt++ {
				if a.run == nil || !a.run.alive() {
					logf("app %s: not running (run %d exited: %v); restarting it", a.d.AppID, a.runs, runErr(a.run))
					a.truth.Note += fmt.Sprintf("run %d exited before catching up; ", a.runs)
					d.startGenApps(ctx, []*genApp{a})
				}
				obs := func(ctx context.Context) (state, error) { return a.observe(ctx, d) }
				_, err := pollCaughtUp(ctx, 240*time.Second, "app "+a.d.AppID, a.run, obs, a.caughtUp)
				if err == nil {
					return
				}
				if attempt == 1 || a.run != nil && a.run.alive() {
					a.fail("catch up: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func runErr(r *appRun) error {
	if r == nil {
		return nil
	}
	return r.err
}

// ---- faults ----

// midRunFaults injects, after the first wave, the faults that hit a running app: kill -9 while
// a transaction is open (at-least-once: at any moment), a clean restart.
func (d *drill) midRunFaults(ctx context.Context, apps []*genApp) {
	var wg sync.WaitGroup
	for _, a := range apps {
		switch a.d.Fault {
		case fuzzapps.FaultKill9:
			wg.Go(func() { d.genKill9(ctx, a) })
		case fuzzapps.FaultRestart:
			wg.Go(func() {
				time.Sleep(time.Second)
				d.stopGenApps([]*genApp{a})
				a.truth.Restarts++
				d.startGenApps(ctx, []*genApp{a})
				a.truth.Injected = a.run != nil
			})
		}
	}
	wg.Wait()
}

// genKill9 kills a -9 mid-transaction (up to 3 kills until one leaves a transaction hanging).
func (d *drill) genKill9(ctx context.Context, a *genApp) {
	eos := a.d.Guarantee == "exactly_once_v2"
	for a.truth.Landed == 0 && a.truth.Kills < 3 && a.run != nil {
		t0 := time.Now()
		a.waitLatestCommitted(ctx, d, 15*time.Second)
		for eos && time.Since(t0) < 15*time.Second {
			if s, err := a.observe(ctx, d); err == nil {
				if t, p, _, _, ok := s.openIn(nil); ok {
					logf("app %s: open transaction on %s/%d", a.d.AppID, t, p)
					break
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		a.run.kill9()
		a.run = nil
		a.truth.Kills++
		time.Sleep(time.Second)
		if !eos {
			a.truth.Landed++
		} else if s, err := a.observe(ctx, d); err == nil {
			if _, _, _, _, ok := s.openIn(nil); ok {
				a.truth.Landed++
			}
		}
		d.startGenApps(ctx, []*genApp{a})
	}
	a.truth.Injected = a.truth.Kills > 0
}

// waitLatestCommitted waits until the group has committed an offset on every partition holding
// records of a source read with Consumed's LATEST policy, or timeout. Killed before its first
// commit there, the app resets such a partition to its end when it restarts and skips what it
// had processed in the aborted transaction: a loss by design, not the fault under test (seed 23
// of the violations: 30 inputs skipped so, and kaudit rightly said they were lost).
func (a *genApp) waitLatestCommitted(ctx context.Context, d *drill, timeout time.Duration) {
	latest := a.latestSources()
	if len(latest) == 0 {
		return
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		s, err := a.observe(ctx, d)
		if err == nil && !slices.ContainsFunc(latest, func(t string) bool {
			for p, hw := range s.hw[t] {
				if _, ok := s.committed.get(t, p); hw > 0 && !ok {
					return true
				}
			}
			return false
		}) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	logf("app %s: no committed offset on every partition of its LATEST sources after %s: killing anyway", a.d.AppID, timeout)
}

// restartBroker stops the broker (SIGTERM) with the batch's apps running, waits 5 s and starts
// it again.
func (d *drill) restartBroker(ctx context.Context, apps []*genApp) error {
	logf("broker restart with apps %s running", genNames(apps))
	d.stopCluster(ctx)
	time.Sleep(5 * time.Second)
	if err := d.restartCluster(ctx); err != nil {
		return err
	}
	for _, a := range apps {
		if a.d.Fault == fuzzapps.FaultBrokerRestart {
			a.truth.Injected = true
		}
		a.truth.Note += "broker restarted mid-input; "
	}
	return nil
}

// injectGenGap: with a down, its last wave is produced and the first records past the group's
// committed offset of the fullest source partition are deleted (up to 10).
func (d *drill) injectGenGap(ctx context.Context, a *genApp) {
	if err := d.produceGen(ctx, a, a.waves[len(a.waves)-1], 50, 0); err != nil {
		a.fail("produce the last wave: %v", err)
		return
	}
	s, err := a.observe(ctx, d)
	if err != nil {
		a.fail("observe: %v", err)
		return
	}
	var best struct {
		topic string
		part  int32
		c, n  int64
	}
	latest := map[string]bool{}
	for _, src := range a.d.Sources() {
		// Streams resets a source read with Consumed's LATEST policy to its end after a
		// gap (OFFSET_OUT_OF_RANGE): every record past the gap is skipped by design
		latest[src.Topic] = src.Reset == "latest"
	}
	for _, t := range a.srcs {
		for p, hw := range s.hw[t] {
			c, ok := s.committed.get(t, p)
			if ok && !latest[t] && hw-c > best.n {
				best.topic, best.part, best.c, best.n = t, p, c, hw-c
			}
		}
	}
	if best.n < 3 {
		a.truth.Note += "no source partition with 3 unconsumed records: gap not injected; "
		return
	}
	k := min(best.n-1, 10) // records remain past the gap: the restarted app resets over it and goes on
	var hit []string
	keys := map[string]bool{}
	for _, r := range a.recs {
		if r.Topic == best.topic && r.Partition == best.part && r.Offset >= best.c && r.Offset < best.c+k {
			hit = append(hit, recordID(r.Topic, r.Partition, r.Offset))
			if r.Key != nil {
				keys[fmt.Sprint(r.Key)] = true
			}
		}
	}
	f := fault{Kind: "delete-records", Topic: best.topic, Partition: best.part, From: best.c, To: best.c + k, Keys: keysOf(keys), Records: hit,
		Note: "DeleteRecords past the group's committed offset while the app is down"}
	if err := d.deleteRecords(ctx, best.topic, best.part, best.c+k); err != nil {
		a.fail("%v", err)
		return
	}
	a.truth.Gap, a.truth.Injected = &f, true
	logf("app %s: gap %s/%d [%d, %d)", a.d.AppID, f.Topic, f.Partition, f.From, f.To)
}

func keysOf(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// injectGenPurge: with a down, its last wave is produced; a runs with a slow repartition reader
// until it committed its whole source, stops, and the first five committed unconsumed records of
// its fullest repartition partition are deleted.
func (d *drill) injectGenPurge(ctx context.Context, a *genApp) {
	if err := d.produceGen(ctx, a, a.waves[len(a.waves)-1], 50, 0); err != nil {
		a.fail("produce the last wave: %v", err)
		return
	}
	d.startGenApps(ctx, []*genApp{a}, "slow.repartition.ms=100", "max.poll.records=20")
	if a.run == nil {
		return
	}
	deadline := time.Now().Add(150 * time.Second)
	for {
		s, err := a.observe(ctx, d)
		if err == nil {
			var c, hw int64
			for _, t := range a.srcs {
				for p, h := range s.hw[t] {
					hw += h
					v, _ := s.committed.get(t, p)
					c += v
				}
			}
			if c >= hw {
				break
			}
		}
		if time.Now().After(deadline) || !a.run.alive() {
			a.fail("the slow run did not commit its source within 150s")
			d.stopGenApps([]*genApp{a})
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.stopGenApps([]*genApp{a})
	s, err := a.observe(ctx, d)
	if err != nil {
		a.fail("observe: %v", err)
		return
	}
	var best struct {
		topic string
		part  int32
		c     int64
		data  []*kgo.Record
	}
	for _, t := range s.repartitions() {
		for p, lso := range s.lso[t] {
			c, ok := s.committed.get(t, p)
			if !ok {
				continue
			}
			recs, err := d.readPartition(ctx, t, p, c, lso, true)
			if err != nil {
				a.fail("read %s/%d: %v", t, p, err)
				return
			}
			var data []*kgo.Record
			for _, r := range recs {
				if !r.Attrs.IsControl() {
					data = append(data, r)
				}
			}
			if len(data) > len(best.data) {
				best.topic, best.part, best.c, best.data = t, p, c, data
			}
		}
	}
	const n = 5
	if len(best.data) < n+1 { // records remain past the purge

		a.truth.Note += fmt.Sprintf("no repartition partition held %d committed unconsumed records (best %d): purge not injected; ", n+1, len(best.data))
		return
	}
	keys := map[string]bool{}
	for _, r := range best.data[:n] {
		for _, k := range genKeyTexts(r.Key) {
			keys[k] = true
		}
		// the source records the copy carries (its id), and their keys
		for _, src := range a.recs {
			if m, ok := src.Value.(map[string]any); ok && strings.Contains(string(r.Value), m["id"].(string)) {
				keys[m["id"].(string)] = true
				if src.Key != nil {
					keys[fmt.Sprint(src.Key)] = true
				}
			}
		}
	}
	to := best.data[n-1].Offset + 1
	f := fault{Kind: "delete-records", Topic: best.topic, Partition: best.part, From: best.c, To: to, Keys: keysOf(keys),
		Note: "DeleteRecords on a repartition topic past the group's committed offset while the app is down"}
	if err := d.deleteRecords(ctx, best.topic, best.part, to); err != nil {
		a.fail("%v", err)
		return
	}
	a.truth.Purge, a.truth.Injected = &f, true
	logf("app %s: purge %s/%d [%d, %d) keys %v", a.d.AppID, f.Topic, f.Partition, f.From, f.To, head(f.Keys, 8))
}

// genKeyTexts are the texts a finding may print for a record key: the string, and the number a
// 4- or 8-byte Integer or Long key holds.
func genKeyTexts(k []byte) []string {
	out := []string{string(k)}
	switch len(k) {
	case 4:
		out = append(out, strconv.Itoa(int(int32(binary.BigEndian.Uint32(k)))))
	case 8:
		out = append(out, strconv.FormatInt(int64(binary.BigEndian.Uint64(k)), 10))
	}
	return out
}

// droppedTruth is the swallowed records as produced (the dropped fault), with their keys.
func (a *genApp) droppedTruth() {
	if a.d.Fault != fuzzapps.FaultDropped {
		return
	}
	sp := fuzzapps.SwallowPoint(a.d)
	keys := map[string]bool{}
	for _, r := range a.recs {
		m, ok := r.Value.(map[string]any)
		if !ok || !slices.Contains(a.d.DropIDs, fmt.Sprint(m["id"])) {
			continue
		}
		a.truth.Dropped = append(a.truth.Dropped, recordID(r.Topic, r.Partition, r.Offset))
		keys[fmt.Sprint(r.Key)] = true
		keys[fmt.Sprint(m["id"])] = true
		if sp != nil {
			_, ks := fuzzapps.HopKeys(a.d, sp, r.Key, r.Value)
			for _, k := range ks {
				keys[fmt.Sprint(k)] = true
			}
		}
	}
	a.truth.DropKeys = keysOf(keys)
	sort.Strings(a.truth.Dropped)
	a.truth.Injected = len(a.truth.Dropped) > 0
}
