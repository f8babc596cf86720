package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The apps-* scenarios: the four apps of StepsApps.java (stateless operators on the way to their
// stores: filter, mapValues, flatMapValues, groupBy, a windowed count with a filter after
// toStream(), merge and split) run together on one single-broker cluster, each in its own JVM
// under its own application id, each audited with its spec in testdata/apps/ (the steps: syntax).
// apps-clean kills each app -9 mid-transaction and restarts it: nothing lost. apps-faults gives
// each app a fault of its own, so that what kaudit must report is exactly known: orders a
// retention gap on its source, words a swallowing flatMapValues, routes a purge of repartition
// records past the committed offset, windows none (late clicks only, as in apps-clean). The
// four z-apps of ZApps.java (zapps.go: stream-table joins, a KTable groupBy with a subtractor,
// cogroup, a foreign-key join) run beside them in the same JVM cycle, with faults of their own.

// stepsApp is one app of StepsApps.java or ZApps.java.
type stepsApp struct {
	name         string // StepsApps' (ZApps') first argument; testdata/apps/<name>.*
	class        string // the Java main class: StepsApps, or ZApps for the z-apps (zapps.go)
	appID        string
	sources      []string
	outputs      []string
	repartitions int // the internal topics it reads back (-repartition, and a foreign-key join's -topic ones; from its describe() text)
	changelogs   int
	// todoNode is the node its TODO spec (testdata/apps/<name>-todo.kaudit.yaml) leaves
	// unanswered, when it has one
	todoNode string
	// killHop: its kills wait first (20 s) for a transaction open on a hop topic (repartition, a
	// foreign-key join's subscription topics), so that aborted records of that format are there
	killHop bool
}

var stepsApps = append([]stepsApp{
	{name: "orders", appID: "kaudit-steps-orders", sources: []string{"so-orders", "so-payments", "so-shipments"},
		outputs: []string{"so-order-status"}, repartitions: 3, changelogs: 3, todoNode: "KSTREAM-FILTER-0000000001"},
	{name: "words", appID: "kaudit-steps-words", sources: []string{"sw-lines"}, outputs: []string{"sw-word-counts"},
		repartitions: 1, changelogs: 1, todoNode: "KSTREAM-FLATMAPVALUES-0000000001"},
	{name: "windows", appID: "kaudit-steps-windows", sources: []string{"sc-clicks"}, outputs: []string{"sc-busy-minutes"},
		repartitions: 0, changelogs: 1},
	{name: "routes", appID: "kaudit-steps-routes", sources: []string{"sr-web", "sr-mobile"},
		outputs: []string{"sr-big-customers", "sr-rest-totals"}, repartitions: 2, changelogs: 3},
}, zApps...)

// Internal topics the drill reads to see what the stateless operators did (from the apps'
// describe() texts, which the drill requires unchanged).
const (
	ordersRepartition   = "kaudit-steps-orders-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition"
	paymentsRepartition = "kaudit-steps-orders-KSTREAM-REDUCE-STATE-STORE-0000000011-repartition"
	wordsRepartition    = "kaudit-steps-words-KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"
	clicksChangelog     = "kaudit-steps-windows-KSTREAM-AGGREGATE-STATE-STORE-0000000001-changelog"
	smallChangelog      = "kaudit-steps-routes-KSTREAM-REDUCE-STATE-STORE-0000000014-changelog"
)

// swallowedLines are the words app's lines it swallows in apps-faults (-Ddrop.keys).
var swallowedLines = []string{"l-w1-0005", "l-w1-0017", "l-w1-0042", "l-w1-0077", "l-w1-0101"}

// appsTruth is what the drill knows of an apps-* scenario, in truth.json beside the records.
type appsTruth struct {
	Apps map[string]*appTruth `json:"apps"`
}

// appTruth is one app's part: its runs, what kaudit must report, what real Streams did.
type appTruth struct {
	AppID    string         `json:"app_id"`
	Runs     int            `json:"runs"`
	Kills    int            `json:"kills,omitempty"`
	Landed   int            `json:"landed,omitempty"` // kills that left a transaction open
	Expect   []string       `json:"expect"`           // what kaudit must report, in words
	Observed map[string]any `json:"observed"`         // what the app did, measured
	Kaudit   string         `json:"kaudit,omitempty"`
	TODO     string         `json:"kaudit_todo,omitempty"` // kaudit with the TODO spec
}

// appProc is one app in a scenario: its dir, state dir and JVM.
type appProc struct {
	stepsApp
	dir, stateDir string
	run           *appRun
	props         []string // -D properties of every run
	truth         *appTruth
}

// appsRun is the state of one apps-* scenario.
type appsRun struct {
	procs []*appProc
	mu    sync.Mutex // guards the truth's records: the z-apps' phases are produced beside the others' input
}

func (ar *appsRun) proc(name string) *appProc {
	for _, p := range ar.procs {
		if p.name == name {
			return p
		}
	}
	panic("no app " + name)
}

func (ar *appsRun) killAll() {
	for _, p := range ar.procs {
		if p.run != nil {
			p.run.kill9()
		}
	}
}

// appsSetup creates every app's topics (2 partitions) and dirs; props are every app's -D
// properties.
func (r *scRun) appsSetup(ctx context.Context, props ...string) error {
	r.multi = &appsRun{}
	r.truth.Apps = &appsTruth{Apps: map[string]*appTruth{}}
	var topics []string
	for _, a := range stepsApps {
		if a.class == "" {
			a.class = "StepsApps"
		}
		p := &appProc{stepsApp: a, dir: filepath.Join(r.dir, a.name), stateDir: filepath.Join(r.stateDir, a.name),
			props: append([]string(nil), props...), truth: &appTruth{AppID: a.appID, Observed: map[string]any{}}}
		for _, dir := range []string{p.dir, p.stateDir} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		r.multi.procs = append(r.multi.procs, p)
		r.truth.Apps.Apps[a.name] = p.truth
		topics = append(append(topics, a.sources...), a.outputs...)
	}
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	res, err := adm.CreateTopics(ctx, numPartitions, int16(r.d.brokers), nil, topics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create the apps' topics: %w", err)
	}
	return nil
}

// startProc starts one more JVM of app p (extra: more -D properties for this run) without
// waiting for it.
func (r *scRun) startProc(p *appProc, extra ...string) error {
	if p.run != nil && p.run.alive() {
		return fmt.Errorf("app %s: a run is still alive", p.name)
	}
	p.truth.Runs++
	props := []string{"-Dapp.id=" + p.appID, "-Ddescribe.file=" + filepath.Join(p.dir, "describe.txt")}
	for _, x := range append(append([]string(nil), p.props...), extra...) {
		props = append(props, "-D"+x)
	}
	args := append([]string{"-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.io.tmpdir=" + filepath.Join(r.d.o.work, "tmp")}, props...)
	lib := r.d.appLibFor(r.streams)
	args = append(args, "-cp", filepath.Join(lib, "classes")+":"+filepath.Join(lib, "lib")+"/*",
		"kaudit.drill."+p.class, p.name, r.d.bootstrap, p.stateDir, r.d.regURL)
	a, err := r.d.spawnJava(args, filepath.Join(p.dir, fmt.Sprintf("app-%d.log", p.truth.Runs)))
	if err != nil {
		return err
	}
	p.run = a
	logf("app %s run %d started (pid %d)", p.name, p.truth.Runs, a.cmd.Process.Pid)
	return nil
}

// startProcs starts the apps ps together and waits until each is RUNNING.
func (r *scRun) startProcs(ctx context.Context, ps []*appProc, extra ...string) error {
	t0 := time.Now()
	for _, p := range ps {
		if err := r.startProc(p, extra...); err != nil {
			return err
		}
	}
	for _, p := range ps {
		if err := p.run.waitRunning(ctx, 120*time.Second); err != nil {
			return fmt.Errorf("app %s: %w", p.name, err)
		}
	}
	logf("apps %s RUNNING after %s", procNames(ps), time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// stopProcs stops the apps ps together (SIGTERM: a clean close).
func (r *scRun) stopProcs(ps []*appProc) error {
	t0 := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(ps))
	for i, p := range ps {
		if p.run == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.run.stop(); err != nil {
				errs[i] = fmt.Errorf("app %s: %w", p.name, err)
			}
		}()
	}
	wg.Wait()
	for _, p := range ps {
		p.run = nil
	}
	logf("apps %s stopped in %s", procNames(ps), time.Since(t0).Round(100*time.Millisecond))
	return allErrs(errs...)
}

func procNames(ps []*appProc) string {
	var n []string
	for _, p := range ps {
		n = append(n, p.name)
	}
	return strings.Join(n, ",")
}

// observe reads the offsets of p's topics and its group's committed offsets.
func (p *appProc) observe(ctx context.Context, d *drill) (state, error) {
	return d.observeApp(ctx, p.appID, append(append([]string(nil), p.sources...), p.outputs...))
}

// caughtUp says why s is not a finished run of p, or "" (as state.caughtUp for the drill app).
func (p *appProc) caughtUp(s state) string {
	for _, t := range p.sources {
		for part, hw := range s.hw[t] {
			if c, ok := s.committed.get(t, part); hw > 0 && (!ok || c < hw) {
				return fmt.Sprintf("%s/%d committed %d < hw %d", t, part, c, hw)
			}
		}
	}
	if len(s.hops()) != p.repartitions || len(s.changelogs()) != p.changelogs {
		return fmt.Sprintf("internal topics not all there yet: %v", s.internal)
	}
	for _, t := range s.hops() {
		for part, hw := range s.hw[t] {
			if c, ok := s.committed.get(t, part); hw > 0 && (!ok || c < hw-1) {
				return fmt.Sprintf("%s/%d committed %d < hw %d - 1", t, part, c, hw)
			}
		}
	}
	if open := s.openNote(); open != "" {
		return open
	}
	return ""
}

// waitCaughtUp waits until each of ps has processed and committed everything (all at once:
// each wait ends with 3 s of stable offsets).
func (r *scRun) waitCaughtUp(ctx context.Context, ps []*appProc) (map[string]state, error) {
	out := map[string]state{}
	t0 := time.Now()
	states := make([]state, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			obs := func(ctx context.Context) (state, error) { return p.observe(ctx, r.d) }
			states[i], errs[i] = pollCaughtUp(ctx, 180*time.Second, "app "+p.name, p.run, obs, p.caughtUp)
		}()
	}
	wg.Wait()
	if err := allErrs(errs...); err != nil {
		return nil, err
	}
	for i, p := range ps {
		out[p.name] = states[i]
	}
	logf("apps %s caught up in %s", procNames(ps), time.Since(t0).Round(100*time.Millisecond))
	return out, nil
}

