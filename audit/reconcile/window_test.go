package reconcile_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/kafka"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// windowPipeline is the scenario's spec, through the spec's own parser,
// and the decoder its serdes say.
func windowPipeline(t *testing.T, text string) (*reconcile.Pipeline, audit.Decoder) {
	t.Helper()
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	topics := map[string]codec.TopicSerdes{}
	for topic, sd := range plan.TopicSerdes() {
		topics[topic] = codec.TopicSerdes{Key: sd.Key, Value: sd.Value}
	}
	dec, err := codec.New(codec.Config{KeySerde: sp.Serdes.Key, ValueSerde: sp.Serdes.Value, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	return reconcile.FromPlan(plan, sp.Serdes.Key), dec
}

// runWindow writes the scenario in memory, or to an in-process kfake
// broker through real transactional producers, and audits it.
func runWindow(t *testing.T, s fakeapp.WindowScenario, onKfake bool) (*audit.Report, *fakeapp.WindowTruth) {
	t.Helper()
	return runWindowSpec(t, s, onKfake, s.Spec(), nil)
}

// runWindowSpec is runWindow audited with the spec text given.
func runWindowSpec(t *testing.T, s fakeapp.WindowScenario, onKfake bool, text string, hist *history.Evidence) (*audit.Report, *fakeapp.WindowTruth) {
	t.Helper()
	p, dec := windowPipeline(t, text)
	opts := reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute, CrossCheck: true, History: hist}
	var src audit.Source
	var truth *fakeapp.WindowTruth
	var err error
	if onKfake {
		c, wt, err := fakeapp.WriteFakeWindow(t.Context(), s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		truth = wt
		ks, err := kafka.Open(t.Context(), kafka.Config{Bootstrap: c.ListenAddrs(), Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ks.Close)
		src = ks
	} else {
		m := fakeapp.NewMemory(time.UnixMilli(s.Base + 3_600_000))
		if truth, err = fakeapp.GenerateWindow(s, fakeapp.NewMemoryBackend(m)); err != nil {
			t.Fatalf("generate: %v", err)
		}
		src = m
	}
	rep, err := reconcile.Run(t.Context(), src, p, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !onKfake {
		opts.Concurrency = 2
		par, err := reconcile.Run(t.Context(), src, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(rep)
		b, _ := json.Marshal(par)
		if !bytes.Equal(a, b) {
			t.Errorf("the report read ahead in parallel differs")
		}
	}
	return rep, truth
}

// compareWindow is compare, and the late findings exactly the inputs the
// simulation skipped for an expired window.
func compareWindow(t *testing.T, rep *audit.Report, truth *fakeapp.WindowTruth) {
	t.Helper()
	compare(t, rep, &truth.Truth)
	if truth.Unprovable && rep.Summary.Verdict == audit.VerdictClean {
		t.Errorf("verdict clean, though an input vanished that the evidence cannot tell from a late one")
	}
	if truth.Partial {
		return // a fold whose source history is not whole is not judged: no late finding either
	}
	got := map[string]bool{}
	for _, f := range rep.Findings {
		if f.Cause == audit.CauseLate {
			if f.Severity != audit.SeverityInfo {
				t.Errorf("late finding of severity %s", f.Severity)
			}
			got[fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset)] = true
		}
	}
	for k := range truth.Late {
		if !got[k] && !truth.LateMaybe[k] {
			t.Errorf("missed late input %s", k)
		}
	}
	for k := range got {
		if !truth.Late[k] {
			t.Errorf("late finding %s for an input Streams applied (after a restart: %v)", k, truth.LateApplied[k])
		}
	}
	if t.Failed() {
		var late []string
		for k := range truth.Late {
			late = append(late, k)
		}
		sort.Strings(late)
		t.Logf("truth: %v; late %v", truth.Findings, late)
	}
}

func windowScenario(kind string) fakeapp.WindowScenario {
	s := fakeapp.WindowScenario{AppID: "win", Partitions: 3, Inputs: 240, Keys: 6, Seed: 7, Base: 1_780_000_000_000,
		Commit: 8, Hop: true, Lag: 2, Inflight: 2, AbortEvery: 5, LateEvery: 17, Output: true}
	switch kind {
	case "tumbling":
		s.Window = &fakeapp.Win{Size: 2000, Advance: 2000, Grace: 300}
	case "hopping":
		s.Window = &fakeapp.Win{Size: 3000, Advance: 1000, Grace: 0}
	case "suppressed":
		s.Window = &fakeapp.Win{Size: 2000, Advance: 2000, Grace: 500}
		s.Suppress = true
	case "plain":
		s.LateEvery = 0
	}
	return s
}

var windowKinds = []string{"tumbling", "hopping", "suppressed", "plain"}

// TestWindowClean: windowed and primitive-serde tables (String keys,
// Integer values, Long sum and count stores), with and without the hop,
// aborted and replayed transactions, late inputs and restarts that make
// Streams apply some of them: clean, with exactly the late inputs named.
func TestWindowClean(t *testing.T) {
	for _, kind := range windowKinds {
		for _, hop := range []bool{true, false} {
			for _, restart := range []bool{false, true} {
				for _, count := range []bool{false, true} {
					name := fmt.Sprintf("%s/hop=%v/restart=%v/count=%v", kind, hop, restart, count)
					t.Run(name, func(t *testing.T) {
						s := windowScenario(kind)
						s.Hop, s.Restart, s.Count, s.Purge = hop, restart, count, hop
						if !hop {
							s.Inflight = 0
						}
						rep, truth := runWindow(t, s, false)
						if len(truth.Findings) != 0 {
							t.Fatalf("a clean scenario has ground truth %v", truth.Findings)
						}
						compareWindow(t, rep, truth)
						if rep.Summary.Verdict != audit.VerdictClean {
							t.Errorf("verdict %s, want clean (missing %v)", rep.Summary.Verdict, rep.Summary.Missing)
						}
						if kind != "plain" && len(truth.Late) == 0 {
							t.Errorf("no late input in the scenario")
						}
						if kind != "plain" && restart && len(truth.LateApplied) == 0 {
							t.Errorf("no late input applied after the restart: the case is not exercised")
						}
					})
				}
			}
		}
	}
}

// TestWindowGraceUnknown: a spec kaudit inferred knows the window's size
// and advance, not its grace (grace: unknown). An input missing from a
// window that had closed under a grace of 0 is then missing evidence,
// named, never late and never a loss; an input lost from a window still
// open is found as with the grace written.
func TestWindowGraceUnknown(t *testing.T) {
	for _, fault := range []bool{false, true} {
		t.Run(fmt.Sprintf("dropped=%v", fault), func(t *testing.T) {
			s := windowScenario("tumbling")
			s.Hop, s.Inflight = false, 0
			if fault {
				s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultStateDiverged}}
			}
			text := s.Spec()
			known := fmt.Sprintf("grace: %d}", s.Window.Grace)
			if !strings.Contains(text, known) {
				t.Fatalf("no %q in the scenario's spec:\n%s", known, text)
			}
			rep, truth := runWindowSpec(t, s, false, strings.Replace(text, known, "grace: unknown}", 1), nil)
			if len(truth.Late) == 0 {
				t.Fatal("no late input in the scenario")
			}
			for _, f := range rep.Findings {
				if f.Cause == audit.CauseLate {
					t.Errorf("late finding %s/%d@%d with the grace unknown", f.Topic, f.Partition, f.Offset)
				}
			}
			if rep.Summary.Verdict == audit.VerdictClean || !strings.Contains(fmt.Sprint(rep.Summary.Missing), "the window's grace is not known") {
				t.Errorf("verdict %s, missing %v: want the late inputs named as missing evidence", rep.Summary.Verdict, rep.Summary.Missing)
			}
			want := map[string]bool{}
			for _, e := range truth.Findings {
				want[fmt.Sprintf("%s %s/%d@%d", e.Cause, e.Topic, e.Partition, e.Offset)] = true
			}
			losses := 0
			for _, f := range rep.Findings {
				if f.Severity != audit.SeverityLoss {
					continue
				}
				losses++
				if k := fmt.Sprintf("%s %s/%d@%d", f.Cause, f.Topic, f.Partition, f.Offset); !want[k] {
					t.Errorf("loss %s, not in the simulation's %v", k, truth.Findings)
				}
			}
			if fault && losses == 0 {
				t.Errorf("the fault's loss was not found: truth %v", truth.Findings)
			}
		})
	}
}

// TestWindowGraceFromLog: with the grace unknown, the app's log line for
// a record skipped for an expired window gives it (its stream time minus
// its expiration): the audit is then the one with the grace written,
// clean with exactly the late inputs. A line of a window of another
// size (another windowed table on the topic) is not this window's.
func TestWindowGraceFromLog(t *testing.T) {
	s := windowScenario("tumbling")
	s.Hop, s.Inflight = false, 0
	text := strings.Replace(s.Spec(), fmt.Sprintf("grace: %d}", s.Window.Grace), "grace: unknown}", 1)
	_, truth := runWindow(t, s, false)
	var late string
	for k := range truth.Late {
		late = min(cmp.Or(late, k), k)
	}
	var topic string
	var part int32
	var off int64
	if _, err := fmt.Sscanf(strings.Replace(late, "/", " ", 1), "%s %d@%d", &topic, &part, &off); err != nil {
		t.Fatalf("late input %q: %v", late, err)
	}
	// the line names the thread that wrote it (slf4j-simple's and
	// logback's layouts show it): "[<app>-<uuid>-StreamThread-1]"
	const uuid = "ac6c0587-9be6-4293-a38e-21e59e33d1be"
	line := func(size, grace int64, clients ...string) applog.Event {
		return applog.Event{Kind: applog.ExpiredWindow, File: "app.log", Line: 1, TP: audit.TopicPartition{Topic: topic, Partition: part}, Offset: off,
			Reason: fmt.Sprintf("[%d,%d)", s.Base, s.Base+size), To: s.Base + 99_000, Count: grace, Clients: clients}
	}
	for _, tc := range []struct {
		name  string
		ev    applog.Event
		clean bool
	}{
		{"the window's own line", line(s.Window.Size, s.Window.Grace, s.AppID+"-"+uuid), true},
		{"another window size's line", line(s.Window.Size*2, s.Window.Grace, s.AppID+"-"+uuid), false},
		// another app reading the same source logs its own grace
		{"another app's line", line(s.Window.Size, s.Window.Grace, s.AppID+"-v2-"+uuid), false},
		{"another app's line implying a grace of 0", line(s.Window.Size, 0, "other-"+uuid), false},
		{"a line that names no app (Kafka's layout shows no thread)", line(s.Window.Size, s.Window.Grace), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, truth := runWindowSpec(t, s, false, text, &history.Evidence{Events: []applog.Event{tc.ev}})
			if !tc.clean {
				if rep.Summary.Verdict != audit.VerdictIncomplete {
					t.Errorf("verdict %s, want incomplete: the grace stays unknown", rep.Summary.Verdict)
				}
				return
			}
			compareWindow(t, rep, truth)
			if rep.Summary.Verdict != audit.VerdictClean {
				t.Errorf("verdict %s (missing %v), want clean", rep.Summary.Verdict, rep.Summary.Missing)
			}
		})
	}
}

// TestWindowEveryCause: every cause on windowed and primitive-serde
// tables, in memory; precision and recall 100 % against the simulation.
func TestWindowEveryCause(t *testing.T) {
	for _, tt := range []struct {
		name  string
		fault fakeapp.Fault
		cause audit.Cause
		mod   func(*fakeapp.WindowScenario)
	}{
		{"dropped", fakeapp.Fault{Kind: fakeapp.FaultDrop}, audit.CauseDropped, nil},
		{"unapplied", fakeapp.Fault{Kind: fakeapp.FaultDrop}, audit.CauseUnapplied, func(s *fakeapp.WindowScenario) { s.Purge = true }},
		{"unapplied, no hop", fakeapp.Fault{Kind: fakeapp.FaultStateDiverged}, audit.CauseUnapplied, func(s *fakeapp.WindowScenario) { s.Hop, s.Inflight = false, 0 }},
		{"aborted-not-replayed", fakeapp.Fault{Kind: fakeapp.FaultAbortNotReplayed}, audit.CauseAbortedNotReplayed, nil},
		{"state-diverged", fakeapp.Fault{Kind: fakeapp.FaultStateDiverged}, audit.CauseStateDiverged, nil},
		{"purged-before-commit", fakeapp.Fault{Kind: fakeapp.FaultPurgeBeforeCommit, Partition: 1}, audit.CausePurgedBeforeCommit, nil},
		{"retention-gap", fakeapp.Fault{Kind: fakeapp.FaultRetentionGap, Partition: 0}, audit.CauseRetentionGap, func(s *fakeapp.WindowScenario) { s.Lag = 4 }},
		{"duplicate", fakeapp.Fault{Kind: fakeapp.FaultDuplicate}, audit.CauseDuplicate, nil},
		{"state-reset", fakeapp.Fault{Kind: fakeapp.FaultStateReset, Partition: 0}, audit.CauseStateReset, func(s *fakeapp.WindowScenario) { s.Count = true }},
		{"join-missing", fakeapp.Fault{Kind: fakeapp.FaultJoinMissing, Partition: 1}, audit.CauseJoinMissing, nil},
	} {
		for _, kind := range windowKinds {
			for _, onKfake := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/kfake=%v", tt.name, kind, onKfake), func(t *testing.T) {
					s := windowScenario(kind)
					s.Faults = []fakeapp.Fault{tt.fault}
					if tt.mod != nil {
						tt.mod(&s)
					}
					rep, truth := runWindow(t, s, onKfake)
					has := false
					for _, e := range truth.Findings {
						has = has || e.Cause == tt.cause
					}
					if !has {
						t.Fatalf("the fault left no %s: %v", tt.cause, truth.Findings)
					}
					compareWindow(t, rep, truth)
				})
			}
		}
	}
}

