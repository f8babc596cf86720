package kafka

import (
	"context"
	"errors"
	"hash/crc32"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

func TestOpenUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now

	start := time.Now()
	_, err = Open(t.Context(), Config{Bootstrap: []string{addr}, Timeout: 700 * time.Millisecond,
		Properties: map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.username": "u", "sasl.password": "hunter2"}})
	took := time.Since(start)
	if err == nil {
		t.Fatal("Open succeeded on a closed port")
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "reach bootstrap servers") {
		t.Errorf("error %q does not name the bootstrap server %s", err, addr)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error %q shows the password", err)
	}
	if errors.Is(err, ErrConfig) {
		t.Errorf("an unreachable cluster is not a config error: %v", err)
	}
	if took > 3*time.Second {
		t.Errorf("Open took %s with a 700ms timeout", took)
	}
}

func TestOpenConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no bootstrap", Config{}, "no bootstrap servers"},
		{"bad protocol", Config{Bootstrap: []string{"127.0.0.1:1"}, Properties: map[string]string{"security.protocol": "TLS"}}, "security.protocol"},
		{"bad seed", Config{Bootstrap: []string{"127.0.0.1:notaport"}}, "127.0.0.1:notaport"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(t.Context(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrConfig) {
				t.Fatalf("err = %v, want an ErrConfig containing %q", err, tt.want)
			}
		})
	}
}

// smallFetches makes every fetch return one batch, so a read takes many.
func smallFetches(t *testing.T) {
	old := partitionMaxBytes
	partitionMaxBytes = 1
	t.Cleanup(func() { partitionMaxBytes = old })
}

func filledCluster(t *testing.T, batches int) (*kfake.Cluster, *Source) {
	t.Helper()
	c := newCluster(t)
	cl := newClient(t, c)
	createTopic(t, cl, "t", 1, nil)
	for range batches {
		produce(t, cl, "t", 0, "k", "v")
	}
	return c, openSource(t, c, nil)
}

// failFetchAfter makes the n+1th and later fetches fail with fn's answer.
func failFetchAfter(c *kfake.Cluster, n int32, fn func(*kmsg.FetchRequest) (kmsg.Response, error)) {
	var seen atomic.Int32
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if seen.Add(1) <= n {
			return nil, nil, false
		}
		resp, err := fn(req.(*kmsg.FetchRequest))
		return resp, err, true
	})
}

func fetchError(code int16) func(*kmsg.FetchRequest) (kmsg.Response, error) {
	return func(req *kmsg.FetchRequest) (kmsg.Response, error) {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic, rt.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition = req.Topics[0].Partitions[0].Partition
		rp.ErrorCode = code
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil
	}
}

func TestBrokerFaultMidRead(t *testing.T) {
	smallFetches(t)
	tp := audit.TopicPartition{Topic: "t"}
	for _, tt := range []struct {
		name  string
		fault func(*kmsg.FetchRequest) (kmsg.Response, error)
		want  error
	}{
		{"storage error", fetchError(kerr.KafkaStorageError.Code), kerr.KafkaStorageError},
		{"topic deleted", fetchError(kerr.UnknownTopicOrPartition.Code), audit.ErrTopicNotFound},
		{"connection closed", func(*kmsg.FetchRequest) (kmsg.Response, error) { return nil, errors.New("boom") }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newCluster(t)
			cl := newClient(t, c)
			createTopic(t, cl, "t", 1, nil)
			for range 5 {
				produce(t, cl, "t", 0, "k", "v")
			}
			s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			failFetchAfter(c, 2, tt.fault)
			recs, err := collectErr(t, s.Records(ctxTimeout(t, 10*time.Second), tp, 0, -1))
			if !slices.Equal(offsetsOf(recs), []int64{0, 1}) {
				t.Errorf("records before the fault = %v, want [0 1]", offsetsOf(recs))
			}
			if err == nil {
				t.Fatal("the read ended silently")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), "t/0 at offset 2") {
				t.Errorf("err %q does not name the partition and offset", err)
			}
		})
	}
}

func TestLeaderChangeRetried(t *testing.T) {
	smallFetches(t)
	c, s := filledCluster(t, 4)
	var faults atomic.Int32
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if faults.Add(1) > 1 {
			return nil, nil, false
		}
		resp, _ := fetchError(kerr.NotLeaderForPartition.Code)(req.(*kmsg.FetchRequest))
		return resp, nil, true
	})
	got := offsetsOf(collect(t, s.Records(t.Context(), audit.TopicPartition{Topic: "t"}, 0, -1)))
	if !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Errorf("offsets = %v", got)
	}
}

