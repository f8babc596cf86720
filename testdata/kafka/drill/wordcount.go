package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Kafka's own WordCountDemo (org.apache.kafka.streams.examples.wordcount, the
// kafka-streams-examples 3.7.0 jar, testdata/kafka/eos/pom.xml), run unchanged on the Kafka
// Streams of the drill, as its quickstart runs it: a properties file its only argument, the
// demo's own defaults (at-least-once, cache 0, the repartition topic purged after commits), no
// describe() text. kaudit audits it with testdata/apps/wordcount.kaudit.yaml and with --app-id
// alone, as on-call would, on a clean run and after a kill -9 and a restart.

const (
	wcAppID      = "streams-wordcount" // WordCountDemo's APPLICATION_ID default
	wcInput      = "streams-plaintext-input"
	wcOutput     = "streams-wordcount-output"
	wcMain       = "org.apache.kafka.streams.examples.wordcount.WordCountDemo"
	wcPartitions = 2
)

// wcWords are the lines' words: mixed case and punctuation, two that start a line with a
// non-word character (Java's split then starts with an empty word, which Streams counts too).
var wcWords = strings.Fields("Kafka streams all the brokers went down for twenty minutes; the app restarted, and on-call typed: audit! Hello world. It's fine? No it isn't (sic) --verbose")

// wcTruth is what the drill knows of the wordcount scenario, in truth.json.
type wcTruth struct {
	Lines int `json:"lines"` // lines produced, over both phases
	// Recounted are the words whose final count passes their occurrences after the kill -9
	// and restart: at-least-once counted again what was processed after the last commit.
	Recounted int `json:"recounted"`
	// kaudit's verdicts and findings, with the spec and with --app-id alone
	Clean     []string `json:"clean"`
	Restarted []string `json:"restarted"`
}

// wcLines makes n lines of 1-9 random words.
func wcLines(rng *rand.Rand, n int) []string {
	out := make([]string, n)
	for i := range out {
		words := make([]string, 1+rng.IntN(9))
		for j := range words {
			words[j] = wcWords[rng.IntN(len(wcWords))]
		}
		out[i] = strings.Join(words, " ")
	}
	return out
}

var nonWord = regexp.MustCompile(`\W+`)

// wcCount counts the words as WordCountDemo does: value.toLowerCase().split("\\W+"), whose
// Java split keeps a leading empty word and drops trailing ones.
func wcCount(lines []string) map[string]int64 {
	n := map[string]int64{}
	for _, l := range lines {
		words := nonWord.Split(strings.ToLower(l), -1)
		for len(words) > 0 && words[len(words)-1] == "" {
			words = words[:len(words)-1]
		}
		for _, w := range words {
			n[w]++
		}
	}
	return n
}

// wcProduce writes lines with null keys, as kafka-console-producer does, pace apart.
func (r *scRun) wcProduce(ctx context.Context, lines []string, pace time.Duration) error {
	cl, err := r.d.client(kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, l := range lines {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: wcInput, Value: []byte(l)}).FirstErr(); err != nil {
			return fmt.Errorf("produce to %s: %w", wcInput, err)
		}
		if pace > 0 {
			time.Sleep(pace)
		}
	}
	return nil
}

// wcStart starts WordCountDemo run n and waits until it is RUNNING.
func (r *scRun) wcStart(ctx context.Context, props string, n int) (*appRun, error) {
	a, err := r.d.spawnJava(append(r.eosJVM(), wcMain, props), filepath.Join(r.dir, fmt.Sprintf("wordcount-%d.log", n)))
	if err != nil {
		return nil, fmt.Errorf("start WordCountDemo: %w", err)
	}
	r.extra = append(r.extra, a) // killed at the end, whatever happens
	t0 := time.Now()
	if err := a.waitRunning(ctx, 120*time.Second); err != nil {
		return nil, err
	}
	logf("WordCountDemo run %d RUNNING after %s", n, time.Since(t0).Round(100*time.Millisecond))
	return a, nil
}

