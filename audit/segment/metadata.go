package segment

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kaudit/kaudit/audit"
)

// Metadata record types (the apiKey of a KRaft metadata record's frame)
// that the audit reads.
const (
	MetaTopicRecord           = 2
	MetaPartitionRecord       = 3
	MetaConfigRecord          = 4
	MetaPartitionChangeRecord = 5
	MetaRemoveTopicRecord     = 9
)

// Config resource types of ConfigRecord.
const (
	configResourceTopic  = 2
	configResourceBroker = 4
)

// MetadataRecord is one decoded KRaft metadata record: its frame (version
// 1: apiKey, record version) and, for the types the audit reads, its
// fields. Other types carry only the frame.
type MetadataRecord struct {
	APIKey  int16
	Version int16
	// TopicRecord, RemoveTopicRecord, PartitionRecord, PartitionChangeRecord
	TopicID string // hex
	Name    string // TopicRecord
	// PartitionRecord, PartitionChangeRecord (Replicas nil and Leader -2
	// in a change that leaves them)
	Partition   int32
	Replicas    []int32
	Leader      int32
	LeaderEpoch int32 // PartitionRecord; -1 in a change
	// ConfigRecord
	ResourceType int8
	ResourceName string
	ConfigName   string
	ConfigValue  *string // nil: the config was deleted
}

// ParseMetadataRecord decodes a KRaft metadata record value: an unsigned
// varint frame version (1), the record's apiKey and version, then the
// record in the flexible encoding. It decodes TopicRecord (v0),
// PartitionRecord (v0-2), ConfigRecord (v0), PartitionChangeRecord (v0-2)
// and RemoveTopicRecord (v0); other types return their frame only. Errors
// wrap audit.ErrCorrupt.
func ParseMetadataRecord(b []byte) (MetadataRecord, error) {
	r := flexReader{b: b}
	frame := r.uvarint()
	key := r.uvarint()
	ver := r.uvarint()
	if r.err != nil {
		return MetadataRecord{}, fmt.Errorf("metadata record frame: %w", r.err)
	}
	if frame != 1 {
		return MetadataRecord{}, fmt.Errorf("metadata record frame version %d, want 1: %w", frame, audit.ErrCorrupt)
	}
	if key > 1<<12 || ver > 1<<8 {
		return MetadataRecord{}, fmt.Errorf("metadata record type %d version %d: %w", key, ver, audit.ErrCorrupt)
	}
	m := MetadataRecord{APIKey: int16(key), Version: int16(ver), Partition: -1, Leader: -2, LeaderEpoch: -1}
	maxVersion := map[int16]int16{MetaTopicRecord: 0, MetaPartitionRecord: 2, MetaConfigRecord: 0, MetaPartitionChangeRecord: 2, MetaRemoveTopicRecord: 0}
	if mv, ok := maxVersion[m.APIKey]; ok && m.Version > mv {
		return m, fmt.Errorf("metadata record type %d version %d, want 0-%d: %w", m.APIKey, m.Version, mv, audit.ErrNotSupported)
	}
	switch m.APIKey {
	case MetaTopicRecord:
		m.Name = r.compactString()
		m.TopicID = r.uuid()
		r.tags(nil)
	case MetaRemoveTopicRecord:
		m.TopicID = r.uuid()
		r.tags(nil)
	case MetaPartitionRecord:
		m.Partition = r.int32()
		m.TopicID = r.uuid()
		m.Replicas = r.int32s()
		r.int32s() // isr
		r.int32s() // removing
		r.int32s() // adding
		m.Leader = r.int32()
		m.LeaderEpoch = r.int32()
		r.int32() // partition epoch
		if m.Version >= 1 {
			r.uuids() // directories
		}
		r.tags(nil)
	case MetaPartitionChangeRecord:
		m.Partition = r.int32()
		m.TopicID = r.uuid()
		r.tags(func(tag uint64, f *flexReader) {
			switch tag {
			case 1:
				m.Leader = f.int32()
			case 2:
				m.Replicas = f.int32s()
				if m.Replicas == nil {
					m.Replicas = []int32{} // present, empty
				}
			}
		})
	case MetaConfigRecord:
		m.ResourceType = r.int8()
		m.ResourceName = r.compactString()
		m.ConfigName = r.compactString()
		m.ConfigValue = r.compactNullableString()
		r.tags(nil)
	default:
		return m, nil
	}
	if r.err != nil {
		return m, fmt.Errorf("metadata record type %d v%d: %w", m.APIKey, m.Version, r.err)
	}
	if len(r.b) != 0 {
		return m, fmt.Errorf("metadata record type %d v%d: %d bytes after it: %w", m.APIKey, m.Version, len(r.b), audit.ErrCorrupt)
	}
	return m, nil
}

