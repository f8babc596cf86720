package reconcile_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestSumFieldOrder pins what the real drill showed: sum(FIELD) keeps the
// first input's other fields, and Streams may apply two source partitions'
// inputs in either order, whatever their timestamps. Any feasible order
// is accepted; a state no order explains is a loss, under exactly-once.
// Under at-least-once (a changelog written outside transactions) the app
// applies again after a restart what it processed since its last commit,
// so such a state is not judged: incomplete, never a loss. (That an input
// newer than every state is still a loss under at-least-once is
// TestWordCountInferredLost's, on WordCountDemo's capture.)
func TestSumFieldOrder(t *testing.T) {
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(`app_id: app
serdes: {key: string, value: json}
tables:
  - {name: payments, source: payments, select_key: value.orderId, reduce: sum(amount), store: S}
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		state    string
		purged   bool // the copies, which fix the order, are purged
		wantLoss int
		alos     bool // the changelog written outside transactions
	}{
		{"applied later input first", `{"orderId":"o1","id":"b","amount":12}`, false, 0, false},
		{"applied in timestamp order, copies purged", `{"orderId":"o1","id":"a","amount":12}`, true, 0, false},
		{"applied against the readable copies' order", `{"orderId":"o1","id":"a","amount":12}`, false, 1, false},
		{"one input missing", `{"orderId":"o1","id":"b","amount":7}`, false, 1, false},
		{"one input missing, copies purged", `{"orderId":"o1","id":"b","amount":7}`, true, 1, false},
		{"applied against the readable copies' order, at-least-once", `{"orderId":"o1","id":"a","amount":12}`, false, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := fakeapp.NewMemory(time.UnixMilli(10_000))
			m.AddTopic(audit.TopicInfo{Name: "payments", Partitions: 2})
			m.AddTopic(audit.TopicInfo{Name: "app-S-repartition", Partitions: 1})
			m.AddTopic(audit.TopicInfo{Name: "app-S-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
			a := `{"orderId":"o1","id":"a","amount":5}`
			b := `{"orderId":"o1","id":"b","amount":7}`
			m.Writer(audit.TopicPartition{Topic: "payments", Partition: 0}, 100).Plain(fakeapp.KV{Key: []byte("a"), Value: []byte(a)})
			m.Writer(audit.TopicPartition{Topic: "payments", Partition: 1}, 200).Plain(fakeapp.KV{Key: []byte("b"), Value: []byte(b)})
			// the repartition copies keep the inputs' timestamps; b was applied first
			rp := m.Writer(audit.TopicPartition{Topic: "app-S-repartition", Partition: 0}, 0)
			recs := []audit.Record{}
			for _, in := range []struct {
				v  string
				ts int64
			}{{b, 201}, {a, 101}} {
				recs = append(recs, audit.Record{Topic: "app-S-repartition", Offset: rp.Next(), Key: []byte("o1"), Value: []byte(in.v), Timestamp: in.ts,
					Batch: audit.Batch{ProducerID: -1, ProducerEpoch: -1}})
				rp.Skip(1)
			}
			m.Append(recs...)
			if tt.purged {
				m.SetOffsets(audit.TopicPartition{Topic: "app-S-repartition", Partition: 0}, audit.PartitionOffsets{LogStart: 4, LSO: 4, HW: 4})
			}
			cl := m.Writer(audit.TopicPartition{Topic: "app-S-changelog", Partition: 0}, 200)
			if tt.alos {
				cl.Plain(fakeapp.KV{Key: []byte("o1"), Value: []byte(tt.state)})
			} else {
				cl.Txn(9, 0, fakeapp.KV{Key: []byte("o1"), Value: []byte(tt.state)})
				cl.Marker(9, 0, true)
			}
			m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{
				{Topic: "payments", Partition: 0}: 1, {Topic: "payments", Partition: 1}: 1, {Topic: "app-S-repartition", Partition: 0}: 2}})
			dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, "string"), reconcile.Options{Decoder: dec})
			if err != nil {
				t.Fatal(err)
			}
			var losses int
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss {
					losses++
				}
			}
			if losses != tt.wantLoss {
				b, _ := json.MarshalIndent(rep.Findings, "", " ")
				t.Errorf("%d loss findings, want %d: %s", losses, tt.wantLoss, b)
			}
			if tt.alos && tt.wantLoss == 0 && rep.Summary.Verdict != audit.VerdictIncomplete {
				t.Errorf("verdict %s, want incomplete: a state only applying again explains is not judged (missing %v)", rep.Summary.Verdict, rep.Summary.Missing)
			}
		})
	}
}