// rawBatch encodes a v2 record batch with a valid CRC holding one record
// per given offset delta; lastDelta may exceed them (compaction emptied the
// tail) and deltas may be empty (compaction emptied the batch, which Kafka
// keeps).
func rawBatch(base int64, lastDelta int32, deltas ...int32) []byte {
	var recs []byte
	for _, d := range deltas {
		r := kmsg.Record{OffsetDelta: d, Key: []byte("k"), Value: []byte("v")}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		FirstOffset: base, Magic: 2, LastOffsetDelta: lastDelta, FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, NumRecords: int32(len(deltas)), Records: recs,
	}
	raw := b.AppendTo(nil)
	b.Length = int32(len(raw) - 12)
	raw = b.AppendTo(nil)
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	raw[17], raw[18], raw[19], raw[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
	return raw
}

// serveFetch answers every fetch with fn(fetch offset): the batches and the
// high watermark.
func serveFetch(c *kfake.Cluster, fn func(off int64) ([]byte, int64)) {
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		resp, _ := fetchError(0)(req)
		fr := resp.(*kmsg.FetchResponse)
		rp := &fr.Topics[0].Partitions[0]
		rp.RecordBatches, rp.HighWatermark = fn(req.Topics[0].Partitions[0].FetchOffset)
		rp.LastStableOffset, rp.LogStartOffset = rp.HighWatermark, 0
		return fr, nil, true
	})
}

func TestEmptyBatchesAndStalls(t *testing.T) {
	tp := audit.TopicPartition{Topic: "t"}
	t.Run("empty and partly emptied batches", func(t *testing.T) {
		c, s := filledCluster(t, 1)
		var fetches atomic.Int32
		serveFetch(c, func(off int64) ([]byte, int64) {
			fetches.Add(1)
			switch {
			case off < 10: // an emptied batch 0-9, then 10-19 holding 12 and 15
				return append(rawBatch(0, 9), rawBatch(10, 9, 2, 5)...), 25
			case off < 20:
				return rawBatch(10, 9, 2, 5), 25
			default: // a batch whose only record is its last
				return rawBatch(20, 4, 4), 25
			}
		})
		recs := collect(t, s.Records(t.Context(), tp, 0, -1))
		if got := offsetsOf(recs); !slices.Equal(got, []int64{12, 15, 24}) {
			t.Errorf("offsets = %v, want [12 15 24]", got)
		}
		if n := fetches.Load(); n != 2 {
			t.Errorf("%d fetches, want 2", n)
		}
		if b := recs[0].Batch; b.BaseOffset != 10 || b.LastOffsetDelta != 9 || b.ProducerID != -1 || b.MaxTimestamp != 1000 {
			t.Errorf("batch = %+v", b)
		}
	})
	t.Run("no batch below the high watermark", func(t *testing.T) {
		c, s := filledCluster(t, 1)
		serveFetch(c, func(int64) ([]byte, int64) { return nil, 50 })
		_, err := collectErr(t, s.Records(ctxTimeout(t, 10*time.Second), tp, 0, -1))
		if err == nil || !strings.Contains(err.Error(), "no record batch") {
			t.Errorf("err = %v, want a no-progress error", err)
		}
	})
	t.Run("batch behind the fetch offset", func(t *testing.T) {
		c, s := filledCluster(t, 1)
		serveFetch(c, func(int64) ([]byte, int64) { return rawBatch(0, 0, 0), 50 })
		recs, err := collectErr(t, s.Records(ctxTimeout(t, 10*time.Second), tp, 0, -1))
		if err == nil || !strings.Contains(err.Error(), "no progress") || len(recs) != 1 {
			t.Errorf("records %v, err = %v, want offset 0 then a no-progress error", offsetsOf(recs), err)
		}
	})
	t.Run("truncated tail batch", func(t *testing.T) {
		c, s := filledCluster(t, 1)
		serveFetch(c, func(off int64) ([]byte, int64) {
			if off == 0 {
				b := rawBatch(1, 0, 0)
				return append(rawBatch(0, 0, 0), b[:len(b)-3]...), 2
			}
			return rawBatch(1, 0, 0), 2
		})
		if got := offsetsOf(collect(t, s.Records(t.Context(), tp, 0, -1))); !slices.Equal(got, []int64{0, 1}) {
			t.Errorf("offsets = %v", got)
		}
	})
}

func TestCanceledContext(t *testing.T) {
	_, s := filledCluster(t, 3)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	n := 0
	var last error
	for _, err := range s.Records(ctx, audit.TopicPartition{Topic: "t"}, 0, -1) {
		if err != nil {
			last = err
			break
		}
		n++
		cancel()
	}
	if n != 1 || !errors.Is(last, context.Canceled) {
		t.Errorf("read %d records then %v, want 1 then context canceled", n, last)
	}
}

// readKeys are the request keys a Source may send; everything else would
// be a write or a group action.
var readKeys = []kmsg.Key{kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.OffsetFetch, kmsg.FindCoordinator,
	kmsg.DescribeGroups, kmsg.ListGroups, kmsg.SASLHandshake, kmsg.ApiVersions, kmsg.DescribeConfigs,
	kmsg.SASLAuthenticate, kmsg.DescribeCluster, kmsg.DescribeProducers, kmsg.DescribeTransactions,
	kmsg.ListTransactions, kmsg.DescribeTopicPartitions}

