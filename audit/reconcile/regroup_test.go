package reconcile_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// changeBytes writes a change record as Kafka Streams 3.6's
// ChangedSerializer does: {old}{0}, {new}{1}, {varint len(new)}{new}{old}{2}.
func changeBytes(newV, oldV string) []byte {
	switch {
	case oldV == "":
		return append([]byte(newV), 1)
	case newV == "":
		return append([]byte(oldV), 0)
	}
	b := binary.AppendUvarint(nil, uint64(len(newV))<<1) // zig-zag of a length
	b = append(b, newV...)
	b = append(b, oldV...)
	return append(b, 2)
}

// regroupCase is a products table (key, category) re-grouped by
// category and counted: the rows, the changes the app wrote (one per
// row update unless dropped), and the counts its store holds.
type regroupCase struct {
	name    string
	updates [][2]string // product, category ("" a tombstone)
	drop    map[int]bool
	purged  bool
	pending int // the last n changes are not consumed yet
	// purgedPast purges the changes from the committed offset on (less
	// pending) up to offset purgedPast, before the store applied them
	purgedPast int64
	// restarted: the app committed past the purge since (every change
	// consumed), and its commit history shows two commits by different
	// producers around it, with nothing telling whether it consumed the
	// purged changes
	restarted bool
	// moved: the app consumed every pending change and committed while
	// the audit read (a running app: the group's offsets read again are
	// past the cut)
	moved bool
	// eos: the store's changelog is written in transactions
	// (exactly-once), else outside them (at-least-once)
	eos     bool
	counts  map[string]int
	want    []string
	verdict audit.Verdict
}

