package reconcile_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/audittest"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
)

// brokenSource fails the reads of partition 0 of one topic after its first record.
type brokenSource struct {
	*audittest.Memory
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
	s := audittest.SeedScenario("shop", 200)
	for _, topic := range []string{s.Tables[1].Source, s.Repartition(s.Tables[1]), s.Changelog(s.Tables[0]), s.Output} {
		t.Run(topic, func(t *testing.T) {
			m := audittest.NewMemory(time.UnixMilli(s.Now))
			if _, err := audittest.Generate(s, audittest.NewMemoryBackend(m)); err != nil {
				t.Fatal(err)
			}
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
			if err != nil {
				t.Fatal(err)
			}
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
