package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kaudit/kaudit/internal/fakeapp"
)

// safetyJSONSpec is the demo app's spec with JSON values, the encoding
// the scenario generator writes by default.
const safetyJSONSpec = `app_id: shop
topology: topology.txt
serdes: {key: string, value: json}
tables:
  - {name: orders,    source: orders-v1,    select_key: value.orderId, reduce: latest}
  - {name: payments,  source: payments-v1,  select_key: value.orderId, reduce: latest}
  - {name: shipments, source: shipments-v1, select_key: value.orderId, reduce: latest}
joins:
  - output: order-status
    left: orders
    right: [payments, shipments]
    type: left
`

// writeSafetySpec writes the JSON spec and the demo topology into a
// fresh directory and returns the spec's path.
func writeSafetySpec(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	topo, err := demoFiles.ReadFile("demo/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "topology.txt"), topo, 0o600); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(dir, "kaudit.yaml")
	if err := os.WriteFile(spec, []byte(safetyJSONSpec), 0o600); err != nil {
		t.Fatal(err)
	}
	return spec
}

// loopback makes kfake listen on 127.0.0.1 only.
func loopback() kfake.Opt {
	return kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") })
}

// seededCluster starts a one-broker kfake cluster holding the seed-shaped
// app "shop" with n inputs per source: committed and aborted
// transactions, group offsets, purged repartition records, one dropped
// payment and one transaction left open on the output.
func seededCluster(t *testing.T, n int, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	s := fakeapp.SeedScenario("shop", n)
	s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultHangingTransaction}, {Kind: fakeapp.FaultDrop, Table: 1}}
	return scenarioCluster(t, s, opts...)
}

// cleanCluster is seededCluster without faults, lag or records in flight:
// its audit is clean.
func cleanCluster(t *testing.T, n int) (*kfake.Cluster, string) {
	t.Helper()
	s := fakeapp.SeedScenario("shop", n)
	s.Lag, s.Inflight = 0, 0
	return scenarioCluster(t, s)
}

// scenarioCluster writes s into a fresh kfake cluster. The backend that
// wrote it stays open (it keeps open transactions alive) until the test
// ends.
func scenarioCluster(t *testing.T, s fakeapp.Scenario, opts ...kfake.Opt) (*kfake.Cluster, string) {
	t.Helper()
	f, _, err := fakeapp.WriteFake(t.Context(), s, append([]kfake.Opt{loopback()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f.Cluster, strings.Join(f.ListenAddrs(), ",")
}
