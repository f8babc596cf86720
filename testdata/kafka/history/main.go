// Command history measures the group's commit history on a real broker
// (broker.sh: Apache Kafka 3.6.2, __consumer_offsets in 256 KiB segments):
// how much a commit weighs in __consumer_offsets, what compaction leaves,
// what survives a restart, and the analysis of a skip past deleted offsets
// after the app has moved past it. A franz-go GroupTransactSession copies
// m.in to m.out and commits every 100 ms, as Kafka Streams under
// exactly-once does; kaudit reads the history live.
//
//	broker.sh start
//	go run ./testdata/kafka/history setup
//	go run ./testdata/kafka/history run 90      # input at 200/s, 90 s of commits
//	go run ./testdata/kafka/history history     # the history as kaudit reads it live
//	broker.sh stop && broker.sh start           # a restart: the history again
//	go run ./testdata/kafka/history delete      # the group down: 60 more records, DeleteRecords past its offset
//	go run ./testdata/kafka/history run 8       # the app back: OFFSET_OUT_OF_RANGE, reset, commits past
//	go run ./testdata/kafka/history analyze SINCE   # without, then with the broker's log
//
// WORK (default testdata/kafka/work/history) is broker.sh's.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/kafka"
)

const bs = "127.0.0.1:23192"
const group = "kaudit-m"

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func main() {
	ctx := context.Background()
	switch os.Args[1] {
	case "setup":
		cl, _ := kgo.NewClient(kgo.SeedBrokers(bs))
		adm := kadm.NewClient(cl)
		_, err := adm.CreateTopic(ctx, 4, 1, nil, "m.in")
		must(err)
		_, err = adm.CreateTopic(ctx, 4, 1, nil, "m.out")
		must(err)
	case "run": // run SECONDS: input at 200/s, an EOS copier committing every 100 ms
		secs := atoi(os.Args[2])
		run(ctx, time.Duration(secs)*time.Second)
	case "history":
		s, err := kafka.Open(ctx, kafka.Config{Bootstrap: []string{bs}})
		must(err)
		t0 := time.Now()
		h, err := s.CommitHistory(ctx, group)
		must(err)
		n, txn, plain, rep := 0, 0, 0, 0
		var first, last int64 = -1, 0
		for _, cs := range h.Commits {
			for _, c := range cs {
				n++
				rep += int(c.Repeats)
				if c.Transactional {
					txn++
				} else {
					plain++
				}
				if first < 0 || c.Time < first {
					first = c.Time
				}
				last = max(last, c.LastTime)
			}
		}
		var bytes int64
		files, _ := filepath.Glob(filepath.Join(work(), "data", fmt.Sprintf("__consumer_offsets-%d", h.Log.Partition), "*.log"))
		var segs []string
		for _, f := range files {
			st, _ := os.Stat(f)
			bytes += st.Size()
			segs = append(segs, fmt.Sprintf("%s:%d", filepath.Base(f), st.Size()))
		}
		fmt.Printf("read in %v: %s of %d, offsets %d-%d, %d records, holes %d offsets in %d ranges (+%d dropped), whole from %d since %v\n",
			time.Since(t0).Round(time.Millisecond), h.Log, h.Partitions, h.LogStart, h.End, h.Records, h.HoleOffsets, len(h.Holes), h.HolesDropped, h.WholeFrom, time.UnixMilli(h.WholeSince).UTC().Format(time.RFC3339))
		fmt.Printf("effective commits listed %d (transactional %d, plain %d, repeats folded %d), from %v to %v; aborted %d; generations %d\n",
			n, txn, plain, rep, time.UnixMilli(first).UTC().Format(time.RFC3339), time.UnixMilli(last).UTC().Format(time.RFC3339), len(h.Aborted), len(h.Generations))
		fmt.Printf("segments %v, %d bytes\n", segs, bytes)
		for _, g := range h.Generations {
			fmt.Printf("  gen %d members %d at %d %v\n", g.Generation, g.Members, g.At, time.UnixMilli(g.Time).UTC().Format("15:04:05.000"))
		}
		tp := audit.TopicPartition{Topic: "m.in", Partition: 0}
		cs := h.Commits[tp]
		if len(cs) > 0 {
			fmt.Printf("m.in/0: %d commits, first %+v\n  last %+v\n", len(cs), cs[0], cs[len(cs)-1])
		}
	case "delete": // delete m.in/0 records up to committed+30
		cl, _ := kgo.NewClient(kgo.SeedBrokers(bs), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		adm := kadm.NewClient(cl)
		offs, err := adm.FetchOffsets(ctx, group)
		must(err)
		o, _ := offs.Lookup("m.in", 0)
		for i := range 60 {
			must(cl.ProduceSync(ctx, &kgo.Record{Topic: "m.in", Partition: 0, Value: []byte(fmt.Sprint("while-down-", i))}).FirstErr())
		}
		to := o.At + 30
		fmt.Printf("committed m.in/0 = %d; deleting records below %d at %v\n", o.At, to, time.Now().UTC().Format("15:04:05.000"))
		set := kadm.Offsets{}
		set.Add(kadm.Offset{Topic: "m.in", Partition: 0, At: to})
		r, err := adm.DeleteRecords(ctx, set)
		must(err)
		must(r.Error())
	case "analyze":
		s, err := kafka.Open(ctx, kafka.Config{Bootstrap: []string{bs}})
		must(err)
		tp := audit.TopicPartition{Topic: "m.in", Partition: 0}
		po, err := s.Offsets(ctx, tp)
		must(err)
		for _, logs := range [][]string{nil, {filepath.Join(work(), "logs", "server.log")}} {
			ev, err := history.Gather(ctx, s, group, history.Logs{Broker: logs})
			must(err)
			if len(os.Args) > 2 {
				since, _ := time.Parse(time.RFC3339, os.Args[2])
				ev.Since = since
			}
			res := ev.Analyze(history.Partition{TP: tp, Role: history.Source, LogStart: po.LogStart, Now: time.Now()})
			fmt.Printf("== logs %v: log start now %d, judged %d\n", logs, po.LogStart, res.Judged)
			for _, f := range res.Findings() {
				fmt.Printf("FINDING %s %s %s@%d count %d: %s\n", f.Stage, f.Cause, tp, f.Offset, f.Count, f.Detail)
			}
			for _, m := range res.Missing() {
				fmt.Println("MISSING", m)
			}
			for _, n := range append(ev.Notes, res.Notes...) {
				fmt.Println("NOTE", n)
			}
			n := 0
			for _, e := range ev.Events {
				if e.Kind == applog.LogStartIncremented || e.Kind == applog.Cleaned {
					n++
					if n <= 6 {
						fmt.Println("EVENT", e.Kind, e.TP, e.Offset, e.To, e.Reason, e.Time)
					}
				}
			}
			fmt.Println("events", len(ev.Events), "log-start/cleaner", n)
		}
	}
}

func atoi(s string) int {
	var n int
	fmt.Sscan(s, &n)
	return n
}

// work is broker.sh's WORK.
func work() string {
	if w := os.Getenv("WORK"); w != "" {
		return w
	}
	return filepath.Join("testdata", "kafka", "work", "history")
}

func run(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ProducerLinger(5*time.Millisecond))
	must(err)
	defer prod.Close()
	go func() {
		i := 0
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				prod.Produce(ctx, &kgo.Record{Topic: "m.in", Key: []byte(fmt.Sprint("k", i%97)), Value: []byte(fmt.Sprint(i))}, nil)
				i++
			}
		}
	}()
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(bs), kgo.ConsumerGroup(group), kgo.ConsumeTopics("m.in"),
		kgo.TransactionalID(group+"-0"), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.WithLogger(kgo.BasicLogger(os.Stderr, kgo.LogLevelInfo, nil)))
	must(err)
	defer sess.Close()
	commits := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		<-tick.C
		fctx, fcancel := context.WithTimeout(ctx, 90*time.Millisecond)
		fs := sess.PollFetches(fctx)
		fcancel()
		if err := sess.Begin(); err != nil {
			panic(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Topic: "m.out", Key: r.Key, Value: r.Value, Partition: r.Partition}, nil)
		})
		ok, err := sess.End(context.Background(), kgo.TryCommit)
		if err == nil && ok {
			commits++
		}
	}
	fmt.Printf("%d commits in %v\n", commits, d)
}