// TestWindowRandom: random windowed and plain scenarios with random
// faults; every report must match the simulation's ground truth
// (precision and recall 100 %).
func TestWindowRandom(t *testing.T) {
	kinds := []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultAbortNotReplayed, fakeapp.FaultStateDiverged,
		fakeapp.FaultDuplicate, fakeapp.FaultPurgeBeforeCommit, fakeapp.FaultRetentionGap, fakeapp.FaultStateReset, fakeapp.FaultJoinMissing}
	n := 40
	if testing.Short() {
		n = 8
	}
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 99))
		s := windowScenario(windowKinds[rng.IntN(len(windowKinds))])
		s.Seed = seed + 100
		s.Hop = rng.IntN(3) > 0
		s.Restart = rng.IntN(2) == 0
		s.Count = rng.IntN(2) == 0
		s.Purge = s.Hop && rng.IntN(2) == 0
		s.Keys = 3 + rng.IntN(10)
		s.NoCache = rng.IntN(2) == 0
		if !s.Hop {
			s.Inflight = 0
		}
		for range rng.IntN(3) {
			f := fakeapp.Fault{Kind: kinds[rng.IntN(len(kinds))], Partition: int32(rng.IntN(int(s.Partitions)))}
			if f.Kind == fakeapp.FaultStateReset && s.Restart {
				continue // one event at half way
			}
			if f.Kind == fakeapp.FaultStateReset && slices.ContainsFunc(s.Faults, func(g fakeapp.Fault) bool { return g.Kind == fakeapp.FaultDuplicate }) ||
				f.Kind == fakeapp.FaultDuplicate && slices.ContainsFunc(s.Faults, func(g fakeapp.Fault) bool { return g.Kind == fakeapp.FaultStateReset }) {
				continue // the engine explains a restart or an input applied twice with its copies purged, not both in one key (as for plain tables)
			}
			s.Faults = append(s.Faults, f)
		}
		s.KeyString = s.Window != nil && rng.IntN(3) == 0
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rep, truth := runWindow(t, s, false)
			compareWindow(t, rep, truth)
			if t.Failed() {
				t.Logf("scenario %+v window %+v", s, s.Window)
			}
		})
	}
}