// observeAll reads every app's offsets (the apps stopped).
func (r *scRun) observeAll(ctx context.Context) (map[string]state, error) {
	out := map[string]state{}
	for _, p := range r.multi.procs {
		s, err := p.observe(ctx, r.d)
		if err != nil {
			return nil, err
		}
		out[p.name] = s
	}
	return out, nil
}

// produceApps writes recs (any app's) in order, chunk records per round trip, sleeping
// pause() between chunks; it fills in partition and offset and adds them to the truth.
func (r *scRun) produceApps(ctx context.Context, recs []*inputRec, chunk int, pause func() time.Duration) error {
	// no RecordDeliveryTimeout: kgo counts it from the record's timestamp, and the words and
	// windows apps' records carry event times in the past (a record older than the timeout
	// fails at once with "records have timed out")
	cl, err := r.d.client(kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	ids := map[string]int{}
	for start := 0; start < len(recs); start += chunk {
		end := min(start+chunk, len(recs))
		batch := make([]*kgo.Record, 0, end-start)
		for _, rec := range recs[start:end] {
			v, err := r.d.encodeValue(rec, ids)
			if err != nil {
				return err
			}
			kr := &kgo.Record{Topic: rec.Topic, Key: []byte(rec.Key), Value: v}
			if rec.Timestamp != 0 {
				kr.Timestamp = time.UnixMilli(rec.Timestamp)
			}
			if rec.Header != "" {
				kr.Headers = []kgo.RecordHeader{{Key: "line", Value: []byte(rec.Header)}}
			}
			batch = append(batch, kr)
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return fmt.Errorf("produce: %w", err)
		}
		for i, kr := range batch {
			recs[start+i].Partition, recs[start+i].Offset = kr.Partition, kr.Offset
			recs[start+i].Timestamp = kr.Timestamp.UnixMilli()
		}
		if pause != nil && end < len(recs) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause()):
			}
		}
	}
	r.multi.mu.Lock()
	r.truth.Records = append(r.truth.Records, recs...)
	r.multi.mu.Unlock()
	return nil
}

// interleave merges lists so that each advances at its own pace: one record of each in turn.
func interleave(lists ...[]*inputRec) []*inputRec {
	var out []*inputRec
	for i := 0; ; i++ {
		more := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				more = true
			}
		}
		if !more {
			return out
		}
	}
}

// appRecs returns the truth's records of app, in production order.
func (r *scRun) appRecs(app string) []*inputRec {
	var out []*inputRec
	for _, rec := range r.truth.Records {
		if rec.App == app {
			out = append(out, rec)
		}
	}
	return out
}

// openTxn finds a partition p writes with an open transaction (LSO < HW).
func (p *appProc) openTxn(s state, downstream bool) (string, int32, bool) {
	topics := append(append([]string(nil), p.outputs...), s.changelogs()...)
	if !downstream {
		topics = append(topics, s.hops()...)
	}
	t, part, _, _, ok := s.openIn(topics)
	return t, part, ok
}

// openHopTxn finds a hop topic of p with an open transaction (LSO < HW).
func (p *appProc) openHopTxn(s state) (string, int32, bool) {
	t, part, _, _, ok := s.openIn(s.hops())
	return t, part, ok
}