// flexReader reads Kafka's flexible encoding; the first error sticks.
type flexReader struct {
	b   []byte
	err error
}

func (r *flexReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
	r.b = nil
}

func (r *flexReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%d bytes wanted, %d left: %w", n, len(r.b), ErrTruncated)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *flexReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<31 {
		r.fail("bad unsigned varint: %w", audit.ErrCorrupt)
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *flexReader) int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *flexReader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *flexReader) uuid() string {
	return hex.EncodeToString(r.take(16))
}

func (r *flexReader) compactNullableString() *string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return nil
	}
	s := string(r.take(int(n - 1)))
	if r.err != nil {
		return nil
	}
	return &s
}

func (r *flexReader) compactString() string {
	s := r.compactNullableString()
	if s == nil {
		if r.err == nil {
			r.fail("null string where one is required: %w", audit.ErrCorrupt)
		}
		return ""
	}
	return *s
}

// arrayLen reads a compact array length; -1 is null.
func (r *flexReader) arrayLen(elem int) int {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return -1
	}
	if int(n-1)*elem > len(r.b) {
		r.fail("array of %d elements in %d bytes: %w", n-1, len(r.b), ErrTruncated)
		return -1
	}
	return int(n - 1)
}

func (r *flexReader) int32s() []int32 {
	n := r.arrayLen(4)
	if n < 0 {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

func (r *flexReader) uuids() {
	if n := r.arrayLen(16); n > 0 {
		r.take(16 * n)
	}
}

// tags reads a tagged-field section, calling fn with a reader over each
// field's bytes (fn nil skips them all).
func (r *flexReader) tags(fn func(tag uint64, f *flexReader)) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		b := r.take(int(size))
		if r.err != nil || fn == nil {
			continue
		}
		f := &flexReader{b: b}
		fn(tag, f)
		if f.err != nil {
			r.fail("tagged field %d: %w", tag, f.err)
		}
	}
}

// MetadataTopic is a topic as the KRaft metadata log describes it.
type MetadataTopic struct {
	Name       string
	ID         string
	Partitions int32
	// Replicas and Leaders are by partition: the replica set and the
	// leader (-1: none) the last record set.
	Replicas map[int32][]int32
	Leaders  map[int32]int32
	Configs  map[string]string // the topic's own overrides
}

// ClusterMetadata is the cluster state replayed from the KRaft metadata log
// found in the log dirs: the latest snapshot (.checkpoint) then the log
// after it.
type ClusterMetadata struct {
	// Replica is the __cluster_metadata-0 dir read; Snapshot the checkpoint
	// file the replay started from ("" when it started at offset 0); End
	// the offset after the last record applied.
	Replica  string
	Snapshot string
	End      int64
	topics   map[string]*MetadataTopic
	// Defaults are the cluster-wide dynamic broker configs (ConfigRecord
	// of the broker resource ""), by name.
	Defaults map[string]string
}

// Topic returns a topic by name.
func (m *ClusterMetadata) Topic(name string) (*MetadataTopic, bool) {
	t, ok := m.topics[name]
	return t, ok
}

