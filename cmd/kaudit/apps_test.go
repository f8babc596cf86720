package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/audit/snapshot"
)

// appsTruth is what the drill measured of its steps apps' clean runs
// (testdata/apps/truth.json): the records a filter rejected, those with a
// null key, the clicks a window had closed for.
type appsTruth struct {
	Orders struct {
		Filtered []string `json:"filtered"`
		NullKey  []string `json:"null_key"`
	} `json:"orders"`
	Windows struct {
		Late []string `json:"late"`
	} `json:"windows"`
	Enrich struct {
		NullKey []string `json:"null_key"`
	} `json:"enrich"`
	Cogroup struct {
		Filtered []string `json:"filtered"`
	} `json:"cogroup"`
}

// TestRealApps audits the captures of real Kafka Streams 3.6.2 apps with
// stateless steps (testdata/apps: a filter and a mapValues before
// selectKey, flatMapValues → groupBy → count, a windowed count with
// toStream().filter().to(), a merge split into branches) and with the
// stateful shapes (a stream-table join, a KTable groupBy, a cogroup, a
// foreign-key join), each run clean with kill -9 restarts: each is clean
// (the foreign-key join incomplete, naming its node), its filter's
// rejects are filtered (never dropped), and a spec that leaves a step
// TODO gives incomplete naming the node, never a loss.
func TestRealApps(t *testing.T) {
	data, err := os.ReadFile("../../testdata/apps/truth.json")
	if err != nil {
		t.Fatal(err)
	}
	var truth appsTruth
	if err := json.Unmarshal(data, &truth); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bundle, spec string
		code         int
		info         map[audit.Cause][]string // the info findings' records, each once
		missing      string                   // a word of the missing evidence
	}{
		{"orders", "orders", exitClean, map[audit.Cause][]string{audit.CauseFiltered: truth.Orders.Filtered, audit.CauseNullKey: truth.Orders.NullKey}, ""},
		{"orders", "orders-todo", exitIncomplete, nil, "KSTREAM-FILTER-0000000001"},
		{"words", "words", exitClean, nil, ""},
		{"words", "words-todo", exitIncomplete, nil, "KSTREAM-FLATMAPVALUES-0000000001"},
		{"windows", "windows", exitClean, map[audit.Cause][]string{audit.CauseLate: truth.Windows.Late}, ""},
		{"routes", "routes", exitClean, nil, ""},
		// the stateful shapes: a stream-table left and inner join, a
		// KTable groupBy, a cogroup, a foreign-key join (not modelled)
		{"enrich", "enrich", exitClean, map[audit.Cause][]string{audit.CauseNullKey: truth.Enrich.NullKey}, ""},
		{"regroup", "regroup", exitClean, nil, ""},
		{"cogroup", "cogroup", exitClean, map[audit.Cause][]string{audit.CauseFiltered: truth.Cogroup.Filtered}, ""},
		{"fkjoin", "fkjoin", exitIncomplete, nil, "KTABLE-FK-JOIN-"},
		// Kafka's own WordCountDemo, unchanged, no topology, its copies purged
		{"wordcount", "wordcount", exitClean, nil, ""},
		{"wordcount-eos", "wordcount", exitClean, nil, ""},
		// at-least-once, killed -9 and restarted: the rare word zebra counted 9
		// times for its 3 occurrences, which only re-application explains:
		// not judged, never state-diverged
		{"wordcount-zebra", "wordcount", exitIncomplete, nil, "written outside transactions"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/apps/"+tc.bundle, "--spec", "../../testdata/apps/"+tc.spec+".kaudit.yaml", "--format", "json")
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s", code, tc.code, errOut)
			}
			var rep audit.Report
			if err := decodeReport([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if m := strings.Join(rep.Summary.Missing, "\n"); tc.missing != "" && !strings.Contains(m, tc.missing) {
				t.Errorf("missing evidence %q does not name %s", m, tc.missing)
			}
			// per cause and partition: the count, and each offset the detail lists
			count := map[string]int64{}
			listed := map[string]bool{}
			for _, f := range rep.Findings {
				switch f.Severity {
				case audit.SeverityLoss, audit.SeverityAnomaly:
					t.Errorf("finding %s/%s %s/%d@%d: %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
				}
				if _, ok := tc.info[f.Cause]; ok {
					count[fmt.Sprintf("%s %s/%d", f.Cause, f.Topic, f.Partition)] += f.Count
					for _, r := range recordsOf(f) {
						listed[string(f.Cause)+" "+r] = true
					}
				}
			}
			want := map[string]int64{}
			for cause, recs := range tc.info {
				for _, r := range recs {
					tp, _, _ := strings.Cut(r, "@")
					want[fmt.Sprintf("%s %s", cause, tp)]++
					delete(listed, string(cause)+" "+r)
				}
			}
			if !maps.Equal(count, want) {
				t.Errorf("counts %v, want %v", count, want)
			}
			if len(listed) > 0 {
				t.Errorf("records listed that the truth has not: %v", slices.Sorted(maps.Keys(listed)))
			}
		})
	}
}

