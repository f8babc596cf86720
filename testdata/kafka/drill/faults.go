package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// largePurge keeps Streams from purging repartition topics during a scenario.
const largePurge = int64(3_600_000)

// scenarioClean: input arrives while the app runs; the app is killed -9 twice while a
// transaction is open on the output or a changelog and restarted each time. Caching is off in
// this scenario: with the seed's 30 MB cache, changelog and output records are only written
// in the cache flush right before the commit, so a kill almost never lands in a transaction
// that holds them. Nothing is lost: kaudit must say clean, and the
// aborted transactions must show in kaudit ledger exactly as the drill counts them raw.
func scenarioClean(ctx context.Context, r *scRun) error {
	recs := genWave(wave1)
	// A commit interval of 1 s (EOS's default is 100 ms) keeps each transaction open long
	// enough for a kill to land in it: with 100 ms, CI on Kafka 4.1.1 once saw three kills in a
	// row land between transactions, until the input ran out.
	o := appOpts{noCache: true, commitMs: 1000}
	if err := r.startApp(ctx, o); err != nil {
		return err
	}
	prodErr := make(chan error, 1)
	go func() { prodErr <- r.d.produce(ctx, recs, 8, 120*time.Millisecond) }()
	// A kill lands between transactions when the one seen open commits before the signal
	// arrives (EOS commits every 100 ms). Each kill is therefore checked: with the app dead, a
	// transaction still open a second later is one the restart must abort. A kill that left
	// none is repeated, up to maxKills in all; the scenario fails if two never land.
	const maxKills = 10
	for landed, kills := 0, 0; landed < 2; {
		if kills == maxKills {
			return notInjected("%d kill -9 left only %d transaction(s) hanging", kills, landed)
		}
		kills++
		if err := r.waitOpenTxn(ctx, 60*time.Second, true); err != nil {
			if kills > 1 && ctx.Err() == nil {
				// measured on Kafka 4.1.1: a kill between transactions, and the restarted app
				// had applied all the input before another transaction opened
				return notInjected("before kill %d (%d landed): %v", kills, landed, err)
			}
			return fmt.Errorf("before kill %d: %w", kills, err)
		}
		r.app.kill9()
		r.app = nil
		time.Sleep(time.Second)
		s, err := r.d.observe(ctx)
		if err != nil {
			return fmt.Errorf("after kill %d: %w", kills, err)
		}
		if t, p, lso, hw, ok := s.openTxn(true); ok {
			landed++
			logf("kill %d left a transaction hanging on %s/%d (lso %d, hw %d)", kills, t, p, lso, hw)
		} else {
			logf("kill %d landed between transactions; the app is restarted and killed again", kills)
		}
		if err := r.startApp(ctx, o); err != nil {
			return err
		}
	}
	if err := <-prodErr; err != nil {
		return err
	}
	r.truth.Records = append(r.truth.Records, recs...)
	s, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second)
	if err != nil {
		return err
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	if s, err = r.d.observe(ctx); err != nil {
		return err
	}
	bad, err := r.checkOutput(ctx, s, nil)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the reference app lost data in a clean run: %d keys differ %v", len(bad), head(bad, 10))
	}
	written := append(append([]string{topicOutput}, s.changelogs()...), s.repartitions()...)
	aborts, err := r.d.countAborts(ctx, s, written)
	if err != nil {
		return err
	}
	total := 0
	for _, n := range aborts {
		total += n
	}
	logf("ABORT markers read raw: %v", aborts)
	downstream := aborts[topicOutput]
	for _, t := range s.changelogs() {
		downstream += aborts[t]
	}
	if total == 0 || downstream == 0 {
		return errors.New("two kill -9 mid-transaction left no aborted transaction on the output or a changelog: the fault was not injected")
	}
	for _, t := range []string{topicOutput} {
		n, err := r.d.ledgerAborted(ctx, r.dir, t)
		if err != nil {
			return err
		}
		if n != aborts[t] {
			return fmt.Errorf("kaudit ledger counts %d aborted transactions on %s, the raw read %d ABORT markers", n, t, aborts[t])
		}
	}
	for _, t := range s.changelogs() {
		n, err := r.d.ledgerAborted(ctx, r.dir, t)
		if err != nil {
			return err
		}
		if n != aborts[t] {
			return fmt.Errorf("kaudit ledger counts %d aborted transactions on %s, the raw read %d ABORT markers", n, t, aborts[t])
		}
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	return allErrs(expectVerdict(rep, "clean"), expectOnlyLossCauses(rep))
}

