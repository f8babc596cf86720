package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// maxPartitions bounds a topic's partition count: more is corrupt evidence.
const maxPartitions = 1 << 20

// TopicOptions say which partitions of a topic kaudit ledger classifies.
type TopicOptions struct {
	Topic string
	// Partition is one partition, or -1 for all.
	Partition int
	// From and To (inclusive) list each offset with its fate; To < 0 for
	// none. With a Decoder the data records in the range are decoded.
	From, To      int64
	Decoder       audit.Decoder
	CrossCheck    bool
	MaxTxnTimeout time.Duration
	// Concurrency is how many partitions are read at once.
	Concurrency int
	// Problems are what opening the source found wrong: those of the
	// topic are listed with its partitions.
	Problems []audit.Finding
}

// Result is the ledger of a topic's partitions and every finding
// that judges it.
type Result struct {
	*audit.TopicLedger
	// Findings are the ledger's findings and the source's problems,
	// listed or not.
	Findings []audit.Finding
	// Unlisted are the source's problems the ledger does not list (other
	// topics, partitions not read): evidence missing all the same.
	Unlisted []audit.Finding
}

// Topic builds the ledgers of a topic's partitions, up to Concurrency at
// once, at the time the source describes. A partition that cannot be read
// is an unreadable finding; a topic that does not exist, or a partition it
// does not have, is the caller's error (audit.UsageError).
func Topic(ctx context.Context, src audit.Source, o TopicOptions) (*Result, error) {
	n, err := src.Partitions(ctx, o.Topic)
	if err != nil {
		if errors.Is(err, audit.ErrTopicNotFound) {
			return nil, audit.UsageError{Err: fmt.Errorf("topic %q not found in %s", o.Topic, src.Describe())}
		}
		return nil, audit.NotRunError{Err: fmt.Errorf("describe topic %s: %w", o.Topic, err)}
	}
	if n < 0 || n > maxPartitions {
		return nil, audit.NotRunError{Err: fmt.Errorf("describe topic %s: %d partitions: %w", o.Topic, n, audit.ErrCorrupt)}
	}
	var parts []int32
	for p := range n {
		parts = append(parts, p)
	}
	if o.Partition >= 0 {
		if int32(o.Partition) >= n {
			return nil, audit.UsageError{Err: fmt.Errorf("topic %q has %d partitions: no partition %d", o.Topic, n, o.Partition)}
		}
		parts = []int32{int32(o.Partition)}
	}
	compacted := false
	if infos, err := src.Topics(ctx); err == nil {
		for _, t := range infos {
			if t.Name == o.Topic {
				compacted = t.Compacted()
			}
		}
	}
	now, _ := audit.SourceClock(src)
	out := &Result{TopicLedger: &audit.TopicLedger{Topic: o.Topic}}
	problems := map[int32][]audit.Finding{} // what opening the source found wrong with this topic
	for _, f := range o.Problems {
		if f.Topic == o.Topic {
			problems[f.Partition] = append(problems[f.Partition], f)
		}
	}
	lo := Options{Compacted: compacted, MaxTxnTimeout: o.MaxTxnTimeout, Now: now, CrossCheck: o.CrossCheck, TxnStarts: TxnStarts(ctx, src, "")}
	if o.To >= 0 {
		lo.KeepFrom, lo.KeepTo = o.From, o.To+1
	}
	built := buildAll(ctx, src, o.Topic, parts, lo, max(o.Concurrency, 1))
	for i, p := range parts {
		tp := audit.TopicPartition{Topic: o.Topic, Partition: p}
		l, err := built[i].l, built[i].err
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			f := audit.UnreadablePartition(tp, "the partition could not be read: "+err.Error())
			out.Partitions = append(out.Partitions, audit.PartitionLedger{Partition: p, Findings: append([]audit.Finding{f}, problems[p]...)})
			out.Findings = append(out.Findings, f)
			out.Findings = append(out.Findings, problems[p]...)
			continue
		}
		pl := l.Summary(lo)
		pl.Findings = append(pl.Findings, problems[p]...)
		if o.Decoder != nil && o.To >= 0 {
			pl.Values, err = decodeRange(ctx, src, o.Decoder, tp, o.From, o.To+1)
			if err != nil {
				return nil, err
			}
		}
		out.Partitions = append(out.Partitions, pl)
		out.Findings = append(out.Findings, pl.Findings...)
		delete(problems, p)
	}
	for _, f := range o.Problems {
		if f.Topic != o.Topic || problems[f.Partition] != nil {
			out.Unlisted = append(out.Unlisted, f)
			out.Findings = append(out.Findings, f)
		}
	}
	return out, nil
}

type built struct {
	l   *Ledger
	err error
}

// buildAll builds the ledgers of parts, up to n at once.
func buildAll(ctx context.Context, src audit.RecordSource, topic string, parts []int32, lo Options, n int) []built {
	out := make([]built, len(parts))
	slots := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i, p := range parts {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			l, err := Build(ctx, src, audit.TopicPartition{Topic: topic, Partition: p}, lo)
			out[i] = built{l, err}
		})
	}
	wg.Wait()
	return out
}

// decodeRange decodes the data records in [from, to).
func decodeRange(ctx context.Context, src audit.RecordSource, dec audit.Decoder, tp audit.TopicPartition, from, to int64) ([]audit.DecodedRecord, error) {
	var out []audit.DecodedRecord
	for r, err := range src.Records(ctx, tp, from, to) {
		if err != nil {
			return nil, fmt.Errorf("read %s at %d: %w", tp, from, err)
		}
		if r.Batch.Control || r.Offset < from {
			continue
		}
		out = append(out, audit.DecodedRecord{Offset: r.Offset, Timestamp: r.Timestamp,
			Key: recordText(ctx, dec, tp.Topic, true, r.Key), Value: recordText(ctx, dec, tp.Topic, false, r.Value)})
	}
	return out, nil
}

// recordText is a key or value as canonical JSON text, or b64: and base64 when
// it cannot be decoded.
func recordText(ctx context.Context, dec audit.Decoder, topic string, isKey bool, b []byte) string {
	if b == nil {
		return "null"
	}
	v, err := dec.Decode(ctx, topic, isKey, b)
	if err != nil {
		return codec.RawText(b)
	}
	return codec.Text(v)
}
