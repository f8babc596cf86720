package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"net"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// fastMetaRetries shortens the metadata retries for a test.
func fastMetaRetries(t *testing.T) {
	oldBackoff, oldAge := metaBackoff, metadataMinAge
	metaBackoff, metadataMinAge = 60*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { metaBackoff, metadataMinAge = oldBackoff, oldAge })
}

// failMetadata answers the next n Metadata requests that name topic, or
// list all topics, with a topic-level error for topic; n < 0 means all.
func failMetadata(c *kfake.Cluster, topic string, code int16, n int32) *atomic.Int32 {
	var faults atomic.Int32
	host, port, _ := net.SplitHostPort(c.ListenAddrs()[0])
	p, _ := strconv.Atoi(port)
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		names := req.Topics == nil
		for _, rt := range req.Topics {
			names = names || (rt.Topic != nil && *rt.Topic == topic)
		}
		if !names || (n >= 0 && faults.Load() >= n) {
			return nil, nil, false
		}
		faults.Add(1)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 0, host, int32(p)
		resp.Brokers = append(resp.Brokers, b)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic = kmsg.StringPtr(topic)
		rt.ErrorCode = code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	return &faults
}

// TestTopicUnreadable: a topic the source cannot see is never reported as
// a topic that does not exist. Only the broker's UNKNOWN_TOPIC_OR_PARTITION
// (a deleted topic) is ErrTopicNotFound; an ACL without Describe and
// metadata that keeps failing are ErrUnreadable, and one failing answer
// (LEADER_NOT_AVAILABLE during an outage) is asked again.
func TestTopicUnreadable(t *testing.T) {
	fastMetaRetries(t)
	t.Run("one LEADER_NOT_AVAILABLE answer", func(t *testing.T) {
		c, s := filledCluster(t, 2)
		faults := failMetadata(c, "t", kerr.LeaderNotAvailable.Code, 1)
		n, err := s.Partitions(t.Context(), "t")
		if err != nil || n != 1 || faults.Load() != 1 {
			t.Fatalf("Partitions after one LEADER_NOT_AVAILABLE: %d, %v (%d faults); want 1 partition", n, err, faults.Load())
		}
	})
	t.Run("one LEADER_NOT_AVAILABLE answer while listing", func(t *testing.T) {
		c, s := filledCluster(t, 2)
		faults := failMetadata(c, "t", kerr.LeaderNotAvailable.Code, 1)
		infos, err := s.Topics(t.Context())
		if err != nil || !slices.ContainsFunc(infos, func(ti audit.TopicInfo) bool { return ti.Name == "t" && ti.Partitions == 1 }) {
			t.Fatalf("Topics after one LEADER_NOT_AVAILABLE (%d faults): %+v, %v; want t listed", faults.Load(), infos, err)
		}
	})
	t.Run("LEADER_NOT_AVAILABLE every time", func(t *testing.T) {
		c, s := filledCluster(t, 2)
		failMetadata(c, "t", kerr.LeaderNotAvailable.Code, -1)
		start := time.Now()
		_, err := s.Partitions(t.Context(), "t")
		if !errors.Is(err, audit.ErrUnreadable) || errors.Is(err, audit.ErrTopicNotFound) {
			t.Fatalf("Partitions: %v; want ErrUnreadable, not ErrTopicNotFound", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("gave up after %v", took)
		}
		infos, err := s.Topics(t.Context())
		if err != nil || slices.ContainsFunc(infos, func(ti audit.TopicInfo) bool { return ti.Name == "t" }) {
			t.Fatalf("Topics: %+v, %v; want t left out (Partitions says why), and no error", infos, err)
		}
	})
	t.Run("answer leaves the topic out", func(t *testing.T) {
		c, s := filledCluster(t, 2)
		c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			req := kreq.(*kmsg.MetadataRequest)
			if len(req.Topics) != 1 || req.Topics[0].Topic == nil || *req.Topics[0].Topic != "t" {
				return nil, nil, false
			}
			return req.ResponseKind(), nil, true
		})
		if _, err := s.Partitions(t.Context(), "t"); !errors.Is(err, audit.ErrUnreadable) || errors.Is(err, audit.ErrTopicNotFound) {
			t.Fatalf("Partitions: %v; want ErrUnreadable, not ErrTopicNotFound", err)
		}
	})
	t.Run("deleted topic", func(t *testing.T) {
		c := newCluster(t)
		cl := newClient(t, c)
		createTopic(t, cl, "gone", 1, nil)
		s := openSource(t, c, nil)
		if _, err := kadm.NewClient(cl).DeleteTopics(t.Context(), "gone"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Partitions(t.Context(), "gone"); !errors.Is(err, audit.ErrTopicNotFound) || errors.Is(err, audit.ErrUnreadable) {
			t.Fatalf("Partitions of a deleted topic: %v; want ErrTopicNotFound", err)
		}
	})
	t.Run("ACL without Describe", func(t *testing.T) {
		c := newCluster(t, kfake.EnableSASL(), kfake.EnableACLs(),
			kfake.Superuser("PLAIN", "admin", "admin-pw"),
			kfake.User("PLAIN", "dave", "dave-pw",
				kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "t", Pattern: kmsg.ACLResourcePatternTypeLiteral,
					Operation: kmsg.ACLOperationDescribe, Allow: true},
				kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: "t", Pattern: kmsg.ACLResourcePatternTypeLiteral,
					Operation: kmsg.ACLOperationDescribeConfigs, Allow: true},
				kfake.ACL{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: kmsg.ACLResourcePatternTypeLiteral,
					Operation: kmsg.ACLOperationDescribe, Allow: true}))
		admin := newClient(t, c, kgo.SASL(plainMech("admin", "admin-pw")))
		createTopic(t, admin, "t", 1, nil)
		createTopic(t, admin, "app-store-changelog", 1, nil)
		s := openSource(t, c, map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
			"sasl.username": "dave", "sasl.password": "dave-pw"})
		infos, err := s.Topics(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range infos {
			if ti.Name == "app-store-changelog" {
				t.Fatalf("Topics lists the hidden topic: %+v", infos)
			}
		}
		if _, err := s.Partitions(t.Context(), "app-store-changelog"); !errors.Is(err, audit.ErrUnreadable) || errors.Is(err, audit.ErrTopicNotFound) {
			t.Fatalf("Partitions of a topic hidden by an ACL: %v; want ErrUnreadable, not ErrTopicNotFound", err)
		}
	})
}

