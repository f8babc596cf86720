package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The z-apps of ZApps.java in the apps-* scenarios, beside StepsApps' four: the stateful DSL
// shapes beyond a stream folded into a table. enrich joins a re-keyed stream to a table read
// with builder.table (left and inner), regroup re-groups a KTable with a subtractor (count and
// aggregate), cogroup folds two grouped streams into one aggregate, fkjoin joins two tables on a
// foreign key. Their specs (testdata/apps/<app>.kaudit.yaml) are in the format of issue Z
// (reduce: table, regroup:, cogroup:, stream_joins:). Their input goes out phase by phase
// (zgen.go): every z-app processes and commits a phase before the next is produced, so that
// each order meets the customers table as the drill knows it. Each scenario checks what the
// apps wrote against the drill's fold, then kaudit's report against what the drill knows.

var zApps = []stepsApp{
	{name: "enrich", class: "ZApps", appID: "kaudit-z-enrich", sources: []string{"ze-orders", "ze-customers"},
		outputs: []string{"ze-enriched", "ze-matched"}, repartitions: 1, changelogs: 1},
	{name: "regroup", class: "ZApps", appID: "kaudit-z-regroup", sources: []string{"zr-products"},
		outputs: []string{"zr-category-counts", "zr-category-value"}, repartitions: 2, changelogs: 3, killHop: true},
	{name: "cogroup", class: "ZApps", appID: "kaudit-z-cogroup", sources: []string{"zg-clicks", "zg-views"},
		outputs: []string{"zg-activity"}, repartitions: 1, changelogs: 1},
	{name: "fkjoin", class: "ZApps", appID: "kaudit-z-fkjoin", sources: []string{"zf-orders", "zf-products"},
		outputs: []string{"zf-order-lines"}, repartitions: 2, changelogs: 3, killHop: true},
}

// The z-apps' internal topics the drill reads (from their describe() texts, which the drill
// requires unchanged).
const (
	enrichRepartition       = "kaudit-z-enrich-KSTREAM-KEY-SELECT-0000000004-repartition"
	customersChangelog      = "kaudit-z-enrich-ze-customers-STATE-STORE-0000000000-changelog"
	regroupCountRepartition = "kaudit-z-regroup-KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition"
	regroupValueRepartition = "kaudit-z-regroup-KTABLE-AGGREGATE-STATE-STORE-0000000010-repartition"
	productsChangelog       = "kaudit-z-regroup-zr-products-STATE-STORE-0000000000-changelog"
	cogroupRepartition      = "kaudit-z-cogroup-COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004-repartition"
	fkRegistration          = "kaudit-z-fkjoin-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
	fkResponse              = "kaudit-z-fkjoin-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"
)

// fkJoinNodes are the fkjoin app's foreign-key join nodes (fkjoin.describe.txt): kaudit's
// missing evidence must name one of them.
var fkJoinNodes = []string{
	"KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000007", "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000011",
	"KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000012", "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-0000000013",
	"KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-0000000017", "KTABLE-FK-JOIN-OUTPUT-0000000018",
}

func (p *appProc) isZ() bool { return p.class == "ZApps" }

// zProcs are the scenario's z-apps.
func (ar *appsRun) zProcs() []*appProc {
	var out []*appProc
	for _, p := range ar.procs {
		if p.isZ() {
			out = append(out, p)
		}
	}
	return out
}

// produceZPhases produces the z-apps' phases in order: each phase's records chunk at a time,
// pause() between chunks, then waits until every z-app processed and committed all of them
// (a z-app killed meanwhile is restarted by its killer; the wait does not touch it).
func (r *scRun) produceZPhases(ctx context.Context, phases [][]*inputRec, chunk int, pause func() time.Duration) error {
	zs := r.multi.zProcs()
	t0 := time.Now()
	for i, ph := range phases {
		if err := r.produceApps(ctx, ph, chunk, pause); err != nil {
			return err
		}
		if err := r.waitProcessed(ctx, zs, 180*time.Second); err != nil {
			return fmt.Errorf("z-apps phase %d: %w", i, err)
		}
		logf("z-apps: phase %d (%d records) processed, %s since the first", i, len(ph), time.Since(t0).Round(100*time.Millisecond))
	}
	return nil
}

