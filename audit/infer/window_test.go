package infer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/spec"
)

// windowKey is a window store's changelog key: the key's bytes, the start
// and sequence number 0.
func windowKey(key string, start int64) []byte {
	b := append([]byte(key), make([]byte, 12)...)
	binary.BigEndian.PutUint64(b[len(key):], uint64(start))
	return b
}

// simulateWindows folds inputs as Kafka Streams 3.6's KStreamWindowAggregate
// does (one task, in order; an input skipped for a window whose end is at
// or below stream time minus grace) and returns the store's changelog,
// every state written (no cache), and its states as a windowed output
// would carry them.
func simulateWindows(t *testing.T, ins []Rec, w spec.Window, reduce string) (changelog *Topic, states []Rec) {
	t.Helper()
	r, err := spec.ParseReducer(reduce)
	if err != nil {
		t.Fatal(err)
	}
	ts := &spec.TableSpec{Reducer: r}
	type wk struct {
		k string
		s int64
	}
	agg := map[wk]any{}
	stream := int64(-1)
	var log []Rec
	for _, in := range ins {
		stream = max(stream, in.Timestamp)
		for _, s := range w.Starts(in.Timestamp) {
			if s+w.Size <= stream-w.Grace {
				continue // Skipping record for expired window
			}
			k := wk{string(in.RawKey), s}
			old, ok := agg[k]
			next, err := ts.Reduce(old, in.Value, !ok)
			if err != nil {
				t.Fatal(err)
			}
			agg[k] = next
			b, _ := json.Marshal(next)
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			log = append(log, Rec{RawKey: windowKey(string(in.RawKey), s), RawValue: b, Value: v, Timestamp: in.Timestamp})
		}
	}
	return topicOf("changelog", log...), log
}

// clicks is n inputs of keys u0..u4, a second apart from t0, with an
// amount; late inputs (timestamps far behind) at the given positions.
func clicks(n int, t0 int64, late map[int]int64) []Rec {
	var out []Rec
	for i := range n {
		ts := t0 + int64(i)*1000
		if d, ok := late[i]; ok {
			ts -= d
		}
		k := fmt.Sprintf("u%d", i%5)
		out = append(out, Rec{RawKey: []byte(k), Key: k, Value: map[string]any{"amount": json.Number(fmt.Sprint(1 + i%7)), "one": json.Number("1")}, Timestamp: ts})
	}
	return out
}

// temperatures is n readings of key "temp", String values of integers,
// a second apart.
func temperatures(n int, t0 int64) []Rec {
	var out []Rec
	for i := range n {
		v := fmt.Sprint(15 + (i*7919)%13)
		out = append(out, Rec{RawKey: []byte("temp"), Key: "temp", Value: v, Timestamp: t0 + int64(i)*1000})
	}
	return out
}

// manyKeys is n inputs of 300 keys, 50 ms apart (each key four times a
// minute): more windows than GuessWindow scores.
func manyKeys(n int, t0 int64) []Rec {
	var out []Rec
	for i := range n {
		k := fmt.Sprintf("k%03d", i%300)
		out = append(out, Rec{RawKey: []byte(k), Key: k, Value: json.Number(fmt.Sprint(1 + i%7)), Timestamp: t0 + int64(i)*50})
	}
	return out
}

// ones is the inputs with the value 1 each.
func ones(ins []Rec) []Rec {
	for i := range ins {
		ins[i].Value = json.Number("1")
	}
	return ins
}