// wcWaitCaughtUp waits until the group has committed every input partition at its end.
func (r *scRun) wcWaitCaughtUp(ctx context.Context, a *appRun) (state, error) {
	observe := func(ctx context.Context) (state, error) {
		return r.d.observeApp(ctx, wcAppID, []string{wcInput, wcOutput})
	}
	return pollCaughtUp(ctx, 120*time.Second, "WordCountDemo", a, observe, func(s state) string {
		for p, hw := range s.hw[wcInput] {
			if c, ok := s.committed.get(wcInput, p); hw > 0 && (!ok || c < hw) {
				return fmt.Sprintf("%s/%d committed %d < hw %d", wcInput, p, c, hw)
			}
		}
		return ""
	})
}

// wcAudit captures the app and audits the capture with the hand-written spec and with
// --app-id alone, and the live cluster with --app-id alone, as on-call types it. The live and
// offline audits alone must agree, and alone must find no loss the spec does not (it may
// decline what the evidence does not settle: incomplete). It returns both reports.
func (r *scRun) wcAudit(ctx context.Context, name string) (spec, alone kauditReport, err error) {
	return r.wcAuditSpec(ctx, name, filepath.Join(r.d.repo, "testdata", "apps", "wordcount.kaudit.yaml"))
}

// wcAuditSpec is wcAudit with the spec at specPath (a name alone: the drill's own, beside its
// code) and extra arguments for every diff (the app's logs).
func (r *scRun) wcAuditSpec(ctx context.Context, name, specPath string, extra ...string) (spec, alone kauditReport, err error) {
	if !filepath.IsAbs(specPath) && filepath.Dir(specPath) == "." {
		specPath = filepath.Join(r.d.root, "drill", specPath)
	}
	dir := filepath.Join(r.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return spec, alone, err
	}
	capture := filepath.Join(dir, "capture")
	code, stderr, err := r.d.runKaudit(ctx, dir, "capture", "capture", "--app-id", wcAppID, "--bootstrap-server", r.d.bootstrap, "--out", capture)
	if err != nil {
		return spec, alone, err
	}
	if code != 0 {
		return spec, alone, fmt.Errorf("kaudit capture exited %d: %s", code, lastLines(stderr, 5))
	}
	if spec, err = r.d.snapshotDiff(ctx, dir, "diff-spec", capture, append([]string{"--spec", specPath}, extra...)...); err != nil {
		return spec, alone, err
	}
	if alone, err = r.d.snapshotDiff(ctx, dir, "diff-app-id", capture, append([]string{"--app-id", wcAppID, "--save-spec", filepath.Join(dir, "kaudit-inferred.yaml")}, extra...)...); err != nil {
		return spec, alone, err
	}
	live := filepath.Join(dir, "kaudit-live-app-id.json")
	code, stderr, err = r.d.runKaudit(ctx, dir, "diff-live-app-id", append([]string{"diff", "--bootstrap-server", r.d.bootstrap, "--app-id", wcAppID, "--format", "json", "--output", live}, extra...)...)
	if err != nil {
		return spec, alone, err
	}
	b, err := os.ReadFile(live)
	if err != nil {
		return spec, alone, fmt.Errorf("kaudit diff --app-id %s live exited %d without JSON: %s", wcAppID, code, lastLines(stderr, 5))
	}
	var liveRep kauditReport
	if err := json.Unmarshal(b, &liveRep); err != nil {
		return spec, alone, err
	}
	if liveRep.Summary.Verdict != alone.Summary.Verdict || !slices.Equal(liveRep.lossIDs(), alone.lossIDs()) {
		return spec, alone, fmt.Errorf("%s: --app-id alone says %s live and %s on the capture", name, liveRep.summary(), alone.summary())
	}
	for _, id := range alone.lossIDs() {
		if !slices.Contains(spec.lossIDs(), id) {
			return spec, alone, fmt.Errorf("%s: --app-id alone finds %s, which the hand-written spec does not (%s; the spec: %s)", name, id, alone.summary(), spec.summary())
		}
	}
	if v := alone.Summary.Verdict; v != spec.Summary.Verdict && v != "incomplete" {
		return spec, alone, fmt.Errorf("%s: --app-id alone says %s, the hand-written spec %s", name, v, spec.Summary.Verdict)
	}
	logf("wordcount %s: the spec: %s; --app-id alone: %s", name, spec.summary(), alone.summary())
	return spec, alone, nil
}

