package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/internal/golden"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

var (
	captureTime = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	tp0         = audit.TopicPartition{Topic: sourcetest.Topic, Partition: 0}
	tp1         = audit.TopicPartition{Topic: sourcetest.Topic, Partition: 1}
)

// fixtureSource is an in-memory source holding the conformance fixture,
// the app's group and transaction state.
func fixtureSource(t testing.TB) *fakeapp.Memory {
	t.Helper()
	m := fakeapp.NewMemory(captureTime)
	m.AddTopic(audit.TopicInfo{Name: sourcetest.Topic, Partitions: 2, ReplicationFactor: 3,
		Configs: map[string]string{"cleanup.policy": "delete", "retention.ms": "-1"}})
	m.AddTopic(audit.TopicInfo{Name: "unrelated", Partitions: 1, ReplicationFactor: 1})
	m.Append(sourcetest.Fixture()...)
	m.SetOffsets(tp1, sourcetest.Offsets1)
	m.SetGroup(audit.GroupOffsets{Group: "conf", State: "Empty",
		Offsets:  map[audit.TopicPartition]int64{tp0: 9, tp1: 2},
		Metadata: map[audit.TopicPartition]string{tp0: "partition-time"}})
	m.SetTransactions([]audit.Transaction{{TransactionalID: "conf-9f1c-1", State: "Ongoing", ProducerID: 3000,
		TimeoutMillis: 60000, StartTimestamp: 1_700_000_000_050, Partitions: []audit.TopicPartition{tp1}}})
	m.SetProducers(tp1, []audit.Producer{{ProducerID: 3000, LastSequence: 1, LastTimestamp: 1_700_000_000_051,
		CoordinatorEpoch: 7, CurrentTxnStartOffset: 2}})
	return m
}

func capture(t *testing.T, src audit.Source, opts CaptureOptions) *Manifest {
	t.Helper()
	m, err := Capture(t.Context(), src, opts)
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	return m
}

func mustOpen(t *testing.T, dir string) *Snapshot {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	sourcetest.RunSourceTests(t, func(t *testing.T, recs []audit.Record) audit.RecordSource {
		src := fixtureSource(t)
		dir := t.TempDir()
		capture(t, src, CaptureOptions{Dir: dir, AppID: "conf", Topics: []string{sourcetest.Topic}})
		s := mustOpen(t, dir)
		if p := s.Problems(); len(p) != 0 {
			t.Fatalf("problems: %+v", p)
		}
		return s
	})
}

func TestManifestGolden(t *testing.T) {
	dir := t.TempDir()
	var progress [][2]int64
	m := capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf",
		Topology: "Topologies:\n   Sub-topology: 0\n", Schemas: map[int32]audit.Schema{7: {Schema: `"string"`}},
		Progress: func(done, total int64) { progress = append(progress, [2]int64{done, total}) }})
	if !m.Complete {
		t.Fatal("capture not complete")
	}
	if last := progress[len(progress)-1]; last != [2]int64{14, 14} {
		t.Errorf("last progress %v, want 14 of 14 offsets", last)
	}
	m.UpdatedAt = time.Time{}
	got, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "manifest.golden.json"), append(got, '\n'))

	s := mustOpen(t, dir)
	if !s.Now().Equal(captureTime) || !strings.Contains(s.Describe(), "captured 2026-11-30T08:00:00Z from memory") {
		t.Errorf("Now %v, Describe %q", s.Now(), s.Describe())
	}
	g, err := s.GroupOffsets(t.Context(), "conf")
	if err != nil || g.Offsets[tp0] != 9 || g.Offsets[tp1] != 2 || g.Metadata[tp0] != "partition-time" {
		t.Errorf("GroupOffsets = %+v, %v", g, err)
	}
	if _, err := s.GroupOffsets(t.Context(), "other"); !errors.Is(err, audit.ErrGroupNotFound) {
		t.Errorf("GroupOffsets(other) error %v", err)
	}
	txns, err := s.Transactions(t.Context(), "conf-")
	if err != nil || len(txns) != 1 || txns[0].ProducerID != 3000 {
		t.Errorf("Transactions = %+v, %v", txns, err)
	}
	ps, err := s.Producers(t.Context(), []audit.TopicPartition{tp0, tp1})
	if err != nil || len(ps) != 1 || ps[tp1][0].CurrentTxnStartOffset != 2 {
		t.Errorf("Producers = %+v, %v", ps, err)
	}
	ts, err := s.Topics(t.Context())
	if err != nil || len(ts) != 1 || ts[0].Configs["retention.ms"] != "-1" {
		t.Errorf("Topics = %+v, %v", ts, err)
	}
	if s.Topology() == "" || s.Schemas()[7].Schema != `"string"` {
		t.Errorf("topology %q, schemas %v", s.Topology(), s.Schemas())
	}
}