// killMidTransaction kills p -9 while a transaction of it is open (on its output or a changelog
// in the first 10 s of waiting, then anywhere; with killHop, on a hop topic in the first 20 s),
// checks that the transaction is still open a second later (the kill landed), and restarts p;
// until one kill landed (at most 5 kills).
func (r *scRun) killMidTransaction(ctx context.Context, p *appProc) error {
	for p.truth.Landed < 1 {
		if p.truth.Kills == 5 {
			return notInjected("app %s: %d kill -9 left no transaction hanging", p.name, p.truth.Kills)
		}
		t0 := time.Now()
		for {
			s, err := p.observe(ctx, r.d)
			if err == nil {
				t, part, ok := p.openTxn(s, time.Since(t0) < 10*time.Second)
				if p.killHop && time.Since(t0) < 20*time.Second {
					t, part, ok = p.openHopTxn(s)
				}
				if ok {
					logf("app %s: open transaction on %s/%d", p.name, t, part)
					break
				}
			}
			if time.Since(t0) > 40*time.Second {
				return notInjected("app %s: no open transaction within 40s (kill %d)", p.name, p.truth.Kills+1)
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(50 * time.Millisecond)
		}
		p.run.kill9()
		p.run = nil
		p.truth.Kills++
		time.Sleep(time.Second)
		s, err := p.observe(ctx, r.d)
		if err != nil {
			return err
		}
		if t, part, ok := p.openTxn(s, false); ok {
			p.truth.Landed++
			logf("app %s: kill %d left a transaction hanging on %s/%d", p.name, p.truth.Kills, t, part)
		} else {
			logf("app %s: kill %d landed between transactions", p.name, p.truth.Kills)
		}
		if err := r.startProcs(ctx, []*appProc{p}); err != nil {
			return err
		}
	}
	return nil
}

// ---- what the apps did ----

// checkDescribe fails unless p's describe() text is the one committed beside its spec: the
// generated node names are part of what the spec and the unit tests rely on.
func (r *scRun) checkDescribe(p *appProc) error {
	got, err := os.ReadFile(filepath.Join(p.dir, "describe.txt"))
	if err != nil {
		return fmt.Errorf("app %s: read describe: %w", p.name, err)
	}
	want, err := os.ReadFile(filepath.Join(r.d.repo, "testdata", "apps", p.name+".describe.txt"))
	if err != nil {
		return fmt.Errorf("app %s: %w", p.name, err)
	}
	if string(got) != string(want) {
		return fmt.Errorf("app %s: its describe() text differs from testdata/apps/%s.describe.txt (node names moved?)", p.name, p.name)
	}
	return nil
}

// readAll reads topic's committed records from log start to LSO, every partition.
func (r *scRun) readAll(ctx context.Context, s state, topic string) ([]*kgo.Record, error) {
	var out []*kgo.Record
	parts := make([]int32, 0, len(s.lso[topic]))
	for part := range s.lso[topic] {
		parts = append(parts, part)
	}
	slices.Sort(parts)
	for _, part := range parts {
		start, _ := s.start.get(topic, part)
		recs, err := r.d.readPartition(ctx, topic, part, start, s.lso[topic][part], true)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if !rec.Attrs.IsControl() {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

// lastLongs reads topic's last Long value per key (keys as text).
func (r *scRun) lastLongs(ctx context.Context, s state, topic string) (map[string]int64, map[string]int, error) {
	recs, err := r.readAll(ctx, s, topic)
	if err != nil {
		return nil, nil, err
	}
	out, n := map[string]int64{}, map[string]int{}
	for _, rec := range recs {
		v, err := decodeLong(rec.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("%s/%d@%d: %w", topic, rec.Partition, rec.Offset, err)
		}
		out[string(rec.Key)] = v
		n[string(rec.Key)]++
	}
	return out, n, nil
}

// compareLongs names the keys whose value differs between want and got.
func compareLongs(want, got map[string]int64) []string {
	var bad []string
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			bad = append(bad, fmt.Sprintf("%s: %d, want %d", k, g, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%s: %d, want none", k, g))
		}
	}
	sort.Strings(bad)
	return bad
}

// checkOrdersApp compares the orders app's output with the drill's fold (skip: what a fault
// took away) and, on the whole repartition topics, what its filter kept and its mapValues
// wrote.
func (r *scRun) checkOrdersApp(ctx context.Context, s state, skip func(*inputRec) bool) error {
	p := r.multi.proc("orders")
	want := ordersAppOutput(r.truth.Records, skip)
	got := map[string]map[string]any{}
	recs, err := r.readAll(ctx, s, "so-order-status")
	if err != nil {
		return err
	}
	for _, rec := range recs {
		v, err := r.d.schemas.decode(r.d.regURL, rec.Value)
		if err != nil {
			return err
		}
		got[string(rec.Key)] = v
	}
	var bad []string
	for k, w := range want {
		if g, ok := got[k]; !ok || !sameValue(w, g) {
			bad = append(bad, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		return fmt.Errorf("app orders: the output differs from the drill's fold on %d keys %v", len(bad), head(bad, 8))
	}
	// The filter: one copy on the repartition topic per consumed non-TEST order version, none
	// of a TEST one (copies named by orderId and seq); the mapValues: each payment's copy in
	// cents (named by paymentId).
	copies, err := r.readAll(ctx, s, ordersRepartition)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, c := range copies {
		v, err := r.d.schemas.decode(r.d.regURL, c.Value)
		if err != nil {
			return err
		}
		seen[fmt.Sprint(v["orderId"], "#", v["seq"], "#", v["status"])]++
	}
	kept, rejected := 0, 0
	var wrong []string
	for _, rec := range r.appRecs("orders") {
		if rec.Topic != "so-orders" || !consumed(s, rec) {
			continue
		}
		id := fmt.Sprint(rec.Value["orderId"], "#", rec.Value["seq"], "#", rec.Value["status"])
		n := seen[id]
		delete(seen, id)
		switch {
		case rec.Value["status"] == "TEST" && n == 0:
			rejected++
		case rec.Value["status"] != "TEST" && n == 1:
			kept++
		default:
			wrong = append(wrong, fmt.Sprintf("%s: %d copies", id, n))
		}
	}
	for id, n := range seen {
		wrong = append(wrong, fmt.Sprintf("%s: %d copies of no input", id, n))
	}
	pcopies, err := r.readAll(ctx, s, paymentsRepartition)
	if err != nil {
		return err
	}
	cents := map[string]int64{}
	for _, c := range pcopies {
		v, err := r.d.schemas.decode(r.d.regURL, c.Value)
		if err != nil {
			return err
		}
		cents[fmt.Sprint(v["paymentId"])] = v["amount"].(int64)
	}
	centsOK := 0
	for _, rec := range r.appRecs("orders") {
		if rec.Topic != "so-payments" || !consumed(s, rec) || rec.OrderID == nil {
			continue
		}
		if got, ok := cents[rec.Key]; ok && got == rec.Value["amount"].(int64)*100 {
			centsOK++
		} else {
			wrong = append(wrong, fmt.Sprintf("payment %s: copy amount %d, want %d", rec.Key, got, rec.Value["amount"].(int64)*100))
		}
	}
	p.truth.Observed["filter"] = fmt.Sprintf("%d order versions kept (one copy each on the repartition topic), %d TEST versions rejected (no copy)", kept, rejected)
	p.truth.Observed["mapValues"] = fmt.Sprintf("%d payment copies in cents (amount x 100), every other field the input's", centsOK)
	p.truth.Observed["output_keys"] = len(got)
	logf("app orders: output exact (%d keys); filter kept %d, rejected %d; %d payment copies in cents", len(got), kept, rejected, centsOK)
	if len(wrong) > 0 {
		return fmt.Errorf("app orders: real Streams did not do what the spec says: %v", head(wrong, 8))
	}
	return nil
}

// consumed reports whether rec is below its app's committed offset in s.
func consumed(s state, rec *inputRec) bool {
	c, ok := s.committed.get(rec.Topic, rec.Partition)
	return ok && rec.Offset < c
}

// checkWordsApp compares the counts with the drill's fold and each flatMapValues copy on the
// (whole) repartition topic with its line: the word, the line's timestamp and its header.
func (r *scRun) checkWordsApp(ctx context.Context, s state, skip func(*inputRec) bool) error {
	p := r.multi.proc("words")
	got, _, err := r.lastLongs(ctx, s, "sw-word-counts")
	if err != nil {
		return err
	}
	if bad := compareLongs(wordsAppOutput(r.truth.Records, skip), got); len(bad) > 0 {
		return fmt.Errorf("app words: the output differs from the drill's fold on %d words %v", len(bad), head(bad, 8))
	}
	copies, err := r.readAll(ctx, s, wordsRepartition)
	if err != nil {
		return err
	}
	want := map[string]int{}
	for _, rec := range r.appRecs("words") {
		if skip != nil && skip(rec) {
			continue
		}
		for _, w := range lineWords(rec) {
			want[fmt.Sprintf("%d %s %s", rec.Timestamp, w, rec.Header)]++
		}
	}
	var wrong []string
	for _, c := range copies {
		h := ""
		for _, hd := range c.Headers {
			if hd.Key == "line" {
				h = string(hd.Value)
			}
		}
		id := fmt.Sprintf("%d %s %s", c.Timestamp.UnixMilli(), c.Key, h)
		if want[id] == 0 {
			wrong = append(wrong, "unexpected copy "+id)
			continue
		}
		want[id]--
	}
	for id, n := range want {
		if n > 0 {
			wrong = append(wrong, fmt.Sprintf("%d missing copies %s", n, id))
		}
	}
	sort.Strings(wrong)
	p.truth.Observed["flatMapValues"] = fmt.Sprintf("%d copies on the repartition topic, each with its line's timestamp and header (%d not)", len(copies), len(wrong))
	logf("app words: output exact (%d words); %d flatMapValues copies, each with its line's timestamp and header", len(got), len(copies))
	if len(wrong) > 0 {
		return fmt.Errorf("app words: the repartition copies are not the lines' words with the lines' timestamps and headers: %v", head(wrong, 8))
	}
	return nil
}

var skipRe = regexp.MustCompile(`Skipping record for expired window\. topic=\[([^\]]+)\] partition=\[(\d+)\] offset=\[(\d+)\]`)

// skippedLate reads the windows app's logs for the records Streams skipped as late.
func (p *appProc) skippedLate() (map[string]bool, error) {
	out := map[string]bool{}
	for i := 1; i <= p.truth.Runs; i++ {
		b, err := os.ReadFile(filepath.Join(p.dir, fmt.Sprintf("app-%d.log", i)))
		if err != nil {
			return nil, err
		}
		for _, m := range skipRe.FindAllStringSubmatch(string(b), -1) {
			part, _ := strconv.Atoi(m[2])
			off, _ := strconv.ParseInt(m[3], 10, 64)
			out[recordID(m[1], int32(part), off)] = true
		}
	}
	return out, nil
}

// checkWindowsApp compares the windows app's store (its changelog's last count per window)
// with the drill's count of the clicks Streams did not skip, and its output with the filter:
// each window whose count passed the threshold has its final count last, the others nothing.
func (r *scRun) checkWindowsApp(ctx context.Context, s state) (late []*inputRec, err error) {
	p := r.multi.proc("windows")
	skipped, err := p.skippedLate()
	if err != nil {
		return nil, err
	}
	var lateRecs []*inputRec
	for _, rec := range r.appRecs("windows") {
		if rec.Tag == tagLate {
			lateRecs = append(lateRecs, rec)
		}
		if skipped[recordID(rec.Topic, rec.Partition, rec.Offset)] {
			late = append(late, rec)
		}
	}
	if len(late) != len(skipped) {
		return nil, fmt.Errorf("app windows: the log names %d skipped records, %d of them the drill's", len(skipped), len(late))
	}
	skip := func(rec *inputRec) bool { return skipped[recordID(rec.Topic, rec.Partition, rec.Offset)] }
	want := windowsAppCounts(r.truth.Records, skip)
	// the store, from its changelog: key bytes, start (8), seqnum (4); the value the Long
	// alone (a timestamped store logs the timestamp as the record's, not in the value)
	cl, err := r.readAll(ctx, s, clicksChangelog)
	if err != nil {
		return nil, err
	}
	store := map[windowKey]int64{}
	for _, rec := range cl {
		if len(rec.Key) < 12 || len(rec.Value) != 8 {
			return nil, fmt.Errorf("app windows: changelog record of %d/%d bytes is not a window store's key and a Long", len(rec.Key), len(rec.Value))
		}
		wk, _ := decodeWindowed(rec.Key[:len(rec.Key)-4])
		n, _ := decodeLong(rec.Value)
		store[wk] = n
	}
	var bad []string
	for wk, n := range want {
		if store[wk] != n {
			bad = append(bad, fmt.Sprintf("%s@%d: store %d, want %d", wk.user, wk.start, store[wk], n))
		}
	}
	for wk := range store {
		if _, ok := want[wk]; !ok {
			bad = append(bad, fmt.Sprintf("%s@%d: in the store, no input", wk.user, wk.start))
		}
	}
	out, err := r.readAll(ctx, s, "sc-busy-minutes")
	if err != nil {
		return nil, err
	}
	last, states := map[windowKey]int64{}, map[windowKey]int{}
	below := 0
	for _, rec := range out {
		wk, err := decodeWindowed(rec.Key)
		if err != nil {
			return nil, err
		}
		n, err := decodeLong(rec.Value)
		if err != nil {
			return nil, err
		}
		if n <= busyThreshold {
			below++
		}
		last[wk] = n
		states[wk]++
	}
	busy, multi := 0, 0
	for wk, n := range want {
		switch {
		case n > busyThreshold:
			busy++
			if last[wk] != n {
				bad = append(bad, fmt.Sprintf("output %s@%d: last %d, want %d", wk.user, wk.start, last[wk], n))
			}
		case states[wk] > 0:
			bad = append(bad, fmt.Sprintf("output %s@%d: %d records for a window of %d clicks", wk.user, wk.start, states[wk], n))
		}
	}
	for _, n := range states {
		if n > 1 {
			multi++
		}
	}
	sort.Strings(bad)
	p.truth.Observed["windows"] = fmt.Sprintf("%d windows, %d with more than %d clicks; the output holds %d records for %d windows (%d windows with several states, %d records at or below the threshold); %d late clicks, %d skipped by Streams: %v",
		len(want), busy, busyThreshold, len(out), len(last), multi, below, len(lateRecs), len(late), sortedRecIDs(late))
	logf("app windows: %s", p.truth.Observed["windows"])
	if len(bad) > 0 {
		return nil, fmt.Errorf("app windows: the store or the output differs from the drill's count: %v", head(bad, 8))
	}
	return late, nil
}

// checkRoutesApp compares the routes app's outputs (big counts, rest sums) and its small table's
// changelog with the drill's fold of the branches.
func (r *scRun) checkRoutesApp(ctx context.Context, s state) error {
	p := r.multi.proc("routes")
	big, small, rest := routesAppFolds(r.truth.Records, nil)
	gotBig, _, err := r.lastLongs(ctx, s, "sr-big-customers")
	if err != nil {
		return err
	}
	bad := compareLongs(big, gotBig)
	restRecs, err := r.readAll(ctx, s, "sr-rest-totals")
	if err != nil {
		return err
	}
	gotRest := map[string]int64{}
	for _, rec := range restRecs {
		v, err := decodeJSONMap(rec.Value)
		if err != nil {
			return err
		}
		a, _ := v["amount"].(float64)
		gotRest[string(rec.Key)] = int64(a)
		if v["customer"] != string(rec.Key) || len(v) != 2 {
			bad = append(bad, fmt.Sprintf("rest %s: value %v", rec.Key, v))
		}
	}
	bad = append(bad, compareLongs(rest, gotRest)...)
	cl, err := r.readAll(ctx, s, smallChangelog)
	if err != nil {
		return err
	}
	gotSmall := map[string]map[string]any{}
	for _, rec := range cl {
		v, err := decodeJSONMap(rec.Value) // the value alone: the timestamp is the record's
		if err != nil {
			return fmt.Errorf("small changelog: %w", err)
		}
		gotSmall[string(rec.Key)] = v
	}
	moved := 0
	for k, w := range small {
		g := gotSmall[k]
		if g == nil || fmt.Sprint(g["amount"]) != fmt.Sprint(w["amount"]) {
			bad = append(bad, fmt.Sprintf("small %s: %v, want %v", k, g, w))
		}
	}
	if len(gotSmall) != len(small) {
		bad = append(bad, fmt.Sprintf("small: %d keys, want %d", len(gotSmall), len(small)))
	}
	for _, rec := range r.appRecs("routes") {
		if a := rec.Value["amount"].(int64); a >= 10 && small[rec.Key] != nil {
			moved++ // an update that left the small branch: the small table keeps the old version
		}
	}
	nBig, nSmall, nRest := 0, 0, 0
	for _, rec := range r.appRecs("routes") {
		switch a := rec.Value["amount"].(int64); {
		case a >= 100:
			nBig++
		case a < 10:
			nSmall++
		default:
			nRest++
		}
	}
	p.truth.Observed["branches"] = fmt.Sprintf("%d records took the first branch (amount >= 100), %d the second (< 10), %d the default; %d small orders updated into another branch keep their small version",
		nBig, nSmall, nRest, moved)
	logf("app routes: %s", p.truth.Observed["branches"])
	if len(bad) > 0 {
		return fmt.Errorf("app routes: the outputs or the small table differ from the drill's fold: %v", head(bad, 8))
	}
	return nil
}

// ---- kaudit ----

// appsDiff audits app p with its spec (variant "" or "-todo") and records the live audit for the
// log dirs (not the TODO variant's).
func (r *scRun) appsDiff(ctx context.Context, p *appProc, variant string) (kauditReport, error) {
	spec := filepath.Join(r.d.repo, "testdata", "apps", p.name+variant+".kaudit.yaml")
	dir := p.dir
	if variant != "" {
		dir = filepath.Join(p.dir, strings.TrimPrefix(variant, "-"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return kauditReport{}, err
		}
		b, err := os.ReadFile(filepath.Join(p.dir, "describe.txt"))
		if err != nil {
			return kauditReport{}, err
		}
		if err := os.WriteFile(filepath.Join(dir, "describe.txt"), b, 0o644); err != nil {
			return kauditReport{}, err
		}
	}
	rep, err := r.d.runDiffFor(ctx, dir, p.appID, spec)
	if err != nil {
		return rep, fmt.Errorf("app %s: %w", p.name, err)
	}
	if variant == "" {
		b, err := os.ReadFile(filepath.Join(dir, "kaudit.json"))
		if err != nil {
			return rep, err
		}
		r.lives = append(r.lives, &liveDiff{report: b, dir: dir, app: p.appID, spec: spec})
		p.truth.Kaudit = rep.summary()
		switch p.name {
		case "words", "enrich", "regroup", "cogroup": // their inputs cross partitions: a shard's come from every source partition
			if err := r.d.checkExchangeShards(ctx, dir, p.appID, spec, 2); err != nil {
				return rep, fmt.Errorf("app %s: %w", p.name, err)
			}
		}
	} else {
		p.truth.TODO = rep.summary()
	}
	return rep, nil
}

// expectFiltered fails unless the filtered findings count exactly want records of topic (a
// finding names one record, or counts several from its offset), none of them elsewhere, and
// none is of another severity than info.
func expectFiltered(rep kauditReport, topics []string, want []*inputRec) error {
	n := int64(0)
	for _, f := range rep.byCause("filtered") {
		if f.Severity != "info" {
			return fmt.Errorf("a filtered finding of severity %s: %s", f.Severity, f)
		}
		if !slices.Contains(topics, f.Topic) {
			return fmt.Errorf("a filtered finding on %s, want only %v: %s", f.Topic, topics, f)
		}
		n += max(f.Count, 1)
	}
	if n != int64(len(want)) {
		return fmt.Errorf("filtered findings count %d records, want the %d the filter rejected %v", n, len(want), head(sortedRecIDs(want), 6))
	}
	return nil
}

// expectUnjudged fails unless kaudit says incomplete (no loss) and its missing evidence names
// node.
func expectUnjudged(rep kauditReport, node string) error {
	if err := allErrs(expectVerdict(rep, "incomplete"), expectOnlyLossCauses(rep)); err != nil {
		return err
	}
	for _, m := range rep.Summary.Missing {
		if strings.Contains(m, node) {
			return nil
		}
	}
	return fmt.Errorf("the missing evidence does not name node %s: %v", node, head(rep.Summary.Missing, 4))
}

// expectLate fails unless the late findings name exactly the records Streams skipped, all info.
func expectLate(rep kauditReport, want []*inputRec) error {
	for _, f := range rep.byCause("late") {
		if f.Severity != "info" {
			return fmt.Errorf("a late finding of severity %s: %s", f.Severity, f)
		}
	}
	return expectRecords("late", rep.byCause("late"), want)
}

// captureApp captures app p's topics (every one: sources, outputs, internal) with its
// describe() text and the registry's schemas into p.dir/capture (testdata/apps/<app>/ holds one).
func (r *scRun) captureApp(ctx context.Context, p *appProc, s state) error {
	schemas := filepath.Join(r.dir, "schemas")
	if err := exportSchemas(ctx, r.d.regURL, schemas); err != nil {
		return err
	}
	capture := filepath.Join(p.dir, "capture")
	args := []string{"capture", "--app-id", p.appID, "--bootstrap-server", r.d.bootstrap, "--out", capture,
		"--topology", filepath.Join(p.dir, "describe.txt")}
	if p.name == "orders" {
		args = append(args, "--schemas", schemas)
	}
	for _, t := range append(append(append([]string(nil), p.sources...), p.outputs...), s.internal...) {
		args = append(args, "--topic", t)
	}
	code, stderr, err := r.d.runKaudit(ctx, p.dir, "capture", args...)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("app %s: kaudit capture exited %d: %s", p.name, code, lastLines(stderr, 5))
	}
	logf("app %s: captured into %s", p.name, capture)
	return nil
}

// auditCapture audits app p's capture offline and requires the live audit's report (verdict,
// findings, missing evidence).
func (r *scRun) auditCapture(ctx context.Context, p *appProc) error {
	out := filepath.Join(p.dir, "kaudit-snapshot.json")
	code, stderr, err := r.d.runKaudit(ctx, p.dir, "diff-snapshot", "diff", "--snapshot", filepath.Join(p.dir, "capture"),
		"--spec", filepath.Join(r.d.repo, "testdata", "apps", p.name+".kaudit.yaml"), "--format", "json", "--output", out)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("app %s: kaudit diff --snapshot exited %d without JSON: %s", p.name, code, lastLines(stderr, 5))
	}
	liveJSON, err := os.ReadFile(filepath.Join(p.dir, "kaudit.json"))
	if err != nil {
		return err
	}
	if err := compareReports(liveJSON, b, filepath.Join(p.dir, "kaudit-snapshot.compare.txt"), false); err != nil {
		return fmt.Errorf("app %s: kaudit diff --snapshot on its capture and the live audit: %w", p.name, err)
	}
	logf("app %s: its capture audits offline to the live report", p.name)
	return nil
}

func decodeJSONMap(b []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	return m, nil
}

// ---- the scenarios ----

// scenarioAppsClean: the four apps run together, input arrives while they run (caching off, so
// that the aborted transactions show on changelogs and outputs), each app is killed -9 while a
// transaction of it is open and restarted; late clicks come last. Nothing is lost: each app's
// outputs equal the drill's fold; kaudit says clean for each, with the TEST orders `filtered`
// and the skipped clicks `late` (info); the orders app audited with a spec that leaves its
// filter TODO is `incomplete` naming the node, never a loss.
func scenarioAppsClean(ctx context.Context, r *scRun) error {
	if err := r.appsSetup(ctx, fmt.Sprintf("purge.interval.ms=%d", largePurge), "cache.bytes=0"); err != nil {
		return err
	}
	procs := r.multi.procs
	expect := map[string]string{
		"orders":  "clean, no loss; filtered (info) counting exactly the TEST versions of so-orders (tag test, test-update), never dropped; with orders-todo.kaudit.yaml: incomplete naming KSTREAM-FILTER-0000000001, no loss",
		"words":   "clean, no loss",
		"windows": "clean, no loss; late (info) for exactly the clicks Streams logged as skipped (observed.windows)",
		"routes":  "clean, no loss",
		"enrich":  "clean, no loss; null-key (info) for exactly the orders with a null customer (tag null-key), each left out of both joins",
		"regroup": "clean, no loss",
		"cogroup": "clean, no loss; filtered (info) for exactly the views of 0 ms (tag zero-ms)",
		"fkjoin":  "incomplete, the missing evidence naming a KTABLE-FK-JOIN- node of fkjoin.describe.txt (the foreign-key join is recognised, not modelled), no loss",
	}
	for _, p := range procs {
		p.truth.Expect = append(p.truth.Expect, expect[p.name])
	}
	if err := r.startProcs(ctx, procs); err != nil {
		return err
	}
	clicks, late := genWindowsApp(1, 360)
	recs := interleave(genOrdersApp(1, 150), genWordsApp(1, 120), clicks, genRoutesApp(1, 160))
	// Input trickles in while the kills run (a kill needs an open transaction, and a restarted
	// app a few seconds of input), then goes fast.
	var killing sync.WaitGroup
	var mu sync.Mutex
	var killErrs []error
	killing.Add(len(procs))
	for i, p := range procs {
		go func() {
			defer killing.Done()
			time.Sleep(time.Duration(3+2*i) * time.Second)
			if err := r.killMidTransaction(ctx, p); err != nil {
				mu.Lock()
				killErrs = append(killErrs, err)
				mu.Unlock()
			}
		}()
	}
	killed := make(chan struct{})
	go func() { killing.Wait(); close(killed) }()
	// every app audited live while input trickles in and the kills run (AJ), with its spec and
	// with --app-id alone: never a loss or an anomaly, whatever is in flight or open
	running := make(chan error, 1)
	go func() {
		time.Sleep(4 * time.Second)
		running <- r.appsRunningAudits(ctx, procs)
	}()
	pause := func() time.Duration {
		select {
		case <-killed:
			return 10 * time.Millisecond
		default:
			return 250 * time.Millisecond
		}
	}
	// the z-apps' phases go out beside the other apps' input, as slowly while the kills run
	zErr := make(chan error, 1)
	go func() { zErr <- r.produceZPhases(ctx, genZApps(), 4, pause) }()
	prodErr := r.produceApps(ctx, recs, 6, pause)
	if err := <-zErr; prodErr == nil {
		prodErr = err
	}
	<-killed
	if prodErr != nil {
		return prodErr
	}
	if err := <-running; err != nil {
		return err
	}
	if err := allErrs(killErrs...); err != nil {
		var pe preconditionError
		for _, e := range killErrs {
			if errors.As(e, &pe) {
				return notInjected("%v", err)
			}
		}
		return err
	}
	return r.appsFinish(ctx, late, nil, true, func(ctx context.Context, states map[string]state, lateSkipped []*inputRec) error {
		for _, p := range procs {
			if err := r.captureApp(ctx, p, states[p.name]); err != nil {
				return err
			}
		}
		var errs []error
		for _, p := range procs {
			rep, err := r.appsDiff(ctx, p, "")
			if err != nil { // the other apps are still audited: the FAIL line names all that is wrong
				errs = append(errs, err)
				continue
			}
			_, infErr := r.appInferred(ctx, p, p.dir)
			errs = append(errs, prefixErr(p.name, infErr))
			if p.isZ() {
				errs = append(errs, prefixErr(p.name, r.expectZClean(p, rep, states[p.name])), r.auditCapture(ctx, p))
				continue
			}
			errs = append(errs, prefixErr(p.name, allErrs(expectVerdict(rep, "clean"), expectOnlyLossCauses(rep))))
			switch p.name {
			case "orders":
				errs = append(errs, prefixErr(p.name, expectFiltered(rep, []string{"so-orders"}, r.tagged("orders", tagTest, tagTestUpdate))))
			case "windows":
				errs = append(errs, prefixErr(p.name, expectLate(rep, lateSkipped)))
			}
			errs = append(errs, r.auditCapture(ctx, p))
		}
		o := r.multi.proc("orders")
		if todo, err := r.appsDiff(ctx, o, "-todo"); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, prefixErr("orders (TODO spec)", expectUnjudged(todo, o.todoNode)))
		}
		return allErrs(errs...)
	})
}

// appsRunningAudits audits each app live while it processes, with its spec and with --app-id
// alone (issue AJ): a loss or an anomaly there is a false one, since the scenario loses nothing.
func (r *scRun) appsRunningAudits(ctx context.Context, procs []*appProc) error {
	var errs []error
	for _, p := range procs {
		spec := filepath.Join(r.d.repo, "testdata", "apps", p.name+".kaudit.yaml")
		for _, args := range [][]string{{"--spec", spec, "--topology", filepath.Join(p.dir, "describe.txt")}, nil} {
			name := "running-app-id"
			if args != nil {
				name = "running-spec"
			}
			rep, err := r.guessLive(ctx, p, name, args...)
			if err == nil {
				err = expectNoLoss(rep)
			}
			errs = append(errs, prefixErr(p.name+" audited live while it runs ("+name+")", err))
		}
	}
	return allErrs(errs...)
}

// appsFinish waits until every app caught up, produces the late clicks, waits for the windows
// app, stops every app, records the ABORT markers and checks what each app did (skip: what the
// scenario's faults took away from the words and cogroup apps; exact: no cache, so that the
// regroup app's repartition records are known one by one); then runs audit.
func (r *scRun) appsFinish(ctx context.Context, late []*inputRec, skip func(*inputRec) bool, exact bool,
	audit func(ctx context.Context, states map[string]state, lateSkipped []*inputRec) error) error {
	procs := r.multi.procs
	if _, err := r.waitCaughtUp(ctx, procs); err != nil {
		return err
	}
	// late clicks: the windows app's stream time is ~12 minutes past their window's close
	if err := r.produceApps(ctx, late, len(late), nil); err != nil {
		return err
	}
	if _, err := r.waitCaughtUp(ctx, []*appProc{r.multi.proc("windows")}); err != nil {
		return err
	}
	if err := r.stopProcs(procs); err != nil {
		return err
	}
	states, err := r.observeAll(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range procs {
		errs = append(errs, r.checkDescribe(p))
		s := states[p.name]
		written := append(append([]string(nil), p.outputs...), s.internal...)
		aborts, err := r.d.countAborts(ctx, s, written)
		if err != nil {
			return err
		}
		p.truth.Observed["abort_markers"] = aborts
	}
	errs = append(errs, r.checkOrdersApp(ctx, states["orders"], nil), r.checkWordsApp(ctx, states["words"], skip),
		r.checkRoutesApp(ctx, states["routes"]), r.checkZApps(ctx, states, skip, exact))
	lateSkipped, err := r.checkWindowsApp(ctx, states["windows"])
	errs = append(errs, err)
	if err := allErrs(errs...); err != nil {
		return err
	}
	return audit(ctx, states, lateSkipped)
}

// tagged returns app's records with one of tags, consumed or not.
func (r *scRun) tagged(app string, tags ...string) []*inputRec {
	var out []*inputRec
	for _, rec := range r.appRecs(app) {
		if slices.Contains(tags, rec.Tag) {
			out = append(out, rec)
		}
	}
	return out
}

func prefixErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("app %s: %w", what, err)
}

// scenarioAppsFaults: the four apps process wave 1 (caching as the seed, the words app
// swallowing five lines) and stop; then, with every app down, the orders app's source loses
// the first ten unconsumed records of so-orders/0 (DeleteRecords past the committed offset),
// and the routes app, after a second wave with a slow stage 2, loses the first five committed
// unconsumed records of its fullest repartition partition. kaudit before any restart: orders
// retention-gap on exactly that range, TEST orders filtered; words dropped for exactly the
// swallowed lines' words (and incomplete, never loss, with a spec that leaves its
// flatMapValues a Processor API TODO); routes purged-before-commit in exactly that range;
// windows clean with its late clicks.
func scenarioAppsFaults(ctx context.Context, r *scRun) error {
	if err := r.appsSetup(ctx, fmt.Sprintf("purge.interval.ms=%d", largePurge)); err != nil {
		return err
	}
	words := r.multi.proc("words")
	words.props = append(words.props, "drop.keys="+strings.Join(swallowedLines, ","))
	words.truth.Expect = append(words.truth.Expect, "loss; only dropped, naming exactly each (line, word) copy of the swallowed lines (faults app-drop) on the line's source record, the word as key",
		"with words-todo.kaudit.yaml: incomplete naming KSTREAM-FLATMAPVALUES-0000000001, no loss")
	r.multi.proc("windows").truth.Expect = append(r.multi.proc("windows").truth.Expect, "clean, no loss; late (info) for exactly the clicks Streams logged as skipped")
	r.multi.proc("orders").truth.Expect = append(r.multi.proc("orders").truth.Expect, "filtered (info) counting exactly the consumed TEST versions of so-orders, never dropped")
	cogroup := r.multi.proc("cogroup")
	cogroup.props = append(cogroup.props, "drop.keys="+strings.Join(zSwallowedViews, ","))
	cogroup.truth.Expect = append(cogroup.truth.Expect, "loss; only dropped, naming exactly the swallowed views (faults app-drop); filtered (info) for exactly the views of 0 ms")
	r.multi.proc("fkjoin").truth.Expect = append(r.multi.proc("fkjoin").truth.Expect, "the missing evidence still names a KTABLE-FK-JOIN- node")
	if err := r.startProcs(ctx, r.multi.procs); err != nil {
		return err
	}
	clicks, late := genWindowsApp(1, 360)
	lines := genWordsApp(1, 120)
	var swallowed []*inputRec
	for _, l := range lines {
		if slices.Contains(swallowedLines, l.Key) {
			l.Tag = tagSwallowed
			swallowed = append(swallowed, l)
		}
	}
	zPhases := genZApps()
	var views []*inputRec
	for _, v := range flat(zPhases) {
		if v.App == "cogroup" && slices.Contains(zSwallowedViews, v.Key) {
			v.Tag = tagSwallowed
			views = append(views, v)
		}
	}
	zErr := make(chan error, 1)
	go func() { zErr <- r.produceZPhases(ctx, zPhases, 200, nil) }()
	prodErr := r.produceApps(ctx, interleave(genOrdersApp(1, 150), lines, clicks, genRoutesApp(1, 160)), 200, nil)
	if err := <-zErr; prodErr == nil {
		prodErr = err
	}
	if prodErr != nil {
		return prodErr
	}
	skip := func(rec *inputRec) bool { return rec.Tag == tagSwallowed }
	var rep map[string]kauditReport
	var lateSkipped []*inputRec
	var gap, purge fault
	var zf zFaults
	var cogroupState state
	var diffErrs []error // kaudit runs that gave no report: the other apps are still judged
	err := r.appsFinish(ctx, late, skip, false, func(ctx context.Context, states map[string]state, ls []*inputRec) error {
		lateSkipped = ls
		cogroupState = states["cogroup"]
		if err := checkSwallowedLines(words, swallowed); err != nil {
			return err
		}
		if err := checkSwallowedViews(cogroup, views); err != nil {
			return err
		}
		for _, v := range views {
			r.addFault(fault{Kind: "app-drop", Topic: v.Topic, Partition: v.Partition, From: v.Offset, To: v.Offset + 1, Keys: []string{*v.OrderID},
				Records: []string{recordID(v.Topic, v.Partition, v.Offset)}, Note: "cogroup: swallowed by the views' filter (returns false); source key " + v.Key})
		}
		zf.swallowed = views
		for _, l := range swallowed {
			var ws []string
			for _, w := range lineWords(l) {
				if !slices.Contains(ws, w) {
					ws = append(ws, w)
				}
			}
			sort.Strings(ws)
			r.addFault(fault{Kind: "app-drop", Topic: l.Topic, Partition: l.Partition, From: l.Offset, To: l.Offset + 1, Keys: ws,
				Note: "words: swallowed by the flatMapValues (returns no word); source key " + l.Key})
		}
		var err error
		if gap, err = r.injectRetentionGap(ctx); err != nil {
			return err
		}
		// the z-apps' faults; the regroup purge beside the routes purge
		if zf, err = r.injectZFaults(ctx, func() (err error) { purge, err = r.injectRoutesPurge(ctx); return err }); err != nil {
			return err
		}
		zf.swallowed = views
		rep = map[string]kauditReport{}
		for _, p := range r.multi.procs {
			// the evidence of the faults, kept with the results for a failure's post-mortem
			if err := r.captureApp(ctx, p, states[p.name]); err != nil {
				return err
			}
			if rep[p.name], err = r.appsDiff(ctx, p, ""); err != nil {
				diffErrs = append(diffErrs, err)
			}
			if _, err := r.appInferred(ctx, p, p.dir); err != nil {
				diffErrs = append(diffErrs, fmt.Errorf("app %s: %w", p.name, err))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	failed := func(app string) bool {
		for _, e := range diffErrs {
			if strings.HasPrefix(e.Error(), "app "+app+":") {
				return true
			}
		}
		return false
	}
	orders, routes, windows := rep["orders"], rep["routes"], rep["windows"]
	ordersState, err := r.multi.proc("orders").observe(ctx, r.d)
	if err != nil {
		return err
	}
	var filtered []*inputRec
	for _, rec := range r.tagged("orders", tagTest, tagTestUpdate) {
		// consumed, and still readable: DeleteRecords to the gap's end took every record below it
		if consumed(ordersState, rec) && (rec.Topic != gap.Topic || rec.Partition != gap.Partition || rec.Offset >= gap.To) {
			filtered = append(filtered, rec)
		}
	}
	errs := diffErrs
	if !failed("orders") {
		errs = append(errs, prefixErr("orders", allErrs(expectVerdict(orders, "loss"), expectOnlyLossCauses(orders, "retention-gap"),
			expectRange("retention-gap", orders.byCause("retention-gap"), gap.Topic, gap.Partition, gap.From, gap.To),
			expectFiltered(orders, []string{"so-orders"}, filtered))))
	}
	if !failed("words") {
		errs = append(errs, prefixErr("words", allErrs(expectVerdict(rep["words"], "loss"), expectOnlyLossCauses(rep["words"], "dropped"),
			expectWordCopies(rep["words"].byCause("dropped"), swallowed))))
	}
	if !failed("windows") {
		errs = append(errs, prefixErr("windows", allErrs(expectVerdict(windows, "clean"), expectOnlyLossCauses(windows), expectLate(windows, lateSkipped))))
	}
	if !failed("routes") {
		// a purged input may be one of two whose amounts add up alike (the sum
		// cannot tell which was applied): kaudit's undecided finding of the key,
		// unapplied with the candidates, counts it, naming a purged key
		errs = append(errs, prefixErr("routes", allErrs(expectVerdict(routes, "loss"), expectOnlyLossCauses(routes, "purged-before-commit", "unapplied"),
			expectPurgedRange(routes.byCause("purged-before-commit"), purge), expectPurgedKeys(routes.byCause("unapplied"), purge))))
	}
	for _, p := range r.multi.zProcs() {
		if failed(p.name) {
			continue
		}
		errs = append(errs, prefixErr(p.name, expectZFaults(p.name, rep[p.name], zf)))
		if p.name == "cogroup" {
			errs = append(errs, prefixErr(p.name, expectInfoRecords(rep[p.name], "filtered", consumedOf(cogroupState, withTag(r.appRecs("cogroup"), tagZeroMs)))))
		}
	}
	if todo, err := r.appsDiff(ctx, words, "-todo"); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, prefixErr("words (TODO spec)", expectUnjudged(todo, words.todoNode)))
	}
	errs = append(errs, r.appsFaultsAfterRestart(ctx, gap, purge, zf, swallowed))
	return allErrs(errs...)
}

// appsFaultsAfterRestart restarts every app of apps-faults, as on-call does first, waits until
// each has caught up (past every hole: a source's consumer reset to the log start, a repartition
// consumer past its purge), stops them and audits each again with the brokers' logs: the same
// losses, named from the group's commit history where the cut no longer shows them, or (a table
// judged by key) the purged inputs' keys unapplied; never a loss elsewhere.
func (r *scRun) appsFaultsAfterRestart(ctx context.Context, gap, purge fault, zf zFaults, swallowed []*inputRec) error {
	procs := r.multi.procs
	if err := r.startProcs(ctx, procs); err != nil {
		return err
	}
	if _, err := r.waitCaughtUp(ctx, procs); err != nil {
		return err
	}
	if err := r.stopProcs(procs); err != nil {
		return err
	}
	// the live audits before the restart no longer describe the cluster: the brokers' log dirs
	// must repeat the audits after it (with the same brokers' logs)
	for _, l := range r.lives {
		l.done = true
	}
	var errs []error
	for _, p := range procs {
		dir := filepath.Join(p.dir, "after-restart")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(p.dir, "describe.txt"))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "describe.txt"), b, 0o644); err != nil {
			return err
		}
		// the evidence after the restart (the commit history with it), for a failure's post-mortem
		if code, stderr, err := r.d.runKaudit(ctx, dir, "capture", "capture", "--app-id", p.appID, "--bootstrap-server", r.d.bootstrap,
			"--out", filepath.Join(dir, "capture"), "--topology", filepath.Join(dir, "describe.txt")); err != nil || code != 0 {
			errs = append(errs, fmt.Errorf("app %s after the restart: kaudit capture exited %d: %v %s", p.name, code, err, lastLines(stderr, 3)))
		}
		spec := filepath.Join(r.d.repo, "testdata", "apps", p.name+".kaudit.yaml")
		rep, err := r.d.runDiffFor(ctx, dir, p.appID, spec, r.brokerLogArgs()...)
		if err != nil {
			errs = append(errs, fmt.Errorf("app %s after the restart: %w", p.name, err))
			continue
		}
		p.truth.Observed["kaudit_after_restart"] = rep.summary()
		if _, err := r.appInferred(ctx, p, dir, r.brokerLogArgs()...); err != nil {
			errs = append(errs, fmt.Errorf("app %s after the restart: %w", p.name, err))
		}
		if b, err := os.ReadFile(filepath.Join(dir, "kaudit.json")); err == nil {
			r.lives = append(r.lives, &liveDiff{extra: r.brokerLogArgs(), report: b, dir: dir, app: p.appID, spec: spec})
		}
		var err2 error
		switch p.name {
		case "orders":
			err2 = allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "retention-gap"),
				expectRange("retention-gap", rep.byCause("retention-gap"), gap.Topic, gap.Partition, gap.From, gap.To))
		case "words":
			err2 = allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "dropped"), expectWordCopies(rep.byCause("dropped"), swallowed))
		case "windows":
			err2 = allErrs(expectVerdict(rep, "clean"), expectOnlyLossCauses(rep))
		case "routes":
			// the tables are judged by key: the purged inputs' effect is missing from their stores
			err2 = allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "purged-before-commit", "unapplied"),
				expectPurgedKeys(rep.byCause("unapplied"), purge))
		default:
			err2 = expectZFaults(p.name, rep, zf)
		}
		errs = append(errs, prefixErr(p.name+" after the restart", err2))
	}
	return allErrs(errs...)
}

