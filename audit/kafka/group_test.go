package kafka

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

// txnCommitOffset adds a transactional offset commit of group for in/0 to
// the producer's open transaction, the way Kafka Streams commits under
// exactly-once.
func txnCommitOffset(t *testing.T, cl *kgo.Client, txnID, group string, pid int64, epoch int16, offset int64) {
	t.Helper()
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid, epoch, group
	aresp, err := add.RequestWith(t.Context(), cl)
	if err == nil {
		err = kerr.ErrorForCode(aresp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("add offsets to txn: %v", err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, group, pid, epoch
	req.Generation = -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = "in"
	md, err := kadm.NewClient(cl).Metadata(t.Context(), "in")
	if err != nil {
		t.Fatal(err)
	}
	rt.TopicID = md.Topics["in"].ID
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = 0, offset, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(t.Context(), cl)
	if err == nil {
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err == nil {
					err = kerr.ErrorForCode(rp.ErrorCode)
				}
			}
		}
	}
	if err != nil {
		t.Fatalf("txn offset commit: %v", err)
	}
}

func TestGroupOffsets(t *testing.T) {
	old := stableTries
	stableTries = 2
	t.Cleanup(func() { stableTries = old })

	c := newCluster(t)
	admin := newClient(t, c)
	createTopic(t, admin, "in", 2, nil)
	adm := kadm.NewClient(admin)
	os := kadm.Offsets{}
	os.Add(kadm.Offset{Topic: "in", Partition: 0, At: 3, LeaderEpoch: -1, Metadata: "partition-time"})
	os.Add(kadm.Offset{Topic: "in", Partition: 1, At: 7, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(t.Context(), "app", os); err != nil {
		t.Fatal(err)
	}
	s := openSource(t, c, nil)

	g, err := s.GroupOffsets(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	in0, in1 := audit.TopicPartition{Topic: "in", Partition: 0}, audit.TopicPartition{Topic: "in", Partition: 1}
	if g.Group != "app" || len(g.Offsets) != 2 || g.Offsets[in0] != 3 || g.Offsets[in1] != 7 ||
		g.Metadata[in0] != "partition-time" || g.Members != 0 || g.State == "" {
		t.Errorf("group = %+v", g)
	}

	p := newClient(t, c, kgo.TransactionalID("app-0_0"))
	begin(t, p)
	r := produce(t, p, "in", 1, "k", "v")[0]
	txnCommitOffset(t, p, "app-0_0", "app", r.ProducerID, r.ProducerEpoch, 9)

	_, err = s.GroupOffsets(t.Context(), "app")
	if !errors.Is(err, kerr.UnstableOffsetCommit) || !strings.Contains(err.Error(), "transaction is pending") ||
		!strings.Contains(err.Error(), `"app"`) {
		t.Fatalf("err = %v, want a pending-transaction error naming the group", err)
	}

	end(t, p, kgo.TryCommit)
	g, err = s.GroupOffsets(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if g.Offsets[in0] != 9 || g.Offsets[in1] != 7 {
		t.Errorf("offsets after the commit = %v", g.Offsets)
	}
}
