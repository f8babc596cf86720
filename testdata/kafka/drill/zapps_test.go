package main

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestZGen(t *testing.T) {
	a, b := genZApps(), genZApps()
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two inputs of the z-apps differ")
	}
	if len(a) != zPhaseCount {
		t.Fatalf("%d phases", len(a))
	}
	// enrich: customers and orders never in one phase (what each order meets is known)
	for i, ph := range genEnrichApp() {
		topics := map[string]bool{}
		for _, r := range ph {
			topics[r.Topic] = true
		}
		if len(topics) != 1 {
			t.Errorf("enrich phase %d mixes %v", i, topics)
		}
	}
	all := flat(a)
	count := func(app, tag string) int {
		n := 0
		for _, r := range all {
			if r.App == app && r.Tag == tag {
				n++
			}
		}
		return n
	}
	if n := count("enrich", tagNullKey); n != 3 {
		t.Errorf("%d orders with a null customer, want 3", n)
	}
	if count("enrich", tagGhostDel) != 1 || count("regroup", tagGhostDel) != 1 {
		t.Error("want one delete of a key never created in enrich and in regroup")
	}
	if n := count("cogroup", tagZeroMs); n != 19 {
		t.Errorf("%d views of 0 ms, want 19", n)
	}
	for _, k := range zSwallowedViews {
		i := slices.IndexFunc(all, func(r *inputRec) bool { return r.Key == k })
		if i < 0 || all[i].Value["ms"].(int64) == 0 {
			t.Errorf("swallowed view %s: not produced, or of 0 ms (the declared filter would drop it)", k)
		}
	}
	// regroup: garden emptied in phase 4, never entered after; every kind of change happens
	w1, w2 := genRegroupApp()
	f := foldRegroup(flat(w1), nil)
	if f.counts["garden"] != 0 || f.values["garden"] != 0 {
		t.Errorf("garden: count %d value %d after wave 1, want 0 0", f.counts["garden"], f.values["garden"])
	}
	for _, r := range slices.Concat(flat(w1[4:]), w2) {
		if r.Value != nil && r.Value["category"] == "garden" {
			t.Fatalf("%s enters garden after it was emptied", r.Key)
		}
	}
	flags := map[int]int{}
	for _, c := range f.changes {
		flags[c.Flag]++
	}
	if flags[0] == 0 || flags[1] == 0 || flags[2] == 0 {
		t.Errorf("Change flags %v: want each of 0, 1, 2", flags)
	}
	for _, r := range w2 {
		if r.Wave != 2 {
			t.Fatal("wave 2 holds a wave-1 record")
		}
	}
	if len(genEnrichWave2(40)) != 40 || len(genFKJoinWave2(40)) != 40 {
		t.Error("wave 2 sizes")
	}
}

