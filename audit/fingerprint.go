package audit

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"slices"
)

// Fingerprinter is a source that names the evidence it holds of topics,
// the same for every reader of the same evidence: the shards of one run
// (kaudit diff --shard) each compute it, their exchange files and reports
// carry it, and a file or a report of other evidence is refused
// (reconcile.Exchange, kaudit merge).
type Fingerprinter interface {
	Fingerprint(ctx context.Context, topics []string) (string, error)
}

// Fingerprint names the evidence src holds of topics (Fingerprinter): a
// capture by its manifest, a live cluster by its id and the topics'
// partition counts (its offsets move while the shards of a run start);
// any other source, whose evidence stands still (log dirs, memory), by
// the topics' partition counts and each partition's log start, LSO and
// high watermark (OffsetsFingerprint).
func Fingerprint(ctx context.Context, src Source, topics []string) (string, error) {
	if f, ok := src.(Fingerprinter); ok {
		return f.Fingerprint(ctx, topics)
	}
	return OffsetsFingerprint(ctx, src, topics, true)
}

// OffsetsFingerprint is "offsets sha256:…" of topics (sorted, once each)
// with their partition counts and, with offsets, each partition's log
// start, LSO and high watermark; a topic or a partition the source cannot
// give is hashed as such (the same evidence fails the same way).
func OffsetsFingerprint(ctx context.Context, src RecordSource, topics []string, offsets bool) (string, error) {
	h := sha256.New()
	if err := HashTopics(ctx, h, src, topics, offsets); err != nil {
		return "", err
	}
	return fmt.Sprintf("offsets sha256:%x", h.Sum(nil)), nil
}

// HashTopics writes topics (sorted, once each) and their partition counts
// (and, with offsets, each partition's offsets) to h, for a fingerprint.
func HashTopics(ctx context.Context, h hash.Hash, src RecordSource, topics []string, offsets bool) error {
	topics = slices.Compact(slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(topics), func(t string) bool { return t == "" }))))
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := src.Partitions(ctx, t)
		if err != nil {
			fmt.Fprintf(h, "%q: none\n", t)
			continue
		}
		fmt.Fprintf(h, "%q: %d partitions\n", t, n)
		if !offsets {
			continue
		}
		for p := range n {
			o, err := src.Offsets(ctx, TopicPartition{Topic: t, Partition: p})
			if err != nil {
				fmt.Fprintf(h, "%d: none\n", p)
				continue
			}
			fmt.Fprintf(h, "%d: %d %d %d\n", p, o.LogStart, o.LSO, o.HW)
		}
	}
	return nil
}