// scenarioWordCount runs WordCountDemo on 250 lines and stops it (SIGTERM): the demo's own
// output is checked against the lines' word counts, and kaudit must say clean with the spec
// and with --app-id alone (the split, the count and the output inferred, the copies purged or
// not). Then 200 lines more, the demo killed -9 while it counts them and restarted: no loss
// with either (at-least-once counts again what it processed after its last commit; with
// --app-id alone that may leave the reducer unsettled: incomplete, named).
func scenarioWordCount(ctx context.Context, r *scRun) error {
	t := &wcTruth{}
	r.truth.WordCount = t
	adm, closeFn, err := r.d.admin()
	if err != nil {
		return err
	}
	res, err := adm.CreateTopics(ctx, wcPartitions, int16(r.d.brokers), nil, wcInput, wcOutput)
	closeFn()
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		return fmt.Errorf("create WordCountDemo's topics: %w", err)
	}
	props := filepath.Join(r.dir, "wordcount.properties")
	// the bootstrap and a state dir; a 10 s session so that the restarted member does not
	// wait out the killed one's 45 s
	if err := os.WriteFile(props, []byte("bootstrap.servers="+r.d.bootstrap+"\nstate.dir="+r.stateDir+"\nsession.timeout.ms=10000\n"), 0o644); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var lines []string
	produce := func(n int, pace time.Duration) error {
		ls := wcLines(rng, n)
		lines = append(lines, ls...)
		t.Lines = len(lines)
		return r.wcProduce(ctx, ls, pace)
	}
	// 1. a clean run: lines before the start and while it runs
	if err := produce(150, 0); err != nil {
		return err
	}
	a, err := r.wcStart(ctx, props, 1)
	if err != nil {
		return err
	}
	if err := produce(100, 20*time.Millisecond); err != nil {
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
	spec, alone, err := r.wcAudit(ctx, "clean")
	if err != nil {
		return err
	}
	t.Clean = []string{spec.summary(), alone.summary()}
	if spec.Summary.Verdict != "clean" || alone.Summary.Verdict != "clean" {
		return fmt.Errorf("the clean run: the spec says %s, --app-id alone %s; want clean and clean", spec.summary(), alone.summary())
	}
	// 2. killed -9 while counting 200 lines more, and restarted
	if a, err = r.wcStart(ctx, props, 2); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- produce(200, 20*time.Millisecond) }()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(2 * time.Second):
	}
	a.kill9()
	logf("WordCountDemo run 2 killed -9 mid-input")
	if err := <-done; err != nil {
		return err
	}
	if a, err = r.wcStart(ctx, props, 3); err != nil {
		return err
	}
	if s, err = r.wcWaitCaughtUp(ctx, a); err != nil {
		return err
	}
	if err := a.stop(); err != nil {
		return err
	}
	if got, _, err = r.lastLongs(ctx, s, wcOutput); err != nil {
		return err
	}
	want := wcCount(lines)
	for w, n := range got {
		switch {
		case n > want[w]:
			t.Recounted++
		case n < want[w]:
			return fmt.Errorf("after the restart WordCountDemo counts %q %d times, fewer than its %d occurrences", w, n, want[w])
		}
	}
	logf("after the kill -9 and restart, at-least-once counted %d of %d words again", t.Recounted, len(want))
	if spec, alone, err = r.wcAudit(ctx, "restarted"); err != nil {
		return err
	}
	t.Restarted = []string{spec.summary(), alone.summary()}
	if err := expectNoLoss(spec); err != nil {
		return fmt.Errorf("after the restart, with the spec: %w", err)
	}
	return expectNoLoss(alone)
}
