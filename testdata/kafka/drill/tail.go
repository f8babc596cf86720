package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// tailRec is one committed record a tailer read.
type tailRec struct {
	Offset int64
	Key    string
	Value  []byte
}

// tailer reads topics read_committed from their start while the scenario runs, so that the
// drill knows every committed record before Streams purges it (the ground truth of
// KAFKA-17635). It never resets: a purge that outran it is an error (err), not a silent skip.
type tailer struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}

	mu   sync.Mutex
	recs map[string]map[int32][]tailRec
	err  error
}

// tail starts a tailer on every topic matching re (a regexp).
func (d *drill) tail(ctx context.Context, re string) (*tailer, error) {
	cl, err := d.client(
		kgo.ConsumeRegex(), kgo.ConsumeTopics(re),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), // from the start; out of range is an error
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.MetadataMinAge(200*time.Millisecond), kgo.MetadataMaxAge(time.Second),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	c, cancel := context.WithCancel(ctx)
	t := &tailer{cl: cl, cancel: cancel, done: make(chan struct{}), recs: map[string]map[int32][]tailRec{}}
	go func() {
		defer close(t.done)
		for c.Err() == nil {
			fs := cl.PollFetches(c)
			fs.EachError(func(topic string, p int32, err error) {
				if errors.Is(err, context.Canceled) {
					return
				}
				t.mu.Lock()
				if t.err == nil {
					t.err = fmt.Errorf("tail %s/%d: %w", topic, p, err)
				}
				t.mu.Unlock()
			})
			t.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if t.recs[r.Topic] == nil {
					t.recs[r.Topic] = map[int32][]tailRec{}
				}
				t.recs[r.Topic][r.Partition] = append(t.recs[r.Topic][r.Partition], tailRec{Offset: r.Offset, Key: string(r.Key), Value: r.Value})
			})
			t.mu.Unlock()
		}
	}()
	return t, nil
}

// in returns the records of topic/p in [from, to) that the tailer read, and the highest offset
// it read there (-1: none).
func (t *tailer) in(topic string, p int32, from, to int64) ([]tailRec, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []tailRec
	last := int64(-1)
	for _, r := range t.recs[topic][p] {
		if r.Offset >= from && r.Offset < to {
			out = append(out, r)
		}
		last = max(last, r.Offset)
	}
	return out, last
}

func (t *tailer) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *tailer) stop() {
	t.cancel()
	<-t.done
	t.cl.Close()
}

// repartitionRe matches the app's repartition topics.
var repartitionRe = "^" + regexp.QuoteMeta(appID+"-") + ".*-repartition$"

// sourceOf finds the drill's source record of a repartition copy by the copy's decoded value
// (payments by paymentId, shipments by shipmentId, orders by orderId and seq).
func (r *scRun) sourceOf(value []byte) (*inputRec, error) {
	v, err := r.d.schemas.decode(r.d.regURL, value)
	if err != nil {
		return nil, err
	}
	for _, rec := range r.truth.Records {
		switch {
		case v["paymentId"] != nil:
			if rec.Topic == topicPayments && rec.Value["paymentId"] == v["paymentId"] {
				return rec, nil
			}
		case v["shipmentId"] != nil:
			if rec.Topic == topicShipments && rec.Value["shipmentId"] == v["shipmentId"] {
				return rec, nil
			}
		default:
			if rec.Topic == topicOrders && rec.Value["orderId"] == v["orderId"] && fmt.Sprint(rec.Value["seq"]) == fmt.Sprint(v["seq"]) {
				return rec, nil
			}
		}
	}
	return nil, fmt.Errorf("no source record of the drill has the value %v", v)
}
