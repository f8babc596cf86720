package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// smokeRekeys are the nodes of Kafka's SmokeTestClient (testdata/smoke/topology.txt) that
// re-key a windowed table's output: toStream(new Unwindow<>()) before min, max, sum and cnt (a
// KSTREAM-KEY-SELECT from the windowed key to its key: every window of a key under the key)
// and map((wk, v) -> KeyValue(wk.toString(), v)) before min-raw, min-suppressed, sws-raw and
// sws-suppressed (a KSTREAM-MAP). kaudit models both (issue AD): the outputs behind them are
// judged. The drill's smoke scenarios hold the same list to the real topology
// (testdata/kafka/drill/smoke.go).
var smokeRekeys = []string{
	"KSTREAM-KEY-SELECT-0000000017", "KSTREAM-KEY-SELECT-0000000038", "KSTREAM-KEY-SELECT-0000000047", "KSTREAM-KEY-SELECT-0000000057",
	"KSTREAM-MAP-0000000008", "KSTREAM-MAP-0000000014", "KSTREAM-MAP-0000000024", "KSTREAM-MAP-0000000030",
}

// TestSmokeBundle audits the capture of a clean run of Kafka's own SmokeTestClient (Kafka
// Streams 3.6.2's test jar, exactly_once_v2, killed -9 twice mid-transaction; SmokeTestDriver
// said SUCCESS and ALL-RECORDS-DELIVERED; testdata/smoke/README.md) with its spec (windowed
// aggregates with suppress, their outputs re-keyed by Unwindow and Windowed#toString,
// builder.table of their outputs, two KTable-KTable inner joins, a KTable re-grouped with a
// subtractor, the echo copy): clean, every output judged. With the spec of its windowed
// aggregates alone (docs/spec.md's shapes) what the spec leaves out is missing evidence, and
// nothing else. The same specs with the outputs' keys written wrong (Unwindow's key and the
// window's text) give each re-keyed output's records as join-missing: the outputs are judged,
// not skipped.
func TestSmokeBundle(t *testing.T) {
	for _, spec := range []string{"smoke", "smoke-windows"} {
		t.Run(spec, func(t *testing.T) {
			out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/smoke/capture", "--spec", "../../testdata/smoke/"+spec+".kaudit.yaml", "--format", "json")
			want := exitClean
			if spec == "smoke-windows" {
				want = exitIncomplete
			}
			if code != want {
				t.Fatalf("exit %d, want %d: %s", code, want, errOut)
			}
			var rep audit.Report
			if err := decodeReport([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			expectNoLoss(t, &rep)
			for _, m := range rep.Summary.Missing {
				if spec == "smoke-windows" && strings.Contains(m, "is not judged: no table") {
					continue // the windowed aggregates' spec leaves the rest of the app out: what it does not describe is missing evidence
				}
				t.Errorf("missing evidence: %s", m)
			}
		})
	}
	t.Run("keys written wrong", func(t *testing.T) {
		b, err := os.ReadFile("../../testdata/smoke/smoke.kaudit.yaml")
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), "[windowString(key), value]", `["(" + windowString(key), value]`)
		text = strings.ReplaceAll(text, "selectKey: 'key.key'", `selectKey: 'key.key + "x"'`)
		topo, err := filepath.Abs("../../testdata/smoke/topology.txt")
		if err != nil {
			t.Fatal(err)
		}
		text = strings.Replace(text, "topology: topology.txt", "topology: "+topo, 1)
		path := t.TempDir() + "/wrong.kaudit.yaml"
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, "diff", "--snapshot", "../../testdata/smoke/capture", "--spec", path, "--format", "json")
		if code != exitFindings {
			t.Fatalf("exit %d, want %d (loss): %s", code, exitFindings, errOut)
		}
		var rep audit.Report
		if err := decodeReport([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, f := range rep.Findings {
			if f.Severity == audit.SeverityLoss {
				if f.Cause != audit.CauseJoinMissing {
					t.Errorf("loss %s at %s, want join-missing only", f.Cause, f.Topic)
				}
				got[f.Topic] = true
			}
		}
		for _, o := range []string{"min", "max", "sum", "cnt", "min-raw", "min-suppressed", "sws-raw", "sws-suppressed"} {
			if !got[o] {
				t.Errorf("no join-missing at %s: its output is not judged by its keys", o)
			}
		}
	})
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

// TestSmokeRekeysInTopology holds smokeRekeys to the describe() text: they are every
// selectKey and map node of SmokeTestClient's topology.
func TestSmokeRekeysInTopology(t *testing.T) {
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
	if want := slices.Sorted(slices.Values(smokeRekeys)); !slices.Equal(nodes, want) {
		t.Errorf("the topology's selectKey and map nodes are %v, want %v", nodes, want)
	}
}
