package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Issue AC's WordCountDemo (Kafka's own, unchanged) under exactly_once_v2 with the cache off
// (statestore.cache.max.bytes=0) on three input partitions, audited with the spec its team
// would write from its code (testdata/kafka/drill/wordcount-eos.kaudit.yaml: the split, the
// groupBy, count, caching: false) and with --app-id alone:
//
//  1. 1,500 lines, then stopped: clean. A count's inputs are interchangeable: its history needs
//     no search of their orders, and a search that gives up is missing evidence, never a
//     state-diverged loss;
//  2. 100 lines more while the app is down, and the first 30 unconsumed records of one input
//     partition deleted (DeleteRecords past the group's committed offset): exactly those 30
//     found (retention-gap), and no duplicate;
//  3. restarted past the gap and stopped once it caught up: with the app's log the gap is found
//     again, never a duplicate.

// wcEOSSpec is the spec written from WordCountDemo's code for this run.
const wcEOSSpec = "wordcount-eos.kaudit.yaml"

func scenarioWordCountEOS(ctx context.Context, r *scRun) error {
	t := &wcTruth{}
	r.truth.WordCount = t
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	res, err := adm.CreateTopics(ctx, 3, int16(r.d.brokers), nil, wcInput, wcOutput)
	closeFn()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create WordCountDemo's topics: %w", err)
	}
	props := filepath.Join(r.dir, "wordcount.properties")
	conf := "bootstrap.servers=" + r.d.bootstrap + "\nstate.dir=" + r.stateDir + "\nsession.timeout.ms=10000\n" +
		"processing.guarantee=exactly_once_v2\nstatestore.cache.max.bytes=0\n"
	if err := os.WriteFile(props, []byte(conf), 0o644); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(17, 3))
	var lines []string
	produce := func(n int, pace time.Duration) error {
		ls := wcLines(rng, n)
		lines = append(lines, ls...)
		t.Lines = len(lines)
		return r.wcProduce(ctx, ls, pace)
	}
	if err := produce(1000, 0); err != nil {
		return err
	}
	a, err := r.wcStart(ctx, props, 1)
	if err != nil {
		return err
	}
	if err := produce(500, 2*time.Millisecond); err != nil {
		return err
	}
	s, err := r.wcWaitCaughtUp(ctx, a)
	if err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}
	got, _, err := r.lastLongs(ctx, s, wcOutput)
	if err != nil {
		return err
	}
	if bad := compareLongs(wcCount(lines), got); len(bad) > 0 {
		return fmt.Errorf("WordCountDemo's own output is not the lines' word counts: %v", head(bad, 5))
	}
	spec, alone, err := r.wcAuditSpec(ctx, "clean", wcEOSSpec)
	if err != nil {
		return err
	}
	t.Clean = []string{spec.summary(), alone.summary()}
	if spec.Summary.Verdict != "clean" {
		return fmt.Errorf("the clean run with the spec written from the code: %s; want clean", spec.summary())
	}
	if err := allErrs(expectNoLoss(spec), expectNoLoss(alone)); err != nil {
		return fmt.Errorf("the clean run: %w", err)
	}
	// 2. a retention gap while the app is down
	if err := produce(100, 0); err != nil {
		return err
	}
	obs, err := r.d.observeApp(ctx, wcAppID, []string{wcInput})
	if err != nil {
		return err
	}
	c, _ := obs.committed.get(wcInput, 0)
	hw, _ := obs.hw.get(wcInput, 0)
	const k = 30
	if hw-c < k {
		return fmt.Errorf("%s/0 has only %d unconsumed records, need %d", wcInput, hw-c, k)
	}
	f := fault{Kind: "delete-records", Topic: wcInput, Partition: 0, From: c, To: c + k,
		Note: "WordCountDemo: DeleteRecords past the group's committed offset while the app is down"}
	r.addFault(f)
	if err := r.d.deleteRecords(ctx, wcInput, 0, c+k); err != nil {
		return err
	}
	expectGap := func(name string, rep kauditReport) error {
		var bad []string
		var covered int64
		for _, fd := range rep.Findings {
			switch {
			case fd.Severity != "loss" && fd.Severity != "anomaly":
			case fd.Topic == wcInput && fd.Partition == 0 && (fd.Cause == "retention-gap" || fd.Cause == "offsets-forward") && fd.Offset >= c && fd.Offset+max(fd.Count, 1) <= c+k:
				covered += max(fd.Count, 1)
			default:
				bad = append(bad, fd.String())
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s: %d findings other than the gap: %v", name, len(bad), head(bad, 5))
		}
		if covered != k {
			return fmt.Errorf("%s: the findings cover %d of the %d deleted records %s/0 [%d, %d)", name, covered, k, wcInput, c, c+k)
		}
		return nil
	}
	if spec, alone, err = r.wcAuditSpec(ctx, "gap", wcEOSSpec); err != nil {
		return err
	}
	if err := allErrs(expectGap("before the restart, with the spec", spec), expectGap("before the restart, --app-id alone", alone)); err != nil {
		return err
	}
	// 3. restarted past the gap: the app's own log says it reset past it
	if a, err = r.wcStart(ctx, props, 2); err != nil {
		return err
	}
	if _, err = r.wcWaitCaughtUp(ctx, a); err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}
	logs := []string{"--app-log", filepath.Join(r.dir, "wordcount-2.log")}
	if spec, alone, err = r.wcAuditSpec(ctx, "restarted", wcEOSSpec, logs...); err != nil {
		return err
	}
	t.Restarted = []string{spec.summary(), alone.summary()}
	return allErrs(expectGap("after the restart, with the spec and the app's log", spec), expectNoDuplicate(alone))
}

// expectNoDuplicate fails on any duplicate finding, and on any loss but the retention gap's.
func expectNoDuplicate(rep kauditReport) error {
	var bad []string
	for _, f := range rep.Findings {
		if f.Cause == "duplicate" || (f.Severity == "loss" || f.Severity == "anomaly") && !slices.Contains([]string{"retention-gap", "offsets-forward"}, f.Cause) {
			bad = append(bad, f.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("after the restart, --app-id alone: %d findings other than the gap: %v", len(bad), head(bad, 5))
	}
	return nil
}