// checkSwallowedViews fails unless the cogroup app's logs say its filter swallowed each view.
func checkSwallowedViews(p *appProc, views []*inputRec) error {
	logs, err := p.appLogs()
	if err != nil {
		return err
	}
	for _, v := range views {
		if !strings.Contains(logs, "swallowed zg-views record key="+v.Key) {
			return fmt.Errorf("app cogroup: its log does not show view %s swallowed", v.Key)
		}
	}
	return nil
}

// checkSwallowedLines fails unless the words app's logs say it swallowed each line.
func checkSwallowedLines(p *appProc, lines []*inputRec) error {
	var all strings.Builder
	for i := 1; i <= p.truth.Runs; i++ {
		b, err := os.ReadFile(filepath.Join(p.dir, fmt.Sprintf("app-%d.log", i)))
		if err != nil {
			return err
		}
		all.Write(b)
	}
	for _, l := range lines {
		if !strings.Contains(all.String(), "swallowed sw-lines record key="+l.Key) {
			return fmt.Errorf("app words: its log does not show line %s swallowed", l.Key)
		}
	}
	return nil
}

// expectWordCopies fails unless the findings name exactly each swallowed line's words: one
// (line, word) pair per distinct word of each line, on the line's source record, the word as
// the key.
func expectWordCopies(fs []finding, lines []*inputRec) error {
	want := map[string]bool{}
	for _, l := range lines {
		for _, w := range lineWords(l) {
			want[recordID(l.Topic, l.Partition, l.Offset)+" "+w] = true
		}
	}
	got := map[string]bool{}
	for _, f := range fs {
		for o := f.Offset; o < f.Offset+max(f.Count, 1); o++ {
			got[recordID(f.Topic, f.Partition, o)+" "+f.keyString()] = true
		}
	}
	var missing, extra []string
	for k := range want {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		return fmt.Errorf("dropped findings: %d of the %d (line, word) copies not named %v, %d others named %v",
			len(missing), len(want), head(missing, 6), len(extra), head(extra, 6))
	}
	return nil
}

