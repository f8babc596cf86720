package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestShards: audits of task shards (--partitions) together find exactly
// what the whole audit finds, also when source records sit in partitions
// other than their table key's (the app re-keys them across partitions).
func TestShards(t *testing.T) {
	for _, spread := range []bool{false, true} {
		for seed := range 6 {
			t.Run(fmt.Sprintf("spread=%v/seed%d", spread, seed), func(t *testing.T) {
				s := fakeapp.SeedScenario("shop", 400)
				s.Seed = uint64(seed)
				s.SpreadSources = spread
				s.Partitions = 3
				s.Purge = seed%2 == 0
				kinds := []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultStateDiverged, fakeapp.FaultJoinMissing, fakeapp.FaultAbortNotReplayed}
				s.Faults = []fakeapp.Fault{{Kind: kinds[seed%len(kinds)], Table: seed % 3, Partition: int32(seed % 3)}}
				m := fakeapp.NewMemory(time.UnixMilli(s.Now))
				truth, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m))
				if err != nil {
					t.Fatal(err)
				}
				dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
				if err != nil {
					t.Fatal(err)
				}
				run := func(parts []int32) map[string]bool {
					// odd seeds spill their tables to disk: a shard checks its keys' buckets
					rep, err := reconcile.Run(t.Context(), m, pipelineOf(s), reconcile.Options{Decoder: dec, Partitions: parts, MaxTxnTimeout: 15 * time.Minute,
						MemoryBudget: int64(seed%2) * 2000, SpillDir: t.TempDir()})
					if err != nil {
						t.Fatal(err)
					}
					if len(rep.Summary.Missing) > 0 {
						t.Errorf("shard %v: missing evidence %v", parts, rep.Summary.Missing)
					}
					got := map[string]bool{}
					for _, f := range rep.Findings {
						if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
							got[fmt.Sprintf("%s %s %s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Key)] = true
						}
					}
					return got
				}
				whole := run(nil)
				real := map[string]bool{}
				for _, e := range truth.Findings {
					real[fmt.Sprintf("%s %s %s/%d@%d %s", e.Stage, e.Cause, e.Topic, e.Partition, e.Offset, e.Key)] = true
				}
				for f := range whole {
					if !real[f] {
						t.Errorf("the whole audit found %s, which did not happen", f)
					}
				}
				// With a key's inputs in several source partitions and the
				// copies purged, a dropped last input can leave a state that
				// another partition's last input explains: not provable, and
				// not reported. Only co-partitioned sources find all.
				if !spread && len(whole) != len(real) {
					t.Fatalf("the whole audit found %d, the truth has %d: %v", len(whole), len(real), whole)
				}
				union := map[string]bool{}
				for p := range s.Partitions {
					for f := range run([]int32{p}) {
						if union[f] {
							t.Errorf("found by two shards: %s", f)
						}
						union[f] = true
					}
				}
				for f := range whole {
					if !union[f] {
						t.Errorf("no shard found %s", f)
					}
				}
				for f := range union {
					if !whole[f] {
						t.Errorf("a shard found %s, the whole audit did not", f)
					}
				}
			})
		}
	}
}

// TestShardJoinNotCoPartitioned: a shard cannot judge a join whose output
// has another partition count than the changelogs; it says so instead of
// reporting the keys it cannot see as missing.
func TestShardJoinNotCoPartitioned(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 300)
	s.OutputPartitions = 5
	m, dec := generated(t, s)
	rep, err := reconcile.Run(t.Context(), m, pipelineOf(s), reconcile.Options{Decoder: dec, Partitions: []int32{1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityLoss {
			t.Errorf("loss reported: %v", f)
		}
	}
	if rep.Summary.Verdict != audit.VerdictIncomplete || len(rep.Summary.Missing) != 1 {
		t.Errorf("verdict %s, missing %q; want incomplete and one line on the join", rep.Summary.Verdict, rep.Summary.Missing)
	}
}

// TestDeletedInputState: retention deleted a source partition's consumed
// records, and keys also have inputs in other partitions: a store value
// that is one of the deleted inputs is not a loss of the readable ones.
func TestDeletedInputState(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 400)
	s.SpreadSources = true
	s.Partitions = 4
	s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultRetentionGap, Table: 2, Partition: 2}}
	rep, truth := runScenario(t, s)
	compare(t, rep, truth)
	noted := false
	for _, n := range rep.Summary.Notes {
		noted = noted || strings.Contains(n, "deleted from shipments-v1/2 by retention")
	}
	if !noted {
		t.Errorf("no note on the keys not judged: %q", rep.Summary.Notes)
	}
}

