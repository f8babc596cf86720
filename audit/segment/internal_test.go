package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

func offsetKey(v int16, group, topic string, p int32) []byte {
	k := kmsg.OffsetCommitKey{Version: v, Group: group, Topic: topic, Partition: p}
	return k.AppendTo(nil)
}

func offsetValue(v int16, off int64, meta string) []byte {
	val := kmsg.NewOffsetCommitValue()
	val.Version, val.Offset, val.Metadata, val.LeaderEpoch, val.CommitTimestamp = v, off, meta, 3, 1000
	return val.AppendTo(nil)
}

func TestParseTxnLogRecord(t *testing.T) {
	key := (&kmsg.TxnMetadataKey{TransactionalID: "app-0_1"}).AppendTo(nil)
	v := kmsg.NewTxnMetadataValue()
	v.Version, v.ProducerID, v.ProducerEpoch, v.State, v.TimeoutMillis = 1, 7, 2, 1, 60000
	v.Topics = []kmsg.TxnMetadataValueTopic{{Topic: "out", Partitions: []int32{0, 3}}}
	v0 := v
	v0.Version = 0
	bad := v
	bad.State = 9
	for _, tc := range []struct {
		name       string
		key, value []byte
		err        error
	}{
		{"v0", key, v0.AppendTo(nil), nil},
		{"v1 (flexible, tagged fields)", key, v.AppendTo(nil), nil},
		{"tombstone", key, nil, nil},
		{"v2", key, append([]byte{0, 2}, v.AppendTo(nil)[2:]...), audit.ErrCorrupt},
		{"key v1", append([]byte{0, 1}, key[2:]...), nil, audit.ErrCorrupt},
		{"short key", key[:1], nil, ErrTruncated},
		{"value cut short", key, v.AppendTo(nil)[:12], audit.ErrCorrupt},
		{"unknown state", key, bad.AppendTo(nil), audit.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseTxnLogRecord(tc.key, tc.value)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || got.TransactionalID != "app-0_1" {
				t.Fatalf("%+v, %v", got, err)
			}
			if tc.value != nil && (got.Value == nil || got.Value.ProducerID != 7 || !reflect.DeepEqual(got.Value.Topics[0].Partitions, []int32{0, 3})) {
				t.Errorf("value %+v", got.Value)
			}
		})
	}
}

// metaRecord frames a metadata record body: frame version 1, apiKey,
// version.
func metaRecord(key, version uint64, body ...byte) []byte {
	b := binary.AppendUvarint(nil, 1)
	b = binary.AppendUvarint(b, key)
	b = binary.AppendUvarint(b, version)
	return append(b, body...)
}

func compactStr(s string) []byte { return append(binary.AppendUvarint(nil, uint64(len(s)+1)), s...) }

