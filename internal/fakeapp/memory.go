package fakeapp

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kaudit/kaudit/audit"
)

var (
	_ audit.Source = (*Memory)(nil)
	_ audit.Clock  = (*Memory)(nil)
)

// Memory is an in-memory audit.Source. Append records in offset order per
// partition; offsets may skip (compaction, gaps).
type Memory struct {
	mu       sync.Mutex
	topics   map[string]*memTopic
	groups   map[string]audit.GroupOffsets
	txns     []audit.Transaction
	now      time.Time
	producer map[audit.TopicPartition][]audit.Producer
}

type memTopic struct {
	info  audit.TopicInfo
	parts []*memPartition
}

type memPartition struct {
	recs     []audit.Record
	offsets  audit.PartitionOffsets
	explicit bool // offsets set by SetOffsets
}

var (
	_ audit.Source = (*Memory)(nil)
	_ audit.Clock  = (*Memory)(nil)
)

// NewMemory returns an empty source whose clock reads now.
func NewMemory(now time.Time) *Memory {
	return &Memory{topics: map[string]*memTopic{}, groups: map[string]audit.GroupOffsets{}, now: now,
		producer: map[audit.TopicPartition][]audit.Producer{}}
}

// AddTopic creates a topic.
func (m *Memory) AddTopic(info audit.TopicInfo) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &memTopic{info: info}
	for range info.Partitions {
		t.parts = append(t.parts, &memPartition{})
	}
	m.topics[info.Name] = t
}

// SetTopicConfig sets one config of a topic, as kafka-configs --alter
// would.
func (m *Memory) SetTopicConfig(topic, key, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t := m.topics[topic]; t != nil {
		cfg := maps.Clone(t.info.Configs)
		if cfg == nil {
			cfg = map[string]string{}
		}
		cfg[key] = value
		t.info.Configs = cfg
	}
}

func (m *Memory) part(tp audit.TopicPartition) (*memPartition, error) {
	t, ok := m.topics[tp.Topic]
	if !ok {
		return nil, fmt.Errorf("read %s: %w", tp.Topic, audit.ErrTopicNotFound)
	}
	if tp.Partition < 0 || int(tp.Partition) >= len(t.parts) {
		return nil, fmt.Errorf("read %s: %w", tp, audit.ErrPartitionNotFound)
	}
	return t.parts[tp.Partition], nil
}

// Append adds records at the end of their partitions. It panics on a
// missing topic or an offset that goes backwards: test data is wrong then.
func (m *Memory) Append(recs ...audit.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range recs {
		p, err := m.part(r.TP())
		if err != nil {
			panic(err)
		}
		if n := len(p.recs); n > 0 && p.recs[n-1].Offset >= r.Offset {
			panic(fmt.Sprintf("append %s@%d after %d", r.TP(), r.Offset, p.recs[n-1].Offset))
		}
		p.recs = append(p.recs, r)
		if !p.explicit {
			p.offsets.HW = r.Offset + 1
			p.offsets.LSO = p.offsets.HW
		}
	}
}

// SetOffsets fixes a partition's log start, LSO and HW (otherwise HW and
// LSO follow the last record and log start is 0).
func (m *Memory) SetOffsets(tp audit.TopicPartition, o audit.PartitionOffsets) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.part(tp)
	if err != nil {
		panic(err)
	}
	p.offsets, p.explicit = o, true
}

// SetGroup sets a group's committed offsets.
func (m *Memory) SetGroup(g audit.GroupOffsets) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.groups[g.Group] = g
}

// SetTransactions sets the coordinator's transactional ids.
func (m *Memory) SetTransactions(ts []audit.Transaction) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.txns = ts
}

// SetProducers sets a partition's producer state.
func (m *Memory) SetProducers(tp audit.TopicPartition, ps []audit.Producer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.producer[tp] = ps
}

// Now is the source's clock.
func (m *Memory) Now() time.Time { return m.now }

// Describe names the source.
func (m *Memory) Describe() string { return "memory" }

// Partitions returns a topic's partition count.
func (m *Memory) Partitions(_ context.Context, topic string) (int32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.topics[topic]
	if !ok {
		return 0, fmt.Errorf("describe %s: %w", topic, audit.ErrTopicNotFound)
	}
	return int32(len(t.parts)), nil
}

// Offsets returns a partition's offsets.
func (m *Memory) Offsets(_ context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := m.part(tp)
	if err != nil {
		return audit.PartitionOffsets{}, err
	}
	return p.offsets, nil
}

// Records yields the records in [from, to).
func (m *Memory) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		m.mu.Lock()
		p, err := m.part(tp)
		var recs []audit.Record
		var hw, logStart int64
		if err == nil {
			recs, hw, logStart = p.recs, p.offsets.HW, p.offsets.LogStart
		}
		m.mu.Unlock()
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		if to < 0 || to > hw {
			to = hw
		}
		from = max(from, logStart)
		i := sort.Search(len(recs), func(i int) bool { return recs[i].Offset >= from })
		for ; i < len(recs) && recs[i].Offset < to; i++ {
			if err := ctx.Err(); err != nil {
				yield(audit.Record{}, err)
				return
			}
			if !yield(recs[i], nil) {
				return
			}
		}
	}
}

// Topics lists the topics by name.
func (m *Memory) Topics(context.Context) ([]audit.TopicInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.TopicInfo
	for _, name := range slices.Sorted(maps.Keys(m.topics)) {
		out = append(out, m.topics[name].info)
	}
	return out, nil
}

// GroupOffsets returns a group's committed offsets.
func (m *Memory) GroupOffsets(_ context.Context, group string) (audit.GroupOffsets, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g, ok := m.groups[group]
	if !ok {
		return audit.GroupOffsets{}, fmt.Errorf("fetch offsets of %s: %w", group, audit.ErrGroupNotFound)
	}
	return g, nil
}

// Transactions lists transactional ids with the prefix.
func (m *Memory) Transactions(_ context.Context, prefix string) ([]audit.Transaction, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []audit.Transaction
	for _, t := range m.txns {
		if strings.HasPrefix(t.TransactionalID, prefix) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Producers returns producer state per partition.
func (m *Memory) Producers(_ context.Context, tps []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[audit.TopicPartition][]audit.Producer{}
	for _, tp := range tps {
		if ps, ok := m.producer[tp]; ok {
			out[tp] = ps
		}
	}
	return out, nil
}