// expectPurgedRange fails unless there are purged-before-commit findings and each names the purged
// range of f or one of its keys.
func expectPurgedRange(fs []finding, f fault) error {
	if len(fs) == 0 {
		return errors.New("no purged-before-commit finding")
	}
	for _, x := range fs {
		inRange := x.Topic == f.Topic && x.Partition == f.Partition && x.Offset < f.To && x.Offset+max(x.Count, 1) > f.From
		if !inRange && !slices.Contains(f.Keys, x.keyString()) {
			return fmt.Errorf("purged-before-commit finding outside the fault %s/%d [%d, %d) keys %v: %s", f.Topic, f.Partition, f.From, f.To, f.Keys, x)
		}
	}
	return nil
}

// expectPurgedKeys fails unless each finding names a key of the purged range.
func expectPurgedKeys(fs []finding, f fault) error {
	for _, x := range fs {
		if !slices.Contains(f.Keys, x.keyString()) {
			return fmt.Errorf("%s finding of a key the purge of %s/%d [%d, %d) did not hold (keys %v): %s", x.Cause, f.Topic, f.Partition, f.From, f.To, f.Keys, x)
		}
	}
	return nil
}

// injectRetentionGap: with the orders app down, 60 more orders arrive and the first ten
// unconsumed records of so-orders/0 are deleted.
func (r *scRun) injectRetentionGap(ctx context.Context) (fault, error) {
	var wave2 []*inputRec
	for _, rec := range genOrdersApp(2, 60) {
		if rec.Topic == "so-orders" {
			wave2 = append(wave2, rec)
		}
	}
	return r.injectSourceGap(ctx, r.multi.proc("orders"), wave2, "so-orders", 0, 10)
}

