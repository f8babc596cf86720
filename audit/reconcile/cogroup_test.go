package reconcile_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestCogroup pins the cogroup check: clicks (keyed by user) and views
// (re-keyed by user through a repartition topic) counted into one
// aggregate per user. A view whose copy the repartition topic (never
// purged) lacks and whose count the store lacks is dropped, several of a
// key together; a store that
// lost a click is unapplied with the user's clicks as candidates; a view
// not consumed yet by the store's task is pending, never a loss.
func TestCogroup(t *testing.T) {
	type view struct {
		user string
		ts   int64
	}
	clicks := []string{"u1", "u1", "u2"}
	views := []view{{"u1", 10}, {"u2", 11}, {"u2", 12}}
	cases := []struct {
		name      string
		dropViews []int // views without a copy
		pending   int   // the last n copies not consumed yet
		// purgedViews are views whose copies a purge took above the
		// group's committed offset (KAFKA-17635): they are the last copies
		purgedViews int
		extraViews  []view // further views, after the others
		// restarted: the app committed past the purge since, and no
		// history dates it
		restarted bool
		// eos: the store's changelog in transactions; moved: the app
		// consumed every copy and committed while the audit read
		eos, moved bool
		store      map[string][2]int
		want       []string
		verdict    audit.Verdict
	}{
		{name: "clean", store: map[string][2]int{"u1": {2, 1}, "u2": {1, 2}}, verdict: audit.VerdictClean},
		{name: "clean, a view pending", pending: 1, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 1}}, verdict: audit.VerdictClean},
		{name: "a view dropped", dropViews: []int{2}, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 1}}, want: []string{"dropped views/0@2"}, verdict: audit.VerdictLoss},
		// no single view's removal explains u2's state: both together do
		{name: "two views of a key dropped", dropViews: []int{1, 2}, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 0}}, want: []string{"dropped views/0@1", "dropped views/0@2"}, verdict: audit.VerdictLoss},
		{name: "a click lost by the store", store: map[string][2]int{"u1": {1, 1}, "u2": {1, 2}}, want: []string{"unapplied app-S-changelog/0@0"}, verdict: audit.VerdictLoss},
		// AB's V17: two views of one key purged before the store applied
		// them: the purge's range and the key's unapplied inputs, never
		// state-diverged
		{name: "two views of a key purged before commit", purgedViews: 2, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 0}},
			want: []string{"purged-before-commit rep/0@1", "unapplied views/0@1"}, verdict: audit.VerdictLoss},
		// the same, u2's first view applied before its copy was purged
		// (below the commit, as Streams purges): two of its three views
		// without a copy are the loss
		{name: "two of three views of a key purged before commit", purgedViews: 2, extraViews: []view{{"u2", 13}}, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 1}},
			want: []string{"purged-before-commit rep/0@2", "unapplied views/0@2"}, verdict: audit.VerdictLoss},
		// the same after a restart committed past the purge: two of the
		// views without a copy on the purged partition are lost, dropped
		// or purged before they were applied; never state-diverged (seed
		// 1033 of AB's generator)
		{name: "two of three views of a key lost to a purge, after the restart", purgedViews: 2, restarted: true, extraViews: []view{{"u2", 13}}, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 1}},
			want: []string{"unapplied views/0@2"}, verdict: audit.VerdictLoss},
		// a running app (AB's V2, seed 1033): the store applied the view
		// pending at the cut before the audit read it
		{name: "at-least-once, the store ahead of the cut", pending: 1, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 2}}, verdict: audit.VerdictClean},
		{name: "exactly-once, the store ahead of the cut, the app committed meanwhile", pending: 1, eos: true, moved: true, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 2}}, verdict: audit.VerdictClean},
		{name: "exactly-once, the store ahead of the cut, no commit since", pending: 1, eos: true, store: map[string][2]int{"u1": {2, 1}, "u2": {1, 2}},
			want: []string{"state-diverged app-S-changelog/0@2"}, verdict: audit.VerdictLoss},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spec.ParseSpec("kaudit.yaml", []byte(`app_id: app
serdes: {key: string, value: json}
tables:
  - name: activity
    store: S
    cogroup:
      - {source: clicks, aggregate: '{"clicks": agg.clicks + 1, "views": agg.views}'}
      - {source: views, select_key: value.user, repartition: rep, aggregate: '{"clicks": agg.clicks, "views": agg.views + 1}'}
    aggregate: {init: '{"clicks": 0, "views": 0}'}
`))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := spec.Resolve(sp, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
			for _, tp := range []string{"clicks", "views", "rep", "app-S-changelog"} {
				m.AddTopic(audit.TopicInfo{Name: tp, Partitions: 1})
			}
			plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
			for i, u := range clicks {
				m.Append(audit.Record{Topic: "clicks", Offset: int64(i), Key: []byte(u), Value: []byte(`{"page":"x"}`), Timestamp: int64(i), Batch: plain})
			}
			var rep int64
			for i, v := range slices.Concat(views, c.extraViews) {
				val := []byte(fmt.Sprintf(`{"user":%q}`, v.user))
				m.Append(audit.Record{Topic: "views", Offset: int64(i), Key: []byte(fmt.Sprint("v", i)), Value: val, Timestamp: v.ts, Batch: plain})
				if !slices.Contains(c.dropViews, i) {
					m.Append(audit.Record{Topic: "rep", Offset: rep, Key: []byte(v.user), Value: val, Timestamp: v.ts, Batch: plain})
					rep++
				}
			}
			var cl int64
			for _, u := range []string{"u1", "u2"} {
				b, _ := json.Marshal(map[string]int{"clicks": c.store[u][0], "views": c.store[u][1]})
				rec := audit.Record{Topic: "app-S-changelog", Offset: cl, Key: []byte(u), Value: b, Timestamp: 50, Batch: plain}
				if c.eos {
					cl = txnAppend(m, rec)
					continue
				}
				m.Append(rec)
				cl++
			}
			repCommitted := rep - int64(c.pending)
			if c.purgedViews > 0 {
				repCommitted = rep - int64(c.purgedViews)
				if c.restarted {
					repCommitted = rep
				}
				m.SetOffsets(audit.TopicPartition{Topic: "rep"}, audit.PartitionOffsets{LogStart: rep, LSO: rep, HW: rep})
			}
			m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{
				{Topic: "clicks"}: int64(len(clicks)), {Topic: "views"}: int64(len(views) + len(c.extraViews)), {Topic: "rep"}: repCommitted}})
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
			if err != nil {
				t.Fatal(err)
			}
			var src audit.Source = m
			if c.moved {
				src = &committing{Memory: m, later: map[audit.TopicPartition]int64{
					{Topic: "clicks"}: int64(len(clicks)), {Topic: "views"}: int64(len(views) + len(c.extraViews)), {Topic: "rep"}: rep}}
			}
			rp, err := reconcile.Run(t.Context(), src, reconcile.FromPlan(plan, "string"), reconcile.Options{Decoder: dec})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rp.Findings {
				if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
					got = append(got, fmt.Sprintf("%s %s/%d@%d", f.Cause, f.Topic, f.Partition, f.Offset))
				}
			}
			slices.Sort(got)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("findings %v, want %v\n%+v", got, c.want, rp.Findings)
			}
			if rp.Summary.Verdict != c.verdict {
				t.Errorf("verdict %s, want %s; missing: %v", rp.Summary.Verdict, c.verdict, rp.Summary.Missing)
			}
		})
	}
}
