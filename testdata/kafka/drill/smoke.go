package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Issue Z: Kafka's own smoke system-test app, run from the kafka-streams test jar
// (testdata/kafka/eos/pom.xml builds the classpath) as streams_smoke_test.py runs it:
//
//	java -cp … org.apache.kafka.streams.tests.StreamsSmokeTest PROPS process
//
// is SmokeTestClient (application id SmokeTest, exactly_once_v2 from the properties file,
// Streams' default 10 MB cache, three stream threads, RF 3, two standbys, commit interval 1 s).
// StreamsSmokeTest's "run" generates 20 keys × 1000 records over 90 s and verifies in the same
// JVM; the drill calls the same SmokeTestDriver.generate and SmokeTestDriver.verify through
// kaudit.smoke.SmokeDriver with fewer records (smokeKeys × smokePerKey) and with a fault
// between the two. The driver's verdict (ALL-RECORDS-DELIVERED, SUCCESS or FAILURE and its
// "fail" lines) is recorded beside kaudit's, which audits the app with
// testdata/smoke/smoke.kaudit.yaml and the describe() text of SmokeTestClient's topology.

const smokeAppID = "SmokeTest" // SmokeTestClient's APPLICATION_ID_CONFIG

// smokeTopics are the topics streams_smoke_test.py creates (5 partitions each), and fk, which
// SmokeTestDriver writes beside data (the system test's brokers create it on the first write;
// the drill's do not create topics). Streams creates its repartition and changelog topics.
var smokeTopics = []string{"data", "echo", "min", "min-suppressed", "min-raw", "max", "sum", "sws-raw", "sws-suppressed",
	"dif", "cnt", "avg", "wcnt", "tagg", "fk"}

// smokeHops are the topics SmokeTestClient both writes and reads: the outputs builder.table
// reads back (min, max, sum, cnt) and KTable#groupBy's repartition topic.
var smokeHops = []string{"min", "max", "sum", "cnt", smokeTaggRepartition}

const (
	smokePartitions = 5
	smokeMain       = "org.apache.kafka.streams.tests.StreamsSmokeTest"
	smokeDriver     = "kaudit.smoke.SmokeDriver"
	// smokeKeys × smokePerKey records in about smokeSpend: SmokeTestDriver.generate sleeps
	// max(spend / keys / perKey, 2 ms) after each record (and writes each to fk too), then
	// writes one flush record per data partition stamped two days ahead.
	smokeKeys    = 10
	smokePerKey  = 300
	smokeSpend   = 30 // seconds (generate takes about 45 s: each send costs beyond the sleep)
	smokeVerifyT = 8 * time.Minute
	// smokeTaggRepartition is the repartition topic of cntTable.groupBy(…).aggregate(…) into
	// the store cntByCnt (the store's name: Grouped names none).
	smokeTaggRepartition = smokeAppID + "-cntByCnt-repartition"
)

// smokeRun is the state of one smoke scenario: the JVMs and what the drill knows.
type smokeRun struct {
	data    string // the keys and values SmokeTestDriver.generate returned (kept for verify)
	client  *appRun
	driver  *appRun
	clients int
	truth   *smokeTruth
}

// smokeTruth is what the drill knows of a smoke scenario, in truth.json.
type smokeTruth struct {
	Keys        int      `json:"keys"`
	PerKey      int      `json:"per_key"`
	Generated   int      `json:"generated"`    // the records SmokeTestDriver says it produced to data
	DataRecords int64    `json:"data_records"` // the records on data (the flush records included)
	Kills       int      `json:"kills"`        // kill -9 of a client
	Landed      int      `json:"landed"`       // kills that left a transaction open
	Verify      []string `json:"verify"`       // SmokeTestDriver.verify's verdict lines
	Passed      bool     `json:"passed"`       // it printed SUCCESS
	Deleted     []string `json:"deleted,omitempty"`
	Causes      []string `json:"causes,omitempty"` // the cnt records each deleted record came from
	KauditLive  string   `json:"kaudit_before,omitempty"`
	Kaudit      string   `json:"kaudit"`
}

func (s *smokeRun) kill() {
	for _, a := range []*appRun{s.client, s.driver} {
		if a != nil {
			a.kill9()
		}
	}
}

