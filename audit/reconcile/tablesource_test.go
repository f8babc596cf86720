package reconcile_test

import (
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

// TestTableSource pins builder.table()'s semantics (reduce: table, from
// Kafka Streams 3.6.2's KTableSource): a state's timestamp is its record's
// own, not the newest seen, and a null value deletes the key. Each clean
// case must stay clean; a tombstone or an update the store missed is a
// loss at that input.
func TestTableSource(t *testing.T) {
	type rec struct {
		v  string // "" for a tombstone
		ts int64
	}
	cases := []struct {
		name   string
		inputs []rec
		states []rec // the changelog's, in order
		want   []string
	}{
		{name: "older timestamp later", inputs: []rec{{`{"n":"a"}`, 200}, {`{"n":"b"}`, 100}},
			states: []rec{{`{"n":"a"}`, 200}, {`{"n":"b"}`, 100}}},
		{name: "deleted", inputs: []rec{{`{"n":"a"}`, 100}, {"", 150}},
			states: []rec{{`{"n":"a"}`, 100}, {"", 150}}},
		{name: "deleted, compacted away", inputs: []rec{{`{"n":"a"}`, 100}, {"", 150}}},
		{name: "deleted and created again", inputs: []rec{{`{"n":"a"}`, 100}, {"", 150}, {`{"n":"c"}`, 160}},
			states: []rec{{`{"n":"a"}`, 100}, {"", 150}, {`{"n":"c"}`, 160}}},
		{name: "tombstone missed", inputs: []rec{{`{"n":"a"}`, 100}, {"", 150}},
			states: []rec{{`{"n":"a"}`, 100}}, want: []string{"src/0@1"}},
		{name: "update missed", inputs: []rec{{`{"n":"a"}`, 100}, {`{"n":"b"}`, 150}},
			states: []rec{{`{"n":"a"}`, 100}}, want: []string{"src/0@1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp, err := spec.ParseSpec("kaudit.yaml", []byte(`app_id: app
serdes: {key: string, value: json}
tables:
  - {name: customers, source: src, reduce: table, store: S}
`))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := spec.Resolve(sp, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
			m.AddTopic(audit.TopicInfo{Name: "src", Partitions: 1})
			m.AddTopic(audit.TopicInfo{Name: "app-S-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
			plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
			for i, in := range c.inputs {
				r := audit.Record{Topic: "src", Offset: int64(i), Key: []byte("k"), Timestamp: in.ts, Batch: plain}
				if in.v != "" {
					r.Value = []byte(in.v)
				}
				m.Append(r)
			}
			for i, s := range c.states {
				r := audit.Record{Topic: "app-S-changelog", Offset: int64(i), Key: []byte("k"), Timestamp: s.ts, Batch: plain}
				if s.v != "" {
					r.Value = []byte(s.v)
				}
				m.Append(r)
			}
			if len(c.states) == 0 && len(c.inputs) > 0 {
				// compacted to nothing: the tombstone's retention passed
				m.SetOffsets(audit.TopicPartition{Topic: "app-S-changelog"}, audit.PartitionOffsets{LogStart: 0, LSO: 2, HW: 2})
			}
			m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{{Topic: "src"}: int64(len(c.inputs))}})
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "string"), reconcile.Options{Decoder: dec})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
					got = append(got, fmt.Sprintf("%s/%d@%d", f.Topic, f.Partition, f.Offset))
				}
				if f.Cause == audit.CauseNullKey {
					t.Errorf("a tombstone of a table source is an input, not a null value Streams drops: %s", f.Detail)
				}
			}
			slices.Sort(got)
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("findings %v, want %v\n%+v", got, c.want, rep.Findings)
			}
			if len(c.want) == 0 && rep.Summary.Verdict != audit.VerdictClean {
				t.Errorf("verdict %s, want clean; missing: %v", rep.Summary.Verdict, rep.Summary.Missing)
			}
		})
	}
}
