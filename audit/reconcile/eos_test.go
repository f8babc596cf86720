package reconcile_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// eosEvidence is one key's evidence for testdata/eos/eos.kaudit.yaml
// (Kafka's EosTestClient): the Integer inputs on data, their copies on
// the user topic repartition (by input index), and each store's changelog
// states, with cache 0 one per input applied.
type eosEvidence struct {
	ins    []int32 // values of key k, at timestamps 100, 200, …
	copies []int   // indexes of ins with a copy on repartition
	states map[string][]eosState
}

type eosState struct {
	v  int64
	ts int64
}

func int32Bytes(v int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(v)) }
func int64Bytes(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

// runEOS audits the evidence through reconcile.Run with the example
// spec, its serdes as the plan says them.
func runEOS(t *testing.T, ev eosEvidence) (*audit.Report, int32) {
	t.Helper()
	return runEOSWith(t, ev, "", nil, 0)
}

// runEOSWith is runEOS with more spec lines after the example's (joins)
// and, on topics of their own, one record of key k at timestamp outTs each
// (nil: none).
func runEOSWith(t *testing.T, ev eosEvidence, more string, outs map[string][]byte, outTs int64) (*audit.Report, int32) {
	t.Helper()
	base, err := os.ReadFile(filepath.Join("..", "..", "testdata", "eos", "eos.kaudit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sp, err := spec.ParseSpec("eos.kaudit.yaml", append(base, more...))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	const parts = 2
	p := audit.DefaultPartition([]byte("k"), parts)
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	group := map[audit.TopicPartition]int64{}
	m.AddTopic(audit.TopicInfo{Name: "data", Partitions: parts})
	m.AddTopic(audit.TopicInfo{Name: "repartition", Partitions: parts})
	m.AddTopic(audit.TopicInfo{Name: "echo", Partitions: parts})
	for i, v := range ev.ins {
		m.Append(audit.Record{Topic: "data", Partition: p, Offset: int64(i), Key: []byte("k"), Value: int32Bytes(v), Timestamp: int64(100 * (i + 1)), Batch: plain})
		m.Append(audit.Record{Topic: "echo", Partition: p, Offset: int64(i), Key: []byte("k"), Value: int32Bytes(v), Timestamp: int64(100 * (i + 1)), Batch: plain}) // data.to("echo")
	}
	for off, i := range ev.copies {
		m.Append(audit.Record{Topic: "repartition", Partition: p, Offset: int64(off), Key: []byte("k"), Value: int32Bytes(ev.ins[i]), Timestamp: int64(100 * (i + 1)), Batch: plain})
	}
	for q := int32(0); q < parts; q++ {
		group[audit.TopicPartition{Topic: "data", Partition: q}] = 0
		group[audit.TopicPartition{Topic: "repartition", Partition: q}] = 0
	}
	group[audit.TopicPartition{Topic: "data", Partition: p}] = int64(len(ev.ins))
	group[audit.TopicPartition{Topic: "repartition", Partition: p}] = int64(len(ev.copies))
	long := map[string]bool{"sum": true, "cnt": true}
	for _, pt := range plan.Tables {
		m.AddTopic(audit.TopicInfo{Name: pt.Changelog, Partitions: parts, Configs: map[string]string{"cleanup.policy": "compact"}})
		m.AddTopic(audit.TopicInfo{Name: pt.Spec.Output, Partitions: parts})
		for i, s := range ev.states[pt.Name] {
			v := int32Bytes(int32(s.v))
			if long[pt.Name] {
				v = int64Bytes(s.v)
			}
			// the changelog partition is the task's: the source partition
			// without a hop, the repartition partition with one (the same
			// here, as data.to(repartition) keeps the key)
			m.Append(audit.Record{Topic: pt.Changelog, Partition: p, Offset: int64(i), Key: []byte("k"), Value: v, Timestamp: s.ts, Batch: plain})
			// toStream().to(output) forwards every state (cache 0)
			m.Append(audit.Record{Topic: pt.Spec.Output, Partition: p, Offset: int64(i), Key: []byte("k"), Value: v, Timestamp: s.ts, Batch: plain})
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(outs)) {
		m.AddTopic(audit.TopicInfo{Name: topic, Partitions: parts})
		if v := outs[topic]; v != nil {
			m.Append(audit.Record{Topic: topic, Partition: p, Offset: 0, Key: []byte("k"), Value: v, Timestamp: outTs, Batch: plain})
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
	return rep, p
}

// cleanStates folds values as EosTestClient's four stores do, one state
// per input applied (cache 0); skip names the input each store did not
// apply.
func cleanStates(values []int32, skip map[string]int) map[string][]eosState {
	out := map[string][]eosState{}
	for i, v := range values {
		ts := int64(100 * (i + 1))
		for _, name := range []string{"min", "sum", "max", "cnt"} {
			if j, ok := skip[name]; ok && j == i {
				continue
			}
			s := out[name]
			if len(s) == 0 {
				// the initializers: Integer.MAX_VALUE, 0L, Integer.MIN_VALUE, 0L
				s = []eosState{{map[string]int64{"min": 1<<31 - 1, "sum": 0, "max": -1 << 31, "cnt": 0}[name], 0}}
			}
			agg := s[len(s)-1].v
			switch name {
			case "min":
				agg = min(agg, int64(v))
			case "max":
				agg = max(agg, int64(v))
			case "sum":
				agg += int64(v)
			case "cnt":
				agg++
			}
			st := eosState{agg, ts}
			if len(out[name]) == 0 {
				out[name] = []eosState{st}
			} else {
				out[name] = append(out[name], st)
			}
		}
	}
	return out
}

func TestEOSClientTables(t *testing.T) {
	values := []int32{5, 3, 9, -2147483648, 7}
	all := []int{0, 1, 2, 3, 4}
	for _, tt := range []struct {
		name   string
		copies []int
		skip   map[string]int // the input each table's store did not apply
		want   func(p int32) []string
	}{
		{"clean", all, nil, func(int32) []string { return nil }},
		// groupByKey on data: no repartition hop, the source partition is
		// the task; an input the stores never applied is lost there (one
		// finding for the input, whichever tables lost it)
		{"min and sum skip an input", all, map[string]int{"min": 1, "sum": 1}, func(p int32) []string {
			return []string{fmt.Sprintf("store/unapplied data/%d@1", p)}
		}},
		{"sum alone skips an input", all, map[string]int{"sum": 3}, func(p int32) []string {
			return []string{fmt.Sprintf("store/unapplied data/%d@3", p)}
		}},
		// the user topic repartition is the hop of max and cnt: a copy
		// missing between readable neighbours was dropped before it
		{"repartition lost a copy", []int{0, 2, 3, 4}, map[string]int{"max": 1, "cnt": 1}, func(p int32) []string {
			return []string{fmt.Sprintf("repartition/dropped data/%d@1", p), fmt.Sprintf("repartition/dropped data/%d@1", p)}
		}},
		// a copy committed below the cut that max's store does not reflect
		{"max's store skipped a copy it read", all, map[string]int{"max": 2}, func(p int32) []string {
			return []string{fmt.Sprintf("store/state-diverged data/%d@2", p)}
		}},
		// count's values do not say which input is missing: the loss is
		// proven, the candidates named (the states' timestamps would pin
		// it to @2; the engine leaves @1 among the candidates)
		{"cnt's store skipped a copy it read", all, map[string]int{"cnt": 2}, func(p int32) []string {
			return []string{fmt.Sprintf("store/unapplied data/%d@1 ×1 [data/%d@1, data/%d@2]", p, p, p)}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, p := runEOS(t, eosEvidence{ins: values, copies: tt.copies, states: cleanStates(values, tt.skip)})
			got, want := judged(rep), tt.want(p)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("findings = %q, want %q", got, want)
			}
			wantVerdict := audit.VerdictClean
			if len(want) > 0 {
				wantVerdict = audit.VerdictLoss
			}
			if rep.Summary.Verdict != wantVerdict {
				t.Errorf("verdict %s, want %s; missing %q, notes %q", rep.Summary.Verdict, wantVerdict, rep.Summary.Missing, rep.Summary.Notes)
			}
		})
	}
}
