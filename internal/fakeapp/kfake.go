package fakeapp

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

// KafkaBackend writes a scenario to a Kafka cluster (a kfake one in tests
// and in the demo) with real transactional producers, as a Streams app
// would: one transactional id per stream thread, DeleteRecords for
// purges, committed group offsets.
type KafkaBackend struct {
	ctx   context.Context
	addrs []string
	plain *kgo.Client
	adm   *kadm.Client
	prods map[string]*kgo.Client
	// starts holds, per transactional id with a transaction open, its
	// first record's timestamp: when it began in the fake's time
	starts map[string]int64
}

var _ Backend = (*KafkaBackend)(nil)

// NewKafkaBackend connects to the cluster at addrs. Close it when done; it
// keeps producers with open transactions alive until then.
func NewKafkaBackend(ctx context.Context, addrs ...string) (*KafkaBackend, error) {
	plain, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return nil, fmt.Errorf("connect producer: %w", err)
	}
	return &KafkaBackend{ctx: ctx, addrs: addrs, plain: plain, adm: kadm.NewClient(plain), prods: map[string]*kgo.Client{}}, nil
}

// Close closes every client.
func (b *KafkaBackend) Close() {
	for _, p := range b.prods {
		p.Close()
	}
	b.plain.Close()
}

// CreateTopic creates a topic with the configs Streams gives its topics.
func (b *KafkaBackend) CreateTopic(name string, partitions int32, compacted bool) error {
	policy := "delete"
	if compacted {
		policy = "compact"
	}
	cfg := map[string]*string{"cleanup.policy": &policy}
	resp, err := b.adm.CreateTopic(b.ctx, partitions, 1, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	return nil
}

func records(tp audit.TopicPartition, recs []Out) []*kgo.Record {
	out := make([]*kgo.Record, len(recs))
	for i, r := range recs {
		out[i] = &kgo.Record{Topic: tp.Topic, Partition: tp.Partition, Key: r.Key, Value: r.Value, Timestamp: time.UnixMilli(r.Timestamp)}
	}
	return out
}

func produce(ctx context.Context, cl *kgo.Client, tp audit.TopicPartition, recs []Out) ([]int64, error) {
	krs := records(tp, recs)
	if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		return nil, fmt.Errorf("produce to %s: %w", tp, err)
	}
	offs := make([]int64, len(krs))
	for i, r := range krs {
		offs[i] = r.Offset
	}
	return offs, nil
}

// Produce writes non-transactional records.
func (b *KafkaBackend) Produce(tp audit.TopicPartition, recs []Out) ([]int64, error) {
	return produce(b.ctx, b.plain, tp, recs)
}

func (b *KafkaBackend) producer(id string) (*kgo.Client, error) {
	if p, ok := b.prods[id]; ok {
		return p, nil
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(b.addrs...), kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Minute),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
	if err != nil {
		return nil, fmt.Errorf("connect transactional producer %s: %w", id, err)
	}
	b.prods[id] = p
	return p, nil
}

// Begin starts a transaction.
func (b *KafkaBackend) Begin(id string) error {
	p, err := b.producer(id)
	if err != nil {
		return err
	}
	if b.starts == nil {
		b.starts = map[string]int64{}
	}
	b.starts[id] = -1
	return p.BeginTransaction()
}

// TxnProduce writes in the producer's open transaction.
func (b *KafkaBackend) TxnProduce(id string, tp audit.TopicPartition, recs []Out) ([]int64, error) {
	p, err := b.producer(id)
	if err != nil {
		return nil, err
	}
	if s, ok := b.starts[id]; ok && s < 0 && len(recs) > 0 {
		b.starts[id] = recs[0].Timestamp
	}
	return produce(b.ctx, p, tp, recs)
}

// End commits or aborts.
func (b *KafkaBackend) End(id string, commit bool) error {
	p, err := b.producer(id)
	if err != nil {
		return err
	}
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	if err := p.EndTransaction(b.ctx, how); err != nil {
		return fmt.Errorf("end transaction of %s: %w", id, err)
	}
	delete(b.starts, id)
	return nil
}

// DeleteRecords moves a partition's log start.
func (b *KafkaBackend) DeleteRecords(tp audit.TopicPartition, before int64) error {
	os := kadm.Offsets{}
	os.AddOffset(tp.Topic, tp.Partition, before, -1)
	resp, err := b.adm.DeleteRecords(b.ctx, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("delete records of %s before %d: %w", tp, before, err)
	}
	return nil
}

// CommitOffsets commits the group's offsets.
func (b *KafkaBackend) CommitOffsets(group string, offsets map[audit.TopicPartition]int64) error {
	os := kadm.Offsets{}
	for tp, o := range offsets {
		os.AddOffset(tp.Topic, tp.Partition, o, -1)
	}
	resp, err := b.adm.CommitOffsets(b.ctx, group, os)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		return fmt.Errorf("commit offsets of %s: %w", group, err)
	}
	return nil
}