// waitOpenTxn waits until a partition the app writes has an open transaction (LSO < HW), so
// that a kill -9 lands mid-transaction. downstream: only the output and changelog topics count
// (so that the aborted transaction shows there, not only on a repartition topic).
func (r *scRun) waitOpenTxn(ctx context.Context, timeout time.Duration, downstream bool) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		s, err := r.d.observe(ctx)
		if err == nil {
			if t, p, lso, hw, ok := s.openTxn(downstream); ok {
				logf("open transaction on %s/%d (lso %d, hw %d)", t, p, lso, hw)
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no open transaction seen within %s", timeout)
}

// openTxn finds a partition the app writes with an open transaction (LSO < HW). downstream:
// only the output and changelog topics count.
func (s state) openTxn(downstream bool) (topic string, p int32, lso, hw int64, ok bool) {
	topics := append([]string{topicOutput}, s.internal...)
	if downstream {
		topics = append([]string{topicOutput}, s.changelogs()...)
	}
	return s.openIn(topics)
}

// openIn finds, among topics (nil: every topic of s), a partition whose LSO is below its high
// watermark: a transaction is open there.
func (s state) openIn(topics []string) (topic string, p int32, lso, hw int64, ok bool) {
	if topics == nil {
		topics = slices.Collect(maps.Keys(s.hw))
	}
	for _, t := range topics {
		for p, hw := range s.hw[t] {
			if lso, _ := s.lso.get(t, p); lso < hw {
				return t, p, lso, hw, true
			}
		}
	}
	return "", 0, 0, 0, false
}

// openNote says which partition has a transaction open, "" when none has.
func (s state) openNote() string {
	if t, p, lso, hw, ok := s.openIn(nil); ok {
		return fmt.Sprintf("%s/%d lso %d != hw %d (open transaction)", t, p, lso, hw)
	}
	return ""
}

// deleteRecords moves topic/p's log start to off with DeleteRecords.
func (d *drill) deleteRecords(ctx context.Context, topic string, p int32, off int64) error {
	adm, closeFn, err := d.admin()
	if err != nil {
		return err
	}
	defer closeFn()
	offs := make(kadm.Offsets)
	offs.Add(kadm.Offset{Topic: topic, Partition: p, At: off})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		return fmt.Errorf("delete records of %s/%d below %d: %w", topic, p, off, err)
	}
	if err := res.Error(); err != nil {
		return fmt.Errorf("delete records of %s/%d below %d: %w", topic, p, off, err)
	}
	return nil
}