// TestGuessWindow: a window's size, advance and reducer from its inputs
// and its store's changelog: tumbling, hopping, with inputs Streams
// skipped as late (explained by some grace, never inferred), and where the
// evidence cannot tell (too few windows; two reducers alike).
func TestGuessWindow(t *testing.T) {
	const t0 = 1_700_000_000_000 // a minute boundary
	for _, tc := range []struct {
		name   string
		ins    []Rec
		w      spec.Window
		reduce string
		want   string // size/advance/reduce, or "declines: <evidence fragment>"
	}{
		{"tumbling count", clicks(400, t0, nil), spec.Window{Size: 60000, Advance: 60000}, "count", "60000/60000/count"},
		{"tumbling count, late inputs skipped under a 5 s grace", clicks(400, t0, map[int]int64{100: 70000, 200: 64000, 300: 90000}), spec.Window{Size: 60000, Advance: 60000, Grace: 5000}, "count", "60000/60000/count"},
		{"hopping sum", clicks(400, t0, nil), spec.Window{Size: 60000, Advance: 30000}, "sum(amount)", "60000/30000/sum(amount)"},
		{"five-minute windows by the minute", clicks(1200, t0, nil), spec.Window{Size: 300000, Advance: 60000}, "count", "300000/60000/count"},
		// Kafka's TemperatureDemo: selectKey "temp", 5 s windows, the
		// highest of String temperatures, reduce((v1, v2) ->
		// Integer.parseInt(v1) > Integer.parseInt(v2) ? v1 : v2)
		{"TemperatureDemo", temperatures(400, t0), spec.Window{Size: 5000, Advance: 5000, Grace: 86_400_000}, "expr: int(agg) > int(value) ? agg : value", "5000/5000/expr: int(value) > int(agg) ? value : agg"},
		{"more windows than are scored", manyKeys(24000, t0), spec.Window{Size: 60000, Advance: 60000}, "count", "60000/60000/count"},
		{"too few windows", clicks(8, t0, nil), spec.Window{Size: 60000, Advance: 60000}, "count", "declines: too few"},
		{"count and a sum of ones alike", ones(clicks(400, t0, nil)), spec.Window{Size: 60000, Advance: 60000}, "sum", "declines: explain the same windows"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, _ := simulateWindows(t, tc.ins, tc.w, tc.reduce)
			if ok, why := WindowedChangelog(cl); !ok && !strings.HasPrefix(tc.want, "declines: too few") {
				t.Fatalf("changelog not taken for a window store's: %q", why)
			}
			g := GuessWindow(topicOf("src", tc.ins...), cl)
			got := fmt.Sprintf("%d/%d/%s", g.Size, g.Advance, g.Reduce)
			if g.Size == 0 {
				got = "declines: " + g.Evidence
			}
			if strings.HasPrefix(tc.want, "declines: ") {
				if g.Size != 0 || !strings.Contains(got, strings.TrimPrefix(tc.want, "declines: ")) {
					t.Fatalf("got %s (%s), want it to decline saying %q", got, g.Evidence, strings.TrimPrefix(tc.want, "declines: "))
				}
				return
			}
			if got != tc.want {
				t.Fatalf("got %s (%s), want %s", got, g.Evidence, tc.want)
			}
		})
	}
}

// TestWindowedChangelog: a plain store's keys (text) are not a window
// store's.
func TestWindowedChangelog(t *testing.T) {
	var recs []Rec
	for i := range 20 {
		recs = append(recs, Rec{RawKey: []byte(fmt.Sprintf("user-%012d", i)), Timestamp: 1_700_000_000_000})
	}
	if ok, _ := WindowedChangelog(topicOf("plain", recs...)); ok {
		t.Fatal("text keys taken for window keys")
	}
}

// TestGuessWindowedOutputFilter: toStream().filter((wk, n) -> n > 3): the
// states with an output record of their window and value passed the
// filter; the rule that tells them from the rest is the filter. An output
// record that is no state is no filter's.
func TestGuessWindowedOutputFilter(t *testing.T) {
	const t0 = 1_700_000_000_000
	cl, states := simulateWindows(t, clicks(400, t0, nil), spec.Window{Size: 60000, Advance: 60000}, "count")
	var out []Rec
	for _, s := range states {
		if n, _ := s.Value.(json.Number).Int64(); n > 3 {
			out = append(out, Rec{RawKey: s.RawKey[:len(s.RawKey)-4], RawValue: s.RawValue, Timestamp: s.Timestamp})
		}
	}
	if g := GuessWindowedOutputFilter(cl, topicOf("out", out...)); g.Value != "value >= 4" {
		t.Fatalf("got %q (%s), want value >= 4", g.Value, g.Evidence)
	}
	// TemperatureDemo's filter((k, v) -> Integer.parseInt(v) > 20) on String values
	cl, states = simulateWindows(t, temperatures(400, t0), spec.Window{Size: 5000, Advance: 5000}, "expr: int(agg) > int(value) ? agg : value")
	var hot []Rec
	for _, s := range states {
		if n, _ := strconv.Atoi(s.Value.(string)); n > 20 {
			hot = append(hot, Rec{RawKey: s.RawKey[:len(s.RawKey)-4], RawValue: s.RawValue, Timestamp: s.Timestamp})
		}
	}
	if g := GuessWindowedOutputFilter(cl, topicOf("out", hot...)); g.Value != "int(value) >= 21" {
		t.Fatalf("got %q (%s), want int(value) >= 21", g.Value, g.Evidence)
	}
	extra := append(slices.Clone(out), Rec{RawKey: out[0].RawKey, RawValue: []byte("99"), Timestamp: t0})
	if g := GuessWindowedOutputFilter(cl, topicOf("out", extra...)); g.Value != "" || !strings.Contains(g.Evidence, "no state") {
		t.Fatalf("an output record no state has: got %q (%s), want none", g.Value, g.Evidence)
	}
}

