package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// The swallow scenarios of issue K: the app drops chosen source records (named by their source
// key) before selectKey while Streams purges the repartition topics every 30 s (its default),
// so the positions their copies would have held are purged when kaudit runs. Expected: exactly
// the swallowed records, each `unapplied` (or `dropped` where readable neighbours exist), no
// other loss, never clean.

// swallowSkip is the expectedOutput skip of the records in recs.
func swallowSkip(recs []*inputRec) func(*inputRec) bool {
	set := map[*inputRec]bool{}
	for _, r := range recs {
		set[r] = true
	}
	return func(r *inputRec) bool { return set[r] }
}

// addSwallowFaults records each swallowed record as a fault of its own.
func (r *scRun) addSwallowFaults(recs []*inputRec, note string) {
	for _, rec := range recs {
		r.addFault(fault{Kind: "app-drop", Topic: rec.Topic, Partition: rec.Partition, From: rec.Offset, To: rec.Offset + 1,
			Keys: []string{*rec.OrderID}, Note: note + "; source key " + rec.Key})
	}
}

// checkSwallowed fails unless the app's log says it swallowed each of recs (the fault happened).
func checkSwallowed(log string, recs []*inputRec) error {
	b, err := os.ReadFile(log)
	if err != nil {
		return fmt.Errorf("read the app's log: %w", err)
	}
	var missing []string
	for _, rec := range recs {
		if !strings.Contains(string(b), fmt.Sprintf("swallowed %s record key=%s ", rec.Topic, rec.Key)) {
			missing = append(missing, rec.Key)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the app's log %s does not show %d of the swallowed records: %v", log, len(missing), head(missing, 5))
	}
	return nil
}

// recordID names a source record as kaudit's findings do: topic/partition@offset.
func recordID(topic string, p int32, off int64) string { return fmt.Sprintf("%s/%d@%d", topic, p, off) }

// expectRecords fails unless the findings cover exactly the source records want, each finding
// covering [offset, offset+max(count,1)) of its partition.
func expectRecords(what string, fs []finding, want []*inputRec) error {
	got := map[string]bool{}
	for _, f := range fs {
		for o := f.Offset; o < f.Offset+max(f.Count, 1); o++ {
			got[recordID(f.Topic, f.Partition, o)] = true
		}
	}
	wantSet := map[string]bool{}
	for _, rec := range want {
		wantSet[recordID(rec.Topic, rec.Partition, rec.Offset)] = true
	}
	var missing, extra []string
	for k := range wantSet {
		if !got[k] {
			missing = append(missing, k)
		}
	}
	for k := range got {
		if !wantSet[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		return fmt.Errorf("%s findings: %d of %d expected records not named %v, %d other records named %v",
			what, len(missing), len(wantSet), head(missing, 8), len(extra), head(extra, 8))
	}
	return nil
}

// pickPayments chooses payments of wave recs to swallow: the second payment of three orders
// paid twice (the sum misses one amount) and the only payment of three orders paid once (the
// key is absent from the table).
func pickPayments(recs []*inputRec) []*inputRec {
	byOrder := map[string][]*inputRec{}
	var order []string
	for _, rec := range recs {
		if rec.Topic != topicPayments || rec.OrderID == nil || !strings.HasPrefix(*rec.OrderID, "o-") {
			continue
		}
		if byOrder[*rec.OrderID] == nil {
			order = append(order, *rec.OrderID)
		}
		byOrder[*rec.OrderID] = append(byOrder[*rec.OrderID], rec)
	}
	var out []*inputRec
	twice, once := 0, 0
	for i, oid := range order {
		ps := byOrder[oid]
		switch {
		case len(ps) == 2 && twice < 3 && i%7 == 3:
			out = append(out, ps[1])
			twice++
		case len(ps) == 1 && once < 3 && i%11 == 5:
			out = append(out, ps[0])
			once++
		}
	}
	return out
}

func sourceKeys(recs []*inputRec) []string {
	var out []string
	for _, rec := range recs {
		out = append(out, rec.Key)
	}
	return out
}

// scenarioDroppedSum: the payments table (sum(amount)) loses chosen payment records, swallowed
// by the app, while Streams purges the repartition topics every 30 s; kaudit runs once the
// purge has passed every copy.
func scenarioDroppedSum(ctx context.Context, r *scRun) error {
	recs := genWave(wave1)
	chosen := pickPayments(recs)
	if len(chosen) != 6 {
		return fmt.Errorf("chose %d payments to swallow, want 6", len(chosen))
	}
	if err := r.produce(ctx, recs, 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, appOpts{dropKeys: map[string][]string{topicPayments: sourceKeys(chosen)}}); err != nil {
		return err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return err
	}
	r.addSwallowFaults(chosen, "payment swallowed by the app before selectKey (sum table)")
	return r.finishSwallow(ctx, chosen)
}

// finishSwallow waits for the purge, stops the app, checks the output against the fold of the
// input minus the swallowed records, and checks kaudit's findings.
func (r *scRun) finishSwallow(ctx context.Context, chosen []*inputRec) error {
	s, err := r.waitPurged(ctx)
	if err != nil {
		return err
	}
	log := r.app.log
	if err := r.stopApp(); err != nil {
		return err
	}
	if err := checkSwallowed(log, chosen); err != nil {
		return err
	}
	bad, err := r.checkOutput(ctx, s, swallowSkip(chosen))
	if err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("the app's output is not the input minus the swallowed records: %v", head(bad, 10))
	}
	rep, err := r.runDiff(ctx)
	if err != nil {
		return err
	}
	lost := append(rep.byCause("unapplied"), rep.byCause("dropped")...)
	return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "unapplied", "dropped"),
		expectRecords("unapplied/dropped", lost, chosen), r.checkExchangeShards(ctx, 2))
}

