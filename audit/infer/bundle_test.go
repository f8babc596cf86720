package infer

import (
	"fmt"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"encoding/json"
	"iter"
	"strconv"

	"github.com/kaudit/kaudit/internal/fakeapp"

	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/topology"
)

const bundle = "../../testdata/incidents/dropped"

// openBundle opens the incident bundle with a decoder of its own schemas.
func openBundle(t *testing.T) (*snapshot.Snapshot, *codec.Codec) {
	t.Helper()
	s, err := snapshot.Open(bundle)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for id, text := range s.Schemas() {
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(int(id))+".avsc"), []byte(text.Schema), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "avro", SchemasDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// bundleSpec is the incident's hand-written spec with edit applied.
func bundleSpec(t *testing.T, s *snapshot.Snapshot, edit func(string) string) (*spec.Spec, *spec.Plan) {
	t.Helper()
	data, err := os.ReadFile(bundle + ".kaudit.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if edit != nil {
		text = edit(text)
	}
	sp, err := spec.ParseSpec("dropped.kaudit.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := topology.ParseString(s.Topology())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, topo, "")
	if err != nil {
		t.Fatal(err)
	}
	return sp, plan
}

func TestBundleChecks(t *testing.T) {
	ctx := context.Background()
	s, dec := openBundle(t)
	for _, tc := range []struct {
		name     string
		old, new string
		fieldErr string // a spec error naming this
		unjudged string // the table or join not judged
	}{
		{name: "hand-written"},
		{name: "sum typo", old: "sum(amount)", new: "sum(amont)", fieldErr: `:16: tables[1].reduce: value.amont in sum(amont): no field "amont"`},
		{name: "join typo", old: "r2?.carrier", new: "r2?.carier", fieldErr: `:27: joins[0].value: r2.carier in`},
		{name: "select_key typo", old: "select_key: value.orderId       #", new: "select_key: value.orderID       #", fieldErr: `:15: tables[1].select_key: value.orderID in value.orderID: no field "orderID"`},
		{name: "latest for a sum", old: "sum(amount)", new: "latest", unjudged: "payments"},
		{name: "count for latest", old: "select_key: value.orderId\n    reduce: latest  ", new: "select_key: value.orderId\n    reduce: count   ", unjudged: "orders"},
		{name: "join value swapped", old: `"paid": r1?.amount`, new: `"paid": left.amount`, unjudged: "order-status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp, plan := bundleSpec(t, s, func(text string) string {
				if tc.old == "" {
					return text
				}
				if !strings.Contains(text, tc.old) {
					t.Fatalf("spec has no %q", tc.old)
				}
				return strings.Replace(text, tc.old, tc.new, 1)
			})
			ev, err := Load(ctx, s, dec, plan, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = CheckFields(sp, plan, ev)
			if tc.fieldErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fieldErr) {
					t.Fatalf("CheckFields: %v, want an error with %q", err, tc.fieldErr)
				}
				t.Log(err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var unjudged []string
			for _, pt := range plan.Tables {
				v := CheckTable(pt, ev)
				t.Logf("table %s: %s %s", pt.Name, v.Summary(), v.Unjudged)
				if v.Unjudged != "" {
					unjudged = append(unjudged, pt.Name)
				}
			}
			for _, pj := range plan.Joins {
				v := CheckJoin(pj, plan, ev, nil)
				t.Logf("join %s: %s %s", pj.Output, v.Summary(), v.Unjudged)
				if v.Unjudged != "" {
					unjudged = append(unjudged, pj.Output)
				}
			}
			if got := strings.Join(unjudged, ","); got != tc.unjudged {
				t.Errorf("unjudged %q, want %q", got, tc.unjudged)
			}
		})
	}
}

// TestBundleSampled: with a bound below the topics' sizes, Load keeps a
// sample of the keys, the same in every topic: the checks see whole
// histories of fewer keys and still find the spec explains them all.
func TestBundleSampled(t *testing.T) {
	ctx := context.Background()
	s, dec := openBundle(t)
	_, plan := bundleSpec(t, s, nil)
	ev, err := Load(ctx, s, dec, plan, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range plan.Tables {
		v := CheckTable(pt, ev)
		if v.Unjudged != "" || v.Keys == 0 || v.Explained[v.Spec] != v.Keys {
			t.Errorf("table %s: %s %s", pt.Name, v.Summary(), v.Unjudged)
		}
		if n := ev.Topics[pt.Changelog].Count(); n > 150 {
			t.Errorf("table %s: %d changelog records kept for a bound of 60", pt.Name, n)
		}
		t.Logf("table %s: %s", pt.Name, v.Summary())
	}
	for _, pj := range plan.Joins {
		v := CheckJoin(pj, plan, ev, nil)
		if v.Unjudged != "" || v.Keys == 0 || v.Explained[v.Spec] != v.Keys {
			t.Errorf("join %s: %s %s", pj.Output, v.Summary(), v.Unjudged)
		}
		t.Logf("join %s: %s", pj.Output, v.Summary())
	}
}

// purged is the bundle as real Streams leaves it: every repartition
// record purged (Streams deletes them once committed).
type purged struct{ *snapshot.Snapshot }

func (p purged) Offsets(ctx context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	o, err := p.Snapshot.Offsets(ctx, tp)
	if err == nil && strings.HasSuffix(tp.Topic, "-repartition") {
		o.LogStart = o.HW
	}
	return o, err
}

func (p purged) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	if strings.HasSuffix(tp.Topic, "-repartition") {
		return func(func(audit.Record, error) bool) {}
	}
	return p.Snapshot.Records(ctx, tp, from, to)
}

