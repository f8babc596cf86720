package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
	"github.com/kaudit/kaudit/report"
)

// cliResult is one in-process run of kaudit.
type cliResult struct {
	stdout, stderr string
	code           int
	panicked       any
	allocMB        uint64
}

// runGuarded runs kaudit in process like runCLI, but turns a panic into a
// result and measures the bytes it allocated.
func runGuarded(t *testing.T, args ...string) (res cliResult) {
	t.Helper()
	var out, errb bytes.Buffer
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	defer func() {
		runtime.ReadMemStats(&after)
		res.allocMB = (after.TotalAlloc - before.TotalAlloc) >> 20
		if p := recover(); p != nil {
			res.panicked = fmt.Sprintf("%v\n%s", p, debug.Stack())
		}
		res.stdout, res.stderr = out.String(), errb.String()
	}()
	res.code = run(t.Context(), append([]string{"kaudit"}, args...), &out, &errb)
	return res
}

// badCase is one run of kaudit on bad input and the exit codes it may end
// with. "{out}" in args is replaced with a report path in a fresh directory.
type badCase struct {
	name    string
	args    []string
	codes   []int
	wantErr string // for exit 2: a part of the one-line error
}

func bad(path string) string { return filepath.Join(badDir, filepath.FromSlash(path)) }

var (
	evidence = []int{exitFindings, exitIncomplete, exitNotRun} // an evidence problem: never clean, never a usage error
	config   = []int{exitUsage}
)