// scenarioRetentionGap: after a clean baseline the app is down; 60 new orders arrive; the first
// 10 unconsumed records of orders/0 are deleted (DeleteRecords past the committed offset).
// kaudit runs before the app restarts: retention-gap, exactly that range.
func scenarioRetentionGap(ctx context.Context, r *scRun) error {
	if _, err := r.baseline(ctx, appOpts{}); err != nil {
		return err
	}
	if err := r.produce(ctx, genWave(waveSpec{wave: 2, orders: 60}), 200, 0); err != nil {
		return err
	}
	s, err := r.d.observe(ctx)
	if err != nil {
		return err
	}
	const p, k = int32(0), int64(10)
	c, _ := s.committed.get(topicOrders, p)
	hw, _ := s.hw.get(topicOrders, p)
	if hw-c < k {
		return fmt.Errorf("orders/%d has only %d unconsumed records, need %d", p, hw-c, k)
	}
	hit := r.recordsIn(topicOrders, p, c, c+k)
	r.addFault(fault{Kind: "delete-records", Topic: topicOrders, Partition: p, From: c, To: c + k, Keys: orderIDs(hit),
		Note: "DeleteRecords past the group's committed offset while the app is down"})
	if err := r.d.deleteRecords(ctx, topicOrders, p, c+k); err != nil {
		return err
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	if err := allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "retention-gap"),
		expectRange("retention-gap", rep.byCause("retention-gap"), topicOrders, p, c, c+k)); err != nil {
		return err
	}
	// after the restart the app resets to the log start and commits past the hole: the cut
	// looks whole, the group's commit history and the broker's log line prove the same range
	rep, err = r.afterRestart(ctx, appOpts{})
	if err != nil {
		return err
	}
	return prefixErr("after the restart", allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "retention-gap"),
		expectRange("retention-gap", rep.byCause("retention-gap"), topicOrders, p, c, c+k)))
}

// afterRestart restarts the app, waits until it has caught up (committed past whatever it
// reset over), stops it and audits again with the brokers' logs, as an operator who restarted
// first and audits after.
func (r *scRun) afterRestart(ctx context.Context, o appOpts) (kauditReport, error) {
	if err := r.startApp(ctx, o); err != nil {
		return kauditReport{}, err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return kauditReport{}, err
	}
	if err := r.stopApp(); err != nil {
		return kauditReport{}, err
	}
	return r.runDiff(ctx, r.brokerLogArgs()...)
}

// brokerLogArgs passes every broker's log to kaudit diff (--broker-log): its log-start lines
// date the deletions an audit after a restart needs. The brokers log their local time without a
// zone, and run in UTC (cluster.sh: -Duser.timezone=UTC): --log-timezone says so, as an operator
// would (without it each time is an interval of ±14 h, which dates nothing to the second).
func (r *scRun) brokerLogArgs() []string {
	var logs []string
	for id := 1; id <= 100; id++ {
		f := filepath.Join(r.d.o.work, "cluster", "logs", fmt.Sprintf("n%d.log", id))
		if _, err := os.Stat(f); err == nil {
			logs = append(logs, "--broker-log", f)
		}
	}
	if len(logs) > 0 {
		logs = append(logs, "--log-timezone", "UTC")
	}
	return logs
}