// FuzzSplitWindowKey: any bytes split without a panic, and a key made of
// a key, a start and a sequence number splits back into them.
func FuzzSplitWindowKey(f *testing.F) {
	f.Add([]byte("temp"), int64(1_700_000_000_000), uint32(0))
	f.Add([]byte{}, int64(0), uint32(7))
	f.Fuzz(func(t *testing.T, key []byte, start int64, seq uint32) {
		SplitWindowKey(key) // arbitrary bytes
		b := append(append([]byte(nil), key...), make([]byte, 12)...)
		binary.BigEndian.PutUint64(b[len(key):], uint64(start))
		binary.BigEndian.PutUint32(b[len(key)+8:], seq)
		inner, s, sq, ok := SplitWindowKey(b)
		if ok != (start >= 0) || string(inner) != string(key) || s != start || sq != seq {
			t.Fatalf("split %x: %x %d %d %v, want %x %d %d", b, inner, s, sq, ok, key, start, seq)
		}
	})
}

// TestGuessTableOutput (issue AD): a windowed count's KTable filter, the
// stream filter after toStream() and the map by the window's toString()
// (AnomalyDetectionLambdaExample's output), and a plain table's KTable
// filter, told from the states that reached the output; an output record
// that is no state, or tombstones the stream filter let through, leave
// what they contradict untold.
func TestGuessTableOutput(t *testing.T) {
	const t0 = 1_700_000_000_000
	cl, states := simulateWindows(t, clicks(400, t0, nil), spec.Window{Size: 60000, Advance: 60000}, "count")
	var text []Rec
	for _, s := range states {
		if n, _ := s.Value.(json.Number).Int64(); n >= 3 {
			inner, start, _, _ := SplitWindowKey(s.RawKey)
			key := fmt.Sprintf("[%s@%d/%d]", inner, start, start+60000)
			text = append(text, Rec{RawKey: []byte(key), RawValue: s.RawValue, Timestamp: s.Timestamp})
		}
	}
	shape := OutputShape{TableFilter: true, StreamFilter: true, Rekey: "map", Window: 60000}
	g := GuessTableOutput(cl, topicOf("out", text...), shape)
	if g.TableFilter.Value != "value >= 3" || g.StreamFilter.Value != "value != nil" || g.Rekey.Value != "[windowString(key), value]" {
		t.Fatalf("got %+v", g)
	}
	// the same states under the window's key alone (w.key())
	var inner []Rec
	for _, r := range text {
		k := strings.TrimPrefix(string(r.RawKey), "[")
		k = k[:strings.LastIndex(k, "@")]
		inner = append(inner, Rec{RawKey: []byte(k), RawValue: r.RawValue, Timestamp: r.Timestamp})
	}
	if g := GuessTableOutput(cl, topicOf("out", inner...), shape); g.Rekey.Value != "[key.key, value]" || g.TableFilter.Value != "value >= 3" {
		t.Fatalf("the window's key: got %+v", g)
	}
	// a record no state holds: nothing told
	extra := append(slices.Clone(text), Rec{RawKey: text[0].RawKey, RawValue: []byte("99"), Timestamp: t0})
	if g := GuessTableOutput(cl, topicOf("out", extra...), shape); g.TableFilter.Value != "" || g.Rekey.Value != "" || !strings.Contains(g.Rekey.Evidence, "no state") {
		t.Fatalf("an output record no state has: got %+v", g)
	}
	// tombstones on the output: the filter after toStream() let nulls through
	nulls := append(slices.Clone(text), Rec{RawKey: text[0].RawKey, Timestamp: t0})
	if g := GuessTableOutput(cl, topicOf("out", nulls...), shape); g.StreamFilter.Value != "" || g.TableFilter.Value != "value >= 3" {
		t.Fatalf("tombstones on the output: got %+v", g)
	}
	// a plain table's count, filtered at 2 before toStream() (UserRegionLambdaExample)
	var plain, passed []Rec
	for i := range 40 {
		v := make([]byte, 8)
		n := int64(i % 6) // an emptied region counts 0
		binary.BigEndian.PutUint64(v, uint64(n))
		r := Rec{Partition: 0, Offset: int64(i), RawKey: []byte(fmt.Sprintf("region-%d", i%7)), RawValue: v, Value: json.Number(strconv.FormatInt(n, 10)), Timestamp: t0 + int64(i)}
		plain = append(plain, r)
		if n >= 2 {
			passed = append(passed, Rec{RawKey: r.RawKey, RawValue: v, Timestamp: r.Timestamp})
		}
	}
	if g := GuessTableOutput(topicOf("cl", plain...), topicOf("out", passed...), OutputShape{TableFilter: true, StreamFilter: true}); g.TableFilter.Value != "value >= 2" || g.StreamFilter.Value != "value != nil" || g.Rekey.Value != "" {
		t.Fatalf("a plain table: got %+v", g)
	}
}

