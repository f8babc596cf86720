// Command gen drives a real broker for gen.sh: topics with compact and
// delete configs, a config change and a deleted topic (metadata log), a
// consumer group committing offsets plainly and in transactions (one
// aborted, one left open), a deleted offset, a purge, and a transaction
// left open. It saves what the live broker answers in -out, for the
// offline decoders' golden tests.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/kafka"
)

const (
	group     = "gen-app"
	orders    = "gen.orders"
	changelog = "gen-app-store-changelog"
	out       = "gen.out"
	eosOut    = "gen.eos-out"
	doomed    = "gen.doomed"
	eosGroup  = "gen-eos" // a GroupTransactSession: offsets committed in transactions by a member
	nextGroup = "gen-848" // 4.x: a KIP-848 consumer group, its member still in it at the stop
)

// GroupLive is what the live broker said about one more group.
type GroupLive struct {
	State    string            `json:"state"`
	Members  int               `json:"members"`
	Offsets  map[string]int64  `json:"offsets"`
	Metadata map[string]string `json:"metadata"`
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Expected is what the live broker said at the end.
type Expected struct {
	Version      string                            `json:"version"`
	Group        string                            `json:"group"`
	GroupState   string                            `json:"group_state"`
	Offsets      map[string]int64                  `json:"offsets"` // "topic/partition" → stable committed offset
	Metadata     map[string]string                 `json:"metadata"`
	Transactions []audit.Transaction               `json:"transactions"`
	Producers    map[string][]audit.Producer       `json:"producers"`
	Topics       []audit.TopicInfo                 `json:"topics"`
	Offsets2     map[string]audit.PartitionOffsets `json:"partition_offsets"`
	Pending      map[string]int64                  `json:"pending"` // offsets committed in the open transaction
	Notes        []string                          `json:"notes"`
	Groups       map[string]GroupLive              `json:"groups"`
}

var bs string

func main() {
	flag.StringVar(&bs, "bootstrap", "127.0.0.1:29192", "broker")
	outPath := flag.String("out", "live.json", "where to write what the broker said")
	version := flag.String("version", "", "the Kafka version, recorded")
	flag.Parse()
	ctx := context.Background()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	must(err)
	adm := kadm.NewClient(cl)
	for i := 0; ; i++ {
		if _, err := adm.ListBrokers(ctx); err == nil {
			if _, err := adm.ListTopics(ctx); err == nil {
				break
			}
		}
		if i > 240 {
			panic("broker not up")
		}
		time.Sleep(500 * time.Millisecond)
	}
	str := func(s string) *string { return &s }
	_, err = adm.CreateTopic(ctx, 2, 1, map[string]*string{"cleanup.policy": str("delete"), "retention.ms": str("86400000")}, orders)
	must(err)
	_, err = adm.CreateTopic(ctx, 1, 1, map[string]*string{"cleanup.policy": str("compact"), "min.compaction.lag.ms": str("0"), "segment.bytes": str("1048576")}, changelog)
	must(err)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, out)
	must(err)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, eosOut)
	must(err)
	_, err = adm.CreateTopic(ctx, 1, 1, nil, doomed)
	must(err)
	// a config change and a deletion: later metadata records win
	_, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "retention.ms", Value: str("172800000")}, {Op: kadm.SetConfig, Name: "unclean.leader.election.enable", Value: str("true")}}, orders)
	must(err)
	_, err = adm.DeleteTopics(ctx, doomed)
	must(err)

	p, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(err)
	for i := range 10 {
		for part := range int32(2) {
			must(p.ProduceSync(ctx, &kgo.Record{Topic: orders, Partition: part, Key: []byte(fmt.Sprintf("o%d", i)), Value: []byte(fmt.Sprintf("order %d/%d", part, i))}).FirstErr())
		}
	}
	for i := range 3 {
		must(p.ProduceSync(ctx, &kgo.Record{Topic: changelog, Key: []byte("k"), Value: []byte(fmt.Sprintf("state %d", i))}).FirstErr())
	}
	p.Close()
	// a purge: gen.orders-1 starts at 2
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{orders: {1: {At: 2}}})
	must(err)
	must(dr.Error())

	// a classic group member consumes and commits, then leaves
	c, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ConsumerGroup(group), kgo.ConsumeTopics(orders), kgo.DisableAutoCommit(),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	must(err)
	got := 0
	for got < 4 {
		fs := c.PollFetches(ctx)
		must(fs.Err())
		got += fs.NumRecords()
	}
	var commitErr error
	c.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{orders: {0: {Epoch: -1, Offset: 4}, 1: {Epoch: -1, Offset: 3}}},
		func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil {
				commitErr = err
				return
			}
			for _, t := range resp.Topics {
				for _, pp := range t.Partitions {
					if err := kerr.ErrorForCode(pp.ErrorCode); err != nil {
						commitErr = err
					}
				}
			}
		})
	must(commitErr)
	c.Close() // leaves the group: it is Empty
	// plain commits while the group is empty, then a deleted offset (a tombstone)
	set := kadm.Offsets{}
	set.Add(kadm.Offset{Topic: orders, Partition: 0, At: 6, LeaderEpoch: -1, Metadata: "m0"})
	set.Add(kadm.Offset{Topic: changelog, Partition: 0, At: 1, LeaderEpoch: -1})
	cr, err := adm.CommitOffsets(ctx, group, set)
	must(err)
	must(cr.Error())
	dor, err := adm.DeleteOffsets(ctx, group, kadm.TopicsSet{changelog: {0: {}}})
	must(err)
	must(dor.Error())

	eos(ctx)
	var next *kgo.Client
	if strings.HasPrefix(*version, "4.") {
		next = nextGen(ctx)
	}

	// transactional offset commits: one committed, one aborted, one left open
	txn(ctx, group+"-0_0", map[int32]int64{1: 7}, true, "committed")
	txn(ctx, group+"-0_1", map[int32]int64{0: 99}, false, "aborted")
	open := txn(ctx, group+"-1_0", map[int32]int64{0: 8}, false, "")

	// what the live broker says now
	exp := Expected{Version: *version, Group: group, Offsets: map[string]int64{}, Metadata: map[string]string{}, Producers: map[string][]audit.Producer{},
		Offsets2: map[string]audit.PartitionOffsets{}, Pending: map[string]int64{fmt.Sprintf("%s/0", orders): 8}}
	fo, err := adm.FetchOffsets(ctx, group) // not require_stable: the open transaction holds gen.orders-0
	must(err)
	must(fo.Error())
	fo.Each(func(o kadm.OffsetResponse) {
		exp.Offsets[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.At
		exp.Metadata[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Metadata
	})
	dg, err := adm.DescribeGroups(ctx, group)
	must(err)
	exp.GroupState = dg[group].State
	exp.Groups = map[string]GroupLive{}
	for _, g := range []string{eosGroup, nextGroup} {
		if g == nextGroup && next == nil {
			continue
		}
		gl := GroupLive{Offsets: map[string]int64{}, Metadata: map[string]string{}}
		fo, err := adm.FetchOffsets(ctx, g)
		must(err)
		must(fo.Error())
		fo.Each(func(o kadm.OffsetResponse) {
			gl.Offsets[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.At
			gl.Metadata[fmt.Sprintf("%s/%d", o.Topic, o.Partition)] = o.Metadata
		})
		if g == nextGroup {
			cg, err := adm.DescribeConsumerGroups(ctx, g)
			must(err)
			gl.State, gl.Members = cg[g].State, len(cg[g].Members)
		} else {
			dg, err := adm.DescribeGroups(ctx, g)
			must(err)
			gl.State, gl.Members = dg[g].State, len(dg[g].Members)
		}
		exp.Groups[g] = gl
	}
	src, err := kafka.Open(ctx, kafka.Config{Bootstrap: []string{bs}, Timeout: 10 * time.Second})
	must(err)
	if _, err := src.GroupOffsets(ctx, group); err != nil {
		exp.Notes = append(exp.Notes, "live GroupOffsets (require_stable): "+err.Error())
	}
	exp.Transactions, err = src.Transactions(ctx, "")
	must(err)
	tps := []audit.TopicPartition{{Topic: orders, Partition: 0}, {Topic: orders, Partition: 1}, {Topic: out, Partition: 0}, {Topic: eosOut, Partition: 0}, {Topic: changelog, Partition: 0}}
	prods, err := src.Producers(ctx, tps)
	must(err)
	for tp, ps := range prods {
		exp.Producers[tp.String()] = ps
	}
	for _, tp := range tps {
		o, err := src.Offsets(ctx, tp)
		must(err)
		exp.Offsets2[tp.String()] = o
	}
	exp.Topics, err = src.Topics(ctx)
	must(err)
	exp.Topics = slices.DeleteFunc(exp.Topics, func(t audit.TopicInfo) bool { return t.Name == "__consumer_offsets" || t.Name == "__transaction_state" })
	src.Close()
	b, err := json.MarshalIndent(exp, "", " ")
	must(err)
	must(os.WriteFile(*outPath, append(b, '\n'), 0o644))
	fmt.Fprintf(os.Stderr, "gen: offsets %v, %d transactions\n", exp.Offsets, len(exp.Transactions))
	// let the metadata snapshot interval pass so the metadata log has a snapshot
	time.Sleep(7 * time.Second)
	_ = open // the open transaction stays open: the process exits without ending it
	_ = next // and the KIP-848 member stays in its group
	os.Exit(0)
}

// eos consumes gen.orders in group gen-eos with a GroupTransactSession
// (offsets committed in each transaction by a member of the group, as
// Kafka Streams does), copying to gen.eos-out: two committed transactions
// and an aborted one, then it leaves.
func eos(ctx context.Context) {
	s, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(bs), kgo.TransactionalID(eosGroup+"-0"), kgo.ConsumerGroup(eosGroup),
		kgo.ConsumeTopics(orders), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10*time.Minute), kgo.FetchMaxWait(200*time.Millisecond))
	must(err)
	consumed, rounds := 0, 0
	for consumed < 18 && rounds < 100 { // gen.orders holds 10 + 8 records
		rounds++
		fs := s.PollRecords(ctx, 5)
		must(fs.Err())
		if fs.NumRecords() == 0 {
			continue
		}
		must(s.Begin())
		var rs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			rs = append(rs, &kgo.Record{Topic: eosOut, Partition: 0, Key: r.Key, Value: r.Value})
		})
		must(s.ProduceSync(ctx, rs...).FirstErr())
		commit := kgo.TryCommit
		if rounds == 2 {
			commit = kgo.TryAbort // replayed from the last commit by the session
		} else {
			consumed += fs.NumRecords()
		}
		_, err := s.End(ctx, commit)
		must(err)
	}
	s.Close()
}