// TestEndlessUnstableOffsets: a group whose offsets stay unstable (every
// OffsetFetch answers UNSTABLE_OFFSET_COMMIT, as a hanging transaction
// makes them) gives up within StableTimeout, as unreadable evidence.
func TestEndlessUnstableOffsets(t *testing.T) {
	c := newCluster(t)
	admin := newClient(t, c)
	createTopic(t, admin, "in", 1, nil)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "in", Partition: 0, At: 3, LeaderEpoch: -1})
	if err := kadm.NewClient(admin).CommitAllOffsets(t.Context(), "app", os); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int32
	c.ControlKey(int16(kmsg.OffsetFetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		asked.Add(1)
		req := kreq.(*kmsg.OffsetFetchRequest)
		resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.UnstableOffsetCommit.Code
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.UnstableOffsetCommit.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp, nil, true
	})
	s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Timeout: 5 * time.Second, StableTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	_, err = s.GroupOffsets(t.Context(), "app")
	took := time.Since(start)
	t.Logf("%v after %v and %d OffsetFetch requests", err, took, asked.Load())
	if !errors.Is(err, kerr.UnstableOffsetCommit) || !errors.Is(err, audit.ErrUnreadable) || errors.Is(err, audit.ErrGroupNotFound) {
		t.Fatalf("GroupOffsets: %v; want an unstable, unreadable cut", err)
	}
	if took > 3*time.Second {
		t.Fatalf("gave up after %v with a StableTimeout of 1.5 s", took)
	}
}

// TestFetchedGzipBomb: a fetched batch of 1 MB of gzip inflating to 1 GiB
// is corrupt evidence, found fast and with little memory.
func TestFetchedGzipBomb(t *testing.T) {
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	w.Write(make([]byte, 16<<20))
	w.Close()
	records := bytes.Repeat(z.Bytes(), 64) // 1 GiB inflated
	rb := kmsg.RecordBatch{Magic: 2, Attributes: 1, LastOffsetDelta: 0, NumRecords: 1, FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: records}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))

	c, s := filledCluster(t, 1)
	serveFetch(c, func(int64) ([]byte, int64) { return raw, 1 })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := collectErr(t, s.Records(ctxTimeout(t, 20*time.Second), audit.TopicPartition{Topic: "t"}, 0, -1))
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	alloc := (after.TotalAlloc - before.TotalAlloc) >> 20
	t.Logf("%d bytes of gzip: %v in %v, %d MiB allocated", len(records), err, took, alloc)
	if !errors.Is(err, audit.ErrCorrupt) {
		t.Fatalf("Records: %v; want corrupt evidence", err)
	}
	if alloc > 512 || took > 10*time.Second {
		t.Fatalf("%d MiB and %v for a gzip bomb", alloc, took)
	}
}