// TestWindowSizeFromOutput (issue AD): 40 clicks a second apart fall in
// one window of a minute: one start, too few for GuessWindow to tell the
// size; an output keyed by Windowed#toString says it, and the advance
// and the reducer follow (GuessWindowSized). Keys of another shape, two
// sizes, or a window the store lacks say nothing.
func TestWindowSizeFromOutput(t *testing.T) {
	const t0 = 1_700_000_040_000 - 1_700_000_040_000%60000
	ins := clicks(40, t0, nil)
	cl, states := simulateWindows(t, ins, spec.Window{Size: 60000, Advance: 60000}, "count")
	if g := GuessWindow(topicOf("in", ins...), cl); g.Size != 0 {
		t.Fatalf("one start: GuessWindow told %+v", g)
	}
	text := func(size int64, drop int) *Topic {
		var out []Rec
		for _, s := range states[drop:] {
			inner, start, _, _ := SplitWindowKey(s.RawKey)
			out = append(out, Rec{RawKey: []byte(fmt.Sprintf("[%s@%d/%d]", inner, start, start+size)), RawValue: s.RawValue})
		}
		return topicOf("out", out...)
	}
	size, why, ok := WindowSizeFromOutput(cl, text(60000, 0))
	if !ok || size != 60000 || !strings.Contains(why, "1m") {
		t.Fatalf("got %d %q %v, want 60000", size, why, ok)
	}
	if g := GuessWindowSized(topicOf("in", ins...), cl, size); g.Size != 60000 || g.Advance != 60000 || g.Reduce != "count" {
		t.Fatalf("GuessWindowSized: %+v", g)
	}
	mixed := text(60000, 0)
	mixed.Parts[0] = append(mixed.Parts[0], text(30000, 0).Parts[0][0])
	wrong := topicOf("out", Rec{RawKey: []byte("u1"), RawValue: []byte("x")})
	elsewhere := text(60000, 0)
	elsewhere.Parts[0][0].RawKey = []byte(fmt.Sprintf("[nobody@%d/%d]", t0, t0+60000))
	for name, out := range map[string]*Topic{"two sizes": mixed, "not a window's text": wrong, "a window the store lacks": elsewhere} {
		if size, _, ok := WindowSizeFromOutput(cl, out); ok {
			t.Errorf("%s: size %d told", name, size)
		}
	}
}
