package topology

import (
	"strings"
	"testing"
)

// TestSourceChain: the processors between a source and a store, and
// between a store and an output, in real describe() texts of Kafka
// Streams 3.6.2: the repartition hop's own nodes left out, a split's
// splitter and branch one step, a merge and the stateful part named.
func TestSourceChain(t *testing.T) {
	for _, tt := range []struct {
		file, from, store, to string
		want                  string
	}{
		{"../../testdata/kafka/describe/out/3.6/seed.txt", "orders-v1", "KSTREAM-REDUCE-STATE-STORE-0000000002", "", "KSTREAM-KEY-SELECT-0000000001 (selectKey)"},
		{"../../testdata/kafka/describe/out/3.6/aggregate-count.txt", "clicks", "KSTREAM-AGGREGATE-STATE-STORE-0000000001", "", ""},
		{"../../testdata/kafka/describe/out/3.6/aggregate-count.txt", "users", "KTABLE-AGGREGATE-STATE-STORE-0000000017", "", "KTABLE-SOURCE-0000000015 (stateful), KTABLE-SELECT-0000000016 (stateful)"},
		{"../../testdata/kafka/describe/out/3.6/named.txt", "orders", "orders-store", "", "order-id (named)"},
		{"../../testdata/apps/words.describe.txt", "sw-lines", "KSTREAM-AGGREGATE-STATE-STORE-0000000003", "", "KSTREAM-FLATMAPVALUES-0000000001 (flatMapValues), KSTREAM-KEY-SELECT-0000000002 (selectKey)"},
		{"../../testdata/apps/routes.describe.txt", "sr-mobile", "KSTREAM-REDUCE-STATE-STORE-0000000019", "", "KSTREAM-MERGE-0000000002 (merge), KSTREAM-BRANCH-0000000003 → KSTREAM-BRANCH-00000000030 (branch), KSTREAM-MAPVALUES-0000000017 (mapValues), KSTREAM-KEY-SELECT-0000000018 (selectKey)"},
		{"../../testdata/apps/windows.describe.txt", "", "KSTREAM-AGGREGATE-STATE-STORE-0000000001", "sc-busy-minutes", "KTABLE-TOSTREAM-0000000003 (toStream), KSTREAM-FILTER-0000000004 (filter)"},
		{"../../testdata/kafka/describe/out/3.6/windowed.txt", "", "KSTREAM-AGGREGATE-STATE-STORE-0000000001", "readings-per-minute", "KTABLE-SUPPRESS-0000000003 (suppress), KTABLE-TOSTREAM-0000000005 (toStream), KSTREAM-KEY-SELECT-0000000006 (selectKey)"},
	} {
		topo, err := ReadFile(tt.file)
		if err != nil {
			t.Fatal(err)
		}
		l := topo.Layout("app")
		var chain []ChainNode
		if tt.to != "" {
			chain, err = l.OutputChain(tt.store, tt.to)
		} else {
			chain, err = l.SourceChain(tt.from, tt.store)
		}
		if err != nil {
			t.Errorf("%s %s: %v", tt.file, tt.store, err)
			continue
		}
		var got []string
		for _, c := range chain {
			got = append(got, c.String())
		}
		if g := strings.Join(got, ", "); g != tt.want {
			t.Errorf("%s %s→%s%s:\n got %s\nwant %s", tt.file, tt.from, tt.store, tt.to, g, tt.want)
		}
	}
	topo, err := ReadFile("../../testdata/kafka/describe/out/3.6/seed.txt")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := topo.Layout("app").SourceChain("payments-v1", "KSTREAM-REDUCE-STATE-STORE-0000000002"); err == nil || !strings.Contains(err.Error(), "no path") {
		t.Errorf("a store the topic does not reach: %v", err)
	}
}

// TestOpOf: every generated name prefix of the DSL's stateless
// operators, and a name the app chose.
func TestOpOf(t *testing.T) {
	for name, want := range map[string]Op{
		"KSTREAM-FILTER-0000000001": OpFilter, "KSTREAM-MAPVALUES-0000000001": OpMapValues, "KSTREAM-MAP-0000000001": OpMap,
		"KSTREAM-FLATMAPVALUES-0000000001": OpFlatMapValues, "KSTREAM-FLATMAP-0000000001": OpFlatMap, "KSTREAM-PEEK-0000000001": OpPeek,
		"KSTREAM-BRANCH-0000000001": OpBranch, "KSTREAM-BRANCHCHILD-0000000002": OpBranch, "KSTREAM-KEY-SELECT-0000000001": OpSelectKey,
		"KSTREAM-MERGE-0000000002": OpMerge, "KSTREAM-PROCESSOR-0000000002": OpProcess, "KSTREAM-TRANSFORMVALUES-0000000002": OpProcess,
		"KSTREAM-FLATTRANSFORM-0000000002": OpProcess, "KSTREAM-PROCESSVALUES-0000000002": OpProcess, "KSTREAM-LEFTJOIN-0000000004": OpStateful,
		"KTABLE-TOSTREAM-0000000004": OpToStream, "KTABLE-SUPPRESS-0000000003": OpSuppress, "KTABLE-FILTER-0000000003": OpTableFilter, "KTABLE-MAPVALUES-0000000005": OpTableMapValues, "KTABLE-JOINTHIS-0000000006": OpStateful,
		"order-id": OpNamed,
	} {
		if got := OpOf(name); got != want {
			t.Errorf("OpOf(%s) = %s, want %s", name, got, want)
		}
	}
}