// TestCleanSpreadShards: a clean app whose source records sit in other
// partitions than their keys, with purged copies and retention past the
// consumed records of one partition, stays clean whole and in every shard.
func TestCleanSpreadShards(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 400)
	s.SpreadSources = true
	s.Purge = true
	m := fakeapp.NewMemory(time.UnixMilli(s.Now))
	b := fakeapp.NewMemoryBackend(m)
	truth, err := fakeapp.Generate(s, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(truth.Findings) != 0 {
		t.Fatalf("a clean scenario has ground truth %v", truth.Findings)
	}
	// retention: records the app consumed long ago are gone
	if err := b.DeleteRecords(audit.TopicPartition{Topic: "payments-v1", Partition: 1}, 100); err != nil {
		t.Fatal(err)
	}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	for _, parts := range [][]int32{nil, {0}, {1}, {2}} {
		rep, err := reconcile.Run(t.Context(), m, pipelineOf(s), reconcile.Options{Decoder: dec, Partitions: parts, MaxTxnTimeout: 15 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Summary.Verdict != audit.VerdictClean {
			for _, f := range rep.Findings {
				if f.Severity != audit.SeverityInfo {
					t.Logf("  %s/%s %s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
				}
			}
			t.Errorf("shard %v: verdict %s, missing %q", parts, rep.Summary.Verdict, rep.Summary.Missing)
		}
	}
}

// TestShardsExchange: shards that hand each other the inputs of re-keyed
// tables (Options.Exchange), each reading only its own source
// partitions, give the reports the shards that read every source
// partition give, byte for byte: with faults, retention past the
// consumed records, purged copies, keys spread across partitions, tables
// spilled to disk, and steps that filter, change values or emit several
// elements per input.
func TestShardsExchange(t *testing.T) {
	steps := [][]fakeapp.Step{nil, {fakeapp.StepFilter, fakeapp.StepMapValues}, {fakeapp.StepFilter, fakeapp.StepWords, fakeapp.StepGroupByWord}, {fakeapp.StepItems}}
	kinds := []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultStateDiverged, fakeapp.FaultRetentionGap, fakeapp.FaultAbortNotReplayed, fakeapp.FaultJoinMissing}
	for seed := range 8 {
		for _, count := range []int32{2, 3} {
			t.Run(fmt.Sprintf("seed%d/shards%d", seed, count), func(t *testing.T) {
				s := fakeapp.SeedScenario("shop", 300)
				s.Seed = uint64(seed)
				s.SpreadSources = seed%4 != 0
				s.Partitions = 3
				s.Purge = seed%2 == 0
				s.Tables[seed%3].Steps = steps[seed%len(steps)]
				s.Faults = []fakeapp.Fault{{Kind: kinds[seed%len(kinds)], Table: (seed + 1) % 3, Partition: int32(seed % 3)}}
				m, dec := generated(t, s)
				dir := t.TempDir()
				src := &countingSource{Source: m, topics: map[string]bool{}}
				for _, tb := range s.Tables {
					src.topics[tb.Source] = true
				}
				run := func(i int32, x bool) (string, error) {
					var parts []int32
					for p := range s.Partitions {
						if p%count == i {
							parts = append(parts, p)
						}
					}
					opts := reconcile.Options{Now: time.UnixMilli(s.Now), Decoder: dec, Partitions: parts, MaxTxnTimeout: 15 * time.Minute,
						MemoryBudget: int64(seed%3/2) * 2000, SpillDir: t.TempDir(), Concurrency: seed % 2}
					if x {
						opts.Exchange = &reconcile.Exchange{Dir: dir, Index: i, Count: count, Tasks: s.Partitions, Wait: time.Minute}
					}
					rep, err := reconcile.Run(t.Context(), src, pipelineOf(s), opts)
					if err != nil {
						return "", err
					}
					b, err := json.MarshalIndent(struct {
						F []audit.Finding
						S audit.Summary
					}{rep.Findings, rep.Summary}, "", " ")
					return string(b), err
				}
				got := make([]string, count)
				errs := make([]error, count)
				var wg sync.WaitGroup
				for i := range count {
					wg.Go(func() { got[i], errs[i] = run(i, true) })
				}
				wg.Wait()
				exchanged := src.read.Swap(0)
				for i := range count {
					if errs[i] != nil {
						t.Fatalf("shard %d/%d with the exchange: %v", i, count, errs[i])
					}
					want, err := run(i, false)
					if err != nil {
						t.Fatal(err)
					}
					if got[i] != want {
						t.Errorf("shard %d/%d: the exchange's report differs from reading every source partition:\n%s", i, count, lineDiff(want, got[i]))
					}
				}
				each := src.read.Swap(0)
				if _, err := run(0, false); err != nil { // reads the sources once
					t.Fatal(err)
				}
				once := src.read.Load()
				t.Logf("source records read: %d by the shards exchanging, %d by the shards each reading all, %d by one shard", exchanged, each, once)
				if exchanged >= each || exchanged > once+once/10 {
					t.Errorf("the shards exchanging read %d source records, each reading all %d, one shard %d: not about once", exchanged, each, once)
				}
			})
		}
	}
}

// TestExchangeShardMissing: a shard whose peers never send their inputs
// fails once it has waited, naming the shard it waited for; it does not
// judge the table without them.
func TestExchangeShardMissing(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 100)
	s.Partitions = 2
	m, dec := generated(t, s)
	_, err := reconcile.Run(t.Context(), m, pipelineOf(s), reconcile.Options{Decoder: dec, Partitions: []int32{0},
		Exchange: &reconcile.Exchange{Dir: t.TempDir(), Index: 0, Count: 2, Tasks: 2, Wait: 200 * time.Millisecond}})
	if err == nil || !strings.Contains(err.Error(), "from shard 1/2") || !strings.Contains(err.Error(), "must all run at once") {
		t.Fatalf("err = %v; want the wait for shard 1/2 named", err)
	}
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < max(len(al), len(bl)) && len(out) < 12; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("line %d\n  want %s\n  got  %s", i+1, x, y))
		}
	}
	return strings.Join(out, "\n")
}

