package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

func TestKnownIssueStatus(t *testing.T) {
	issue := func(id string) KnownIssue {
		i := slices.IndexFunc(KnownIssues, func(k KnownIssue) bool { return k.ID == id })
		if i < 0 {
			t.Fatalf("no %s", id)
		}
		return KnownIssues[i]
	}
	for _, tt := range []struct {
		id, version string
		want        IssueStatus
	}{
		{"KAFKA-16017", "3.6.1", StatusAffected},
		{"KAFKA-16017", "3.6.2", StatusFixed},
		{"KAFKA-16017", "3.7.0", StatusFixed},
		{"KAFKA-16017", "3.5.2", StatusAffected},
		{"KAFKA-16017", "4.0.0", StatusFixed},
		{"KAFKA-16017", "v3.6.1-ccs", StatusAffected},
		{"KAFKA-17635", "3.7.1", StatusAffected},
		{"KAFKA-17635", "3.7.2", StatusFixed},
		{"KAFKA-17635", "3.8.0", StatusAffected},
		{"KAFKA-17635", "3.9", StatusFixed},
		{"KAFKA-16903", "3.7.1", StatusAffected},
		{"KAFKA-16903", "3.8.0", StatusFixed},
		{"KAFKA-15653", "3.5.1", StatusNotAffected},
		{"KAFKA-15653", "3.6.0", StatusAffected},
		{"KAFKA-15653", "3.6.1", StatusFixed},
		{"KAFKA-14172", "3.3.2", StatusNotAffected},
		{"KAFKA-14172", "3.4.0", StatusAffected},
		{"KAFKA-16017", "", StatusUnknown},
		{"KAFKA-16017", "latest", StatusUnknown},
		{"KAFKA-16017", "3", StatusUnknown},
	} {
		t.Run(tt.id+"@"+tt.version, func(t *testing.T) {
			if got := issue(tt.id).Status(tt.version); got != tt.want {
				t.Errorf("%s on %q: %v, want %v", tt.id, tt.version, got, tt.want)
			}
		})
	}
}

func TestEveryCauseExplained(t *testing.T) {
	for _, c := range audit.Causes {
		if len(Explain(c)) < 80 || strings.Contains(Explain(c), "not in this kaudit's vocabulary") {
			t.Errorf("%s: no paragraph", c)
		}
		if _, ok := causePhrase(c); !ok {
			t.Errorf("%s: no short phrase", c)
		}
	}
	if !strings.Contains(Explain("made-up"), "made-up") {
		t.Error("Explain of an unknown cause does not name it")
	}
	for _, k := range KnownIssues {
		for _, c := range k.Causes {
			if _, ok := c.Doc(); !ok {
				t.Errorf("%s cites unknown cause %s", k.ID, c)
			}
		}
	}
}

func TestReplayRanges(t *testing.T) {
	cut := []audit.PartitionCut{{Topic: "src", Partition: 0, LogStart: 100}}
	f := func(cause audit.Cause, stage audit.Stage, off, count int64) audit.Finding {
		x := audit.NewFinding(stage, cause, tp("src", 0), off)
		x.Count = count
		return x
	}
	for _, tt := range []struct {
		name         string
		findings     []audit.Finding
		replay, gone []Range
	}{
		{"adjacent and overlapping merge",
			[]audit.Finding{f(audit.CauseDropped, audit.StageRepartition, 110, 1), f(audit.CauseDropped, audit.StageRepartition, 111, 1),
				f(audit.CauseAbortedNotReplayed, audit.StageRepartition, 112, 3), f(audit.CauseDropped, audit.StageRepartition, 113, 1),
				f(audit.CauseDropped, audit.StageRepartition, 120, 1)},
			[]Range{{"src", 0, 110, 5}, {"src", 0, 120, 1}}, nil},
		{"below log-start is gone", []audit.Finding{f(audit.CauseUnapplied, audit.StageRepartition, 90, 5)},
			nil, []Range{{"src", 0, 90, 5}}},
		{"straddling log-start splits", []audit.Finding{f(audit.CauseDropped, audit.StageRepartition, 95, 10)},
			[]Range{{"src", 0, 100, 5}}, []Range{{"src", 0, 95, 5}}},
		{"retention gap is gone even above log-start", []audit.Finding{f(audit.CauseRetentionGap, audit.StageSource, 100, 3)},
			nil, []Range{{"src", 0, 100, 3}}},
		{"joins, info and anomalies are not replayed",
			[]audit.Finding{f(audit.CauseJoinStale, audit.StageJoin, 105, 1), f(audit.CausePending, audit.StageSource, 130, 4),
				f(audit.CauseDuplicate, audit.StageStore, 131, 1), f(audit.CauseJoinMissing, audit.StageJoin, -1, 1)},
			nil, nil},
		{"count 0 counts as 1", []audit.Finding{f(audit.CauseDropped, audit.StageRepartition, 140, 0)},
			[]Range{{"src", 0, 140, 1}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			replay, gone := ReplayRanges(&audit.Report{Cut: cut, Findings: tt.findings})
			if !slices.Equal(replay, tt.replay) || !slices.Equal(gone, tt.gone) {
				t.Errorf("replay %v gone %v\nwant    %v gone %v", replay, gone, tt.replay, tt.gone)
			}
		})
	}
}

