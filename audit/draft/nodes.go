package draft

// What Kafka Streams' generated names tell of the processors a draft
// without a topology cannot see.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/topology"
)

// Kafka Streams numbers every generated processor and store name from one
// counter (InternalStreamsBuilder.newProcessorName and newStoreName), in
// the order the app called the DSL. A re-keyed reduce or aggregate
// (stream → selectKey/groupBy → groupByKey → reduce) takes seven numbers:
// the source, the key selector, the store (named before its processor),
// the reduce or aggregate processor, and the repartition's sink, filter and
// source; a table without a repartition three (source, store, processor).
// A filter, mapValues or peek before the re-key takes one more each, and so
// does every node the audit cannot see (a toStream().to(), a join), so a
// store numbered exactly as the chains before it and its own source and
// key selector need leaves no number for a processor between its source
// and the re-key. What breaks the count makes it unclosed, never closed: a
// store or repartition topic the app named (the app names things, and a
// named processor takes no number), or a numbered store of another shape
// (a table source, a join's, a suppression buffer) below it.

const (
	rekeyedChain = 7 // source, key selector, store, processor, repartition sink, filter, source
	plainChain   = 3 // source, store, processor
)

// generatedStore matches a store name Kafka Streams generates for a reduce
// or an aggregate (count, windowed ones too), with its number.
var generatedStore = regexp.MustCompile(`^KSTREAM-(?:REDUCE|AGGREGATE)-STATE-STORE-(\d{10})$`)

// numbered matches any generated name with its number.
var numbered = regexp.MustCompile(`^(?:KSTREAM|KTABLE|KSTREAM_TABLE)-[A-Z_-]+-(\d{10})(?:-|$)`)

// unseenCount is what the node numbers say of one re-keyed store: why a
// processor may stand between its source and its re-key ("" when none
// can), and how many nodes more than its chain needs stand below it
// (extra; -1 when the count cannot be made): steps the evidence shows
// (a flatMapValues split) account for some of them.
type unseenCount struct {
	why   string
	extra int
}

// unseenSteps says, for each re-keyed store of a layout drawn without a
// topology, whether the node numbers leave room for a processor between
// its source and its re-key, and why.
func unseenSteps(appID string, lay *topology.Layout) map[string]unseenCount {
	type entity struct {
		n     int
		store string // a reduce or aggregate store, else ""
		chain int    // its chain's numbers, 0 for another shape
	}
	var ents []entity
	named := ""
	seen := map[int]bool{}
	for _, s := range lay.Stores {
		if m := generatedStore.FindStringSubmatch(s.Name); m != nil {
			n, _ := strconv.Atoi(m[1])
			ch := plainChain
			if s.Rekeyed {
				ch = rekeyedChain
			}
			ents = append(ents, entity{n: n, store: s.Name, chain: ch})
			seen[n] = true
			continue
		}
		if m := numbered.FindStringSubmatch(s.Name); m != nil {
			n, _ := strconv.Atoi(m[1])
			ents = append(ents, entity{n: n})
			seen[n] = true
			continue
		}
		named = s.Name
	}
	for _, u := range lay.Topics {
		if u.Role != topology.RoleRepartition && u.Role != topology.RoleChangelog {
			continue
		}
		base := strings.TrimPrefix(u.Name, appID+"-")
		base = strings.TrimSuffix(strings.TrimSuffix(base, "-repartition"), "-changelog")
		if m := numbered.FindStringSubmatch(base); m != nil {
			if n, _ := strconv.Atoi(m[1]); !seen[n] {
				ents = append(ents, entity{n: n})
				seen[n] = true
			}
		} else if base != u.Name && named == "" {
			named = base
		}
	}
	slices.SortFunc(ents, func(a, b entity) int { return a.n - b.n })
	out := map[string]unseenCount{}
	need, known := 0, true
	for _, e := range ents {
		if e.store == "" || e.chain != rekeyedChain {
			if e.store != "" {
				need += e.chain
			} else {
				known = false // a store of another shape: its chain's numbers are not known
			}
			continue
		}
		switch {
		case named != "":
			out[e.store] = unseenCount{extra: -1, why: fmt.Sprintf("the app names its stores or topics (%s), and a named processor takes no number, so the node numbers cannot rule out a processor between its source and the re-key", named)}
		case !known:
			out[e.store] = unseenCount{extra: -1, why: fmt.Sprintf("a node of a shape the audit cannot count is numbered below store %s, so its number cannot rule out a processor between its source and the re-key", e.store)}
		case e.n < need+2:
			out[e.store] = unseenCount{extra: -1, why: fmt.Sprintf("store %s is number %d where the chains before it and its own source and key selector take at least %d: some nodes are named (a named processor takes no number), so the node numbers cannot rule out a processor between its source and the re-key", e.store, e.n, need+2)}
		case e.n > need+2:
			out[e.store] = unseenCount{extra: e.n - need - 2, why: fmt.Sprintf("store %s is number %d where the chains below it and its own source and key selector take %d: %d more node(s) stand below it (a filter, mapValues or peek before a re-key, a source built early, a node the audit cannot see), so its number cannot rule out a processor between its source and the re-key", e.store, e.n, need+2, e.n-need-2)}
		default:
			out[e.store] = unseenCount{}
		}
		need += e.chain
	}
	return out
}