// scenarioPurgedBeforeCommit: after a clean baseline (every repartition partition has a
// committed offset), a second wave arrives and the app runs with a slow repartition
// deserializer: stage 1 (source -> repartition) finishes while stage 2 (repartition -> reduce)
// has barely started. The app is stopped cleanly; committed repartition records wait
// unconsumed. A StreamThread processes all it has buffered before it sees the close (its
// runOnce loop breaks only when nothing is left or after half of max.poll.interval.ms), so the
// app polls 20 records at a time: with Streams' 1000 the close drained the whole backlog in
// 14 s on a slow CI machine and nothing was left to purge. The first five of them on the fullest repartition partition are deleted (what
// KAFKA-17635 does). kaudit runs before the app restarts: purged-before-commit on that range.
func scenarioPurgedBeforeCommit(ctx context.Context, r *scRun) error {
	if _, err := r.baseline(ctx, appOpts{purgeMs: largePurge}); err != nil {
		return err
	}
	if err := r.produce(ctx, genWave(waveSpec{wave: 2, orders: 200, payments: true, shipments: true}), 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, appOpts{purgeMs: largePurge, slowRepartMs: 25, props: []string{"max.poll.records=20"}}); err != nil {
		return err
	}
	// Stop once stage 1 has committed all of the source.
	deadline := time.Now().Add(120 * time.Second)
	for {
		s, err := r.d.observe(ctx)
		if err != nil {
			return err
		}
		var c, hw int64
		for _, t := range sourceTopics {
			for p, h := range s.hw[t] {
				hw += h
				v, _ := s.committed.get(t, p)
				c += v
			}
		}
		if c >= hw {
			logf("source committed %d of %d: stopping the app", c, hw)
			break
		}
		if time.Now().After(deadline) || !r.app.alive() {
			return fmt.Errorf("stage 1 did not commit the source within 120s (%d of %d)", c, hw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	s, err := r.d.observe(ctx)
	if err != nil {
		return err
	}
	// Find the repartition partition with the most committed, unconsumed data records.
	type cand struct {
		topic string
		p     int32
		c     int64
		data  []int64 // offsets of data records in [c, lso)
		keys  []string
	}
	var best cand
	for _, t := range s.repartitions() {
		for p, lso := range s.lso[t] {
			c, ok := s.committed.get(t, p)
			if !ok || c == 0 {
				return fmt.Errorf("%s/%d has no committed offset after the baseline", t, p)
			}
			recs, err := r.d.readPartition(ctx, t, p, c, lso, true)
			if err != nil {
				return err
			}
			cd := cand{topic: t, p: p, c: c}
			for _, rec := range recs {
				if !rec.Attrs.IsControl() {
					cd.data = append(cd.data, rec.Offset)
					cd.keys = append(cd.keys, string(rec.Key))
				}
			}
			logf("%s/%d: committed %d, lso %d, %d committed data records unconsumed", t, p, c, lso, len(cd.data))
			if len(cd.data) > len(best.data) {
				best = cd
			}
		}
	}
	const n = 5
	if len(best.data) < n {
		return notInjected("no repartition partition holds %d committed unconsumed records (best %d): the fault cannot be injected", n, len(best.data))
	}
	to := best.data[n-1] + 1
	set := map[string]bool{}
	for _, k := range best.keys[:n] {
		set[k] = true
	}
	r.addFault(fault{Kind: "delete-records", Topic: best.topic, Partition: best.p, From: best.c, To: to, Keys: keys(set),
		Note: "DeleteRecords on a repartition topic past the group's committed offset while the app is down (KAFKA-17635 signature)"})
	if err := r.d.deleteRecords(ctx, best.topic, best.p, to); err != nil {
		return err
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	if err := allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "purged-before-commit")); err != nil {
		return err
	}
	fs := rep.byCause("purged-before-commit")
	if len(fs) == 0 {
		return errors.New("no purged-before-commit finding")
	}
	// kaudit may name the purged repartition range, or the source records whose derived
	// records were in it; both must point at this fault only.
	for _, f := range fs {
		inRange := f.Topic == best.topic && f.Partition == best.p && f.Offset < to && f.Offset+max(f.Count, 1) > best.c
		if !inRange && !set[f.keyString()] {
			return fmt.Errorf("purged-before-commit finding outside the fault %s/%d [%d, %d) keys %v: %s", best.topic, best.p, best.c, to, keys(set), f)
		}
	}
	// after the restart the app resumes at the log start: the purged copies' inputs are
	// consumed and their effect missing from the store, named by key (unapplied), or the
	// range itself where the history proves it
	rep, err = r.afterRestart(ctx, appOpts{purgeMs: largePurge})
	if err != nil {
		return err
	}
	if err := prefixErr("after the restart", allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "purged-before-commit", "unapplied"))); err != nil {
		return err
	}
	for _, f := range append(rep.byCause("unapplied"), rep.byCause("purged-before-commit")...) {
		inRange := f.Topic == best.topic && f.Partition == best.p && f.Offset < to && f.Offset+max(f.Count, 1) > best.c
		if !inRange && !set[f.keyString()] {
			return fmt.Errorf("after the restart: %s finding outside the fault %s/%d [%d, %d) keys %v: %s", f.Cause, best.topic, best.p, best.c, to, keys(set), f)
		}
	}
	return nil
}