func TestIncidentWindows(t *testing.T) {
	min := func(i int) int64 { return incidentStart.Add(time.Duration(i) * time.Minute).UnixMilli() }
	at := func(i int) time.Time { return incidentStart.Add(time.Duration(i) * time.Minute) }
	for _, tt := range []struct {
		name string
		ms   []audit.Minute
		want []Window
	}{
		{"steady", steadyTimeline(30), nil},
		{"sparse minutes are a gap", []audit.Minute{{Start: min(0), Produced: 10}, {Start: min(1), Produced: 10}, {Start: min(5), Produced: 10}},
			[]Window{{Start: at(2), End: at(5), GapMinutes: 3}}},
		{"aborts far apart are two windows",
			[]audit.Minute{{Start: min(0), Produced: 10, Aborted: 1}, {Start: min(1), Produced: 10}, {Start: min(2), Produced: 10},
				{Start: min(3), Produced: 10}, {Start: min(4), Produced: 10}, {Start: min(5), Produced: 10, Aborted: 2, Vanished: 4}},
			[]Window{{Start: at(0), End: at(1), Aborted: 1}, {Start: at(5), End: at(6), Aborted: 2, Vanished: 4}}},
		{"close runs join",
			[]audit.Minute{{Start: min(0), Produced: 10, Aborted: 1}, {Start: min(1), Produced: 10}, {Start: min(2), Produced: 10},
				{Start: min(3), Produced: 10, Vanished: 1}},
			[]Window{{Start: at(0), End: at(4), Aborted: 1, Vanished: 1}}},
		{"leading and trailing silence is not a gap", []audit.Minute{{Start: min(0)}, {Start: min(1), Produced: 5}, {Start: min(2)}}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := incidentWindows(timeline(&audit.Report{Timeline: tt.ms}))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestMarkdownEscapesRecordContent(t *testing.T) {
	r := incompleteReport()
	nasty := "<script>alert(1)</script> & *bold* _em_ `code` [link](x) | pipe \\ back\nnewline"
	f := audit.NewFinding(audit.StageStore, audit.CauseStateDiverged, tp("orders-v1", 0), 3)
	f.Detail = nasty
	f.Key = "k|1"
	r.Findings = append(r.Findings, f)
	r.Finish()
	src := renderMarkdown(t, r, Options{Now: testNow})
	if bytes.Contains(src, []byte("<script>")) {
		t.Error("raw HTML from record content reached the Markdown")
	}
	d := readDoc(t, src)
	rows := d.tables["`state-diverged`: loss, 1 finding, 1 record"]
	if len(rows) != 2 {
		t.Fatalf("rows %q", rows)
	}
	want := strings.ReplaceAll(nasty, "\n", " ")
	if rows[1][4] != want || rows[1][2] != "k|1" {
		t.Errorf("cells %q / %q, want %q", rows[1][2], rows[1][4], want)
	}
}

func TestLedgerReadBack(t *testing.T) {
	t.Run("json shape", func(t *testing.T) {
		var b bytes.Buffer
		if err := LedgerJSON(&b, testLedger(true)); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Topic      string                       `json:"topic"`
			Partitions []map[string]json.RawMessage `json:"partitions"`
		}
		if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Topic != repartition || len(doc.Partitions) != 2 {
			t.Fatalf("%+v", doc)
		}
		for i, p := range doc.Partitions {
			for _, k := range []string{"partition", "log_start", "lso", "hw", "fates", "transactions", "findings"} {
				if _, ok := p[k]; !ok {
					t.Errorf("partition %d has no %q", i, k)
				}
			}
			var fates map[string]int64
			if err := json.Unmarshal(p["fates"], &fates); err != nil || len(fates) != len(audit.Fates) {
				t.Errorf("fates %s", p["fates"])
			}
		}
		if string(doc.Partitions[1]["findings"]) != "[]" {
			t.Errorf("findings %s, want []", doc.Partitions[1]["findings"])
		}
		if _, ok := doc.Partitions[0]["offsets"]; ok {
			t.Error("offsets printed for a partition without any")
		}
		var offs []map[string]any
		if err := json.Unmarshal(doc.Partitions[1]["offsets"], &offs); err != nil || len(offs) != 4 || offs[2]["fate"] != "marker" {
			t.Errorf("offsets %s", doc.Partitions[1]["offsets"])
		}
	})
	t.Run("csv", func(t *testing.T) {
		l := testLedger(false)
		var b bytes.Buffer
		if err := LedgerCSV(&b, l); err != nil {
			t.Fatal(err)
		}
		rows, err := csv.NewReader(&b).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rows[0], ledgerColumns) || len(rows) != 3 {
			t.Fatalf("rows %q", rows)
		}
		p := l.Partitions[0]
		want := []string{repartition, "0", "2290", "2300", "2302", "8", "0", "2", "2", "2290", "0", "0", "2", "0", "1", "1"}
		if !slices.Equal(rows[1], want) {
			t.Errorf("row %q, want %q", rows[1], want)
		}
		if atoi(t, rows[1][5])+atoi(t, rows[1][7])+atoi(t, rows[1][8])+atoi(t, rows[1][9]) != p.Fates.Total() {
			t.Error("fate counts do not add up")
		}
	})
}