func TestZFolds(t *testing.T) {
	s := strp
	cust := func(id, name string) *inputRec {
		r := &inputRec{App: "enrich", Topic: "ze-customers", Key: id, OrderID: s(id)}
		if name != "" {
			r.Value = map[string]any{"id": id, "name": name, "tier": "gold"}
		}
		return r
	}
	order := func(id string, c *string) *inputRec {
		v := map[string]any{"id": id, "customer": nil, "amount": int64(5)}
		if c != nil {
			v["customer"] = *c
		}
		return &inputRec{App: "enrich", Topic: "ze-orders", Key: id, OrderID: c, Value: v}
	}
	ef := foldEnrich([]*inputRec{
		order("o1", s("c1")), cust("c1", "Ann"), order("o2", s("c1")), cust("c1", ""), order("o3", s("c1")), order("o4", nil),
	}, nil)
	if ef.left["o1"]["name"] != nil || ef.inner["o1"] != nil {
		t.Errorf("an order before its customer: left %v inner %v", ef.left["o1"], ef.inner["o1"])
	}
	if ef.left["o2"]["name"] != "Ann" || ef.inner["o2"]["tier"] != "gold" {
		t.Errorf("an order after its customer: left %v inner %v", ef.left["o2"], ef.inner["o2"])
	}
	if ef.left["o3"]["name"] != nil || ef.inner["o3"] != nil || len(ef.customers) != 0 {
		t.Errorf("an order after the tombstone: left %v inner %v, customers %v", ef.left["o3"], ef.inner["o3"], ef.customers)
	}
	if len(ef.nullKey) != 1 || ef.left["o4"] != nil || ef.orders != 3 {
		t.Errorf("a null customer: %d null keys, left %v, %d orders", len(ef.nullKey), ef.left["o4"], ef.orders)
	}

	prod := func(id, cat string, price int64) *inputRec {
		r := &inputRec{App: "regroup", Topic: "zr-products", Key: id, Timestamp: 7}
		if cat != "" {
			r.Value = map[string]any{"id": id, "category": cat, "price": price}
		}
		return r
	}
	rf := foldRegroup([]*inputRec{
		prod("p1", "a", 10), prod("p2", "a", 5), prod("p1", "a", 12), prod("p2", "b", 5), prod("p1", "", 0), prod("p9", "", 0),
	}, nil)
	var got []string
	for _, c := range rf.changes {
		got = append(got, c.Key+":"+string(rune('0'+c.Flag)))
	}
	// create, create, price change (one flag-2 record), move (old to a, new to b), delete; the
	// delete of p9, never created, makes nothing
	if strings.Join(got, " ") != "a:1 a:1 a:2 a:0 b:1 a:0" {
		t.Errorf("changes %v", got)
	}
	if rf.changes[2].Old["price"] != int64(10) || rf.changes[2].New["price"] != int64(12) {
		t.Errorf("the flag-2 change: %+v", rf.changes[2])
	}
	if !reflect.DeepEqual(rf.counts, map[string]int64{"a": 0, "b": 1}) || !reflect.DeepEqual(rf.values, map[string]int64{"a": 0, "b": 5}) {
		t.Errorf("counts %v values %v: an emptied category stays at 0", rf.counts, rf.values)
	}

	cg := foldCogroup([]*inputRec{
		{App: "cogroup", Topic: "zg-clicks", Key: "u1"},
		{App: "cogroup", Topic: "zg-views", Key: "v1", Value: map[string]any{"user": "u1", "ms": int64(30)}},
		{App: "cogroup", Topic: "zg-views", Key: "v2", Value: map[string]any{"user": "u2", "ms": int64(0)}},
		{App: "cogroup", Topic: "zg-views", Key: "v3", Value: map[string]any{"user": "u1", "ms": int64(5)}, Tag: tagSwallowed},
	}, func(r *inputRec) bool { return r.Tag == tagSwallowed })
	if !jsonSame(cg, map[string]any{"u1": map[string]any{"clicks": 1, "views": 1, "ms": 30}}) {
		t.Errorf("cogroup: %s", jsonText(cg))
	}

	fk := foldFKJoin([]*inputRec{
		{App: "fkjoin", Topic: "zf-orders", Key: "o1", Value: map[string]any{"id": "o1", "product": "p1", "qty": int64(2)}},
		{App: "fkjoin", Topic: "zf-orders", Key: "o2", Value: map[string]any{"id": "o2", "product": "p2", "qty": int64(1)}},
		{App: "fkjoin", Topic: "zf-products", Key: "p1", Value: map[string]any{"id": "p1", "name": "P", "price": int64(3)}},
		{App: "fkjoin", Topic: "zf-products", Key: "p2", Value: map[string]any{"id": "p2", "name": "Q", "price": int64(4)}},
		{App: "fkjoin", Topic: "zf-products", Key: "p2"},
	}, nil)
	if !jsonSame(fk, map[string]any{"o1": map[string]any{"order": "o1", "product": "p1", "name": "P", "qty": 2, "total": 6}}) {
		t.Errorf("fkjoin: %s", jsonText(fk))
	}
}

func TestDecodeChange(t *testing.T) {
	oldV, newV := []byte(`{"price":10}`), []byte(`{"price":12}`)
	two := binary.AppendVarint(nil, int64(len(newV)))
	two = append(append(append(two, newV...), oldV...), 2)
	for _, tc := range []struct {
		name     string
		in       []byte
		flag     int
		nv, ov   string
		errorHas string
	}{
		{"new only", append(append([]byte(nil), newV...), 1), 1, string(newV), "", ""},
		{"old only", append(append([]byte(nil), oldV...), 0), 0, "", string(oldV), ""},
		{"both", two, 2, string(newV), string(oldV), ""},
		// a record of the regroup app's repartition topic on the real drill (testdata/apps/regroup,
		// KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition/0@23): p-15 repriced from 17 to 65
		// in tools; "V" is the zig-zag varint 86, the new value's 43 bytes
		{"real", []byte("V{\"category\":\"tools\",\"id\":\"p-15\",\"price\":65}{\"category\":\"tools\",\"id\":\"p-15\",\"price\":17}\x02"), 2,
			`{"category":"tools","id":"p-15","price":65}`, `{"category":"tools","id":"p-15","price":17}`, ""},
		{"empty", nil, 0, "", "", "empty"},
		{"flag 3", []byte("x\x03"), 3, "", "", "not 0, 1 or 2"},
		{"length past the end", append(binary.AppendVarint(nil, 99), 'x', 2), 2, "", "", "bad length"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flag, nv, ov, err := decodeChange(tc.in)
			if tc.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
					t.Fatalf("error %v, want one with %q", err, tc.errorHas)
				}
				return
			}
			if err != nil || flag != tc.flag || string(nv) != tc.nv || string(ov) != tc.ov {
				t.Fatalf("flag %d new %q old %q err %v", flag, nv, ov, err)
			}
		})
	}
}

