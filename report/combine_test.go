package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

func finding(stage audit.Stage, cause audit.Cause, topic string, p int32, off int64, key string) audit.Finding {
	f := audit.NewFinding(stage, cause, tp(topic, p), off)
	f.Key = key
	return f
}

func TestNewSince(t *testing.T) {
	a := finding(audit.StageSource, audit.CauseRetentionGap, "t", 0, 10, "")
	b := finding(audit.StageRepartition, audit.CauseAbortedNotReplayed, "t", 0, 11, "k1")
	c := finding(audit.StageJoin, audit.CauseJoinMissing, "out", 1, -1, "k2")
	bDetail := b
	bDetail.Detail = "same identity, other detail"
	bKey := b
	bKey.Key = "k9"
	bCause := b
	bCause.Cause = audit.CauseDropped
	rep := func(fs ...audit.Finding) *audit.Report { return &audit.Report{Findings: fs} }
	for _, tt := range []struct {
		name      string
		prev, cur *audit.Report
		want      []audit.Finding
	}{
		{"nil prev: all new", nil, rep(a, b), []audit.Finding{a, b}},
		{"nil cur", rep(a), nil, nil},
		{"nothing new", rep(a, b, c), rep(b, a), nil},
		{"one new", rep(a), rep(a, b, c), []audit.Finding{b, c}},
		{"detail is not identity", rep(b), rep(bDetail), nil},
		{"key is identity", rep(b), rep(bKey), []audit.Finding{bKey}},
		{"cause is identity", rep(b), rep(bCause), []audit.Finding{bCause}},
		{"resolved findings are not new", rep(a, b, c), rep(), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := NewSince(tt.prev, tt.cur); !slices.Equal(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC)
	loss := finding(audit.StageRepartition, audit.CauseAbortedNotReplayed, "orders-v1", 0, 5, "k")
	loss2 := finding(audit.StageRepartition, audit.CauseAbortedNotReplayed, "orders-v1", 1, 7, "j")
	pending := finding(audit.StageSource, audit.CausePending, "orders-v1", 1, 9, "p")
	cut0 := audit.PartitionCut{Topic: "orders-v1", Partition: 0, Role: "source", Committed: 10, HW: 10, LSO: 10}
	cut1 := audit.PartitionCut{Topic: "orders-v1", Partition: 1, Role: "source", Committed: 8, HW: 12, LSO: 12}
	cutOut := audit.PartitionCut{Topic: "out", Partition: 0, Role: "output", Committed: -1, HW: 4, LSO: 4}
	cutOutLater := cutOut
	cutOutLater.HW, cutOutLater.LSO = 6, 6
	shardA := func() *audit.Report {
		r := &audit.Report{AppID: "app", GeneratedAt: t0, Source: "shard a",
			Cut: []audit.PartitionCut{cut0, cutOut}, Findings: []audit.Finding{loss},
			Summary:  audit.Summary{Records: map[string]int64{"read": 10}, Notes: []string{"n1"}},
			Edges:    []audit.Edge{{From: "orders-v1", To: "store", Records: 10, Vanished: 1}},
			Timeline: []audit.Minute{{Start: 60000, Produced: 5}},
			Lineage:  []audit.Lineage{{Finding: 0, Hops: []audit.Hop{{Stage: audit.StageSource, Topic: "orders-v1", Offset: 5}}}}}
		r.Finish()
		return r
	}
	shardB := func() *audit.Report {
		r := &audit.Report{AppID: "app", GeneratedAt: t0.Add(time.Minute), Source: "shard b",
			Cut: []audit.PartitionCut{cut1, cutOut}, Findings: []audit.Finding{pending, loss2, loss},
			Summary:  audit.Summary{Records: map[string]int64{"read": 12, "output": 4}, Notes: []string{"n1", "n2"}, Missing: []string{"m"}},
			Edges:    []audit.Edge{{From: "orders-v1", To: "store", Records: 12, Vanished: 1}},
			Timeline: []audit.Minute{{Start: 60000, Produced: 7, Aborted: 1}, {Start: 0, Produced: 1}}}
		r.Finish()
		i := slices.Index(r.Findings, loss2)
		r.Lineage = []audit.Lineage{{Finding: i, Hops: []audit.Hop{{Stage: audit.StageSource, Topic: "orders-v1", Partition: 1, Offset: 7}}}}
		return r
	}
	t.Run("shards", func(t *testing.T) {
		m, err := Merge(shardA(), nil, shardB())
		if err != nil {
			t.Fatal(err)
		}
		if want := []audit.PartitionCut{cut0, cut1, cutOut}; !slices.Equal(m.Cut, want) {
			t.Errorf("cut %v, want %v", m.Cut, want)
		}
		if len(m.Findings) != 3 {
			t.Errorf("findings %v: the shared one must be kept once", m.Findings)
		}
		if m.Summary.Vanished != 2 || m.Summary.Pending != 1 || m.Summary.Verdict != audit.VerdictLoss {
			t.Errorf("summary %+v", m.Summary)
		}
		if m.Summary.Records["read"] != 22 || m.Summary.Records["output"] != 4 {
			t.Errorf("records %v", m.Summary.Records)
		}
		if !slices.Equal(m.Summary.Notes, []string{"n1", "n2"}) || !slices.Equal(m.Summary.Missing, []string{"m"}) {
			t.Errorf("notes %v missing %v", m.Summary.Notes, m.Summary.Missing)
		}
		if len(m.Edges) != 1 || m.Edges[0].Records != 22 || m.Edges[0].Vanished != 2 {
			t.Errorf("edges %v", m.Edges)
		}
		if want := []audit.Minute{{Start: 0, Produced: 1}, {Start: 60000, Produced: 12, Aborted: 1}}; !slices.Equal(m.Timeline, want) {
			t.Errorf("timeline %v, want %v", m.Timeline, want)
		}
		if !m.GeneratedAt.Equal(t0.Add(time.Minute)) || m.Source != "shard a; shard b" {
			t.Errorf("generated %v source %q", m.GeneratedAt, m.Source)
		}
		if len(m.Lineage) != 2 {
			t.Fatalf("lineage %v", m.Lineage)
		}
		for _, l := range m.Lineage {
			f := m.Findings[l.Finding]
			if f.Offset != l.Hops[0].Offset || f.Partition != l.Hops[0].Partition {
				t.Errorf("lineage %v points at %v", l, f)
			}
		}
	})
	t.Run("conflicting cut is kept and noted", func(t *testing.T) {
		b := shardB()
		b.Cut[1] = cutOutLater
		m, err := Merge(shardA(), b)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Cut) != 4 || !slices.ContainsFunc(m.Summary.Notes, func(n string) bool { return strings.Contains(n, "disagree on the cut of out/0") }) {
			t.Errorf("cut %v notes %v", m.Cut, m.Summary.Notes)
		}
	})
	t.Run("verdicts combine", func(t *testing.T) {
		clean := &audit.Report{AppID: "app"}
		clean.Finish()
		incomplete := &audit.Report{AppID: "app", Summary: audit.Summary{Missing: []string{"x"}}}
		incomplete.Finish()
		for _, tt := range []struct {
			name string
			in   []*audit.Report
			want audit.Verdict
		}{
			{"clean", []*audit.Report{clean, clean}, audit.VerdictClean},
			{"clean+incomplete", []*audit.Report{clean, incomplete}, audit.VerdictIncomplete},
			{"incomplete+loss", []*audit.Report{incomplete, shardA()}, audit.VerdictLoss},
		} {
			m, err := Merge(tt.in...)
			if err != nil {
				t.Fatal(err)
			}
			if m.Summary.Verdict != tt.want {
				t.Errorf("%s: %s, want %s", tt.name, m.Summary.Verdict, tt.want)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		if _, err := Merge(); err == nil {
			t.Error("no error for no reports")
		}
		other := shardB()
		other.AppID = "other"
		if _, err := Merge(shardA(), other); !errors.Is(err, ErrAppMismatch) {
			t.Errorf("err %v, want ErrAppMismatch", err)
		}
	})
}

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
	if rows[1][10] != want || rows[1][5] != "k|1" {
		t.Errorf("cells %q / %q, want %q", rows[1][5], rows[1][10], want)
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