// TestBundlePurged: with the repartition topics purged, the reducers are
// checked on the keys' final states against their inputs on the source.
func TestBundlePurged(t *testing.T) {
	ctx := context.Background()
	s, dec := openBundle(t)
	src := purged{s}
	for _, tc := range []struct {
		reduce   string // payments' reducer
		unjudged bool
	}{{"sum(amount)", false}, {"latest", true}} {
		t.Run(tc.reduce, func(t *testing.T) {
			_, plan := bundleSpec(t, s, func(text string) string { return strings.Replace(text, "sum(amount)", tc.reduce, 1) })
			ev, err := Load(ctx, src, dec, plan, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, pt := range plan.Tables {
				v := CheckTable(pt, ev)
				t.Logf("table %s: %s", pt.Name, v.Summary())
				if v.Keys < 100 {
					t.Errorf("table %s: %d keys checked", pt.Name, v.Keys)
				}
				if got := v.Unjudged != ""; got != (tc.unjudged && pt.Name == "payments") {
					t.Errorf("table %s: unjudged %q", pt.Name, v.Unjudged)
				}
				if g := GuessReducer(pt, ev, "value.orderId"); g.Value != map[string]string{"orders": "latest", "payments": "sum(amount)", "shipments": "latest"}[pt.Name] {
					t.Errorf("table %s: guessed %+v", pt.Name, g)
				}
			}
		})
	}
}

// TestResetIsNotAWrongSpec: a store reset (KAFKA-16017: a key's sum
// restarts from a raw input) makes latest explain the reset keys, yet it
// does not make a sum table unjudged; a latest table written as a sum
// still is.
func TestResetIsNotAWrongSpec(t *testing.T) {
	n := func(i int) any { return map[string]any{"amount": json.Number(strconv.Itoa(i)), "id": "x"} }
	sumOf := func(is ...int) any {
		t := 0
		for _, i := range is {
			t += i
		}
		return n(t)
	}
	copies := &Topic{Name: "rep", Parts: map[int32][]Rec{}, Whole: map[int32]bool{0: true}, Partitions: 1}
	changelog := &Topic{Name: "cl", Parts: map[int32][]Rec{}, Whole: map[int32]bool{0: true}, Partitions: 1}
	add := func(tp *Topic, key string, v any) { tp.Parts[0] = append(tp.Parts[0], Rec{Key: key, Value: v}) }
	for k := range 10 { // keys summed, then reset once: [1, 1+2, 3]
		key := "r" + strconv.Itoa(k)
		for _, i := range []int{1, 2, 3} {
			add(copies, key, n(i))
		}
		add(changelog, key, n(1))
		add(changelog, key, sumOf(1, 2))
		add(changelog, key, n(3))
	}
	for k := range 3 { // keys summed, no reset
		key := "s" + strconv.Itoa(k)
		add(copies, key, n(1))
		add(copies, key, n(2))
		add(changelog, key, n(1))
		add(changelog, key, sumOf(1, 2))
	}
	ev := &Evidence{Topics: map[string]*Topic{"rep": copies, "cl": changelog}}
	sp := func(reduce string) spec.PlannedTable {
		r, err := spec.ParseReducer(reduce)
		if err != nil {
			t.Fatal(err)
		}
		return spec.PlannedTable{Name: "t", Repartition: "rep", Changelog: "cl", Spec: &spec.TableSpec{Name: "t", Reducer: r}}
	}
	if v := CheckTable(sp("sum(amount)"), ev); v.Unjudged != "" {
		t.Errorf("a reset store leaves the sum table unjudged: %s", v.Unjudged)
	}
	// a latest table: every state is the last input
	latestCL := &Topic{Name: "cl", Parts: map[int32][]Rec{}, Whole: map[int32]bool{0: true}, Partitions: 1}
	for k := range 10 {
		key := "r" + strconv.Itoa(k)
		for _, i := range []int{1, 2, 3} {
			add(latestCL, key, n(i))
		}
	}
	ev.Topics["cl"] = latestCL
	if v := CheckTable(sp("sum(amount)"), ev); v.Unjudged == "" {
		t.Errorf("sum(amount) for a latest table is judged: %s", v.Summary())
	}
}

func TestPartitionsFitting(t *testing.T) {
	m := fakeapp.NewMemory(time.Now())
	set := func(topic string, sizes ...int64) {
		m.AddTopic(audit.TopicInfo{Name: topic, Partitions: int32(len(sizes))})
		for p, n := range sizes {
			m.SetOffsets(audit.TopicPartition{Topic: topic, Partition: int32(p)}, audit.PartitionOffsets{HW: n, LSO: n})
		}
	}
	set("a", 10, 10, 10)
	set("b", 20, 20, 20)
	set("c", 5, 5, 5, 5, 5)
	for _, tc := range []struct {
		topics []string
		max    int
		parts  string
		mod    uint64
	}{
		{[]string{"a", "b"}, 1000, "[]", 1},  // all fit
		{[]string{"a", "b"}, 45, "[0 1]", 1}, // b's partitions 0 and 1: 40
		{[]string{"a", "b"}, 10, "[0]", 2},   // one partition of b is 20: half its keys
		{[]string{"a", "c"}, 10, "[]", 3},    // not co-partitioned: all partitions, a third of the keys
	} {
		parts, mod, err := partitionsFitting(t.Context(), m, tc.topics, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(parts); got != tc.parts || mod != tc.mod {
			t.Errorf("%v max %d: parts %s mod %d, want %s %d", tc.topics, tc.max, got, mod, tc.parts, tc.mod)
		}
	}
}