func TestZExpectations(t *testing.T) {
	key := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	view := &inputRec{Topic: "zg-views", Partition: 1, Offset: 5}
	fk := "missing: join KTABLE-FK-JOIN-OUTPUT-0000000018 (foreign-key join, not modelled)"
	zf := zFaults{swallowed: []*inputRec{view}, enrichGap: fault{Topic: "ze-orders", Partition: 0, From: 53, To: 55}}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"null-key at the source", expectStage(kauditReport{Findings: []finding{{Cause: "null-key", Stage: "source"}}}, "null-key", "source"), ""},
		{"null-key elsewhere", expectStage(kauditReport{Findings: []finding{{Cause: "null-key", Stage: "join"}}}, "null-key", "source"), "at stage join"},
		{"info records", expectInfoRecords(kauditReport{Findings: []finding{{Cause: "filtered", Severity: "info", Topic: "zg-views", Partition: 1, Offset: 5}}},
			"filtered", []*inputRec{view}), ""},
		{"info records listed", expectInfoRecords(kauditReport{Findings: []finding{{Cause: "null-key", Severity: "info", Topic: "ze-orders", Partition: 1, Offset: 1, Count: 2,
			Detail: "stream ze-orders: 2 inputs have a null selected key (offsets 1, 38)"}}}, "null-key", []*inputRec{
			{Topic: "ze-orders", Partition: 1, Offset: 1}, {Topic: "ze-orders", Partition: 1, Offset: 38}}), ""},
		{"info records, one listed wrong", expectInfoRecords(kauditReport{Findings: []finding{{Cause: "null-key", Severity: "info", Topic: "ze-orders", Partition: 1, Offset: 1, Count: 2,
			Detail: "(offsets 1, 2)"}}}, "null-key", []*inputRec{
			{Topic: "ze-orders", Partition: 1, Offset: 1}, {Topic: "ze-orders", Partition: 1, Offset: 38}}), "did not expect: [ze-orders/1@2]"},
		{"info records short", expectInfoRecords(kauditReport{Findings: []finding{{Cause: "filtered", Severity: "info", Topic: "zg-views", Partition: 1, Offset: 5}}},
			"filtered", []*inputRec{view, {Topic: "zg-views", Partition: 1, Offset: 9}}), "count 1 records on zg-views/1, want 2"},
		{"info records elsewhere", expectInfoRecords(kauditReport{Findings: []finding{{Cause: "filtered", Severity: "info", Topic: "zg-views", Partition: 0, Offset: 5}}},
			"filtered", nil), "did not expect"},
		{"info as a loss", expectInfoRecords(kauditReport{Findings: []finding{{Cause: "filtered", Severity: "loss", Topic: "zg-views", Partition: 1, Offset: 5}}},
			"filtered", []*inputRec{view}), "severity loss"},
		{"fk join named", expectUnjudgedAny(kauditReport{Summary: kauditSummary{Verdict: "incomplete", Missing: []string{fk}}}, fkJoinNodes), ""},
		{"fk join not named", expectUnjudgedAny(kauditReport{Summary: kauditSummary{Verdict: "incomplete", Missing: []string{"join: not modelled"}}}, fkJoinNodes), "names none"},
		{"fk join a loss", expectUnjudgedAny(kauditReport{Summary: kauditSummary{Verdict: "loss", Missing: []string{fk}},
			Findings: []finding{{Severity: "loss", Cause: "join-missing"}}}, fkJoinNodes), "verdict"},
		{"views dropped", expectZFaults("cogroup", kauditReport{Summary: kauditSummary{Verdict: "loss"},
			Findings: []finding{{Severity: "loss", Stage: "repartition", Cause: "dropped", Topic: "zg-views", Partition: 1, Offset: 5, Key: key("u-06")}}}, zf), ""},
		{"a view missed", expectZFaults("cogroup", kauditReport{Summary: kauditSummary{Verdict: "loss"},
			Findings: []finding{{Severity: "loss", Stage: "repartition", Cause: "dropped", Topic: "zg-views", Partition: 0, Offset: 5}}}, zf), "not named"},
		{"gap exact", expectZFaults("enrich", kauditReport{Summary: kauditSummary{Verdict: "loss"},
			Findings: []finding{{Severity: "loss", Stage: "source", Cause: "retention-gap", Topic: "ze-orders", Offset: 53, Count: 2}}}, zf), ""},
		{"gap and more", expectZFaults("enrich", kauditReport{Summary: kauditSummary{Verdict: "loss"},
			Findings: []finding{{Severity: "loss", Stage: "source", Cause: "retention-gap", Topic: "ze-orders", Offset: 53, Count: 2},
				{Severity: "loss", Stage: "join", Cause: "join-missing", Topic: "ze-enriched"}}}, zf), "unexpected loss"},
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
