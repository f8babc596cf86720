package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// scenario is one fault drill: a fresh cluster, input, a fault, kaudit, checks.
type scenario struct {
	name    string
	about   string
	brokers int
	run     func(ctx context.Context, s *scRun) error
	// streams is the Kafka Streams version of the app ("": the broker's); partitions of each
	// source topic (0: numPartitions).
	streams    string
	partitions int32
	attempts   int // runs while the fault's preconditions do not happen (0: 1)
	// eos: the scenario runs Kafka's own EOS system-test app (eos.go) instead of the drill's
	// app: its own topics, application id EosTest and spec testdata/eos/eos.kaudit.yaml.
	eos bool
	// apps: the scenario runs the apps of StepsApps.java (steps.go) and ZApps.java (zapps.go),
	// each on its own topics, each audited with its spec in testdata/apps/; or FormatsApp's
	// (formats.go): the scenario creates its apps' topics.
	apps bool
	// smoke: the scenario runs Kafka's own smoke system-test app (smoke.go): SmokeTestClient
	// and SmokeTestDriver, application id SmokeTest, spec testdata/smoke/smoke.kaudit.yaml.
	smoke bool
	// examples: the scenario runs one of Kafka's own example apps (the kafka-streams-examples
	// jar, built with the system-test apps by testdata/kafka/eos/pom.xml).
	examples bool
	// captured: the scenario audits its capture offline against the live audit (as the log
	// dirs would be), so the brokers keep running and the next scenario reuses them (a
	// 3-broker cluster costs 10 s to stop and 20-50 s to start on the shared 2 cores).
	captured bool
}