// dropList is the orderIds the app swallows in the dropped scenarios.
var dropList = []string{"o-w1-0007", "o-w1-0042", "o-w1-0100", "o-w1-0151", "o-w1-0299"}

func dropSkip(r *inputRec) bool {
	if r.Topic != topicOrders || r.OrderID == nil {
		return false
	}
	for _, k := range dropList {
		if *r.OrderID == k {
			return true
		}
	}
	return false
}

func (r *scRun) addDropFault() {
	for _, k := range dropList {
		for _, rec := range r.truth.Records {
			if rec.Topic == topicOrders && rec.OrderID != nil && *rec.OrderID == k {
				r.addFault(fault{Kind: "app-drop", Topic: rec.Topic, Partition: rec.Partition, From: rec.Offset, To: rec.Offset + 1,
					Keys: []string{k}, Note: "swallowed by the app before selectKey"})
			}
		}
	}
}

// scenarioDropped: the app swallows every order record of five orderIds; repartition topics are
// not purged, so the positions where their repartition records belong are readable: dropped.
func scenarioDropped(ctx context.Context, r *scRun) error {
	s, err := r.baseline(ctx, appOpts{purgeMs: largePurge, dropOrders: dropList})
	if err != nil {
		return err
	}
	r.addDropFault()
	bad, err := r.checkOutput(ctx, s, dropSkip)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the app's output is not the input minus the dropped records: %v", head(bad, 10))
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "dropped"),
		expectKeys("dropped", rep.byCause("dropped"), dropList), r.checkExchangeShards(ctx, 3), r.auditOffline(ctx, rep))
}

// scenarioDroppedPurged: as dropped, with Streams' default purge; kaudit runs once the
// repartition topics are purged up to the committed offsets, so the evidence cannot tell a drop
// from a purge: unapplied.
func scenarioDroppedPurged(ctx context.Context, r *scRun) error {
	if err := r.produce(ctx, genWave(wave1), 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, appOpts{dropOrders: dropList}); err != nil {
		return err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return err
	}
	r.addDropFault()
	s, err := r.waitPurged(ctx)
	if err != nil {
		return err
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	bad, err := r.checkOutput(ctx, s, dropSkip)
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the app's output is not the input minus the dropped records: %v", head(bad, 10))
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "unapplied"),
		expectKeys("unapplied", rep.byCause("unapplied"), dropList))
}

// waitPurged waits for Streams' own purge (every 30 s by default) to move each repartition
// partition's log start to its committed offset (or one below it, the final marker), so that
// every copy written so far is gone.
func (r *scRun) waitPurged(ctx context.Context) (state, error) {
	deadline := time.Now().Add(75 * time.Second)
	for {
		s, err := r.d.observe(ctx)
		if err != nil {
			return s, err
		}
		purged := len(s.repartitions()) > 0
		for _, t := range s.repartitions() {
			for p := range s.hw[t] {
				st, _ := s.start.get(t, p)
				c, _ := s.committed.get(t, p)
				purged = purged && st >= c-1 && c > 0
			}
		}
		if purged {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, errors.New("the repartition topics were not purged within 75s")
		}
		time.Sleep(time.Second)
	}
}

