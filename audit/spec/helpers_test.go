package spec

import (
	"testing"

	"github.com/kaudit/kaudit/audit/topology"
)

// describeDir holds describe() texts printed by real Kafka Streams builds.
const describeDir = "../../testdata/kafka/describe/out"

func parseFile(t testing.TB, file string) *topology.Topology {
	t.Helper()
	topo, err := topology.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}
