package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Issue AA's apps (GuessApps.java), audited as a new user would: with --app-id alone, live (no
// describe() text) and from a capture with and without it, and with the spec their team writes
// from the code (guess-<app>.kaudit.yaml beside this file):
//
//   - seed: the seed's shape on JSON, a filter on a field before one selectKey (type != TEST) and
//     a mapValues with Math.round to a long before another;
//   - parity: Integer values with null keys, a parity filter, re-keyed to a constant and summed;
//   - named: a filter before selectKey into a store the app names (Materialized.as), which hides
//     the node numbers;
//   - temperature: Kafka's TemperatureDemo topology under exactly_once_v2 (issue AC: copies of
//     inputs retention deleted after the app read them are no duplicates);
//   - anomaly: kafka-streams-examples' AnomalyDetectionLambdaExample (issue AD): a windowed count,
//     a KTable filter, its output re-keyed by the window's toString();
//   - regions: kafka-streams-examples' UserRegionLambdaExample (issue AD): a KTable re-grouped and
//     counted, then a KTable filter.
//
// The apps keep their repartition copies (no purge), from which the inference works. Every audit
// of a clean run is clean or incomplete with no loss or anomaly finding, including
// three live audits while input arrives (issue AJ); the live audit and the capture without the
// topology (the same evidence) give the same report. Then a retention gap on one source
// partition of each app while they are down: found exactly, by every audit, and again after the
// apps restarted past it (with their logs).

var guessApps = []stepsApp{
	{name: "seed", class: "GuessApps", appID: "kaudit-guess-seed", sources: []string{"gs-orders", "gs-payments", "gs-shipments"},
		outputs: []string{"gs-status"}, repartitions: 3, changelogs: 3},
	{name: "parity", class: "GuessApps", appID: "kaudit-guess-parity", sources: []string{"gp-ints"}, outputs: []string{"gp-sums"},
		repartitions: 1, changelogs: 1},
	{name: "named", class: "GuessApps", appID: "kaudit-guess-named", sources: []string{"gn-orders"}, repartitions: 1, changelogs: 1},
	{name: "temperature", class: "GuessApps", appID: "kaudit-guess-temperature", sources: []string{"gt-temperature"},
		outputs: []string{"gt-temperature-max"}, repartitions: 1, changelogs: 1},
	{name: "anomaly", class: "GuessApps", appID: "kaudit-guess-anomaly", sources: []string{"ga-clicks"},
		outputs: []string{"ga-anomalies"}, repartitions: 1, changelogs: 1},
	{name: "regions", class: "GuessApps", appID: "kaudit-guess-regions", sources: []string{"gr-user-regions"},
		outputs: []string{"gr-large-regions"}, repartitions: 1, changelogs: 2},
}

// guessSettled are the apps whose every table --app-id alone settles with the topology:
// regions' KTable filter is told by the states that reached its output, and anomaly's too, with
// its window's size read from the output's toString() keys (its input spans one or two window
// starts, too few otherwise) and its map before the store from the copies. guessSettledLive are
// those it settles without the topology too (regions' store is fed by a KTable groupBy and
// anomaly's output is told by the topology: a live audit without describe() sees neither).
var (
	guessSettled     = map[string]bool{"seed": true, "parity": true, "named": true, "temperature": true, "regions": true, "anomaly": true}
	guessSettledLive = map[string]bool{"parity": true, "named": true, "temperature": true}
)

// guessGap is the partition each app loses k records of to DeleteRecords in the fault phase.
var guessGap = map[string]string{"seed": "gs-orders", "parity": "gp-ints", "named": "gn-orders", "temperature": "gt-temperature",
	"anomaly": "ga-clicks", "regions": "gr-user-regions"}