func (c regroupCase) run(t *testing.T) *audit.Report {
	t.Helper()
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(`app_id: app
serdes: {key: string, value: json}
tables:
  - {name: products, source: products, reduce: table, store: P}
  - {name: per-category, regroup: products, select_key: value.category, reduce: count, store: C, store_serdes: {value: long}}
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	m.AddTopic(audit.TopicInfo{Name: "products", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: "app-P-changelog", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: "app-C-repartition", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: "app-C-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	row := map[string]string{}
	var rep int64
	for i, u := range c.updates {
		r := audit.Record{Topic: "products", Offset: int64(i), Key: []byte(u[0]), Timestamp: int64(100 + i), Batch: plain}
		val := ""
		if u[1] != "" {
			val = fmt.Sprintf(`{"category":%q}`, u[1])
			r.Value = []byte(val)
		}
		m.Append(r)
		pc := r
		pc.Topic = "app-P-changelog"
		m.Append(pc)
		old := row[u[0]]
		row[u[0]] = val
		if c.drop[i] {
			continue
		}
		cat := func(v string) string { return strings.Split(v, `"`)[3] }
		emit := func(key, newV, oldV string) {
			m.Append(audit.Record{Topic: "app-C-repartition", Offset: rep, Key: []byte(key), Value: changeBytes(newV, oldV), Timestamp: r.Timestamp, Batch: plain})
			rep++
		}
		switch {
		case old != "" && val != "" && cat(old) == cat(val):
			emit(cat(val), val, old)
		default:
			if old != "" {
				emit(cat(old), "", old)
			}
			if val != "" {
				emit(cat(val), val, "")
			}
		}
	}
	var cl int64
	for _, cat := range slices.Sorted(mapKeys(c.counts)) {
		rec := audit.Record{Topic: "app-C-changelog", Offset: cl, Key: []byte(cat), Value: binary.BigEndian.AppendUint64(nil, uint64(c.counts[cat])), Timestamp: 500, Batch: plain}
		if c.eos {
			cl = txnAppend(m, rec)
			continue
		}
		m.Append(rec)
		cl++
	}
	if c.purged {
		m.SetOffsets(audit.TopicPartition{Topic: "app-C-repartition"}, audit.PartitionOffsets{LogStart: rep, LSO: rep, HW: rep})
	}
	if c.purgedPast > 0 {
		m.SetOffsets(audit.TopicPartition{Topic: "app-C-repartition"}, audit.PartitionOffsets{LogStart: c.purgedPast, LSO: rep, HW: rep})
	}
	committed := rep - int64(c.pending)
	var opts reconcile.Options
	if c.restarted {
		opts.History = &history.Evidence{Group: "app", History: &audit.CommitHistory{Group: "app", WholeFrom: 0, Commits: map[audit.TopicPartition][]audit.Commit{
			{Topic: "products"}:          {{Offset: int64(len(c.updates)), At: 10, Time: 10, ProducerID: 1, Transactional: true}},
			{Topic: "app-C-repartition"}: {{Offset: c.purgedPast - 1, At: 10, Time: 10, ProducerID: 1, Transactional: true}, {Offset: rep, At: 20, Time: 20, ProducerID: 2, Transactional: true}},
		}}}
		committed = rep
	}
	m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{
		{Topic: "products"}: int64(len(c.updates)), {Topic: "app-C-repartition"}: committed}})
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json", Topics: map[string]codec.TopicSerdes{"app-C-changelog": {Value: "long"}}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Decoder = dec
	var src audit.Source = m
	if c.moved {
		src = &committing{Memory: m, later: map[audit.TopicPartition]int64{{Topic: "products"}: int64(len(c.updates)), {Topic: "app-C-repartition"}: rep}}
	}
	rp, err := reconcile.Run(t.Context(), src, reconcile.FromPlan(plan, "string"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

func mapKeys(m map[string]int) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestRegroup pins the KTable groupBy check: each group's aggregate is
// the adder over the table's rows in it, less the pending changes; a
// change the app never wrote is dropped (the repartition topic never
// purged) or an unapplied candidate (purged); a store that lost one is
// state-diverged. Each clean case stays clean.
func TestRegroup(t *testing.T) {
	updates := [][2]string{{"p1", "toys"}, {"p2", "toys"}, {"p3", "books"}, {"p1", "books"}, {"p2", ""}, {"p4", "toys"}}
	// at the end: p1 books, p3 books, p4 toys
	clean := map[string]int{"toys": 1, "books": 2}
	cases := []regroupCase{
		{name: "clean", updates: updates, counts: clean, verdict: audit.VerdictClean},
		{name: "clean, purged", updates: updates, counts: clean, purged: true, verdict: audit.VerdictClean},
		{name: "clean, the last change pending", updates: updates, counts: map[string]int{"toys": 0, "books": 2}, pending: 1, verdict: audit.VerdictClean},
		{name: "a change dropped", updates: updates, drop: map[int]bool{5: true}, counts: map[string]int{"toys": 0, "books": 2},
			want: []string{"dropped products/0@5"}, verdict: audit.VerdictLoss},
		{name: "a change dropped, purged", updates: updates, drop: map[int]bool{5: true}, counts: map[string]int{"toys": 0, "books": 2}, purged: true,
			want: []string{"unapplied app-C-changelog/0@1"}, verdict: audit.VerdictLoss},
		// the changes: +p1 +p2 (toys) +p3 (books) -p1 (toys) +p1 (books)
		// -p2 (toys) +p4 (toys); the store applied the first five, -p2 was
		// purged before it did, +p4 waits: toys holds 1 where its row p4
		// less the pending +p4 gives 0, and no row now in toys lacks its
		// change: the purge explains it, no finding of its own
		{name: "a row's leaving change purged before the store applied it", updates: updates, counts: map[string]int{"toys": 1, "books": 2}, pending: 2, purgedPast: 6,
			want: []string{"purged-before-commit app-C-repartition/0@5"}, verdict: audit.VerdictLoss},
		// the same after a restart that consumed +p4: the history cannot
		// tell whether -p2 was consumed before the purge, so toys's
		// missing subtraction is no proof the store lost it
		{name: "a row's leaving change purged, the app restarted past it, the history unsure", updates: updates, counts: map[string]int{"toys": 2, "books": 2}, purgedPast: 6, restarted: true,
			want: []string{"unapplied app-C-changelog/0@1"}, verdict: audit.VerdictLoss},
		// the changes of a group all pending: the store has no state for it yet
		{name: "clean, a new group's every change pending", updates: append(slices.Clone(updates), [2]string{"p5", "games"}), counts: clean, pending: 1, verdict: audit.VerdictClean},
		{name: "the store lost one", updates: updates, counts: map[string]int{"toys": 1, "books": 1},
			want: []string{"state-diverged app-C-changelog/0@0"}, verdict: audit.VerdictLoss},
		// a running app (AB's V2): the store applied the pending change
		// and the app committed before the audit read the store
		{name: "the store ahead of the cut, the app committed meanwhile", updates: updates, counts: clean, pending: 1, moved: true, eos: true, verdict: audit.VerdictClean},
		{name: "the store ahead of the cut, at-least-once", updates: updates, counts: clean, pending: 1, verdict: audit.VerdictClean},
		{name: "the store ahead of the cut, exactly-once, no commit since", updates: updates, counts: clean, pending: 1, eos: true,
			want: []string{"state-diverged app-C-changelog/0@2"}, verdict: audit.VerdictLoss},
		{name: "the store lost one, exactly-once", updates: updates, counts: map[string]int{"toys": 1, "books": 1}, eos: true,
			want: []string{"state-diverged app-C-changelog/0@0"}, verdict: audit.VerdictLoss},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := c.run(t)
			var got []string
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
					got = append(got, fmt.Sprintf("%s %s/%d@%d", f.Cause, f.Topic, f.Partition, f.Offset))
				}
			}
			slices.Sort(got)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("findings %v, want %v\n%+v", got, c.want, rep.Findings)
			}
			if rep.Summary.Verdict != c.verdict {
				t.Errorf("verdict %s, want %s; missing: %v", rep.Summary.Verdict, c.verdict, rep.Summary.Missing)
			}
		})
	}
}