// injectSourceGap: with app p down, wave2 arrives and the first k unconsumed records of
// topic/part are deleted (DeleteRecords past the group's committed offset).
func (r *scRun) injectSourceGap(ctx context.Context, p *appProc, wave2 []*inputRec, topic string, part int32, k int64) (fault, error) {
	if err := r.produceApps(ctx, wave2, 200, nil); err != nil {
		return fault{}, err
	}
	s, err := p.observe(ctx, r.d)
	if err != nil {
		return fault{}, err
	}
	c, _ := s.committed.get(topic, part)
	hw, _ := s.hw.get(topic, part)
	if hw-c < k {
		return fault{}, fmt.Errorf("%s/%d has only %d unconsumed records, need %d", topic, part, hw-c, k)
	}
	var hit []*inputRec
	for _, rec := range r.appRecs(p.name) {
		if rec.Topic == topic && rec.Partition == part && rec.Offset >= c && rec.Offset < c+k {
			hit = append(hit, rec)
		}
	}
	f := fault{Kind: "delete-records", Topic: topic, Partition: part, From: c, To: c + k, Keys: orderIDs(hit), Records: sortedRecIDs(hit),
		Note: p.name + ": DeleteRecords past the group's committed offset while the app is down"}
	r.addFault(f)
	p.truth.Expect = append(p.truth.Expect, fmt.Sprintf("loss; only retention-gap, covering exactly %s/%d [%d, %d)", topic, part, c, c+k))
	return f, r.d.deleteRecords(ctx, topic, part, c+k)
}

