package reconcile_test

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// committing is a source whose group commits while the audit reads: the
// first read of the group's offsets gives the cut, every later one the
// offsets the app committed since.
type committing struct {
	*fakeapp.Memory
	reads int
	later map[audit.TopicPartition]int64
}

func (c *committing) GroupOffsets(ctx context.Context, group string) (audit.GroupOffsets, error) {
	g, err := c.Memory.GroupOffsets(ctx, group)
	c.reads++
	if err != nil || c.reads == 1 || c.later == nil {
		return g, err
	}
	return audit.GroupOffsets{Group: g.Group, Offsets: c.later}, nil
}

// TestRunningDirectTable pins AB's V2: a table fed straight from its
// source (builder.table, no repartition hop) audited while the app runs.
// The app commits past the cut before the audit reads the changelog, so
// the changelog holds states of source records at or above the cut: those
// below the offsets read again after the changelog may be applied, those
// above them may not (exactly-once commits a state with its offsets). A
// state no record explains stays a divergence.
func TestRunningDirectTable(t *testing.T) {
	cases := []struct {
		name   string
		states []string // the changelog's values, in order
		later  int64    // the group's offset on src read after the cut (2)
		want   []string
	}{
		{name: "changelog ahead, offsets moved", states: []string{"a", "b", "c"}, later: 3},
		{name: "changelog further ahead", states: []string{"a", "b", "c", "d"}, later: 4},
		{name: "changelog not ahead, offsets moved", states: []string{"a", "b"}, later: 4},
		{name: "ahead of the offsets read again", states: []string{"a", "b", "c", "d"}, later: 3,
			want: []string{"app-S-changelog/0@6"}},
		{name: "ahead, offsets never moved", states: []string{"a", "b", "c"}, later: 2,
			want: []string{"app-S-changelog/0@4"}},
		{name: "a state no record explains", states: []string{"a", "b", "x"}, later: 4,
			want: []string{"app-S-changelog/0@4"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spec.ParseSpec("kaudit.yaml", []byte(`app_id: app
serdes: {key: string, value: json}
tables:
  - {name: customers, source: src, reduce: table, store: S}
`))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := spec.Resolve(sp, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
			m.AddTopic(audit.TopicInfo{Name: "src", Partitions: 1})
			m.AddTopic(audit.TopicInfo{Name: "app-S-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
			plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
			for i, v := range []string{"a", "b", "c", "d"} {
				m.Append(audit.Record{Topic: "src", Offset: int64(i), Key: []byte("k"), Value: fmt.Appendf(nil, `{"n":%q}`, v), Timestamp: int64(100 + i), Batch: plain})
			}
			for i, v := range c.states {
				ts := int64(100 + i)
				if v == "x" {
					ts = 150
				}
				txnAppend(m, audit.Record{Topic: "app-S-changelog", Offset: int64(2 * i), Key: []byte("k"), Value: fmt.Appendf(nil, `{"n":%q}`, v), Timestamp: ts})
			}
			src := audit.TopicPartition{Topic: "src"}
			m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{src: 2}})
			auditRunning(t, &committing{Memory: m, later: map[audit.TopicPartition]int64{src: c.later}}, plan, audit.CauseStateDiverged, c.want)
		})
	}
}

// growing is a source whose partitions of one topic receive a record
// (their high watermark grows) once the audit has read them: the app
// writes there while the audit reads.
type growing struct {
	*fakeapp.Memory
	topic string
	read  map[audit.TopicPartition]bool
}

func (g *growing) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	inner := g.Memory.Records(ctx, tp, from, to)
	return func(yield func(audit.Record, error) bool) {
		defer func() { g.read[tp] = true }()
		for r, err := range inner {
			if !yield(r, err) {
				return
			}
		}
	}
}

func (g *growing) Offsets(ctx context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	o, err := g.Memory.Offsets(ctx, tp)
	if err == nil && tp.Topic == g.topic && g.read[tp] {
		o.HW++
		o.LSO++
	}
	return o, err
}

