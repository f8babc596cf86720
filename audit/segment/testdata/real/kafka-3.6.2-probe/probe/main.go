// Command segprobe writes real-broker segment fixtures: it produces a mix of
// batches to a 3.6.2 broker and saves what the broker serves back.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/kafka"
)

const bs = "127.0.0.1:29192"

func must(err error) {
	if err != nil {
		panic(err)
	}
}

type expected struct {
	Partitions []expectedPartition `json:"partitions"`
}

type expectedPartition struct {
	Topic     string                 `json:"topic"`
	Partition int32                  `json:"partition"`
	Offsets   audit.PartitionOffsets `json:"offsets"`
	Records   []audit.Record         `json:"records"`
}

func main() {
	ctx := context.Background()
	adm, err := kgo.NewClient(kgo.SeedBrokers(bs))
	must(err)
	ad := kadm.NewClient(adm)
	for i := 0; ; i++ {
		if _, err := ad.ListBrokers(ctx); err == nil {
			break
		}
		if i > 120 {
			panic("broker not up")
		}
		time.Sleep(500 * time.Millisecond)
	}
	_, err = ad.CreateTopic(ctx, 2, 1, nil, "probe.orders-v1")
	must(err)
	lat := "LogAppendTime"
	_, err = ad.CreateTopic(ctx, 1, 1, map[string]*string{"message.timestamp.type": &lat}, "probe-app-repartition")
	must(err)

	// Idempotent batches, one codec each, keyed across both partitions.
	for _, c := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ProducerBatchCompression(c), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(50*time.Millisecond))
		must(err)
		var rs []*kgo.Record
		for i := range 6 {
			r := &kgo.Record{Topic: "probe.orders-v1", Partition: int32(i % 2), Key: []byte(fmt.Sprintf("k%d", i)),
				Value:   []byte(strings.Repeat(fmt.Sprintf("value %d ", i), 20)),
				Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte{byte(i)}}}}
			if i == 3 {
				r.Key = nil
			}
			if i == 4 {
				r.Value = nil
			}
			rs = append(rs, r)
		}
		must(cl.ProduceSync(ctx, rs...).FirstErr())
		cl.Close()
	}
	// Transactions: commit, abort, commit, then one left open.
	tx, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.TransactionalID("probe-app-0_0"), kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(10*time.Minute))
	must(err)
	for i, commit := range []bool{true, false, true} {
		must(tx.BeginTransaction())
		for p := range int32(2) {
			must(tx.ProduceSync(ctx, &kgo.Record{Topic: "probe.orders-v1", Partition: p, Key: []byte(fmt.Sprintf("t%d", i)), Value: []byte("txn")}).FirstErr())
		}
		must(tx.ProduceSync(ctx, &kgo.Record{Topic: "probe-app-repartition", Key: []byte(fmt.Sprintf("t%d", i)), Value: []byte("lat")}).FirstErr())
		must(tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)))
	}
	open, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.TransactionalID("probe-app-0_1"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(10*time.Minute))
	must(err)
	must(open.BeginTransaction())
	must(open.ProduceSync(ctx, &kgo.Record{Topic: "probe.orders-v1", Partition: 1, Key: []byte("open"), Value: []byte("hanging")}).FirstErr())
	// A plain record after the open transaction: above the LSO.
	plain, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite())
	must(err)
	must(plain.ProduceSync(ctx, &kgo.Record{Topic: "probe.orders-v1", Partition: 1, Key: []byte("after"), Value: []byte("plain")}).FirstErr())
	plain.Close()

	src, err := kafka.Open(ctx, kafka.Config{Bootstrap: []string{bs}, Timeout: 10 * time.Second})
	must(err)
	var exp expected
	for _, tp := range []audit.TopicPartition{{Topic: "probe.orders-v1", Partition: 0}, {Topic: "probe.orders-v1", Partition: 1}, {Topic: "probe-app-repartition", Partition: 0}} {
		o, err := src.Offsets(ctx, tp)
		must(err)
		ep := expectedPartition{Topic: tp.Topic, Partition: tp.Partition, Offsets: o}
		for r, err := range src.Records(ctx, tp, 0, -1) {
			must(err)
			ep.Records = append(ep.Records, r)
		}
		exp.Partitions = append(exp.Partitions, ep)
		fmt.Fprintf(os.Stderr, "%s: %+v, %d records\n", tp, o, len(ep.Records))
	}
	b, err := json.MarshalIndent(exp, "", " ")
	must(err)
	must(os.WriteFile("/tmp/segprobe/expected.json", b, 0o644))
	// The open transaction stays open: the process exits without ending it.
	os.Exit(0)
}
