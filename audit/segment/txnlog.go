package segment

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// TxnLogRecord is one decoded __transaction_state record: a transactional
// id's coordinator state, or (Value nil) a tombstone for an expired id.
type TxnLogRecord struct {
	TransactionalID string
	Value           *kmsg.TxnMetadataValue
}

// ParseTxnLogRecord decodes a __transaction_state record: key version 0
// (the transactional id), value versions 0 and 1 (1 is flexible, with the
// KIP-890 and KIP-939 tagged fields of Kafka 4.x). A nil value is a
// tombstone. Errors wrap audit.ErrCorrupt.
func ParseTxnLogRecord(key, value []byte) (TxnLogRecord, error) {
	if len(key) < 2 {
		return TxnLogRecord{}, fmt.Errorf("transaction log key of %d bytes: %w", len(key), ErrTruncated)
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != 0 {
		return TxnLogRecord{}, fmt.Errorf("transaction log key version %d, want 0: %w", v, audit.ErrCorrupt)
	}
	var k kmsg.TxnMetadataKey
	if err := k.ReadFrom(key); err != nil {
		return TxnLogRecord{}, fmt.Errorf("transaction log key: %v: %w", err, audit.ErrCorrupt)
	}
	r := TxnLogRecord{TransactionalID: k.TransactionalID}
	if value == nil {
		return r, nil
	}
	var v kmsg.TxnMetadataValue
	if err := readVersioned(value, 1, v.ReadFrom); err != nil {
		return r, fmt.Errorf("transaction log value of %q: %w", k.TransactionalID, err)
	}
	if v.State < 0 || v.State > 7 {
		return r, fmt.Errorf("transaction log value of %q: state %d: %w", k.TransactionalID, v.State, audit.ErrCorrupt)
	}
	r.Value = &v
	return r, nil
}

// TxnStates replays every __transaction_state partition the dirs hold, up
// to its log end (as the coordinator loads it): the last record of a
// transactional id wins, a tombstone removes it. It returns the state by
// transactional id, and the partitions of the topic that no dir holds (their
// ids are unknown).
func (d *Dir) TxnStates(ctx context.Context) (map[string]*kmsg.TxnMetadataValue, []int32, error) {
	n, err := d.internalPartitions(ctx, TransactionStateTopic)
	if errors.Is(err, errNeverCreated) {
		return map[string]*kmsg.TxnMetadataValue{}, nil, nil // no transaction ever began
	}
	if err != nil {
		return nil, nil, fmt.Errorf("transactions from log dirs: %w", err)
	}
	out := map[string]*kmsg.TxnMetadataValue{}
	var absent []int32
	for p := range n {
		tp := audit.TopicPartition{Topic: TransactionStateTopic, Partition: p}
		if len(d.replicas[tp]) == 0 {
			absent = append(absent, p)
			continue
		}
		r, err := d.primary(tp)
		if err != nil {
			return nil, nil, fmt.Errorf("transactions from log dirs: %w", err)
		}
		for rec, err := range r.records(ctx, r.logStart, r.logEnd) {
			if err != nil {
				return nil, nil, fmt.Errorf("transactions from log dirs: %w", err)
			}
			if rec.Batch.Control {
				continue
			}
			t, err := ParseTxnLogRecord(rec.Key, rec.Value)
			if err != nil {
				return nil, nil, fmt.Errorf("transactions from log dirs: %s at offset %d: %w", tp, rec.Offset, err)
			}
			if t.Value == nil {
				delete(out, t.TransactionalID)
			} else {
				out[t.TransactionalID] = t.Value
			}
		}
	}
	return out, absent, nil
}

// Transactions lists the transactional ids starting with prefix with the
// state their coordinator last wrote to __transaction_state. When a
// partition of the topic is in none of the dirs, the ids it holds are
// unknown: the error wraps audit.ErrNotSupported and names it, and the ids
// found elsewhere are still returned.
func (d *Dir) Transactions(ctx context.Context, prefix string) ([]audit.Transaction, error) {
	states, absent, err := d.TxnStates(ctx)
	if err != nil {
		return nil, err
	}
	var out []audit.Transaction
	for id, v := range states {
		if !strings.HasPrefix(id, prefix) || v.State == kmsg.TransactionState(6) { // Dead: being removed
			continue
		}
		t := audit.Transaction{TransactionalID: id, State: v.State.String(), ProducerID: v.ProducerID, ProducerEpoch: v.ProducerEpoch,
			TimeoutMillis: v.TimeoutMillis, StartTimestamp: v.StartTimestamp}
		for _, tt := range v.Topics {
			for _, p := range tt.Partitions {
				t.Partitions = append(t.Partitions, audit.TopicPartition{Topic: tt.Topic, Partition: p})
			}
		}
		slices.SortFunc(t.Partitions, func(a, b audit.TopicPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b audit.Transaction) int { return cmp.Compare(a.TransactionalID, b.TransactionalID) })
	if len(absent) > 0 {
		return out, fmt.Errorf("transactions from log dirs: partitions %v of %s are in none of the dirs: %w", absent, TransactionStateTopic, audit.ErrNotSupported)
	}
	return out, nil
}

// decidedCommits returns the producer ids whose coordinator had decided to
// commit (PrepareCommit, or CompleteCommit) when the log stopped: their
// transactional offset commits count even where the COMMIT marker is
// missing. An unreadable __transaction_state decides nothing.
func (d *Dir) decidedCommits(ctx context.Context) map[int64]bool {
	states, _, err := d.TxnStates(ctx)
	out := map[int64]bool{}
	if err != nil {
		return out
	}
	for _, v := range states {
		if s := v.State.String(); s == "PrepareCommit" || s == "CompleteCommit" {
			out[v.ProducerID] = true
		}
	}
	return out
}

// readVersioned checks a value's leading version against 0..max, then
// decodes it with read.
func readVersioned(value []byte, maxVersion int16, read func([]byte) error) error {
	if len(value) < 2 {
		return fmt.Errorf("%d bytes: %w", len(value), ErrTruncated)
	}
	if v := int16(binary.BigEndian.Uint16(value)); v < 0 || v > maxVersion {
		return fmt.Errorf("version %d, want 0-%d: %w", v, maxVersion, audit.ErrCorrupt)
	}
	if err := read(value); err != nil {
		return fmt.Errorf("%v: %w", err, audit.ErrCorrupt)
	}
	return nil
}