func TestParseMetadataRecord(t *testing.T) {
	id := make([]byte, 16)
	id[15] = 1
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	i32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	arr := func(vs ...int32) []byte {
		b := binary.AppendUvarint(nil, uint64(len(vs)+1))
		for _, v := range vs {
			b = append(b, i32(v)...)
		}
		return b
	}
	partition := func(version uint64) []byte {
		body := cat(i32(1), id, arr(1, 2, 3), arr(1, 2), arr(), arr(), i32(2), i32(5), i32(9))
		if version >= 1 {
			body = append(body, arr()...) // no directories
		}
		return metaRecord(3, version, append(body, 0)...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want MetadataRecord
		err  error
	}{
		{"topic", metaRecord(2, 0, cat(compactStr("orders"), id, []byte{0})...), MetadataRecord{APIKey: 2, TopicID: "00000000000000000000000000000001", Name: "orders", Partition: -1, Leader: -2, LeaderEpoch: -1}, nil},
		{"partition v0", partition(0), MetadataRecord{APIKey: 3, TopicID: "00000000000000000000000000000001", Partition: 1, Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 5}, nil},
		{"partition v1", partition(1), MetadataRecord{APIKey: 3, Version: 1, TopicID: "00000000000000000000000000000001", Partition: 1, Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 5}, nil},
		{"partition v2", partition(2), MetadataRecord{APIKey: 3, Version: 2, TopicID: "00000000000000000000000000000001", Partition: 1, Replicas: []int32{1, 2, 3}, Leader: 2, LeaderEpoch: 5}, nil},
		{"partition change: leader", metaRecord(5, 0, cat(i32(0), id, []byte{1, 1, 4}, i32(3))...), MetadataRecord{APIKey: 5, TopicID: "00000000000000000000000000000001", Partition: 0, Leader: 3, LeaderEpoch: -1}, nil},
		{"config", metaRecord(4, 0, cat([]byte{2}, compactStr("orders"), compactStr("retention.ms"), compactStr("1000"), []byte{0})...), MetadataRecord{APIKey: 4, Partition: -1, Leader: -2, LeaderEpoch: -1, ResourceType: 2, ResourceName: "orders", ConfigName: "retention.ms", ConfigValue: new("1000")}, nil},
		{"config deleted", metaRecord(4, 0, cat([]byte{2}, compactStr("orders"), compactStr("retention.ms"), []byte{0}, []byte{0})...), MetadataRecord{APIKey: 4, Partition: -1, Leader: -2, LeaderEpoch: -1, ResourceType: 2, ResourceName: "orders", ConfigName: "retention.ms"}, nil},
		{"remove topic", metaRecord(9, 0, cat(id, []byte{0})...), MetadataRecord{APIKey: 9, TopicID: "00000000000000000000000000000001", Partition: -1, Leader: -2, LeaderEpoch: -1}, nil},
		{"other type", metaRecord(12, 3, 1, 2, 3), MetadataRecord{APIKey: 12, Version: 3, Partition: -1, Leader: -2, LeaderEpoch: -1}, nil},
		{"frame version 2", append([]byte{2}, metaRecord(9, 0, cat(id, []byte{0})...)[1:]...), MetadataRecord{}, audit.ErrCorrupt},
		{"partition v3", metaRecord(3, 3), MetadataRecord{}, audit.ErrNotSupported},
		{"cut short", partition(1)[:20], MetadataRecord{}, ErrTruncated},
		{"trailing bytes", append(metaRecord(9, 0, cat(id, []byte{0})...), 7), MetadataRecord{}, audit.ErrCorrupt},
		{"empty", nil, MetadataRecord{}, audit.ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseMetadataRecord(tc.b)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("error %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// realInternalRecords returns the key and value of every record of the
// real fixtures' internal topic, as fuzz seeds.
func realInternalRecords(f *testing.F, topic string) [][2][]byte {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "real", "kafka-*-logdir"))
	var out [][2][]byte
	for _, dir := range dirs {
		d, err := OpenDirs(dir)
		if err != nil {
			f.Fatal(err)
		}
		n, err := d.Partitions(f.Context(), topic)
		if err != nil {
			continue
		}
		for p := range n {
			for rec, err := range d.Records(f.Context(), audit.TopicPartition{Topic: topic, Partition: p}, 0, 1<<62) {
				if err != nil {
					f.Fatal(err)
				}
				if !rec.Batch.Control {
					out = append(out, [2][]byte{rec.Key, rec.Value})
				}
			}
		}
	}
	return out
}

// FuzzParseTxnLogRecord: no panic, and a decoded state is one Kafka has.
func FuzzParseTxnLogRecord(f *testing.F) {
	for _, kv := range realInternalRecords(f, TransactionStateTopic) {
		f.Add(kv[0], kv[1])
	}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := ParseTxnLogRecord(key, value)
		if err == nil && r.Value != nil && (r.Value.State < 0 || r.Value.State > 7) {
			t.Fatalf("state %d accepted", r.Value.State)
		}
	})
}

// FuzzParseMetadataRecord: no panic, and what decodes decodes the same
// way twice.
func FuzzParseMetadataRecord(f *testing.F) {
	for _, kv := range realInternalRecords(f, ClusterMetadataTopic) {
		f.Add(kv[1])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseMetadataRecord(b)
		if err != nil {
			return
		}
		again, _ := ParseMetadataRecord(b)
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("two decodes differ: %+v, %+v", r, again)
		}
	})
}