// injectRoutesPurge: the routes app gets a second wave and runs with a slow stage 2 until stage
// 1 committed the whole source, then stops; the first five committed unconsumed records of its
// fullest repartition partition are deleted.
func (r *scRun) injectRoutesPurge(ctx context.Context) (fault, error) {
	return r.injectRepartitionPurge(ctx, r.multi.proc("routes"), genRoutesApp(2, 200), nil)
}

// injectRepartitionPurge: app p gets wave2 and runs with a slow stage 2 until stage 1 committed
// the whole source, then stops; the first five committed unconsumed records of its fullest
// repartition partition are deleted. The fault's keys are the deleted records' keys, and what
// more keysOf (when not nil) names of each (the regroup app: the product in the Change).
func (r *scRun) injectRepartitionPurge(ctx context.Context, p *appProc, wave2 []*inputRec, keysOf func(*kgo.Record) []string) (fault, error) {
	if err := r.produceApps(ctx, wave2, 200, nil); err != nil {
		return fault{}, err
	}
	if err := r.startProcs(ctx, []*appProc{p}, "slow.repartition.ms=25", "max.poll.records=20"); err != nil {
		return fault{}, err
	}
	deadline := time.Now().Add(120 * time.Second)
	for {
		s, err := p.observe(ctx, r.d)
		if err != nil {
			return fault{}, err
		}
		var c, hw int64
		for _, t := range p.sources {
			for part, h := range s.hw[t] {
				hw += h
				v, _ := s.committed.get(t, part)
				c += v
			}
		}
		if c >= hw {
			logf("app %s: source committed %d of %d: stopping the app", p.name, c, hw)
			break
		}
		if time.Now().After(deadline) || !p.run.alive() {
			return fault{}, fmt.Errorf("app %s: stage 1 did not commit the source within 120s (%d of %d)", p.name, c, hw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := r.stopProcs([]*appProc{p}); err != nil {
		return fault{}, err
	}
	s, err := p.observe(ctx, r.d)
	if err != nil {
		return fault{}, err
	}
	type cand struct {
		topic string
		part  int32
		c     int64
		data  []*kgo.Record
	}
	var best cand
	for _, t := range s.repartitions() {
		for part, lso := range s.lso[t] {
			c, ok := s.committed.get(t, part)
			if !ok || c == 0 {
				return fault{}, fmt.Errorf("%s/%d has no committed offset after wave 1", t, part)
			}
			recs, err := r.d.readPartition(ctx, t, part, c, lso, true)
			if err != nil {
				return fault{}, err
			}
			cd := cand{topic: t, part: part, c: c}
			for _, rec := range recs {
				if !rec.Attrs.IsControl() {
					cd.data = append(cd.data, rec)
				}
			}
			logf("%s/%d: committed %d, lso %d, %d committed data records unconsumed", t, part, c, lso, len(cd.data))
			if len(cd.data) > len(best.data) {
				best = cd
			}
		}
	}
	const n = 5
	if len(best.data) < n {
		return fault{}, notInjected("no %s repartition partition holds %d committed unconsumed records (best %d)", p.name, n, len(best.data))
	}
	set := map[string]bool{}
	for _, rec := range best.data[:n] {
		set[string(rec.Key)] = true
		if keysOf != nil {
			for _, k := range keysOf(rec) {
				set[k] = true
			}
		}
	}
	to := best.data[n-1].Offset + 1
	f := fault{Kind: "delete-records", Topic: best.topic, Partition: best.part, From: best.c, To: to, Keys: keys(set),
		Note: p.name + ": DeleteRecords on a repartition topic past the group's committed offset while the app is down"}
	r.addFault(f)
	p.truth.Expect = append(p.truth.Expect, fmt.Sprintf("loss; only purged-before-commit, each naming %s/%d [%d, %d) or one of its keys %v", f.Topic, f.Partition, f.From, f.To, f.Keys))
	return f, r.d.deleteRecords(ctx, best.topic, best.part, to)
}