var scenarios = []scenario{
	{name: "clean", about: "the app killed -9 twice mid-transaction and restarted: no loss", brokers: 1, run: scenarioClean, attempts: 3},
	{name: "retention-gap", about: "source records deleted past the committed offset while the app is down", brokers: 1, run: scenarioRetentionGap},
	{name: "purged-before-commit", about: "repartition records deleted past the committed offset while the app is down (KAFKA-17635)", brokers: 1, run: scenarioPurgedBeforeCommit, attempts: 2},
	{name: "purge-unjudged", about: "payments lose records to retention in an earlier incident (their sum table judged by presence only), then every repartition topic is purged past the committed offset (KAFKA-17635's effect): all three ranges found, the payments' too", brokers: 1, run: scenarioPurgeUnjudged, attempts: 2},
	{name: "repartition-uncommitted", about: "the app killed -9 while its second stage has committed nothing on repartition partitions that hold copies: in flight under Streams' earliest reset, clean, and clean after the restart", brokers: 1, run: scenarioRepartitionUncommitted, attempts: 2},
	{name: "dropped", about: "the app swallows chosen records before selectKey; repartition topics not purged", brokers: 1, run: scenarioDropped},
	{name: "dropped-purged", about: "the app swallows chosen records; repartition purged every 30 s (Streams' default)", brokers: 1, run: scenarioDroppedPurged},
	{name: "dropped-sum", about: "the app swallows chosen payments (the sum(amount) table); repartition purged every 30 s", brokers: 1, run: scenarioDroppedSum},
	{name: "dropped-spread", about: "orders keyed off their orderId (versions in different partitions); the last version of some swallowed; purge on", brokers: 1, run: scenarioDroppedSpread},
	{name: "offsets-forward", about: "the group's offsets moved forward while the app is down", brokers: 1, run: scenarioOffsetsForward},
	{name: "state-wipe", about: "one store's RocksDB dir deleted under a forged .checkpoint (KAFKA-16017)", brokers: 1, run: scenarioStateWipe},
	{name: "outage", about: "every broker killed -9 during processing, restarted after the outage (the seed)", brokers: 1, run: scenarioOutage},
	{name: "outage-defaults", about: "the outage (75 s) with the clients' max.block.ms of 60 s, as the seed ran before its fix", brokers: 1, run: scenarioOutageDefaults},
	{name: "kafka-17635", about: "Streams 3.6.2 purges repartition records it consumed but did not commit during a rebalance, then is fenced (KAFKA-17635, for real)", brokers: 1, run: scenarioKafka17635, streams: "3.6.2", partitions: 4, attempts: 3},
	{name: "kafka-17635-control", about: "the KAFKA-17635 steps on Streams 3.7.2 (fixed): fenced, nothing purged past the commit, no loss", brokers: 1, run: scenarioKafka17635Control, streams: "3.7.2", partitions: 4, attempts: 3},
	{name: "kafka-16017", about: "Streams 3.6.1 closes a corrupted task cleanly mid-restoration and checkpoints its last written offset (KAFKA-16017, for real)", brokers: 1, run: scenarioKafka16017, streams: "3.6.1", partitions: 4, attempts: 3},
	{name: "kafka-16017-control", about: "the KAFKA-16017 steps on Streams 3.6.2 (fixed): the checkpoint holds the restored offset, no loss", brokers: 1, run: scenarioKafka16017Control, streams: "3.6.2", partitions: 4, attempts: 3},
	{name: "outage-rf3", about: "the seed's cluster (3 brokers, RF 3, min ISR 2): every broker killed -9 during processing", brokers: 3, run: scenarioOutage},
	{name: "unclean", about: "unclean leader election on 3 brokers truncates wave 2; kaudit diff against a capture", brokers: 3, run: scenarioUnclean},
	{name: "apps-clean", about: "eight apps, four with stateless steps (filter, mapValues, flatMapValues, windowed filter, merge, split), four with stateful shapes (stream-table joins, KTable groupBy with a subtractor, cogroup, a foreign-key join), killed -9 mid-transaction and restarted: no loss", brokers: 1, run: scenarioAppsClean, apps: true, attempts: 2},
	{name: "apps-faults", about: "the eight apps with one fault each: source retention gaps, a swallowing flatMapValues and filter, repartition purges past the commit; declared filters filtered, never dropped; audited again after every app restarted", brokers: 1, run: scenarioAppsFaults, apps: true, attempts: 2},
	{name: "wordcount", about: "Kafka's own WordCountDemo (kafka-streams-examples), unchanged, at-least-once: clean with the spec and with --app-id alone; killed -9 mid-input and restarted: counts again, never a loss", brokers: 1, run: scenarioWordCount, examples: true, captured: true},
	{name: "formats", about: "Confluent's Python client writes Protobuf, JSON Schema and Avro; Kafka Streams apps fold the Protobuf and the JSON Schema orders (a Java serde writing the Python serializer's bytes): clean, then a retention gap, each live, from a capture and from the log dirs, with the spec and with --app-id alone", brokers: 1, run: scenarioFormats, apps: true},
	{name: "guess-apps", about: "three apps whose shapes --app-id alone must guess (a filter on a field and a Math.round mapValues before selectKey, a parity filter on Integer values with null keys re-keyed to a constant, a named store): clean live, from a capture with and without the topology, and while input arrives; a retention gap found exactly, before and after the restart", brokers: 1, run: scenarioGuessApps},
	{name: "wordcount-eos", about: "WordCountDemo under exactly_once_v2 with the cache off on 3 partitions, its spec written from its code: 1,500 lines clean; a retention gap while it is down found exactly, before and after the restart, never a duplicate", brokers: 1, run: scenarioWordCountEOS, examples: true},
	{name: "eos-clean", about: "Kafka's EosTestClient and EosTestDriver (kafka-streams test jar): generate with kill -9 restarts of the client; ALL-RECORDS-DELIVERED and clean", brokers: 3, run: scenarioEOSClean, eos: true},
	{name: "eos-repartition-deleted", about: "EosTestClient: records of the user topic repartition deleted past the group's committed offset while the client is down", brokers: 3, run: scenarioEOSRepartitionDeleted, eos: true, attempts: 2},
	{name: "eos-offsets-forward", about: "EosTestClient: the group's committed offset on one data partition moved forward while the client is down", brokers: 3, run: scenarioEOSOffsetsForward, eos: true},
	{name: "eos-wiped-store", about: "EosTestClient: one task's sum store wiped under a forged .checkpoint while the client is down, then more input", brokers: 3, run: scenarioEOSWipedStore, eos: true},
	{name: "smoke-clean", about: "Kafka's SmokeTestClient and SmokeTestDriver (kafka-streams test jar): generate with kill -9 restarts of the client; SUCCESS and no loss", brokers: 3, run: scenarioSmokeClean, smoke: true, captured: true},
	{name: "smoke-faults", about: "SmokeTestClient: records of the KTable#groupBy repartition topic (tagg's) deleted past the group's committed offset while the client is down", brokers: 3, run: scenarioSmokeFaults, smoke: true, attempts: 3},
}