// recordsOf lists the records an info finding names, topic/partition@offset:
// the offsets its detail lists (the first ten), else its own.
func recordsOf(f audit.Finding) []string {
	_, list, ok := strings.Cut(f.Detail, "(offsets ")
	if !ok {
		return []string{fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset)}
	}
	list, _, _ = strings.Cut(list, ")")
	list, _, _ = strings.Cut(list, " and ")
	var out []string
	for _, o := range strings.Split(list, ", ") {
		out = append(out, fmt.Sprintf("%s/%d@%s", f.Topic, f.Partition, o))
	}
	return out
}

// TestRealAppsInferred audits the same captures with --app-id alone, as
// on-call does: the spec is inferred from the evidence, and a clean run
// is never a loss or an anomaly (what cannot be inferred is incomplete).
func TestRealAppsInferred(t *testing.T) {
	// code: what the inference settles today (cogroup: its grouped streams and aggregators; regroup: the groupBy mapper and its count and sum; routes: its split()'s
	// branch predicates, the default branch from its siblings); the
	// incomplete ones name what they lack, and are never a loss
	for _, tc := range []struct {
		bundle, appID string
		code          int
		missing       string // the missing evidence that makes it incomplete
	}{
		{"orders", "kaudit-steps-orders", exitClean, ""}, {"words", "kaudit-steps-words", exitClean, ""},
		// the window's size and count are inferred, its grace is not: the
		// three inputs Streams skipped as late (the hand-written spec's
		// late findings) are named, the rest judged
		{"windows", "kaudit-steps-windows", exitIncomplete, "3 inputs (sc-clicks/0@206, sc-clicks/0@207, sc-clicks/1@154) are missing from windows that had closed"},
		{"routes", "kaudit-steps-routes", exitClean, ""},
		// Kafka's own TemperatureDemo, unchanged, no topology: the constant key,
		// the 5 s window, the highest of String temperatures, the output and
		// its filter (Integer.parseInt(value) > 20), all from the evidence
		{"temperature", "streams-temperature", exitClean, ""},
		{"enrich", "kaudit-z-enrich", exitClean, ""}, {"regroup", "kaudit-z-regroup", exitClean, ""}, {"cogroup", "kaudit-z-cogroup", exitClean, ""}, {"fkjoin", "kaudit-z-fkjoin", exitIncomplete, "FK"},
		// Kafka's own WordCountDemo, unchanged, no topology, at-least-once:
		// its repartition topic purged, the word split, the count and the
		// output (named after the app) from the evidence alone
		{"wordcount", "streams-wordcount", exitClean, ""},
		// exactly-once with a 10 MB cache: the copies kept, the changelog
		// and the output a record per key and commit
		{"wordcount-eos", "streams-wordcount", exitClean, ""},
		// the same app killed -9 mid-run and restarted: at-least-once
		// counted again what it had processed since its last commit, so no
		// reducer folds the inputs to the states; named, never a loss
		{"wordcount-restarted", "streams-wordcount", exitIncomplete, "the reducer"},
	} {
		t.Run(tc.bundle, func(t *testing.T) {
			rep := diffReport(t, tc.code, "--snapshot", "../../testdata/apps/"+tc.bundle, "--app-id", tc.appID)
			expectNoLoss(t, rep)
			if tc.missing != "" && !strings.Contains(fmt.Sprint(rep.Summary.Missing), tc.missing) {
				t.Errorf("missing evidence %q, want it to say %q", rep.Summary.Missing, tc.missing)
			}
			t.Logf("%s: %s; missing: %v", tc.bundle, rep.Summary.Verdict, rep.Summary.Missing)
		})
	}
}