// TestWindowKfake: the same through a real wire-protocol broker and
// transactional producers: clean, and several faults at once.
func TestWindowKfake(t *testing.T) {
	for _, kind := range windowKinds {
		t.Run(kind+"/clean", func(t *testing.T) {
			s := windowScenario(kind)
			s.Restart, s.NoCache = true, true
			rep, truth := runWindow(t, s, true)
			compareWindow(t, rep, truth)
			if rep.Summary.Verdict != audit.VerdictClean {
				t.Errorf("verdict %s (missing %v)", rep.Summary.Verdict, rep.Summary.Missing)
			}
		})
		t.Run(kind+"/faults", func(t *testing.T) {
			s := windowScenario(kind)
			s.Lag = 3
			s.Faults = []fakeapp.Fault{
				{Kind: fakeapp.FaultDrop},
				{Kind: fakeapp.FaultAbortNotReplayed},
				{Kind: fakeapp.FaultStateDiverged},
				{Kind: fakeapp.FaultDuplicate},
				{Kind: fakeapp.FaultPurgeBeforeCommit, Partition: 1},
				{Kind: fakeapp.FaultJoinMissing, Partition: 2},
			}
			rep, truth := runWindow(t, s, true)
			if len(truth.Findings) < 5 {
				t.Fatalf("ground truth too small: %v", truth.Findings)
			}
			compareWindow(t, rep, truth)
		})
	}
	_ = strings.TrimSpace
}

