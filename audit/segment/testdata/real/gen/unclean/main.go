// Command unclean drives gen-unclean.sh's two brokers: create a topic on
// both, produce, elect an out-of-sync replica uncleanly, produce again.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const topic = "u.orders"

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "unclean:", err)
		os.Exit(1)
	}
}

func main() {
	ctx := context.Background()
	bs, step := os.Args[1], os.Args[2]
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DisableIdempotentWrite(),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProduceRequestTimeout(10*time.Second), kgo.RecordDeliveryTimeout(30*time.Second))
	must(err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch step {
	case "wait": // until N brokers are listed
		n, _ := strconv.Atoi(os.Args[3])
		for i := 0; ; i++ {
			if bm, err := adm.ListBrokers(ctx); err == nil && len(bm) >= n {
				return
			}
			if i > 240 {
				must(fmt.Errorf("%d brokers not up", n))
			}
			time.Sleep(500 * time.Millisecond)
		}
	case "create":
		str := func(s string) *string { return &s }
		resp, err := adm.CreateTopics(ctx, -1, -1, map[string]*string{"min.insync.replicas": str("1"), "unclean.leader.election.enable": str("false")}, topic)
		_ = resp
		must(err)
	case "produce": // produce N records "wave W #i"
		n, _ := strconv.Atoi(os.Args[3])
		for i := range n {
			must(cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s #%d", os.Args[4], i))}).FirstErr())
		}
	case "elect":
		for i := 0; ; i++ {
			res, err := adm.ElectLeaders(ctx, kadm.ElectLiveReplica, kadm.TopicsSet{topic: {0: {}}})
			if err == nil {
				if r, ok := res[topic][0]; ok && r.Err == nil {
					return
				} else if ok {
					err = r.Err
				}
			}
			if i > 60 {
				must(fmt.Errorf("unclean election: %v", err))
			}
			time.Sleep(time.Second)
		}
	}
}