// TestRunningTableOutput pins the output check of a table audited while
// the app runs (AB's V2, V20): its store's last state and its output's
// last record differ where the app wrote between the two reads. That is
// in flight when the output grew after it was read, or when the app runs
// at-least-once (changelog and output written outside transactions, one
// before the other) with input not consumed yet; otherwise the output is
// stale.
func TestRunningTableOutput(t *testing.T) {
	cases := []struct {
		name  string
		eos   bool // the changelog in transactions
		grows bool // the output grows once read
		lag   bool // a source record above the cut
		want  []string
	}{
		{name: "exactly-once, the output grew", eos: true, grows: true},
		{name: "exactly-once, the output did not grow", eos: true, want: []string{"out/0@1"}},
		{name: "at-least-once with input not consumed", lag: true},
		{name: "at-least-once, caught up", want: []string{"out/0@1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan := planOf(t, "app_id: app\nserdes: {key: string, value: json}\ntables:\n  - {name: customers, source: src, reduce: table, store: S, output: out}\n")
			m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
			m.AddTopic(audit.TopicInfo{Name: "src", Partitions: 1})
			m.AddTopic(audit.TopicInfo{Name: "out", Partitions: 1})
			m.AddTopic(audit.TopicInfo{Name: "app-S-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
			plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
			vals := []string{"a", "b", "c"}
			if c.lag {
				vals = append(vals, "d")
			}
			var cl int64
			for i, v := range vals {
				val := fmt.Appendf(nil, `{"n":%q}`, v)
				m.Append(audit.Record{Topic: "src", Offset: int64(i), Key: []byte("k"), Value: val, Timestamp: int64(100 + i), Batch: plain})
				if i > 2 {
					continue // not consumed yet
				}
				if c.eos {
					cl = txnAppend(m, audit.Record{Topic: "app-S-changelog", Offset: cl, Key: []byte("k"), Value: val, Timestamp: int64(100 + i)})
				} else {
					m.Append(audit.Record{Topic: "app-S-changelog", Offset: cl, Key: []byte("k"), Value: val, Timestamp: int64(100 + i), Batch: plain})
					cl++
				}
				if i < 2 {
					// the last state's output record is not written yet
					m.Append(audit.Record{Topic: "out", Offset: int64(i), Key: []byte("k"), Value: val, Timestamp: int64(100 + i), Batch: plain})
				}
			}
			m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{{Topic: "src"}: 3}})
			var src audit.Source = m
			if c.grows {
				src = &growing{Memory: m, topic: "out", read: map[audit.TopicPartition]bool{}}
			}
			auditRunning(t, src, plan, audit.CauseJoinStale, c.want)
		})
	}
}

// txnAppend appends rec to m in an exactly-once transaction of its own:
// the record, then its commit marker; it returns the next offset.
func txnAppend(m *fakeapp.Memory, rec audit.Record) int64 {
	rec.Batch = audit.Batch{ProducerID: 9, Transactional: true, BaseOffset: rec.Offset}
	m.Append(rec)
	m.Append(audit.Record{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset + 1, Timestamp: rec.Timestamp,
		Batch: audit.Batch{ProducerID: 9, Transactional: true, Control: true, BaseOffset: rec.Offset + 1}, Marker: &audit.Marker{Type: audit.MarkerCommit}})
	return rec.Offset + 2
}

// auditRunning audits src with plan (string keys, JSON values) and
// checks that its loss and anomaly findings are of cause and at the
// places want names (topic/partition@offset), and that a run that
// wants none is clean.
func auditRunning(t *testing.T, src audit.Source, plan *spec.Plan, cause audit.Cause, want []string) {
	t.Helper()
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reconcile.Run(t.Context(), src, reconcile.FromPlan(plan, "string"), reconcile.Options{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
			got = append(got, fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset))
			if f.Cause != cause {
				t.Errorf("cause %s, want %s: %s", f.Cause, cause, f.Detail)
			}
		}
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("findings %v, want %v\n%+v", got, want, rep.Findings)
	}
	if len(want) == 0 && rep.Summary.Verdict != audit.VerdictClean {
		t.Errorf("verdict %s, want clean; missing: %v", rep.Summary.Verdict, rep.Summary.Missing)
	}
}
