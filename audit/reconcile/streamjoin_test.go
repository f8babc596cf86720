package reconcile_test

import (
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

// sjOrder is one record of the stream: an order of a customer.
type sjOrder struct {
	id, customer string // customer "" is null
	ts           int64
	note         string // a field the joiner does not read ("" none)
}

// sjEvidence is a stream join's evidence on one partition per topic:
// customers is builder.table("cust") (value "" a tombstone), orders the
// stream re-keyed by customer through "rep", out the joined records
// ("" drops one) by order id.
type sjEvidence struct {
	customers [][2]string // key, name
	orders    []sjOrder
	skipCopy  map[string]bool   // order ids whose repartition copy is missing
	out       map[string]string // order id → the output's name field; absent: no record; "-": null name
	history   *audit.CommitHistory
	twice     string // an order id whose joined record is written twice
	gone      int    // the first orders (and their copies) deleted since the join consumed them
	// repStart deletes rep's copies below it (a purge), the orders kept
	repStart int64
	// repLogStarts are earlier observations of rep's log start (a
	// capture before a restart)
	repLogStarts []history.LogStartAt
	onlyOnce     string // an order id, given twice, whose joined record is written once
}

func (e sjEvidence) run(t *testing.T, typ string) *audit.Report {
	t.Helper()
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(fmt.Sprintf(`app_id: app
serdes: {key: string, value: json}
tables:
  - {name: customers, source: cust, reduce: table, store: S}
stream_joins:
  - output: enriched
    stream: orders
    steps: [selectKey: value.customer]
    repartition: rep
    table: customers
    type: %s
    value: '{"id": stream.id, "name": table?.name}'
`, typ)))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	for _, tp := range []string{"cust", "orders", "rep", "enriched"} {
		m.AddTopic(audit.TopicInfo{Name: tp, Partitions: 1})
	}
	m.AddTopic(audit.TopicInfo{Name: "app-S-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	for i, c := range e.customers {
		r := audit.Record{Topic: "cust", Offset: int64(i), Key: []byte(c[0]), Timestamp: int64(i), Batch: plain}
		if c[1] != "" {
			r.Value = []byte(fmt.Sprintf(`{"name":%q}`, c[1]))
		}
		m.Append(r)
		cl := r
		cl.Topic = "app-S-changelog"
		m.Append(cl)
	}
	var rep, out int64
	written := map[string]bool{}
	for i, o := range e.orders {
		v := fmt.Sprintf(`{"id":%q,"customer":null}`, o.id)
		if o.customer != "" {
			v = fmt.Sprintf(`{"id":%q,"customer":%q}`, o.id, o.customer)
		}
		if o.note != "" {
			v = v[:len(v)-1] + fmt.Sprintf(`,"note":%q}`, o.note)
		}
		m.Append(audit.Record{Topic: "orders", Offset: int64(i), Key: []byte(o.id), Value: []byte(v), Timestamp: o.ts, Batch: plain})
		if o.customer == "" {
			continue
		}
		if !e.skipCopy[o.id] {
			m.Append(audit.Record{Topic: "rep", Offset: rep, Key: []byte(o.customer), Value: []byte(v), Timestamp: o.ts, Batch: plain})
			rep++
		}
		if name, ok := e.out[o.id]; ok && !(o.id == e.onlyOnce && written[o.id]) {
			written[o.id] = true
			ov := fmt.Sprintf(`{"id":%q,"name":%q}`, o.id, name)
			if name == "-" {
				ov = fmt.Sprintf(`{"id":%q,"name":null}`, o.id)
			}
			for range 1 + btoi(o.id == e.twice) {
				m.Append(audit.Record{Topic: "enriched", Offset: out, Key: []byte(o.customer), Value: []byte(ov), Timestamp: o.ts, Batch: plain})
				out++
			}
		}
		if i+1 == e.gone {
			m.SetOffsets(audit.TopicPartition{Topic: "rep"}, audit.PartitionOffsets{LogStart: rep})
		}
	}
	if e.gone > 0 {
		n := int64(len(e.orders))
		m.SetOffsets(audit.TopicPartition{Topic: "orders"}, audit.PartitionOffsets{LogStart: int64(e.gone), LSO: n, HW: n})
		ls, _ := m.Offsets(t.Context(), audit.TopicPartition{Topic: "rep"})
		m.SetOffsets(audit.TopicPartition{Topic: "rep"}, audit.PartitionOffsets{LogStart: ls.LogStart, LSO: rep, HW: rep})
	}
	if e.repStart > 0 {
		m.SetOffsets(audit.TopicPartition{Topic: "rep"}, audit.PartitionOffsets{LogStart: e.repStart, LSO: rep, HW: rep})
	}
	m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{
		{Topic: "orders"}: int64(len(e.orders)), {Topic: "rep"}: rep, {Topic: "cust"}: int64(len(e.customers))}})
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	opts := reconcile.Options{Decoder: dec}
	if e.history != nil {
		opts.History = &history.Evidence{Group: "app", History: e.history,
			LogStarts: map[audit.TopicPartition][]history.LogStartAt{{Topic: "rep"}: e.repLogStarts}}
	}
	r, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "string"), opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestStreamJoin pins the stream-table join's rules (Kafka Streams