// waitProcessed waits until each of ps has processed and committed everything produced so far
// (p.caughtUp: sources and hops committed to their ends, no open transaction); one observation
// suffices (the commit that moves a source's offset commits what its records made).
func (r *scRun) waitProcessed(ctx context.Context, ps []*appProc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for _, p := range ps {
		why := "not observed"
		for {
			s, err := p.observe(ctx, r.d)
			if err == nil {
				if why = p.caughtUp(s); why == "" {
					break
				}
			} else {
				why = err.Error()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("app %s did not process its input within %s: %s", p.name, timeout, why)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
	}
	return nil
}

// ---- what the z-apps did ----

// checkZApps checks every z-app's outputs and internal topics against the drill's folds (skip:
// what a fault took away; exact: no cache, every update forwarded, so that the regroup app's
// repartition records are known one by one).
func (r *scRun) checkZApps(ctx context.Context, states map[string]state, skip func(*inputRec) bool, exact bool) error {
	return allErrs(r.checkEnrichApp(ctx, states["enrich"], skip), r.checkRegroupApp(ctx, states["regroup"], exact),
		r.checkCogroupApp(ctx, states["cogroup"], skip), r.checkFKJoinApp(ctx, states["fkjoin"]))
}

// jsonRecs reads topic's committed records and decodes each value as JSON (nil: a tombstone).
func (r *scRun) jsonRecs(ctx context.Context, s state, topic string) ([]*kgo.Record, []map[string]any, error) {
	recs, err := r.readAll(ctx, s, topic)
	if err != nil {
		return nil, nil, err
	}
	vals := make([]map[string]any, len(recs))
	for i, rec := range recs {
		if rec.Value == nil {
			continue
		}
		if vals[i], err = decodeJSONMap(rec.Value); err != nil {
			return nil, nil, fmt.Errorf("%s/%d@%d: %w", topic, rec.Partition, rec.Offset, err)
		}
	}
	return recs, vals, nil
}

// appLogs is every run's log of p, concatenated.
func (p *appProc) appLogs() (string, error) {
	var all strings.Builder
	for i := 1; i <= p.truth.Runs; i++ {
		b, err := os.ReadFile(filepath.Join(p.dir, fmt.Sprintf("app-%d.log", i)))
		if err != nil {
			return "", err
		}
		all.Write(b)
	}
	return all.String(), nil
}

// checkEnrichApp compares each join's output with the drill's fold (one record per order with a
// customer on the left join, one per order whose customer existed on the inner join, each with
// the order's timestamp), the repartition topic with the orders (one copy per order with a
// customer, the order as it is, under the customer's key; none for a null customer) and the
// customers table's changelog with the customers' records.
func (r *scRun) checkEnrichApp(ctx context.Context, s state, skip func(*inputRec) bool) error {
	p := r.multi.proc("enrich")
	recs := r.appRecs("enrich")
	f := foldEnrich(recs, skip)
	orderTS := map[string]int64{}
	for _, rec := range recs {
		if rec.Topic == "ze-orders" {
			orderTS[rec.Key] = rec.Timestamp
		}
	}
	var bad []string
	check := func(topic string, want map[string]map[string]any) (nullName int) {
		out, vals, err := r.jsonRecs(ctx, s, topic)
		if err != nil {
			bad = append(bad, err.Error())
			return
		}
		seen := map[string]int{}
		for i, rec := range out {
			v := vals[i]
			id, _ := v["order"].(string)
			seen[id]++
			switch w := want[id]; {
			case w == nil:
				bad = append(bad, fmt.Sprintf("%s: a record for order %q, which has none", topic, id))
			case !jsonSame(w, v) || string(rec.Key) != w["customer"]:
				bad = append(bad, fmt.Sprintf("%s: order %s: key %s value %s, want key %s value %s", topic, id, rec.Key, jsonText(v), w["customer"], jsonText(w)))
			case rec.Timestamp.UnixMilli() != orderTS[id]:
				bad = append(bad, fmt.Sprintf("%s: order %s: timestamp %d, the order's %d", topic, id, rec.Timestamp.UnixMilli(), orderTS[id]))
			}
			if v["name"] == nil {
				nullName++
			}
		}
		for id := range want {
			if seen[id] != 1 {
				bad = append(bad, fmt.Sprintf("%s: %d records for order %s, want 1", topic, seen[id], id))
			}
		}
		return nullName
	}
	leftNull := check("ze-enriched", f.left)
	check("ze-matched", f.inner)
	// the repartition topic: the orders as they are, under the customer's key
	copies, vals, err := r.jsonRecs(ctx, s, enrichRepartition)
	if err != nil {
		return err
	}
	want := map[string]*inputRec{}
	for _, rec := range recs {
		if rec.Topic == "ze-orders" && rec.OrderID != nil && consumed(s, rec) && (skip == nil || !skip(rec)) {
			want[rec.Key] = rec
		}
	}
	for i, c := range copies {
		id, _ := vals[i]["id"].(string)
		o := want[id]
		if o == nil || string(c.Key) != *o.OrderID || !jsonSame(o.Value, vals[i]) || c.Timestamp.UnixMilli() != o.Timestamp {
			bad = append(bad, fmt.Sprintf("repartition copy %s/%d@%d (key %s) is no order's copy", c.Topic, c.Partition, c.Offset, c.Key))
			continue
		}
		delete(want, id)
	}
	for id := range want {
		bad = append(bad, "no repartition copy of order "+id)
	}
	// the customers table's changelog: the latest value per customer, tombstones deleting
	cl, cvals, err := r.jsonRecs(ctx, s, customersChangelog)
	if err != nil {
		return err
	}
	table := map[string]map[string]any{}
	ghost := 0
	for i, rec := range cl {
		if cvals[i] == nil {
			delete(table, string(rec.Key))
			if string(rec.Key) == "c-23" {
				ghost++
			}
			continue
		}
		table[string(rec.Key)] = cvals[i]
	}
	if !jsonSame(table, f.customers) {
		bad = append(bad, fmt.Sprintf("the customers changelog folds to %d customers, want %d: %s", len(table), len(f.customers), jsonText(table)))
	}
	logs, err := p.appLogs()
	if err != nil {
		return err
	}
	skipped := strings.Count(logs, "Skipping record")
	sort.Strings(bad)
	p.truth.Observed["joins"] = fmt.Sprintf("%d orders with a customer: %d left-join records (%d without a customer: name and tier null), %d inner-join records; each with its order's timestamp and the customer's key",
		f.orders, len(f.left), leftNull, len(f.inner))
	p.truth.Observed["null_customer"] = fmt.Sprintf("%d orders with a null customer: no repartition copy, no record on either output; %d \"Skipping record\" lines in the logs (the repartition's null-key filter KSTREAM-FILTER-0000000006 drops them before the join, silently)",
		len(f.nullKey), skipped)
	p.truth.Observed["ghost_tombstone"] = fmt.Sprintf("the tombstone for c-23, which never existed: %d tombstone(s) for it on the customers changelog", ghost)
	p.truth.Observed["repartition"] = fmt.Sprintf("%d copies on %s", len(copies), enrichRepartition)
	logf("app enrich: %s; %s; %s", p.truth.Observed["joins"], p.truth.Observed["null_customer"], p.truth.Observed["ghost_tombstone"])
	if len(bad) > 0 {
		return fmt.Errorf("app enrich: the joins' outputs, copies or table differ from the drill's fold: %v", head(bad, 8))
	}
	return nil
}

// readChanges reads and decodes a KTable groupBy's repartition topic.
func (r *scRun) readChanges(ctx context.Context, s state, topic string) ([]zChange, error) {
	recs, err := r.readAll(ctx, s, topic)
	if err != nil {
		return nil, err
	}
	var out []zChange
	for _, rec := range recs {
		flag, nv, ov, err := decodeChange(rec.Value)
		if err != nil {
			return nil, fmt.Errorf("%s/%d@%d: %w", topic, rec.Partition, rec.Offset, err)
		}
		c := zChange{Key: string(rec.Key), Flag: flag, Timestamp: rec.Timestamp.UnixMilli(), raw: rec.Value,
			at: recordID(topic, rec.Partition, rec.Offset), headers: len(rec.Headers)}
		if nv != nil {
			if c.New, err = decodeJSONMap(nv); err != nil {
				return nil, fmt.Errorf("%s/%d@%d new: %w", topic, rec.Partition, rec.Offset, err)
			}
		}
		if ov != nil {
			if c.Old, err = decodeJSONMap(ov); err != nil {
				return nil, fmt.Errorf("%s/%d@%d old: %w", topic, rec.Partition, rec.Offset, err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// checkRegroupApp compares the regroup app's outputs (count and price sum per category) with the
// drill's fold and decodes its two repartition topics: without a cache (exact) each must hold
// exactly the Change records the updates make, one by one; with a cache, what it holds is
// measured.
func (r *scRun) checkRegroupApp(ctx context.Context, s state, exact bool) error {
	p := r.multi.proc("regroup")
	recs := r.appRecs("regroup")
	f := foldRegroup(recs, nil)
	counts, nCounts, err := r.lastLongs(ctx, s, "zr-category-counts")
	if err != nil {
		return err
	}
	values, nValues, err := r.lastLongs(ctx, s, "zr-category-value")
	if err != nil {
		return err
	}
	var bad []string
	for _, b := range compareLongs(f.counts, counts) {
		bad = append(bad, "count "+b)
	}
	for _, b := range compareLongs(f.values, values) {
		bad = append(bad, "value "+b)
	}
	want := map[string]int{}
	for _, c := range f.changes {
		want[c.id()]++
	}
	var flags [3]int
	var examples [3]string // the first record of each flag, its value's bytes quoted
	var held []int
	withHeaders := 0
	for _, t := range []string{regroupCountRepartition, regroupValueRepartition} {
		got, err := r.readChanges(ctx, s, t)
		if err != nil {
			return err
		}
		held = append(held, len(got))
		left := map[string]int{}
		for k, n := range want {
			left[k] = n
		}
		for _, c := range got {
			if c.headers > 0 {
				withHeaders++
			}
			if t == regroupCountRepartition {
				flags[c.Flag]++
				if examples[c.Flag] == "" {
					examples[c.Flag] = fmt.Sprintf("%s key %s value %s", c.at, c.Key, strconv.Quote(string(c.raw)))
				}
			}
			if exact {
				if left[c.id()] == 0 {
					bad = append(bad, fmt.Sprintf("%s: unexpected %s", t, c.id()))
					continue
				}
				left[c.id()]--
			}
		}
		for k, n := range left {
			if exact && n > 0 {
				bad = append(bad, fmt.Sprintf("%s: %d missing %s", t, n, k))
			}
		}
	}
	cl, err := r.readAll(ctx, s, productsChangelog)
	if err != nil {
		return err
	}
	ghost := 0
	for _, rec := range cl {
		if string(rec.Key) == "p-99" && rec.Value == nil {
			ghost++
		}
	}
	outRecs := 0
	for _, n := range nCounts {
		outRecs += n
	}
	for _, n := range nValues {
		outRecs += n
	}
	var wantFlags [3]int
	for _, c := range f.changes {
		wantFlags[c.Flag]++
	}
	sort.Strings(bad)
	cache := "no cache"
	if !exact {
		cache = "the seed's 30 MB cache"
	}
	p.truth.Observed["repartition"] = fmt.Sprintf("%s: %d product updates (%d creates, %d price changes, %d moves, %d deletes, 1 delete of a product never created) make %d Change records without a cache (flag 0: %d, 1: %d, 2: %d); %s and %s hold %v records, flag 0: %d, 1: %d, 2: %d; %d with headers",
		cache, len(recs), len(withTag(recs, "create")), len(withTag(recs, "price")), len(withTag(recs, "move")), len(withTag(recs, tagTombstone)),
		len(f.changes), wantFlags[0], wantFlags[1], wantFlags[2], regroupCountRepartition, regroupValueRepartition, held, flags[0], flags[1], flags[2], withHeaders)
	p.truth.Observed["repartition_examples"] = examples
	p.truth.Observed["outputs"] = fmt.Sprintf("%d categories, %d records on the two outputs; garden emptied: count %d, value %d (a 0, not a tombstone); the delete of p-99 (never created): %d tombstone(s) on the products changelog, no repartition record",
		len(f.counts), outRecs, counts["garden"], values["garden"], ghost)
	logf("app regroup: %s; %s", p.truth.Observed["repartition"], p.truth.Observed["outputs"])
	if len(bad) > 0 {
		return fmt.Errorf("app regroup: the outputs or the repartition records differ from the drill's fold: %v", head(bad, 8))
	}
	return nil
}

// checkCogroupApp compares the cogroup app's aggregate per user with the drill's fold, and its
// repartition topic with the views: one copy per view the filter passes (more than 0 ms, not
// swallowed), under the user's key, the view as it is, with its timestamp.
func (r *scRun) checkCogroupApp(ctx context.Context, s state, skip func(*inputRec) bool) error {
	p := r.multi.proc("cogroup")
	recs := r.appRecs("cogroup")
	want := foldCogroup(recs, skip)
	out, vals, err := r.jsonRecs(ctx, s, "zg-activity")
	if err != nil {
		return err
	}
	got := map[string]map[string]any{}
	for i, rec := range out {
		got[string(rec.Key)] = vals[i]
	}
	var bad []string
	if !jsonSame(want, got) {
		for u, w := range want {
			if !jsonSame(w, got[u]) {
				bad = append(bad, fmt.Sprintf("user %s: %s, want %s", u, jsonText(got[u]), jsonText(w)))
			}
		}
		if len(got) != len(want) {
			bad = append(bad, fmt.Sprintf("%d users on the output, want %d", len(got), len(want)))
		}
	}
	copies, cvals, err := r.jsonRecs(ctx, s, cogroupRepartition)
	if err != nil {
		return err
	}
	wantCopies := map[string]*inputRec{}
	zero, swallowed := 0, 0
	for _, rec := range recs {
		if rec.Topic != "zg-views" || !consumed(s, rec) {
			continue
		}
		switch {
		case skip != nil && skip(rec):
			swallowed++
		case rec.Tag == tagZeroMs:
			zero++
		default:
			wantCopies[rec.Key] = rec
		}
	}
	for i, c := range copies {
		id, _ := cvals[i]["id"].(string)
		v := wantCopies[id]
		if v == nil || string(c.Key) != v.Value["user"] || !jsonSame(v.Value, cvals[i]) || c.Timestamp.UnixMilli() != v.Timestamp {
			bad = append(bad, fmt.Sprintf("repartition copy %s/%d@%d (key %s) is no passing view's copy", c.Topic, c.Partition, c.Offset, c.Key))
			continue
		}
		delete(wantCopies, id)
	}
	for id := range wantCopies {
		bad = append(bad, "no repartition copy of view "+id)
	}
	sort.Strings(bad)
	p.truth.Observed["cogroup"] = fmt.Sprintf("%d users; %d records on zg-activity for %d clicks and %d views; %d copies on %s (none for the %d views of 0 ms the filter dropped, none for the %d swallowed)",
		len(want), len(out), len(withTopic(recs, "zg-clicks")), len(withTopic(recs, "zg-views")), len(copies), cogroupRepartition, zero, swallowed)
	logf("app cogroup: %s", p.truth.Observed["cogroup"])
	if len(bad) > 0 {
		return fmt.Errorf("app cogroup: the aggregate or the copies differ from the drill's fold: %v", head(bad, 8))
	}
	return nil
}

func withTopic(recs []*inputRec, topic string) []*inputRec {
	var out []*inputRec
	for _, r := range recs {
		if r.Topic == topic {
			out = append(out, r)
		}
	}
	return out
}

// checkFKJoinApp compares the fkjoin app's output (the last record per order, a tombstone
// removing it) with the drill's join of the final tables, and measures its subscription topics.
func (r *scRun) checkFKJoinApp(ctx context.Context, s state) error {
	p := r.multi.proc("fkjoin")
	want := foldFKJoin(r.appRecs("fkjoin"), nil)
	out, vals, err := r.jsonRecs(ctx, s, "zf-order-lines")
	if err != nil {
		return err
	}
	got := map[string]map[string]any{}
	joined := map[string]bool{} // keys with a line before
	tombs, blind := 0, 0
	for i, rec := range out {
		k := string(rec.Key)
		if vals[i] == nil {
			tombs++
			if !joined[k] {
				blind++
			}
			delete(got, k)
			continue
		}
		joined[k] = true
		got[k] = vals[i]
	}
	var bad []string
	for id, w := range want {
		if !jsonSame(w, got[id]) {
			bad = append(bad, fmt.Sprintf("order %s: %s, want %s", id, jsonText(got[id]), jsonText(w)))
		}
	}
	for id, g := range got {
		if want[id] == nil {
			bad = append(bad, fmt.Sprintf("order %s: %s, want none", id, jsonText(g)))
		}
	}
	n := map[string]int{}
	for _, t := range []string{fkRegistration, fkResponse} {
		recs, err := r.readAll(ctx, s, t)
		if err != nil {
			return err
		}
		n[t] = len(recs)
	}
	sort.Strings(bad)
	p.truth.Observed["fkjoin"] = fmt.Sprintf("%d order lines at the end; %d records on zf-order-lines (%d tombstones, %d of them for an order that had no line before); %d records on %s, %d on %s",
		len(want), len(out), tombs, blind, n[fkRegistration], fkRegistration, n[fkResponse], fkResponse)
	logf("app fkjoin: %s", p.truth.Observed["fkjoin"])
	if len(bad) > 0 {
		return fmt.Errorf("app fkjoin: the output differs from the drill's join of the final tables: %v", head(bad, 8))
	}
	return nil
}

// ---- kaudit ----

// expectZClean checks kaudit's report of a z-app's clean run (apps-clean): enrich clean, the
// orders with a null customer null-key (info); regroup clean; cogroup clean, the views of 0 ms
// filtered (info); fkjoin incomplete naming a foreign-key join node, no loss.
func (r *scRun) expectZClean(p *appProc, rep kauditReport, s state) error {
	recs := r.appRecs(p.name)
	switch p.name {
	case "enrich":
		return allErrs(expectVerdict(rep, "clean"), expectOnlyLossCauses(rep), expectInfoRecords(rep, "null-key", withTag(recs, tagNullKey)),
			expectStage(rep, "null-key", "source"))
	case "cogroup":
		return allErrs(expectVerdict(rep, "clean"), expectOnlyLossCauses(rep), expectInfoRecords(rep, "filtered", consumedOf(s, withTag(recs, tagZeroMs))),
			expectStage(rep, "filtered", "source"))
	case "fkjoin":
		return expectUnjudgedAny(rep, fkJoinNodes)
	default:
		return allErrs(expectVerdict(rep, "clean"), expectOnlyLossCauses(rep))
	}
}

func consumedOf(s state, recs []*inputRec) []*inputRec {
	var out []*inputRec
	for _, rec := range recs {
		if consumed(s, rec) {
			out = append(out, rec)
		}
	}
	return out
}

// expectStage fails unless every finding of cause is at stage.
func expectStage(rep kauditReport, cause, stage string) error {
	for _, f := range rep.byCause(cause) {
		if f.Stage != stage {
			return fmt.Errorf("a %s finding at stage %s, want %s: %s", cause, f.Stage, stage, f)
		}
	}
	return nil
}

// expectInfoRecords fails unless the findings of cause are all info and count exactly want's
// records per partition, every record a finding names being one of want's. A finding of
// several records names them in its detail ("(offsets 6, 9, 14 and 3 more)": not always
// contiguous), else it names its own offset.
func expectInfoRecords(rep kauditReport, cause string, want []*inputRec) error {
	wantSet, wantN := map[string]bool{}, map[string]int64{}
	for _, r := range want {
		wantSet[recordID(r.Topic, r.Partition, r.Offset)] = true
		wantN[fmt.Sprintf("%s/%d", r.Topic, r.Partition)]++
	}
	gotN := map[string]int64{}
	var extra []string
	for _, f := range rep.byCause(cause) {
		if f.Severity != "info" {
			return fmt.Errorf("a %s finding of severity %s: %s", cause, f.Severity, f)
		}
		gotN[fmt.Sprintf("%s/%d", f.Topic, f.Partition)] += max(f.Count, 1)
		for _, id := range findingRecords(f) {
			if !wantSet[id] {
				extra = append(extra, id)
			}
		}
	}
	if len(extra) > 0 {
		return fmt.Errorf("%s findings name %d records the drill did not expect: %v", cause, len(extra), head(extra, 6))
	}
	for tp, n := range wantN {
		if gotN[tp] != n {
			return fmt.Errorf("%s findings count %d records on %s, want %d %v", cause, gotN[tp], tp, n, head(sortedRecIDs(want), 6))
		}
	}
	for tp, n := range gotN {
		if wantN[tp] == 0 {
			return fmt.Errorf("%s findings count %d records on %s, want none", cause, n, tp)
		}
	}
	return nil
}

// findingRecords lists the records a finding names, topic/partition@offset: the offsets its
// detail lists ("(offsets 6, 9, 14 and 3 more)"), else its own.
func findingRecords(f finding) []string {
	_, list, ok := strings.Cut(f.Detail, "(offsets ")
	if !ok {
		return []string{recordID(f.Topic, f.Partition, f.Offset)}
	}
	list, _, _ = strings.Cut(list, ")")
	list, _, _ = strings.Cut(list, " and ")
	var out []string
	for _, o := range strings.Split(list, ", ") {
		if n, err := strconv.ParseInt(strings.TrimSpace(o), 10, 64); err == nil {
			out = append(out, recordID(f.Topic, f.Partition, n))
		}
	}
	return out
}

// expectUnjudgedAny is expectUnjudged for a shape kaudit recognises without modelling it: the
// missing evidence must name one of nodes.
func expectUnjudgedAny(rep kauditReport, nodes []string) error {
	if err := allErrs(expectVerdict(rep, "incomplete"), expectOnlyLossCauses(rep)); err != nil {
		return err
	}
	return expectMissingNames(rep, nodes)
}

// expectMissingNames fails unless the missing evidence names one of nodes.
func expectMissingNames(rep kauditReport, nodes []string) error {
	for _, m := range rep.Summary.Missing {
		for _, n := range nodes {
			if strings.Contains(m, n) {
				return nil
			}
		}
	}
	return fmt.Errorf("the missing evidence names none of the nodes %v: %v", head(nodes, 3), head(rep.Summary.Missing, 4))
}

// zFaults is what apps-faults did to the z-apps: enrich's and fkjoin's source gaps, regroup's
// repartition purge, cogroup's swallowed views.
type zFaults struct {
	enrichGap, fkGap, regroupPurge fault
	swallowed                      []*inputRec
}

// injectZFaults injects the z-apps' faults while they are down (the views were swallowed
// while they ran); the regroup purge runs beside the routes purge (purge), which it waits for.
func (r *scRun) injectZFaults(ctx context.Context, routesPurge func() error) (zFaults, error) {
	var zf zFaults
	var err error
	if zf.enrichGap, err = r.injectSourceGap(ctx, r.multi.proc("enrich"), genEnrichWave2(40), "ze-orders", 0, 10); err != nil {
		return zf, err
	}
	if zf.fkGap, err = r.injectSourceGap(ctx, r.multi.proc("fkjoin"), genFKJoinWave2(40), "zf-orders", 0, 8); err != nil {
		return zf, err
	}
	done := make(chan error, 1)
	go func() { done <- routesPurge() }()
	_, wave2 := genRegroupApp()
	product := func(rec *kgo.Record) []string {
		_, nv, ov, err := decodeChange(rec.Value)
		if err != nil {
			return nil
		}
		var out []string
		for _, b := range [][]byte{nv, ov} {
			if v, err := decodeJSONMap(b); err == nil && b != nil {
				if id, ok := v["id"].(string); ok && !slices.Contains(out, id) {
					out = append(out, id)
				}
			}
		}
		return out
	}
	zf.regroupPurge, err = r.injectRepartitionPurge(ctx, r.multi.proc("regroup"), wave2, product)
	if perr := <-done; perr != nil {
		return zf, perr
	}
	return zf, err
}

// expectZFaults checks kaudit's report of each z-app after its fault (apps-faults, before any
// restart).
func expectZFaults(name string, rep kauditReport, zf zFaults) error {
	switch name {
	case "enrich":
		return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "retention-gap"), expectStage(rep, "retention-gap", "source"),
			expectRange("retention-gap", rep.byCause("retention-gap"), zf.enrichGap.Topic, zf.enrichGap.Partition, zf.enrichGap.From, zf.enrichGap.To))
	case "fkjoin":
		return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "retention-gap"), expectStage(rep, "retention-gap", "source"),
			expectRange("retention-gap", rep.byCause("retention-gap"), zf.fkGap.Topic, zf.fkGap.Partition, zf.fkGap.From, zf.fkGap.To),
			expectMissingNames(rep, fkJoinNodes))
	case "regroup":
		return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "purged-before-commit", "unapplied"),
			expectStage(rep, "purged-before-commit", "repartition"), expectPurgedRange(rep.byCause("purged-before-commit"), zf.regroupPurge), expectPurgedKeys(rep.byCause("unapplied"), zf.regroupPurge))
	case "cogroup":
		return allErrs(expectVerdict(rep, "loss"), expectOnlyLossCauses(rep, "dropped"), expectStage(rep, "dropped", "repartition"),
			expectRecords("dropped", rep.byCause("dropped"), zf.swallowed))
	}
	return errors.New("no z-app " + name)
}