// badCases are the runs over testdata/bad.
func badCases() []badCase {
	var cs []badCase
	// Log dirs: the good one is the control.
	cs = append(cs, badCase{"logdir/good", []string{"ledger", "--log-dir", bad("logdir/good"), "--topic", "events", "--format", "json"}, []int{exitClean}, ""})
	for _, d := range []string{"bad-crc", "bad-crc-last", "bad-magic", "old-magic", "huge-length", "negative-length", "zero-length",
		"offset-backwards", "torn-tail", "truncated-old-segment", "garbage", "bad-index", "bad-checkpoints", "checkpoint-beyond-end",
		"partition-huge", "partition-overflow", "partition-negative"} {
		codes := evidence
		if d == "partition-negative" {
			// events--1 is partition 1 of topic "events-", as Kafka parses
			// it: the events ledger is right to be clean.
			codes = []int{exitClean}
		}
		cs = append(cs,
			badCase{"logdir/" + d + "/ledger", []string{"ledger", "--log-dir", bad("logdir/" + d), "--topic", "events", "--format", "json"}, codes, ""},
			badCase{"logdir/" + d + "/ledger offsets", []string{"ledger", "--log-dir", bad("logdir/" + d), "--topic", "events", "--offsets", "0-5", "--value-serde", "json", "--format", "json"}, codes, ""},
			badCase{"logdir/" + d + "/diff", []string{"diff", "--log-dir", bad("logdir/" + d), "--app-id", "events", "--format", "json", "--output", "{out}"}, evidence, ""},
		)
	}
	// Snapshots: base is the control.
	spec := bad("spec/good/kaudit.yaml")
	cs = append(cs, badCase{"snapshot/base", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", spec, "--format", "json", "--output", "{out}"}, []int{exitClean}, ""})
	for _, d := range []string{"hash-mismatch", "log-altered", "missing-file", "unlisted-file", "manifest-not-json", "manifest-truncated",
		"manifest-empty", "no-manifest", "manifest-future-format", "manifest-wrong-types", "path-outside", "offsets-inconsistent",
		"crc-rehashed", "truncated-rehashed", "partition-huge", "partition-negative", "offsets-negative", "schema-garbage", "group-garbage",
		"file-dropped"} {
		ledgerCodes, offsetCodes, diffCodes := evidence, evidence, evidence
		switch d {
		case "schema-garbage":
			// no record is framed: the unusable schemas serve none (a
			// bundle's, or a _schemas topic's, may hold schemas no record
			// of the app uses; one that a record needs makes that record
			// undecodable)
			ledgerCodes, offsetCodes = []int{exitClean}, []int{exitClean, exitIncomplete, exitNotRun}
			diffCodes = []int{exitClean, exitFindings, exitIncomplete, exitNotRun}
		case "group-garbage":
			ledgerCodes, offsetCodes = []int{exitClean}, []int{exitClean} // the ledger reads no group
		}
		cs = append(cs,
			badCase{"snapshot/" + d + "/diff", []string{"diff", "--snapshot", bad("snapshot/" + d), "--spec", spec, "--format", "json", "--output", "{out}"}, diffCodes, ""},
			badCase{"snapshot/" + d + "/diff md", []string{"diff", "--snapshot", bad("snapshot/" + d), "--app-id", "shop", "--output", "{out}.md"}, diffCodes, ""},
			badCase{"snapshot/" + d + "/ledger", []string{"ledger", "--snapshot", bad("snapshot/" + d), "--topic", "orders-v1", "--format", "json"}, ledgerCodes, ""},
			badCase{"snapshot/" + d + "/ledger offsets", []string{"ledger", "--snapshot", bad("snapshot/" + d), "--topic", "orders-v1", "--partition", "1",
				"--offsets", "0-40", "--value-serde", "json", "--format", "json"}, offsetCodes, ""},
		)
	}
	// Describe texts: a bad file given by the user is a usage error.
	for _, f := range []string{"empty", "garbage", "truncated", "binary", "dangling", "bad-header", "unclosed-bracket", "cycle", "self-loop"} {
		p := bad("topology/" + f + ".txt")
		codes := config
		if f == "cycle" {
			// Streams never prints a cycle, but the text parses: taking it
			// is fine as long as nothing loops.
			codes = []int{exitClean, exitUsage, exitIncomplete}
		}
		cs = append(cs,
			badCase{"topology/" + f, []string{"topology", "--topology", p}, codes, "topology"},
			badCase{"topology/" + f + "/diff", []string{"diff", "--snapshot", bad("snapshot/base"), "--app-id", "shop", "--topology", p, "--output", "{out}"}, codes, "topology"},
			badCase{"topology/" + f + "/init", []string{"init", "--app-id", "shop", "--topology", p}, codes, "topology"},
		)
	}
	// Specs: every one is refused with its file named.
	for _, f := range []string{"misspelt-field", "bad-expression", "bad-reducer-expr", "bad-join-value", "wrong-type", "wrong-type-list",
		"unknown-reducer", "unknown-serde", "unknown-table", "unknown-join-type", "yaml-syntax", "tabs", "empty", "no-tables",
		"duplicate-table", "alias-bomb", "alias-bomb-used", "utf16"} {
		cs = append(cs, badCase{"spec/" + f, []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", bad("spec/" + f + "/kaudit.yaml"),
			"--format", "json", "--output", "{out}"}, config, "kaudit.yaml"})
	}
	// A select_key with a typo (orderID for orderId) is null for every
	// input: Streams would drop them all, and an audit that then finds
	// nothing to check must not call that clean.
	cs = append(cs, badCase{"spec/select-key-typo", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", bad("spec/select-key-typo/kaudit.yaml"),
		"--format", "json", "--output", "{out}"}, []int{exitFindings, exitUsage, exitIncomplete, exitNotRun}, ""})
	// A spec whose topology file is missing or bad: the error names that file.
	cs = append(cs,
		badCase{"spec/missing-topology", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", bad("spec/missing-topology/kaudit.yaml"),
			"--output", "{out}"}, config, "nonexistent.txt"},
		badCase{"spec/bad-topology", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", bad("spec/bad-topology/kaudit.yaml"),
			"--output", "{out}"}, config, "garbage.txt"},
	)
	// Streams state dirs: a checkpoint ahead of the changelog is a
	// finding; one that cannot be read is missing evidence.
	stateDiff := func(d string) []string {
		return []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", spec, "--state-dir", bad("statedir/" + d), "--format", "json", "--output", "{out}"}
	}
	cs = append(cs,
		badCase{"statedir/good", stateDiff("good"), []int{exitClean}, ""},
		badCase{"statedir/checkpoint-ahead", stateDiff("checkpoint-ahead"), []int{exitFindings}, ""},
	)
	for _, d := range []string{"checkpoint-garbage", "checkpoint-truncated", "checkpoint-count-lies", "checkpoint-version", "checkpoint-negative", "metadata-garbage"} {
		cs = append(cs, badCase{"statedir/" + d, stateDiff(d), evidence, ""})
	}
	// Reports given to merge and to diff --baseline.
	cs = append(cs, badCase{"reports/clean", []string{"merge", "--output", "{out}", bad("reports/clean.json")}, []int{exitClean}, ""})
	for _, f := range []string{"not-json", "truncated", "empty", "null", "wrong-types"} {
		cs = append(cs,
			badCase{"reports/" + f, []string{"merge", "--output", "{out}", bad("reports/clean.json"), bad("reports/" + f + ".json")}, config, f + ".json"},
			badCase{"reports/" + f + "/baseline", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", spec, "--baseline", bad("reports/" + f + ".json"),
				"--output", "{out}"}, config, f + ".json"},
		)
	}
	cs = append(cs,
		// a summary that lies about its findings is refused, never believed (a false clean)
		badCase{"reports/verdict-lies", []string{"merge", "--format", "json", bad("reports/clean.json"), bad("reports/verdict-lies.json")}, config, "do not add up to its summary"},
		badCase{"reports/other-app", []string{"merge", "--output", "{out}", bad("reports/clean.json"), bad("reports/other-app.json")}, config, "other-app"},
		badCase{"reports/unknown-cause", []string{"merge", "--output", "{out}", bad("reports/unknown-cause.json")}, []int{exitUsage, exitFindings, exitIncomplete, exitNotRun}, ""},
		badCase{"reports/huge-count", []string{"merge", "--format", "md", bad("reports/huge-count.json")}, []int{exitUsage, exitFindings}, ""},
		badCase{"reports/huge-count/table", []string{"merge", "--format", "table", bad("reports/huge-count.json")}, []int{exitUsage, exitFindings}, ""},
		badCase{"reports/huge-count/prom", []string{"merge", "--format", "prom", bad("reports/huge-count.json")}, []int{exitUsage, exitFindings}, ""},
	)
	// Schemas and Avro: JSON bytes where Avro is declared are undecodable
	// evidence; a schema file that is not a schema is a usage error.
	cs = append(cs,
		badCase{"avro declared, json bytes", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", spec, "--value-serde", "avro",
			"--schemas", bad("schemas/wrong-schema"), "--format", "json", "--output", "{out}"}, evidence, ""},
		badCase{"avro declared, json bytes, ledger", []string{"ledger", "--snapshot", bad("snapshot/base"), "--topic", "orders-v1", "--offsets", "0-40",
			"--value-serde", "avro", "--schemas", bad("schemas/wrong-schema"), "--format", "json"}, []int{exitClean}, ""},
		badCase{"snapshot schemas garbage, avro declared", []string{"diff", "--snapshot", bad("snapshot/schema-garbage"), "--spec", spec, "--value-serde", "avro",
			"--format", "json", "--output", "{out}"}, evidence, ""},
		badCase{"schemas not json", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", spec, "--value-serde", "avro",
			"--schemas", bad("schemas/not-json"), "--output", "{out}"}, config, "1.avsc"},
		badCase{"schemas dir missing", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", spec, "--value-serde", "avro",
			"--schemas", bad("schemas/nonexistent"), "--output", "{out}"}, config, "schemas"},
	)
	return cs
}

