package main

import (
	"encoding/json"
	"testing"
)

// TestLineagePointsAtItsFinding audits the real incident bundle with
// findings the use case adds after the engine (config risks of a long
// outage): every lineage still names the vanished input it follows, the
// one its first hop holds.
func TestLineagePointsAtItsFinding(t *testing.T) {
	out, stderr, code := runCLI(t, "diff", "--snapshot", "../../testdata/incidents/dropped", "--spec", "../../testdata/incidents/dropped.kaudit.yaml",
		"--outage", "100000h", "--format", "json")
	if code != exitFindings {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitFindings, stderr)
	}
	var rep struct {
		Findings []struct {
			Cause     string `json:"cause"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
			Offset    int64  `json:"offset"`
		} `json:"findings"`
		Lineage []struct {
			Finding int `json:"finding"`
			Hops    []struct {
				Topic     string `json:"topic"`
				Partition int32  `json:"partition"`
				Offset    int64  `json:"offset"`
			} `json:"hops"`
		} `json:"lineage"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Lineage) == 0 {
		t.Fatal("no lineage: the test cannot fail")
	}
	for _, l := range rep.Lineage {
		if l.Finding < 0 || l.Finding >= len(rep.Findings) || len(l.Hops) == 0 {
			t.Fatalf("lineage %+v names no finding of %d", l, len(rep.Findings))
		}
		f, h := rep.Findings[l.Finding], l.Hops[0]
		if f.Topic != h.Topic || f.Partition != h.Partition || f.Offset != h.Offset {
			t.Errorf("lineage of %s/%d@%d points at finding %d, %s %s/%d@%d", h.Topic, h.Partition, h.Offset, l.Finding, f.Cause, f.Topic, f.Partition, f.Offset)
		}
	}
}
