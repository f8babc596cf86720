package kafka

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
)

// TestCommitHistoryKfake: kfake keeps its groups' offsets in memory and
// has no __consumer_offsets topic, so a live read of the commit history
// says the source cannot give it (ErrNotSupported), never that the group
// is unknown or the history empty.
func TestCommitHistoryKfake(t *testing.T) {
	c := newCluster(t)
	admin := newClient(t, c)
	createTopic(t, admin, "in", 1, nil)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "in", Partition: 0, At: 3, LeaderEpoch: -1})
	if err := kadm.NewClient(admin).CommitAllOffsets(t.Context(), "app", os); err != nil {
		t.Fatal(err)
	}
	s := openSource(t, c, nil)
	if g, err := s.GroupOffsets(t.Context(), "app"); err != nil || g.Offsets[audit.TopicPartition{Topic: "in"}] != 3 {
		t.Fatalf("GroupOffsets: %+v, %v", g, err)
	}
	_, err := s.CommitHistory(t.Context(), "app")
	// kfake lists no such topic, as a broker does for a client an ACL keeps
	// from it: the history cannot be read, and the audit goes on without it
	if !errors.Is(err, audit.ErrUnreadable) || errors.Is(err, audit.ErrGroupNotFound) {
		t.Fatalf("CommitHistory on kfake: %v; want ErrUnreadable (kfake lists no %s)", err, audit.ConsumerOffsetsTopic)
	}
}

// serveRecorded makes c answer Fetch and ListOffsets for one partition of
// __consumer_offsets with a real broker's recorded segment file, byte for
// byte (every batch from the fetch offset on, as a broker sends them),
// and the offsets that broker had. Other requests go to kfake.
func serveRecorded(t *testing.T, c *kfake.Cluster, tp audit.TopicPartition, segmentFile string, o audit.PartitionOffsets) {
	t.Helper()
	raw, err := os.ReadFile(segmentFile)
	if err != nil {
		t.Fatal(err)
	}
	batches, _, corrupt := splitBatches(raw)
	if corrupt || len(batches) == 0 {
		t.Fatalf("%s: %d batches, corrupt %v", segmentFile, len(batches), corrupt)
	}
	c.ControlKey(int16(kmsg.Fetch), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.FetchRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic != tp.Topic && req.Topics[0].Topic != "" {
			return nil, nil, false
		}
		resp, _ := fetchError(0)(req)
		rp := &resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = o.HW, o.LSO, o.LogStart
		off := req.Topics[0].Partitions[0].FetchOffset
		pos := 0
		for _, b := range batches {
			size := 12 + int(int32(uint32(raw[pos+8])<<24|uint32(raw[pos+9])<<16|uint32(raw[pos+10])<<8|uint32(raw[pos+11])))
			if b.LastOffset() >= off {
				rp.RecordBatches = append(rp.RecordBatches, raw[pos:pos+size]...)
			}
			pos += size
		}
		return resp, nil, true
	})
	c.ControlKey(int16(kmsg.ListOffsets), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ListOffsetsRequest)
		if len(req.Topics) != 1 || req.Topics[0].Topic != tp.Topic {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = tp.Topic
		for _, rp := range req.Topics[0].Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.Timestamp, sp.LeaderEpoch = rp.Partition, -1, 0
			switch {
			case rp.Partition != tp.Partition:
			case rp.Timestamp == -2:
				sp.Offset = o.LogStart
			case req.IsolationLevel == 1:
				sp.Offset = o.LSO
			default:
				sp.Offset = o.HW
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		return resp, nil, true
	})
}

// TestCommitHistoryRecorded reads the commit history live from a fake
// broker that serves a real Kafka broker's recorded __consumer_offsets
// batches (audit/segment's 3.6.2 and 4.1.1 log dirs), and requires it to
// equal what the log dirs themselves give: one decoder, whatever the
// source.
func TestCommitHistoryRecorded(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("..", "segment", "testdata", "real", "kafka-*-logdir"))
	if len(dirs) == 0 {
		t.Fatal("no ../segment/testdata/real/kafka-*-logdir fixture")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			d, err := segment.OpenDirs(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, group := range []string{"gen-app", "gen-eos"} {
				want, err := d.CommitHistory(t.Context(), group)
				if err != nil {
					t.Fatal(err)
				}
				want.CleanedTo, want.Notes = -1, nil
				o, err := d.Offsets(t.Context(), want.Log)
				if err != nil {
					t.Fatal(err)
				}
				c := newCluster(t)
				createTopic(t, newClient(t, c), audit.ConsumerOffsetsTopic, want.Partitions, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
				seg := filepath.Join(dir, fmt.Sprintf("%s-%d", want.Log.Topic, want.Log.Partition), "00000000000000000000.log")
				serveRecorded(t, c, want.Log, seg, o)
				s := openSource(t, c, nil)
				got, err := s.CommitHistory(t.Context(), group)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: live\n%+v\nlog dirs\n%+v", group, got, want)
				}
			}
		})
	}
}

// TestCommitHistoryDenied: without READ on __consumer_offsets (no ACL on
// it at all, or DESCRIBE only) the commit history is unreadable evidence
// whose error names the ACL kaudit needs; the source goes on answering
// the rest.
func TestCommitHistoryDenied(t *testing.T) {
	lit := kmsg.ACLResourcePatternTypeLiteral
	allow := func(name string, op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: name, Pattern: lit, Operation: op, Allow: true}
	}
	cluster := kfake.ACL{Resource: kmsg.ACLResourceTypeCluster, Name: "kafka-cluster", Pattern: lit, Operation: kmsg.ACLOperationDescribe, Allow: true}
	for _, tc := range []struct {
		name string
		acls []kfake.ACL
	}{
		{"no ACL on it", []kfake.ACL{allow("in", kmsg.ACLOperationRead), cluster}},
		{"DESCRIBE only", []kfake.ACL{allow("in", kmsg.ACLOperationRead), allow(audit.ConsumerOffsetsTopic, kmsg.ACLOperationDescribe), cluster}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, kfake.EnableSASL(), kfake.EnableACLs(),
				kfake.Superuser("PLAIN", "admin", "admin-pw"), kfake.User("PLAIN", "dave", "dave-pw", tc.acls...))
			admin := newClient(t, c, kgo.SASL(plainMech("admin", "admin-pw")))
			createTopic(t, admin, "in", 1, nil)
			createTopic(t, admin, audit.ConsumerOffsetsTopic, 4, nil)
			produce(t, admin, "in", 0, "k", "v")
			produce(t, admin, audit.ConsumerOffsetsTopic, 1, "k", "v") // a record to fetch in the group's partition
			s := openSource(t, c, map[string]string{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
				"sasl.username": "dave", "sasl.password": "dave-pw"})
			_, err := s.CommitHistory(t.Context(), "app")
			if !errors.Is(err, audit.ErrUnreadable) || !strings.Contains(err.Error(), "READ on TOPIC __consumer_offsets") {
				t.Fatalf("CommitHistory without READ on %s: %v; want ErrUnreadable naming the ACL", audit.ConsumerOffsetsTopic, err)
			}
			n := 0
			for _, err := range s.Records(t.Context(), audit.TopicPartition{Topic: "in"}, 0, -1) {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 1 {
				t.Fatalf("read %d records of in after the denied history, want 1", n)
			}
		})
	}
}
