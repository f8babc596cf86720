package infer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/kaudit/kaudit/audit/spec"
)

// TestGuessCogroup: clicks (keyed by user) and views (filtered, re-keyed
// by user) cogrouped into {clicks, views, ms}: each field's aggregator per
// stream is found from the final states: clicks +1 on a click, views +1
// and ms + value.ms on a view, the rest left as they are. A store whose
// states no choice explains, or where two choices explain alike (every
// view of 1 ms counts as its ms), leaves them unsettled.
func TestGuessCogroup(t *testing.T) {
	users := []string{"u1", "u2", "u3", "u4", "u5", "u6"}
	var clicks, views []Rec
	type st struct{ clicks, views, ms float64 }
	want := map[string]*st{}
	for _, u := range users {
		want[u] = &st{}
	}
	for i := range 30 {
		u := users[i%len(users)]
		clicks = append(clicks, Rec{Key: u, Value: map[string]any{"page": fmt.Sprintf("/p%d", i)}, Timestamp: int64(i)})
		want[u].clicks++
	}
	ms := func(i int) float64 { return float64(i%4) * 10 } // 0 ms views are filtered
	for i := range 40 {
		u := users[(i*5)%len(users)]
		views = append(views, Rec{Key: fmt.Sprintf("v%d", i), Value: map[string]any{"user": u, "ms": ms(i)}, Timestamp: int64(i)})
		if ms(i) > 0 {
			want[u].views++
			want[u].ms += ms(i)
		}
	}
	store := func(f func(*st) map[string]any) *Topic {
		var rs []Rec
		for _, u := range users {
			rs = append(rs, Rec{Key: u, Value: f(want[u])})
		}
		return topicOf("store", rs...)
	}
	filter, err := spec.NewStep(spec.StepFilter, "value.ms > 0", "")
	if err != nil {
		t.Fatal(err)
	}
	key, err := spec.NewStep(spec.StepSelectKey, "value.user", "")
	if err != nil {
		t.Fatal(err)
	}
	inputs := []CogroupInput{{Source: topicOf("clicks", clicks...)}, {Source: topicOf("views", views...), Steps: []*spec.Step{filter, key}}}
	good := store(func(s *st) map[string]any { return map[string]any{"clicks": s.clicks, "views": s.views, "ms": s.ms} })
	g := GuessCogroup(inputs, good)
	wantAggs := []string{`{"clicks": agg.clicks + 1, "ms": agg.ms, "views": agg.views}`, `{"clicks": agg.clicks, "ms": agg.ms + value.ms, "views": agg.views + 1}`}
	if !slices.Equal(g.Aggregators, wantAggs) || g.Init != `{"clicks": 0, "ms": 0, "views": 0}` {
		t.Errorf("aggregators %q init %q (%s), want %q", g.Aggregators, g.Init, g.Evidence, wantAggs)
	}
	bad := store(func(s *st) map[string]any {
		return map[string]any{"clicks": s.clicks * 3, "views": s.views, "ms": s.ms}
	})
	if g := GuessCogroup(inputs, bad); g.Aggregators != nil {
		t.Errorf("a field no choice explains: %q, want none", g.Aggregators)
	}
	for i := range views {
		if views[i].Value.(map[string]any)["ms"].(float64) > 0 {
			views[i].Value.(map[string]any)["ms"] = float64(1)
		}
	}
	alike := []CogroupInput{inputs[0], {Source: topicOf("views", views...), Steps: []*spec.Step{filter, key}}}
	same := store(func(s *st) map[string]any { return map[string]any{"clicks": s.clicks, "views": s.views, "ms": s.views} })
	if g := GuessCogroup(alike, same); g.Aggregators != nil {
		t.Errorf("views of 1 ms: +1 and + value.ms alike: %q, want none", g.Aggregators)
	}
}