// TestSafetyBadInput runs kaudit over the bad-input corpus: no panic, a
// one-line error or a report, the right exit code, no half-written
// report, never the verdict clean.
func TestSafetyBadInput(t *testing.T) {
	for _, tc := range badCases() {
		t.Run(tc.name, func(t *testing.T) {
			skipKnownBug(t, tc.name)
			checkBadRun(t, tc)
		})
	}
}

// knownBugs are the cases that fail on bugs not fixed yet, by case name
// prefix: each is skipped with its one-line description.
var knownBugs = map[string]string{}

func skipKnownBug(t *testing.T, name string) {
	t.Helper()
	for prefix, bug := range knownBugs {
		if strings.HasPrefix(name, prefix) {
			t.Skip("BUG: " + bug)
		}
	}
}

// checkBadRun runs one case and checks everything a bad input must not do.
func checkBadRun(t *testing.T, tc badCase) {
	t.Helper()
	outDir := t.TempDir()
	out := ""
	args := slices.Clone(tc.args)
	for i, a := range args {
		if strings.Contains(a, "{out}") {
			args[i] = strings.ReplaceAll(a, "{out}", filepath.Join(outDir, "report.json"))
			out = args[i]
		}
	}
	res := runGuarded(t, args...)
	if res.panicked != nil {
		t.Fatalf("panic: %v", res.panicked)
	}
	t.Logf("exit %d, %d MB allocated, stderr: %s", res.code, res.allocMB, strings.TrimSpace(res.stderr))
	if !slices.Contains(tc.codes, res.code) {
		t.Errorf("exit %d, want one of %v; stderr %q; stdout %.600s", res.code, tc.codes, res.stderr, res.stdout)
	}
	if res.allocMB > 256 {
		t.Errorf("%d MB allocated on a small input", res.allocMB)
	}
	// the error, then for a usage error the hint where the help is
	errLines := slices.DeleteFunc(strings.Split(strings.TrimSpace(res.stderr), "\n"), func(l string) bool { return strings.HasPrefix(l, "Run 'kaudit ") })
	noReport := res.stdout == "" && out == ""
	if res.code == exitUsage || (res.code == exitNotRun && noReport && res.stderr != "") {
		// One line; a spec with several errors may list them, one per
		// line, each naming the file.
		if !strings.HasPrefix(errLines[0], "kaudit: ") {
			t.Errorf("want a one-line error, got %q", res.stderr)
		}
		if spec := specArg(args); len(errLines) > 1 && (spec == "" || slices.ContainsFunc(errLines[1:], func(l string) bool { return !strings.HasPrefix(l, spec) })) {
			t.Errorf("want a one-line error, got %q", res.stderr)
		}
		if tc.wantErr != "" && !strings.Contains(res.stderr, tc.wantErr) {
			t.Errorf("error %q does not name %q", res.stderr, tc.wantErr)
		}
	}
	if res.code != exitClean {
		checkNotClean(t, "stdout", res.stdout)
	}
	if args[0] == "ledger" && res.code != exitClean && res.code != exitUsage && res.stderr == "" {
		checkLedgerSaysWhy(t, res.stdout)
	}
	if out == "" {
		return
	}
	entries, err := os.ReadDir(outDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != filepath.Base(out) && !strings.HasSuffix(e.Name(), "-timeline.svg") {
			t.Errorf("left behind in the output dir: %s", e.Name())
		}
	}
	b, err := os.ReadFile(out)
	switch {
	case os.IsNotExist(err):
		if res.code == exitFindings || (res.code == exitIncomplete && res.stderr == "") {
			t.Errorf("exit %d and no report at %s", res.code, out)
		}
	case err != nil:
		t.Fatal(err)
	case res.code == exitUsage:
		t.Errorf("a usage error left a report at %s", out)
	default:
		if res.code != exitClean {
			checkNotClean(t, out, string(b))
		}
		if strings.HasSuffix(out, ".json") {
			if _, err := report.ReadJSON(bytes.NewReader(b)); err != nil {
				t.Errorf("the report at %s does not read back: %v", out, err)
			}
		}
	}
}

