package main

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestStepsGenDeterministic(t *testing.T) {
	strip := func(recs []*inputRec) []*inputRec { // the words' timestamps follow the clock
		for _, r := range recs {
			r.Timestamp = 0
		}
		return recs
	}
	if !reflect.DeepEqual(genOrdersApp(1, 150), genOrdersApp(1, 150)) ||
		!reflect.DeepEqual(strip(genWordsApp(1, 120)), strip(genWordsApp(1, 120))) ||
		!reflect.DeepEqual(genRoutesApp(1, 160), genRoutesApp(1, 160)) {
		t.Fatal("two inputs from one spec differ")
	}
	tags := map[string]int{}
	for _, r := range genOrdersApp(1, 150) {
		tags[r.Tag]++
		if (r.Tag == tagTest || r.Tag == tagTestUpdate) != (r.Value["status"] == "TEST") {
			t.Fatalf("%s: tag %q, status %v", r.Key, r.Tag, r.Value["status"])
		}
	}
	if tags[tagTest] != 15 || tags[tagTestUpdate] != 10 {
		t.Fatalf("tags %v, want 15 TEST orders and 10 TEST updates", tags)
	}
	clicks, late := genWindowsApp(1, 360)
	if len(clicks) != 360 || len(late) != clickLateCount {
		t.Fatalf("%d clicks, %d late", len(clicks), len(late))
	}
	for _, l := range late {
		if l.Timestamp >= clicks[0].Timestamp-clicks[0].Timestamp%clickWindow+clickWindow {
			t.Fatalf("late click %d is not in the first window", l.Timestamp)
		}
	}
}

func TestStepsFolds(t *testing.T) {
	s := func(v string) *string { return &v }
	orders := []*inputRec{
		{App: "orders", Topic: "so-orders", OrderID: s("o1"), Value: map[string]any{"customer": "c", "amount": int64(5), "status": "NEW"}},
		{App: "orders", Topic: "so-orders", OrderID: s("o1"), Value: map[string]any{"customer": "c", "amount": int64(6), "status": "TEST"}},
		{App: "orders", Topic: "so-orders", OrderID: s("o2"), Value: map[string]any{"customer": "d", "amount": int64(7), "status": "TEST"}},
		{App: "orders", Topic: "so-payments", OrderID: s("o1"), Value: map[string]any{"amount": int64(2)}},
		{App: "orders", Topic: "so-payments", OrderID: s("o2"), Value: map[string]any{"amount": int64(3)}},
		{App: "words", Topic: "sw-lines", Key: "l1", Value: map[string]any{"line": "Kafka stream kafka"}},
	}
	want := map[string]map[string]any{"o1": {"orderId": "o1", "customer": "c", "amount": int64(5), "status": "NEW", "paid": int64(200), "carrier": nil}}
	if got := ordersAppOutput(orders, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("orders: %v, want %v (TEST versions filtered, payments in cents)", got, want)
	}
	if got := wordsAppOutput(orders, nil); !reflect.DeepEqual(got, map[string]int64{"kafka": 2, "stream": 1}) {
		t.Errorf("words: %v", got)
	}
	if got := wordsAppOutput(orders, func(r *inputRec) bool { return r.Key == "l1" }); len(got) != 0 {
		t.Errorf("words with the line swallowed: %v", got)
	}
	routes := []*inputRec{
		{App: "routes", Key: "r1", Value: map[string]any{"customer": "c1", "amount": int64(150)}},
		{App: "routes", Key: "r2", Value: map[string]any{"customer": "c1", "amount": int64(5)}},
		{App: "routes", Key: "r2", Value: map[string]any{"customer": "c1", "amount": int64(50)}}, // leaves the small branch
		{App: "routes", Key: "r3", Value: map[string]any{"customer": "c2", "amount": int64(10)}},
	}
	big, small, rest := routesAppFolds(routes, nil)
	if big["c1"] != 1 || len(big) != 1 || small["r2"]["amount"] != int64(5) || len(small) != 1 || rest["c1"] != 50 || rest["c2"] != 10 {
		t.Errorf("routes: big %v, small %v, rest %v", big, small, rest)
	}
}

func TestDecodeWindowed(t *testing.T) {
	b := append([]byte("u-01"), make([]byte, 8)...)
	binary.BigEndian.PutUint64(b[4:], 1_800_000_060_000)
	wk, err := decodeWindowed(b)
	if err != nil || wk != (windowKey{"u-01", 1_800_000_060_000}) {
		t.Fatalf("%v, %v", wk, err)
	}
	if _, err := decodeWindowed([]byte("short")); err == nil {
		t.Fatal("a 5-byte windowed key decoded")
	}
	if _, err := decodeLong([]byte{1, 2}); err == nil {
		t.Fatal("a 2-byte Long decoded")
	}
}

