package kafka

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

// txnScenario writes, on one partition of topic "orders":
//
//	plain records from a non-idempotent producer,
//	a committed transaction of 3 records in one batch (app-0),
//	an aborted transaction of 2 records (app-0),
//	interleaved transactions of app-1 (aborted) and app-0 (committed),
//	records from an idempotent, non-transactional producer (zstd),
//	an open transaction of app-2 that is never ended.
//
// It returns the expected outcome of every data offset.
type scenario struct {
	outcome  map[int64]audit.Outcome // data offsets; "" for non-transactional
	key      map[int64]string
	value    map[int64]string
	openFrom int64              // first offset of the open transaction: the LSO
	aborted  []audit.AbortedTxn // the aborted transactions, by first offset
	pids     map[string]int64
	topic    string // the topic written
	prefix   string // the transactional ids' prefix
}

func writeScenario(t *testing.T, cl *kgo.Client, txn func(id string) *kgo.Client, plain, idem *kgo.Client, topic, prefix string) scenario {
	t.Helper()
	sc := scenario{outcome: map[int64]audit.Outcome{}, key: map[int64]string{}, value: map[int64]string{}, pids: map[string]int64{},
		topic: topic, prefix: prefix}
	note := func(rs []*kgo.Record, o audit.Outcome) {
		for _, r := range rs {
			sc.outcome[r.Offset] = o
			sc.key[r.Offset] = string(r.Key)
			sc.value[r.Offset] = string(r.Value)
		}
	}
	createTopic(t, cl, topic, 2, nil)

	note(produce(t, plain, topic, 0, "p1", "v", "p2", "v"), "")

	a := txn(prefix + "0")
	begin(t, a)
	rs := produce(t, a, topic, 0, "c1", "v", "c2", "v", "c3", "v")
	end(t, a, kgo.TryCommit)
	note(rs, audit.OutcomeCommitted)
	sc.pids["0"] = rs[0].ProducerID

	begin(t, a)
	rs = produce(t, a, topic, 0, "a1", "v", "a2", "v")
	note(rs, audit.OutcomeAborted)
	end(t, a, kgo.TryAbort)
	sc.aborted = append(sc.aborted, audit.AbortedTxn{ProducerID: rs[0].ProducerID, FirstOffset: rs[0].Offset})

	b := txn(prefix + "1")
	begin(t, b)
	begin(t, a)
	rs = produce(t, b, topic, 0, "b1", "v")
	note(rs, audit.OutcomeAborted)
	sc.pids["1"] = rs[0].ProducerID
	sc.aborted = append(sc.aborted, audit.AbortedTxn{ProducerID: rs[0].ProducerID, FirstOffset: rs[0].Offset})
	note(produce(t, a, topic, 0, "i1", "v"), audit.OutcomeCommitted)
	note(produce(t, b, topic, 0, "b2", "v"), audit.OutcomeAborted)
	end(t, a, kgo.TryCommit)
	end(t, b, kgo.TryAbort)

	// Compressible values, so that the producer does compress them.
	long := strings.Repeat("v", 2000)
	note(produce(t, idem, topic, 0, "n1", long, "n2", long), "")

	o := txn(prefix + "2")
	begin(t, o)
	rs = produce(t, o, topic, 0, "o1", "v", "o2", "v")
	note(rs, audit.OutcomeOpen)
	sc.openFrom = rs[0].Offset
	sc.pids["2"] = rs[0].ProducerID
	// Data after the open transaction's start stays above the LSO.
	note(produce(t, plain, topic, 0, "p3", "v"), "")
	return sc
}

func newScenario(t *testing.T) (*Source, scenario) {
	_, s, sc := newScenarioCluster(t)
	return s, sc
}

