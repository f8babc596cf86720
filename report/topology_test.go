package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/topology"
	"github.com/kaudit/kaudit/audit/txns"
)

// TestTopologyGolden renders the seed incident's topology (the real
// describe() text of Kafka Streams 3.6) as kaudit topology's table.
func TestTopologyGolden(t *testing.T) {
	topo, err := topology.ReadFile(filepath.Join("..", "testdata", "kafka", "describe", "out", "3.6", "seed.txt"))
	if err != nil {
		t.Fatal(err)
	}
	doc := TopologyDoc{AppID: "orders-app", Topology: topo, Layout: topo.Layout("orders-app"), Findings: []audit.Finding{}}
	var b bytes.Buffer
	if err := TopologyTable(&b, doc); err != nil {
		t.Fatal(err)
	}
	golden(t, "topology-seed.txt.golden", b.Bytes())
	b.Reset()
	if err := TopologyJSON(&b, doc); err != nil {
		t.Fatal(err)
	}
	var back TopologyDoc
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.AppID != "orders-app" || len(back.Layout.Topics) != len(doc.Layout.Topics) {
		t.Errorf("the JSON reads back as %+v (%v)", back, err)
	}
}

// TestTxnsGolden renders the census audit/txns writes for its fixture
// (its golden JSON) as kaudit txns' table.
func TestTxnsGolden(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "audit", "txns", "testdata", "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc txns.Census
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := TxnsTable(&out, &doc); err != nil {
		t.Fatal(err)
	}
	golden(t, "txns-shop.txt.golden", out.Bytes())
}
