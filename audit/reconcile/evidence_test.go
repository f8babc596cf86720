package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// hiddenSource hides one topic, as an ACL without Describe or a deleted
// topic does.
type hiddenSource struct {
	*fakeapp.Memory
	topic string
}

func (h hiddenSource) Topics(ctx context.Context) ([]audit.TopicInfo, error) {
	ts, err := h.Memory.Topics(ctx)
	var out []audit.TopicInfo
	for _, t := range ts {
		if t.Name != h.topic {
			out = append(out, t)
		}
	}
	return out, err
}

func (h hiddenSource) Partitions(ctx context.Context, topic string) (int32, error) {
	if topic == h.topic {
		return 0, fmt.Errorf("describe %s: not authorized: %w", topic, audit.ErrUnreadable)
	}
	return h.Memory.Partitions(ctx, topic)
}

// TestMissingEvidenceNeverJudged: evidence that cannot be read makes the
// run incomplete, never clean and never losses (issue R, items 1-3): a
// group with no committed offsets, a partition without one, a hidden
// changelog or repartition topic, a joiner or reducer that fails on the
// data, a table the spec check left unjudged. Each case has real losses
// injected, so a clean verdict would hide them.
func TestMissingEvidenceNeverJudged(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 300)
	s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultDrop, Table: 1}, {Kind: fakeapp.FaultStateDiverged, Table: 0}}
	for _, tt := range []struct {
		name    string
		src     func(m *fakeapp.Memory) audit.Source
		mod     func(p *reconcile.Pipeline)
		missing string // in the report's missing evidence
		// affected is what may yield no loss: "" nothing at all, a table's
		// name, or "join"
		affected string
	}{
		{"the group committed nothing", func(m *fakeapp.Memory) audit.Source {
			m.SetGroup(audit.GroupOffsets{Group: s.AppID, Offsets: map[audit.TopicPartition]int64{}})
			return m
		}, nil, "has no committed offsets", ""},
		{"a source partition without a committed offset", func(m *fakeapp.Memory) audit.Source {
			g, _ := m.GroupOffsets(t.Context(), s.AppID)
			delete(g.Offsets, audit.TopicPartition{Topic: s.Tables[2].Source, Partition: 1})
			m.SetGroup(g)
			return m
		}, nil, s.Tables[2].Source + "/1: the group has no committed offset", "-"},
		{"a hidden changelog", func(m *fakeapp.Memory) audit.Source { return hiddenSource{m, s.Changelog(s.Tables[1])} }, nil, "is not visible", "payments"},
		{"a hidden repartition topic", func(m *fakeapp.Memory) audit.Source { return hiddenSource{m, s.Repartition(s.Tables[1])} }, nil, "is not visible", "payments"},
		{"a joiner that fails on the data", func(m *fakeapp.Memory) audit.Source { return m }, func(p *reconcile.Pipeline) {
			p.Joins[0].Value = func(l audit.Value, rs []audit.Value) (audit.Value, error) {
				return nil, context.DeadlineExceeded
			}
		}, "the joiner failed", "join"},
		{"a reducer that fails on the data", func(m *fakeapp.Memory) audit.Source { return m }, func(p *reconcile.Pipeline) {
			p.Tables[1].Latest = false
			p.Tables[1].Reduce = func(agg, v audit.Value, first bool) (audit.Value, error) { return nil, context.Canceled }
		}, "the reducer failed", "payments"},
		{"a table the spec check left unjudged", func(m *fakeapp.Memory) audit.Source { return m }, func(p *reconcile.Pipeline) {
			p.Tables[1].Unjudged = "sum(amount) explains 3 of 280 keys' histories; latest explains 280"
		}, "latest explains 280", "payments"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, dec := generated(t, s)
			p := pipelineOf(s)
			if tt.mod != nil {
				tt.mod(p)
			}
			rep, err := reconcile.Run(t.Context(), tt.src(m), p, reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(rep.Summary.Missing, "\n"), tt.missing) {
				t.Errorf("missing evidence %q, want one saying %q", rep.Summary.Missing, tt.missing)
			}
			if rep.Summary.Verdict == audit.VerdictClean {
				t.Errorf("verdict clean with evidence missing")
			}
			for _, f := range rep.Findings {
				if f.Severity != audit.SeverityLoss {
					continue
				}
				// what the missing evidence affects yields no loss
				if tt.affected == "" || strings.HasPrefix(f.Detail, "table "+tt.affected+";") || strings.HasPrefix(f.Detail, "table "+tt.affected+":") || tt.affected == "join" && f.Stage == audit.StageJoin {
					t.Errorf("loss from missing evidence: %s/%s %s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
				}
			}
		})
	}
}

// TestValueChangedOnTheWay: an app that changes values between its source
// and the repartition topic (a mapValues the spec does not say) leaves
// copies no input accounts for; the table is not judged, and no input of
// it is called lost.
func TestValueChangedOnTheWay(t *testing.T) {
	s := fakeapp.SeedScenario("shop", 300)
	s.Purge = false // the copies are readable (purged, the spec check's reducer test catches it)
	s.Encode = func(topic string, v map[string]any) ([]byte, error) {
		if strings.HasSuffix(topic, "-repartition") && v["table"] == "payments" {
			w := map[string]any{"mapped": true}
			for k, x := range v {
				w[k] = x
			}
			v = w
		}
		return json.Marshal(v)
	}
	m, dec := generated(t, s)
	rep, err := reconcile.Run(t.Context(), m, pipelineOf(s), reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(rep.Summary.Missing, "\n"), "table payments: only") {
		t.Errorf("missing evidence %q, want the payments table not judged", rep.Summary.Missing)
	}
	for _, f := range rep.Findings {
		if f.Severity == audit.SeverityLoss && strings.HasPrefix(f.Detail, "table payments") {
			t.Errorf("loss from a value the spec does not describe: %s/%s %s/%d@%d", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset)
		}
	}
}