// smokeSetup creates the app's topics and captures the topology's describe() text into
// describe.txt, which must be testdata/smoke/topology.txt.
func (r *scRun) smokeSetup(ctx context.Context) error {
	r.smoke = &smokeRun{data: filepath.Join(r.dir, "generated.txt"), truth: &smokeTruth{Keys: smokeKeys, PerKey: smokePerKey}}
	r.truth.Smoke = r.smoke.truth
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	cfg := map[string]*string{}
	if r.d.brokers == 3 {
		two := "2"
		cfg["min.insync.replicas"] = &two
	}
	res, err := adm.CreateTopics(ctx, smokePartitions, int16(r.d.brokers), cfg, smokeTopics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create the smoke topics: %w", err)
	}
	props, err := r.smokeProps(0)
	if err != nil {
		return err
	}
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, "java", append(r.eosJVM(), smokeDriver, props, "describe")...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("describe SmokeTestClient's topology: %w: %s", err, lastLines(stderr.String(), 5))
	}
	if !strings.HasPrefix(out.String(), "Topologies:") {
		return fmt.Errorf("kaudit.smoke.SmokeDriver printed no topology: %q", lastLines(out.String(), 3))
	}
	if err := os.WriteFile(filepath.Join(r.dir, "describe.txt"), out.Bytes(), 0o644); err != nil {
		return err
	}
	want, err := os.ReadFile(filepath.Join(r.d.repo, "testdata", "smoke", "topology.txt"))
	if err != nil {
		return err
	}
	if !bytes.Equal(out.Bytes(), want) {
		return fmt.Errorf("SmokeTestClient's describe() differs from testdata/smoke/topology.txt (see %s)", filepath.Join(r.dir, "describe.txt"))
	}
	return nil
}

