package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// scenarioUnclean: on the 3-broker cluster (RF 3, min.insync.replicas 2), broker 3 is shut down
// cleanly (it leaves every ISR); a second wave is produced and processed by brokers 1 and 2;
// kaudit capture records that state. Then brokers 1 and 2 are killed -9, broker 3 restarts
// alone and is made leader of every partition with an UNCLEAN ElectLeaders (in 3.6 KRaft the
// topic config unclean.leader.election.enable is ignored; only the API works, and only for
// leaderless partitions); brokers 1 and 2 come back and truncate to broker 3's logs. The live
// cluster now looks like the end of wave 1; only the capture holds wave 2.
// kaudit diff --baseline-snapshot <capture>: truncated, covering what the source topics lost.
func scenarioUnclean(ctx context.Context, r *scRun) error {
	o := appOpts{rf: 3, purgeMs: largePurge}
	if _, err := r.baseline(ctx, o); err != nil {
		return err
	}
	if err := r.d.cluster(ctx, "stop", "3"); err != nil {
		return err
	}
	if err := r.produce(ctx, genWave(waveSpec{wave: 2, orders: 60, payments: true, shipments: true}), 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, o); err != nil {
		return err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return err
	}
	if err := r.stopApp(); err != nil {
		return err
	}
	before, err := r.d.observe(ctx)
	if err != nil {
		return err
	}
	capture := filepath.Join(r.dir, "capture")
	args := []string{"capture", "--app-id", appID, "--bootstrap-server", r.d.bootstrap, "--out", capture,
		"--topology", filepath.Join(r.dir, "describe.txt")}
	// Every topic explicitly: by default capture takes the group's topics and <app>-…, which
	// leaves out the output topic (it is neither consumed nor prefixed).
	for _, t := range append(append(append([]string(nil), sourceTopics...), topicOutput), before.internal...) {
		args = append(args, "--topic", t)
	}
	code, stderr, err := r.d.runKaudit(ctx, r.dir, "capture", args...)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("kaudit capture exited %d: %s", code, lastLines(stderr, 5))
	}
	logf("unclean: kill -9 brokers 1 and 2, start broker 3 alone")
	for _, id := range []string{"1", "2"} {
		if err := r.d.cluster(ctx, "kill9", id); err != nil {
			return err
		}
	}
	time.Sleep(5 * time.Second) // broker.session.timeout.ms=3000: the controller fences both
	if err := r.d.cluster(ctx, "start-node", "3"); err != nil {
		return err
	}
	if err := r.d.cluster(ctx, "wait-node", "3"); err != nil {
		return err
	}
	if err := r.d.electUnclean(ctx); err != nil {
		return err
	}
	// issue P: before brokers 1 and 2 restart (and truncate to broker 3), their log dirs still
	// hold wave 2: the log dirs of all four nodes show the divergence with no capture.
	var offline []byte
	if r.d.o.logDirs {
		if offline, err = r.logDirsBeforeTruncation(ctx); err != nil {
			return err
		}
	}
	for _, id := range []string{"1", "2"} {
		if err := r.d.cluster(ctx, "start-node", id); err != nil {
			return err
		}
	}
	if err := r.d.cluster(ctx, "wait"); err != nil {
		return err
	}
	if err := r.d.waitBrokers(ctx, 3); err != nil {
		return err
	}
	after, err := r.d.observe(ctx)
	if err != nil {
		return err
	}
	lost := 0
	for _, t := range sourceTopics {
		for p, hwBefore := range before.hw[t] {
			hwAfter, _ := after.hw.get(t, p)
			if hwAfter < hwBefore {
				recs := r.recordsIn(t, p, hwAfter, hwBefore)
				lost += len(recs)
				r.addFault(fault{Kind: "unclean-election", Topic: t, Partition: p, From: hwAfter, To: hwBefore, Keys: orderIDs(recs),
					Note: "truncated when the out-of-sync broker 3 became leader"})
			}
		}
	}
	if lost == 0 {
		return errors.New("the unclean election truncated no source record: the fault was not injected")
	}
	rep, err := r.runDiff(ctx, "--baseline-snapshot", capture)
	if err != nil {
		return err
	}
	if err := allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "truncated")); err != nil {
		return err
	}
	// issue R: a broker killed in the middle of kaudit diff (against the capture) and capture
	chaosErr := r.chaos(ctx, "--baseline-snapshot", capture)
	if offline != nil {
		r.live.done = true // the log dirs now agree with the truncated cluster: compared before
		if err := sameAsLive(r.live.report, offline, filepath.Join(r.dir, "kaudit-logdir.compare.txt"), true); err != nil {
			return err
		}
	}
	tr := rep.byCause("truncated")
	for _, f := range r.truth.Faults {
		var on []finding
		for _, x := range tr {
			if x.Topic == f.Topic && x.Partition == f.Partition {
				on = append(on, x)
			}
		}
		if err := expectRange("truncated", on, f.Topic, f.Partition, f.From, f.To); err != nil {
			return err
		}
	}
	return chaosErr
}

// electUnclean elects a leader for every leaderless partition with ElectLeaders UNCLEAN and
// waits until every partition has one.
func (d *drill) electUnclean(ctx context.Context) error {
	cl, err := d.client()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(60 * time.Second)
	for {
		md, err := adm.Metadata(ctx)
		if err == nil {
			set := kadm.TopicsSet{}
			leaderless := 0
			for _, td := range md.Topics {
				for _, pd := range td.Partitions {
					if pd.Leader < 0 {
						set.Add(td.Topic, pd.Partition)
						leaderless++
					}
				}
			}
			if leaderless == 0 {
				return nil
			}
			res, eerr := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, set)
			n := 0
			for _, ps := range res {
				for _, pr := range ps {
					if pr.Err == nil {
						n++
					}
				}
			}
			logf("unclean election on %d leaderless partitions: %d elected (%v)", leaderless, n, eerr)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("partitions still leaderless after 60s of unclean elections (%v)", err)
		}
		time.Sleep(time.Second)
	}
}

// logDirsBeforeTruncation stops broker 3 and the controller cleanly (brokers 1 and 2 are down,
// killed -9), audits the four nodes' log dirs with no baseline, and starts the controller and
// broker 3 again; it returns the log-dir report.
func (r *scRun) logDirsBeforeTruncation(ctx context.Context) ([]byte, error) {
	for _, id := range []string{"3", "100"} {
		if err := r.d.cluster(ctx, "stop", id); err != nil {
			return nil, err
		}
	}
	out, err := r.diffLogDirs(ctx, "logdir")
	if err != nil {
		return nil, err
	}
	for _, id := range []string{"100", "3"} {
		if err := r.d.cluster(ctx, "start-node", id); err != nil {
			return nil, err
		}
	}
	for _, id := range []string{"100", "3"} {
		if err := r.d.cluster(ctx, "wait-node", id); err != nil {
			return nil, err
		}
	}
	return out, nil
}
