package spec

import (
	"slices"
	"strings"
	"testing"
)

func TestWindowForms(t *testing.T) {
	const table = "app_id: a\ntables:\n  - name: x\n    source: y\n    store: s\n    reduce: count\n"
	for _, tt := range []struct {
		in                   string
		size, advance, grace int64
		unknown              bool
	}{
		{"    window: {size: 1m}\n", 60_000, 60_000, 0, false},
		{"    window: {size: 1m, advance: 30s, grace: 10s}\n", 60_000, 30_000, 10_000, false},
		{"    window: {size: 60000, grace: 500}\n", 60_000, 60_000, 500, false},
		{"    window: {size: 1h30m, advance: 1h30m}\n", 5_400_000, 5_400_000, 0, false},
		// an inferred spec's: the grace is not in the evidence
		{"    window: {size: 1m, grace: unknown}\n", 60_000, 60_000, 0, true},
	} {
		s, err := ParseSpec("k.yaml", []byte(table+tt.in))
		if err != nil {
			t.Fatalf("%q: %v", tt.in, err)
		}
		w := s.Tables[0].Window
		if w.Size != tt.size || w.Advance != tt.advance || w.Grace != tt.grace || w.GraceUnknown != tt.unknown {
			t.Errorf("%q: got %+v", tt.in, *w)
		}
	}
}

func TestWindowErrors(t *testing.T) {
	const table = "app_id: a\ntables:\n  - name: x\n    source: y\n    store: s\n    reduce: count\n"
	for _, tt := range []struct{ in, want string }{
		{"    window: {advance: 1m}\n", `k.yaml:7: tables[0].window.size: required`},
		{"    window: {size: 1m, advance: 2m}\n", `k.yaml:7: tables[0].window.advance: want an advance in (0, size=60000 ms]`},
		{"    window: {size: 1m, grace: -1s}\n", `k.yaml:7: tables[0].window.grace: want a grace of 0 or more`},
		{"    window: {size: 1m, hop: 1s}\n", `k.yaml:7: tables[0].window.hop: unknown key "hop"`},
		{"    window: {size: 1 minute}\n", `k.yaml:7: tables[0].window.size: bad duration "1 minute"`},
		{"    window: {size: 1500us}\n", `k.yaml:7: tables[0].window.size: bad duration "1500us": Streams counts whole milliseconds`},
		{"    window: 5\n", `k.yaml:7: tables[0].window: want {size: DURATION`},
		{"    window: {size: 0}\n", `k.yaml:7: tables[0].window.size: want a positive size`},
		{"    suppress: until-window-closes\n", `k.yaml:7: tables[0].suppress: suppress: until-window-closes needs a window`},
		{"    window: {size: 1m}\n    suppress: until-window-closes\n", `k.yaml:8: tables[0].suppress: suppress needs output`},
		{"    window: {size: 1m, grace: unknown}\n    output: o\n    suppress: until-window-closes\n", `k.yaml:7: tables[0].window.grace: suppress: until-window-closes needs the window's grace`},
		{"    window: {size: 1m, grace: soon}\n", `k.yaml:7: tables[0].window.grace: bad duration "soon"`},
		{"    window: {size: 1m}\n    output: o\n    suppress: later\n", `k.yaml:9: tables[0].suppress: unknown suppress "later"`},
		{"    window: {size: 1m}\njoins:\n  - {output: o, left: x, right: x}\n", `k.yaml:9: joins[0]: table "x" is windowed`},
	} {
		_, err := ParseSpec("k.yaml", []byte(table+tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want prefix %s", tt.in, err, tt.want)
		}
	}
}

// TestWindowStarts pins TimeWindows.windowsFor (Kafka Streams 3.6.2):
// start = max(0, ts-size+advance) / advance * advance, then every advance
// while start <= ts.
func TestWindowStarts(t *testing.T) {
	for _, tt := range []struct {
		w    Window
		ts   int64
		want []int64
	}{
		{Window{Size: 100, Advance: 100}, 0, []int64{0}},
		{Window{Size: 100, Advance: 100}, 99, []int64{0}},
		{Window{Size: 100, Advance: 100}, 100, []int64{100}},
		{Window{Size: 100, Advance: 50}, 120, []int64{50, 100}},
		{Window{Size: 100, Advance: 50}, 10, []int64{0}},
		{Window{Size: 100, Advance: 30}, 95, []int64{0, 30, 60, 90}},
		{Window{Size: 100, Advance: 30}, 100, []int64{30, 60, 90}},
	} {
		if got := tt.w.Starts(tt.ts); !slices.Equal(got, tt.want) {
			t.Errorf("%+v at %d: %v, want %v", tt.w, tt.ts, got, tt.want)
		}
	}
}
