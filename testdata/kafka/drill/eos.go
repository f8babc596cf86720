package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Issue S: Kafka's own exactly-once system-test app, run from the kafka-streams test jar
// (testdata/kafka/eos/pom.xml) as streams_eos_test.py starts it:
//
//	java -cp … org.apache.kafka.streams.tests.StreamsEosTest PROPS run|process-complex|verify-complex
//
// "run" is EosTestDriver.generate (random String keys of 20,000, Integer values, until
// SIGTERM), "process-complex" EosTestClient with the user topic `repartition` (exactly_once_v2,
// cache 0, commit interval 5 s, 2 standbys, replication factor 3), "verify-complex"
// EosTestDriver.verify, which prints ALL-RECORDS-DELIVERED or what is wrong. kaudit audits the
// same app with testdata/eos/eos.kaudit.yaml and the describe() text kaudit.eos.Describe prints
// from EosTestClient's own builder code; its verdict is recorded beside EosTestDriver's.

const eosAppID = "EosTest" // EosTestClient.APP_ID

// eosTopics are the topics streams_eos_test.py creates (5 partitions each); Streams creates
// the changelogs itself.
var eosTopics = []string{"data", "echo", "min", "sum", "repartition", "max", "cnt"}

const (
	eosPartitions = 5
	eosMain       = "org.apache.kafka.streams.tests.StreamsEosTest"
	// eosGenerate bounds each EosTestDriver run: it produces until SIGTERM (about 170
	// records/s: a random key, a random value, then a sleep of 0-9 ms).
	eosGenerate = 20 * time.Second
)

// eosRun is the state of one eos scenario: the properties file and the JVMs.
type eosRun struct {
	props   string
	client  *appRun
	driver  *appRun
	clients int
	drivers int
	truth   *eosTruth
}

// eosTruth is what the drill knows of an eos scenario, in truth.json.
type eosTruth struct {
	Produced    int      `json:"produced"`     // the records EosTestDriver says it produced, over its runs
	DataRecords int64    `json:"data_records"` // the records on data (the sum of its high watermarks)
	Kills       int      `json:"kills"`        // kill -9 of the client
	Landed      int      `json:"landed"`       // kills that left a transaction open
	Verify      string   `json:"verify"`       // EosTestDriver's verdict line
	Lost        []string `json:"lost,omitempty"`
	Kaudit      string   `json:"kaudit"` // kaudit's verdict and findings by cause
}

func (d *drill) eosLib() string {
	return filepath.Join(d.root, "eos", "target", "kafka-"+d.o.kafkaVersion)
}

func (e *eosRun) kill() {
	for _, a := range []*appRun{e.client, e.driver} {
		if a != nil {
			a.kill9()
		}
	}
}

// eosSetup writes the properties file streams_eos_test.py writes, creates the app's topics and
// captures the topology's describe() text into describe.txt.
func (r *scRun) eosSetup(ctx context.Context) error {
	r.eos = &eosRun{props: filepath.Join(r.dir, "eos.properties"), truth: &eosTruth{}}
	r.truth.EOS = r.eos.truth
	// StreamsEosTestBaseService.prop_file (3.6.2): state dir, servers, guarantee, a one-shot
	// assignment and a 10 s session; EosTestClient sets the rest itself.
	props := strings.Join([]string{
		"bootstrap.servers=" + r.d.bootstrap,
		"processing.guarantee=exactly_once_v2",
		"state.dir=" + r.stateDir,
		"acceptable.recovery.lag=9223372036854775807",
		"session.timeout.ms=10000",
	}, "\n") + "\n"
	if err := os.WriteFile(r.eos.props, []byte(props), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", r.eos.props, err)
	}
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
	res, err := adm.CreateTopics(ctx, eosPartitions, int16(r.d.brokers), cfg, eosTopics...)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create the eos topics: %w", err)
	}
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, "java", append(r.eosJVM(), "kaudit.eos.Describe", r.eos.props)...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("describe EosTestClient's topology: %w: %s", err, lastLines(stderr.String(), 5))
	}
	if !strings.HasPrefix(out.String(), "Topologies:") {
		return fmt.Errorf("kaudit.eos.Describe printed no topology: %q", lastLines(out.String(), 3))
	}
	return os.WriteFile(filepath.Join(r.dir, "describe.txt"), out.Bytes(), 0o644)
}

