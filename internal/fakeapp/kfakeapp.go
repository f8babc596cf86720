package fakeapp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TB is the part of testing.TB the helpers use: the package links no
// "testing", so the demo can ship it in the binary.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
	Context() context.Context
}

// fakeTries is how many fresh clusters WriteFake writes a scenario into
// before it gives up: kfake and franz-go's transactional producer very
// rarely disagree on a producer's sequence (OUT_OF_ORDER_SEQUENCE_NUMBER:
// once in a CI run, not again in thousands of scenarios written under
// load), a fault of the fake, not of the app under test.
const fakeTries = 3

// KfakeApp writes s into a fresh in-process kfake cluster on 127.0.0.1
// with real transactional producers (WriteFake) and returns the cluster
// and the ground truth. The cluster and the producers (which keep any
// open transaction alive) close when the test ends.
func KfakeApp(t TB, s Scenario, opts ...kfake.Opt) (*kfake.Cluster, *Truth) {
	t.Helper()
	f, truth, err := WriteFake(t.Context(), s, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f.Cluster, truth
}

// A Fake is a kfake cluster and the producers that wrote an app into it.
type Fake struct {
	*kfake.Cluster
	b *KafkaBackend
}

// Close closes the producers, then the cluster.
func (f *Fake) Close() {
	if f.b != nil {
		f.b.Close()
	}
	f.Cluster.Close()
}

// WriteFake writes s into a fresh kfake cluster with opts. A scenario is
// generated from its seed, so a write the fake refused is written again,
// whole, into a new cluster.
func WriteFake(ctx context.Context, s Scenario, opts ...kfake.Opt) (*Fake, *Truth, error) {
	return writeFake(ctx, func(b Backend) (*Truth, error) { return Generate(s, b) }, opts)
}

// WriteFakeWindow is WriteFake for a windowed scenario.
func WriteFakeWindow(ctx context.Context, s WindowScenario, opts ...kfake.Opt) (*Fake, *WindowTruth, error) {
	return writeFake(ctx, func(b Backend) (*WindowTruth, error) { return GenerateWindow(s, b) }, opts)
}

func writeFake[T any](ctx context.Context, generate func(Backend) (T, error), opts []kfake.Opt) (*Fake, T, error) {
	for try := 1; ; try++ {
		f, truth, err := writeFakeOnce(ctx, generate, opts)
		if err == nil || try == fakeTries || !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
			return f, truth, err
		}
	}
}

func writeFakeOnce[T any](ctx context.Context, generate func(Backend) (T, error), opts []kfake.Opt) (*Fake, T, error) {
	var none T
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		return nil, none, fmt.Errorf("start kfake: %w", err)
	}
	f := &Fake{Cluster: c}
	if f.b, err = NewKafkaBackend(ctx, c.ListenAddrs()...); err != nil {
		f.Close()
		return nil, none, err
	}
	truth, err := generate(f.b)
	if err != nil {
		f.Close()
		return nil, none, fmt.Errorf("generate: %w", err)
	}
	if err := f.ageOpenTxns(ctx); err != nil {
		f.Close()
		return nil, none, err
	}
	return f, truth, nil
}

// ageOpenTxns makes the cluster's transaction coordinator say that each
// transaction the app left open began when its first record was written
// in the fake's time (kfake's clock is the wall clock: a transaction the
// fake began an hour ago began a moment ago there). It asks the
// coordinator once for every transactional id and answers every
// DescribeTransactions from then on with that, the open ones' start
// moved back: the app is written, nothing changes any more.
func (f *Fake) ageOpenTxns(ctx context.Context) error {
	if len(f.b.starts) == 0 {
		return nil
	}
	lts, err := f.b.adm.ListTransactions(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("list transactions: %w", err)
	}
	dts, err := f.b.adm.DescribeTransactions(ctx, lts.TransactionalIDs()...)
	if err != nil {
		return fmt.Errorf("describe transactions: %w", err)
	}
	states := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
	for id, dt := range dts {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.State, st.ProducerID, st.ProducerEpoch = id, dt.State, dt.ProducerID, dt.ProducerEpoch
		st.TimeoutMillis, st.StartTimestamp = dt.TimeoutMillis, dt.StartTimestamp
		if start, ok := f.b.starts[id]; ok && start > 0 && dt.State == "Ongoing" {
			st.StartTimestamp = start
		}
		for topic, ps := range dt.Topics {
			t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			t.Topic = topic
			for p := range ps {
				t.Partitions = append(t.Partitions, p)
			}
			slices.Sort(t.Partitions)
			st.Topics = append(st.Topics, t)
		}
		slices.SortFunc(st.Topics, func(a, b kmsg.DescribeTransactionsResponseTransactionStateTopic) int {
			return strings.Compare(a.Topic, b.Topic)
		})
		states[id] = st
	}
	f.Cluster.ControlKey(int16(kmsg.DescribeTransactions), func(req kmsg.Request) (kmsg.Response, error, bool) {
		f.Cluster.KeepControl()
		r := req.(*kmsg.DescribeTransactionsRequest)
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range r.TransactionalIDs {
			st, ok := states[id]
			if !ok {
				st = kmsg.NewDescribeTransactionsResponseTransactionState()
				st.TransactionalID, st.ErrorCode = id, kerr.TransactionalIDNotFound.Code
			}
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return resp, nil, true
	})
	return nil
}
