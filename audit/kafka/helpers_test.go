package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

// newCluster starts an in-process kfake cluster on 127.0.0.1.
func newCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// openSource opens a Source on c with a short timeout.
func openSource(t *testing.T, c *kfake.Cluster, props map[string]string) *Source {
	t.Helper()
	s, err := Open(t.Context(), Config{Bootstrap: c.ListenAddrs(), Properties: props, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newClient is a test-side writer: it produces, runs transactions and admin
// calls the Source itself must never make.
func newClient(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{
		kgo.SeedBrokers(c.ListenAddrs()...),
		kgo.ProducerLinger(20 * time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RetryTimeout(5 * time.Second),
	}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, cl *kgo.Client, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	resp, err := kadm.NewClient(cl).CreateTopic(t.Context(), partitions, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// produce writes records (all in one batch when the linger allows) and
// returns them with their offsets.
func produce(t *testing.T, cl *kgo.Client, topic string, partition int32, kvs ...string) []*kgo.Record {
	t.Helper()
	var rs []*kgo.Record
	for i := 0; i+1 < len(kvs); i += 2 {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: partition, Key: []byte(kvs[i]), Value: []byte(kvs[i+1])})
	}
	if err := cl.ProduceSync(t.Context(), rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	return rs
}

func begin(t *testing.T, cl *kgo.Client) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
}

func end(t *testing.T, cl *kgo.Client, commit kgo.TransactionEndTry) {
	t.Helper()
	if err := cl.EndTransaction(t.Context(), commit); err != nil {
		t.Fatal(err)
	}
}

// collect drains a record sequence, failing the test on an error.
func collect(t *testing.T, seq func(func(audit.Record, error) bool)) []audit.Record {
	t.Helper()
	var out []audit.Record
	for r, err := range seq {
		if err != nil {
			t.Fatalf("after %d records: %v", len(out), err)
		}
		out = append(out, r)
	}
	return out
}

// collectErr drains a record sequence and returns the records and the
// error that ended it, checking that nothing follows an error.
func collectErr(t *testing.T, seq func(func(audit.Record, error) bool)) ([]audit.Record, error) {
	t.Helper()
	var (
		out  []audit.Record
		last error
	)
	for r, err := range seq {
		if last != nil {
			t.Fatalf("sequence went on after error %v", last)
		}
		if err != nil {
			last = err
			continue
		}
		out = append(out, r)
	}
	return out, last
}

func offsetsOf(rs []audit.Record) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Offset)
	}
	return out
}

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
