package reconcile_test

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/audittest"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/audit/spec"
)

// TestInnerJoinOfAggregates: SmokeTestClient's dif (max.join(min,
// (v1, v2) -> v1 - v2), Integer) and avg (sum.join(cnt, (v1, v2) ->
// (double) v1 / v2), Double) over EosTestClient's tables: inner joins of
// two aggregates whose output is checked against the tables' final states.
func TestInnerJoinOfAggregates(t *testing.T) {
	values := []int32{5, 9, 2, 7}
	states := cleanStates(values, nil)
	last := func(name string) eosState { s := states[name]; return s[len(s)-1] }
	dif := last("max").v - last("min").v // 9 - 2
	avg := float64(last("sum").v) / float64(last("cnt").v)
	ts := max(last("max").ts, last("min").ts)
	dbl := func(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
	for _, tt := range []struct {
		name string
		dif  []byte // the dif output's last record of key k, nil for none
		avg  []byte
		want []string
	}{
		{"clean", int32Bytes(int32(dif)), dbl(avg), nil},
		{"dif stale", int32Bytes(int32(dif - 1)), dbl(avg), []string{"join/join-stale dif"}},
		{"avg missing", int32Bytes(int32(dif)), nil, []string{"join/join-missing avg"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := runJoinAgg(t, values, states, map[string][]byte{"dif": tt.dif, "avg": tt.avg}, ts)
			var got []string
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
					got = append(got, string(f.Stage)+"/"+string(f.Cause)+" "+f.Topic)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings %v, want %v (missing %v)", got, tt.want, rep.Summary.Missing)
			}
			if rep.Summary.Verdict == audit.VerdictIncomplete {
				t.Errorf("incomplete: %v", rep.Summary.Missing)
			}
		})
	}
}

// runJoinAgg is runEOS's evidence with the two joins: every store's states
// on its changelog and output, and each join output's last record.
func runJoinAgg(t *testing.T, values []int32, states map[string][]eosState, outs map[string][]byte, ts int64) *audit.Report {
	t.Helper()
	base, err := os.ReadFile(filepath.Join("..", "..", "testdata", "eos", "eos.kaudit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.ParseSpec("eos.kaudit.yaml", append(base, []byte(`joins:
  - {output: dif, left: max, right: min, type: inner, value: "left - r1"}
  - {output: avg, left: sum, right: cnt, type: inner, value: "float(left) / float(r1)", serdes: {value: Double}}
`)...))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m := audittest.NewMemory(time.UnixMilli(1_000_000))
	const parts = 2
	p := audit.DefaultPartition([]byte("k"), parts)
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	group := map[audit.TopicPartition]int64{}
	for _, topic := range []string{"data", "repartition", "echo", "dif", "avg"} {
		m.AddTopic(audit.TopicInfo{Name: topic, Partitions: parts})
	}
	for i, v := range values {
		r := audit.Record{Partition: p, Offset: int64(i), Key: []byte("k"), Value: int32Bytes(v), Timestamp: int64(100 * (i + 1)), Batch: plain}
		r.Topic = "data"
		m.Append(r)
		r.Topic = "repartition"
		m.Append(r)
		r.Topic = "echo"
		m.Append(r)
	}
	for q := int32(0); q < parts; q++ {
		for _, topic := range []string{"data", "repartition"} {
			group[audit.TopicPartition{Topic: topic, Partition: q}] = 0
			if q == p {
				group[audit.TopicPartition{Topic: topic, Partition: q}] = int64(len(values))
			}
		}
	}
	long := map[string]bool{"sum": true, "cnt": true}
	for _, pt := range plan.Tables {
		m.AddTopic(audit.TopicInfo{Name: pt.Changelog, Partitions: parts, Configs: map[string]string{"cleanup.policy": "compact"}})
		m.AddTopic(audit.TopicInfo{Name: pt.Spec.Output, Partitions: parts})
		for i, s := range states[pt.Name] {
			v := int32Bytes(int32(s.v))
			if long[pt.Name] {
				v = int64Bytes(s.v)
			}
			m.Append(audit.Record{Topic: pt.Changelog, Partition: p, Offset: int64(i), Key: []byte("k"), Value: v, Timestamp: s.ts, Batch: plain})
			m.Append(audit.Record{Topic: pt.Spec.Output, Partition: p, Offset: int64(i), Key: []byte("k"), Value: v, Timestamp: s.ts, Batch: plain})
		}
	}
	for topic, v := range outs {
		if v != nil {
			m.Append(audit.Record{Topic: topic, Partition: p, Offset: 0, Key: []byte("k"), Value: v, Timestamp: ts, Batch: plain})
		}
	}
	m.SetGroup(audit.GroupOffsets{Group: "EosTest", Offsets: group})
	topics := map[string]codec.TopicSerdes{}
	for topic, sd := range plan.TopicSerdes() {
		topics[topic] = codec.TopicSerdes{Key: sd.Key, Value: sd.Value}
	}
	dec, err := codec.New(codec.Config{KeySerde: sp.Serdes.Key, ValueSerde: sp.Serdes.Value, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reconcile.Run(t.Context(), m, reconcile.FromPlan(plan, sp.Serdes.Key), reconcile.Options{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