// spreadN, spreadVersions: the orders of dropped-spread and their versions.
const spreadN, spreadVersions = 30, 3

// spreadDrop: the orders (indexes) of dropped-spread whose last version the app swallows.
var spreadDrop = []int{1, 5, 9, 14, 20, 27}

// scenarioDroppedSpread: orders keyed by an event id, not the orderId, so consecutive versions
// of one order land in different source partitions (as after a selectKey in the seed); the
// app swallows the last version of six orders; the repartition topics are purged (Streams'
// default). The store then holds the previous version, which is the last input of its own
// source partition: only the evidence of the lost one (consumed, its copy missing) proves
// the loss.
func scenarioDroppedSpread(ctx context.Context, r *scRun) error {
	versions := spreadOrders(3, spreadN, spreadVersions)
	var chosen []*inputRec
	for _, i := range spreadDrop {
		chosen = append(chosen, versions[spreadVersions-1][i])
	}
	if err := r.produce(ctx, append(genWave(wave1), versions[0]...), 200, 0); err != nil {
		return err
	}
	if err := r.startApp(ctx, appOpts{dropKeys: map[string][]string{topicOrders: sourceKeys(chosen)}}); err != nil {
		return err
	}
	if _, err := r.d.waitCaughtUp(ctx, r.app, 180*time.Second); err != nil {
		return err
	}
	// Each version only once the app has applied the previous one: the order of production is
	// the order of application.
	for v := 1; v < spreadVersions; v++ {
		if err := r.produce(ctx, versions[v], 200, 0); err != nil {
			return err
		}
		if _, err := r.d.waitCaughtUp(ctx, r.app, 120*time.Second); err != nil {
			return err
		}
	}
	for v := 1; v < spreadVersions; v++ {
		for i := range spreadN {
			if a, b := versions[v-1][i], versions[v][i]; a.Partition == b.Partition {
				return fmt.Errorf("versions %d and %d of %s landed in one partition (%d): the fault needs them spread", v-1, v, *a.OrderID, a.Partition)
			}
		}
	}
	r.addSwallowFaults(chosen, "last version of the order swallowed by the app; earlier versions in the other source partition")
	return r.finishSwallow(ctx, chosen)
}

// overwritten reports whether a later record of all (production order) has rec's key in a
// latest table (orders, shipments): rec's effect would not show at the end anyway.
func overwritten(rec *inputRec, all []*inputRec) bool {
	if rec.Topic == topicPayments || rec.OrderID == nil {
		return false
	}
	seen := false
	for _, o := range all {
		if o == rec {
			seen = true
			continue
		}
		if seen && o.Topic == rec.Topic && o.OrderID != nil && *o.OrderID == *rec.OrderID {
			return true
		}
	}
	return false
}

// expectRecordsLatest is expectRecords where the records of want that a later input
// overwrites in a latest table may be named or not.
func expectRecordsLatest(what string, fs []finding, want, all []*inputRec) error {
	var must []*inputRec
	may := map[string]bool{}
	for _, rec := range want {
		if overwritten(rec, all) {
			may[recordID(rec.Topic, rec.Partition, rec.Offset)] = true
		} else {
			must = append(must, rec)
		}
	}
	var rest []finding
	named := 0
	for _, f := range fs {
		if may[recordID(f.Topic, f.Partition, f.Offset)] && max(f.Count, 1) == 1 {
			named++
			continue
		}
		rest = append(rest, f)
	}
	if err := expectRecords(what, rest, must); err != nil {
		return fmt.Errorf("%w (%d overwritten latest inputs may be left out, %d of them named)", err, len(may), named)
	}
	return nil
}