// TestWordCountInferredLost: WordCountDemo's captures (at-least-once,
// its copies purged; exactly-once with a cache, its copies kept) with one
// more line (consumed: the group committed past it) whose words never
// reached the count, as if the app had lost it. The hand-written spec and
// --app-id alone (the split, the count and the output inferred) find the
// same four words of that line lost.
func TestWordCountInferredLost(t *testing.T) {
	for _, bundle := range []string{"wordcount", "wordcount-eos"} {
		t.Run(bundle, func(t *testing.T) {
			dir := copyTree(t, "../../testdata/apps/"+bundle)
			next := appendConsumed(t, dir, audit.TopicPartition{Topic: "streams-plaintext-input", Partition: 0}, 0, func(last audit.Record) ([]byte, int64) {
				return []byte("Kafka lost the words"), last.Timestamp + 1
			})
			var reports [2][]string
			for i, args := range [][]string{{"--spec", "../../testdata/apps/wordcount.kaudit.yaml"}, {"--app-id", "streams-wordcount"}} {
				rep := diffReport(t, exitFindings, append([]string{"--snapshot", dir}, args...)...)
				for _, f := range rep.Findings {
					if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
						reports[i] = append(reports[i], fmt.Sprintf("%s %s/%d@%d %s", f.Cause, f.Topic, f.Partition, f.Offset, f.Key))
					}
				}
				slices.Sort(reports[i])
			}
			if len(reports[0]) != 4 {
				t.Errorf("with the hand-written spec: %v, want the line's 4 words lost", reports[0])
			}
			for _, r := range reports[0] {
				if !strings.Contains(r, fmt.Sprintf(" streams-plaintext-input/0@%d ", next)) {
					t.Errorf("with the hand-written spec: %s, want a word of streams-plaintext-input/0@%d", r, next)
				}
			}
			if !slices.Equal(reports[1], reports[0]) {
				t.Errorf("with --app-id alone: %v, want the hand-written spec's %v", reports[1], reports[0])
			}
			t.Logf("both: %v", reports[0])
		})
	}
}

// TestTemperatureInferredLost: TemperatureDemo's capture with one more
// reading (99 degrees, consumed: the group committed past it) that never
// reached its window, as if the app had lost it. With the hand-written
// spec and with --app-id alone (the window, its reducer and the output's
// filter inferred, the copies purged) the same loss is found.
func TestTemperatureInferredLost(t *testing.T) {
	dir := copyTree(t, "../../testdata/apps/temperature")
	next := appendConsumed(t, dir, audit.TopicPartition{Topic: "iot-temperature", Partition: 1}, 0, func(last audit.Record) ([]byte, int64) {
		return []byte("99"), last.Timestamp - 1000 // in a window the app had folded
	})
	var reports [2][]string
	for i, args := range [][]string{{"--spec", "../../testdata/apps/temperature.kaudit.yaml"}, {"--app-id", "streams-temperature"}} {
		rep := diffReport(t, exitFindings, append([]string{"--snapshot", dir}, args...)...)
		for _, f := range rep.Findings {
			if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
				reports[i] = append(reports[i], fmt.Sprintf("%s %s/%d@%d", f.Cause, f.Topic, f.Partition, f.Offset))
			}
		}
	}
	if len(reports[0]) != 1 || !strings.HasSuffix(reports[0][0], fmt.Sprintf(" iot-temperature/1@%d", next)) {
		t.Errorf("with the hand-written spec: %v, want one loss of iot-temperature/1@%d", reports[0], next)
	}
	if !slices.Equal(reports[1], reports[0]) {
		t.Errorf("with --app-id alone: %v, want the hand-written spec's %v", reports[1], reports[0])
	}
	t.Logf("both: %v", reports[0])
}

