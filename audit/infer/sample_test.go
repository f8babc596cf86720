package infer

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// sampling is a source that is an audit.SampleReader: it counts the
// records each kind of read yields.
type sampling struct {
	*fakeapp.Memory
	sampled, whole int
}

func (s *sampling) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return counted(s.Memory.Records(ctx, tp, from, to), &s.whole)
}

func (s *sampling) RecordsSample(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return counted(s.Memory.Records(ctx, tp, from, to), &s.sampled)
}

func counted(seq iter.Seq2[audit.Record, error], n *int) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		for r, err := range seq {
			*n++
			if !yield(r, err) {
				return
			}
		}
	}
}

// Read bounded per partition (a source's sample) reads through
// RecordsSample, so a live source fetches little past the bound; unbounded,
// through Records. Both keep the same records.
func TestReadSampleReadsThroughRecordsSample(t *testing.T) {
	m := fakeapp.NewMemory(time.UnixMilli(1e12))
	m.AddTopic(audit.TopicInfo{Name: "src", Partitions: 2})
	for p := range int32(2) {
		w := m.Writer(audit.TopicPartition{Topic: "src", Partition: p}, 1e12)
		for i := range 50 {
			w.Plain(fakeapp.KV{Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i)})
		}
	}
	s := &sampling{Memory: m}
	sample, err := Read(t.Context(), s, nil, "src", ReadOptions{PerPartition: 10})
	if err != nil {
		t.Fatal(err)
	}
	if s.whole != 0 || s.sampled != 2*10 {
		t.Fatalf("a sample of 10 a partition read %d records through Records and %d through RecordsSample, want 0 and 20", s.whole, s.sampled)
	}
	s.sampled = 0
	all, err := Read(t.Context(), s, nil, "src", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.whole != 2*50 || s.sampled != 0 {
		t.Fatalf("a whole read read %d records through Records and %d through RecordsSample, want 100 and 0", s.whole, s.sampled)
	}
	for p := range int32(2) {
		if !slices.EqualFunc(sample.Parts[p], all.Parts[p][:10], func(a, b Rec) bool {
			return a.Offset == b.Offset && string(a.RawKey) == string(b.RawKey) && string(a.RawValue) == string(b.RawValue)
		}) || sample.Full[p] || !all.Full[p] {
			t.Fatalf("partition %d: the sample is not the whole read's first 10 records", p)
		}
	}
}