// specArg is the --spec argument of args, if any.
func specArg(args []string) string {
	if i := slices.Index(args, "--spec"); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// checkLedgerSaysWhy fails when a ledger that did not end clean shows no
// finding: a user must see why the exit code is not 0.
func checkLedgerSaysWhy(t *testing.T, stdout string) {
	t.Helper()
	var doc struct {
		Findings   []json.RawMessage `json:"findings"`
		Partitions []struct {
			Findings []json.RawMessage `json:"findings"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Errorf("ledger output is not JSON: %v", err)
		return
	}
	n := len(doc.Findings)
	for _, p := range doc.Partitions {
		n += len(p.Findings)
	}
	if n == 0 {
		t.Errorf("the ledger ends non-zero but shows no finding and no error:\n%.800s", stdout)
	}
}

// checkNotClean fails when a report that ended with a non-zero exit says
// the verdict is clean.
func checkNotClean(t *testing.T, where, text string) {
	t.Helper()
	var doc struct {
		Summary struct {
			Verdict string `json:"verdict"`
		} `json:"summary"`
	}
	if json.Unmarshal([]byte(text), &doc) == nil && doc.Summary.Verdict == "clean" {
		t.Errorf("%s: verdict clean", where)
	}
	if strings.Contains(text, `verdict="clean"} 1`) || strings.Contains(strings.ToLower(text), "verdict: clean") {
		t.Errorf("%s says clean", where)
	}
}

// avroCluster is the demo app (Avro values under a Schema Registry, no
// faults, no lag) on a fresh kfake broker, with the demo spec.
func avroCluster(t *testing.T) (bs string, reg *fakeregistry.Registry, spec string) {
	t.Helper()
	reg = fakeregistry.NewServer(t)
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := fakeapp.SeedScenario("shop", 60)
	s.Lag, s.Inflight = 0, 0
	s.Encode = enc.Encode
	_, bs = scenarioCluster(t, s)
	dir := t.TempDir()
	for _, name := range []string{"kaudit.yaml", "topology.txt"} {
		data, err := demoFiles.ReadFile("demo/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return bs, reg, filepath.Join(dir, "kaudit.yaml")
}

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// fetchesTopic reports whether a fetch request reads the topic with this
// name or id.
func fetchesTopic(req *kmsg.FetchRequest, name string, id [16]byte) bool {
	for _, t := range req.Topics {
		if t.Topic == name || (id != [16]byte{} && t.TopicID == id) {
			return true
		}
	}
	return false
}

// onFirstFetch runs change, outside the broker's loop, when the first fetch
// of topic arrives, and lets the broker answer that fetch only after it.
func onFirstFetch(c *kfake.Cluster, topic string, change func()) {
	info := c.TopicInfo(topic)
	var once atomic.Bool
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !fetchesTopic(req.(*kmsg.FetchRequest), topic, info.TopicID) || !once.CompareAndSwap(false, true) {
			return nil, nil, false
		}
		done := make(chan struct{})
		go func() { defer close(done); change() }()
		c.SleepControl(func() { <-done })
		return nil, nil, false
	})
}

// TestSafetyBadLive runs diff against a live broker whose evidence changes
// or fails in the middle of the audit.
func TestSafetyBadLive(t *testing.T) {
	spec := writeSafetySpec(t)
	diff := func(bs string, extra ...string) []string {
		return append([]string{"diff", "--spec", spec, "--bootstrap-server", bs, "--timeout", "2s", "--format", "json", "--output", "{out}"}, extra...)
	}

	// The same app, untouched: what a run that survives a fault must say.
	_, bs := cleanCluster(t, 60)
	want := runGuarded(t, diff(bs)[:len(diff(bs))-2]...)
	var wantDoc struct {
		Summary struct {
			Verdict string `json:"verdict"`
		} `json:"summary"`
		Findings []json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal([]byte(want.stdout), &wantDoc); err != nil || want.code != exitClean {
		t.Fatalf("untouched app: exit %d, %v, stderr %s", want.code, err, want.stderr)
	}

	t.Run("topic deleted mid-read", func(t *testing.T) {
		c, bs := cleanCluster(t, 60)
		onFirstFetch(c, "payments-v1", func() {
			if err := c.DeleteTopic("payments-v1"); err != nil {
				t.Error(err)
			}
		})
		checkBadRun(t, badCase{"", diff(bs), evidence, ""})
	})
	t.Run("repartition topic deleted mid-read", func(t *testing.T) {
		c, bs := cleanCluster(t, 60)
		onFirstFetch(c, "shop-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition", func() {
			if err := c.DeleteTopic("shop-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition"); err != nil {
				t.Error(err)
			}
		})
		checkBadRun(t, badCase{"", diff(bs), evidence, ""})
	})
	t.Run("partitions added mid-read", func(t *testing.T) {
		// A partition and a record that appear after the cut was read are
		// not the audit's business: clean is right, a loss is not.
		c, bs := cleanCluster(t, 60)
		onFirstFetch(c, "orders-v1", func() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			if _, err := kadm.NewClient(cl).CreatePartitions(context.Background(), 2, "orders-v1"); err != nil {
				t.Error(err)
			}
			r := &kgo.Record{Topic: "orders-v1", Partition: 4, Value: []byte(`{"orderId":"o-00001","seq":999,"amount":5,"table":"orders"}`)}
			if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
				t.Error(err)
			}
		})
		checkBadRun(t, badCase{"", diff(bs), []int{exitClean, exitIncomplete, exitNotRun}, ""})
	})
	t.Run("partition count changed before the audit", func(t *testing.T) {
		// orders-v1 grows from 3 to 4 partitions and a record lands in the
		// new one, which the app's group has no offset for: the record
		// must show (pending or lost), the run must not be silently clean.
		c, bs := cleanCluster(t, 60)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if _, err := kadm.NewClient(cl).CreatePartitions(t.Context(), 1, "orders-v1"); err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: "orders-v1", Partition: 3, Key: []byte("evt-orders-3-0"), Value: []byte(`{"orderId":"o-00001","seq":999,"amount":5,"table":"orders"}`)}
		if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		res := runGuarded(t, diff(bs)[:len(diff(bs))-2]...)
		if res.panicked != nil {
			t.Fatalf("panic: %v", res.panicked)
		}
		t.Logf("exit %d, stderr %s", res.code, res.stderr)
		if !strings.Contains(res.stdout, `"topic": "orders-v1",
      "partition": 3`) && !strings.Contains(res.stdout, `"topic":"orders-v1","partition":3`) {
			t.Errorf("the report does not name orders-v1/3:\n%s", res.stdout)
		}
	})
	t.Run("group offset above the high watermark", func(t *testing.T) {
		// What a group is left with when an unclean leader election
		// truncated a partition below what the app had consumed: the
		// consumed records are gone, so the run cannot be clean.
		c, bs := cleanCluster(t, 60)
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		adm := kadm.NewClient(cl)
		ends, err := adm.ListEndOffsets(t.Context(), "orders-v1")
		if err != nil {
			t.Fatal(err)
		}
		end, _ := ends.Lookup("orders-v1", 0)
		var offs kadm.Offsets
		offs.Add(kadm.Offset{Topic: "orders-v1", Partition: 0, At: end.Offset + 5, LeaderEpoch: -1})
		if _, err := adm.CommitOffsets(t.Context(), "shop", offs); err != nil {
			t.Fatal(err)
		}
		checkBadRun(t, badCase{"", diff(bs), evidence, ""})
	})
	t.Run("broker restarted mid-read", func(t *testing.T) {
		c, bs := cleanCluster(t, 60)
		var n atomic.Int32
		c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if i := n.Add(1); i > 5 && i <= 12 {
				return nil, errors.New("broker restarting"), true // the connection drops
			}
			return nil, nil, false
		})
		res := runGuarded(t, diff(bs)[:len(diff(bs))-2]...)
		if res.panicked != nil {
			t.Fatalf("panic: %v", res.panicked)
		}
		if n.Load() <= 12 {
			t.Fatalf("only %d fetches: the fault was not hit", n.Load())
		}
		var doc struct {
			Summary struct {
				Verdict string `json:"verdict"`
			} `json:"summary"`
			Findings []json.RawMessage `json:"findings"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
			t.Fatalf("exit %d, stderr %s: %v", res.code, res.stderr, err)
		}
		t.Logf("exit %d, verdict %s, %d findings", res.code, doc.Summary.Verdict, len(doc.Findings))
		// Either the retries hid the restart entirely, or the run says
		// evidence is missing: never a different verdict.
		if res.code != exitIncomplete && res.code != exitNotRun && (res.code != want.code || doc.Summary.Verdict != wantDoc.Summary.Verdict || len(doc.Findings) != len(wantDoc.Findings)) {
			t.Errorf("exit %d, verdict %s, %d findings; the untouched app: exit %d, %s, %d findings",
				res.code, doc.Summary.Verdict, len(doc.Findings), want.code, wantDoc.Summary.Verdict, len(wantDoc.Findings))
		}
	})
	t.Run("avro", func(t *testing.T) {
		bs, reg, spec := avroCluster(t)
		empty := fakeregistry.NewServer(t)
		down := closedAddr(t)
		avro := func(extra ...string) []string {
			return append([]string{"diff", "--spec", spec, "--bootstrap-server", bs, "--timeout", "1s", "--format", "json", "--output", "{out}"}, extra...)
		}
		for _, tc := range []struct {
			name  string
			fault fakeregistry.Fault
			args  []string
			codes []int
		}{
			{"control", fakeregistry.Fault{}, avro("--schema-registry-url", reg.URL), []int{exitClean}},
			{"unknown schema id", fakeregistry.Fault{}, avro("--schema-registry-url", empty.URL), evidence},
			{"registry answers garbage", fakeregistry.Fault{Garbage: true}, avro("--schema-registry-url", reg.URL), evidence},
			{"registry answers 500", fakeregistry.Fault{Status: 500}, avro("--schema-registry-url", reg.URL), evidence},
			{"registry too slow", fakeregistry.Fault{Delay: 5 * time.Second}, avro("--schema-registry-url", reg.URL, "--timeout", "300ms"), evidence},
			{"registry unreachable", fakeregistry.Fault{}, avro("--schema-registry-url", "http://"+down), evidence},
			{"offline schemas of another app", fakeregistry.Fault{}, avro("--schemas", bad("schemas/wrong-schema")), evidence},
			{"offline schemas not json", fakeregistry.Fault{}, avro("--schemas", bad("schemas/not-json")), config},
			{"json declared, avro bytes", fakeregistry.Fault{}, diff(bs), evidence},
		} {
			t.Run(tc.name, func(t *testing.T) {
				reg.SetFault(tc.fault)
				defer reg.SetFault(fakeregistry.Fault{})
				start := time.Now()
				checkBadRun(t, badCase{"", tc.args, tc.codes, ""})
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("took %s", d)
				}
			})
		}
	})
	t.Run("broker gone mid-read", func(t *testing.T) {
		c, bs := cleanCluster(t, 60)
		var n atomic.Int32
		c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			if n.Add(1) > 3 {
				return nil, errors.New("broker down"), true
			}
			return nil, nil, false
		})
		start := time.Now()
		checkBadRun(t, badCase{"", diff(bs, "--timeout", "500ms"), []int{exitIncomplete, exitNotRun}, ""})
		if d := time.Since(start); d > 15*time.Second {
			t.Errorf("took %s with --timeout 500ms", d)
		}
	})
}