// 3.6.2's KStreamKTableJoinProcessor): every consumed record with a key
// yields one joined record in a left join, with a table state the table
// held; an inner join's record whose key the table may not have held yet
// is undecided without the commit history, and proven lost with it.
// Each fault must be named with its cause; each clean case stays clean.
func TestStreamJoin(t *testing.T) {
	customers := [][2]string{{"c1", "Ann"}, {"c2", "Bob"}, {"c1", "Ann2"}}
	orders := []sjOrder{{"o1", "c1", 10, ""}, {"o2", "c2", 11, ""}, {"o3", "c9", 12, ""}, {"o4", "", 13, ""}, {"o5", "c1", 14, ""}}
	left := map[string]string{"o1": "Ann", "o2": "Bob", "o3": "-", "o5": "Ann2"}
	without := func(m map[string]string, id string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if k != id {
				out[k] = v
			}
		}
		return out
	}
	with := func(m map[string]string, id, name string) map[string]string {
		out := without(m, id)
		out[id] = name
		return out
	}
	inner := without(left, "o3")
	// the commit history: transaction 1 (marker at 10) committed the
	// customers up to offset 3 and nothing of rep; transaction 2 (marker at
	// 20) rep up to 4: every order was joined with the table whole (o1 with
	// Ann2)
	hist := &audit.CommitHistory{Group: "app", WholeFrom: 0, Commits: map[audit.TopicPartition][]audit.Commit{
		{Topic: "cust"}: {{Offset: 3, At: 10, Transactional: true}},
		{Topic: "rep"}:  {{Offset: 4, At: 20, Transactional: true}},
	}}
	cases := []struct {
		name    string
		typ     string
		ev      sjEvidence
		want    []string // loss and anomaly findings, "cause topic/partition@offset"
		verdict audit.Verdict
		missing string // a substring of the missing evidence
	}{
		{name: "left, clean", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: left}, verdict: audit.VerdictClean},
		{name: "left, either name of a customer updated", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: with(left, "o5", "Ann")}, verdict: audit.VerdictClean},
		{name: "left, copy dropped", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: without(left, "o2"), skipCopy: map[string]bool{"o2": true}},
			want: []string{"dropped orders/0@1"}, verdict: audit.VerdictLoss},
		{name: "left, joined record missing", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: without(left, "o5")},
			want: []string{"join-missing orders/0@4"}, verdict: audit.VerdictLoss},
		{name: "left, no customer is a null name", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: without(left, "o3")},
			want: []string{"join-missing orders/0@2"}, verdict: audit.VerdictLoss},
		{name: "left, a name the table never held", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: with(left, "o2", "Zed")},
			want: []string{"join-stale enriched/0@1"}, verdict: audit.VerdictLoss},
		{name: "left, a joined record written twice", typ: "left", ev: sjEvidence{customers: customers, orders: orders, out: left, twice: "o2"},
			want: []string{"duplicate enriched/0@2"}, verdict: audit.VerdictAnomaly},
		// retention deleted an earlier order of the same customer and
		// timestamp; its joined record remains: no duplicate
		{name: "left, an equal earlier order gone, its record remains", typ: "left",
			ev:      sjEvidence{customers: customers, orders: append([]sjOrder{{"o0", "c1", 10, ""}}, orders...), out: with(left, "o0", "Ann"), gone: 1},
			verdict: audit.VerdictClean},
		// AB's V19: two records whose joined records are alike (key,
		// timestamp, joined value: the joiner reads no note), the first
		// one's copy purged (rep offset 4), the second's consumed (5): the
		// one joined record is the second's, the first is the loss
		{name: "left, two joined records alike, the first's copy purged", typ: "left",
			ev: sjEvidence{customers: customers, orders: append(slices.Clone(orders), sjOrder{"o7", "c2", 20, "a"}, sjOrder{"o7", "c2", 20, "b"}),
				out: with(left, "o7", "Bob"), repStart: 5, onlyOnce: "o7"},
			want: []string{"unapplied orders/0@5"}, verdict: audit.VerdictLoss},
		// the same with the two records alike themselves (their copies too)
		{name: "left, two records alike, the first's copy purged", typ: "left",
			ev: sjEvidence{customers: customers, orders: append(slices.Clone(orders), sjOrder{"o7", "c2", 20, ""}, sjOrder{"o7", "c2", 20, ""}),
				out: with(left, "o7", "Bob"), repStart: 5, onlyOnce: "o7"},
			want: []string{"unapplied orders/0@5"}, verdict: audit.VerdictLoss},
		{name: "inner, clean", typ: "inner", ev: sjEvidence{customers: customers, orders: orders, out: inner}, verdict: audit.VerdictClean},
		// AB's V11 on a stream join (seeds 1007, 1131): the copies of two
		// orders of a customer the table never held purged past the
		// committed offset (4), the app committed past them since (6): no
		// joined record says anything, the history proves the purge, and
		// the range is the loss
		{name: "inner, copies purged before commit, committed past since", typ: "inner",
			ev: sjEvidence{customers: customers, orders: append(slices.Clone(orders), sjOrder{"o6", "c9", 15, ""}, sjOrder{"o7", "c9", 16, ""}),
				out: inner, repStart: 6, history: &audit.CommitHistory{Group: "app", WholeFrom: 0, Commits: map[audit.TopicPartition][]audit.Commit{
					{Topic: "cust"}: {{Offset: 3, At: 10, Time: 10}},
					{Topic: "rep"}:  {{Offset: 4, At: 11, Time: 11}, {Offset: 6, At: 20, Time: 30}},
				}}, repLogStarts: []history.LogStartAt{{Time: time.UnixMilli(20), Offset: 6, Why: "a capture before the restart"}}},
			want: []string{"purged-before-commit rep/0@4"}, verdict: audit.VerdictLoss},
		{name: "inner, missing, no history: undecided", typ: "inner", ev: sjEvidence{customers: customers, orders: orders, out: without(inner, "o2")},
			verdict: audit.VerdictIncomplete, missing: "cannot tell whether table customers held their key"},
		{name: "inner, missing, the history proves the customer applied", typ: "inner", ev: sjEvidence{customers: customers, orders: orders, out: with(without(inner, "o2"), "o1", "Ann2"), history: hist},
			want: []string{"join-missing orders/0@1"}, verdict: audit.VerdictLoss},
		{name: "inner, the history pins the state: the first name is stale", typ: "inner", ev: sjEvidence{customers: customers, orders: orders, out: inner, history: hist},
			want: []string{"join-stale enriched/0@0"}, verdict: audit.VerdictLoss},
		{name: "inner, the history pins the state, clean", typ: "inner", ev: sjEvidence{customers: customers, orders: orders, out: with(inner, "o1", "Ann2"), history: hist},
			verdict: audit.VerdictClean},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := c.ev.run(t, c.typ)
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
			if c.missing != "" && !strings.Contains(strings.Join(rep.Summary.Missing, "\n"), c.missing) {
				t.Errorf("missing evidence lacks %q: %v", c.missing, rep.Summary.Missing)
			}
			if !slices.ContainsFunc(rep.Findings, func(f audit.Finding) bool { return f.Cause == audit.CauseNullKey && f.Topic == "orders" }) {
				t.Errorf("the order without a customer is no null-key finding")
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