func scenarioNames() []string {
	var out []string
	for _, s := range scenarios {
		out = append(out, s.name)
	}
	return out
}

func scenarioByName(n string) (scenario, bool) {
	for _, s := range scenarios {
		if s.name == n {
			return s, true
		}
	}
	return scenario{}, false
}

// inferredScenarios are the scenarios whose capture is also audited with the spec kaudit init
// drafts from it (issue L): every one (the app and its hand-written spec drill/kaudit.yaml are
// the same in all).
var inferredScenarios = map[string]bool{"clean": true, "retention-gap": true, "purged-before-commit": true, "dropped": true,
	"dropped-purged": true, "dropped-sum": true, "dropped-spread": true, "offsets-forward": true, "state-wipe": true,
	"outage": true, "outage-defaults": true, "outage-rf3": true, "unclean": true, "kafka-17635": true, "kafka-17635-control": true,
	"kafka-16017": true, "kafka-16017-control": true}

// run is the state of one scenario run.
type scRun struct {
	d        *drill
	dir      string // results/<scenario>
	stateDir string // the app's state.dir
	truth    truth
	app      *appRun
	live     *liveDiff   // the last live kaudit diff, for the log-dir audit (logdirs.go)
	lives    []*liveDiff // more live audits the log dirs must repeat (the apps-* scenarios)
	apps     int
	streams  string    // the app's Kafka Streams version ("": the broker's)
	extra    []*appRun // more instances of the app (multi-instance scenarios), killed at the end
	eos      *eosRun   // the eos scenarios' JVMs and observations (eos.go)
	smoke    *smokeRun // the smoke scenarios' JVMs and observations (smoke.go)
	multi    *appsRun  // the apps-* scenarios' apps (steps.go)
}

// auditApp is the application id kaudit audits in this scenario.
func (r *scRun) auditApp() string {
	if r.eos != nil {
		return eosAppID
	}
	if r.smoke != nil {
		return smokeAppID
	}
	return appID
}

// auditSpec is the spec kaudit audits with in this scenario.
func (r *scRun) auditSpec() string {
	if r.eos != nil {
		return filepath.Join(r.d.repo, "testdata", "eos", "eos.kaudit.yaml")
	}
	if r.smoke != nil {
		return filepath.Join(r.d.repo, "testdata", "smoke", "smoke.kaudit.yaml")
	}
	return filepath.Join(r.d.root, "drill", "kaudit.yaml")
}

// preconditionError says that a scenario's fault did not happen (a race Streams did not
// lose): the attempt proves nothing either way and is retried, never passed.
type preconditionError struct{ error }

func notInjected(format string, args ...any) error {
	return preconditionError{fmt.Errorf(format, args...)}
}

// runScenario runs sc, again (up to sc.attempts in all) while its preconditions did not happen.
func (d *drill) runScenario(ctx context.Context, sc scenario) error {
	n := max(sc.attempts, 1)
	for attempt := 1; ; attempt++ {
		err := d.runAttempt(ctx, sc, attempt)
		var pe preconditionError
		if !errors.As(err, &pe) {
			return err
		}
		if attempt == n {
			return fmt.Errorf("the fault's preconditions did not happen in %d attempts (last: %w)", n, err)
		}
		logf("attempt %d of %d: the fault's preconditions did not happen (%v); retrying", attempt, n, err)
	}
}

