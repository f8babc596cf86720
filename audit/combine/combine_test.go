package combine

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

func tp(topic string, p int32) audit.TopicPartition {
	return audit.TopicPartition{Topic: topic, Partition: p}
}

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

// shardOf is a report of shard i of n of run, with one loss on its
// partition i.
func shardOf(i, n int32, run string) *audit.Report {
	f := finding(audit.StageRepartition, audit.CauseDropped, "orders", i, 10, "k")
	r := &audit.Report{AppID: "app", Findings: []audit.Finding{f},
		Shard: &audit.Shard{Index: i, Count: n, Partitions: []int32{i}, Tasks: n, Run: run}}
	r.Finish()
	return r
}

// TestMergeShards: the shards of one audit merge into the whole; one
// missing is missing evidence (the verdict says the merge is not the
// whole audit), and a shard given twice, shards of two runs or of two
// shard counts are refused.
func TestMergeShards(t *testing.T) {
	m, err := Merge(shardOf(0, 2, "r1"), shardOf(1, 2, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Summary.Missing) != 0 || m.Summary.Vanished != 2 || m.Shard != nil {
		t.Errorf("whole merge: missing %v, vanished %d, shard %v", m.Summary.Missing, m.Summary.Vanished, m.Shard)
	}
	m, err = Merge(shardOf(0, 2, "r1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Summary.Missing) != 1 || !strings.Contains(m.Summary.Missing[0], "shard 1/2 was not merged") {
		t.Errorf("one shard of two: missing %v", m.Summary.Missing)
	}
	for name, rs := range map[string][]*audit.Report{
		"twice":       {shardOf(0, 2, "r1"), shardOf(0, 2, "r1")},
		"two runs":    {shardOf(0, 2, "r1"), shardOf(1, 2, "r0")},
		"two counts":  {shardOf(0, 2, "r1"), shardOf(1, 3, "r1")},
		"with whole":  {shardOf(0, 2, "r1"), {AppID: "app"}},
		"overlapping": {shardOf(0, 2, "r1"), {AppID: "app", Shard: &audit.Shard{Partitions: []int32{0}, Tasks: 2, Run: "r1"}}},
	} {
		if _, err := Merge(rs...); !errors.Is(err, ErrShards) {
			t.Errorf("%s: err %v, want ErrShards", name, err)
		}
	}
}

// TestMergeRefusesOtherEvidence: shards of one run id that read other
// evidence (two captures, two clusters) are not one audit, and a report
// whose findings do not add up to its own summary (findings removed or
// added by hand) is refused: its summary's counts and verdict name what
// is wrong.
func TestMergeRefusesOtherEvidence(t *testing.T) {
	of := func(i int32, fp string) *audit.Report {
		r := shardOf(i, 2, "r1")
		r.Shard.Fingerprint = fp
		return r
	}
	if _, err := Merge(of(0, "capture sha256:aa"), of(1, "capture sha256:aa")); err != nil {
		t.Errorf("one capture: %v", err)
	}
	for name, rs := range map[string][]*audit.Report{
		"two captures":         {of(0, "capture sha256:aa"), of(1, "capture sha256:bb")},
		"one named, one not":   {of(0, "capture sha256:aa"), of(1, "")},
		"a capture, a cluster": {of(0, "capture sha256:aa"), of(1, "cluster x sha256:aa")},
	} {
		if _, err := Merge(rs...); !errors.Is(err, ErrShards) || !strings.Contains(err.Error(), "evidence") {
			t.Errorf("%s: err %v, want ErrShards naming the evidence", name, err)
		}
	}
	for name, edit := range map[string]func(r *audit.Report){
		"a finding removed": func(r *audit.Report) { r.Findings = r.Findings[:0] },
		"a finding added": func(r *audit.Report) {
			r.Findings = append(r.Findings, finding(audit.StageSource, audit.CausePending, "orders", 0, 3, ""))
		},
		"the verdict changed": func(r *audit.Report) { r.Summary.Verdict = audit.VerdictClean },
	} {
		r := shardOf(1, 2, "r1")
		edit(r)
		if _, err := Merge(shardOf(0, 2, "r1"), r); !errors.Is(err, ErrSummary) || !strings.Contains(err.Error(), "report 2") {
			t.Errorf("%s: err %v, want ErrSummary naming report 2", name, err)
		}
	}
}

// TestSinceAndMerge: a report judged against a baseline keeps its
// verdict through a merge of itself alone (the nightly's postmortem) and
// of shards judged against the same baseline; the exit verdict is the new
// findings'.
func TestSinceAndMerge(t *testing.T) {
	old := finding(audit.StageRepartition, audit.CauseDropped, "orders", 0, 10, "k")
	fresh := finding(audit.StageTransactions, audit.CauseHangingTransaction, "out", 0, 3, "")
	prev := &audit.Report{AppID: "app", Findings: []audit.Finding{old}, GeneratedAt: time.Date(2026, 11, 29, 2, 30, 0, 0, time.UTC)}
	cur := &audit.Report{AppID: "app", Findings: []audit.Finding{fresh, old}}
	Since(prev, cur, "last.json")
	if cur.Summary.Verdict != audit.VerdictLoss || cur.ExitVerdict() != audit.VerdictAnomaly || len(cur.Baseline.New) != 1 {
		t.Fatalf("verdict %s, exit %s, new %v", cur.Summary.Verdict, cur.ExitVerdict(), cur.Baseline.New)
	}
	m, err := Merge(cur)
	if err != nil {
		t.Fatal(err)
	}
	if m.ExitVerdict() != audit.VerdictAnomaly || !m.Baseline.GeneratedAt.Equal(prev.GeneratedAt) || m.Baseline.Report != "last.json" {
		t.Errorf("merged alone: exit %s, baseline %+v", m.ExitVerdict(), m.Baseline)
	}
	nothing := &audit.Report{AppID: "app", Findings: []audit.Finding{old}}
	Since(prev, nothing, "last.json")
	if nothing.ExitVerdict() != audit.VerdictClean {
		t.Errorf("nothing new: exit %s, want clean", nothing.ExitVerdict())
	}
	if _, err := Merge(cur, &audit.Report{AppID: "app"}); !errors.Is(err, ErrShards) {
		t.Errorf("a baseline with none: err %v", err)
	}
	other := &audit.Report{AppID: "app"}
	Since(prev, other, "elsewhere.json")
	if _, err := Merge(cur, other); !errors.Is(err, ErrShards) {
		t.Errorf("two baselines: err %v", err)
	}
}

// TestSinceSpecChanges (issue AJ): a nightly audit whose spec was inferred
// says, against the baseline's inferred spec, what changed table by table
// and join by join, and nothing where the two agree.
func TestSinceSpecChanges(t *testing.T) {
	inferred := func(reduce, step string, judged bool, joinType string) *audit.Inferred {
		tab := audit.InferredTable{Name: "orders", Source: "orders", SelectKey: "value.orderId", Reduce: reduce}
		if step != "" {
			tab.Steps = []string{step}
		}
		if !judged {
			tab.Unjudged = "table orders is not judged: the evidence does not settle the reducer"
		}
		return &audit.Inferred{Tables: []audit.InferredTable{tab, {Name: "payments", Source: "payments", Reduce: "sum(amount)"}},
			Joins: []audit.InferredJoin{{Output: "order-status", Left: "orders", Right: []string{"payments"}, Type: joinType}}}
	}
	for _, tc := range []struct {
		name      string
		prev, cur *audit.Inferred
		want      []string
	}{
		{"the same", inferred("latest", "", true, "left"), inferred("latest", "", true, "left"), nil},
		{"another reducer, a filter, a join type", inferred("latest", "", true, "left"), inferred("sum(amount)", `filter: value.type != "TEST"`, true, "inner"), []string{
			`table orders: steps filter: value.type != "TEST", was none`,
			"table orders: reduce sum(amount), was latest",
			"join into order-status: inner orders(payments) value none, was left orders(payments) value none",
		}},
		{"no longer judged", inferred("latest", "", true, "left"), inferred("latest", "", false, "left"), []string{"table orders: judged no, was yes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := &audit.Report{Inferred: tc.prev}
			cur := &audit.Report{Inferred: tc.cur}
			Since(prev, cur, "last-night.json")
			if !slices.Equal(cur.Baseline.SpecChanges, tc.want) {
				t.Errorf("changes %q, want %q", cur.Baseline.SpecChanges, tc.want)
			}
			for _, c := range tc.want {
				if !slices.ContainsFunc(cur.Summary.Notes, func(n string) bool { return strings.HasSuffix(n, c) }) {
					t.Errorf("no note says %q: %q", c, cur.Summary.Notes)
				}
			}
		})
	}
}