// TestWindowRetention: windows whose changelog records are gone below a
// log start above 0 are not judged where time retention may have deleted
// them (a note, clean); where the topic's retention is unknown or by
// size, that is missing evidence; where retention.ms cannot have reached
// their inputs' timestamps, they are judged, and their lost states found.
func TestWindowRetention(t *testing.T) {
	for _, c := range []struct {
		name    string
		configs map[string]string
		verdict audit.Verdict
		text    string // in a note or a missing-evidence line
	}{
		{"retention reached every input", map[string]string{"retention.ms": "1000"}, audit.VerdictClean, "and inputs older than its retention.ms"},
		{"retention unknown", nil, audit.VerdictIncomplete, "may have deleted any record"},
		{"retention by size", map[string]string{"retention.ms": "1000", "retention.bytes": "1048576"}, audit.VerdictIncomplete, "may have deleted any record"},
		{"broker timestamps", map[string]string{"retention.ms": "1000", "message.timestamp.type": "LogAppendTime"}, audit.VerdictIncomplete, "may have deleted any record"},
		{"retention cannot have reached them", map[string]string{"retention.ms": "604800000"}, audit.VerdictLoss, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := windowScenario("tumbling")
			s.Hop, s.Inflight, s.LateEvery = false, 0, 0
			p, dec := windowPipeline(t, s.Spec())
			m := fakeapp.NewMemory(time.UnixMilli(s.Base + 3_600_000))
			b := fakeapp.NewMemoryBackend(m)
			if _, err := fakeapp.GenerateWindow(s, b); err != nil {
				t.Fatal(err)
			}
			m.SetTopicConfig(s.Changelog(), "cleanup.policy", "compact,delete")
			for k, v := range c.configs {
				m.SetTopicConfig(s.Changelog(), k, v)
			}
			for part := int32(0); part < s.Partitions; part++ {
				tp := audit.TopicPartition{Topic: s.Changelog(), Partition: part}
				o, err := m.Offsets(t.Context(), tp)
				if err != nil {
					t.Fatal(err)
				}
				if o.HW > 0 {
					if err := b.DeleteRecords(tp, o.HW/2); err != nil {
						t.Fatal(err)
					}
				}
			}
			rep, err := reconcile.Run(t.Context(), m, p, reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Summary.Verdict != c.verdict {
				t.Fatalf("verdict %s, want %s (missing %v, notes %v, %d findings)", rep.Summary.Verdict, c.verdict, rep.Summary.Missing, rep.Summary.Notes, len(rep.Findings))
			}
			if c.text == "" {
				// the deleted states' inputs: the evidence names no cause
				for _, f := range rep.Findings {
					if f.Severity == audit.SeverityLoss && (f.Stage != audit.StageStore || f.Cause != audit.CauseUnapplied) {
						t.Errorf("a loss the deleted changelog records cannot prove: %s %s %s/%d@%d", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset)
					}
				}
				return
			}
			said := false
			for _, n := range append(rep.Summary.Notes, rep.Summary.Missing...) {
				said = said || strings.Contains(n, c.text)
			}
			if !said {
				t.Errorf("nothing says %q: notes %q, missing %q", c.text, rep.Summary.Notes, rep.Summary.Missing)
			}
		})
	}
}

