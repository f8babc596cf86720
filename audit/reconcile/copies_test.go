package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestCopy: EosTestClient's data.to("echo"): each input below the group's
// committed offset has one committed copy on echo; a missing one is
// join-missing at the input, an extra one a duplicate; inputs in flight
// need none; an output whose first records were deleted is not judged.
func TestCopy(t *testing.T) {
	type out struct {
		in   int    // the input copied
		fate string // "c" committed outside transactions, "t" in a committed transaction, "a" aborted
	}
	all := []out{{0, "c"}, {1, "c"}, {2, "c"}, {3, "c"}}
	for _, tt := range []struct {
		name       string
		outs       []out
		logStart   int64
		want       []string
		incomplete bool
		since      int64 // --since, ms; 0 none
	}{
		{"every consumed input copied: clean", all, 0, nil, false, 0},
		{"the input in flight has no copy yet: clean", all[:3], 0, nil, false, 0}, // input 3 is above the cut
		{"a copy lost", []out{{0, "c"}, {2, "c"}}, 0, []string{"join/join-missing data/0@1"}, false, 0},
		{"a copy only in an aborted transaction", []out{{0, "c"}, {1, "a"}, {2, "c"}}, 0, []string{"join/join-missing data/0@1"}, false, 0},
		{"a copy written twice", []out{{0, "t"}, {1, "t"}, {1, "t"}, {2, "t"}}, 0, []string{"join/duplicate echo/0@2"}, false, 0},
		// at-least-once: an input processed again after a restart is copied again
		{"a copy written twice outside transactions: a note", []out{{0, "c"}, {1, "c"}, {1, "c"}, {2, "c"}}, 0, nil, false, 0},
		{"two equal inputs, one copy", []out{{0, "c"}, {1, "c"}}, 0, []string{"join/join-missing data/0@2"}, false, 0},
		{"the output's first records deleted: not judged", all[1:], 1, nil, true, 0},
		{"a copy lost before --since: not judged", []out{{0, "c"}, {2, "c"}}, 0, nil, false, 300},
		{"a copy lost after --since", []out{{0, "c"}, {2, "c"}}, 0, []string{"join/join-missing data/0@1"}, false, 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := planOf(t, "app_id: EosTest\nserdes: {key: String, value: Integer}\ncopies:\n  - {source: data, output: echo}\n")
			m := memoryWith("data", "echo")
			plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
			values := []int32{5, 9, 9, 7}
			if strings.HasPrefix(tt.name, "two equal") {
				values[1] = 9 // inputs 1 and 2 alike: key, value, timestamp
			}
			ts := func(i int) int64 {
				if i == 2 && strings.HasPrefix(tt.name, "two equal") {
					return 200
				}
				return int64(100 * (i + 1))
			}
			for i, v := range values {
				m.Append(audit.Record{Topic: "data", Offset: int64(i), Key: []byte("k"), Value: int32Bytes(v), Timestamp: ts(i), Batch: plain})
			}
			off := tt.logStart
			for _, o := range tt.outs {
				r := audit.Record{Topic: "echo", Offset: off, Key: []byte("k"), Value: int32Bytes(values[o.in]), Timestamp: ts(o.in), Batch: plain}
				if o.fate == "a" || o.fate == "t" {
					mark := audit.MarkerAbort
					if o.fate == "t" {
						mark = audit.MarkerCommit
					}
					r.Batch = audit.Batch{ProducerID: 7, ProducerEpoch: 0, Transactional: true, BaseOffset: off}
					m.Append(r)
					off++
					m.Append(audit.Record{Topic: "echo", Offset: off, Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0},
						Batch: audit.Batch{ProducerID: 7, ProducerEpoch: 0, Transactional: true, Control: true, BaseOffset: off}, Marker: &audit.Marker{Type: mark}})
				} else {
					m.Append(r)
				}
				off++
			}
			if tt.logStart > 0 {
				m.SetOffsets(audit.TopicPartition{Topic: "echo"}, audit.PartitionOffsets{LogStart: tt.logStart, LSO: off, HW: off})
			}
			m.SetGroup(audit.GroupOffsets{Group: "EosTest", Offsets: map[audit.TopicPartition]int64{{Topic: "data"}: 3}})
			dec, err := codec.New(codec.Config{KeySerde: "String", ValueSerde: "Integer"})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "String"), reconcile.Options{Decoder: dec, Since: sinceOf(tt.since)})
			if err != nil {
				t.Fatal(err)
			}
			if got := judged(rep); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings %v, want %v (missing %v)", got, tt.want, rep.Summary.Missing)
			}
			if (rep.Summary.Verdict == audit.VerdictIncomplete) != tt.incomplete {
				t.Errorf("verdict %s (missing %v), want incomplete %v", rep.Summary.Verdict, rep.Summary.Missing, tt.incomplete)
			}
		})
	}
}