// TestUnknowns: a ZooKeeper-era dir says its configs were in ZooKeeper; a
// KRaft dir says only static broker settings are unknown.
func TestUnknowns(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	if err := os.WriteFile(filepath.Join(root, "meta.properties"), []byte("#\nversion=0\nbroker.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, root)
	if u := d.Unknowns(t.Context()); len(u) != 1 || !strings.Contains(u[0], "ZooKeeper") || !strings.Contains(u[0], "config-risk checks did not run") {
		t.Errorf("ZooKeeper-era dir: %q", u)
	}
	ts, err := d.Topics(t.Context())
	if err != nil || len(ts) == 0 || ts[0].Configs != nil {
		t.Errorf("ZooKeeper-era topics %+v, %v: want the dirs' topics with no configs", ts, err)
	}
	for _, dir := range realLogDirs(t) {
		if u := mustOpen(t, dir).Unknowns(t.Context()); len(u) != 1 || !strings.Contains(u[0], "server.properties") {
			t.Errorf("%s: %q", dir, u)
		}
	}
}

// internalLog builds records of one partition, one batch each, in order.
type internalLog struct {
	tp   audit.TopicPartition
	recs []audit.Record
}

func (l *internalLog) add(key, value []byte, pid int64, txn bool) {
	off := int64(len(l.recs))
	b := audit.Batch{BaseOffset: off, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: "none", MaxTimestamp: 1000 + off}
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.Transactional = pid, 0, 0, txn
	}
	l.recs = append(l.recs, audit.Record{Topic: l.tp.Topic, Partition: l.tp.Partition, Offset: off, Key: key, Value: value, Timestamp: 1000 + off, Batch: b})
}

func (l *internalLog) marker(pid int64, typ audit.MarkerType) {
	off := int64(len(l.recs))
	b := audit.Batch{BaseOffset: off, ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1, Transactional: true, Control: true, Compression: "none", MaxTimestamp: 1000 + off}
	l.recs = append(l.recs, audit.Record{Topic: l.tp.Topic, Partition: l.tp.Partition, Offset: off, Timestamp: 1000 + off, Batch: b, Marker: &audit.Marker{Type: typ, CoordinatorEpoch: 0}})
}

// TestGroupReplay checks the coordinator's load rules on a synthetic
// __consumer_offsets partition: a plain commit after a transactional one
// that commits later wins (log position decides), an aborted commit never
// counts, a tombstone inside a transaction drops that pending commit, a
// commit whose transaction has no marker counts only when
// __transaction_state says PrepareCommit, and other groups' records are
// ignored.
func TestGroupReplay(t *testing.T) {
	const g = "app"
	tp := func(p int32) audit.TopicPartition { return audit.TopicPartition{Topic: "in", Partition: p} }
	co := &internalLog{tp: audit.TopicPartition{Topic: ConsumerOffsetsTopic, Partition: CoordinatorPartition(g, 1)}}
	commit := func(p int32, off int64, pid int64) {
		co.add(offsetKey(1, g, "in", p), offsetValue(3, off, fmt.Sprint(off)), pid, pid >= 0)
	}
	commit(0, 10, -1)                                                        // plain
	commit(0, 20, 7)                                                         // txn 7 …
	commit(0, 15, -1)                                                        // … a later plain commit
	co.marker(7, audit.MarkerCommit)                                         // txn 7 commits: 15 stays (later record)
	commit(1, 30, 8)                                                         // txn 8 …
	co.marker(8, audit.MarkerAbort)                                          // … aborted
	commit(2, 40, 9)                                                         // txn 9 …
	co.add(offsetKey(1, g, "in", 2), nil, 9, true)                           // … drops it again
	co.marker(9, audit.MarkerCommit)                                         //
	commit(3, 50, 11)                                                        // txn 11, PrepareCommit in the txn log
	commit(4, 60, 12)                                                        // txn 12, Ongoing
	co.add(offsetKey(1, "other", "in", 5), offsetValue(3, 1, ""), -1, false) // another group
	commit(6, 70, -1)                                                        //
	co.add(offsetKey(1, g, "in", 6), nil, -1, false)                         // deleted
	ts := &internalLog{tp: audit.TopicPartition{Topic: TransactionStateTopic, Partition: 0}}
	txnValue := func(pid int64, state int8) []byte {
		v := kmsg.NewTxnMetadataValue()
		v.ProducerID, v.State = pid, kmsg.TransactionState(state)
		return v.AppendTo(nil)
	}
	ts.add((&kmsg.TxnMetadataKey{TransactionalID: "app-0_0"}).AppendTo(nil), txnValue(11, 1), -1, false)
	ts.add((&kmsg.TxnMetadataKey{TransactionalID: "app-0_0"}).AppendTo(nil), txnValue(11, 2), -1, false) // PrepareCommit
	ts.add((&kmsg.TxnMetadataKey{TransactionalID: "app-0_1"}).AppendTo(nil), txnValue(12, 1), -1, false) // Ongoing
	ts.add((&kmsg.TxnMetadataKey{TransactionalID: "gone"}).AppendTo(nil), txnValue(13, 4), -1, false)
	ts.add((&kmsg.TxnMetadataKey{TransactionalID: "gone"}).AppendTo(nil), nil, -1, false) // expired
	root := t.TempDir()
	writeLogDir(t, root, append(co.recs, ts.recs...))
	d := mustOpen(t, root)
	gl, err := d.GroupLog(t.Context(), g)
	if err != nil {
		t.Fatal(err)
	}
	want := map[audit.TopicPartition]int64{tp(0): 15, tp(3): 50}
	if !maps.Equal(gl.Offsets, want) {
		t.Errorf("offsets %v, want %v", gl.Offsets, want)
	}
	if gl.Metadata[tp(0)] != "15" {
		t.Errorf("metadata %v", gl.Metadata)
	}
	wantPending := []PendingCommit{{TP: tp(3), Offset: 50, ProducerID: 11, At: 9, Committed: true}, {TP: tp(4), Offset: 60, ProducerID: 12, At: 10, Committed: false}}
	if !reflect.DeepEqual(gl.Pending, wantPending) {
		t.Errorf("pending %+v, want %+v", gl.Pending, wantPending)
	}
	txns, err := d.Transactions(t.Context(), "")
	if err != nil || len(txns) != 2 || txns[0].State != "PrepareCommit" || txns[1].State != "Ongoing" {
		t.Errorf("transactions %+v, %v; want app-0_0 PrepareCommit, app-0_1 Ongoing, the expired id gone", txns, err)
	}
	if _, err := d.GroupOffsets(t.Context(), "nobody"); !errors.Is(err, audit.ErrGroupNotFound) {
		t.Errorf("GroupOffsets(nobody) = %v", err)
	}
	if o, err := d.GroupOffsets(t.Context(), "other"); err != nil || o.Offsets[tp(5)] != 1 {
		t.Errorf("GroupOffsets(other) = %+v, %v", o, err)
	}
	// a group whose partition no dir holds: not supported (evidence
	// missing), not "not found" (no cut)
	root2 := t.TempDir()
	one := &internalLog{tp: audit.TopicPartition{Topic: ConsumerOffsetsTopic, Partition: 1}}
	one.add(offsetKey(1, "a", "in", 0), offsetValue(3, 1, ""), -1, false)
	writeLogDir(t, root2, one.recs)
	d2 := mustOpen(t, root2)
	if o, err := d2.GroupOffsets(t.Context(), "a"); err != nil || o.Offsets[tp(0)] != 1 {
		t.Errorf("GroupOffsets(a) = %+v, %v; want its offset from partition 1 of 2", o, err)
	}
	if _, err := d2.GroupOffsets(t.Context(), "b"); !errors.Is(err, audit.ErrNotSupported) || errors.Is(err, audit.ErrGroupNotFound) {
		t.Errorf("GroupOffsets(b), in partition 0 that no dir holds = %v; want ErrNotSupported", err)
	}
}

// TestMetadataReplay replays a synthetic metadata log: a topic deleted
// and created again under a new id keeps only the new one's partitions and
// configs, a deleted config falls back to the cluster-wide dynamic
// default, a partition change moves the replicas; a cluster whose metadata
// log never created __consumer_offsets has no group (not missing
// evidence), and no transactions.
func TestMetadataReplay(t *testing.T) {
	id := func(b byte) []byte { u := make([]byte, 16); u[15] = b; return u }
	i32 := func(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
	arr := func(vs ...int32) []byte {
		b := binary.AppendUvarint(nil, uint64(len(vs)+1))
		for _, v := range vs {
			b = append(b, i32(v)...)
		}
		return b
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	topic := func(name string, u []byte) []byte { return metaRecord(2, 0, cat(compactStr(name), u, []byte{0})...) }
	part := func(u []byte, p int32, replicas ...int32) []byte {
		return metaRecord(3, 1, cat(i32(p), u, arr(replicas...), arr(replicas...), arr(), arr(), i32(replicas[0]), i32(0), i32(0), arr(), []byte{0})...)
	}
	config := func(typ byte, res, name string, value *string) []byte {
		v := []byte{0}
		if value != nil {
			v = compactStr(*value)
		}
		return metaRecord(4, 0, cat([]byte{typ}, compactStr(res), compactStr(name), v, []byte{0})...)
	}
	s := func(v string) *string { return &v }
	ml := &internalLog{tp: audit.TopicPartition{Topic: ClusterMetadataTopic, Partition: 0}}
	for _, v := range [][]byte{
		topic("orders", id(1)), part(id(1), 0, 1, 2, 3), part(id(1), 1, 2, 3, 1),
		config(2, "orders", "cleanup.policy", s("compact")),
		metaRecord(9, 0, cat(id(1), []byte{0})...), // deleted
		topic("orders", id(2)), part(id(2), 0, 1, 2),
		config(2, "orders", "retention.ms", s("1000")),
		config(2, "orders", "retention.ms", nil), // deleted: the default stands
		config(4, "", "log.retention.ms", s("5000")),
		config(4, "", "min.insync.replicas", s("2")),
		config(4, "1", "min.insync.replicas", s("1")),                           // one broker's: not a cluster default
		metaRecord(5, 0, cat(i32(0), id(2), []byte{1, 2, 13}, arr(1, 2, 3))...), // partition change: 3 replicas
		metaRecord(12, 0, 0),                                                    // a no-op record
	} {
		ml.add(nil, v, -1, false)
	}
	root := t.TempDir()
	writeLogDir(t, root, ml.recs)
	d := mustOpen(t, root)
	ts, err := d.Topics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := []audit.TopicInfo{{Name: "orders", Partitions: 1, ReplicationFactor: 3, Configs: map[string]string{"retention.ms": "5000", "min.insync.replicas": "2"}}}
	if !reflect.DeepEqual(ts, want) {
		t.Errorf("topics %+v, want %+v", ts, want)
	}
	if _, err := d.GroupOffsets(t.Context(), "app"); !errors.Is(err, audit.ErrGroupNotFound) {
		t.Errorf("GroupOffsets with no __consumer_offsets ever = %v, want ErrGroupNotFound", err)
	}
	if txns, err := d.Transactions(t.Context(), ""); err != nil || len(txns) != 0 {
		t.Errorf("Transactions with no __transaction_state ever = %+v, %v", txns, err)
	}
}
