package topology

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// wideTopology is a describe() text of n sub-topologies, each a source,
// a re-keying processor, a repartition sink, and (in the next
// sub-topology) a reduce with its store writing an output topic.
func wideTopology(n int) string {
	var b strings.Builder
	b.WriteString("Topologies:\n")
	for i := 0; i < n; i += 2 {
		fmt.Fprintf(&b, "   Sub-topology: %d\n", i)
		fmt.Fprintf(&b, "    Source: src-%d (topics: [in-%d])\n      --> key-%d\n", i, i, i)
		fmt.Fprintf(&b, "    Processor: key-%d (stores: [])\n      --> sink-%d\n      <-- src-%d\n", i, i, i)
		fmt.Fprintf(&b, "    Sink: sink-%d (topic: r-%d-repartition)\n      <-- key-%d\n\n", i, i, i)
		fmt.Fprintf(&b, "   Sub-topology: %d\n", i+1)
		fmt.Fprintf(&b, "    Source: rsrc-%d (topics: [r-%d-repartition])\n      --> reduce-%d\n", i, i, i)
		fmt.Fprintf(&b, "    Processor: reduce-%d (stores: [store-%d])\n      --> out-%d\n      <-- rsrc-%d\n", i, i, i, i)
		fmt.Fprintf(&b, "    Sink: out-%d (topic: out-%d)\n      <-- reduce-%d\n\n", i, i, i)
	}
	return b.String()
}

// TestLayoutScale: Layout is not quadratic in sub-topologies: 20,000 of
// them take well under a few seconds.
func TestLayoutScale(t *testing.T) {
	if testing.Short() {
		t.Skip("large topology")
	}
	topo, err := ParseString(wideTopology(20_000))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l := topo.Layout("app")
	took := time.Since(start)
	t.Logf("20,000 sub-topologies: %d topics, %d stores, %d edges in %v", len(l.Topics), len(l.Stores), len(l.Edges), took)
	if want := 4 * 10_000; len(l.Topics) != want {
		t.Errorf("%d topics, want %d", len(l.Topics), want)
	}
	budget := 3 * time.Second
	if raceEnabled {
		budget *= 10
	}
	if took > budget {
		t.Fatalf("Layout of 20,000 sub-topologies took %v", took)
	}
}

func BenchmarkLayout(b *testing.B) {
	for _, n := range []int{1000, 4000} {
		topo, err := ParseString(wideTopology(n))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				topo.Layout("app")
			}
		})
	}
}