func (d *drill) runAttempt(ctx context.Context, sc scenario, attempt int) (err error) {
	r := &scRun{d: d, dir: filepath.Join(d.o.work, "results", sc.name), stateDir: filepath.Join(d.o.work, "state", sc.name)}
	r.truth.Scenario = sc.name
	r.truth.Attempt = attempt
	for _, p := range []string{r.dir, r.stateDir} {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("clear %s: %w", p, err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	defer func() {
		if r.app != nil {
			r.app.kill9()
		}
		for _, a := range r.extra {
			a.kill9()
		}
		if r.eos != nil {
			r.eos.kill()
		}
		if r.smoke != nil {
			r.smoke.kill()
		}
		if r.multi != nil {
			r.multi.killAll()
		}
		if werr := writeJSON(filepath.Join(r.dir, "truth.json"), r.truth); werr != nil && err == nil {
			err = werr
		}
	}()
	reused := false
	if d.brokers == sc.brokers {
		if rerr := d.resetCluster(ctx); rerr != nil {
			logf("reset the running cluster: %v; starting a fresh one", rerr)
		} else {
			reused = true
			logf("reusing the running %d-broker cluster (group and topics deleted)", d.brokers)
		}
	}
	if !reused {
		if err := d.freshCluster(ctx, sc.brokers); err != nil {
			return err
		}
	}
	parts := sc.partitions
	if parts == 0 {
		parts = numPartitions
	}
	r.streams = sc.streams
	if sc.eos {
		if err := r.eosSetup(ctx); err != nil {
			return err
		}
	} else if sc.smoke {
		if err := r.smokeSetup(ctx); err != nil {
			return err
		}
	} else if sc.apps {
		// the scenario creates its apps' topics (appsSetup)
	} else if err := d.createTopics(ctx, parts); err != nil {
		return err
	}
	if err := sc.run(ctx, r); err != nil {
		return err
	}
	if inferredScenarios[sc.name] && d.o.inferred {
		// issue L: the spec kaudit init drafts from the evidence alone finds what the hand-written one does
		if err := r.auditInferred(ctx); err != nil {
			return err
		}
	}
	if sc.captured {
		return nil
	}
	// issue P: the last live audit again from the stopped brokers' log dirs; the cluster
	// stays down and the next scenario starts a fresh one
	return r.auditLogDirs(ctx)
}

// startApp starts one more JVM of the app and waits until it is RUNNING.
func (r *scRun) startApp(ctx context.Context, o appOpts) error {
	if r.app != nil && r.app.alive() {
		return fmt.Errorf("an app run is still alive")
	}
	r.apps++
	if o.streams == "" {
		o.streams = r.streams
	}
	a, err := r.d.startApp(ctx, r.dir, r.stateDir, o, r.apps)
	if err != nil {
		return err
	}
	r.app = a
	t0 := time.Now()
	if err := a.waitRunning(ctx, 120*time.Second); err != nil {
		return err
	}
	logf("app run %d RUNNING after %s", r.apps, time.Since(t0).Round(100*time.Millisecond))
	return nil
}

func (r *scRun) stopApp() error {
	if r.app == nil {
		return nil
	}
	t0 := time.Now()
	err := r.app.stop()
	logf("app run %d stopped in %s", r.apps, time.Since(t0).Round(100*time.Millisecond))
	r.app = nil
	return err
}

func (r *scRun) produce(ctx context.Context, recs []*inputRec, chunk int, pause time.Duration) error {
	if err := r.d.produce(ctx, recs, chunk, pause); err != nil {
		return err
	}
	r.truth.Records = append(r.truth.Records, recs...)
	return nil
}

// wave1 is every scenario's baseline input: 300 orders (a third updated), payments (some
// doubled, some for unknown orders, three with a null orderId) and shipments.
var wave1 = waveSpec{wave: 1, orders: 300, updates: true, payments: true, shipments: true, nullKeys: 3}

// baseline produces wave 1, runs the app until it has processed and committed everything, and
// stops it cleanly.
func (r *scRun) baseline(ctx context.Context, o appOpts) (state, error) {
	if err := r.produce(ctx, genWave(wave1), 200, 0); err != nil {
		return state{}, err
	}
	if err := r.startApp(ctx, o); err != nil {
		return state{}, err
	}
	t0 := time.Now()
	s, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second)
	if err != nil {
		return s, err
	}
	logf("app caught up with %d input records in %s", len(r.truth.Records), time.Since(t0).Round(100*time.Millisecond))
	return s, r.stopApp()
}

// checkOutput compares the output topic with the drill's own fold of the input (skip: records
// a fault removed) and returns the keys whose output is missing, stale or unexpected.
func (r *scRun) checkOutput(ctx context.Context, s state, skip func(*inputRec) bool) ([]string, error) {
	want := expectedOutput(r.truth.Records, skip)
	got, err := r.d.lastValues(ctx, s, topicOutput)
	if err != nil {
		return nil, err
	}
	var bad []string
	for k, w := range want {
		g, ok := got[k]
		if !ok || !sameValue(w, g) {
			bad = append(bad, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	logf("output check: %d keys expected, %d present, %d differ %v", len(want), len(got), len(bad), head(bad, 10))
	return bad, nil
}

func sameValue(want, got map[string]any) bool {
	for _, f := range []string{"orderId", "customer", "amount", "status", "paid", "carrier"} {
		if fmt.Sprint(want[f]) != fmt.Sprint(got[f]) {
			return false
		}
	}
	return true
}

func head(l []string, n int) []string {
	if len(l) > n {
		return append(l[:n:n], "…")
	}
	return l
}

// addFault records a fault in the ground truth.
func (r *scRun) addFault(f fault) {
	if r.multi != nil { // the apps-* scenarios inject some faults side by side
		r.multi.mu.Lock()
		defer r.multi.mu.Unlock()
	}
	sort.Strings(f.Keys)
	r.truth.Faults = append(r.truth.Faults, f)
	if f.Topic == "" {
		logf("fault %s: %d keys %v", f.Kind, len(f.Keys), head(f.Keys, 10))
		return
	}
	logf("fault %s on %s/%d [%d, %d): %d keys %v", f.Kind, f.Topic, f.Partition, f.From, f.To, len(f.Keys), head(f.Keys, 10))
}

// recordsIn returns the drill's records of topic/p in [from, to).
func (r *scRun) recordsIn(topic string, p int32, from, to int64) []*inputRec {
	var out []*inputRec
	for _, rec := range r.truth.Records {
		if rec.Topic == topic && rec.Partition == p && rec.Offset >= from && rec.Offset < to {
			out = append(out, rec)
		}
	}
	return out
}

func orderIDs(recs []*inputRec) []string {
	set := map[string]bool{}
	for _, r := range recs {
		if r.OrderID != nil {
			set[*r.OrderID] = true
		}
	}
	return keys(set)
}

func keys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- expectations on kaudit's report ----

func expectVerdict(rep kauditReport, want string) error {
	if rep.Summary.Verdict != want {
		return fmt.Errorf("verdict %q, want %q (%s)", rep.Summary.Verdict, want, rep.summary())
	}
	return nil
}

// expectOnlyLossCauses fails on any loss finding whose cause is not allowed.
func expectOnlyLossCauses(rep kauditReport, allowed ...string) error {
	var bad []string
	for _, f := range rep.loss() {
		ok := false
		for _, a := range allowed {
			ok = ok || f.Cause == a
		}
		if !ok {
			bad = append(bad, f.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d unexpected loss findings (allowed causes %v): %v", len(bad), allowed, head(bad, 5))
	}
	return nil
}

// expectKeys fails unless the findings name exactly the keys want.
func expectKeys(what string, fs []finding, want []string) error {
	got := map[string]bool{}
	for _, f := range fs {
		got[f.keyString()] = true
	}
	if g := keys(got); strings.Join(g, ",") != strings.Join(want, ",") {
		return fmt.Errorf("%s findings name keys %v, want %v", what, head(g, 12), head(want, 12))
	}
	return nil
}

// expectRange fails unless the findings on topic/p cover exactly the offsets [from, to), each
// finding covering [offset, offset+max(count,1)).
func expectRange(what string, fs []finding, topic string, p int32, from, to int64) error {
	covered := map[int64]bool{}
	for _, f := range fs {
		if f.Topic != topic || f.Partition != p {
			return fmt.Errorf("%s finding on %s/%d, want only %s/%d: %s", what, f.Topic, f.Partition, topic, p, f)
		}
		for o := f.Offset; o < f.Offset+max(f.Count, 1); o++ {
			covered[o] = true
		}
	}
	for o := from; o < to; o++ {
		if !covered[o] {
			return fmt.Errorf("%s findings do not cover offset %d of %s/%d [%d, %d)", what, o, topic, p, from, to)
		}
		delete(covered, o)
	}
	if len(covered) > 0 {
		return fmt.Errorf("%s findings cover %d offsets outside %s/%d [%d, %d)", what, len(covered), topic, p, from, to)
	}
	return nil
}

// allErrs joins every failed expectation, so a FAIL line names all that is wrong at once.
func allErrs(errs ...error) error {
	var bad []string
	for _, e := range errs {
		if e != nil {
			bad = append(bad, e.Error())
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return errors.New(strings.Join(bad, "; "))
}
