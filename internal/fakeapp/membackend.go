package fakeapp

import (
	"fmt"
	"sort"

	"github.com/kaudit/kaudit/audit"
)

// MemoryBackend writes a scenario into a Memory source the way a broker
// would lay it out: offsets assigned in order, transactional batches with
// producer ids and epochs, COMMIT/ABORT markers, the LSO held by open
// transactions, log-start offsets moved by DeleteRecords.
type MemoryBackend struct {
	M     *Memory
	parts map[audit.TopicPartition]*memPart
	prods map[string]*memProducer
	pids  int64
}

type memPart struct {
	next, logStart int64
	lastTS         int64
	open           map[int64]int64 // pid → first offset of its open transaction here
}

type memProducer struct {
	id      string
	pid     int64
	epoch   int16
	inTxn   bool
	touched []audit.TopicPartition
	// start is when the open transaction began, in the fake's time: its
	// first record's timestamp (the coordinator's start, audit.Transaction)
	start int64
}

var _ Backend = (*MemoryBackend)(nil)

// NewMemoryBackend returns a backend writing into m.
func NewMemoryBackend(m *Memory) *MemoryBackend {
	return &MemoryBackend{M: m, parts: map[audit.TopicPartition]*memPart{}, prods: map[string]*memProducer{}, pids: 1000}
}

func (b *MemoryBackend) part(tp audit.TopicPartition) *memPart {
	p := b.parts[tp]
	if p == nil {
		p = &memPart{open: map[int64]int64{}}
		b.parts[tp] = p
	}
	return p
}

func (b *MemoryBackend) sync(tp audit.TopicPartition) {
	p := b.part(tp)
	lso := p.next
	for _, first := range p.open {
		lso = min(lso, first)
	}
	b.M.SetOffsets(tp, audit.PartitionOffsets{LogStart: p.logStart, LSO: max(lso, p.logStart), HW: p.next})
}

// CreateTopic creates a topic.
func (b *MemoryBackend) CreateTopic(name string, partitions int32, compacted bool) error {
	policy := "delete"
	if compacted {
		policy = "compact"
	}
	b.M.AddTopic(audit.TopicInfo{Name: name, Partitions: partitions, ReplicationFactor: 3,
		Configs: map[string]string{"cleanup.policy": policy, "min.insync.replicas": "2"}})
	return nil
}

func (b *MemoryBackend) append(tp audit.TopicPartition, batch audit.Batch, recs []Out, marker *audit.Marker) []int64 {
	p := b.part(tp)
	batch.BaseOffset = p.next
	batch.LastOffsetDelta = int32(len(recs) - 1)
	offs := make([]int64, len(recs))
	for i, r := range recs {
		batch.MaxTimestamp = max(batch.MaxTimestamp, r.Timestamp)
		p.lastTS = r.Timestamp
		offs[i] = p.next
		b.M.Append(audit.Record{Topic: tp.Topic, Partition: tp.Partition, Offset: p.next, Key: r.Key, Value: r.Value,
			Timestamp: r.Timestamp, Batch: batch, Marker: marker})
		p.next++
	}
	b.sync(tp)
	return offs
}

// Produce writes non-transactional records.
func (b *MemoryBackend) Produce(tp audit.TopicPartition, recs []Out) ([]int64, error) {
	if len(recs) == 0 {
		return nil, nil
	}
	return b.append(tp, audit.Batch{ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1}, recs, nil), nil
}

func (b *MemoryBackend) producer(id string) *memProducer {
	pr := b.prods[id]
	if pr == nil {
		b.pids++
		pr = &memProducer{id: id, pid: b.pids}
		b.prods[id] = pr
	}
	return pr
}

// Begin starts a transaction.
func (b *MemoryBackend) Begin(id string) error {
	pr := b.producer(id)
	if pr.inTxn {
		return fmt.Errorf("begin %s: a transaction is open", id)
	}
	pr.inTxn, pr.touched, pr.start = true, nil, -1
	return nil
}

// TxnProduce writes records in the producer's open transaction.
func (b *MemoryBackend) TxnProduce(id string, tp audit.TopicPartition, recs []Out) ([]int64, error) {
	pr := b.producer(id)
	if !pr.inTxn {
		return nil, fmt.Errorf("produce %s: no open transaction", id)
	}
	p := b.part(tp)
	if _, ok := p.open[pr.pid]; !ok {
		p.open[pr.pid] = p.next
		pr.touched = append(pr.touched, tp)
	}
	if pr.start < 0 && len(recs) > 0 {
		pr.start = recs[0].Timestamp
		defer b.syncTxns()
	}
	return b.append(tp, audit.Batch{ProducerID: pr.pid, ProducerEpoch: pr.epoch, BaseSequence: 0, Transactional: true}, recs, nil), nil
}

// End writes the transaction's markers.
func (b *MemoryBackend) End(id string, commit bool) error {
	pr := b.producer(id)
	if !pr.inTxn {
		return fmt.Errorf("end %s: no open transaction", id)
	}
	t := audit.MarkerAbort
	if commit {
		t = audit.MarkerCommit
	}
	for _, tp := range pr.touched {
		p := b.part(tp)
		delete(p.open, pr.pid)
		b.append(tp, audit.Batch{ProducerID: pr.pid, ProducerEpoch: pr.epoch, Transactional: true, Control: true},
			[]Out{{Key: []byte{0, 0, 0, byte(t)}, Value: []byte{0, 0, 0, 0, 0, 0}, Timestamp: p.lastTS}}, &audit.Marker{Type: t})
	}
	pr.inTxn, pr.touched = false, nil
	b.syncTxns()
	return nil
}

func (b *MemoryBackend) syncTxns() {
	var ts []audit.Transaction
	ids := make([]string, 0, len(b.prods))
	for id := range b.prods {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		pr := b.prods[id]
		st, start := "CompleteCommit", int64(-1)
		if pr.inTxn {
			st, start = "Ongoing", pr.start
		}
		ts = append(ts, audit.Transaction{TransactionalID: id, State: st, ProducerID: pr.pid, ProducerEpoch: pr.epoch, TimeoutMillis: 10000, StartTimestamp: start})
	}
	b.M.SetTransactions(ts)
}

// DeleteRecords moves the log start.
func (b *MemoryBackend) DeleteRecords(tp audit.TopicPartition, before int64) error {
	p := b.part(tp)
	if before > p.next {
		return fmt.Errorf("delete records of %s before %d: beyond the high watermark %d", tp, before, p.next)
	}
	p.logStart = max(p.logStart, before)
	b.sync(tp)
	return nil
}

// CommitOffsets sets the group's committed offsets.
func (b *MemoryBackend) CommitOffsets(group string, offsets map[audit.TopicPartition]int64) error {
	g := audit.GroupOffsets{Group: group, State: "Empty", Offsets: map[audit.TopicPartition]int64{}}
	for tp, o := range offsets {
		g.Offsets[tp] = o
	}
	b.M.SetGroup(g)
	b.syncTxns()
	return nil
}