// Topics lists the topics, by name.
func (m *ClusterMetadata) Topics() []*MetadataTopic {
	out := make([]*MetadataTopic, 0, len(m.topics))
	for _, t := range m.topics {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *MetadataTopic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// metadataState builds a ClusterMetadata from records in log order.
type metadataState struct {
	byID   map[string]*MetadataTopic
	topics map[string]*MetadataTopic
	topicC map[string]map[string]string // configs by topic name, which may come before the topic
	brokC  map[string]string
}

func newMetadataState() *metadataState {
	return &metadataState{byID: map[string]*MetadataTopic{}, topics: map[string]*MetadataTopic{}, topicC: map[string]map[string]string{}, brokC: map[string]string{}}
}

func (s *metadataState) apply(m MetadataRecord) {
	switch m.APIKey {
	case MetaTopicRecord:
		t := &MetadataTopic{Name: m.Name, ID: m.TopicID, Replicas: map[int32][]int32{}, Leaders: map[int32]int32{}}
		s.byID[m.TopicID], s.topics[m.Name] = t, t
	case MetaRemoveTopicRecord:
		if t, ok := s.byID[m.TopicID]; ok {
			delete(s.byID, m.TopicID)
			delete(s.topics, t.Name)
			delete(s.topicC, t.Name)
		}
	case MetaPartitionRecord:
		if t, ok := s.byID[m.TopicID]; ok && m.Partition >= 0 {
			t.Replicas[m.Partition], t.Leaders[m.Partition] = m.Replicas, m.Leader
			t.Partitions = max(t.Partitions, m.Partition+1)
		}
	case MetaPartitionChangeRecord:
		if t, ok := s.byID[m.TopicID]; ok {
			if m.Replicas != nil {
				t.Replicas[m.Partition] = m.Replicas
			}
			if m.Leader != -2 {
				t.Leaders[m.Partition] = m.Leader
			}
		}
	case MetaConfigRecord:
		var cs map[string]string
		switch {
		case m.ResourceType == configResourceTopic:
			cs = s.topicC[m.ResourceName]
			if cs == nil {
				cs = map[string]string{}
				s.topicC[m.ResourceName] = cs
			}
		case m.ResourceType == configResourceBroker && m.ResourceName == "":
			cs = s.brokC
		default:
			return
		}
		if m.ConfigValue == nil {
			delete(cs, m.ConfigName)
		} else {
			cs[m.ConfigName] = *m.ConfigValue
		}
	}
}

func (s *metadataState) result() *ClusterMetadata {
	for name, t := range s.topics {
		t.Configs = s.topicC[name]
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
	}
	return &ClusterMetadata{topics: s.topics, Defaults: s.brokC}
}

var checkpointFileRe = regexp.MustCompile(`^([0-9]{20})-([0-9]{10})\.checkpoint$`)

// metadataCache holds the replay, done once per Dir (a cancelled replay
// is not kept).
type metadataCache struct {
	mu   sync.Mutex
	done bool
	m    *ClusterMetadata
	err  error
}

// offlineState is what a Dir replays once from its internal topics.
type offlineState struct {
	meta  metadataCache
	clock clockCache
}

// Metadata replays the KRaft metadata log of the dirs (the
// __cluster_metadata-0 replica read first: latest epoch, longest log). It
// returns nil and no error when no dir holds one (ZooKeeper-era log dirs,
// or brokers whose metadata.log.dir is elsewhere).
func (d *Dir) Metadata(ctx context.Context) (*ClusterMetadata, error) {
	mc := &d.offline.meta
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if !mc.done {
		m, err := d.replayMetadata(ctx)
		if err != nil && ctx.Err() != nil {
			return nil, err
		}
		mc.m, mc.err, mc.done = m, err, true
	}
	return mc.m, mc.err
}

func (d *Dir) replayMetadata(ctx context.Context) (*ClusterMetadata, error) {
	tp := audit.TopicPartition{Topic: ClusterMetadataTopic, Partition: 0}
	if len(d.replicas[tp]) == 0 {
		return nil, nil
	}
	r, err := d.primary(tp)
	if err != nil {
		return nil, fmt.Errorf("read the metadata log: %w", err)
	}
	s := newMetadataState()
	snap, end, err := latestCheckpoint(r.path)
	if err != nil {
		return nil, err
	}
	from := int64(0)
	if snap != "" {
		if err := replaySnapshot(ctx, snap, s); err != nil {
			return nil, err
		}
		from = end
	}
	if from < r.logStart {
		return nil, fmt.Errorf("read the metadata log: it starts at offset %d and no snapshot covers the offsets before: %w", r.logStart, audit.ErrCorrupt)
	}
	last := from
	for rec, err := range r.records(ctx, from, r.logEnd) {
		if err != nil {
			return nil, fmt.Errorf("read the metadata log: %w", err)
		}
		last = rec.Offset + 1
		if rec.Batch.Control || rec.Value == nil {
			continue
		}
		m, err := ParseMetadataRecord(rec.Value)
		if err != nil {
			return nil, fmt.Errorf("read the metadata log: %s at offset %d: %w", tp, rec.Offset, err)
		}
		s.apply(m)
	}
	out := s.result()
	out.Replica, out.Snapshot, out.End = r.path, snap, max(last, from)
	return out, nil
}

// latestCheckpoint finds the metadata snapshot with the highest end offset
// in a __cluster_metadata-0 dir: its path and end offset ("" when none).
func latestCheckpoint(dir string) (string, int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", 0, fmt.Errorf("list the metadata log: %w", err)
	}
	best, end := "", int64(-1)
	for _, e := range entries {
		m := checkpointFileRe.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		if o, err := strconv.ParseInt(m[1], 10, 64); err == nil && o > end {
			best, end = filepath.Join(dir, e.Name()), o
		}
	}
	return best, max(end, 0), nil
}

// replaySnapshot applies the records of a metadata snapshot file: record
// batches like a segment's, framed by control records.
func replaySnapshot(ctx context.Context, path string, s *metadataState) error {
	b, err := ReadRegular(path, MaxMetaFileBytes)
	if err != nil {
		return fmt.Errorf("read metadata snapshot: %w", err)
	}
	tp := audit.TopicPartition{Topic: ClusterMetadataTopic, Partition: 0}
	for pos := 0; pos < len(b); {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("read metadata snapshot: %w", err)
		}
		h, recs, n, err := DecodeBatch(b[pos:], tp)
		if err != nil {
			return &FileError{File: path, Pos: int64(pos), Err: err}
		}
		pos += n
		if h.Control {
			continue
		}
		for _, rec := range recs {
			if rec.Value == nil {
				continue
			}
			m, err := ParseMetadataRecord(rec.Value)
			if err != nil {
				return &FileError{File: path, Pos: int64(pos - n), Err: err}
			}
			s.apply(m)
		}
	}
	return nil
}