// eosJVM is the java command line up to the main class.
func (r *scRun) eosJVM() []string {
	lib := r.d.eosLib()
	return []string{"-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.io.tmpdir=" + filepath.Join(r.d.o.work, "tmp"),
		"-cp", filepath.Join(lib, "classes") + ":" + filepath.Join(lib, "lib") + "/*"}
}

// eosStart starts StreamsEosTest with command, logging to name.log.
func (r *scRun) eosStart(name, command string) (*appRun, error) {
	a, err := r.d.spawnJava(append(r.eosJVM(), eosMain, r.eos.props, command), filepath.Join(r.dir, name+".log"))
	if err != nil {
		return nil, fmt.Errorf("start StreamsEosTest %s: %w", command, err)
	}
	logf("StreamsEosTest %s started (pid %d), log %s", command, a.cmd.Process.Pid, a.log)
	return a, nil
}

// eosStartClient starts EosTestClient (process-complex) and waits until it is RUNNING.
func (r *scRun) eosStartClient(ctx context.Context) error {
	if r.eos.client != nil && r.eos.client.alive() {
		return errors.New("an EosTestClient is still alive")
	}
	r.eos.clients++
	a, err := r.eosStart(fmt.Sprintf("client-%d", r.eos.clients), "process-complex")
	if err != nil {
		return err
	}
	r.eos.client = a
	t0 := time.Now()
	if err := a.waitRunning(ctx, 120*time.Second); err != nil {
		return err
	}
	logf("EosTestClient run %d RUNNING after %s", r.eos.clients, time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// eosStopClient stops EosTestClient with SIGTERM (its shutdown hook closes Kafka Streams,
// which commits and writes the checkpoints) and requires its EOS-TEST-CLIENT-CLOSED.
func (r *scRun) eosStopClient() error {
	a := r.eos.client
	if a == nil {
		return nil
	}
	r.eos.client = nil
	t0 := time.Now()
	if err := a.stop(); err != nil {
		return err
	}
	logf("EosTestClient run %d stopped in %s", r.eos.clients, time.Since(t0).Round(100*time.Millisecond))
	if _, ok := a.find("EOS-TEST-CLIENT-CLOSED", 0); !ok {
		return fmt.Errorf("EosTestClient did not print EOS-TEST-CLIENT-CLOSED on SIGTERM; see %s", a.log)
	}
	return nil
}

// eosKillClient kills EosTestClient -9.
func (r *scRun) eosKillClient() {
	if r.eos.client != nil {
		r.eos.client.kill9()
		r.eos.client = nil
	}
}

// eosStartDriver starts EosTestDriver's generate ("run"), which produces until SIGTERM.
func (r *scRun) eosStartDriver() error {
	r.eos.drivers++
	a, err := r.eosStart(fmt.Sprintf("driver-%d", r.eos.drivers), "run")
	r.eos.driver = a
	return err
}

var producedRe = regexp.MustCompile(`Producer closed: (\d+) records produced`)

// eosStopDriver stops the generator with SIGTERM, as the system test does, and adds the records
// it says it produced.
func (r *scRun) eosStopDriver() error {
	a := r.eos.driver
	r.eos.driver = nil
	if err := a.stop(); err != nil {
		return err
	}
	l, ok := a.find("Producer closed:", 0)
	m := producedRe.FindStringSubmatch(l)
	if !ok || m == nil {
		return fmt.Errorf("EosTestDriver did not say how many records it produced; see %s", a.log)
	}
	n, _ := strconv.Atoi(m[1])
	r.eos.truth.Produced += n
	logf("EosTestDriver: %s", strings.TrimSpace(l))
	return nil
}

// eosGenerate runs the generator for d.
func (r *scRun) eosGenerate(ctx context.Context, d time.Duration) error {
	if err := r.eosStartDriver(); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
	}
	return r.eosStopDriver()
}

// eosVerify runs EosTestDriver's verify-complex to its end and returns its verdict: the line
// ALL-RECORDS-DELIVERED, or the first line saying what is wrong.
func (r *scRun) eosVerify(ctx context.Context) (string, error) {
	a, err := r.eosStart("verify", "verify-complex")
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	select {
	case <-ctx.Done():
		a.kill9()
		return "", ctx.Err()
	case <-a.exited:
	case <-time.After(5 * time.Minute):
		a.kill9()
		return "", fmt.Errorf("EosTestDriver verify-complex did not finish within 5 minutes; see %s", a.log)
	}
	verdict := ""
	if _, ok := a.find("ALL-RECORDS-DELIVERED", 0); ok {
		verdict = "ALL-RECORDS-DELIVERED"
	} else {
		for _, sub := range []string{"Result verification failed", "FAIL", "Exception"} {
			if l, ok := a.find(sub, 0); ok {
				verdict = strings.TrimSpace(l)
				break
			}
		}
		if verdict == "" {
			verdict = fmt.Sprintf("no verdict (exit %v)", a.err)
		}
	}
	r.eos.truth.Verify = verdict
	logf("EosTestDriver verify-complex (%s): %s", time.Since(t0).Round(100*time.Millisecond), verdict)
	return verdict, nil
}

// eosObserve reads the offsets of the app's topics and its group's committed offsets.
func (r *scRun) eosObserve(ctx context.Context) (state, error) {
	return r.d.observeApp(ctx, eosAppID, eosTopics)
}

// eosCaughtUp says why s is not a finished run, or "": every data partition committed at its
// high watermark, every repartition partition at its high watermark or one below (a marker),
// and no transaction open anywhere.
func eosCaughtUp(s state) string {
	for _, t := range []string{"data", "repartition"} {
		for p, hw := range s.hw[t] {
			c, ok := s.committed.get(t, p)
			slack := int64(0)
			if t == "repartition" {
				slack = 1
			}
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

// eosWaitCaughtUp polls until the client has processed and committed everything (commits come
// every 5 s) and the offsets held still for 3 s.
func (r *scRun) eosWaitCaughtUp(ctx context.Context, timeout time.Duration) (state, error) {
	t0 := time.Now()
	s, err := pollCaughtUp(ctx, timeout, "EosTestClient", r.eos.client, r.eosObserve, eosCaughtUp)
	if err == nil {
		logf("EosTestClient caught up in %s", time.Since(t0).Round(100*time.Millisecond))
	}
	return s, err
}

// eosOpenTxn finds a partition the client writes with an open transaction.
func eosOpenTxn(s state) (string, int32, bool) {
	t, p, _, _, ok := s.openIn(append([]string{"echo", "min", "sum", "repartition", "max", "cnt"}, s.internal...))
	return t, p, ok
}

// eosWaitOpenTxn waits until a partition the client writes has an open transaction.
func (r *scRun) eosWaitOpenTxn(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if s, err := r.eosObserve(ctx); err == nil {
			if _, _, ok := eosOpenTxn(s); ok {
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

// eosFinish ends a scenario as the system test does: the client stopped cleanly, EosTestDriver's
// verify; then kaudit diff (extra: more flags). It records both verdicts.
func (r *scRun) eosFinish(ctx context.Context, extra ...string) (string, kauditReport, error) {
	if _, err := r.eosWaitCaughtUp(ctx, 180*time.Second); err != nil {
		return "", kauditReport{}, err
	}
	if err := r.eosStopClient(); err != nil {
		return "", kauditReport{}, err
	}
	s, err := r.eosObserve(ctx)
	if err != nil {
		return "", kauditReport{}, err
	}
	var n int64
	for _, hw := range s.hw["data"] {
		n += hw
	}
	r.eos.truth.DataRecords = n
	verdict, err := r.eosVerify(ctx)
	if err != nil {
		return "", kauditReport{}, err
	}
	rep, err := r.runDiff(ctx, extra...)
	r.eos.truth.Kaudit = rep.summary()
	return verdict, rep, err
}

// scenarioEOSClean: EosTestDriver generates while EosTestClient runs and is killed -9 and
// restarted (each kill must leave a transaction open: with a 5 s commit interval nearly every
// one does); then the client catches up and stops. EosTestDriver must say
// ALL-RECORDS-DELIVERED and kaudit clean.
func scenarioEOSClean(ctx context.Context, r *scRun) error {
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	if err := r.eosStartDriver(); err != nil {
		return err
	}
	t0 := time.Now()
	for r.eos.truth.Landed < 2 {
		if r.eos.truth.Kills == 6 {
			return fmt.Errorf("%d kill -9 left only %d transaction(s) open: the fault was not injected", r.eos.truth.Kills, r.eos.truth.Landed)
		}
		// kill while a transaction is open (the client commits every 5 s)
		if err := r.eosWaitOpenTxn(ctx, 30*time.Second); err != nil {
			return fmt.Errorf("before kill %d: %w", r.eos.truth.Kills+1, err)
		}
		r.eosKillClient()
		r.eos.truth.Kills++
		time.Sleep(time.Second)
		s, err := r.eosObserve(ctx)
		if err != nil {
			return err
		}
		if t, p, ok := eosOpenTxn(s); ok {
			r.eos.truth.Landed++
			logf("kill %d left a transaction open on %s/%d", r.eos.truth.Kills, t, p)
		} else {
			logf("kill %d landed between transactions", r.eos.truth.Kills)
		}
		if err := r.eosStartClient(ctx); err != nil {
			return err
		}
	}
	if rest := eosGenerate - time.Since(t0); rest > 0 {
		time.Sleep(rest)
	}
	if err := r.eosStopDriver(); err != nil {
		return err
	}
	r.addFault(fault{Kind: "kill-9", Note: fmt.Sprintf("EosTestClient killed -9 %d times during generation (%d left a transaction open), restarted each time", r.eos.truth.Kills, r.eos.truth.Landed)})
	verdict, rep, err := r.eosFinish(ctx)
	if err != nil {
		return err
	}
	return allErrs(expectEOSVerify(verdict, true), expectVerdict(rep, "clean"), expectOnlyLossCauses(rep))
}

func expectEOSVerify(verdict string, delivered bool) error {
	if delivered != (verdict == "ALL-RECORDS-DELIVERED") {
		return fmt.Errorf("EosTestDriver says %q, want delivered=%v", verdict, delivered)
	}
	return nil
}

// eosRecord is one record of an eos topic, decoded (String key, Integer value).
type eosRecord struct {
	Partition int32
	Offset    int64
	Key       string
	Value     int32
	Timestamp int64
}

func (e eosRecord) String() string { return fmt.Sprintf("data/%d@%d", e.Partition, e.Offset) }

// eosRead reads the committed data records of topic/p in [from, to).
func (r *scRun) eosRead(ctx context.Context, topic string, p int32, from, to int64) ([]eosRecord, error) {
	recs, err := r.d.readPartition(ctx, topic, p, from, to, true)
	if err != nil {
		return nil, err
	}
	var out []eosRecord
	for _, rec := range recs {
		if rec.Attrs.IsControl() || len(rec.Value) != 4 {
			continue
		}
		out = append(out, eosRecord{Partition: p, Offset: rec.Offset, Key: string(rec.Key),
			Value: int32(binary.BigEndian.Uint32(rec.Value)), Timestamp: rec.Timestamp.UnixMilli()})
	}
	return out, nil
}

// sourceOf finds, on data/p, the record whose copy c is (data.to("repartition") keeps key,
// value and timestamp, and both topics have 5 partitions: the same partition).
func sourceOf(data []eosRecord, c eosRecord, used map[int64]bool) (eosRecord, bool) {
	for _, d := range data {
		if !used[d.Offset] && d.Key == c.Key && d.Value == c.Value && d.Timestamp == c.Timestamp {
			used[d.Offset] = true
			return d, true
		}
	}
	return eosRecord{}, false
}

// scenarioEOSRepartitionDeleted: EosTestClient is stopped cleanly right after the driver, so
// that the copies its last transaction wrote to `repartition` wait unconsumed above the group's
// committed offset; the first five of them on the fullest partition are deleted
// (DeleteRecords, what KAFKA-17635 does to an internal repartition topic). kaudit before the
// restart: purged-before-commit for exactly those inputs; after the restart (the consumer
// resets to the log start: the records are never applied) and EosTestDriver's verify: the same
// inputs, unapplied or purged-before-commit, and nothing else.
func scenarioEOSRepartitionDeleted(ctx context.Context, r *scRun) error {
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	if err := r.eosGenerate(ctx, eosGenerate); err != nil {
		return err
	}
	if err := r.eosStopClient(); err != nil {
		return err
	}
	s, err := r.eosObserve(ctx)
	if err != nil {
		return err
	}
	best, bestP, bestC := []eosRecord(nil), int32(-1), int64(0)
	for p, lso := range s.lso["repartition"] {
		c, ok := s.committed.get("repartition", p)
		if !ok {
			return fmt.Errorf("repartition/%d has no committed offset", p)
		}
		recs, err := r.eosRead(ctx, "repartition", p, c, lso)
		if err != nil {
			return err
		}
		logf("repartition/%d: committed %d, lso %d, %d committed records unconsumed", p, c, lso, len(recs))
		if len(recs) > len(best) {
			best, bestP, bestC = recs, p, c
		}
	}
	const n = 5
	if len(best) < n {
		return notInjected("no repartition partition holds %d committed unconsumed records (best %d)", n, len(best))
	}
	hit := best[:n]
	to := hit[n-1].Offset + 1
	dc, _ := s.committed.get("data", bestP)
	data, err := r.eosRead(ctx, "data", bestP, 0, dc)
	if err != nil {
		return err
	}
	used := map[int64]bool{}
	var lost []eosRecord
	for _, c := range hit {
		src, ok := sourceOf(data, c, used)
		if !ok {
			return fmt.Errorf("repartition/%d@%d (%s=%d) has no source record on data/%d below its committed offset %d", bestP, c.Offset, c.Key, c.Value, bestP, dc)
		}
		lost = append(lost, src)
	}
	r.eosLost(lost)
	r.addFault(fault{Kind: "delete-records", Topic: "repartition", Partition: bestP, From: bestC, To: to, Keys: eosKeys(lost), Records: r.eos.truth.Lost,
		Note: "DeleteRecords on the user topic repartition past the group's committed offset while EosTestClient is down"})
	if err := r.d.deleteRecords(ctx, "repartition", bestP, to); err != nil {
		return err
	}
	before, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	_ = os.Rename(filepath.Join(r.dir, "kaudit.json"), filepath.Join(r.dir, "kaudit-before.json"))
	_ = os.Rename(filepath.Join(r.dir, "kaudit.md"), filepath.Join(r.dir, "kaudit-before.md"))
	// the copies' own evidence (the log start above the committed offset) proves each input
	// lost in both tables that read repartition, whatever its effect on the state
	want := map[string]eosExpect{"max": {must: lost}, "cnt": {must: lost}}
	beforeErr := allErrs(expectVerdict(before, "loss"), expectOnlyLossCauses(before, "purged-before-commit"),
		expectEOSTables(before, want))
	// (the log dirs are audited after the restart only: stopping and restarting the three
	// brokers here too costs 20-30 s of CI; measured once, they gave this report exactly)
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	verdict, rep, err := r.eosFinish(ctx)
	if err != nil {
		return err
	}
	return allErrs(beforeErr, expectEOSVerify(verdict, false), expectVerdict(rep, "loss"),
		expectOnlyLossCauses(rep, "purged-before-commit", "unapplied"), expectEOSTables(rep, want))
}

func (r *scRun) eosLost(lost []eosRecord) {
	for _, l := range lost {
		r.eos.truth.Lost = append(r.eos.truth.Lost, l.String())
	}
	sort.Strings(r.eos.truth.Lost)
}

func eosKeys(recs []eosRecord) []string {
	set := map[string]bool{}
	for _, r := range recs {
		set[r.Key] = true
	}
	return keys(set)
}

// tableOf is the table a finding's detail names ("table cnt; …"), or "".
func tableOf(f finding) string {
	if rest, ok := strings.CutPrefix(f.Detail, "copy "); ok { // copies: "copy data → echo: …"
		_, out, _ := strings.Cut(rest, "→ ")
		name, _, _ := strings.Cut(out, ":")
		return "copy " + strings.TrimSpace(name)
	}
	rest, ok := strings.CutPrefix(f.Detail, "table ")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ";")
	name, _, _ = strings.Cut(name, ":")
	return strings.TrimSpace(name)
}

// eosExpect is what one table's loss findings must name: at least the records of must, at
// most those of may (nil may: exactly must).
type eosExpect struct{ must, may []eosRecord }

// expectEOSTables fails unless each table's loss findings name the records its eosExpect
// allows (a table not in want must have none), each finding naming one data record.
func expectEOSTables(rep kauditReport, want map[string]eosExpect) error {
	got := map[string]map[string]bool{}
	var errs []error
	for _, f := range rep.loss() {
		t := tableOf(f)
		if f.Topic != "data" {
			errs = append(errs, fmt.Errorf("loss finding not on a data record: %s", f))
			continue
		}
		if got[t] == nil {
			got[t] = map[string]bool{}
		}
		for o := f.Offset; o < f.Offset+max(f.Count, 1); o++ {
			got[t][fmt.Sprintf("data/%d@%d", f.Partition, o)] = true
		}
	}
	names := func(rs []eosRecord) map[string]bool {
		m := map[string]bool{}
		for _, r := range rs {
			m[r.String()] = true
		}
		return m
	}
	for t, g := range got {
		if _, ok := want[t]; !ok {
			errs = append(errs, fmt.Errorf("table %s: %d records named, want none: %v", t, len(g), head(keys(g), 8)))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(want)) {
		w := want[t]
		must, may := names(w.must), names(w.may)
		if w.may == nil {
			may = must
		}
		for r := range must {
			if !got[t][r] {
				errs = append(errs, fmt.Errorf("table %s: %s not named", t, r))
			}
		}
		for r := range got[t] {
			if !may[r] {
				errs = append(errs, fmt.Errorf("table %s: %s named, not a lost record", t, r))
			}
		}
		logf("table %s: kaudit names %d records (the drill: %d must, %d may)", t, len(got[t]), len(must), len(may))
	}
	return allErrs(errs...)
}

// changesFinal returns the records of lost whose absence changes their key's final state
// under fold (the value, and the timestamp: the largest of the applied inputs'): the state
// the table holds (every input of all but the lost ones applied) against the one it would
// hold with that record applied too. all: every input of the partition the table consumed,
// the lost ones included. A record whose absence leaves the final state as it is may still be
// provable from the key's history, or not.
func changesFinal(all, lost []eosRecord, fold func(agg, v int64) int64) []eosRecord {
	gone := map[int64]bool{}
	for _, l := range lost {
		gone[l.Offset] = true
	}
	type st struct {
		v, ts int64
		has   bool
	}
	final := func(key string, with int64) st {
		var s st
		for _, r := range all {
			if r.Key != key || (gone[r.Offset] && r.Offset != with) {
				continue
			}
			if !s.has {
				s = st{v: int64(r.Value), ts: r.Timestamp, has: true}
				continue
			}
			s.v, s.ts = fold(s.v, int64(r.Value)), max(s.ts, r.Timestamp)
		}
		return s
	}
	var out []eosRecord
	for _, l := range lost {
		if final(l.Key, l.Offset) != final(l.Key, -1) {
			out = append(out, l)
		}
	}
	return out
}

// scenarioEOSOffsetsForward: after a first generation the client catches up and stops; the
// driver generates again while it is down; the group's committed offset on data/0 is moved 10
// records forward (OffsetCommit while the group is empty). The restarted client never reads
// them: no echo, min, sum, repartition copy, max or cnt of them. kaudit must name exactly them.
func scenarioEOSOffsetsForward(ctx context.Context, r *scRun) error {
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	if err := r.eosGenerate(ctx, eosGenerate/2); err != nil {
		return err
	}
	if _, err := r.eosWaitCaughtUp(ctx, 180*time.Second); err != nil {
		return err
	}
	if err := r.eosStopClient(); err != nil {
		return err
	}
	// about 100 records per data partition while the client is down
	if err := r.eosGenerate(ctx, 4*time.Second); err != nil {
		return err
	}
	s, err := r.eosObserve(ctx)
	if err != nil {
		return err
	}
	const p, k = int32(0), int64(10)
	c, _ := s.committed.get("data", p)
	hw, _ := s.hw.get("data", p)
	if hw-c < k {
		return fmt.Errorf("data/%d has only %d unconsumed records, need %d", p, hw-c, k)
	}
	lost, err := r.eosRead(ctx, "data", p, c, c+k)
	if err != nil {
		return err
	}
	r.eosLost(lost)
	r.addFault(fault{Kind: "offset-commit", Topic: "data", Partition: p, From: c, To: c + k, Keys: eosKeys(lost), Records: r.eos.truth.Lost,
		Note: "the group's committed offset on data moved forward with OffsetCommit while the group was empty"})
	if err := r.d.waitGroupEmptyOf(ctx, eosAppID); err != nil {
		return err
	}
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	offs := make(kadm.Offsets)
	offs.Add(kadm.Offset{Topic: "data", Partition: p, At: c + k, LeaderEpoch: -1})
	res, err := adm.CommitOffsets(ctx, eosAppID, offs)
	closeFn()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of %s: %w", eosAppID, err)
	}
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	verdict, rep, err := r.eosFinish(ctx)
	if err != nil {
		return err
	}
	// max and cnt: no copy on repartition between readable neighbours proves each; min and
	// sum: the spec says caching: false (the client runs with cache 0) and data/p and the
	// changelogs are whole, so every application is a state and each skipped record is missing
	// from its key's history, even where it changes no final state (changesFinal logs those);
	// echo: no copy of any
	c1, err := r.eosObserveCommitted(ctx, p)
	if err != nil {
		return err
	}
	all, err := r.eosRead(ctx, "data", p, 0, c1)
	if err != nil {
		return err
	}
	sumMust := changesFinal(all, lost, func(a, v int64) int64 { return a + v })
	minMust := changesFinal(all, lost, func(a, v int64) int64 { return min(a, v) })
	logf("of the %d skipped records, %d change their key's final sum and %d its final min", len(lost), len(sumMust), len(minMust))
	if fw := rep.byCause("offsets-forward"); len(fw) > 0 {
		// the group's commit history shows the admin's commit: the range is
		// one finding, and its records are no table's inputs
		return allErrs(expectEOSVerify(verdict, false), expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "offsets-forward"),
			expectRange("offsets-forward", fw, "data", p, c, c+k))
	}
	want := map[string]eosExpect{"max": {must: lost}, "cnt": {must: lost}, "sum": {must: lost}, "min": {must: lost}, "copy echo": {must: lost}}
	return allErrs(expectEOSVerify(verdict, false), expectVerdict(rep, "loss"),
		expectOnlyLossCauses(rep, "dropped", "unapplied", "join-missing"), expectEOSTables(rep, want))
}

// eosStoreOf finds, in describe() text, the store whose table is written to sink topic t
// (Processor … (stores: [S]) --> KTABLE-TOSTREAM-N; KTABLE-TOSTREAM-N --> SINK; Sink: SINK (topic: t)).
func eosStoreOf(describe, t string) (string, error) {
	next := map[string]string{}
	stores := map[string]string{}
	sinks := map[string]string{}
	node := ""
	nodeRe := regexp.MustCompile(`^\s*(?:Processor|Source|Sink): (\S+)(?: \(stores: \[([^\]]*)\]\)| \(topic: (\S+)\))?`)
	for _, l := range strings.Split(describe, "\n") {
		if m := nodeRe.FindStringSubmatch(l); m != nil {
			node = m[1]
			if m[2] != "" {
				stores[node] = m[2]
			}
			if m[3] != "" {
				sinks[m[3]] = node
			}
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "--> "); ok && node != "" {
			next[node] = strings.Split(rest, ", ")[0]
		}
	}
	for proc, st := range stores {
		if n := next[proc]; n != "" && next[n] == sinks[t] && sinks[t] != "" {
			return st, nil
		}
	}
	return "", fmt.Errorf("describe() has no store written to %s", t)
}

// scenarioEOSWipedStore: after a first generation the client catches up and stops cleanly (its
// .checkpoint files written); the sum store of task 0_0 loses its RocksDB dir while the
// checkpoint claims the changelog's end (the KAFKA-16017 outcome), so Streams restores nothing;
// the driver generates again. Every key of data/0 with inputs on both sides of the wipe
// restarts its sum: state-reset for exactly its inputs before the wipe.
func scenarioEOSWipedStore(ctx context.Context, r *scRun) error {
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	if err := r.eosGenerate(ctx, eosGenerate/2); err != nil {
		return err
	}
	s, err := r.eosWaitCaughtUp(ctx, 180*time.Second)
	if err != nil {
		return err
	}
	if err := r.eosStopClient(); err != nil {
		return err
	}
	describe, err := os.ReadFile(filepath.Join(r.dir, "describe.txt"))
	if err != nil {
		return fmt.Errorf("read describe: %w", err)
	}
	store, err := eosStoreOf(string(describe), "sum")
	if err != nil {
		return err
	}
	const p = int32(0)
	changelog := eosAppID + "-" + store + "-changelog"
	hw, _ := s.hw.get(changelog, p)
	c0, _ := s.committed.get("data", p)
	before, err := r.eosRead(ctx, "data", p, 0, c0)
	if err != nil {
		return err
	}
	taskDir := filepath.Join(r.stateDir, eosAppID, fmt.Sprintf("0_%d", p))
	if err := os.RemoveAll(filepath.Join(taskDir, "rocksdb", store)); err != nil {
		return fmt.Errorf("wipe store dir: %w", err)
	}
	if err := forgeCheckpoint(filepath.Join(taskDir, ".checkpoint"), changelog, p, hw-1); err != nil {
		return err
	}
	if err := r.eosStartClient(ctx); err != nil {
		return err
	}
	if err := r.eosGenerate(ctx, eosGenerate/2); err != nil {
		return err
	}
	verdict, rep, err := r.eosFinish(ctx, "--state-dir", r.stateDir)
	if err != nil {
		return err
	}
	c1, _ := r.eosObserveCommitted(ctx, p)
	after, err := r.eosRead(ctx, "data", p, c0, c1)
	if err != nil {
		return err
	}
	again := map[string]bool{}
	for _, a := range after {
		again[a.Key] = true
	}
	var lost []eosRecord
	for _, b := range before {
		if again[b.Key] {
			lost = append(lost, b)
		}
	}
	r.eosLost(lost)
	r.addFault(fault{Kind: "state-wipe", Topic: changelog, Partition: p, From: 0, To: hw, Keys: eosKeys(lost), Records: r.eos.truth.Lost,
		Note: fmt.Sprintf("rocksdb/%s of task 0_%d deleted, .checkpoint forged at %d; the sums of keys with later inputs restart", store, p, hw-1)})
	if len(lost) == 0 {
		return notInjected("no key of data/%d has inputs before and after the wipe", p)
	}
	return allErrs(expectEOSVerify(verdict, false), expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "state-reset"),
		expectEOSTables(rep, map[string]eosExpect{"sum": {must: lost}}))
}

func (r *scRun) eosObserveCommitted(ctx context.Context, p int32) (int64, error) {
	s, err := r.eosObserve(ctx)
	if err != nil {
		return 0, err
	}
	c, _ := s.committed.get("data", p)
	return c, nil
}
