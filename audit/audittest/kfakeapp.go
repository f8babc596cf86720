package audittest

import (
	"context"

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

// KfakeApp writes s into a fresh in-process kfake cluster on 127.0.0.1
// with real transactional producers and returns the cluster and the
// ground truth. The cluster and the producers (which keep any open
// transaction alive) close when the test ends.
func KfakeApp(t TB, s Scenario, opts ...kfake.Opt) (*kfake.Cluster, *Truth) {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	b, err := NewKafkaBackend(t.Context(), c.ListenAddrs()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	truth, err := Generate(s, b)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	return c, truth
}
