package main

import (
	"encoding/binary"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestSmokeChange(t *testing.T) {
	long := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	both := binary.AppendVarint(nil, 8)
	both = append(append(append(both, long(3)...), long(2)...), 2)
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		// the records real Streams 3.6.2 wrote to SmokeTest-cntByCnt-repartition
		{[]byte{0, 0, 0, 0, 0, 0, 0, 1, 1}, "add 1"},
		{[]byte{0, 0, 0, 0, 0, 0, 0, 1, 0}, "remove 1"},
		{both, "add 3, remove 2"},
		{[]byte{7, 9}, "unknown 0709"},
		{nil, "empty"},
	} {
		if got := smokeChange(tc.in); got != tc.want {
			t.Errorf("smokeChange(%x) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSmokeVerdictLine(t *testing.T) {
	// lines SmokeTestDriver.verify (3.6.2) printed after "Result Verification" on the drill
	verdict := []string{"recordGenerated=3000", "recordProcessed=3000", "ALL-RECORDS-DELIVERED", "missedRecords=2990",
		"PROCESSED-LESS-THAN-GENERATED", "verifying tagg",
		"fail: key=89 tagg=[ConsumerRecord(topic = tagg, partition = 1, leaderEpoch = 0, offset = 10, …)] expected=0",
		"verifying min with 10 keys", "min fail: key=3-302 actual=4 expected=3", "tagg is missing", "dif is empty", "SUCCESS", "FAILURE"}
	for _, l := range verdict {
		if !smokeVerdictLine(l) {
			t.Errorf("%q is a verdict line", l)
		}
	}
	for _, l := range []string{"\t taggEvents: [ConsumerRecord(topic = tagg, …)]", "-------------------", "SMOKE-DRIVER-VERIFIED passed=false",
		"2026-12-02T10:04:49Z Didn't get any more results, but verification hasn't passed (yet). Retrying...3"} {
		if smokeVerdictLine(l) {
			t.Errorf("%q is no verdict line", l)
		}
	}
}

func TestSmokeCaughtUp(t *testing.T) {
	s := state{committed: tpOffsets{}, start: tpOffsets{}, lso: tpOffsets{}, hw: tpOffsets{}, internal: []string{smokeTaggRepartition}}
	set := func(topic string, hw, committed int64) {
		s.hw.set(topic, 0, hw)
		s.lso.set(topic, 0, hw)
		s.committed.set(topic, 0, committed)
	}
	set("data", 301, 301)
	for _, h := range smokeHops {
		set(h, 50, 49) // the last offset is a commit marker
	}
	if why := smokeCaughtUp(s); why != "" {
		t.Fatalf("caught up, yet: %s", why)
	}
	s.committed.set("data", 0, 300)
	if smokeCaughtUp(s) == "" {
		t.Error("data/0 is behind, yet caught up")
	}
	s.committed.set("data", 0, 301)
	s.committed.set("cnt", 0, 48)
	if smokeCaughtUp(s) == "" {
		t.Error("cnt/0 is behind, yet caught up")
	}
	s.committed.set("cnt", 0, 49)
	s.lso.set("tagg", 0, 3)
	s.hw.set("tagg", 0, 5)
	if !strings.Contains(smokeCaughtUp(s), "open transaction") {
		t.Error("an open transaction on tagg/0, yet caught up")
	}
	s.internal = nil
	if smokeCaughtUp(s) == "" {
		t.Error("no tagg repartition topic yet, yet caught up")
	}
}

// TestSmokeRekeys holds smokeRekeys to the real topology: each node is in
// testdata/smoke/topology.txt, a KSTREAM-KEY-SELECT (Unwindow) before min, max, sum or cnt, or a
// KSTREAM-MAP (the windowed key to its string) before min-raw, min-suppressed, sws-raw or
// sws-suppressed, and no other node of those kinds is on the way to an output.
func TestSmokeRekeys(t *testing.T) {
	b, err := os.ReadFile("../../smoke/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	next := map[string][]string{}
	sink := map[string]string{}
	node := ""
	nodeRe := regexp.MustCompile(`^\s*(?:Processor|Source|Sink): (\S+)(?: \(topic: (\S+)\))?`)
	for _, l := range strings.Split(string(b), "\n") {
		if m := nodeRe.FindStringSubmatch(l); m != nil {
			node = m[1]
			if m[2] != "" {
				sink[node] = m[2]
			}
			continue
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "--> "); ok && rest != "none" {
			next[node] = strings.Split(rest, ", ")
		}
	}
	reaches := func(n string) []string {
		var out []string
		todo := []string{n}
		for len(todo) > 0 {
			c := todo[0]
			todo = todo[1:]
			if tp, ok := sink[c]; ok {
				out = append(out, tp)
			}
			todo = append(todo, next[c]...)
		}
		return out
	}
	var all []string
	for n := range next {
		if strings.HasPrefix(n, "KSTREAM-KEY-SELECT-") || strings.HasPrefix(n, "KSTREAM-MAP-") {
			all = append(all, n)
		}
	}
	slices.Sort(all)
	want := slices.Sorted(slices.Values(smokeRekeys))
	if !slices.Equal(all, want) {
		t.Errorf("the topology's selectKey and map nodes are %v, smokeRekeys %v", all, want)
	}
	for _, n := range smokeRekeys {
		to := reaches(n)
		okTopics := []string{"min", "max", "sum", "cnt"}
		if strings.HasPrefix(n, "KSTREAM-MAP-") {
			okTopics = []string{"min-raw", "min-suppressed", "sws-raw", "sws-suppressed"}
		}
		if len(to) != 1 || !slices.Contains(okTopics, to[0]) {
			t.Errorf("%s leads to %v, want one of %v", n, to, okTopics)
		}
	}
}

func TestExpectSmokeJudged(t *testing.T) {
	if err := expectSmokeJudged(kauditReport{Summary: kauditSummary{Verdict: "clean"}}); err != nil {
		t.Errorf("clean, nothing missing: %v", err)
	}
	if err := expectSmokeJudged(kauditReport{Summary: kauditSummary{Verdict: "incomplete"}}); err == nil {
		t.Error("incomplete, yet no error")
	}
	// the words kaudit gave before issue AD modelled the re-keyed outputs
	unjudged := kauditReport{Summary: kauditSummary{Verdict: "clean", Missing: []string{
		"table min: its output min is not judged: its output step selectKey at node KSTREAM-KEY-SELECT-0000000017 changes the key"}}}
	if err := expectSmokeJudged(unjudged); err == nil || !strings.Contains(err.Error(), "KSTREAM-KEY-SELECT-0000000017") {
		t.Errorf("an output not judged: %v", err)
	}
	if err := expectNothingMissing(unjudged); err == nil {
		t.Error("missing evidence, yet no error")
	}
}

func TestExpectSmokeDeleted(t *testing.T) {
	// offsets 31-35 deleted; 32 is a commit marker, 31, 33, 34, 35 records; 35 has no known cnt record
	f := fault{Topic: smokeTaggRepartition, Partition: 1, From: 31, To: 36}
	causes := map[int64][]string{31: {"cnt/2@40"}, 33: {"cnt/2@41"}, 34: {"cnt/0@7", "cnt/3@9"}, 35: {}}
	loss := func(topic string, p int32, o, n int64) finding {
		return finding{Severity: "loss", Cause: "purged-before-commit", Topic: topic, Partition: p, Offset: o, Count: n}
	}
	for name, tc := range map[string]struct {
		fs []finding
		ok bool
	}{
		"the range":                       {[]finding{loss(f.Topic, 1, 31, 5)}, true},
		"the records":                     {[]finding{loss(f.Topic, 1, 31, 1), loss(f.Topic, 1, 33, 3)}, true},
		"the cnt records, 35 by offset":   {[]finding{loss("cnt", 2, 40, 1), loss("cnt", 2, 41, 1), loss("cnt", 3, 9, 1), loss(f.Topic, 1, 35, 1)}, true},
		"one record not named":            {[]finding{loss(f.Topic, 1, 31, 1), loss(f.Topic, 1, 33, 2)}, false},
		"35 has no cnt record to name":    {[]finding{loss("cnt", 2, 40, 1), loss("cnt", 2, 41, 1), loss("cnt", 3, 9, 1)}, false},
		"beyond the range":                {[]finding{loss(f.Topic, 1, 31, 6)}, false},
		"another partition":               {[]finding{loss(f.Topic, 1, 31, 5), loss(f.Topic, 2, 0, 1)}, false},
		"a loss elsewhere":                {[]finding{loss(f.Topic, 1, 31, 5), loss("data", 0, 7, 1)}, false},
		"a cnt record of no deleted copy": {[]finding{loss(f.Topic, 1, 31, 5), loss("cnt", 2, 39, 1)}, false},
		"nothing":                         {nil, false},
	} {
		err := expectSmokeDeleted(kauditReport{Findings: tc.fs}, f, causes)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", name, err, tc.ok)
		}
	}
}

func TestSmokeVisible(t *testing.T) {
	rec := func(key, change string) smokeRecord { return smokeRecord{Key: key, Change: change} }
	for _, tc := range []struct {
		name string
		recs []smokeRecord
		want bool
	}{
		// the real run where SmokeTestDriver said SUCCESS: the pairs cancel, the add alone is not seen
		{"adds and cancelling pairs", []smokeRecord{rec("98", "add 1"), rec("100", "add 1"), rec("96", "add 1"), rec("100", "remove 1"), rec("96", "remove 1")}, false},
		{"a remove alone", []smokeRecord{rec("94", "remove 1"), rec("107", "remove 1")}, true},
		{"a remove after its add elsewhere", []smokeRecord{rec("5", "add 1"), rec("4", "remove 1")}, true},
		{"nothing", nil, false},
	} {
		if got := smokeVisible(tc.recs); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
