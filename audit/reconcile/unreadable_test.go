package reconcile_test

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// brokenSource fails the reads of partition 0 of one topic after its first record.
type brokenSource struct {
	*fakeapp.Memory
	topic string
}

func (b brokenSource) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		n := 0
		for r, err := range b.Memory.Records(ctx, tp, from, to) {
			if tp.Topic == b.topic && tp.Partition == 0 && n == 1 {
				yield(audit.Record{}, errors.New("broker closed the connection"))
				return
			}
			n++
			if !yield(r, err) {
				return
			}
		}
	}
}

// TestUnreadableNeverLoss: a partition of any hop that cannot be read
// makes the run incomplete and judges nothing that could rest on it: it
// must never turn into losses (the safety tests found it did).
func TestUnreadableNeverLoss(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 200)
	for _, topic := range []string{s.Tables[1].Source, s.Repartition(s.Tables[1]), s.Changelog(s.Tables[0]), s.Output} {
		t.Run(topic, func(t *testing.T) {
			m, dec := generated(t, s)
			rep, err := reconcile.Run(t.Context(), brokenSource{m, topic}, pipelineOf(s), reconcile.Options{Decoder: dec})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss {
					t.Errorf("loss finding from partial evidence: %+v", f)
				}
			}
			if rep.Summary.Verdict != audit.VerdictIncomplete {
				t.Errorf("verdict %s, want incomplete", rep.Summary.Verdict)
			}
		})
	}
}

// TestSelectKeyMismatch: a select_key that does not describe the app (a
// typo giving null for every input, or another field) must not audit
// clean: the table is not judged and the run is incomplete.
func TestSelectKeyMismatch(t *testing.T) {
	for _, tt := range []struct {
		name string
		key  func(m map[string]any) audit.Value
	}{
		{"null for every input", func(m map[string]any) audit.Value { return m["orderID"] }},
		{"another field", func(m map[string]any) audit.Value { return m["table"] }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapp.SeedScenario("shop", 120)
			m := fakeapp.NewMemory(time.UnixMilli(s.Now))
			if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
				t.Fatal(err)
			}
			p := pipelineOf(s)
			p.Tables[1].SelectKey = func(e reconcile.Env) (audit.Value, error) { return tt.key(e.Value.(map[string]any)), nil }
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
			if err != nil {
				t.Fatal(err)
			}
			for i, budget := range []int64{0, 0, 1000} { // in one map, in buckets in memory, and spilled: the keys are known only after every bucket
				opts := reconcile.Options{Decoder: dec, MemoryBudget: budget, SpillDir: t.TempDir()}
				if i == 0 {
					opts = reconcile.OneMap(opts)
				}
				rep, err := reconcile.Run(t.Context(), m, p, opts)
				if err != nil {
					t.Fatal(err)
				}
				if rep.Summary.Verdict != audit.VerdictIncomplete {
					t.Errorf("budget %d: verdict %s, want incomplete; missing %v", budget, rep.Summary.Verdict, rep.Summary.Missing)
				}
				if !slices.ContainsFunc(rep.Summary.Missing, func(m string) bool { return strings.Contains(m, "does not describe the app") }) {
					t.Errorf("budget %d: no word of the spec not describing the app in %q", budget, rep.Summary.Missing)
				}
				for _, f := range rep.Findings {
					if f.Severity == audit.SeverityLoss {
						t.Errorf("budget %d: a loss judged from a spec that does not describe the app: %s/%s %s/%d@%d", budget, f.Stage, f.Cause, f.Topic, f.Partition, f.Offset)
					}
				}
			}
		})
	}
}

// boundedSource holds one source partition only from an offset, as a
// capture bounded with --since does.
type boundedSource struct {
	*fakeapp.Memory
	tp audit.TopicPartition
}

func (b boundedSource) ClusterLogStart(tp audit.TopicPartition) (int64, bool) { return 0, tp == b.tp }

// TestBoundedCapture: records a bounded capture did not copy are missing
// from the evidence, not from the cluster: never a retention gap.
func TestBoundedCapture(t *testing.T) {
	for _, tt := range []struct {
		name    string
		from    func(c int64) int64
		verdict audit.Verdict
	}{
		{"capture starts below the cut", func(c int64) int64 { return c - 5 }, audit.VerdictClean},
		{"capture starts above the cut", func(c int64) int64 { return c + 1 }, audit.VerdictIncomplete},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := fakeapp.SeedScenario("shop", 200)
			m := fakeapp.NewMemory(time.UnixMilli(s.Now))
			if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
				t.Fatal(err)
			}
			tp := audit.TopicPartition{Topic: s.Tables[0].Source, Partition: 0}
			g, _ := m.GroupOffsets(t.Context(), "shop")
			offs, _ := m.Offsets(t.Context(), tp)
			offs.LogStart = tt.from(g.Offsets[tp])
			m.SetOffsets(tp, offs)
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := reconcile.Run(t.Context(), boundedSource{m, tp}, pipelineOf(s), reconcile.Options{Decoder: dec})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss {
					t.Errorf("loss from a bounded capture: %s/%s %s/%d@%d", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset)
				}
			}
			if rep.Summary.Verdict != tt.verdict {
				t.Errorf("verdict %s, want %s (missing %v)", rep.Summary.Verdict, tt.verdict, rep.Summary.Missing)
			}
		})
	}
}