func scenarioGuessApps(ctx context.Context, r *scRun) error {
	r.multi = &appsRun{}
	r.truth.Apps = &appsTruth{Apps: map[string]*appTruth{}}
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	for _, a := range guessApps {
		p := &appProc{stepsApp: a, dir: filepath.Join(r.dir, a.name), stateDir: filepath.Join(r.stateDir, a.name),
			props: []string{"cache.bytes=0", fmt.Sprintf("purge.interval.ms=%d", largePurge)}, truth: &appTruth{AppID: a.appID, Observed: map[string]any{}}}
		for _, dir := range []string{p.dir, p.stateDir} {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				closeFn()
				return err
			}
		}
		r.multi.procs = append(r.multi.procs, p)
		r.truth.Apps.Apps[a.name] = p.truth
		parts := int32(2)
		if a.name == "parity" {
			parts = 3
		}
		res, err := adm.CreateTopics(ctx, parts, int16(r.d.brokers), nil, append(slices.Clone(a.sources), a.outputs...)...)
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			closeFn()
			return fmt.Errorf("create the %s app's topics: %w", a.name, err)
		}
	}
	closeFn()
	procs := r.multi.procs
	rng := rand.New(rand.NewPCG(41, 5))
	wave1 := guessInput(rng, 1, 160)
	half := len(wave1) / 2
	if err := r.guessProduce(ctx, wave1[:half]); err != nil {
		return err
	}
	if err := r.startProcs(ctx, procs); err != nil {
		return err
	}
	// three live audits of each app while the rest of wave 1 arrives (AJ): never a loss or an
	// anomaly, whatever is in flight
	for i := range 3 {
		chunk := wave1[half+i*(len(wave1)-half)/3 : half+(i+1)*(len(wave1)-half)/3]
		if err := r.guessProduce(ctx, chunk); err != nil {
			return err
		}
		for _, p := range procs {
			rep, err := r.guessLive(ctx, p, fmt.Sprintf("running-%d", i+1))
			if err != nil {
				return err
			}
			if err := expectNoLoss(rep); err != nil {
				return fmt.Errorf("app %s audited live while it runs (%d): %w", p.name, i+1, err)
			}
		}
	}
	if _, err := r.waitCaughtUp(ctx, procs); err != nil {
		return err
	}
	if err := r.stopProcs(procs); err != nil {
		return err
	}
	var errs []error
	for _, p := range procs {
		errs = append(errs, prefixErr(p.name, r.guessAudits(ctx, p, "clean", nil)))
	}
	if err := allErrs(errs...); err != nil {
		return err
	}
	// a retention gap on one partition of each app while it is down
	if err := r.guessProduce(ctx, guessInput(rng, 2, 60)); err != nil {
		return err
	}
	gaps := map[string]fault{}
	for _, p := range procs {
		s, err := p.observe(ctx, r.d)
		if err != nil {
			return err
		}
		topic := guessGap[p.name]
		c, _ := s.committed.get(topic, 0)
		hw, _ := s.hw.get(topic, 0)
		const k = 10
		if hw-c < k {
			return fmt.Errorf("app %s: %s/0 has only %d unconsumed records, need %d", p.name, topic, hw-c, k)
		}
		f := fault{Kind: "delete-records", Topic: topic, Partition: 0, From: c, To: c + k,
			Note: p.name + ": DeleteRecords past the group's committed offset while the app is down"}
		r.addFault(f)
		if err := r.d.deleteRecords(ctx, topic, 0, c+k); err != nil {
			return err
		}
		gaps[p.name] = f
	}
	for _, p := range procs {
		f := gaps[p.name]
		errs = append(errs, prefixErr(p.name, r.guessAudits(ctx, p, "gap", &f)))
	}
	if err := allErrs(errs...); err != nil {
		return err
	}
	// restarted past the gap: the apps' logs say they reset past it
	if err := r.startProcs(ctx, procs); err != nil {
		return err
	}
	if _, err := r.waitCaughtUp(ctx, procs); err != nil {
		return err
	}
	if err := r.stopProcs(procs); err != nil {
		return err
	}
	for _, p := range procs {
		f := gaps[p.name]
		log := filepath.Join(p.dir, fmt.Sprintf("app-%d.log", p.truth.Runs))
		rep, err := r.guessLive(ctx, p, "restarted", "--app-log", log)
		if err == nil {
			err = expectGapOnly(rep, f, "after the restart, --app-id alone with the app's log")
		}
		errs = append(errs, prefixErr(p.name, err))
		spec, err := r.guessLive(ctx, p, "restarted-spec", "--spec", r.guessSpec(p), "--app-log", log)
		if err == nil {
			err = expectGapOnly(spec, f, "after the restart, with the spec and the app's log")
		}
		errs = append(errs, prefixErr(p.name, err))
	}
	return allErrs(errs...)
}

