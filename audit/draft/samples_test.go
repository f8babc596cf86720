package draft

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestWindowedOutputKeysSampledAfterTheirStore (AB's V14): a windowed
// output's keys (the key's bytes and an 8-byte start) are the inner key's
// serde only once the window store's changelog has shown those keys;
// listed before the changelog, the output was sampled whole and the whole
// app's keys guessed bytes. Whatever the order, the keys are text.
func TestWindowedOutputKeysSampledAfterTheirStore(t *testing.T) {
	const out, cl = "app-counts", "app-store-changelog"
	start := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC).UnixMilli()
	src := fakeapp.NewMemory(time.Now())
	for _, topic := range []string{out, cl} {
		src.AddTopic(audit.TopicInfo{Name: topic, Partitions: 1})
	}
	var n int64
	for i := range 12 {
		key := fmt.Sprintf("k-%02d", i)
		v := binary.BigEndian.AppendUint64(nil, uint64(i+1))
		clKey := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64([]byte(key), uint64(start)), 0)
		outKey := binary.BigEndian.AppendUint64([]byte(key), uint64(start))
		src.Append(audit.Record{Topic: cl, Offset: n, Key: clKey, Value: v, Timestamp: start + 10})
		src.Append(audit.Record{Topic: out, Offset: n, Key: outKey, Value: v, Timestamp: start + 10})
		n++
	}
	for _, topics := range [][]string{{out, cl}, {cl, out}} {
		t.Run(topics[0]+" first", func(t *testing.T) {
			inf := &inferred{}
			sm, err := inf.readSamples(context.Background(), src, []draftTable{{name: "t", changelog: cl}}, topics, nil, []string{out})
			if err != nil {
				t.Fatal(err)
			}
			if len(sm.keys) != 24 {
				t.Fatalf("%d keys sampled, want 24", len(sm.keys))
			}
			for _, k := range sm.keys {
				if len(k) != 4 || string(k[:2]) != "k-" {
					t.Fatalf("key %q sampled: want the inner key alone", k)
				}
			}
			if !sm.windowedTopics[out] || !sm.windowedTopics[cl] {
				t.Errorf("windowed topics %v, want both", sm.windowedTopics)
			}
		})
	}
}

// TestStoreSerdeOfItsOwn (AB's V13): a store whose values the streams'
// serde cannot read gets its own store_serdes (a JSON aggregate of
// Confluent-framed Avro streams, a count's Longs); one the streams'
// serde reads keeps the app's (a JSON number is text as well).
func TestStoreSerdeOfItsOwn(t *testing.T) {
	avro := func(i int) []byte { return append([]byte{0, 0, 0, 0, 7}, byte(2*i)) }
	jsonObj := func(i int) []byte { return fmt.Appendf(nil, `{"n": %d}`, i) }
	long := func(i int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(i)) }
	text := func(i int) []byte { return fmt.Appendf(nil, "%d", i) }
	for _, tc := range []struct {
		name        string
		stream, cl  func(int) []byte
		want        string // the store's own serde, "" for the app's
		wantAppWide string
	}{
		{"a JSON store behind Avro streams", avro, jsonObj, "json", "avro"},
		{"a count behind Avro streams", avro, long, "long", "avro"},
		{"a count behind JSON streams", jsonObj, long, "long", "json"},
		{"JSON numbers behind JSON streams", jsonObj, text, "", "json"},
		{"an Avro store behind Avro streams", avro, avro, "", "avro"},
		{"an Avro table's store behind JSON streams", jsonObj, avro, "avro", "json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sm := &samples{stateVals: map[string][][]byte{}, topicVals: map[string][][]byte{}}
			for i := range 10 {
				sm.vals = append(sm.vals, tc.stream(i))
				sm.keys = append(sm.keys, []byte("k"))
				sm.stateVals["cl"] = append(sm.stateVals["cl"], tc.cl(i))
			}
			sm.topicVals["in"] = sm.vals
			inf := &inferred{}
			if err := inf.guessSerdes(context.Background(), Options{}, fakeapp.NewMemory(time.Now()), sm); err != nil {
				t.Fatal(err)
			}
			if inf.valueSerde.Value != tc.wantAppWide {
				t.Errorf("the app's value serde %q, want %q", inf.valueSerde.Value, tc.wantAppWide)
			}
			if got := inf.storeSerde["cl"].Value; got != tc.want {
				t.Errorf("the store's own serde %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStoreSerdeBesideTopicSerdes (seed 1047 of AB's generator): where
// the topics have serdes of their own (an Avro source beside two Long
// ones: the app's Long), a store of Longs keeps its own store_serdes
// although they equal the app's: the Avro table's serdes would cover its
// changelog.
func TestStoreSerdeBesideTopicSerdes(t *testing.T) {
	sm := &samples{stateVals: map[string][][]byte{}, topicVals: map[string][][]byte{}}
	for i := range 10 {
		a, l := append([]byte{0, 0, 0, 0, 7}, byte(2*i)), binary.BigEndian.AppendUint64(nil, uint64(i+1))
		sm.vals = append(sm.vals, a, l, l)
		sm.keys = append(sm.keys, []byte("k"))
		sm.topicVals["avro-in"] = append(sm.topicVals["avro-in"], a)
		sm.topicVals["long-in"] = append(sm.topicVals["long-in"], l)
		sm.topicVals["long-in2"] = append(sm.topicVals["long-in2"], l)
		sm.stateVals["cl"] = append(sm.stateVals["cl"], l)
	}
	inf := &inferred{}
	if err := inf.guessSerdes(context.Background(), Options{}, fakeapp.NewMemory(time.Now()), sm); err != nil {
		t.Fatal(err)
	}
	if inf.valueSerde.Value != "long" || inf.topicSerde["avro-in"].Value != "avro" {
		t.Fatalf("the app's serde %q, the Avro topic's %q: want long and avro", inf.valueSerde.Value, inf.topicSerde["avro-in"].Value)
	}
	if got := inf.storeSerde["cl"].Value; got != "long" {
		t.Errorf("the store's own serde %q, want long", got)
	}
}