func TestStepsExpectations(t *testing.T) {
	key := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	line := &inputRec{Topic: "sw-lines", Partition: 1, Offset: 3, Value: map[string]any{"line": "Count filter count"}}
	tests := []struct {
		name string
		err  error
		want string // "" or a part of the error
	}{
		{"every word named", expectWordCopies([]finding{
			{Topic: "sw-lines", Partition: 1, Offset: 3, Key: key("count")},
			{Topic: "sw-lines", Partition: 1, Offset: 3, Key: key("filter")},
			{Topic: "sw-lines", Partition: 1, Offset: 3, Key: key("count")},
		}, []*inputRec{line}), ""},
		{"a word missing", expectWordCopies([]finding{{Topic: "sw-lines", Partition: 1, Offset: 3, Key: key("count")}}, []*inputRec{line}), "1 of the 2"},
		{"another line named", expectWordCopies([]finding{
			{Topic: "sw-lines", Partition: 1, Offset: 3, Key: key("count")},
			{Topic: "sw-lines", Partition: 1, Offset: 3, Key: key("filter")},
			{Topic: "sw-lines", Partition: 0, Offset: 3, Key: key("count")},
		}, []*inputRec{line}), "1 others"},
		{"filtered counted", expectFiltered(kauditReport{Findings: []finding{
			{Severity: "info", Cause: "filtered", Topic: "so-orders", Count: 2},
			{Severity: "info", Cause: "filtered", Topic: "so-orders"},
		}}, []string{"so-orders"}, threeRecs()), ""},
		{"filtered short", expectFiltered(kauditReport{Findings: []finding{{Severity: "info", Cause: "filtered", Topic: "so-orders"}}},
			[]string{"so-orders"}, threeRecs()), "count 1 records, want the 3"},
		{"filtered as a loss", expectFiltered(kauditReport{Findings: []finding{{Severity: "loss", Cause: "filtered", Topic: "so-orders", Count: 3}}},
			[]string{"so-orders"}, threeRecs()), "severity loss"},
		{"unjudged naming the node", expectUnjudged(kauditReport{Summary: kauditSummary{Verdict: "incomplete", Missing: []string{"table orders: filter KSTREAM-FILTER-0000000001 (TODO)"}}}, "KSTREAM-FILTER-0000000001"), ""},
		{"unjudged without the node", expectUnjudged(kauditReport{Summary: kauditSummary{Verdict: "incomplete", Missing: []string{"table orders: filter (TODO)"}}}, "KSTREAM-FILTER-0000000001"), "does not name node"},
		{"a loss where unjudged", expectUnjudged(kauditReport{Summary: kauditSummary{Verdict: "loss"}, Findings: []finding{{Severity: "loss", Cause: "dropped"}}}, "X"), "verdict"},
		{"purge in range", expectPurgedRange([]finding{{Topic: "t", Partition: 1, Offset: 75}}, fault{Topic: "t", Partition: 1, From: 73, To: 78}), ""},
		{"purge by key", expectPurgedRange([]finding{{Topic: "sr-web", Key: key("c-07")}}, fault{Topic: "t", Partition: 1, From: 73, To: 78, Keys: []string{"c-07"}}), ""},
		{"purge elsewhere", expectPurgedRange([]finding{{Topic: "t", Partition: 0, Offset: 75}}, fault{Topic: "t", Partition: 1, From: 73, To: 78}), "outside the fault"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.want == "" && tt.err != nil:
				t.Fatalf("unexpected error: %v", tt.err)
			case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", tt.err, tt.want)
			}
		})
	}
}

func TestInterleave(t *testing.T) {
	a := []*inputRec{{Key: "a1"}, {Key: "a2"}, {Key: "a3"}}
	b := []*inputRec{{Key: "b1"}}
	var got []string
	for _, r := range interleave(a, b) {
		got = append(got, r.Key)
	}
	if strings.Join(got, ",") != "a1,b1,a2,a3" {
		t.Fatalf("interleave: %v", got)
	}
}

func threeRecs() []*inputRec {
	return []*inputRec{{Topic: "so-orders", Offset: 1}, {Topic: "so-orders", Offset: 5}, {Topic: "so-orders", Partition: 1}}
}
