package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// scenarioPurgeUnjudged is issue AC's purge hidden by an unjudged table, on the drill's app and
// spec: payments lose records to retention in an earlier incident (10 unconsumed records of
// payments/0 deleted while the app is down; the app restarts past them), so the sum table's
// state cannot be rebuilt and is judged by presence only. Then a KAFKA-17635 purge: with stage 1
// committed and stage 2 behind, 5 committed unconsumed records of every repartition topic are
// deleted. Every one of the three ranges is found, the payments' too (as a range: its inputs are
// not named without the state check), and nothing else is a loss but the earlier gap.
func scenarioPurgeUnjudged(ctx context.Context, r *scRun) error {
	if _, err := r.baseline(ctx, appOpts{purgeMs: largePurge}); err != nil {
		return err
	}
	// the earlier incident: a retention gap on payments/0 while the app is down
	if err := r.produce(ctx, genWave(waveSpec{wave: 2, orders: 60, payments: true}), 200, 0); err != nil {
		return err
	}
	s, err := r.d.observe(ctx)
	if err != nil {
		return err
	}
	c, _ := s.committed.get(topicPayments, 0)
	hw, _ := s.hw.get(topicPayments, 0)
	const k = 10
	if hw-c < k {
		return notInjected("payments/0 has only %d unconsumed records, need %d", hw-c, k)
	}
	gap := fault{Kind: "delete-records", Topic: topicPayments, Partition: 0, From: c, To: c + k,
		Note: "the earlier incident: DeleteRecords past the group's committed offset on payments/0 while the app is down"}
	r.addFault(gap)
	if err := r.d.deleteRecords(ctx, topicPayments, 0, c+k); err != nil {
		return err
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
	// the KAFKA-17635 purge: stage 1 commits the source while stage 2 lags, then every
	// repartition topic loses committed records past the group's committed offset
	if err := r.produce(ctx, genWave(waveSpec{wave: 3, orders: 200, payments: true, shipments: true}), 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, appOpts{purgeMs: largePurge, slowRepartMs: 25, props: []string{"max.poll.records=20"}}); err != nil {
		return err
	}
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
	if s, err = r.d.observe(ctx); err != nil {
		return err
	}
	var purges []fault
	for _, t := range s.repartitions() {
		var best fault
		for p, lso := range s.lso[t] {
			c, ok := s.committed.get(t, p)
			if !ok {
				continue
			}
			recs, err := r.d.readPartition(ctx, t, p, c, lso, true)
			if err != nil {
				return err
			}
			var data []int64
			for _, rec := range recs {
				if !rec.Attrs.IsControl() {
					data = append(data, rec.Offset)
				}
			}
			if len(data) >= 5 && data[4]+1-c > best.To-best.From {
				best = fault{Kind: "delete-records", Topic: t, Partition: p, From: c, To: data[4] + 1,
					Note: "DeleteRecords on a repartition topic past the group's committed offset while the app is down (KAFKA-17635's effect)"}
			}
		}
		if best.Topic == "" {
			return notInjected("%s holds no partition with 5 committed unconsumed records", t)
		}
		purges = append(purges, best)
	}
	for _, f := range purges {
		r.addFault(f)
		if err := r.d.deleteRecords(ctx, f.Topic, f.Partition, f.To); err != nil {
			return err
		}
	}
	// with the brokers' logs, which date the earlier incident's deletion (else whether the app
	// read those payments before its offset moved past them is missing evidence)
	rep, err := r.runDiff(ctx, r.brokerLogArgs()...)
	if err != nil {
		return err
	}
	if err := allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "purged-before-commit", "unapplied", "retention-gap", "offsets-forward")); err != nil {
		return err
	}
	var errs []error
	for _, f := range purges {
		found := false
		for _, fd := range rep.Findings {
			// the range itself, or an input whose copy it held (named by its source record)
			found = found || fd.Cause == "purged-before-commit" && (fd.Topic == f.Topic && fd.Partition == f.Partition && fd.Offset < f.To && fd.Offset+max(fd.Count, 1) > f.From ||
				fd.Topic != f.Topic && hopOf(fd) == f.Topic)
		}
		if !found {
			errs = append(errs, fmt.Errorf("the purge of %s/%d [%d, %d) is not reported: %s", f.Topic, f.Partition, f.From, f.To, rep.summary()))
		}
	}
	return allErrs(errs...)
}

// hopOf is the repartition topic a source record's finding names in its detail, "" for none.
func hopOf(f finding) string {
	for _, t := range []string{"KSTREAM-REDUCE-STATE-STORE-0000000003", "KSTREAM-REDUCE-STATE-STORE-0000000011", "KSTREAM-REDUCE-STATE-STORE-0000000019"} {
		full := appID + "-" + t + "-repartition"
		if strings.Contains(f.Detail, full) {
			return full
		}
	}
	return ""
}

// scenarioRepartitionUncommitted is issue AC's repartition partition the group never committed
// on: the app's second stage is slowed so much that it has committed nothing on its repartition
// topics when the app is killed -9, while the first stage committed the whole source. Kafka
// Streams resets an internal topic by the app's auto.offset.reset (earliest: the drill's app and
// Streams' default), so those copies are in flight, not missing evidence: the audit is clean.
// After a restart that applies them, clean again.
func scenarioRepartitionUncommitted(ctx context.Context, r *scRun) error {
	if err := r.produce(ctx, genWave(wave1), 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, appOpts{purgeMs: largePurge, slowRepartMs: 3000, props: []string{"max.poll.records=1"}}); err != nil {
		return err
	}
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
		uncommitted := 0
		for _, t := range s.repartitions() {
			for p, h := range s.hw[t] {
				if _, ok := s.committed.get(t, p); !ok && h > 0 {
					uncommitted++
				}
			}
		}
		if c >= hw && uncommitted > 0 {
			logf("source committed %d of %d, %d repartition partitions hold records and no committed offset: killing the app", c, hw, uncommitted)
			break
		}
		if time.Now().After(deadline) || !r.app.alive() {
			return notInjected("the source was not committed with a repartition partition uncommitted within 120s (%d of %d, %d uncommitted)", c, hw, uncommitted)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.app.kill9()
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	if err := allErrs(expectNoLoss(rep), expectVerdict(rep, "clean")); err != nil {
		return fmt.Errorf("with repartition partitions never committed: %w (missing: %v)", err, head(rep.Summary.Missing, 3))
	}
	rep, err = r.afterRestart(ctx, appOpts{purgeMs: largePurge})
	if err != nil {
		return err
	}
	return prefixErr("after the restart", allErrs(expectNoLoss(rep), expectVerdict(rep, "clean")))
}