// TestRoutesInferredDropped: the routes capture with one more source
// record (amount 500, consumed: the group committed past it) that reached
// no branch, as if the app had lost it. The hand-written spec states the
// branch's predicate: the record is dropped on its way to the
// big-customers branch. With --app-id alone the branch's predicate is
// inferred from the consumed records with and without a copy, and none
// tells them apart now (the new record has no copy and the largest
// amount): the branch may have removed it on purpose, so it is missing
// evidence, never a loss (a guess judges only what it explains).
func TestRoutesInferredDropped(t *testing.T) {
	dir := copyTree(t, "../../testdata/apps/routes")
	next := appendConsumed(t, dir, audit.TopicPartition{Topic: "sr-web", Partition: 0}, 36, func(last audit.Record) ([]byte, int64) {
		var v map[string]any
		if err := json.Unmarshal(last.Value, &v); err != nil {
			t.Fatal(err)
		}
		v["amount"] = 500
		val, _ := json.Marshal(v)
		return val, last.Timestamp + 1
	})
	losses := func(args ...string) []string {
		rep := diffReport(t, exitFindings, append([]string{"--snapshot", dir}, args...)...)
		var got []string
		for _, f := range rep.Findings {
			if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
				got = append(got, fmt.Sprintf("%s %s/%d@%d", f.Cause, f.Topic, f.Partition, f.Offset))
			}
		}
		return got
	}
	want := []string{fmt.Sprintf("dropped sr-web/0@%d", next)}
	if got := losses("--spec", "../../testdata/apps/routes.kaudit.yaml"); !slices.Equal(got, want) {
		t.Errorf("with the hand-written spec: %v, want %v", got, want)
	}
	rep := diffReport(t, exitIncomplete, "--snapshot", dir, "--app-id", "kaudit-steps-routes")
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
			t.Errorf("with --app-id alone: a %s finding %s %s/%d@%d, want none", f.Severity, f.Cause, f.Topic, f.Partition, f.Offset)
		}
	}
	if m := strings.Join(rep.Summary.Missing, "\n"); !strings.Contains(m, "no copy") || !strings.Contains(m, "branch KSTREAM-BRANCH-") {
		t.Errorf("with --app-id alone, the missing evidence does not name the inputs without a copy behind the branch: %s", m)
	}
}

// appendConsumed appends to a copied bundle's partition tp (its one
// segment) a record at offset next (0: right after the last), beyond the last, with the key of the
// last and the value and timestamp mk gives, and moves the group's
// committed offset past it, as if the app had consumed it and lost it.
func appendConsumed(t *testing.T, dir string, tp audit.TopicPartition, next int64, mk func(last audit.Record) ([]byte, int64)) int64 {
	t.Helper()
	rel := fmt.Sprintf("%s-%d/00000000000000000000.log", tp.Topic, tp.Partition)
	seg, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatal(err)
	}
	var last audit.Record
	for b := seg; len(b) > 0; {
		_, recs, n, err := segment.DecodeBatch(b, tp)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if !r.IsControl() {
				last = r
			}
		}
		b = b[n:]
	}
	if next <= 0 {
		next = last.Offset + 1 // right after the last
	}
	if last.Offset >= next {
		t.Fatalf("%s ends at %d, want below %d", tp, last.Offset, next)
	}
	val, ts := mk(last)
	lost := audit.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: next, Key: last.Key, Value: val, Timestamp: ts,
		Batch: audit.Batch{BaseOffset: next, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, MaxTimestamp: ts, Compression: "none"}}
	seg, err = segment.AppendBatch(seg, []audit.Record{lost})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rel), seg, 0o644); err != nil {
		t.Fatal(err)
	}
	mf := filepath.Join(dir, "manifest.json")
	m, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	m = rehash(t, editManifest(t, m, func(m *snapshot.Manifest) {
		for i := range m.Partitions {
			if p := &m.Partitions[i]; p.Topic == tp.Topic && p.Partition == tp.Partition {
				p.LSO, p.HW, p.Next, p.Records, p.Bytes = next+1, next+1, next+1, p.Records+1, int64(len(seg))
			}
		}
		for i := range m.Group.Offsets {
			if o := &m.Group.Offsets[i]; o.Topic == tp.Topic && o.Partition == tp.Partition {
				o.Offset = next + 1
			}
		}
	}), rel, seg)
	if err := os.WriteFile(mf, m, 0o644); err != nil {
		t.Fatal(err)
	}
	return next
}