func TestReadOnly(t *testing.T) {
	c := newCluster(t, kfake.AllowAutoTopicCreation())
	writer := newClient(t, c, kgo.TransactionalID("app-0"))
	createTopic(t, writer, "t", 1, nil)
	begin(t, writer)
	produce(t, writer, "t", 0, "k", "v")
	end(t, writer, kgo.TryCommit)
	writer.Close()

	var seen sync.Map
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		seen.Store(kmsg.Key(req.Key()), true)
		return nil, nil, false
	})
	s := openSource(t, c, nil)
	ctx := t.Context()
	tp := audit.TopicPartition{Topic: "t"}
	collect(t, s.Records(ctx, tp, 0, -1))
	collect(t, s.ReadCommitted(ctx, tp, 0, -1))
	_, _ = collectErr(t, s.Records(ctx, audit.TopicPartition{Topic: "auto"}, 0, -1))
	_, _ = s.Partitions(ctx, "auto2")
	_, _ = s.Offsets(ctx, tp)
	_, _ = s.Topics(ctx)
	_, _ = s.GroupOffsets(ctx, "g")
	_, _ = s.Transactions(ctx, "")
	_, _ = s.Producers(ctx, []audit.TopicPartition{tp})
	seen.Range(func(k, _ any) bool {
		if !slices.Contains(readKeys, k.(kmsg.Key)) {
			t.Errorf("the source sent %v", k)
		}
		return true
	})
	if _, ok := seen.Load(kmsg.Fetch); !ok {
		t.Error("the control saw no fetch: it observed nothing")
	}
	infos, err := s.Topics(ctx)
	if err != nil || len(infos) != 1 {
		t.Errorf("topics after the reads = %+v, %v; want only t (no auto-creation)", infos, err)
	}
}

func TestTopicDeletedMidRead(t *testing.T) {
	smallFetches(t)
	c := newCluster(t)
	cl := newClient(t, c)
	createTopic(t, cl, "gone", 1, nil)
	for range 3 {
		produce(t, cl, "gone", 0, "k", "v")
	}
	s := openSource(t, c, nil)
	var (
		n   int
		got error
	)
	for _, err := range s.Records(ctxTimeout(t, 10*time.Second), audit.TopicPartition{Topic: "gone"}, 0, -1) {
		if err != nil {
			got = err
			break
		}
		if n++; n == 1 {
			if _, err := kadm.NewClient(cl).DeleteTopics(t.Context(), "gone"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n != 1 || !errors.Is(got, audit.ErrTopicNotFound) || !strings.Contains(got.Error(), "gone/0 at offset 1") {
		t.Errorf("read %d records, then %v; want 1, then a topic-not-found error at offset 1", n, got)
	}
}

func TestLeaderNotAvailableAtStart(t *testing.T) {
	c, s := filledCluster(t, 2)
	leader := c.LeaderFor("t", 0)
	host, port, _ := net.SplitHostPort(c.ListenAddrs()[0])
	p, _ := strconv.Atoi(port)
	var faults atomic.Int32
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.MetadataRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != "t" || faults.Load() >= 2 {
			return nil, nil, false
		}
		c.KeepControl()
		faults.Add(1)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = leader, host, int32(p)
		resp.Brokers = append(resp.Brokers, b)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr("t")
		rp := kmsg.NewMetadataResponseTopicPartition()
		rp.Partition, rp.Leader, rp.ErrorCode = 0, -1, kerr.LeaderNotAvailable.Code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	got := offsetsOf(collect(t, s.Records(t.Context(), audit.TopicPartition{Topic: "t"}, 0, -1)))
	if !slices.Equal(got, []int64{0, 1}) || faults.Load() != 2 {
		t.Errorf("offsets = %v after %d faults, want [0 1] after 2", got, faults.Load())
	}
}

func TestCorruptBatches(t *testing.T) {
	tp := audit.TopicPartition{Topic: "t"}
	for _, tt := range []struct {
		name  string
		batch func() []byte
	}{
		{"bad crc", func() []byte { b := rawBatch(0, 1, 0, 1); b[len(b)-1] ^= 0xff; return b }},
		{"length too short", func() []byte { return append(make([]byte, 8), 0, 0, 0, 2, 0, 0, 0, 0, 2) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, s := filledCluster(t, 1)
			serveFetch(c, func(int64) ([]byte, int64) { return tt.batch(), 2 })
			recs, err := collectErr(t, s.Records(ctxTimeout(t, 10*time.Second), tp, 0, -1))
			if !errors.Is(err, audit.ErrCorrupt) || len(recs) != 0 || !strings.Contains(err.Error(), "t/0 at offset 0") {
				t.Errorf("records %v, err %v; want ErrCorrupt at offset 0", offsetsOf(recs), err)
			}
		})
	}
}
