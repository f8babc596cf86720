package topology

import (
	"strings"
	"testing"
)

// TestTopologyBounds: a describe() text with a byte order mark parses like
// one without; one larger than MaxTopologyBytes is refused.
func TestTopologyBounds(t *testing.T) {
	text := "Topologies:\n   Sub-topology: 0\n    Source: s (topics: [in])\n      --> k\n    Sink: k (topic: out)\n      <-- s\n"
	plain, err := ParseString(text)
	if err != nil {
		t.Fatal(err)
	}
	bom, err := ParseString("\ufeff" + text)
	if err != nil || len(bom.SubTopologies) != len(plain.SubTopologies) {
		t.Fatalf("with a BOM: %v", err)
	}
	if _, err := ParseString(strings.Repeat("\n", MaxTopologyBytes+1)); err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("a text of %d bytes: %v, want refused", MaxTopologyBytes+1, err)
	}
}