// nextGen joins a KIP-848 consumer group (Kafka 4), commits, and stays.
func nextGen(ctx context.Context) *kgo.Client {
	c, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ConsumerGroup(nextGroup), kgo.ConsumeTopics(orders), kgo.DisableAutoCommit(),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	must(err)
	got := 0
	for got < 2 {
		fs := c.PollFetches(ctx)
		must(fs.Err())
		got += fs.NumRecords()
	}
	must(c.CommitUncommittedOffsets(ctx))
	return c
}

// txn runs one transaction of id: a record to gen.out, the offsets of
// gen.orders committed in it for the group, then commit or abort, or
// (end == "") leave it open.
func txn(ctx context.Context, id string, offs map[int32]int64, commit bool, end string) *kgo.Client {
	tx, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.TransactionalID(id), kgo.TransactionTimeout(10*time.Minute), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	must(err)
	must(tx.BeginTransaction())
	must(tx.ProduceSync(ctx, &kgo.Record{Topic: out, Partition: 0, Key: []byte(id), Value: []byte("txn " + id)}).FirstErr())
	pid, epoch, err := tx.ProducerID(ctx)
	must(err)
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, pid, epoch, group
	ar, err := add.RequestWith(ctx, tx)
	must(err)
	must(kerr.ErrorForCode(ar.ErrorCode))
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch = id, group, pid, epoch
	toc.Generation, toc.MemberID = -1, ""
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = orders
	for part, o := range offs {
		pp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		pp.Partition, pp.Offset, pp.LeaderEpoch = part, o, -1
		meta := "txn " + id
		pp.Metadata = &meta
		t.Partitions = append(t.Partitions, pp)
	}
	toc.Topics = append(toc.Topics, t)
	tr, err := toc.RequestWith(ctx, tx)
	must(err)
	for _, t := range tr.Topics {
		for _, pp := range t.Partitions {
			must(kerr.ErrorForCode(pp.ErrorCode))
		}
	}
	if end == "" {
		return tx
	}
	must(tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	tx.Close()
	return nil
}
