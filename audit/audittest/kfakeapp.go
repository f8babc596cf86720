package audittest

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
)

// KfakeApp writes s into a fresh in-process kfake cluster on 127.0.0.1
// with real transactional producers and returns the cluster and the
// ground truth. The cluster and the producers (which keep any open
// transaction alive) close when the test ends.
func KfakeApp(t testing.TB, s Scenario, opts ...kfake.Opt) (*kfake.Cluster, *Truth) {
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