// countingSource counts the records read of some topics.
type countingSource struct {
	audit.Source
	topics map[string]bool
	read   atomic.Int64
}

func (c *countingSource) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	seq := c.Source.Records(ctx, tp, from, to)
	if !c.topics[tp.Topic] {
		return seq
	}
	return func(yield func(audit.Record, error) bool) {
		for r, err := range seq {
			c.read.Add(1)
			if !yield(r, err) {
				return
			}
		}
	}
}

// TestExchangeTopicUnlisted: a shard that cannot list a source topic's
// partitions tells the others, which take its partitions as unreadable
// (the table is then not judged) instead of waiting for them.
func TestExchangeTopicUnlisted(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 100)
	s.Partitions = 2
	m, dec := generated(t, s)
	dir := t.TempDir()
	topic := s.Tables[0].Source
	var reps [2]*audit.Report
	var errs [2]error
	var wg sync.WaitGroup
	for i := range int32(2) {
		var src audit.Source = m
		if i == 1 {
			src = &unlistedSource{Source: m, topic: topic}
		}
		wg.Go(func() {
			reps[i], errs[i] = reconcile.Run(t.Context(), src, pipelineOf(s), reconcile.Options{Now: time.UnixMilli(s.Now), Decoder: dec, Partitions: []int32{i},
				MaxTxnTimeout: 15 * time.Minute, Exchange: &reconcile.Exchange{Dir: dir, Index: i, Count: 2, Tasks: 2, Wait: 20 * time.Second}})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/2: %v", i, err)
		}
	}
	said := false
	for _, msg := range reps[0].Summary.Missing {
		said = said || strings.Contains(msg, "shard 1/2, which reads it, could not list "+topic)
	}
	if !said || reps[0].Summary.Verdict != audit.VerdictIncomplete {
		t.Errorf("shard 0/2: verdict %s, missing %q; want incomplete, naming the partitions shard 1/2 could not list", reps[0].Summary.Verdict, reps[0].Summary.Missing)
	}
	for _, f := range reps[0].Findings {
		if f.Severity == audit.SeverityLoss {
			t.Errorf("shard 0/2 reports a loss without shard 1/2's inputs: %v", f)
		}
	}
}

// unlistedSource cannot list one topic's partitions.
type unlistedSource struct {
	audit.Source
	topic string
}

func (u *unlistedSource) Partitions(ctx context.Context, topic string) (int32, error) {
	if topic == u.topic {
		return 0, fmt.Errorf("%s: metadata kept failing: %w", topic, audit.ErrUnreadable)
	}
	return u.Source.Partitions(ctx, topic)
}

func (u *unlistedSource) Topics(ctx context.Context) ([]audit.TopicInfo, error) {
	ts, err := u.Source.Topics(ctx)
	out := ts[:0:0]
	for _, t := range ts {
		if t.Name != u.topic {
			out = append(out, t)
		}
	}
	return out, err
}

