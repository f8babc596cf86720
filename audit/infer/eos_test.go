package infer

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestEOSClientReducers: on evidence of Kafka's EosTestClient (Integer
// values, cache 0), the example spec's aggregates pass the spec check,
// and inference names sum and count. A min or max store's distinct states
// are inputs in their order, which latest explains too (the check
// compares no timestamps and a history need not end on the fold of every
// copy): inference takes latest there, so kaudit init cannot propose min
// or max.
func TestEOSClientReducers(t *testing.T) {
	sp, err := spec.LoadSpec(filepath.Join("..", "..", "testdata", "eos", "eos.kaudit.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	m.AddTopic(audit.TopicInfo{Name: "data", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: "repartition", Partitions: 1})
	for _, pt := range plan.Tables {
		m.AddTopic(audit.TopicInfo{Name: pt.Changelog, Partitions: 1})
	}
	i32 := func(v int64) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(v))) }
	i64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	var off, clOff int64
	for k := range 8 {
		key := []byte{byte('a' + k)}
		var mn, mx, sum, cnt int64
		for j, v := range []int64{int64(5 + k), int64(3 - k), int64(9 + k), -7, 2} {
			ts := int64(100*j + k)
			m.Append(audit.Record{Topic: "data", Offset: off, Key: key, Value: i32(v), Timestamp: ts, Batch: plain})
			m.Append(audit.Record{Topic: "repartition", Offset: off, Key: key, Value: i32(v), Timestamp: ts, Batch: plain})
			off++
			if j == 0 {
				mn, mx = v, v
			}
			mn, mx, sum, cnt = min(mn, v), max(mx, v), sum+v, cnt+1
			for _, pt := range plan.Tables {
				val := map[string][]byte{"min": i32(mn), "sum": i64(sum), "max": i32(mx), "cnt": i64(cnt)}[pt.Name]
				m.Append(audit.Record{Topic: pt.Changelog, Offset: clOff, Key: key, Value: val, Timestamp: ts, Batch: plain})
			}
			clOff++
		}
	}
	topics := map[string]codec.TopicSerdes{}
	for topic, sd := range plan.TopicSerdes() {
		topics[topic] = codec.TopicSerdes{Key: sd.Key, Value: sd.Value}
	}
	dec, err := codec.New(codec.Config{KeySerde: sp.Serdes.Key, ValueSerde: sp.Serdes.Value, Topics: topics})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := Load(t.Context(), m, dec, plan, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"min": "latest", "sum": "sum", "max": "latest", "cnt": "count"}
	for _, pt := range plan.Tables {
		v := CheckTable(pt, ev)
		if v.Unjudged != "" || v.Keys != 8 {
			t.Errorf("table %s: the spec check: %d keys, unjudged %q (%v)", pt.Name, v.Keys, v.Unjudged, v.Explained)
		}
		if g := GuessReducer(pt, ev, ""); g.Value != want[pt.Name] {
			t.Errorf("table %s: guessed %q (%s, candidates %v), want %s", pt.Name, g.Value, g.Evidence, g.Candidates, want[pt.Name])
		}
	}
	// a wrong spec is caught: max's adder on min's store
	wrong := plan.Tables[0]
	tb := *wrong.Spec
	r, err := spec.ParseSpec("k.yaml", []byte("app_id: EosTest\ntables:\n  - {name: min, source: data, store: s, aggregate: {init: -2147483648, expr: 'value > agg ? value : agg'}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tb.Reducer = r.Tables[0].Reducer
	wrong.Spec = &tb
	if v := CheckTable(wrong, ev); v.Unjudged == "" {
		t.Errorf("max's adder on min's store passed the check: %v", v.Explained)
	}
}
