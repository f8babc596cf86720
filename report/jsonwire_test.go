package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// TestJSONValues: key, expected and actual print as JSON values (absent
// when the finding states none), unknown numbers as null, and read back to
// exactly the text the audit holds.
func TestJSONValues(t *testing.T) {
	f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, audit.TopicPartition{Topic: "out", Partition: -1}, -1)
	for _, tt := range []struct {
		name, key, expected, actual string
		want                        []string
	}{
		{"string key, object values", `"o-1"`, `{"a":1,"b":"<x>"}`, `null`,
			[]string{`"key": "o-1"`, `"expected": {` + "\n", `"b": "<x>"`, `"actual": null`, `"partition": null`, `"offset": null`, `"timestamp": null`, `"producer_id": null`}},
		{"number key, markers", `42`, `absent`, `b64:AAE=`,
			[]string{`"key": 42`, `"expected": "absent"`, `"actual": "b64:AAE="`}},
		{"nothing stated", ``, ``, `"a string"`,
			[]string{`"count": 1,` + "\n      \"timestamp\"", `"transactional_id": "",` + "\n      \"producer_id\"", `"producer_epoch": null,` + "\n      \"actual\": \"a string\""}},
		{"lineage markers", `"k"`, `a committed copy`, `no copy`,
			[]string{`"expected": "a committed copy"`, `"actual": "no copy"`}},
		{"checkpoint", `""`, `< 12`, `15`,
			[]string{`"key": ""`, `"expected": "< 12"`, `"actual": 15`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := f
			g.Key, g.Expected, g.Actual = tt.key, tt.expected, tt.actual
			r := &audit.Report{AppID: "a", Findings: []audit.Finding{g},
				Cut:     []audit.PartitionCut{{Topic: "t", Role: "source", Committed: -1, LogStart: 0, LSO: 3, HW: 3}},
				Lineage: []audit.Lineage{{Finding: 0, Hops: []audit.Hop{{Stage: audit.StageStore, Topic: "c", Partition: -1, Offset: -1, Expected: tt.expected, Actual: "absent"}}}},
			}
			r.Finish()
			var b bytes.Buffer
			if err := JSON(&b, r); err != nil {
				t.Fatal(err)
			}
			for _, w := range append(tt.want, `"schema": 2`, `"committed": null`) {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %s in\n%s", w, b.String())
				}
			}
			back, err := ReadJSON(&b)
			if err != nil {
				t.Fatal(err)
			}
			if back.Findings[0] != r.Findings[0] {
				t.Errorf("read back %+v\nwant      %+v", back.Findings[0], r.Findings[0])
			}
			if back.Cut[0] != r.Cut[0] || back.Lineage[0].Hops[0] != r.Lineage[0].Hops[0] {
				t.Errorf("cut or hop read back as %+v %+v", back.Cut[0], back.Lineage[0].Hops[0])
			}
		})
	}
}

// TestReadJSONSchema1: a report written before schema 2 (values as
// strings holding JSON, -1 for unknown) still reads, to the same findings,
// so that last night's --baseline matches tonight's run.
func TestReadJSONSchema1(t *testing.T) {
	v1 := `{"app_id":"a","findings":[{"stage":"join","cause":"join-stale","severity":"loss","topic":"out","partition":2,"offset":-1,"count":1,
"key":"\"o-1\"","timestamp":-1,"transactional_id":"","producer_id":-1,"producer_epoch":-1,"expected":"{\"a\":1}","actual":"absent","detail":""}]}`
	r, err := ReadJSON(strings.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, audit.TopicPartition{Topic: "out", Partition: 2}, -1)
	f.Key, f.Expected, f.Actual = `"o-1"`, `{"a":1}`, "absent"
	if r.Findings[0] != f {
		t.Errorf("got  %+v\nwant %+v", r.Findings[0], f)
	}
	if _, err := ReadJSON(strings.NewReader(`{"schema":3,"app_id":"a"}`)); err == nil || !strings.Contains(err.Error(), "schema 3") {
		t.Errorf("schema 3: %v", err)
	}
}
