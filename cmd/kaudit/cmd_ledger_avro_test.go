package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// TestLedgerAvroValues: kaudit ledger --value-serde avro
// --schema-registry-url URL --offsets A-B --format json prints decoded
// values for an Avro topic on kfake.
func TestLedgerAvroValues(t *testing.T) {
	reg := fakeregistry.New()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		t.Fatal(err)
	}
	s := fakeapp.SeedScenario("shop", 60)
	s.Encode = enc.Encode
	c, _ := fakeapp.KfakeApp(t, s)
	out, errOut, code := runCLI(t, "ledger", "--bootstrap-server", c.ListenAddrs()[0], "--topic", "orders-v1", "--partition", "0",
		"--offsets", "0-4", "--value-serde", "avro", "--schema-registry-url", srv.URL, "--format", "json")
	if code != exitClean {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Partitions []struct {
			Values []struct {
				Offset     int64
				Key, Value json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	vals := doc.Partitions[0].Values
	if len(vals) != 5 {
		t.Fatalf("%d decoded records, want 5: %s", len(vals), out)
	}
	for _, v := range vals {
		var m map[string]any
		if err := json.Unmarshal([]byte(v.Value), &m); err != nil || m["table"] != "orders" || strings.HasPrefix(string(v.Value), "b64:") {
			t.Errorf("offset %d: value %s is not the decoded Avro record", v.Offset, v.Value)
		}
		if !strings.HasPrefix(string(v.Key), `"evt-orders-`) {
			t.Errorf("offset %d: key %s", v.Offset, v.Key)
		}
	}
}