// TestExchangeRefuses: a shard reads only the files of its own run: an
// empty file, another partition's or another table's file, a file of
// another run or of other evidence, a damaged one, is refused, never
// read: the shard waits past it, then fails naming it, and judges nothing
// with it; the same files of its own run give its report.
func TestExchangeRefuses(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 200)
	s.Partitions = 4
	s.SpreadSources = true // each shard's sources hold inputs of the other's keys
	m, dec := generated(t, s)
	opts := func(dir, run, fp string, i int32, wait time.Duration) reconcile.Options {
		return reconcile.Options{Now: time.UnixMilli(s.Now), Decoder: dec, Partitions: []int32{i, i + 2}, MaxTxnTimeout: 15 * time.Minute,
			Exchange: &reconcile.Exchange{Dir: dir, Run: run, Fingerprint: fp, Index: i, Count: 2, Tasks: 4, Wait: wait}}
	}
	digest := func(rep *audit.Report) string {
		b, err := json.Marshal(struct {
			F []audit.Finding
			S audit.Summary
		}{rep.Findings, rep.Summary})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	good := t.TempDir()
	var reps [2]*audit.Report
	var errs [2]error
	var wg sync.WaitGroup
	for i := range int32(2) {
		wg.Go(func() {
			reps[i], errs[i] = reconcile.Run(t.Context(), m, pipelineOf(s), opts(good, "r1", "fp1", i, time.Minute))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/2: %v", i, err)
		}
	}
	want := digest(reps[0])
	// the folders of the tables' inputs, of one source topic each
	tables, _ := filepath.Glob(filepath.Join(good, "r1", "2", "*", "*"))
	if len(tables) < 2 {
		t.Fatalf("the shards exchanged the inputs of %d tables: %v", len(tables), tables)
	}
	rel := func(dir string) string { r, _ := filepath.Rel(filepath.Join(good, "r1"), dir); return r }
	at := func(root, name string) string { return filepath.Join(root, "r1", rel(tables[0]), name) }
	cp := func(t *testing.T, from, to string) {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(t *testing.T, path string, back int) {
		b, err := os.ReadFile(path)
		if err != nil || len(b) < back {
			t.Fatalf("%s: %d bytes, %v", path, len(b), err)
		}
		b[len(b)-back] ^= 0x55
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// the largest file of inputs for shard 0: its payload is damaged below
	big, size := "", int64(0)
	ins, _ := filepath.Glob(filepath.Join(good, "r1", "2", "*", "*", "p*.to0"))
	for _, p := range ins {
		if st, err := os.Stat(p); err == nil && st.Size() > size {
			big, size = p, st.Size()
		}
	}
	if size < 1000 {
		t.Fatalf("no inputs file of 1000 bytes: %s, %d", big, size)
	}
	for _, tt := range []struct {
		name    string
		run, fp string
		mutate  func(t *testing.T, root string)
		file    string // the file refused; "" for none
	}{
		{"its own run's files", "r1", "fp1", nil, ""},
		{"an empty inputs file", "r1", "fp1", func(t *testing.T, root string) { os.Truncate(at(root, "p1.to0"), 0) }, "p1.to0"},
		{"an empty meta", "r1", "fp1", func(t *testing.T, root string) { os.Truncate(at(root, "p1.meta"), 0) }, "p1.meta"},
		{"another partition's files", "r1", "fp1", func(t *testing.T, root string) {
			cp(t, at(root, "p3.meta"), at(root, "p1.meta"))
			cp(t, at(root, "p3.to0"), at(root, "p1.to0"))
		}, "p1.meta"},
		{"another partition's inputs", "r1", "fp1", func(t *testing.T, root string) { cp(t, at(root, "p3.to0"), at(root, "p1.to0")) }, "p1.to0"},
		{"another table's files", "r1", "fp1", func(t *testing.T, root string) {
			other := filepath.Join(root, "r1", rel(tables[1]))
			cp(t, filepath.Join(other, "p1.meta"), at(root, "p1.meta"))
			cp(t, filepath.Join(other, "p1.to0"), at(root, "p1.to0"))
		}, "p1.meta"},
		{"another run's files", "r2", "fp1", func(t *testing.T, root string) {
			if err := os.Rename(filepath.Join(root, "r1"), filepath.Join(root, "r2")); err != nil {
				t.Fatal(err)
			}
		}, "p1.meta"},
		{"other evidence", "r1", "fp2", nil, "p1.meta"},
		{"a damaged meta", "r1", "fp1", func(t *testing.T, root string) { flip(t, at(root, "p1.meta"), 3) }, "p1.meta"},
		{"a damaged payload", "r1", "fp1", func(t *testing.T, root string) { flip(t, filepath.Join(root, "r1", rel(big)), 1) }, rel(big)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			if tt.mutate != nil {
				tt.mutate(t, root)
			}
			rep, err := reconcile.Run(t.Context(), m, pipelineOf(s), opts(root, tt.run, tt.fp, 0, 300*time.Millisecond))
			switch {
			case tt.file == "" && err != nil:
				t.Fatalf("refused its own run's files: %v", err)
			case tt.file == "" && digest(rep) != want:
				t.Errorf("the report differs from the shard's own:\n%s", lineDiff(want, digest(rep)))
			case tt.file != "" && (!errors.Is(err, reconcile.ErrExchangeRefused) || !strings.Contains(err.Error(), tt.file)):
				t.Errorf("err = %v; want %s refused and named", err, tt.file)
			case tt.file != "" && rep != nil:
				t.Errorf("a report with a refused file: %s", rep.Summary.Verdict)
			}
		})
	}
}
