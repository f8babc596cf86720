package fakeapp

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
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
	return f, truth, nil
}
