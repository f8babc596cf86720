package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// smokeUnmodelled are the nodes of Kafka's SmokeTestClient (testdata/smoke/topology.txt) on the
// way to an output its spec declares that kaudit recognises and does not model:
// toStream(new Unwindow<>()) before min, max, sum and cnt (a KSTREAM-KEY-SELECT from the
// windowed key to its key), and map((wk, v) -> KeyValue(wk.toString(), v)) before min-raw,
// min-suppressed, sws-raw and sws-suppressed (a KSTREAM-MAP). The drill's smoke scenarios hold
// the same list to the real topology (testdata/kafka/drill/smoke.go).
var smokeUnmodelled = []string{
	"KSTREAM-KEY-SELECT-0000000017", "KSTREAM-KEY-SELECT-0000000038", "KSTREAM-KEY-SELECT-0000000047", "KSTREAM-KEY-SELECT-0000000057",
	"KSTREAM-MAP-0000000008", "KSTREAM-MAP-0000000014", "KSTREAM-MAP-0000000024", "KSTREAM-MAP-0000000030",
}

// TestSmokeBundle audits the capture of a clean run of Kafka's own SmokeTestClient (Kafka
// Streams 3.6.2's test jar, exactly_once_v2, killed -9 twice mid-transaction; SmokeTestDriver
// said SUCCESS and ALL-RECORDS-DELIVERED; testdata/smoke/README.md) with its spec (windowed
// aggregates with suppress, builder.table of their outputs, two KTable-KTable inner joins, a
// KTable re-grouped with a subtractor, the echo copy) and with the spec of its windowed
// aggregates alone (docs/spec.md's shapes). Nothing was lost, so no finding may be a loss or
// an anomaly; the outputs behind nodes kaudit does not model are missing evidence naming each
// node (verdict incomplete), and nothing else is missing.
func TestSmokeBundle(t *testing.T) {
	for _, spec := range []string{"smoke", "smoke-windows"} {
		t.Run(spec, func(t *testing.T) {
			out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/smoke/capture", "--spec", "../../testdata/smoke/"+spec+".kaudit.yaml", "--format", "json")
			if code != exitIncomplete && code != 1 {
				t.Fatalf("exit %d, want %d (incomplete): %s", code, exitIncomplete, errOut)
			}
			var rep audit.Report
			if err := decodeReport([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			if code != exitIncomplete {
				t.Errorf("exit %d, want %d (incomplete)", code, exitIncomplete)
			}
			for _, f := range rep.Findings {
				switch f.Severity {
				case audit.SeverityLoss, audit.SeverityAnomaly:
					t.Errorf("finding %s/%s %s/%d@%d key %s: %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Key, f.Detail)
				}
			}
			all := strings.Join(rep.Summary.Missing, "\n")
			for _, n := range smokeUnmodelled {
				if !strings.Contains(all, n) {
					t.Errorf("the missing evidence does not name %s", n)
				}
			}
			for _, m := range rep.Summary.Missing {
				if spec == "smoke-windows" && strings.Contains(m, "is not judged: no table") {
					continue // the windowed aggregates' spec leaves the rest of the app out: what it does not describe is missing evidence
				}
				if !slices.ContainsFunc(smokeUnmodelled, func(n string) bool { return strings.Contains(m, n) }) {
					t.Errorf("missing evidence that names no unmodelled node: %s", m)
				}
			}
		})
	}
}

// TestSmokeBundleInferred audits SmokeTestClient's clean run with --app-id alone: most of it
// declines (incomplete), and nothing is a loss. The copy data → echo is
// filterNot(key is "flush"), whose flush records come after every copy: taken for records
// not consumed yet, they made the inferred filter "true" and five false join-missing.
func TestSmokeBundleInferred(t *testing.T) {
	out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/smoke/capture", "--app-id", "SmokeTest", "--format", "json")
	if code != exitIncomplete {
		t.Fatalf("exit %d, want %d (incomplete): %s", code, exitIncomplete, errOut)
	}
	var rep audit.Report
	if err := decodeReport([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	expectNoLoss(t, &rep)
	if strings.Contains(strings.Join(rep.Summary.Missing, "\n"), "output echo") {
		t.Errorf("the copy to echo is not judged: %v", rep.Summary.Missing)
	}
}

// TestSmokeUnmodelledInTopology holds smokeUnmodelled to the describe() text: they are every
// selectKey and map node of SmokeTestClient's topology.
func TestSmokeUnmodelledInTopology(t *testing.T) {
	b, err := os.ReadFile("../../testdata/smoke/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`Processor: (KSTREAM-(?:KEY-SELECT|MAP)-\d+)`).FindAllStringSubmatch(string(b), -1)
	var nodes []string
	for _, m := range got {
		nodes = append(nodes, m[1])
	}
	slices.Sort(nodes)
	if want := slices.Sorted(slices.Values(smokeUnmodelled)); !slices.Equal(nodes, want) {
		t.Errorf("the topology's selectKey and map nodes are %v, want %v", nodes, want)
	}
}