// scenarioOffsetsForward: after a clean baseline the app is down, 60 new orders arrive and the
// group's offset on orders/0 is moved 10 records forward; the app restarts and never reads them.
// The evidence: consumed (below C) yet never reached the repartition topic, whose neighbouring
// records are readable (no purge): dropped or unapplied, stage source or repartition. Not a
// retention gap: nothing was deleted.
func scenarioOffsetsForward(ctx context.Context, r *scRun) error {
	if _, err := r.baseline(ctx, appOpts{purgeMs: largePurge}); err != nil {
		return err
	}
	if err := r.produce(ctx, genWave(waveSpec{wave: 2, orders: 60}), 200, 0); err != nil {
		return err
	}
	s, err := r.d.observe(ctx)
	if err != nil {
		return err
	}
	const p, k = int32(0), int64(10)
	c, _ := s.committed.get(topicOrders, p)
	hit := r.recordsIn(topicOrders, p, c, c+k)
	r.addFault(fault{Kind: "offset-commit", Topic: topicOrders, Partition: p, From: c, To: c + k, Keys: orderIDs(hit),
		Note: "the group's committed offset moved forward with OffsetCommit while the group was empty"})
	if err := r.d.waitGroupEmpty(ctx); err != nil {
		return err
	}
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	offs := make(kadm.Offsets)
	offs.Add(kadm.Offset{Topic: topicOrders, Partition: p, At: c + k, LeaderEpoch: -1})
	res, err := adm.CommitOffsets(ctx, appID, offs)
	closeFn()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of %s: %w", appID, err)
	}
	if err := r.startApp(ctx, appOpts{purgeMs: largePurge}); err != nil {
		return err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return err
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	if s, err = r.d.observe(ctx); err != nil {
		return err
	}
	skipped := map[*inputRec]bool{}
	for _, h := range hit {
		skipped[h] = true
	}
	bad, err := r.checkOutput(ctx, s, func(rec *inputRec) bool { return skipped[rec] })
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the app's output is not the input minus the skipped records: %v", head(bad, 10))
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	if fw := rep.byCause("offsets-forward"); len(fw) > 0 {
		// the group's commit history shows the admin's commit while the group
		// was empty: the range is one finding, its records no table's inputs
		return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "offsets-forward"),
			expectRange("offsets-forward", fw, topicOrders, p, c, c+k))
	}
	lost := append(rep.byCause("dropped"), rep.byCause("unapplied")...)
	for _, f := range lost {
		if f.Stage != "source" && f.Stage != "repartition" {
			return fmt.Errorf("skipped record reported at stage %s: %s", f.Stage, f)
		}
	}
	return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "dropped", "unapplied"),
		expectKeys("dropped/unapplied", lost, orderIDs(hit)))
}

// scenarioOutage is the seed: input keeps arriving while every broker is killed -9 for
// -outage and restarted. The drill compares the output with its own fold of the input; kaudit's
// loss findings must name exactly the keys the data shows lost (normally none).
func scenarioOutage(ctx context.Context, r *scRun) error {
	return r.outage(ctx, appOpts{rf: r.d.brokers}, r.d.o.outage)
}

// scenarioOutageDefaults is the seed before its fix: the app keeps the clients' max.block.ms
// (60 s) and the outage lasts longer than that, so blocked producer calls time out while the
// brokers are down (the seed saw BufferExhaustedException → TaskCorruptedException).
func scenarioOutageDefaults(ctx context.Context, r *scRun) error {
	return r.outage(ctx, appOpts{rf: r.d.brokers, kafkaTimeout: true}, max(r.d.o.outage, 75*time.Second))
}