// sinceOf is --since at ms (the zero time for 0: no window).
func sinceOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// TestCopySteps: a copy through steps that change values, keys or emit
// several elements (Kafka's LineSplitDemo: flatMapValues(split).to(t);
// MapFunction-style mapValues and map before to()): each element of each
// consumed input has one committed record of its key, value and
// timestamp on the output; a lost one is join-missing at the input. Steps
// that are not the app's (the output holds records no element explains)
// leave the copy unjudged, never a loss; a TODO step too, and the copy's
// source still says what its offsets prove lost.
func TestCopySteps(t *testing.T) {
	lines := []string{"a b", "c", "d e f", "g"}
	split := func(l string) []string { return strings.Split(l, " ") }
	upper := func(l string) []string { return []string{strings.ToUpper(l)} }
	for _, tt := range []struct {
		name     string
		steps    string
		out      func(string) []string // what the app wrote per line
		keyed    bool                  // the output's key is the value (map)
		lose     string                // an output record not written
		logStart int64                 // the source's log start (DeleteRecords)
		want     []string
		verdict  audit.Verdict
	}{
		{name: "flatMapValues, clean", steps: `[{flatMapValues: 'split(value, " ")'}]`, out: split, verdict: audit.VerdictClean},
		{name: "flatMapValues, a word lost", steps: `[{flatMapValues: 'split(value, " ")'}]`, out: split, lose: "e",
			want: []string{"join/join-missing lines/0@2"}, verdict: audit.VerdictLoss},
		{name: "mapValues, clean", steps: `[{mapValues: 'upper(value)'}]`, out: upper, verdict: audit.VerdictClean},
		{name: "mapValues, a copy lost", steps: `[{mapValues: 'upper(value)'}]`, out: upper, lose: "G",
			want: []string{"join/join-missing lines/0@3"}, verdict: audit.VerdictLoss},
		{name: "mapValues the app does not do: unjudged, no loss", steps: `[{mapValues: 'lower(value)'}]`, out: upper, verdict: audit.VerdictIncomplete},
		{name: "map to a new key, clean", steps: `[{map: '[value, value]'}]`, out: func(l string) []string { return []string{l} }, keyed: true, verdict: audit.VerdictClean},
		{name: "a TODO step: unjudged, no loss", steps: `[{mapValues: TODO}]`, out: upper, verdict: audit.VerdictIncomplete},
		{name: "a TODO step, the source's first lines deleted past the commit: the retention gap still said", steps: `[{mapValues: TODO}]`, out: upper, logStart: 3,
			want: []string{"source/retention-gap lines/0@2"}, verdict: audit.VerdictLoss},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := planOf(t, "app_id: app\nserdes: {key: String, value: String}\ncopies:\n  - {source: lines, output: out, steps: "+tt.steps+"}\n")
			m := memoryWith("lines", "out")
			plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
			var off int64
			for i, l := range lines {
				ts := int64(100 * (i + 1))
				m.Append(audit.Record{Topic: "lines", Offset: int64(i), Key: []byte("k"), Value: []byte(l), Timestamp: ts, Batch: plain})
				if int64(i) < tt.logStart {
					continue // deleted before the app read it: never copied
				}
				for _, w := range tt.out(l) {
					if w == tt.lose {
						continue
					}
					key := []byte("k")
					if tt.keyed {
						key = []byte(w)
					}
					m.Append(audit.Record{Topic: "out", Offset: off, Key: key, Value: []byte(w), Timestamp: ts, Batch: plain})
					off++
				}
			}
			n := int64(len(lines))
			committed := n
			if tt.logStart > 0 {
				committed = 2 // the app read two lines, then the next were deleted
				m.SetOffsets(audit.TopicPartition{Topic: "lines"}, audit.PartitionOffsets{LogStart: tt.logStart, LSO: n, HW: n})
			}
			m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{{Topic: "lines"}: committed}})
			dec, err := codec.New(codec.Config{KeySerde: "String", ValueSerde: "String"})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "String"), reconcile.Options{Decoder: dec})
			if err != nil {
				t.Fatal(err)
			}
			if got := judged(rep); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings %v, want %v (missing %v)", got, tt.want, rep.Summary.Missing)
			}
			if rep.Summary.Verdict != tt.verdict {
				t.Errorf("verdict %s (missing %v), want %s", rep.Summary.Verdict, rep.Summary.Missing, tt.verdict)
			}
		})
	}
}

// planOf resolves a spec without a topology.
func planOf(t *testing.T, yaml string) *spec.Plan {
	t.Helper()
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// memoryWith is an in-memory source with one-partition topics.
func memoryWith(topics ...string) *fakeapp.Memory {
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	for _, tp := range topics {
		m.AddTopic(audit.TopicInfo{Name: tp, Partitions: 1})
	}
	return m
}