// TestWindowsSuppressedInferred: the windows capture audited with a
// topology that puts a suppress() between its store and its output
// (testdata/windows-suppress.describe.txt, made by hand from the app's).
// With --app-id alone the window and its count are still inferred and the
// store judged (its three late inputs named, the grace being unknown);
// the suppressed output, which needs the grace, is left out of the spec
// and named as not judged. Never a loss.
func TestWindowsSuppressedInferred(t *testing.T) {
	rep := diffReport(t, exitIncomplete, "--snapshot", "../../testdata/apps/windows", "--app-id", "kaudit-steps-windows",
		"--topology", "testdata/windows-suppress.describe.txt")
	expectNoLoss(t, rep)
	missing := fmt.Sprint(rep.Summary.Missing)
	for _, want := range []string{"3 inputs (sc-clicks/0@206, sc-clicks/0@207, sc-clicks/1@154)", "output sc-busy-minutes (written by KSTREAM-SINK-0000000007) is not judged"} {
		if !strings.Contains(missing, want) {
			t.Errorf("missing evidence %s, want it to say %q", missing, want)
		}
	}
}

// TestWindowsSpecCheck: the spec check tests a windowed table's window
// and reducer on its windows. The windows app's own spec explains all
// 111; a wrong reducer (latest for count) or a wrong size (2m for 1m) is
// named and exits 2, and kaudit diff with it judges nothing on the table:
// no loss, the table named as not judged.
func TestWindowsSpecCheck(t *testing.T) {
	orig, err := os.ReadFile("../../testdata/apps/windows.kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, from, to string
		code           int
		says           string
	}{
		{"the app's", "", "", exitIncomplete, "{size: 1m}, count explains 111 of 111 windows"},
		{"a wrong reducer", "reduce: count", "reduce: latest", exitUsage, "{size: 1m}, latest explains 0 of 111 windows; {size: 1m}, count explains 111"},
		{"a wrong size", "size: 1m, grace: 5s", "size: 2m, grace: 5s", exitUsage, "{size: 1m}, count explains 111"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "kaudit.yaml")
			if err := os.WriteFile(p, []byte(strings.Replace(string(orig), tc.from, tc.to, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			out, errOut, code := runCLI(t, "spec", "check", "--spec", p, "--snapshot", "../../testdata/apps/windows")
			if code != tc.code || !strings.Contains(out, tc.says) {
				t.Fatalf("spec check: exit %d, want %d, saying %q: %s\n%s", code, tc.code, tc.says, out, errOut)
			}
			if tc.code == exitIncomplete {
				return
			}
			rep := diffReport(t, exitIncomplete, "--spec", p, "--snapshot", "../../testdata/apps/windows")
			expectNoLoss(t, rep)
			if !strings.Contains(fmt.Sprint(rep.Summary.Missing), "table clicks-per-minute is not judged: the spec does not describe the app") {
				t.Errorf("missing %v, want the table named as not judged", rep.Summary.Missing)
			}
		})
	}
}

// TestRealAppsShards: every capture of a real app, clean and with a
// consumed record the app lost, audited in 2 and 3 shards run at once
// (each reading every source partition it needs, and handing each other
// their inputs: --exchange) and merged, gives the whole audit's findings
// row for row: the stream-table join, the KTable groupBy and the cogroup,
// whose inputs cross partitions through their repartition topics, too.
func TestRealAppsShards(t *testing.T) {
	last := func(l audit.Record) ([]byte, int64) { return l.Value, l.Timestamp + 1 } // the last record again
	for _, tc := range []struct {
		bundle, spec string
		lose         *audit.TopicPartition // a consumed record appended there, never processed
		appID        string                // also with --app-id alone, the spec inferred
	}{
		{"orders", "orders", nil, ""},
		{"words", "words", nil, ""},
		{"windows", "windows", nil, "kaudit-steps-windows"},
		{"routes", "routes", nil, ""},
		{"enrich", "enrich", nil, "kaudit-z-enrich"},
		{"enrich", "enrich", &audit.TopicPartition{Topic: "ze-orders", Partition: 1}, ""},
		{"regroup", "regroup", nil, "kaudit-z-regroup"},
		{"cogroup", "cogroup", nil, "kaudit-z-cogroup"},
		{"cogroup", "cogroup", &audit.TopicPartition{Topic: "zg-views", Partition: 0}, ""},
		{"wordcount-eos", "wordcount", nil, ""},
		{"wordcount-eos", "wordcount", &audit.TopicPartition{Topic: "streams-plaintext-input", Partition: 0}, "streams-wordcount"},
	} {
		name := tc.bundle
		if tc.lose != nil {
			name += "-lost"
		}
		t.Run(name, func(t *testing.T) {
			dir := "../../testdata/apps/" + tc.bundle
			if tc.lose != nil {
				dir = copyTree(t, dir)
				appendConsumed(t, dir, *tc.lose, 0, last)
			}
			shardsAgree(t, tc.lose != nil, "diff", "--snapshot", dir, "--spec", "../../testdata/apps/"+tc.spec+".kaudit.yaml")
			if tc.appID != "" {
				shardsAgree(t, tc.lose != nil, "diff", "--snapshot", dir, "--app-id", tc.appID)
			}
		})
	}
}

// shardsAgree runs the audit args whole, then in 2 and 3 shards at once
// (without and with --exchange) merged: the merged findings must be the
// whole audit's, row for row, and name a loss when lost says so.
func shardsAgree(t *testing.T, lost bool, args ...string) {
	t.Helper()
	whole, errOut, code := runCLI(t, append(slices.Clone(args), "--format", "csv")...)
	if code != exitClean && code != exitFindings && code != exitIncomplete {
		t.Fatalf("%v: exit %d: %s", args, code, errOut)
	}
	if n := strings.Count(whole, ",loss,"); lost != (n > 0) {
		t.Fatalf("%v: %d losses:\n%s", args, n, whole)
	}
	for _, n := range []int{2, 3} {
		for _, exchange := range []bool{false, true} {
			out := t.TempDir()
			if err := os.Mkdir(filepath.Join(out, "x"), 0o755); err != nil { // --exchange is a folder that exists
				t.Fatal(err)
			}
			reports := make([]string, n)
			errs := make([]string, n)
			codes := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				reports[i] = filepath.Join(out, fmt.Sprintf("shard-%d.json", i))
				sargs := append(slices.Clone(args), "--shard", fmt.Sprintf("%d/%d", i, n), "--run-id", "r", "--format", "json", "--output", reports[i])
				if exchange {
					sargs = append(sargs, "--exchange", filepath.Join(out, "x"), "--exchange-wait", "1m")
				}
				wg.Go(func() { _, errs[i], codes[i] = runCLI(t, sargs...) })
			}
			wg.Wait()
			for i, c := range codes {
				if c != exitClean && c != exitFindings && c != exitIncomplete {
					t.Fatalf("shard %d/%d: exit %d: %s", i, n, c, errs[i])
				}
			}
			merged, errOut, mcode := runCLI(t, append(append([]string{"merge"}, reports...), "--format", "csv")...)
			if mcode != code || merged != whole {
				t.Errorf("%v: %d shards (exchange %v) merged: exit %d, want %d (%s)\n%s\nwhole:\n%s", args, n, exchange, mcode, code, errOut, merged, whole)
			}
		}
	}
}
