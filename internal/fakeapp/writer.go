package fakeapp

import (
	"strconv"

	"github.com/kaudit/kaudit/audit"
)

// PartitionWriter appends hand-made batches to one partition of a Memory
// source, assigning offsets the way a broker would.
type PartitionWriter struct {
	m    *Memory
	tp   audit.TopicPartition
	next int64
	ts   int64
}

// Writer returns a writer for tp starting at offset 0 and timestamp ts.
func (m *Memory) Writer(tp audit.TopicPartition, ts int64) *PartitionWriter {
	return &PartitionWriter{m: m, tp: tp, ts: ts}
}

// KV is one record to write.
type KV struct {
	Key, Value []byte
}

// Next is the offset the next record gets.
func (w *PartitionWriter) Next() int64 { return w.next }

// Skip leaves n offsets unused, as compaction or a gap would.
func (w *PartitionWriter) Skip(n int64) { w.next += n }

func (w *PartitionWriter) batch(b audit.Batch, kvs []KV, marker *audit.Marker) int64 {
	first := w.next
	b.BaseOffset = first
	b.LastOffsetDelta = int32(max(len(kvs), 1) - 1)
	b.BaseSequence = -1
	for i, kv := range kvs {
		w.ts++
		b.MaxTimestamp = w.ts
		w.m.Append(audit.Record{Topic: w.tp.Topic, Partition: w.tp.Partition, Offset: first + int64(i),
			Key: kv.Key, Value: kv.Value, Timestamp: w.ts, Batch: b, Marker: marker})
	}
	w.next = first + int64(len(kvs))
	return first
}

// Plain writes non-transactional records and returns the first offset.
func (w *PartitionWriter) Plain(kvs ...KV) int64 {
	return w.batch(audit.Batch{ProducerID: -1, ProducerEpoch: -1}, kvs, nil)
}

// Txn writes records in producer pid's transaction (begun by the first such
// batch, ended by Marker) and returns the first offset.
func (w *PartitionWriter) Txn(pid int64, epoch int16, kvs ...KV) int64 {
	return w.batch(audit.Batch{ProducerID: pid, ProducerEpoch: epoch, Transactional: true}, kvs, nil)
}

// Marker writes a COMMIT (commit true) or ABORT control record for pid and
// returns its offset.
func (w *PartitionWriter) Marker(pid int64, epoch int16, commit bool) int64 {
	t := audit.MarkerAbort
	if commit {
		t = audit.MarkerCommit
	}
	return w.batch(audit.Batch{ProducerID: pid, ProducerEpoch: epoch, Transactional: true, Control: true},
		[]KV{{Key: []byte{0, 0, 0, byte(t)}, Value: []byte{0, 0, 0, 0, 0, 0}}}, &audit.Marker{Type: t})
}

// KVs returns n records with keys and values "k<i>"/"v<i>".
func KVs(n int) []KV {
	out := make([]KV, n)
	for i := range out {
		out[i] = KV{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))}
	}
	return out
}