func (r *scRun) outage(ctx context.Context, o appOpts, down time.Duration) error {
	recs := genWave(wave1)
	if err := r.startApp(ctx, o); err != nil {
		return err
	}
	prodErr := make(chan error, 1)
	go func() { prodErr <- r.d.produce(ctx, recs, 8, 100*time.Millisecond) }()
	if err := r.waitOpenTxn(ctx, 60*time.Second, false); err != nil {
		return err
	}
	time.Sleep(2 * time.Second)
	logf("outage: kill -9 every broker for %s", down)
	if err := r.d.cluster(ctx, "kill9"); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(down):
	}
	t0 := time.Now()
	if err := r.d.cluster(ctx, "start", "--brokers", fmt.Sprint(r.d.brokers)); err != nil {
		return err
	}
	if err := r.d.waitBrokers(ctx, r.d.brokers); err != nil {
		return err
	}
	logf("outage over: brokers back in %s", time.Since(t0).Round(100*time.Millisecond))
	if err := <-prodErr; err != nil {
		return err
	}
	r.truth.Records = append(r.truth.Records, recs...)
	s, err := r.d.waitCaughtUp(ctx, r.app, 240*time.Second)
	// A stream thread that died of the outage (Kafka 4.x: "Cannot execute transactional method
	// because we are in an error state") is restarted as an operator would, at most twice.
	for restarts := 0; err != nil && r.app != nil && !r.app.alive() && restarts < 2; restarts++ {
		why, _ := r.app.find("stream thread died", 0)
		logf("the app died after the outage (%v): restarting it, as an operator would", err)
		r.addFault(fault{Kind: "app-died", Note: fmt.Sprintf("the app exited after the outage (%s; %s); restarted by the drill", strings.TrimSpace(why), r.app.log)})
		r.app = nil
		if err := r.startApp(ctx, o); err != nil {
			return err
		}
		s, err = r.d.waitCaughtUp(ctx, r.app, 240*time.Second)
	}
	if err != nil {
		return err
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	if s, err = r.d.observe(ctx); err != nil {
		return err
	}
	bad, err := r.checkOutput(ctx, s, nil)
	if err != nil {
		return err
	}
	r.addFault(fault{Kind: "outage", Keys: bad, Note: fmt.Sprintf("every broker killed -9 for %s; keys: what the output shows lost", down)})
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	want := "clean"
	if len(bad) > 0 {
		want = "loss"
	}
	// issue R: on the RF 3 cluster, a broker killed in the middle of kaudit diff and capture
	return allErrs(expectVerdict(rep, want), expectKeys("loss", rep.loss(), bad), r.chaos(ctx))
}

// scenarioStateWipe: after a clean baseline (clean close: .checkpoint files written), the
// payments store of task <sub>_0 loses its RocksDB dir while the checkpoint claims the
// changelog's end (the KAFKA-16017 outcome); five of its keys get a new payment. The sum
// restarts from the new payment: state-reset for exactly those keys.
func scenarioStateWipe(ctx context.Context, r *scRun) error {
	s, err := r.baseline(ctx, appOpts{purgeMs: largePurge})
	if err != nil {
		return err
	}
	describe, err := os.ReadFile(filepath.Join(r.dir, "describe.txt"))
	if err != nil {
		return fmt.Errorf("read describe: %w", err)
	}
	store, sub, err := storeOf(string(describe), topicPayments)
	if err != nil {
		return err
	}
	changelog := appID + "-" + store + "-changelog"
	const p = int32(0)
	hw, _ := s.hw.get(changelog, p)
	lso, _ := s.lso.get(changelog, p)
	start, _ := s.start.get(changelog, p)
	recs, err := r.d.readPartition(ctx, changelog, p, start, lso, true)
	if err != nil {
		return err
	}
	inOrders := map[string]bool{}
	for _, rec := range r.truth.Records {
		if rec.Topic == topicOrders {
			inOrders[*rec.OrderID] = true
		}
	}
	set := map[string]bool{}
	for _, rec := range recs {
		if !rec.Attrs.IsControl() && rec.Value != nil && inOrders[string(rec.Key)] {
			set[string(rec.Key)] = true
		}
	}
	candidates := keys(set)
	if len(candidates) < 5 {
		return fmt.Errorf("%s/%d holds %d keys, need 5", changelog, p, len(candidates))
	}
	chosen := candidates[:5]
	taskDir := filepath.Join(r.stateDir, appID, fmt.Sprintf("%d_%d", sub, p))
	if err := os.RemoveAll(filepath.Join(taskDir, "rocksdb", store)); err != nil {
		return fmt.Errorf("wipe store dir: %w", err)
	}
	if err := forgeCheckpoint(filepath.Join(taskDir, ".checkpoint"), changelog, p, hw-1); err != nil {
		return err
	}
	var more []*inputRec
	for i, k := range chosen {
		pid := fmt.Sprintf("p-w2-%05d", i)
		kk := k
		more = append(more, &inputRec{Topic: topicPayments, Key: pid, OrderID: &kk, Wave: 2,
			Value: map[string]any{"paymentId": pid, "orderId": k, "amount": int64(1000 + i), "method": "card", "seq": int64(i)}})
	}
	if err := r.produce(ctx, more, 200, 0); err != nil {
		return err
	}
	r.addFault(fault{Kind: "state-wipe", Topic: changelog, Partition: p, From: start, To: hw, Keys: chosen,
		Note: fmt.Sprintf("rocksdb/%s of task %d_%d deleted, .checkpoint forged at %d; new payments for the keys", store, sub, p, hw-1)})
	if err := r.startApp(ctx, appOpts{purgeMs: largePurge}); err != nil {
		return err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return err
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	if s, err = r.d.observe(ctx); err != nil {
		return err
	}
	bad, err := r.checkOutput(ctx, s, nil)
	if err != nil {
		return err
	}
	if strings.Join(bad, ",") != strings.Join(chosen, ",") {
		return fmt.Errorf("the wipe did not reset exactly the chosen keys: output differs on %v, chose %v", bad, chosen)
	}
	rep, err := r.runDiff(ctx, "--state-dir", r.stateDir)
	if err != nil {
		return err
	}
	return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "state-reset"),
		expectKeys("state-reset", rep.byCause("state-reset"), chosen))
}

