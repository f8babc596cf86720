package reconcile_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestJoinStale: an output whose last record for a key disagrees with the
// tables at the cut (an older timestamp), or names a key the left table
// does not hold, is join-stale at that output record, and nothing else.
func TestJoinStale(t *testing.T) {
	s, m, out, offs, key := shopOutput(t)
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	stale := audit.Record{Topic: out.Topic, Partition: 0, Offset: offs.HW, Key: []byte(key), Value: []byte(`{"orderId":"` + key + `"}`), Timestamp: 1, Batch: plain}
	ghost := audit.Record{Topic: out.Topic, Partition: 0, Offset: offs.HW + 1, Key: []byte("nobody"), Value: []byte(`{"orderId":"nobody"}`), Timestamp: 2, Batch: plain}
	m.Append(stale, ghost)
	m.SetOffsets(out, audit.PartitionOffsets{LogStart: offs.LogStart, LSO: offs.HW + 2, HW: offs.HW + 2})
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reconcile.Run(t.Context(), m, pipelineOf(s), reconcile.Options{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	want := []fakeapp.Expected{
		{Stage: audit.StageJoin, Cause: audit.CauseJoinStale, Topic: out.Topic, Partition: 0, Offset: offs.HW, Key: `"` + key + `"`},
		{Stage: audit.StageJoin, Cause: audit.CauseJoinStale, Topic: out.Topic, Partition: 0, Offset: offs.HW + 1, Key: `"nobody"`},
	}
	compare(t, rep, &fakeapp.Truth{Findings: want})
}

// TestJoinStaleRunning: the same stale output record, read while the app
// writes (a table's changelog grew after the audit read it): in flight,
// not join-stale, since the output may hold a state the changelog read
// did not (AJ).
func TestJoinStaleRunning(t *testing.T) {
	s, m, out, offs, key := shopOutput(t)
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	m.Append(audit.Record{Topic: out.Topic, Partition: 0, Offset: offs.HW, Key: []byte(key), Value: []byte(`{"orderId":"` + key + `"}`), Timestamp: 1, Batch: plain})
	m.SetOffsets(out, audit.PartitionOffsets{LogStart: offs.LogStart, LSO: offs.HW + 1, HW: offs.HW + 1})
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	src := &growing{Memory: m, topic: s.Changelog(s.Tables[0]), read: map[audit.TopicPartition]bool{}}
	rep, err := reconcile.Run(t.Context(), src, pipelineOf(s), reconcile.Options{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		if f.Cause == audit.CauseJoinStale || f.Cause == audit.CauseJoinMissing {
			t.Errorf("a join output read while a changelog grew: %s %s", f.Cause, f.Detail)
		}
	}
	if !slices.ContainsFunc(rep.Summary.Notes, func(n string) bool { return strings.Contains(n, "in flight") }) {
		t.Errorf("no note of the keys in flight: %v", rep.Summary.Notes)
	}
}

// shopOutput generates the seed's shop app, caught up, and returns its
// output partition 0, that partition's offsets and the key of its last
// record.
func shopOutput(t *testing.T) (fakeapp.Scenario, *fakeapp.Memory, audit.TopicPartition, audit.PartitionOffsets, string) {
	t.Helper()
	s := fakeapp.SeedScenario("shop", 150)
	s.Lag, s.Inflight = 0, 0
	m := fakeapp.NewMemory(time.UnixMilli(s.Now))
	if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
		t.Fatal(err)
	}
	out := audit.TopicPartition{Topic: s.Output, Partition: 0}
	offs, _ := m.Offsets(t.Context(), out)
	var key string
	for r := range m.Records(t.Context(), out, 0, -1) {
		if !r.Batch.Control {
			key = string(r.Key)
		}
	}
	return s, m, out, offs, key
}
