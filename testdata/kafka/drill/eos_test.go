package main

import (
	"os"
	"strings"
	"testing"
)

func TestEOSStoreOf(t *testing.T) {
	// the describe() text kaudit.eos.Describe printed from EosTestClient (Streams 3.6.2)
	b, err := os.ReadFile("../../eos/topology.txt")
	if err != nil {
		t.Fatal(err)
	}
	for sink, want := range map[string]string{"min": "KSTREAM-AGGREGATE-STATE-STORE-0000000003", "sum": "KSTREAM-AGGREGATE-STATE-STORE-0000000007",
		"max": "KSTREAM-AGGREGATE-STATE-STORE-0000000014", "cnt": "KSTREAM-AGGREGATE-STATE-STORE-0000000018"} {
		if got, err := eosStoreOf(string(b), sink); err != nil || got != want {
			t.Errorf("eosStoreOf(%s) = %q, %v; want %q", sink, got, err, want)
		}
	}
	if _, err := eosStoreOf(string(b), "echo"); err == nil {
		t.Error("echo has no store, yet eosStoreOf found one")
	}
}

func TestChangesFinal(t *testing.T) {
	rec := func(o int64, k string, v int32, ts int64) eosRecord {
		return eosRecord{Partition: 0, Offset: o, Key: k, Value: v, Timestamp: ts}
	}
	all := []eosRecord{
		rec(0, "a", 5, 10), rec(1, "a", 9, 11), // a: the 9 is lost; min stays 5, but the timestamp 11 is gone
		rec(2, "b", 7, 12), rec(3, "b", 3, 13), rec(4, "b", 8, 14), // b: the 8 (ts 14) is lost, a later 1 (ts 15) absorbs the timestamp
		rec(5, "b", 1, 15),
		rec(6, "c", 4, 16), // c: its only input is lost
	}
	lost := []eosRecord{all[1], all[4], all[6]}
	minFold := func(a, v int64) int64 { return min(a, v) }
	var got []string
	for _, r := range changesFinal(all, lost, minFold) {
		got = append(got, r.String())
	}
	if strings.Join(got, ",") != "data/0@1,data/0@6" {
		t.Errorf("min: %v, want data/0@1 (its timestamp) and data/0@6 (the only input)", got)
	}
	got = nil
	for _, r := range changesFinal(all, lost, func(a, v int64) int64 { return a + v }) {
		got = append(got, r.String())
	}
	if strings.Join(got, ",") != "data/0@1,data/0@4,data/0@6" {
		t.Errorf("sum: %v, want every lost record", got)
	}
}

func TestExpectEOSTables(t *testing.T) {
	f := func(table string, o int64) finding {
		return finding{Severity: "loss", Cause: "dropped", Topic: "data", Partition: 1, Offset: o, Count: 1, Detail: "table " + table + "; record key \"k\"; …"}
	}
	r := func(o int64) eosRecord { return eosRecord{Partition: 1, Offset: o} }
	rep := kauditReport{Findings: []finding{f("cnt", 4), f("cnt", 5), f("min", 5)}}
	ok := map[string]eosExpect{"cnt": {must: []eosRecord{r(4), r(5)}}, "min": {must: nil, may: []eosRecord{r(4), r(5)}}}
	if err := expectEOSTables(rep, ok); err != nil {
		t.Errorf("the findings are what is expected: %v", err)
	}
	for name, want := range map[string]map[string]eosExpect{
		"a must record missing":  {"cnt": {must: []eosRecord{r(4), r(5), r(6)}}, "min": ok["min"]},
		"a record not lost":      {"cnt": {must: []eosRecord{r(4)}}, "min": ok["min"]},
		"a table with none":      {"cnt": ok["cnt"]},
		"beyond what it may say": {"cnt": ok["cnt"], "min": {may: []eosRecord{r(4)}}},
	} {
		if err := expectEOSTables(rep, want); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if tableOf(f("max", 1)) != "max" || tableOf(finding{Detail: "table sum: no order of …"}) != "sum" || tableOf(finding{Detail: "x"}) != "" {
		t.Error("tableOf does not read the table's name")
	}
}

func TestEOSCaughtUp(t *testing.T) {
	s := state{committed: tpOffsets{}, start: tpOffsets{}, lso: tpOffsets{}, hw: tpOffsets{}}
	s.hw.set("data", 0, 10)
	s.lso.set("data", 0, 10)
	s.committed.set("data", 0, 10)
	s.hw.set("repartition", 0, 11)
	s.lso.set("repartition", 0, 11)
	s.committed.set("repartition", 0, 10) // the last offset is the commit marker
	if why := eosCaughtUp(s); why != "" {
		t.Fatalf("caught up, yet: %s", why)
	}
	s.committed.set("data", 0, 9)
	if eosCaughtUp(s) == "" {
		t.Error("data/0 is behind, yet caught up")
	}
	s.committed.set("data", 0, 10)
	s.hw.set("sum", 0, 5)
	s.lso.set("sum", 0, 3)
	if !strings.Contains(eosCaughtUp(s), "open transaction") {
		t.Error("an open transaction on sum/0, yet caught up")
	}
}
