package topology

import (
	"path/filepath"
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

// TestChainNamedGroupByNotSplit: Kafka Streams 3.6.2 names a KStream
// groupBy's key selection after Grouped.as (X) and the null-key filter of
// its repartition X-repartition-filter (KStreamImpl#groupBy,
// createRepartitionedSource); a split() names its branches after the
// splitter, with a branch index or a Branched name (BranchedKStreamImpl).
// The first pair is a key selection and a repartition hop, never a
// splitter and its branch (AB's V12: the spec's selectKey did not match a
// "branch" there); the second is a split, named or not, and a split's
// default branch grouped by a named groupBy is both in one chain.
func TestChainNamedGroupByNotSplit(t *testing.T) {
	const named = "named-groupby-split.txt"
	for _, tt := range []struct {
		name, file, from, store, node string
		want                          string
	}{
		{"named groupBy in a cogroup", named, "views", "activity-store", "",
			"long-views (named), views-by-page (named)"},
		{"named groupByKey, no hop", named, "clicks", "activity-store", "", ""},
		{"named split, its Branched branch", named, "orders", "big-counts", "",
			"route- → route-big (branch)"},
		{"named split's default branch, a named groupBy after it", named, "orders", "other-counts", "",
			"route- → route-0 (branch), other-by-value (named)"},
		{"named split of a merge, to a sink", "merge-branch.txt", "orders-eu", "", "KSTREAM-SINK-0000000005",
			"KSTREAM-MERGE-0000000002 (merge), route- → route-big (branch)"},
		{"named Grouped after a named selectKey", "named.txt", "orders", "orders-store", "",
			"order-id (named)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, ver := range []string{"3.6", "4.0"} {
				file := filepath.Join(describeDir, ver, tt.file)
				topo, err := ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				l := topo.Layout("app")
				var chain []ChainNode
				if tt.node != "" {
					chain, _, err = l.NodeChain(tt.from, tt.node)
				} else {
					chain, err = l.SourceChain(tt.from, tt.store)
				}
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				var got []string
				for _, c := range chain {
					got = append(got, c.String())
				}
				if g := strings.Join(got, ", "); g != tt.want {
					t.Errorf("%s:\n got %s\nwant %s", file, g, tt.want)
				}
			}
		})
	}
}