// brokerDefaults maps the audited topic configs to the cluster-wide
// dynamic broker configs that stand for them when the topic sets none.
var brokerDefaults = map[string]string{
	"cleanup.policy":                 "log.cleanup.policy",
	"retention.ms":                   "log.retention.ms",
	"retention.bytes":                "log.retention.bytes",
	"min.insync.replicas":            "min.insync.replicas",
	"unclean.leader.election.enable": "unclean.leader.election.enable",
	"segment.bytes":                  "log.segment.bytes",
	"segment.ms":                     "log.roll.ms",
	"min.compaction.lag.ms":          "log.cleaner.min.compaction.lag.ms",
	"delete.retention.ms":            "log.cleaner.delete.retention.ms",
}

// Topics lists the topics. With a KRaft metadata log in the dirs, the
// layout (partitions, replication factor) and the configs come from it:
// each topic's own overrides, else the cluster-wide dynamic broker default,
// for the configs an audit reads. Static broker settings (server.properties)
// are in no log dir: a config neither sets is absent. Topics found only as
// partition dirs (no metadata log, or a topic it does not list) come from
// the dirs with no configs, and the replication factor the most replicas
// found for one partition. Internal topics are left out.
func (d *Dir) Topics(ctx context.Context) ([]audit.TopicInfo, error) {
	m, err := d.Metadata(ctx)
	if err != nil {
		return nil, fmt.Errorf("topics from log dirs: %w", err)
	}
	var out []audit.TopicInfo
	seen := map[string]bool{}
	if m != nil {
		for _, t := range m.Topics() {
			if internalTopic(t.Name) {
				continue
			}
			ti := audit.TopicInfo{Name: t.Name, Partitions: t.Partitions, Configs: map[string]string{}}
			for _, rs := range t.Replicas {
				ti.ReplicationFactor = max(ti.ReplicationFactor, int16(min(len(rs), 1<<14)))
			}
			for k, bk := range brokerDefaults {
				if v, ok := t.Configs[k]; ok {
					ti.Configs[k] = v
				} else if v, ok := m.Defaults[bk]; ok {
					ti.Configs[k] = v
				}
			}
			out = append(out, ti)
			seen[t.Name] = true
		}
	}
	for name, ps := range d.topics {
		if seen[name] || internalTopic(name) {
			continue
		}
		ti := audit.TopicInfo{Name: name, Partitions: ps[len(ps)-1] + 1}
		for _, p := range ps {
			ti.ReplicationFactor = max(ti.ReplicationFactor, int16(len(d.replicas[audit.TopicPartition{Topic: name, Partition: p}])))
		}
		out = append(out, ti)
	}
	slices.SortFunc(out, func(a, b audit.TopicInfo) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

func internalTopic(name string) bool {
	return name == ConsumerOffsetsTopic || name == TransactionStateTopic || strings.HasPrefix(name, ClusterMetadataTopic)
}

// Unknowns says what an audit of the dirs cannot know, for a report's
// notes: configs that no log dir holds, and, without a KRaft metadata log
// (ZooKeeper-era dirs), the configs and layout ZooKeeper held.
func (d *Dir) Unknowns(ctx context.Context) []string {
	m, err := d.Metadata(ctx)
	switch {
	case err != nil:
		return []string{fmt.Sprintf("topic configs and layout: the metadata log cannot be read (%v): configs are unknown and replication factors are the replicas found", err)}
	case m == nil:
		where := "no KRaft metadata log (__cluster_metadata-0) in the log dirs"
		if d.zkEra() {
			where = "ZooKeeper-era log dirs (meta.properties version 0): topic configs, replica assignments and the partition leaders were in ZooKeeper, not in the log dirs"
		}
		return []string{where + ": topic configs are unknown, so the config-risk checks did not run; replication factors are the replicas found in the dirs; partition counts are one more than the highest partition dir found"}
	}
	return append([]string{"topic configs from the KRaft metadata log: each topic's overrides and the cluster-wide dynamic defaults; a setting made only in a broker's server.properties is in no log dir and is not known"}, d.staleHWs()...)
}

// CleanShutdownFile is the marker a broker leaves in a log dir it shut
// down cleanly.
const CleanShutdownFile = ".kafka_cleanshutdown"

// staleHWs says, for each log dir a broker did not shut down cleanly, on
// how many partitions read from it the checkpointed high watermark is
// below the log end: the checkpoint is flushed every
// replica.high.watermark.checkpoint.interval.ms (5 s by default), so the
// records written since are read as above the HW.
func (d *Dir) staleHWs() []string {
	var out []string
	for _, root := range d.dirs {
		if _, err := os.Stat(filepath.Join(root, CleanShutdownFile)); err == nil {
			continue
		}
		parts, recs := 0, int64(0)
		for _, rs := range d.replicas {
			r := rs[0]
			if r.err != nil || filepath.Dir(r.path) != filepath.Clean(root) || r.hw >= r.logEnd {
				continue
			}
			parts++
			recs += r.logEnd - r.hw
		}
		if parts > 0 {
			out = append(out, fmt.Sprintf("log dir %s was not shut down cleanly (no %s): on %d partitions read from it, %d offsets lie between the high watermark of its last checkpoint and the log end; they are read as above the high watermark, though the broker may have acknowledged them after that checkpoint", root, CleanShutdownFile, parts, recs))
		}
	}
	return out
}

// zkEra reports whether a log dir's meta.properties is version 0 (a
// ZooKeeper-mode broker's).
func (d *Dir) zkEra() bool {
	for _, root := range d.dirs {
		b, err := ReadRegular(filepath.Join(root, "meta.properties"), maxPropertiesBytes)
		if err != nil {
			continue
		}
		for l := range strings.Lines(string(b)) {
			if strings.TrimSpace(l) == "version=0" {
				return true
			}
		}
	}
	return false
}

// placedElsewhere explains a partition no dir holds when the metadata log
// (if already replayed) lists it: the topic exists, its replicas are on
// brokers whose log dirs were not given. It returns nil otherwise.
func (d *Dir) placedElsewhere(tp audit.TopicPartition) error {
	mc := &d.offline.meta
	if !mc.mu.TryLock() {
		return nil // the replay itself is asking
	}
	defer mc.mu.Unlock()
	if !mc.done || mc.m == nil {
		return nil
	}
	t, ok := mc.m.Topic(tp.Topic)
	if !ok || tp.Partition < 0 || tp.Partition >= t.Partitions {
		return nil
	}
	return fmt.Errorf("read %s: in none of the log dirs; the metadata log places its replicas on brokers %v (add their log dirs): %w", tp, t.Replicas[tp.Partition], audit.ErrPartitionNotFound)
}

// metadataPartitions is the topic's partition count in the metadata log,
// when the dirs hold one that lists it.
func (d *Dir) metadataPartitions(ctx context.Context, topic string) (int32, bool) {
	m, err := d.Metadata(ctx)
	if err != nil || m == nil {
		return 0, false
	}
	t, ok := m.Topic(topic)
	if !ok || t.Partitions <= 0 {
		return 0, false
	}
	return t.Partitions, true
}
