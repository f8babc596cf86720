package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestGenWaveDeterministic(t *testing.T) {
	a, b := genWave(wave1), genWave(wave1)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two waves from one spec differ")
	}
	counts := map[string]int{}
	nullKeys := 0
	for _, r := range a {
		counts[r.Topic]++
		if r.OrderID == nil {
			nullKeys++
		}
	}
	if counts[topicOrders] != 400 || nullKeys != 3 || counts[topicPayments] == 0 || counts[topicShipments] == 0 {
		t.Fatalf("wave 1 holds %v and %d null keys", counts, nullKeys)
	}
	if reflect.DeepEqual(a, genWave(waveSpec{wave: 2, orders: 300, updates: true, payments: true, shipments: true, nullKeys: 3})) {
		t.Fatal("waves 1 and 2 are equal")
	}
}

func TestExpectedOutput(t *testing.T) {
	s := func(v string) *string { return &v }
	recs := []*inputRec{
		{Topic: topicOrders, Partition: 0, Offset: 0, OrderID: s("o1"), Value: map[string]any{"customer": "c", "amount": int64(5), "status": "NEW"}},
		{Topic: topicOrders, Partition: 0, Offset: 1, OrderID: s("o1"), Value: map[string]any{"customer": "c", "amount": int64(6), "status": "CONFIRMED"}},
		{Topic: topicOrders, Partition: 1, Offset: 0, OrderID: s("o2"), Value: map[string]any{"customer": "d", "amount": int64(7), "status": "NEW"}},
		{Topic: topicPayments, Partition: 0, Offset: 0, OrderID: s("o1"), Value: map[string]any{"amount": int64(2)}},
		{Topic: topicPayments, Partition: 1, Offset: 0, OrderID: s("o1"), Value: map[string]any{"amount": int64(3)}},
		{Topic: topicPayments, Partition: 1, Offset: 1, OrderID: nil, Value: map[string]any{"amount": int64(9)}},
		{Topic: topicPayments, Partition: 1, Offset: 2, OrderID: s("x"), Value: map[string]any{"amount": int64(9)}},
		{Topic: topicShipments, Partition: 0, Offset: 0, OrderID: s("o2"), Value: map[string]any{"carrier": "dhl"}},
	}
	tests := []struct {
		name string
		skip func(*inputRec) bool
		want map[string]map[string]any
	}{
		{"all applied", nil, map[string]map[string]any{
			"o1": {"orderId": "o1", "customer": "c", "amount": int64(6), "status": "CONFIRMED", "paid": int64(5), "carrier": nil},
			"o2": {"orderId": "o2", "customer": "d", "amount": int64(7), "status": "NEW", "paid": nil, "carrier": "dhl"},
		}},
		{"latest order dropped", func(r *inputRec) bool { return r.Topic == topicOrders && r.Offset == 1 }, map[string]map[string]any{
			"o1": {"orderId": "o1", "customer": "c", "amount": int64(5), "status": "NEW", "paid": int64(5), "carrier": nil},
			"o2": {"orderId": "o2", "customer": "d", "amount": int64(7), "status": "NEW", "paid": nil, "carrier": "dhl"},
		}},
		{"left side gone", func(r *inputRec) bool { return r.Topic == topicOrders && *r.OrderID == "o2" }, map[string]map[string]any{
			"o1": {"orderId": "o1", "customer": "c", "amount": int64(6), "status": "CONFIRMED", "paid": int64(5), "carrier": nil},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := expectedOutput(recs, tt.skip); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestKeyString(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{"JSON text of a string", `"\"o-w1-0021\""`, "o-w1-0021"},
		{"plain string", `"o-1"`, "o-1"},
		{"number text", `"42"`, "42"},
		{"empty", `""`, ""},
		{"null", `null`, ""},
		{"base64", `"b64:AAE="`, "b64:AAE="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (finding{Key: json.RawMessage(tt.raw)}).keyString(); got != tt.want {
				t.Fatalf("keyString(%s) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
}

func TestExpectRange(t *testing.T) {
	f := func(topic string, p int32, off, n int64) finding {
		return finding{Topic: topic, Partition: p, Offset: off, Count: n}
	}
	tests := []struct {
		name    string
		fs      []finding
		wantErr string
	}{
		{"one finding with a count", []finding{f("t", 0, 10, 5)}, ""},
		{"one finding per offset", []finding{f("t", 0, 10, 1), f("t", 0, 11, 0), f("t", 0, 12, 1), f("t", 0, 13, 1), f("t", 0, 14, 1)}, ""},
		{"short", []finding{f("t", 0, 10, 4)}, "do not cover offset 14"},
		{"too long", []finding{f("t", 0, 9, 6)}, "outside"},
		{"wrong partition", []finding{f("t", 1, 10, 5)}, "want only t/0"},
		{"none", nil, "do not cover offset 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := expectRange("x", tt.fs, "t", 0, 10, 15)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestExpectKeysAndCauses(t *testing.T) {
	rep := kauditReport{Findings: []finding{
		{Severity: "loss", Cause: "dropped", Key: json.RawMessage(`"\"a\""`)},
		{Severity: "loss", Cause: "dropped", Key: json.RawMessage(`"\"b\""`)},
		{Severity: "info", Cause: "pending"},
	}}
	if err := expectKeys("dropped", rep.byCause("dropped"), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := expectKeys("dropped", rep.byCause("dropped"), []string{"a"}); err == nil {
		t.Fatal("extra key b not reported")
	}
	if err := expectOnlyLossCauses(rep, "dropped"); err != nil {
		t.Fatal(err)
	}
	if err := expectOnlyLossCauses(rep, "unapplied"); err == nil {
		t.Fatal("dropped findings passed as unapplied")
	}
}

func TestStoreOf(t *testing.T) {
	describe, err := os.ReadFile(filepath.Join("testdata", "describe.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		topic, store string
		sub          int
	}{
		{topicOrders, "KSTREAM-REDUCE-STATE-STORE-0000000003", 1},
		{topicPayments, "KSTREAM-REDUCE-STATE-STORE-0000000011", 1},
		{topicShipments, "KSTREAM-REDUCE-STATE-STORE-0000000019", 1},
	}
	for _, tt := range tests {
		t.Run(tt.topic, func(t *testing.T) {
			store, sub, err := storeOf(string(describe), tt.topic)
			if err != nil || store != tt.store || sub != tt.sub {
				t.Fatalf("storeOf(%s) = %s, %d, %v; want %s, %d", tt.topic, store, sub, err, tt.store, tt.sub)
			}
		})
	}
	if _, _, err := storeOf(string(describe), "nope"); err == nil {
		t.Fatal("unknown topic found")
	}
}

func TestForgeCheckpoint(t *testing.T) {
	tests := []struct {
		name, before, want string
	}{
		{"raises one entry, keeps the others", "0\n2\nc-changelog 0 10\nd-changelog 0 7\n", "0\n2\nc-changelog 0 50\nd-changelog 0 7\n"},
		{"never lowers", "0\n1\nc-changelog 0 90\n", "0\n1\nc-changelog 0 90\n"},
		{"creates", "", "0\n1\nc-changelog 0 50\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), ".checkpoint")
			if tt.before != "" {
				if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := forgeCheckpoint(path, "c-changelog", 0, 50); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSwallowChoices(t *testing.T) {
	chosen := pickPayments(genWave(wave1))
	if len(chosen) != 6 {
		t.Fatalf("pickPayments chose %d payments, want 6", len(chosen))
	}
	versions := spreadOrders(3, spreadN, spreadVersions)
	for v := range versions {
		if len(versions[v]) != spreadN {
			t.Fatalf("version %d holds %d orders", v, len(versions[v]))
		}
	}
	if !reflect.DeepEqual(versions, spreadOrders(3, spreadN, spreadVersions)) {
		t.Fatal("spreadOrders is not deterministic")
	}
}

func TestReadCheckpoint(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, text string
		want       map[string]int64
		err        bool
	}{
		{"two entries", "0\n2\nkaudit-drill-S-changelog 3 56\nkaudit-drill-T-changelog 3 -4\n",
			map[string]int64{"kaudit-drill-S-changelog 3": 56, "kaudit-drill-T-changelog 3": -4}, false},
		{"empty", "0\n0\n", map[string]int64{}, false},
		{"bad offset", "0\n1\nt 0 x\n", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := readCheckpoint(p)
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			if !tt.err && !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGaps(t *testing.T) {
	s := state{committed: tpOffsets{}, start: tpOffsets{}, internal: []string{"a-repartition", "b-changelog"}}
	s.start.set("a-repartition", 0, 10)
	s.committed.set("a-repartition", 0, 7)
	s.start.set("a-repartition", 1, 5)
	s.committed.set("a-repartition", 1, 5)
	s.start.set("b-changelog", 0, 9)
	s.committed.set("b-changelog", 0, 1)
	got := gaps(s)
	if want := []gap{{"a-repartition", 0, 7, 10}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("gaps %v, want %v", got, want)
	}
}

func TestExpectRecordsLatest(t *testing.T) {
	s := func(v string) *string { return &v }
	o1 := &inputRec{Topic: topicOrders, Partition: 0, Offset: 1, OrderID: s("o1")}
	o1b := &inputRec{Topic: topicOrders, Partition: 0, Offset: 2, OrderID: s("o1")}
	p1 := &inputRec{Topic: topicPayments, Partition: 1, Offset: 4, OrderID: s("o1")}
	p2 := &inputRec{Topic: topicPayments, Partition: 1, Offset: 5, OrderID: s("o1")}
	all := []*inputRec{o1, p1, o1b, p2}
	lost := []*inputRec{o1, o1b, p1, p2}
	f := func(r *inputRec) finding { return finding{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset} }
	tests := []struct {
		name string
		fs   []finding
		ok   bool
	}{
		{"every record", []finding{f(o1), f(o1b), f(p1), f(p2)}, true},
		{"overwritten order left out", []finding{f(o1b), f(p1), f(p2)}, true},
		{"a payment left out", []finding{f(o1), f(o1b), f(p2)}, false},
		{"last order version left out", []finding{f(o1), f(p1), f(p2)}, false},
		{"another record named", []finding{f(o1b), f(p1), f(p2), {Topic: topicOrders, Partition: 1, Offset: 9}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := expectRecordsLatest("x", tt.fs, lost, all); (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestJudgeDisturbed: the chaos case accepts the undisturbed report, or incomplete with the
// missing evidence named and no finding but unreadable ones beyond the undisturbed run's;
// another verdict, or a loss the undisturbed run does not have, fails.
func TestJudgeDisturbed(t *testing.T) {
	loss := `{"severity":"loss","cause":"truncated","topic":"orders","partition":0,"offset":5,"count":2}`
	base := `{"summary":{"verdict":"loss"},"findings":[` + loss + `]}`
	tests := []struct {
		name, rep string
		ok        bool
	}{
		{"same", base, true},
		{"incomplete, unreadable named", `{"summary":{"verdict":"incomplete","missing_evidence":["committed offsets"]},"findings":[{"severity":"anomaly","cause":"unreadable","topic":"orders","partition":1,"offset":-1}]}`, true},
		{"incomplete without missing evidence", `{"summary":{"verdict":"incomplete"},"findings":[]}`, false},
		{"incomplete with a new loss", `{"summary":{"verdict":"incomplete","missing_evidence":["x"]},"findings":[{"severity":"loss","cause":"dropped","topic":"orders","partition":1,"offset":3}]}`, false},
		{"clean", `{"summary":{"verdict":"clean"},"findings":[]}`, false},
		{"loss elsewhere", `{"summary":{"verdict":"loss"},"findings":[{"severity":"loss","cause":"truncated","topic":"orders","partition":0,"offset":6,"count":1}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := judgeDisturbed([]byte(base), "", 0, "", []byte(tt.rep))
			if (err == nil) != tt.ok {
				t.Errorf("judgeDisturbed = %v, want ok=%v", err, tt.ok)
			}
		})
	}
	if res, _, err := judgeDisturbed([]byte(base), filepath.Join(t.TempDir(), "none.json"), 4, "kaudit: could not run"); err != nil || !strings.HasPrefix(res, "no report") {
		t.Errorf("exit 4 without a report: %q, %v", res, err)
	}
}

// TestCompareReports: the log-dir report must equal the live one field by field, notes aside;
// noDetail leaves the detail out.
func TestCompareReports(t *testing.T) {
	live := `{"summary":{"verdict":"loss","vanished":2,"notes":["a"]},"cut":[1],"findings":[{"cause":"truncated","offset":5,"detail":"capture"}]}`
	file := filepath.Join(t.TempDir(), "c.txt")
	for _, tt := range []struct {
		name, off string
		noDetail  bool
		ok        bool
	}{
		{"equal but notes", `{"summary":{"verdict":"loss","vanished":2,"notes":["b"]},"cut":[1],"findings":[{"cause":"truncated","offset":5,"detail":"capture"}]}`, false, true},
		{"detail differs", `{"summary":{"verdict":"loss","vanished":2},"cut":[1],"findings":[{"cause":"truncated","offset":5,"detail":"replicas"}]}`, false, false},
		{"detail differs, not compared", `{"summary":{"verdict":"loss","vanished":2},"cut":[1],"findings":[{"cause":"truncated","offset":5,"detail":"replicas"}]}`, true, true},
		{"counted twice", `{"summary":{"verdict":"loss","vanished":4},"cut":[1],"findings":[{"cause":"truncated","offset":5,"detail":"capture"}]}`, false, false},
		{"cut differs", `{"summary":{"verdict":"loss","vanished":2},"cut":[2],"findings":[{"cause":"truncated","offset":5,"detail":"capture"}]}`, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := compareReports([]byte(live), []byte(tt.off), file, tt.noDetail); (err == nil) != tt.ok {
				t.Errorf("compareReports = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}
