package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// copyTopology is Topology#describe() of builder.stream("in")[.op].to("out")
// in Kafka Streams 3.6 (op "" for PipeDemo's plain copy).
func copyTopology(op string) string {
	if op == "" {
		return `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-SINK-0000000001
    Sink: KSTREAM-SINK-0000000001 (topic: out)
      <-- KSTREAM-SOURCE-0000000000

`
	}
	return `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-` + op + `-0000000001
    Processor: KSTREAM-` + op + `-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: out)
      <-- KSTREAM-` + op + `-0000000001

`
}

// TestCopyAppsInferred: apps that only copy, as Kafka's own examples do
// (PipeDemo: stream.to; LineSplitDemo: flatMapValues(split).to), audited
// with --app-id alone: the copy is drafted from the topology and its
// steps inferred from the output; a clean run is clean, a lost output
// record is join-missing at its input, the source's records deleted past
// the committed offset a retention-gap; a step the evidence does not
// settle (an upper-casing mapValues) leaves the copy unjudged, never a
// loss.
func TestCopyAppsInferred(t *testing.T) {
	lines := []string{"the quick brown fox", "jumps over", "the lazy dog", "and runs", "far away", "into the woods", "at night", "quietly", "again and again", "the end"}
	split := func(l string) []string { return strings.Fields(l) }
	same := func(l string) []string { return []string{l} }
	upper := func(l string) []string { return []string{strings.ToUpper(l)} }
	for _, tc := range []struct {
		name     string
		op       string
		out      func(string) []string
		lose     int   // the line whose first output record is not written (-1: none)
		logStart int64 // records of in deleted past the committed offset
		code     int
		causes   []string // loss findings, "stage/cause topic/partition@offset"
	}{
		{name: "PipeDemo, clean", out: same, lose: -1, code: exitClean},
		{name: "PipeDemo, a copy lost", out: same, lose: 3, code: exitFindings, causes: []string{"join/join-missing in/0@3"}},
		{name: "PipeDemo, the source deleted past the commit", out: same, lose: -1, logStart: 9, code: exitFindings, causes: []string{"source/retention-gap in/0@8"}},
		{name: "LineSplitDemo, clean", op: "FLATMAPVALUES", out: split, lose: -1, code: exitClean},
		{name: "LineSplitDemo, a word lost", op: "FLATMAPVALUES", out: split, lose: 5, code: exitFindings, causes: []string{"join/join-missing in/0@5"}},
		{name: "mapValues the evidence does not settle", op: "MAPVALUES", out: upper, lose: 2, code: exitIncomplete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.UnixMilli(1_800_000_000_000)
			m := fakeapp.NewMemory(now)
			m.AddTopic(audit.TopicInfo{Name: "in", Partitions: 1})
			m.AddTopic(audit.TopicInfo{Name: "out", Partitions: 1})
			plain := func(o int64) audit.Batch { return audit.Batch{ProducerID: -1, ProducerEpoch: -1, BaseOffset: o} }
			var off int64
			committed := int64(len(lines))
			if tc.logStart > 0 {
				committed = tc.logStart - 1 // the app read up to here; then the rest was deleted
			}
			for i, l := range lines {
				ts := now.UnixMilli() - 60_000 + int64(i)*100
				m.Append(audit.Record{Topic: "in", Offset: int64(i), Key: []byte("k"), Value: []byte(l), Timestamp: ts, Batch: plain(int64(i))})
				if int64(i) >= committed {
					continue
				}
				for j, w := range tc.out(l) {
					if i == tc.lose && j == 0 {
						continue
					}
					m.Append(audit.Record{Topic: "out", Offset: off, Key: []byte("k"), Value: []byte(w), Timestamp: ts, Batch: plain(off)})
					off++
				}
			}
			if tc.logStart > 0 {
				n := int64(len(lines))
				m.SetOffsets(audit.TopicPartition{Topic: "in"}, audit.PartitionOffsets{LogStart: tc.logStart, LSO: n, HW: n})
			}
			m.SetGroup(audit.GroupOffsets{Group: "copier", Offsets: map[audit.TopicPartition]int64{{Topic: "in"}: committed}})
			dir := t.TempDir()
			if _, err := snapshot.Capture(t.Context(), m, snapshot.CaptureOptions{Dir: dir, AppID: "copier", Topology: copyTopology(tc.op), Topics: []string{"in", "out"}}); err != nil {
				t.Fatal(err)
			}
			report := filepath.Join(t.TempDir(), "r.json")
			_, errOut, code := runCLI(t, "diff", "--snapshot", dir, "--app-id", "copier", "--format", "json", "--output", report)
			if code != tc.code {
				t.Errorf("exit %d, want %d: %s", code, tc.code, errOut)
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var rep audit.Report
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
					got = append(got, string(f.Stage)+"/"+string(f.Cause)+" "+f.Topic+"/"+strconv.Itoa(int(f.Partition))+"@"+strconv.FormatInt(f.Offset, 10))
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.causes, ",") {
				t.Errorf("findings %v, want %v\nmissing: %v\ninferred spec:\n%s", got, tc.causes, rep.Summary.Missing, rep.InferredSpec)
			}
		})
	}
}