func readAll(ctx context.Context, s audit.RecordSource, tp audit.TopicPartition) ([]audit.Record, error) {
	var out []audit.Record
	for r, err := range s.Records(ctx, tp, 0, -1) {
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func fixtureOf(tp audit.TopicPartition) []audit.Record {
	var out []audit.Record
	for _, r := range sourcetest.Fixture() {
		if r.TP() == tp {
			out = append(out, r)
		}
	}
	return out
}

func TestResume(t *testing.T) {
	dir := t.TempDir()
	src := fixtureSource(t)
	opts := CaptureOptions{Dir: dir, AppID: "conf", MaxBytes: 200}
	m := capture(t, src, opts)
	if m.Complete || m.Partitions[0].Complete || m.Partitions[0].Next == 0 {
		t.Fatalf("first run: complete %t, partition 0 %+v; want it stopped inside partition 0", m.Complete, m.Partitions[0])
	}
	stoppedAt := m.Partitions[0].Next

	s := mustOpen(t, dir)
	probs := s.Problems()
	if len(probs) != 2 || probs[0].Offset != stoppedAt || probs[0].Cause != audit.CauseUnreadable || audit.Judge(probs, nil) != audit.VerdictIncomplete {
		t.Fatalf("problems %+v; want one unreadable finding per partition, from offset %d on partition 0", probs, stoppedAt)
	}
	got, err := readAll(t.Context(), s, tp0)
	if !errors.Is(err, ErrNotCaptured) || int64(len(got)) != stoppedAt {
		t.Fatalf("read partial partition: %d records, error %v; want %d records then ErrNotCaptured", len(got), err, stoppedAt)
	}

	// A crash between writing a segment and saving the manifest leaves an
	// unlisted file: the resumed run removes it.
	stray := filepath.Join(dir, sourcetest.Topic+"-0", "00000000000000000099.log")
	if err := os.WriteFile(stray, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := mustOpen(t, dir).Problems(); !strings.Contains(p[0].Detail+p[1].Detail+p[2].Detail, "not in the manifest") {
		t.Fatalf("stray file not reported: %+v", p)
	}
	opts.MaxBytes = 0
	m = capture(t, src, opts)
	if !m.Complete || len(m.Files) < 3 {
		t.Fatalf("second run: complete %t, %d files; want complete with the first run's files kept", m.Complete, len(m.Files))
	}
	if _, err := os.Stat(stray); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stray segment kept: %v", err)
	}
	s = mustOpen(t, dir)
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("problems after resume: %+v", p)
	}
	for _, tp := range []audit.TopicPartition{tp0, tp1} {
		got, err := readAll(t.Context(), s, tp)
		if err != nil {
			t.Fatal(err)
		}
		if d := sourcetest.Diff(got, fixtureOf(tp)); d != "" {
			t.Fatalf("%s after resume: %s", tp, d)
		}
	}
}

// cancelAfter cancels its context after n records were read.
type cancelAfter struct {
	audit.Source
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		for r, err := range c.Source.Records(ctx, tp, from, to) {
			if c.n--; c.n == 0 {
				c.cancel()
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

func TestCaptureInterrupted(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	src := &cancelAfter{Source: fixtureSource(t), n: 4, cancel: cancel}
	_, err := Capture(ctx, src, CaptureOptions{Dir: dir, AppID: "conf"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Capture error %v, want context.Canceled", err)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Partitions[0]; p.Complete || p.Next != 3 {
		t.Fatalf("partition 0 after the interruption: %+v; want next 3 (the batch being read when cancelled is dropped)", p)
	}
	m = capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
	s := mustOpen(t, dir)
	got, err := readAll(t.Context(), s, tp0)
	if err != nil || !m.Complete {
		t.Fatal(err, m.Complete)
	}
	if d := sourcetest.Diff(got, fixtureOf(tp0)); d != "" {
		t.Fatal(d)
	}
}

func TestIntegrity(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, dir string, m *Manifest)
		want   string
	}{
		{"altered file", func(t *testing.T, dir string, m *Manifest) {
			p := filepath.Join(dir, m.Files[0].Path)
			b, _ := os.ReadFile(p)
			b[len(b)-1] ^= 1
			os.WriteFile(p, b, 0o644)
		}, "sha256"},
		{"missing file", func(t *testing.T, dir string, m *Manifest) {
			os.Remove(filepath.Join(dir, m.Files[0].Path))
		}, "is missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			slices.SortFunc(m.Files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
			tc.damage(t, dir, m)
			s := mustOpen(t, dir)
			p := s.Problems()
			if len(p) != 1 || p[0].Cause != audit.CauseUnreadable || p[0].Topic != tp0.Topic || p[0].Partition != 0 || !strings.Contains(p[0].Detail, tc.want) {
				t.Fatalf("problems %+v; want one unreadable finding on %s naming %q", p, tp0, tc.want)
			}
			if v := audit.Judge(p, nil); v != audit.VerdictIncomplete {
				t.Fatalf("verdict %s, want incomplete", v)
			}
			if _, err := readAll(t.Context(), s, tp0); !errors.Is(err, ErrNotCaptured) {
				t.Fatalf("read damaged partition: %v, want ErrNotCaptured", err)
			}
			if got, err := readAll(t.Context(), s, tp1); err != nil || len(got) != 4 {
				t.Fatalf("read intact partition: %d records, %v", len(got), err)
			}
		})
	}
	t.Run("unreadable manifest", func(t *testing.T) {
		dir := t.TempDir()
		capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
		os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{not json"), 0o644)
		if _, err := Open(dir); !errors.Is(err, audit.ErrCorrupt) {
			t.Fatalf("Open error %v, want ErrCorrupt", err)
		}
	})
}

func TestSince(t *testing.T) {
	dir := t.TempDir()
	src := fixtureSource(t)
	// Partition 0's batches whose records are all older than +12 ms
	// (offsets 0-4) are skipped; partition 1's records are all newer.
	since := time.UnixMilli(1_700_000_000_012)
	m := capture(t, src, CaptureOptions{Dir: dir, AppID: "conf", Since: since})
	if p := m.Partitions[0]; p.From != 5 || p.LogStart != 0 {
		t.Fatalf("partition 0: %+v; want captured from 5, log start 0", p)
	}
	if p := m.Partitions[1]; p.From != 0 {
		t.Fatalf("partition 1: %+v; want captured from 0", p)
	}
	s := mustOpen(t, dir)
	o, _ := s.Offsets(t.Context(), tp0)
	got, err := readAll(t.Context(), s, tp0)
	if err != nil || o.LogStart != 5 || len(got) != 5 || got[0].Offset != 5 {
		t.Fatalf("offsets %+v, %d records from %v, %v", o, len(got), got[0].Offset, err)
	}

	// The group's committed offset bounds the skipping: with C = 1 on
	// partition 0, the batch holding offsets 0-2 is kept.
	src.SetGroup(audit.GroupOffsets{Group: "conf", Offsets: map[audit.TopicPartition]int64{tp0: 1}})
	dir = t.TempDir()
	m = capture(t, src, CaptureOptions{Dir: dir, AppID: "conf", Since: since})
	if p := m.Partitions[0]; p.From != 0 {
		t.Fatalf("partition 0 with C=1: %+v; want captured from 0", p)
	}
}

func TestBaseline(t *testing.T) {
	dir := t.TempDir()
	capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
	earlier := mustOpen(t, dir)

	later := fakeapp.NewMemory(captureTime.Add(time.Hour))
	later.AddTopic(audit.TopicInfo{Name: sourcetest.Topic, Partitions: 2})
	for _, r := range sourcetest.Fixture() {
		switch {
		case r.TP() == tp0 && r.Offset == 4:
			continue // gone above the log start
		case r.TP() == tp0 && r.Offset == 9:
			r.Value = []byte("rewritten")
		}
		later.Append(r)
	}
	later.SetOffsets(tp0, audit.PartitionOffsets{LogStart: 2, LSO: 10, HW: 10})
	later.SetOffsets(tp1, audit.PartitionOffsets{LogStart: 0, LSO: 2, HW: 3}) // offset 3 truncated
	fs, err := Baseline(t.Context(), earlier, later, []audit.TopicPartition{tp0, tp1})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range fs {
		got = append(got, f.Topic[len(f.Topic)-1:]+string(f.Stage)+"/"+string(f.Cause)+"@"+itoa(f.Partition)+":"+itoa64(f.Offset)+"+"+itoa64(f.Count))
	}
	want := []string{
		"nsource/retention-gap@0:0+2",
		"noffsets/truncated@0:4+1",
		"noffsets/truncated@0:9+1",
		"noffsets/truncated@1:3+1",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings\n got %v\nwant %v", got, want)
	}
	if !strings.Contains(fs[2].Detail, "different records") || !strings.Contains(fs[3].Detail, "truncated") {
		t.Errorf("details: %q, %q", fs[2].Detail, fs[3].Detail)
	}

	// On a compacted topic a missing record is the cleaner's work.
	later.AddTopic(audit.TopicInfo{Name: sourcetest.Topic, Partitions: 2, Configs: map[string]string{"cleanup.policy": "compact"}})
	for _, r := range fixtureOf(tp0) {
		if r.Offset != 4 {
			later.Append(r)
		}
	}
	fs, err = Baseline(t.Context(), earlier, later, []audit.TopicPartition{tp0})
	if err != nil || len(fs) != 0 {
		t.Fatalf("compacted: %+v, %v; want no finding", fs, err)
	}
}

func itoa(i int32) string   { return itoa64(int64(i)) }
func itoa64(i int64) string { b, _ := json.Marshal(i); return string(b) }

// purgeDuringCopy raises the log start of tp0 to 3 once the cut was read:
// retention ran between the cut and the copy.
type purgeDuringCopy struct {
	*fakeapp.Memory
	done bool
}

func (p *purgeDuringCopy) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	if !p.done {
		p.done = true
		p.Memory.SetOffsets(tp0, audit.PartitionOffsets{LogStart: 3, LSO: 10, HW: 10})
	}
	return p.Memory.Records(ctx, tp, from, to)
}

func TestVanishedDuringCopy(t *testing.T) {
	dir := t.TempDir()
	m := capture(t, &purgeDuringCopy{Memory: fixtureSource(t)}, CaptureOptions{Dir: dir, AppID: "conf"})
	if p := m.Partitions[0]; len(p.Vanished) != 1 || p.Vanished[0] != [2]int64{0, 3} || p.LogStart != 0 {
		t.Fatalf("partition 0: %+v; want offsets 0-2 vanished, log start 0 at the cut", p)
	}
	probs := mustOpen(t, dir).Problems()
	if len(probs) != 1 || probs[0].Offset != 0 || probs[0].Count != 3 || audit.Judge(probs, nil) != audit.VerdictIncomplete {
		t.Fatalf("problems %+v; want one unreadable finding for offsets 0-2", probs)
	}
}

func TestCompactedStartIsNotVanished(t *testing.T) {
	src := fakeapp.NewMemory(captureTime)
	src.AddTopic(audit.TopicInfo{Name: sourcetest.Topic, Partitions: 2})
	for _, r := range sourcetest.Fixture() {
		if r.TP() != tp0 || r.Offset >= 3 {
			src.Append(r)
		}
	}
	src.SetOffsets(tp0, sourcetest.Offsets0) // log start 0, offsets 0-2 compacted away
	dir := t.TempDir()
	m := capture(t, src, CaptureOptions{Dir: dir, AppID: "conf", Topics: []string{sourcetest.Topic}})
	if p := m.Partitions[0]; len(p.Vanished) != 0 {
		t.Fatalf("partition 0: %+v; a compacted start is not vanished", p)
	}
	if probs := mustOpen(t, dir).Problems(); len(probs) != 0 {
		t.Fatalf("problems %+v", probs)
	}
}