// TestWindowKeyString (issue AD): a windowed table's output written under
// the window's toString() (toStream().map((w, v) -> pair(w.toString(), v)),
// AnomalyDetection's shape) is judged by that key, the spec's last output
// step a map by windowString: clean stays clean, a swallowed output
// record is join-missing under the key the output would hold.
func TestWindowKeyString(t *testing.T) {
	for _, kind := range []string{"tumbling", "hopping", "suppressed"} {
		for _, fault := range []bool{false, true} {
			for _, filter := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/join-missing=%v/filter=%v", kind, fault, filter), func(t *testing.T) {
					s := windowScenario(kind)
					s.KeyString = true
					if filter {
						s.OutputSteps = []fakeapp.OutputStep{fakeapp.OutFilter}
					}
					if fault {
						s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultJoinMissing, Partition: 1}}
					}
					rep, truth := runWindow(t, s, fault)
					compareWindow(t, rep, truth)
					missing := 0
					for _, e := range truth.Findings {
						if e.Cause == audit.CauseJoinMissing {
							missing++
							if !strings.HasPrefix(e.Key, `"[`) {
								t.Errorf("truth's join-missing key %s is not a window's toString()", e.Key)
							}
						}
					}
					if fault && missing == 0 {
						t.Fatalf("the fault left no join-missing: %v", truth.Findings)
					}
					if !fault && rep.Summary.Verdict != audit.VerdictClean {
						t.Errorf("verdict %s, want clean (missing %v)", rep.Summary.Verdict, rep.Summary.Missing)
					}
				})
			}
		}
	}
	// w.key(): every window of a key under one output key; its last
	// record is the state the task wrote last, of whichever window
	for _, kind := range []string{"tumbling", "hopping"} {
		for _, fault := range []bool{false, true} {
			t.Run(fmt.Sprintf("w.key()/%s/join-missing=%v", kind, fault), func(t *testing.T) {
				s := windowScenario(kind)
				s.KeyInner = true
				if fault {
					s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultJoinMissing, Partition: 1}}
				}
				rep, truth := runWindow(t, s, false)
				if !fault {
					compareWindow(t, rep, truth)
					if rep.Summary.Verdict != audit.VerdictClean {
						t.Errorf("verdict %s, want clean (missing %v)", rep.Summary.Verdict, rep.Summary.Missing)
					}
					return
				}
				// the swallowed record is a join-missing of its inner key,
				// at the output, whether it was the key's last or vanished on
				// the way; nothing else is a loss
				if rep.Summary.Verdict != audit.VerdictLoss {
					t.Errorf("verdict %s, want loss", rep.Summary.Verdict)
				}
				want := map[string]bool{}
				for _, e := range truth.Findings {
					want[e.Key] = true
				}
				for _, f := range rep.Findings {
					if f.Severity != audit.SeverityLoss {
						continue
					}
					if f.Cause != audit.CauseJoinMissing || f.Topic != fakeapp.WindowOutput || !want[f.Key] {
						t.Errorf("loss %s %s key %s, want join-missing at the output of one of %v", f.Cause, f.Topic, f.Key, want)
					}
				}
			})
		}
	}
}