var (
	subRe    = regexp.MustCompile(`^\s*Sub-topology: (\d+)`)
	sourceRe = regexp.MustCompile(`Source: \S+ \(topics: \[([^\]]*)\]\)`)
	sinkRe   = regexp.MustCompile(`Sink: \S+ \(topic: (\S+)-repartition\)`)
)

// storeOf finds, in describe() text, the reduce store fed by source topic and the
// sub-topology that owns it.
func storeOf(describe, topic string) (string, int, error) {
	blocks := map[int][]string{}
	sub := -1
	var order []int
	sc := bufio.NewScanner(strings.NewReader(describe))
	for sc.Scan() {
		if m := subRe.FindStringSubmatch(sc.Text()); m != nil {
			sub, _ = strconv.Atoi(m[1])
			order = append(order, sub)
		}
		if sub >= 0 {
			blocks[sub] = append(blocks[sub], sc.Text())
		}
	}
	store := ""
	for _, n := range order {
		text := strings.Join(blocks[n], "\n")
		if m := sourceRe.FindStringSubmatch(text); m != nil && strings.TrimSpace(m[1]) == topic {
			if s := sinkRe.FindStringSubmatch(text); s != nil {
				store = s[1]
			}
		}
	}
	if store == "" {
		return "", 0, fmt.Errorf("describe() has no repartition sink fed by %s", topic)
	}
	sort.Ints(order)
	for _, n := range order {
		if strings.Contains(strings.Join(blocks[n], "\n"), "(stores: ["+store+"]") {
			return store, n, nil
		}
	}
	return "", 0, fmt.Errorf("describe() has no sub-topology holding store %s", store)
}

// forgeCheckpoint rewrites a Streams .checkpoint (version 0, count, "topic partition offset"
// lines) so that changelog/p claims offset off, keeping the other entries.
func forgeCheckpoint(path, changelog string, p int32, off int64) error {
	entries := map[string]int64{}
	if b, err := os.ReadFile(path); err == nil {
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, l := range lines[min(2, len(lines)):] {
			f := strings.Fields(l)
			if len(f) == 3 {
				v, _ := strconv.ParseInt(f[2], 10, 64)
				entries[f[0]+" "+f[1]] = v
			}
		}
	}
	key := fmt.Sprintf("%s %d", changelog, p)
	entries[key] = max(entries[key], off)
	var ks []string
	for k := range entries {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	fmt.Fprintf(&b, "0\n%d\n", len(ks))
	for _, k := range ks {
		fmt.Fprintf(&b, "%s %d\n", k, entries[k])
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("forge %s: %w", path, err)
	}
	logf("forged %s: %s=%d", path, key, entries[key])
	return nil
}