// guessAudits audits app p four ways in dir p.dir/name: live with --app-id alone (no
// topology), its capture without and with the topology with --app-id alone, and live with the
// spec written from its code. On a clean run (gap nil) each is clean or incomplete with no loss or
// anomaly finding, the spec's clean; with a gap each finds exactly it. The live audit and the
// capture without the topology must agree.
func (r *scRun) guessAudits(ctx context.Context, p *appProc, name string, gap *fault) error {
	dir := filepath.Join(p.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	live, err := r.guessLive(ctx, p, name)
	if err != nil {
		return err
	}
	s, err := p.observe(ctx, r.d)
	if err != nil {
		return err
	}
	captures := map[bool]string{}
	for _, topo := range []bool{false, true} {
		capture := filepath.Join(dir, "capture")
		args := []string{"capture", "--app-id", p.appID, "--bootstrap-server", r.d.bootstrap}
		if topo {
			capture += "-topology"
			args = append(args, "--topology", filepath.Join(p.dir, "describe.txt"))
		}
		args = append(args, "--out", capture)
		for _, t := range append(append(append([]string(nil), p.sources...), p.outputs...), s.internal...) {
			args = append(args, "--topic", t)
		}
		code, stderr, err := r.d.runKaudit(ctx, dir, "capture", args...)
		if err != nil {
			return err
		}
		if code != 0 {
			return fmt.Errorf("kaudit capture exited %d: %s", code, lastLines(stderr, 5))
		}
		captures[topo] = capture
	}
	bare, err := r.d.snapshotDiff(ctx, dir, "snapshot-app-id", captures[false], "--app-id", p.appID)
	if err != nil {
		return err
	}
	topo, err := r.d.snapshotDiff(ctx, dir, "snapshot-topology-app-id", captures[true], "--app-id", p.appID,
		"--save-spec", filepath.Join(dir, "kaudit-inferred.yaml"))
	if err != nil {
		return err
	}
	spec, err := r.guessLive(ctx, p, name+"-spec", "--spec", r.guessSpec(p))
	if err != nil {
		return err
	}
	var errs []error
	if live.Summary.Verdict != bare.Summary.Verdict || !slices.Equal(live.lossIDs(), bare.lossIDs()) || len(live.Summary.Missing) != len(bare.Summary.Missing) {
		errs = append(errs, fmt.Errorf("%s: --app-id alone says %s live and %s on its capture, the same evidence", name, live.summary(), bare.summary()))
	}
	reports := []struct {
		what string
		rep  kauditReport
	}{{"--app-id alone live", live}, {"--app-id alone on the capture", bare}, {"--app-id alone on the capture with the topology", topo}, {"the spec", spec}}
	for _, x := range reports {
		switch {
		case gap != nil:
			errs = append(errs, expectGapOnly(x.rep, *gap, name+", "+x.what))
		default:
			if err := expectNoLoss(x.rep); err != nil {
				errs = append(errs, fmt.Errorf("%s, %s: %w", name, x.what, err))
			}
			if v := x.rep.Summary.Verdict; v != "clean" && v != "incomplete" {
				errs = append(errs, fmt.Errorf("%s, %s: verdict %s", name, x.what, v))
			}
		}
	}
	if gap == nil && spec.Summary.Verdict != "clean" {
		errs = append(errs, fmt.Errorf("%s, the spec written from the code: %s, want clean", name, spec.summary()))
	}
	// the repartition copies are all there (no purge): from them the inference settles every
	// app with its topology, and all but the seed's mapValues table without it
	if gap == nil && guessSettled[p.name] && topo.Summary.Verdict != "clean" {
		errs = append(errs, fmt.Errorf("%s, --app-id alone with the topology: %s, want clean (missing: %v)", name, topo.summary(), head(topo.Summary.Missing, 3)))
	}
	if gap == nil && guessSettledLive[p.name] && live.Summary.Verdict != "clean" {
		errs = append(errs, fmt.Errorf("%s, --app-id alone live: %s, want clean (missing: %v)", name, live.summary(), head(live.Summary.Missing, 3)))
	}
	logf("guess-apps %s %s: live %s; capture %s; with the topology %s; the spec %s", p.name, name, live.summary(), bare.summary(), topo.summary(), spec.summary())
	return allErrs(errs...)
}

// guessSpec is the spec written from app p's code.
func (r *scRun) guessSpec(p *appProc) string {
	return filepath.Join(r.d.root, "drill", "guess-"+p.name+".kaudit.yaml")
}

// guessLive audits app p live (--app-id alone unless args hold --spec) into p.dir/name.
func (r *scRun) guessLive(ctx context.Context, p *appProc, name string, args ...string) (kauditReport, error) {
	var rep kauditReport
	dir := filepath.Join(p.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, err
	}
	out := filepath.Join(dir, "kaudit-live.json")
	base := []string{"diff", "--bootstrap-server", r.d.bootstrap, "--format", "json", "--output", out}
	if !slices.Contains(args, "--spec") {
		base = append(base, "--app-id", p.appID)
	}
	code, stderr, err := r.d.runKaudit(ctx, dir, "live", append(base, args...)...)
	if err != nil {
		return rep, err
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return rep, fmt.Errorf("kaudit diff %s exited %d without JSON: %s", strings.Join(args, " "), code, lastLines(stderr, 5))
	}
	return rep, json.Unmarshal(b, &rep)
}

// expectGapOnly fails unless the loss and anomaly findings are exactly the retention gap f
// (retention-gap or, once the app committed past it, offsets-forward), covering it whole.
func expectGapOnly(rep kauditReport, f fault, what string) error {
	var bad []string
	var covered int64
	for _, fd := range rep.Findings {
		switch {
		case fd.Severity != "loss" && fd.Severity != "anomaly":
		case fd.Topic == f.Topic && fd.Partition == f.Partition && (fd.Cause == "retention-gap" || fd.Cause == "offsets-forward") &&
			fd.Offset >= f.From && fd.Offset+max(fd.Count, 1) <= f.To:
			covered += max(fd.Count, 1)
		default:
			bad = append(bad, fd.String())
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %d findings other than the gap: %v (%s)", what, len(bad), head(bad, 5), rep.summary())
	}
	if covered != f.To-f.From {
		return fmt.Errorf("%s: the findings cover %d of the %d deleted records %s/%d [%d, %d) (%s)", what, covered, f.To-f.From, f.Topic, f.Partition, f.From, f.To, rep.summary())
	}
	return nil
}

// guessRec is one record of the guess apps' input.
type guessRec struct {
	topic      string
	key, value []byte
	ts         time.Time // zero: the client's clock
}

// guessInput is wave w of every guess app's input, n orders each: the seed app's orders (every
// eighth a TEST one), payments of amounts with cents as doubles, and shipments; the parity
// app's integers (null keys, odd and even, negative too); the named app's orders (every seventh a
// TEST one).
func guessInput(rng *rand.Rand, w, n int) []guessRec {
	var out []guessRec
	// the temperatures are read ten a second, as the demo's readme has them produced: the
	// windows of 5 s are then many, each with its maximum
	t0 := time.Now().Add(-time.Duration(2*n) * 100 * time.Millisecond)
	reading := 0
	js := func(m map[string]any) []byte {
		b, _ := json.Marshal(m)
		return b
	}
	for i := range n {
		id := fmt.Sprintf("g-w%d-%04d", w, i)
		typ := "NEW"
		if i%8 == 3 {
			typ = "TEST"
		}
		out = append(out, guessRec{"gs-orders", []byte(id), js(map[string]any{"orderId": id, "customer": fmt.Sprintf("c-%03d", rng.IntN(60)), "type": typ}), time.Time{}})
		if i%3 != 1 {
			cents := 100 + rng.IntN(99900)
			out = append(out, guessRec{"gs-payments", []byte("p-" + id), js(map[string]any{"orderId": id, "amount": float64(cents) / 100}), time.Time{}})
		}
		if i%4 == 0 {
			out = append(out, guessRec{"gs-shipments", []byte("s-" + id), js(map[string]any{"orderId": id, "carrier": []string{"ups", "dhl", "fedex"}[rng.IntN(3)]}), time.Time{}})
		}
		v := make([]byte, 4)
		binary.BigEndian.PutUint32(v, uint32(int32(rng.IntN(2001)-1000)))
		out = append(out, guessRec{"gp-ints", nil, v, time.Time{}})
		status := "NEW"
		if i%7 == 2 {
			status = "TEST"
		}
		out = append(out, guessRec{"gn-orders", []byte(id), js(map[string]any{"orderId": id, "status": status, "n": i}), time.Time{}})
		for range 2 {
			out = append(out, guessRec{"gt-temperature", nil, []byte(fmt.Sprint(rng.IntN(31))), t0.Add(time.Duration(reading) * 100 * time.Millisecond)})
			reading++
		}
		// clicks of eight users, often, and of one-off visitors, each once: their windows'
		// counts stay under the anomaly threshold and the KTable filter forwards tombstones
		user := fmt.Sprintf("user-%d", rng.IntN(8))
		if i%5 == 0 {
			user = fmt.Sprintf("visitor-w%d-%d", w, i)
		}
		out = append(out, guessRec{"ga-clicks", nil, []byte(user), time.Time{}})
		// forty users moving between regions, antarctica rare: regions fall under two users
		// and come back
		region := []string{"asia", "europe", "africa", "americas", "oceania"}[rng.IntN(5)]
		if rng.IntN(12) == 0 {
			region = "antarctica"
		}
		out = append(out, guessRec{"gr-user-regions", []byte(fmt.Sprintf("u-%02d", rng.IntN(40))), []byte(region), time.Time{}})
	}
	return out
}

// guessProduce writes recs in order (a null key goes round robin).
func (r *scRun) guessProduce(ctx context.Context, recs []guessRec) error {
	cl, err := r.d.client(kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		return err
	}
	defer cl.Close()
	for i := 0; i < len(recs); i += 50 {
		var batch []*kgo.Record
		for _, g := range recs[i:min(i+50, len(recs))] {
			batch = append(batch, &kgo.Record{Topic: g.topic, Key: g.key, Value: g.value, Timestamp: g.ts})
		}
		if err := cl.ProduceSync(ctx, batch...).FirstErr(); err != nil {
			return fmt.Errorf("produce the guess apps' input: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