// TestWindowNullValues (AB's V16): Kafka Streams 3.6.2's
// KStreamWindowAggregate skips a null key only, so an input with a null
// value reaches the windowed aggregator (count() counts it). kaudit does
// not model it: the windows such an input falls in are missing evidence,
// named, never a state-diverged loss; the others are judged as before.
func TestWindowNullValues(t *testing.T) {
	for _, kind := range []string{"tumbling", "hopping"} {
		for _, hop := range []bool{false, true} {
			for _, count := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/hop=%v/count=%v", kind, hop, count), func(t *testing.T) {
					s := windowScenario(kind)
					s.Hop, s.Count, s.NullEvery = hop, count, 13
					if !hop {
						s.Inflight = 0
					}
					rep, truth := runWindow(t, s, false)
					compareWindow(t, rep, truth)
					for _, f := range rep.Findings {
						if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
							t.Errorf("%s %s/%d@%d: %s", f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
						}
					}
					if rep.Summary.Verdict != audit.VerdictIncomplete || !slices.ContainsFunc(rep.Summary.Missing, func(m string) bool { return strings.Contains(m, "null value") }) {
						t.Errorf("verdict %s, missing %v: want incomplete, the null-valued windows named", rep.Summary.Verdict, rep.Summary.Missing)
					}
				})
			}
		}
	}
}