// TestSafetyNoTempLeft checks that a run leaves nothing in the temporary
// directory: a snapshot's schemas are staged there for the decoder.
func TestSafetyNoTempLeft(t *testing.T) {
	for _, args := range [][]string{
		{"diff", "--snapshot", bad("snapshot/with-schemas"), "--spec", bad("spec/good/kaudit.yaml"), "--format", "json"},
		{"diff", "--snapshot", bad("snapshot/schema-garbage"), "--spec", bad("spec/good/kaudit.yaml"), "--format", "json"},
		{"ledger", "--snapshot", bad("snapshot/with-schemas"), "--topic", "orders-v1", "--offsets", "0-3", "--value-serde", "avro", "--format", "json"},
	} {
		t.Run(strings.Join(args[:2], " ")+" "+filepath.Base(args[2]), func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			res := runGuarded(t, args...)
			if res.panicked != nil {
				t.Fatalf("panic: %v", res.panicked)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
				t.Errorf("exit %d; left in $TMPDIR: %v", res.code, entries)
			}
		})
	}
}

// TestSafetyOutputFile checks that --output is written whole or not at
// all: a failing or interrupted run leaves an earlier report untouched and
// no temporary file behind.
func TestSafetyOutputFile(t *testing.T) {
	base, spec := bad("snapshot/base"), bad("spec/good/kaudit.yaml")
	for _, tt := range []struct {
		name string
		args []string
		code int
	}{
		{"bad spec", []string{"diff", "--snapshot", base, "--spec", bad("spec/bad-expression/kaudit.yaml")}, exitUsage},
		{"bad snapshot", []string{"diff", "--snapshot", bad("snapshot/manifest-not-json"), "--spec", spec}, exitNotRun},
		{"bad format", []string{"diff", "--snapshot", base, "--spec", spec, "--format", "xml"}, exitUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "report.json")
			if err := os.WriteFile(out, []byte("the earlier report\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res := runGuarded(t, append(tt.args, "--output", out, "--force")...) // --force: the run, not the rule, must fail
			if res.panicked != nil || res.code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q; panic %v", res.code, tt.code, res.stderr, res.panicked)
			}
			if b, _ := os.ReadFile(out); string(b) != "the earlier report\n" {
				t.Errorf("the earlier report was overwritten with %q", b)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("files left: %v", entries)
			}
		})
	}
	t.Run("output into a missing dir", func(t *testing.T) {
		res := runGuarded(t, "diff", "--snapshot", base, "--spec", spec, "--output", filepath.Join(t.TempDir(), "no", "such", "report.json"))
		if lines := strings.Split(strings.TrimSpace(res.stderr), "\n"); res.panicked != nil || res.code != exitUsage || len(lines) != 2 || !strings.HasPrefix(lines[1], "Run 'kaudit diff --help'") {
			t.Errorf("exit %d, stderr %q, panic %v; want a one-line usage error and the hint", res.code, res.stderr, res.panicked)
		}
	})
	t.Run("output is a directory", func(t *testing.T) {
		dir := t.TempDir()
		res := runGuarded(t, "diff", "--snapshot", base, "--spec", spec, "--output", dir)
		if res.panicked != nil || res.code == exitClean || res.code == exitFindings {
			t.Errorf("exit %d, stderr %q, panic %v", res.code, res.stderr, res.panicked)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("files left in %s: %v", dir, entries)
		}
	})
	t.Run("interrupted mid-read", func(t *testing.T) {
		c, bs := cleanCluster(t, 60)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		onFirstFetch(c, "payments-v1", cancel)
		dir := t.TempDir()
		out := filepath.Join(dir, "report.json")
		if err := os.WriteFile(out, []byte("the earlier report\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		err := newApp(&stdout, &stderr).RunContext(ctx, []string{"kaudit", "diff", "--spec", writeSafetySpec(t), "--bootstrap-server", bs, "--output", out, "--force"})
		if code := exitCode(ctx, err); code != exitInterrupted {
			t.Errorf("exit %d (%v), want %d", code, err, exitInterrupted)
		}
		if b, _ := os.ReadFile(out); string(b) != "the earlier report\n" {
			t.Errorf("the earlier report was overwritten with %q", b)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("files left: %v", entries)
		}
	})
}

// TestSafetyMutatedSegment flips every byte of the corpus's good segment,
// one at a time, and reads the log dir with kaudit ledger: never a panic
// or a usage error, and never clean unless the byte is a leader epoch.
func TestSafetyMutatedSegment(t *testing.T) {
	name := "00000000000000000000.log"
	seg, err := os.ReadFile(bad("logdir/good/events-0/" + name))
	if err != nil {
		t.Fatal(err)
	}
	batches := splitBatches(t, seg)
	// Every byte but a batch's partition leader epoch (bytes 12-15, which
	// neither the CRC covers nor the ledger reads) must make a difference.
	covered := make([]bool, len(seg))
	at := 0
	for _, b := range batches {
		for i := range b {
			covered[at+i] = i < 12 || i > 15
		}
		at += len(b)
	}
	dir := t.TempDir()
	pdir := filepath.Join(dir, "events-0")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for i := range seg {
		if err := os.WriteFile(filepath.Join(pdir, name), corrupt(seg, i), 0o644); err != nil {
			t.Fatal(err)
		}
		res := runGuarded(t, "ledger", "--log-dir", dir, "--topic", "events", "--format", "json")
		counts[res.code]++
		switch {
		case res.panicked != nil:
			t.Errorf("byte %d: panic: %v", i, res.panicked)
		case res.code != exitClean && res.code != exitFindings && res.code != exitIncomplete && res.code != exitNotRun:
			t.Errorf("byte %d: exit %d, stderr %q", i, res.code, res.stderr)
		case covered[i] && res.code == exitClean:
			t.Errorf("byte %d flipped: exit 0:\n%.300s", i, res.stdout)
		}
	}
	t.Logf("%d mutations, exit codes %v", len(seg), counts)
}

// TestSafetyInterruptedCapture interrupts kaudit capture in the middle of
// its copy: the partial bundle must audit as incomplete, never clean, and
// a second run must resume it into one that audits clean.
func TestSafetyInterruptedCapture(t *testing.T) {
	c, bs := cleanCluster(t, 60)
	spec := writeSafetySpec(t)
	bundle := filepath.Join(t.TempDir(), "bundle")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	onFirstFetch(c, "shipments-v1", cancel)
	var stdout, stderr bytes.Buffer
	topo := filepath.Join(filepath.Dir(spec), "topology.txt") // names the output topic
	err := newApp(&stdout, &stderr).RunContext(ctx, []string{"kaudit", "capture", "--app-id", "shop", "--bootstrap-server", bs, "--out", bundle, "--topology", topo})
	if code := exitCode(ctx, err); code != exitInterrupted {
		t.Fatalf("capture: exit %d (%v), want %d", code, err, exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(bundle, "manifest.json")); err != nil {
		t.Fatalf("no manifest after the interruption: %v", err)
	}
	checkBadRun(t, badCase{"", []string{"diff", "--snapshot", bundle, "--spec", spec, "--format", "json", "--output", "{out}"}, []int{exitIncomplete}, ""})
	checkBadRun(t, badCase{"", []string{"ledger", "--snapshot", bundle, "--topic", "shipments-v1", "--format", "json"}, []int{exitIncomplete}, ""})

	res := runGuarded(t, "capture", "--app-id", "shop", "--bootstrap-server", bs, "--out", bundle, "--topology", topo)
	if res.code != exitClean {
		t.Fatalf("resumed capture: exit %d, stderr %s", res.code, res.stderr)
	}
	if res := runGuarded(t, "diff", "--snapshot", bundle, "--spec", spec); res.code != exitClean {
		t.Errorf("the resumed bundle audits with exit %d:\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestSafetyHugeInputs feeds multi-megabyte describe texts, specs and
// properties: refused or read, with bounded memory, never a panic.
func TestSafetyHugeInputs(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 1<<20)
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := demoFiles.ReadFile("demo/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	topoLine := write("long-line.txt", "Topologies:\n   Sub-topology: 0\n    Source: S (topics: ["+long+"])\n")
	var many strings.Builder
	many.WriteString("Topologies:\n   Sub-topology: 0\n    Source: S (topics: [orders-v1])\n      --> P0\n")
	for i := range 50000 {
		fmt.Fprintf(&many, "    Processor: P%d (stores: [])\n      --> P%d\n      <-- %s\n", i, i+1, map[bool]string{true: "S", false: fmt.Sprintf("P%d", i-1)}[i == 0])
	}
	fmt.Fprintf(&many, "    Sink: P50000 (topic: out)\n      <-- P49999\n")
	topoMany := write("many.txt", many.String())
	write("topology.txt", string(good))
	specLong := write("long.yaml", strings.Replace(safetyJSONSpec, "select_key: value.orderId, reduce: latest}\n  - {name: payments",
		"select_key: 'value."+long+" +', reduce: latest}\n  - {name: payments", 1))
	props := write("client.properties", "security.protocol=PLAINTEXT\nsasl.password="+long+"\n"+long+"\n")
	for _, tc := range []badCase{
		{"topology long line", []string{"topology", "--topology", topoLine}, []int{exitClean, exitUsage}, ""},
		{"topology many processors", []string{"topology", "--topology", topoMany, "--format", "json"}, []int{exitClean, exitUsage}, ""},
		{"spec long expression", []string{"diff", "--snapshot", bad("snapshot/base"), "--spec", specLong, "--output", "{out}"}, config, ""},
		{"huge properties", []string{"ledger", "--bootstrap-server", closedAddr(t), "--timeout", "300ms", "--topic", "t", "--command-config", props}, []int{exitUsage, exitIncomplete, exitNotRun}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkBadRun(t, tc)
		})
	}
}