// smokeProps writes the properties file of client n (0: the driver's), as
// StreamsSmokeTestBaseService.prop_file (3.6.2) writes it, each client with its own state dir as
// each of the system test's clients runs on its own node; it returns its path.
func (r *scRun) smokeProps(n int) (string, error) {
	path := filepath.Join(r.dir, fmt.Sprintf("smoke-%d.properties", n))
	props := strings.Join([]string{
		"bootstrap.servers=" + r.d.bootstrap,
		"state.dir=" + filepath.Join(r.stateDir, fmt.Sprintf("client-%d", n)),
		"processing.guarantee=exactly_once_v2",
		"num.stream.threads=3",
		"replication.factor=3",
		"num.standby.replicas=2",
		"buffered.records.per.partition=100",
		"commit.interval.ms=1000",
		"auto.offset.reset=earliest",
		"acks=all",
		"acceptable.recovery.lag=9223372036854775807",
		"session.timeout.ms=10000",
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(props), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

// smokeStartClient starts one more SmokeTestClient (StreamsSmokeTest process) and waits until it
// prints SMOKE-TEST-CLIENT-STARTED (its first REBALANCING -> RUNNING).
func (r *scRun) smokeStartClient(ctx context.Context) error {
	if r.smoke.client != nil && r.smoke.client.alive() {
		return fmt.Errorf("a SmokeTestClient is still alive")
	}
	r.smoke.clients++
	props, err := r.smokeProps(r.smoke.clients)
	if err != nil {
		return err
	}
	a, err := r.d.spawnJava(append(r.eosJVM(), smokeMain, props, "process"), filepath.Join(r.dir, fmt.Sprintf("client-%d.log", r.smoke.clients)))
	if err != nil {
		return fmt.Errorf("start SmokeTestClient: %w", err)
	}
	r.smoke.client = a
	logf("SmokeTestClient %d started (pid %d), log %s", r.smoke.clients, a.cmd.Process.Pid, a.log)
	t0 := time.Now()
	if err := a.waitRunning(ctx, 120*time.Second); err != nil {
		return err
	}
	logf("SmokeTestClient %d RUNNING after %s", r.smoke.clients, time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// smokeStopClient stops the client with SIGTERM (its shutdown hook closes Kafka Streams) and
// requires its SMOKE-TEST-CLIENT-CLOSED.
func (r *scRun) smokeStopClient() error {
	a := r.smoke.client
	if a == nil {
		return nil
	}
	r.smoke.client = nil
	t0 := time.Now()
	if err := a.stop(); err != nil {
		return err
	}
	logf("SmokeTestClient %d stopped in %s", r.smoke.clients, time.Since(t0).Round(100*time.Millisecond))
	if _, ok := a.find("SMOKE-TEST-CLIENT-CLOSED", 0); !ok {
		return fmt.Errorf("SmokeTestClient did not print SMOKE-TEST-CLIENT-CLOSED on SIGTERM; see %s", a.log)
	}
	return nil
}

// smokeKillClient kills the client -9.
func (r *scRun) smokeKillClient() {
	if r.smoke.client != nil {
		r.smoke.client.kill9()
		r.smoke.client = nil
	}
}

// smokeStartDriver starts SmokeTestDriver.generate; it ends by itself once every record and
// the flush records are written.
func (r *scRun) smokeStartDriver() error {
	props, err := r.smokeProps(0)
	if err != nil {
		return err
	}
	a, err := r.d.spawnJava(append(r.eosJVM(), smokeDriver, props, "generate", strconv.Itoa(smokeKeys), strconv.Itoa(smokePerKey),
		strconv.Itoa(smokeSpend), r.smoke.data), filepath.Join(r.dir, "driver-generate.log"))
	if err != nil {
		return fmt.Errorf("start SmokeTestDriver generate: %w", err)
	}
	r.smoke.driver = a
	logf("SmokeTestDriver generate started (pid %d): %d keys × %d records over %d s", a.cmd.Process.Pid, smokeKeys, smokePerKey, smokeSpend)
	return nil
}

var smokeGeneratedRe = regexp.MustCompile(`SMOKE-DRIVER-GENERATED keys=(\d+) records=(\d+)`)

// smokeWaitDriver waits until generate has ended and reads how many records it produced.
func (r *scRun) smokeWaitDriver(ctx context.Context) error {
	a := r.smoke.driver
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-a.exited:
	case <-time.After(5 * time.Minute):
		a.kill9()
		return fmt.Errorf("SmokeTestDriver generate did not end within 5 minutes; see %s", a.log)
	}
	r.smoke.driver = nil
	l, _ := a.find("SMOKE-DRIVER-GENERATED", 0)
	m := smokeGeneratedRe.FindStringSubmatch(l)
	if a.err != nil || m == nil {
		return fmt.Errorf("SmokeTestDriver generate failed (%v); see %s", a.err, a.log)
	}
	r.smoke.truth.Generated, _ = strconv.Atoi(m[2])
	logf("SmokeTestDriver: %s", strings.TrimSpace(l))
	return nil
}

// smokeVerdictLine reports whether l is one of the lines SmokeTestDriver.verify prints as its
// verdict (not the records it dumps on a failure).
func smokeVerdictLine(l string) bool {
	for _, p := range []string{"recordGenerated=", "recordProcessed=", "ALL-RECORDS-DELIVERED", "missedRecords=", "PROCESSED-",
		"verifying ", "fail", "SUCCESS", "FAILURE", "tagg is "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.Contains(l, " fail: ") || strings.HasSuffix(l, " is empty")
}

// smokeStartVerify starts SmokeTestDriver.verify with what generate returned; smokeEndVerify
// waits for its verdict. verify reads every output topic read_committed from the start until
// echo holds as many records as were generated, then checks; a failing check is retried 30
// times 5 s apart, so a FAILURE takes 2.5 minutes at least (6 when echo is short).
func (r *scRun) smokeStartVerify() (*appRun, error) {
	props, err := r.smokeProps(0)
	if err != nil {
		return nil, err
	}
	a, err := r.d.spawnJava(append(r.eosJVM(), smokeDriver, props, "verify", strconv.Itoa(smokePerKey), r.smoke.data),
		filepath.Join(r.dir, "driver-verify.log"))
	if err != nil {
		return nil, fmt.Errorf("start SmokeTestDriver verify: %w", err)
	}
	logf("SmokeTestDriver verify started (pid %d), log %s", a.cmd.Process.Pid, a.log)
	return a, nil
}

func (r *scRun) smokeEndVerify(ctx context.Context, a *appRun, t0 time.Time) error {
	select {
	case <-ctx.Done():
		a.kill9()
		return ctx.Err()
	case <-a.exited:
	case <-time.After(smokeVerifyT):
		a.kill9()
		return fmt.Errorf("SmokeTestDriver verify did not end within %s; see %s", smokeVerifyT, a.log)
	}
	ls, _ := a.linesFrom(0)
	var verdict []string
	in := false
	for _, l := range ls {
		if strings.TrimSpace(l) == "Result Verification" {
			in = true
			continue
		}
		if in && smokeVerdictLine(l) {
			if len(l) > 300 { // a tagg failure lists the key's records: keep its start and its expected=
				l = l[:200] + " … " + l[len(l)-80:]
			}
			verdict = append(verdict, l)
		}
	}
	if len(verdict) == 0 {
		return fmt.Errorf("SmokeTestDriver verify printed no verdict (exit %v); see %s", a.err, a.log)
	}
	t := r.smoke.truth
	t.Verify = verdict
	t.Passed = slices.Contains(verdict, "SUCCESS")
	logf("SmokeTestDriver verify (%s): %s", time.Since(t0).Round(100*time.Millisecond), strings.Join(head(verdict, 20), " | "))
	return nil
}

// smokeObserve reads the offsets of the app's topics and its group's committed offsets.
func (r *scRun) smokeObserve(ctx context.Context) (state, error) {
	return r.d.observeApp(ctx, smokeAppID, smokeTopics)
}

// smokeCaughtUp says why s is not a finished run, or "": every data partition committed at its
// high watermark, every topic the app reads back (its transactional writes end in a marker) at
// its high watermark or one below, and no transaction open anywhere.
func smokeCaughtUp(s state) string {
	if !slices.Contains(s.internal, smokeTaggRepartition) {
		return smokeTaggRepartition + " not created yet"
	}
	for _, t := range append([]string{"data"}, smokeHops...) {
		slack := int64(1)
		if t == "data" {
			slack = 0
		}
		for p, hw := range s.hw[t] {
			c, ok := s.committed.get(t, p)
			if hw > 0 && (!ok || c < hw-slack) {
				return fmt.Sprintf("%s/%d committed %d < hw %d", t, p, c, hw)
			}
		}
	}
	if open := s.openNote(); open != "" {
		return open
	}
	return ""
}

// smokeOpenTxn finds a partition the client writes with an open transaction.
func smokeOpenTxn(s state) (string, int32, bool) {
	topics := slices.DeleteFunc(append(append([]string(nil), smokeTopics...), s.internal...), func(t string) bool { return t == "data" || t == "fk" })
	t, p, _, _, ok := s.openIn(topics)
	return t, p, ok
}

// smokeWaitOpenTxn waits until a partition the client writes has an open transaction.
func (r *scRun) smokeWaitOpenTxn(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s, err := r.smokeObserve(ctx); err == nil {
			if _, _, ok := smokeOpenTxn(s); ok {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("no open transaction seen within %s", timeout)
}

// smokeKillMidTransaction kills the client -9 while one of its transactions is open, and
// says whether the transaction was still open a second later (the kill landed).
func (r *scRun) smokeKillMidTransaction(ctx context.Context) error {
	if err := r.smokeWaitOpenTxn(ctx, 30*time.Second); err != nil {
		return fmt.Errorf("before kill %d: %w", r.smoke.truth.Kills+1, err)
	}
	r.smokeKillClient()
	r.smoke.truth.Kills++
	time.Sleep(time.Second)
	s, err := r.smokeObserve(ctx)
	if err != nil {
		return err
	}
	if t, p, ok := smokeOpenTxn(s); ok {
		r.smoke.truth.Landed++
		logf("kill %d left a transaction open on %s/%d", r.smoke.truth.Kills, t, p)
	} else {
		logf("kill %d landed between transactions", r.smoke.truth.Kills)
	}
	return nil
}

// smokeWaitCommitted waits until the group has committed an offset on every partition of topic.
func (r *scRun) smokeWaitCommitted(ctx context.Context, topic string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	why := "not observed"
	for time.Now().Before(deadline) {
		s, err := r.smokeObserve(ctx)
		if err == nil {
			why = ""
			if len(s.hw[topic]) == 0 {
				why = topic + " not created yet"
			}
			for p := range s.hw[topic] {
				if _, ok := s.committed.get(topic, p); !ok && why == "" {
					why = fmt.Sprintf("%s/%d has no committed offset", topic, p)
				}
			}
			if why == "" {
				return nil
			}
		} else {
			why = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return notInjected("%s", why)
}

// smokeWaitCaughtUp polls until the client has processed and committed everything.
func (r *scRun) smokeWaitCaughtUp(ctx context.Context, timeout time.Duration) (state, error) {
	t0 := time.Now()
	s, err := pollCaughtUp(ctx, timeout, "SmokeTestClient", r.smoke.client, r.smokeObserve, smokeCaughtUp)
	if err == nil {
		logf("SmokeTestClient caught up in %s", time.Since(t0).Round(100*time.Millisecond))
	}
	return s, err
}

// smokeFinish ends a scenario once the driver has generated everything: SmokeTestDriver's
// verify starts (as in the system test, while the last client still runs: verify waits until
// echo holds every record), the client catches up and stops cleanly, and kaudit diff runs beside
// the verify (both only read). It records both verdicts. kaudit's own failure (auditErr: no
// report) does not stop the scenario, so that the driver's verdict is always recorded; err is
// what kept the scenario from its end.
func (r *scRun) smokeFinish(ctx context.Context) (rep kauditReport, auditErr, err error) {
	t0 := time.Now()
	v, err := r.smokeStartVerify()
	if err != nil {
		return rep, nil, err
	}
	defer v.kill9() // on an early return; a no-op once it has ended
	if _, err := r.smokeWaitCaughtUp(ctx, 180*time.Second); err != nil {
		return rep, nil, err
	}
	if err := r.smokeStopClient(); err != nil {
		return rep, nil, err
	}
	s, err := r.smokeObserve(ctx)
	if err != nil {
		return rep, nil, err
	}
	var n int64
	for _, hw := range s.hw["data"] {
		n += hw
	}
	r.smoke.truth.DataRecords = n
	// after a restart the brokers' logs date the deletions (the commit history alone leaves a
	// purge past the committed offset unknown once the app committed past it)
	rep, auditErr = r.runDiff(ctx, r.brokerLogArgs()...)
	r.smoke.truth.Kaudit = rep.summary()
	if auditErr != nil {
		r.smoke.truth.Kaudit = "no report: " + auditErr.Error()
	}
	if err := r.smokeEndVerify(ctx, v, t0); err != nil {
		return rep, auditErr, err
	}
	driver := "FAILURE"
	if r.smoke.truth.Passed {
		driver = "SUCCESS"
	}
	logf("verdicts side by side: SmokeTestDriver %s; kaudit %s", driver, r.smoke.truth.Kaudit)
	return rep, auditErr, nil
}

// smokeCapture captures the app's topics with its describe() text into dir.
func (r *scRun) smokeCapture(ctx context.Context, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	code, stderr, err := r.d.runKaudit(ctx, r.dir, "capture", "capture", "--app-id", smokeAppID, "--bootstrap-server", r.d.bootstrap,
		"--topology", filepath.Join(r.dir, "describe.txt"), "--out", dir)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kaudit capture exited %d: %s", code, lastLines(stderr, 5))
	}
	logf("captured into %s", dir)
	return nil
}

// smokeAuditCapture audits the capture with the spec and requires the live report.
func (r *scRun) smokeAuditCapture(ctx context.Context, capture string) error {
	out := filepath.Join(r.dir, "kaudit-snapshot.json")
	code, stderr, err := r.d.runKaudit(ctx, r.dir, "diff-snapshot", "diff", "--snapshot", capture,
		"--spec", r.auditSpec(), "--format", "json", "--output", out)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("kaudit diff --snapshot exited %d without JSON: %s", code, lastLines(stderr, 5))
	}
	live, err := os.ReadFile(filepath.Join(r.dir, "kaudit.json"))
	if err != nil {
		return err
	}
	if err := compareReports(live, b, filepath.Join(r.dir, "kaudit-snapshot.compare.txt"), false); err != nil {
		return fmt.Errorf("kaudit diff --snapshot on the capture and the live audit: %w", err)
	}
	logf("the capture audits offline to the live report")
	return nil
}

// smokeRekeys are the nodes of SmokeTestClient's topology that re-key a windowed table's
// output: toStream(new Unwindow<>()) is toStream().selectKey(…), a KSTREAM-KEY-SELECT node from
// the windowed key to its key, before min, max, sum and cnt; streamify's map((wk, v) ->
// KeyValue(wk.toString(), v)) is a KSTREAM-MAP node before min-raw, min-suppressed, sws-raw and
// sws-suppressed. kaudit models both (output_steps: selectKey 'key.key', map by
// windowString(key)): every output behind them is judged.
var smokeRekeys = []string{
	"KSTREAM-KEY-SELECT-0000000017", "KSTREAM-KEY-SELECT-0000000038", "KSTREAM-KEY-SELECT-0000000047", "KSTREAM-KEY-SELECT-0000000057",
	"KSTREAM-MAP-0000000008", "KSTREAM-MAP-0000000014", "KSTREAM-MAP-0000000024", "KSTREAM-MAP-0000000030",
}

// expectSmokeJudged fails unless the report is clean with nothing missing: every table, join,
// copy and output of the spec judged.
func expectSmokeJudged(rep kauditReport) error {
	if rep.Summary.Verdict != "clean" {
		return fmt.Errorf("verdict %q, want clean: every output of SmokeTestClient is modelled (%s)", rep.Summary.Verdict, rep.summary())
	}
	return expectNothingMissing(rep)
}

// expectNothingMissing fails on any missing evidence: the spec models the whole app.
func expectNothingMissing(rep kauditReport) error {
	var errs []error
	for _, m := range rep.Summary.Missing {
		errs = append(errs, fmt.Errorf("missing evidence, though the spec models every node: %s", m))
	}
	return allErrs(errs...)
}

// expectNoLoss fails on any loss or anomaly finding.
func expectNoLoss(rep kauditReport) error {
	var bad []string
	for _, f := range rep.Findings {
		if f.Severity == "loss" || f.Severity == "anomaly" {
			bad = append(bad, f.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%d loss/anomaly findings where the app's own check found nothing lost: %v", len(bad), head(bad, 5))
	}
	return nil
}

// expectSmokeVerify fails unless SmokeTestDriver's verdict is the one wanted: SUCCESS and
// ALL-RECORDS-DELIVERED, or FAILURE with a failing line that contains failWord.
func (r *scRun) expectSmokeVerify(passed bool, failWord string) error {
	t := r.smoke.truth
	if passed {
		if !t.Passed || !slices.Contains(t.Verify, "ALL-RECORDS-DELIVERED") {
			return fmt.Errorf("SmokeTestDriver says %v, want SUCCESS and ALL-RECORDS-DELIVERED", head(t.Verify, 12))
		}
		return nil
	}
	if t.Passed || !slices.Contains(t.Verify, "FAILURE") {
		return fmt.Errorf("SmokeTestDriver says %v, want FAILURE", head(t.Verify, 12))
	}
	if !slices.ContainsFunc(t.Verify, func(l string) bool { return strings.Contains(l, "fail") && strings.Contains(l, failWord) }) {
		return fmt.Errorf("SmokeTestDriver's failure does not name %s: %v", failWord, head(t.Verify, 12))
	}
	return nil
}

// scenarioSmokeClean: SmokeTestDriver generates while SmokeTestClient runs; the client is killed
// -9 twice while a transaction of it is open, each time replaced by a new one with its own state
// dir (streams_smoke_test.py's crash=True: three processors one after another, each on its own
// node); the last catches up and stops. SmokeTestDriver must say SUCCESS, and kaudit no loss:
// incomplete, naming the nodes it does not model. The capture (testdata/smoke/capture) must
// audit offline to the live report.
func scenarioSmokeClean(ctx context.Context, r *scRun) error {
	if err := r.smokeStartClient(ctx); err != nil {
		return err
	}
	if err := r.smokeStartDriver(); err != nil {
		return err
	}
	for r.smoke.truth.Landed < 2 {
		if r.smoke.truth.Kills == 6 {
			return fmt.Errorf("%d kill -9 left only %d transaction(s) open: the fault was not injected", r.smoke.truth.Kills, r.smoke.truth.Landed)
		}
		time.Sleep(3 * time.Second) // the client processes a while first (the system test waits for "processed")
		if err := r.smokeKillMidTransaction(ctx); err != nil {
			return err
		}
		if err := r.smokeStartClient(ctx); err != nil {
			return err
		}
	}
	if err := r.smokeWaitDriver(ctx); err != nil {
		return err
	}
	r.addFault(fault{Kind: "kill-9", Note: fmt.Sprintf("SmokeTestClient killed -9 %d times during generation (%d left a transaction open), each replaced by a new client with its own state dir", r.smoke.truth.Kills, r.smoke.truth.Landed)})
	rep, auditErr, err := r.smokeFinish(ctx)
	if err != nil {
		return err
	}
	capture := filepath.Join(r.dir, "capture")
	if err := r.smokeCapture(ctx, capture); err != nil {
		return err
	}
	if auditErr != nil {
		return allErrs(r.expectSmokeVerify(true, ""), auditErr)
	}
	return allErrs(r.expectSmokeVerify(true, ""), expectNoLoss(rep), expectSmokeJudged(rep), r.smokeAuditCapture(ctx, capture))
}

// smokeRecord is one record of the KTable#groupBy repartition topic: its key (a count, as
// text) and its value, a Change of Long as ChangedSerializer (3.6) writes it.
type smokeRecord struct {
	Partition int32
	Offset    int64
	Key       string
	Change    string
	Timestamp int64
}

func (s smokeRecord) String() string {
	return fmt.Sprintf("%d@%d key %q %s", s.Partition, s.Offset, s.Key, s.Change)
}

// smokeVisible reports whether deleting the records makes tagg wrong where SmokeTestDriver
// looks: a count some record removes more often than the records add it keeps the adds applied
// before, one too many, which the driver's last value of the count shows. A lost add alone may
// not show: KTableAggregate (3.6) skips the subtractor where the count has no aggregate yet, so
// the later remove leaves it absent, not -1, and the driver checks only the counts tagg holds
// (a real run: add "98", add and remove "100" and "96" deleted, the driver said SUCCESS).
func smokeVisible(recs []smokeRecord) bool {
	net := map[string]int{}
	for _, r := range recs {
		switch {
		case strings.HasPrefix(r.Change, "remove "):
			net[r.Key]--
		case strings.HasPrefix(r.Change, "add "):
			net[r.Key]++
		}
	}
	for _, v := range net {
		if v < 0 {
			return true
		}
	}
	return false
}

// smokeChange reads a Change<Long> as ChangedSerializer writes it in Streams 3.4 and later:
// the old value then the flag 0 (the subtractor's input), the new value then 1 (the adder's),
// or a varint length, the new value, the old value and 2 (both, when the new and the old value
// map to the same key).
func smokeChange(b []byte) string {
	long := func(b []byte) string {
		if len(b) != 8 {
			return fmt.Sprintf("%x", b)
		}
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10)
	}
	if len(b) == 0 {
		return "empty"
	}
	body := b[:len(b)-1]
	switch b[len(b)-1] {
	case 0:
		return "remove " + long(body)
	case 1:
		return "add " + long(body)
	case 2:
		n, k := binary.Varint(body)
		if k <= 0 || n < 0 || int(n) > len(body)-k {
			return fmt.Sprintf("both %x", body)
		}
		return "add " + long(body[k:k+int(n)]) + ", remove " + long(body[k+int(n):])
	}
	return fmt.Sprintf("unknown %x", b)
}

// scenarioSmokeFaults: SmokeTestClient is stopped cleanly in the middle of the generation, so
// that the records its last transaction wrote to the KTable#groupBy repartition topic (tagg's)
// wait unconsumed above the group's committed offset; the first of them on the fullest
// partition are deleted (DeleteRecords, what KAFKA-17635 does to a repartition topic). kaudit
// before the restart: purged-before-commit for exactly that range. A new client then finishes
// the run (it resets to the log start: the records are never applied); SmokeTestDriver's verify
// fails on tagg, and kaudit names the same records lost, and nothing else.
func scenarioSmokeFaults(ctx context.Context, r *scRun) error {
	if err := r.smokeStartClient(ctx); err != nil {
		return err
	}
	if err := r.smokeStartDriver(); err != nil {
		return err
	}
	// let the client process half the generation, and commit on every partition of the
	// repartition topic
	time.Sleep(smokeSpend * time.Second / 2)
	if err := r.smokeWaitCommitted(ctx, smokeTaggRepartition, 30*time.Second); err != nil {
		return err
	}
	if err := r.smokeStopClient(); err != nil {
		return err
	}
	s, err := r.smokeObserve(ctx)
	if err != nil {
		return err
	}
	// two at least (a clean stop drains most of the backlog: CI once found 2 where 3 were asked)
	const n = 2
	var best []smokeRecord
	bestP, bestC := int32(-1), int64(0)
	for p, lso := range s.lso[smokeTaggRepartition] {
		c, ok := s.committed.get(smokeTaggRepartition, p)
		if !ok {
			return notInjected("%s/%d has no committed offset", smokeTaggRepartition, p)
		}
		recs, err := r.d.readPartition(ctx, smokeTaggRepartition, p, c, lso, true)
		if err != nil {
			return err
		}
		var data []smokeRecord
		for _, rec := range recs {
			if !rec.Attrs.IsControl() {
				data = append(data, smokeRecord{Partition: p, Offset: rec.Offset, Key: string(rec.Key), Change: smokeChange(rec.Value),
					Timestamp: rec.Timestamp.UnixMilli()})
			}
		}
		logf("%s/%d: committed %d, lso %d, %d committed records unconsumed", smokeTaggRepartition, p, c, lso, len(data))
		if len(data) > len(best) && smokeVisible(data[:min(len(data), 5)]) {
			best, bestP, bestC = data, p, c
		}
	}
	if len(best) < n {
		return notInjected("no %s partition holds %d committed unconsumed records whose loss SmokeTestDriver can see (best %d)", smokeTaggRepartition, n, len(best))
	}
	hit := best[:min(len(best), 5)]
	to := hit[len(hit)-1].Offset + 1
	var keysHit []string
	for _, h := range hit {
		r.smoke.truth.Deleted = append(r.smoke.truth.Deleted, smokeTaggRepartition+"/"+h.String())
		keysHit = append(keysHit, h.Key)
	}
	f := fault{Kind: "delete-records", Topic: smokeTaggRepartition, Partition: bestP, From: bestC, To: to, Keys: keysHit, Records: r.smoke.truth.Deleted,
		Note: "DeleteRecords on the KTable#groupBy repartition topic (cntTable to tagg) past the group's committed offset while SmokeTestClient is down"}
	r.addFault(f)
	causes, err := r.smokeCntCauses(ctx, s, hit)
	if err != nil {
		return err
	}
	if err := r.d.deleteRecords(ctx, smokeTaggRepartition, bestP, to); err != nil {
		return err
	}
	var beforeErr error
	if before, err := r.runDiff(ctx); err != nil {
		beforeErr = err
		r.smoke.truth.KauditLive = "no report: " + err.Error()
	} else {
		r.smoke.truth.KauditLive = before.summary()
		beforeErr = allErrs(expectVerdict(before, "loss"), expectOnlyLossCauses(before, "purged-before-commit"),
			expectSmokeDeleted(before, f, causes), expectNothingMissing(before))
	}
	_ = os.Rename(filepath.Join(r.dir, "kaudit.json"), filepath.Join(r.dir, "kaudit-before.json"))
	_ = os.Rename(filepath.Join(r.dir, "kaudit.md"), filepath.Join(r.dir, "kaudit-before.md"))
	if err := r.smokeStartClient(ctx); err != nil {
		return err
	}
	if err := r.smokeWaitDriver(ctx); err != nil {
		return err
	}
	rep, auditErr, err := r.smokeFinish(ctx)
	if err != nil {
		return err
	}
	if auditErr != nil {
		return allErrs(beforeRestart(beforeErr), r.expectSmokeVerify(false, "tagg"), auditErr)
	}
	return allErrs(beforeRestart(beforeErr), r.expectSmokeVerify(false, "tagg"), expectVerdict(rep, "loss"),
		expectOnlyLossCauses(rep, "purged-before-commit", "unapplied"), expectSmokeDeleted(rep, f, causes), expectNothingMissing(rep))
}

// smokeCntCauses maps each deleted repartition record (by offset) to the records of cnt that
// caused it: KTableRepartitionMap forwards the cnt table's change with the timestamp of the cnt
// record that made it, and the adder's record carries that record's count. (The table's cache
// folds the records of one commit interval: the change is the last one's.)
func (r *scRun) smokeCntCauses(ctx context.Context, s state, hit []smokeRecord) (map[int64][]string, error) {
	type cntRec struct {
		name  string
		ts    int64
		count string
	}
	var all []cntRec
	for p, lso := range s.lso["cnt"] {
		start, _ := s.start.get("cnt", p)
		recs, err := r.d.readPartition(ctx, "cnt", p, start, lso, true)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			if rec.Attrs.IsControl() || len(rec.Value) != 8 {
				continue
			}
			all = append(all, cntRec{name: fmt.Sprintf("cnt/%d@%d", p, rec.Offset), ts: rec.Timestamp.UnixMilli(),
				count: strconv.FormatInt(int64(binary.BigEndian.Uint64(rec.Value)), 10)})
		}
	}
	out := map[int64][]string{}
	for _, h := range hit {
		out[h.Offset] = []string{}
		for _, c := range all {
			if c.ts == h.Timestamp && (!strings.HasPrefix(h.Change, "add") || c.count == h.Key) {
				out[h.Offset] = append(out[h.Offset], c.name)
			}
		}
		logf("%s/%d@%d (%s %q) came from %v", smokeTaggRepartition, h.Partition, h.Offset, h.Change, h.Key, out[h.Offset])
		r.smoke.truth.Causes = append(r.smoke.truth.Causes, fmt.Sprintf("%s/%d@%d: %s", smokeTaggRepartition, h.Partition, h.Offset, strings.Join(out[h.Offset], " ")))
	}
	return out, nil
}

// expectSmokeDeleted fails unless the loss findings name exactly the deleted records of f (the
// offsets causes lists): each covered by a finding on the repartition topic within the deleted
// range [From, To) (markers in it may be covered too), or named as one of the cnt records that
// caused it (causes, from smokeCntCauses: the re-grouped table's inputs), and no loss finding on
// anything else.
func expectSmokeDeleted(rep kauditReport, f fault, causes map[int64][]string) error {
	covered := map[int64]bool{}
	cause := map[string][]int64{}
	for o, names := range causes {
		for _, n := range names {
			cause[n] = append(cause[n], o)
		}
	}
	var errs []error
	for _, l := range rep.loss() {
		switch {
		case l.Topic == f.Topic && l.Partition == f.Partition:
			for o := l.Offset; o < l.Offset+max(l.Count, 1); o++ {
				if o < f.From || o >= f.To {
					errs = append(errs, fmt.Errorf("a loss finding on %s/%d@%d, outside the deleted [%d, %d): %s", f.Topic, f.Partition, o, f.From, f.To, l))
				}
				covered[o] = true
			}
		case l.Topic == "cnt" && len(cause[fmt.Sprintf("cnt/%d@%d", l.Partition, l.Offset)]) > 0:
			for _, o := range cause[fmt.Sprintf("cnt/%d@%d", l.Partition, l.Offset)] {
				covered[o] = true
			}
		default:
			errs = append(errs, fmt.Errorf("a loss finding neither on the deleted range nor on a cnt record copied into it: %s (%s)", l, l.Detail))
		}
	}
	for _, o := range slices.Sorted(maps.Keys(causes)) {
		if !covered[o] {
			errs = append(errs, fmt.Errorf("%s/%d@%d (deleted) is named by no loss finding, neither as the offset nor as its cnt record %v", f.Topic, f.Partition, o, causes[o]))
		}
	}
	return allErrs(errs...)
}

// beforeRestart prefixes what the audit before the restart got wrong.
func beforeRestart(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("before the restart: %w", err)
}