// newScenarioCluster is newScenario with the cluster that holds it.
func newScenarioCluster(t *testing.T) (*kfake.Cluster, *Source, scenario) {
	c := newCluster(t)
	admin := newClient(t, c)
	txn := func(id string) *kgo.Client {
		return newClient(t, c, kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute))
	}
	plain := newClient(t, c, kgo.DisableIdempotentWrite())
	idem := newClient(t, c, kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	sc := writeScenario(t, admin, txn, plain, idem, "orders", "app-")
	return c, openSource(t, c, nil), sc
}

// TestRealBroker runs the transaction scenario against a real cluster when
// KAUDIT_TEST_BROKERS names one (host:port,…), e.g. the drill's Kafka 3.6.
func TestRealBroker(t *testing.T) {
	brokers := os.Getenv("KAUDIT_TEST_BROKERS")
	if brokers == "" {
		t.Skip("KAUDIT_TEST_BROKERS is not set")
	}
	seeds := strings.Split(brokers, ",")
	client := func(opts ...kgo.Opt) *kgo.Client {
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...), kgo.ProducerLinger(20 * time.Millisecond),
			kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	run := fmt.Sprint(time.Now().UnixNano())
	txn := func(id string) *kgo.Client {
		return client(kgo.TransactionalID(id), kgo.TransactionTimeout(time.Minute))
	}
	sc := writeScenario(t, client(), txn, client(kgo.DisableIdempotentWrite()),
		client(kgo.ProducerBatchCompression(kgo.ZstdCompression())), "kaudit-real-"+run, "kaudit-real-"+run+"-")
	s, err := Open(t.Context(), Config{Bootstrap: seeds, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkScenario(t, s, sc)
}

func TestRecordsTransactions(t *testing.T) {
	s, sc := newScenario(t)
	checkScenario(t, s, sc)
}

func checkScenario(t *testing.T, s *Source, sc scenario) {
	tp := audit.TopicPartition{Topic: sc.topic, Partition: 0}

	po, err := s.Offsets(t.Context(), tp)
	if err != nil {
		t.Fatal(err)
	}
	lastData := slices.Max(slices.Collect(mapsKeys(sc.outcome)))
	if po.LogStart != 0 || po.LSO != sc.openFrom || po.HW != lastData+1 {
		t.Errorf("offsets = %+v, want log start 0, LSO %d, HW %d", po, sc.openFrom, lastData+1)
	}

	recs := collect(t, s.Records(t.Context(), tp, 0, -1))
	if int64(len(recs)) != po.HW {
		t.Fatalf("got %d records, want one per offset up to HW %d: %v", len(recs), po.HW, offsetsOf(recs))
	}
	pending := map[int64]audit.Outcome{} // producer id -> outcome of its open txn
	markers := map[audit.MarkerType]int{}
	lastEpoch := map[int64]int16{}
	for i, r := range recs {
		if r.Offset != int64(i) || r.Topic != sc.topic || r.Partition != 0 {
			t.Fatalf("record %d is %s@%d", i, r.TP(), r.Offset)
		}
		b := r.Batch
		if r.Offset < b.BaseOffset || r.Offset > b.LastOffset() {
			t.Errorf("offset %d outside its batch [%d, %d]", r.Offset, b.BaseOffset, b.LastOffset())
		}
		if b.MaxTimestamp <= 0 || r.Timestamp <= 0 || r.Timestamp > b.MaxTimestamp {
			t.Errorf("offset %d: timestamp %d, batch max %d", r.Offset, r.Timestamp, b.MaxTimestamp)
		}
		if b.LogAppendTime {
			t.Errorf("offset %d: LogAppendTime, want CreateTime", r.Offset)
		}
		want, isData := sc.outcome[r.Offset]
		if isData == r.IsControl() {
			t.Fatalf("offset %d: control=%v, want data=%v", r.Offset, r.IsControl(), isData)
		}
		if !isData {
			if r.Marker == nil {
				t.Fatalf("offset %d: control record without a marker", r.Offset)
			}
			o, ok := pending[b.ProducerID]
			if !ok {
				t.Fatalf("offset %d: marker of producer %d with no open transaction", r.Offset, b.ProducerID)
			}
			wantType := audit.MarkerAbort
			if o == audit.OutcomeCommitted {
				wantType = audit.MarkerCommit
			}
			if r.Marker.Type != wantType || r.Marker.CoordinatorEpoch < 0 || !b.Transactional || b.LastOffsetDelta != 0 {
				t.Errorf("offset %d: marker %+v batch %+v, want %v", r.Offset, *r.Marker, b, wantType)
			}
			markers[r.Marker.Type]++
			delete(pending, b.ProducerID)
			continue
		}
		if string(r.Key) != sc.key[r.Offset] || string(r.Value) != sc.value[r.Offset] || r.Marker != nil {
			t.Errorf("offset %d: key %q value %q, want %q", r.Offset, r.Key, r.Value, sc.key[r.Offset])
		}
		switch {
		case want == "" && strings.HasPrefix(sc.key[r.Offset], "p"):
			if b.ProducerID != -1 || b.ProducerEpoch != -1 || b.Transactional {
				t.Errorf("offset %d: plain producer batch %+v", r.Offset, b)
			}
		case want == "":
			if b.ProducerID < 0 || b.Transactional || b.Compression != "zstd" || b.BaseSequence != 0 {
				t.Errorf("offset %d: idempotent zstd batch %+v", r.Offset, b)
			}
		default:
			if !b.Transactional || b.ProducerID < 0 || b.Compression != "none" {
				t.Errorf("offset %d: transactional batch %+v", r.Offset, b)
			}
			if e, ok := lastEpoch[b.ProducerID]; ok && b.ProducerEpoch < e {
				t.Errorf("offset %d: epoch went back from %d to %d", r.Offset, e, b.ProducerEpoch)
			}
			lastEpoch[b.ProducerID] = b.ProducerEpoch
			pending[b.ProducerID] = want
		}
	}
	if markers[audit.MarkerCommit] != 2 || markers[audit.MarkerAbort] != 2 {
		t.Errorf("markers = %v, want 2 COMMIT and 2 ABORT", markers)
	}
	if len(pending) != 1 || pending[sc.pids["2"]] != audit.OutcomeOpen {
		t.Errorf("transactions left open = %v, want only the open one", pending)
	}

	t.Run("batch header", func(t *testing.T) {
		// The committed transaction's 3 records went in one batch.
		var c1 audit.Record
		for _, r := range recs {
			if string(r.Key) == "c1" {
				c1 = r
			}
		}
		b := c1.Batch
		if b.BaseOffset != c1.Offset || b.LastOffsetDelta != 2 || b.BaseSequence != 0 || b.ProducerID != sc.pids["0"] {
			t.Errorf("batch of c1 = %+v, want base %d, last delta 2, base sequence 0, producer %d", b, c1.Offset, sc.pids["0"])
		}
	})

	t.Run("range", func(t *testing.T) {
		got := offsetsOf(collect(t, s.Records(t.Context(), tp, 3, 6)))
		if !slices.Equal(got, []int64{3, 4, 5}) {
			t.Errorf("[3,6) = %v", got)
		}
		if got := collect(t, s.Records(t.Context(), tp, 5, 5)); len(got) != 0 {
			t.Errorf("[5,5) = %v", offsetsOf(got))
		}
		if got := collect(t, s.Records(t.Context(), tp, po.HW, -1)); len(got) != 0 {
			t.Errorf("[HW,) = %v", offsetsOf(got))
		}
		got = offsetsOf(collect(t, s.Records(t.Context(), tp, po.HW-1, po.HW+100)))
		if !slices.Equal(got, []int64{po.HW - 1}) {
			t.Errorf("to beyond HW = %v", got)
		}
	})

	t.Run("break early", func(t *testing.T) {
		n := 0
		for _, err := range s.Records(t.Context(), tp, 0, -1) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 2 {
				break
			}
		}
	})

	t.Run("read committed", func(t *testing.T) {
		got := collect(t, s.ReadCommitted(t.Context(), tp, 0, -1))
		var want []int64
		for off, o := range sc.outcome {
			if off < sc.openFrom && (o == "" || o == audit.OutcomeCommitted) {
				want = append(want, off)
			}
		}
		slices.Sort(want)
		if !slices.Equal(offsetsOf(got), want) {
			t.Errorf("read committed = %v, want %v", offsetsOf(got), want)
		}
		for _, r := range got {
			if r.IsControl() {
				t.Errorf("read committed returned marker at %d", r.Offset)
			}
		}
	})

	t.Run("indexed", func(t *testing.T) {
		var idx audit.CommittedIndex
		got := collect(t, s.RecordsIndexed(t.Context(), tp, 0, -1, &idx))
		if diff := sourcetest.Diff(got, recs); diff != "" {
			t.Errorf("indexed read differs from the raw read: %s", diff)
		}
		if idx.LSO != sc.openFrom || !slices.Equal(idx.Aborted, sc.aborted) {
			t.Errorf("index = %+v, want LSO %d and aborted %+v", idx, sc.openFrom, sc.aborted)
		}
	})

	t.Run("ledger cross-check", func(t *testing.T) {
		l, err := ledger.Build(t.Context(), s, tp, ledger.Options{CrossCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Findings) != 0 {
			t.Errorf("findings %+v, want none", l.Findings)
		}
		if want := int64(len(sc.aborted)); l.Summary(ledger.Options{}).Transactions.Aborted != want {
			t.Errorf("transactions %+v, want %d aborted", l.Summary(ledger.Options{}).Transactions, want)
		}
	})

	t.Run("producers", func(t *testing.T) {
		ps, err := s.Producers(t.Context(), []audit.TopicPartition{tp, {Topic: sc.topic, Partition: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if len(ps[audit.TopicPartition{Topic: sc.topic, Partition: 1}]) != 0 {
			t.Errorf("partition 1 producers = %+v", ps)
		}
		open := 0
		for _, p := range ps[tp] {
			if p.CurrentTxnStartOffset >= 0 {
				open++
				if p.ProducerID != sc.pids["2"] || p.CurrentTxnStartOffset != sc.openFrom {
					t.Errorf("open producer %+v, want %d from %d", p, sc.pids["2"], sc.openFrom)
				}
			}
		}
		if open != 1 {
			t.Errorf("producers = %+v, want exactly one with an open transaction", ps[tp])
		}
	})

	t.Run("transactions", func(t *testing.T) {
		txns, err := s.Transactions(t.Context(), sc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, x := range txns {
			ids = append(ids, x.TransactionalID)
			n := strings.TrimPrefix(x.TransactionalID, sc.prefix)
			if x.ProducerID != sc.pids[n] {
				t.Errorf("%s: producer %d, want %d", x.TransactionalID, x.ProducerID, sc.pids[x.TransactionalID])
			}
			if n == "2" {
				if x.State != "Ongoing" || x.StartTimestamp <= 0 || x.TimeoutMillis != 60000 ||
					!slices.Equal(x.Partitions, []audit.TopicPartition{tp}) {
					t.Errorf("open transaction = %+v", x)
				}
			} else if x.State == "Ongoing" {
				t.Errorf("ended transaction = %+v", x)
			}
		}
		if !slices.Equal(ids, []string{sc.prefix + "0", sc.prefix + "1", sc.prefix + "2"}) {
			t.Errorf("ids = %v", ids)
		}
		none, err := s.Transactions(t.Context(), sc.prefix+"x")
		if err != nil || len(none) != 0 {
			t.Errorf("%sx = %v, %v", sc.prefix, none, err)
		}
	})
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestEpochBump(t *testing.T) {
	c := newCluster(t)
	admin := newClient(t, c)
	createTopic(t, admin, "t", 1, nil)
	var epochs []int16
	for range 2 {
		// A new client with the same transactional id fences the old one:
		// same producer id, higher epoch.
		p := newClient(t, c, kgo.TransactionalID("app-x"))
		begin(t, p)
		produce(t, p, "t", 0, "k", "v")
		end(t, p, kgo.TryCommit)
		p.Close()
	}
	s := openSource(t, c, nil)
	var pid int64 = -2
	for _, r := range collect(t, s.Records(t.Context(), audit.TopicPartition{Topic: "t"}, 0, -1)) {
		if pid == -2 {
			pid = r.Batch.ProducerID
		}
		if r.Batch.ProducerID != pid {
			t.Errorf("offset %d: producer %d, want %d", r.Offset, r.Batch.ProducerID, pid)
		}
		if !r.IsControl() {
			epochs = append(epochs, r.Batch.ProducerEpoch)
		}
	}
	if len(epochs) != 2 || epochs[1] <= epochs[0] {
		t.Errorf("data epochs = %v, want two, rising", epochs)
	}
}

func TestPurgedAndCompacted(t *testing.T) {
	c := newCluster(t)
	admin := newClient(t, c)
	createTopic(t, admin, "del", 1, nil)
	compact := "compact"
	createTopic(t, admin, "cmp", 1, map[string]*string{"cleanup.policy": &compact})
	for i := range 10 {
		produce(t, admin, "del", 0, fmt.Sprint("k", i), "v")
	}
	// One batch per produce call: k4 alone, {k1,k2}, k1, k4, k3.
	produce(t, admin, "cmp", 0, "k4", "x")
	produce(t, admin, "cmp", 0, "k1", "a", "k2", "b")
	produce(t, admin, "cmp", 0, "k1", "c")
	produce(t, admin, "cmp", 0, "k4", "y")
	produce(t, admin, "cmp", 0, "k3", "d")

	adm := kadm.NewClient(admin)
	del := kadm.Offsets{}
	del.Add(kadm.Offset{Topic: "del", Partition: 0, At: 6})
	if _, err := adm.DeleteRecords(t.Context(), del); err != nil {
		t.Fatal(err)
	}
	c.Compact()

	s := openSource(t, c, nil)
	for _, tt := range []struct {
		name     string
		tp       audit.TopicPartition
		from, to int64
		want     []int64
	}{
		{"purged: from 0 skips to log start", audit.TopicPartition{Topic: "del"}, 0, -1, []int64{6, 7, 8, 9}},
		{"purged: range entirely purged", audit.TopicPartition{Topic: "del"}, 0, 5, nil},
		{"purged: from inside", audit.TopicPartition{Topic: "del"}, 8, -1, []int64{8, 9}},
		{"compacted: whole", audit.TopicPartition{Topic: "cmp"}, 0, -1, []int64{2, 3, 4, 5}},
		{"compacted: fully compacted batch only", audit.TopicPartition{Topic: "cmp"}, 0, 1, nil},
		{"compacted: inside a partly compacted batch", audit.TopicPartition{Topic: "cmp"}, 1, 3, []int64{2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := offsetsOf(collect(t, s.Records(ctxTimeout(t, 10*time.Second), tt.tp, tt.from, tt.to)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("offsets = %v, want %v", got, tt.want)
			}
		})
	}
	po, err := s.Offsets(t.Context(), audit.TopicPartition{Topic: "del"})
	if err != nil || po.LogStart != 6 || po.HW != 10 || po.LSO != 10 {
		t.Errorf("del offsets = %+v, %v", po, err)
	}
	recs := collect(t, s.Records(t.Context(), audit.TopicPartition{Topic: "cmp"}, 0, -1))
	if b := recs[0].Batch; b.BaseOffset != 1 || b.LastOffsetDelta != 1 || string(recs[0].Key) != "k2" {
		t.Errorf("partly compacted batch = %+v key %q, want base 1, last delta 1, k2", b, recs[0].Key)
	}
}

func TestTopicsAndPartitions(t *testing.T) {
	c := newCluster(t, kfake.ClusterID("kaudit-test-cluster"))
	admin := newClient(t, c)
	compact, ms := "compact", "3600000"
	createTopic(t, admin, "app-store-changelog", 3, map[string]*string{"cleanup.policy": &compact})
	createTopic(t, admin, "in", 2, map[string]*string{"retention.ms": &ms})
	s := openSource(t, c, nil)

	n, err := s.Partitions(t.Context(), "app-store-changelog")
	if err != nil || n != 3 {
		t.Errorf("partitions = %d, %v", n, err)
	}
	infos, err := s.Topics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Name != "app-store-changelog" || infos[1].Name != "in" {
		t.Fatalf("topics = %+v", infos)
	}
	if !infos[0].Compacted() || infos[0].Partitions != 3 || infos[0].ReplicationFactor != 1 {
		t.Errorf("changelog = %+v", infos[0])
	}
	if infos[1].Compacted() || infos[1].Configs["retention.ms"] != ms || infos[1].Partitions != 2 {
		t.Errorf("in = %+v", infos[1])
	}
	for _, info := range infos {
		for k := range info.Configs {
			if !slices.Contains(auditedConfigs, k) {
				t.Errorf("%s: unexpected config %s", info.Name, k)
			}
		}
	}
	if id, err := s.ClusterID(t.Context()); err != nil || id != "kaudit-test-cluster" {
		t.Errorf("ClusterID() = %q, %v", id, err)
	}
	if got := s.Describe(); got != "live "+strings.Join(c.ListenAddrs(), ",") {
		t.Errorf("Describe() = %q", got)
	}
}

func TestNotFound(t *testing.T) {
	c := newCluster(t)
	admin := newClient(t, c)
	createTopic(t, admin, "t", 2, nil)
	s := openSource(t, c, nil)
	ctx := t.Context()
	for _, tt := range []struct {
		name   string
		run    func() error
		target error
		names  string
	}{
		{"partitions of unknown topic", func() error { _, err := s.Partitions(ctx, "nope"); return err }, audit.ErrTopicNotFound, `"nope"`},
		{"offsets of unknown topic", func() error {
			_, err := s.Offsets(ctx, audit.TopicPartition{Topic: "nope"})
			return err
		}, audit.ErrTopicNotFound, `"nope"`},
		{"offsets of partition out of range", func() error {
			_, err := s.Offsets(ctx, audit.TopicPartition{Topic: "t", Partition: 7})
			return err
		}, audit.ErrPartitionNotFound, "t/7"},
		{"records of unknown topic", func() error {
			_, err := collectErr(t, s.Records(ctx, audit.TopicPartition{Topic: "nope"}, 0, -1))
			return err
		}, audit.ErrTopicNotFound, `"nope"`},
		{"records of partition out of range", func() error {
			_, err := collectErr(t, s.Records(ctx, audit.TopicPartition{Topic: "t", Partition: 2}, 0, -1))
			return err
		}, audit.ErrPartitionNotFound, "t/2"},
		{"read committed of unknown topic", func() error {
			_, err := collectErr(t, s.ReadCommitted(ctx, audit.TopicPartition{Topic: "nope"}, 0, -1))
			return err
		}, audit.ErrTopicNotFound, `"nope"`},
		{"producers of partition out of range", func() error {
			_, err := s.Producers(ctx, []audit.TopicPartition{{Topic: "t", Partition: 9}})
			return err
		}, audit.ErrPartitionNotFound, "t/9"},
		{"unknown group", func() error { _, err := s.GroupOffsets(ctx, "ghost"); return err }, audit.ErrGroupNotFound, `"ghost"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if !errors.Is(err, tt.target) {
				t.Fatalf("err = %v, want %v", err, tt.target)
			}
			if !strings.Contains(err.Error(), tt.names) {
				t.Errorf("err %q does not name %s", err, tt.names)
			}
		})
	}
	// The reads above must not have created the topic.
	if _, err := s.Partitions(ctx, "nope"); !errors.Is(err, audit.ErrTopicNotFound) {
		t.Errorf("topic nope exists after the reads: %v", err)
	}
}
