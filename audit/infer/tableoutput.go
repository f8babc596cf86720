package infer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// OutputShape is what the topology shows between a table's store and its
// output: KTable filters before toStream() (KTableFilter), a stream filter
// after it, and a map or selectKey that re-keys the output; Window is the
// store's window size in ms (0: not windowed).
type OutputShape struct {
	TableFilter, StreamFilter bool
	Rekey                     string // "map", "selectKey" or ""
	Window                    int64
}

// TableOutputGuess is what the evidence tells of a table's output
// processors: the KTable filter's predicate, the stream filter's, and the
// re-keying expression, each a Guess (Value "" where not told).
type TableOutputGuess struct {
	TableFilter, StreamFilter, Rekey Guess
}

// outputKeying is one way a table's states may be keyed on its output.
type outputKeying struct {
	name string // what it is, for the evidence
	expr string // the spec's expression of the re-keying step ("" for none)
	key  func(raw []byte) ([]byte, bool)
}

// keyings lists the ways a store's changelog key may reach its output: as
// it is (a plain table), or for a window store the windowed serde's key
// (the inner key and the start), Windowed#toString of Kafka Streams 3.6.2
// ("[key@start/end]", a String inner key) and the inner key alone
// (toStream((w, v) -> w.key())).
func keyings(s OutputShape) []outputKeying {
	if s.Window <= 0 {
		return []outputKeying{{name: "the store's key", key: func(raw []byte) ([]byte, bool) { return raw, true }}}
	}
	split := func(raw []byte) ([]byte, int64, bool) {
		inner, start, _, ok := SplitWindowKey(raw)
		return inner, start, ok
	}
	var out []outputKeying
	switch s.Rekey {
	case "":
		out = append(out, outputKeying{name: "the windowed serde's key", key: func(raw []byte) ([]byte, bool) {
			inner, start, ok := split(raw)
			if !ok {
				return nil, false
			}
			return append(append([]byte(nil), inner...), raw[len(inner):len(inner)+8]...), start >= 0
		}})
	case "map":
		out = append(out, outputKeying{name: "the window's toString()", expr: "[windowString(key), value]", key: func(raw []byte) ([]byte, bool) {
			inner, start, ok := split(raw)
			if !ok || !utf8.Valid(inner) {
				return nil, false
			}
			return []byte("[" + string(inner) + "@" + strconv.FormatInt(start, 10) + "/" + strconv.FormatInt(start+s.Window, 10) + "]"), true
		}})
		out = append(out, outputKeying{name: "the window's key", expr: "[key.key, value]", key: func(raw []byte) ([]byte, bool) {
			inner, _, ok := split(raw)
			return inner, ok
		}})
	case "selectKey":
		out = append(out, outputKeying{name: "the window's key", expr: "key.key", key: func(raw []byte) ([]byte, bool) {
			inner, _, ok := split(raw)
			return inner, ok
		}})
	}
	return out
}

// GuessTableOutput infers a table's output processors of the given shape
// from the store's changelog and the output. The cache writes each state
// to the changelog and forwards it in the same flush, so every state
// reached the KTable filter: the states that have an output record of the
// same key (as the keying tried writes it) and value, in order, passed the
// filters, and the others did not. A keying explains the output where
// every non-null output record is such a state (and at least MinKeys are);
// the KTable filter is then the one-field rule that tells the states that
// passed from those that did not (GuessFilter's), and a stream filter
// after toStream() that the output holds no tombstone for is `value !=
// nil` (the KTable filter forwards a rejected state as a null). Where the
// filters are both there, the rule is the KTable filter's; the stream
// filter's own predicate is then told only by the tombstones it removed.
func GuessTableOutput(changelog, output *Topic, s OutputShape) TableOutputGuess {
	none := func(why string) TableOutputGuess {
		g := Guess{Evidence: why}
		return TableOutputGuess{TableFilter: g, StreamFilter: g, Rekey: g}
	}
	if changelog == nil || output == nil {
		return none("the changelog or the output was not read")
	}
	outs := map[string][][]byte{}
	nulls, n := 0, 0
	for r := range output.each() {
		if r.RawValue == nil {
			nulls++
			continue
		}
		n++
		outs[string(r.RawKey)] = append(outs[string(r.RawKey)], r.RawValue)
	}
	if n < MinKeys {
		return none(fmt.Sprintf("%d output records (want %d)", n, MinKeys))
	}
	var why []string
	for _, k := range keyings(s) {
		left := map[string][][]byte{}
		for key, vs := range outs {
			left[key] = vs
		}
		states := &Topic{Name: changelog.Name, Parts: map[int32][]Rec{}, Partitions: changelog.Partitions, Committed: map[int32]int64{}}
		var pairs []Pair
		for p := int32(0); p < changelog.Partitions; p++ {
			for _, r := range changelog.Parts[p] {
				if r.Value == nil {
					continue
				}
				mk, found := k.key(r.RawKey)
				if !found {
					continue
				}
				if s.Window > 0 {
					r.Key, r.Undecodable = nil, false // the window, not the key serde's
				}
				states.Parts[p] = append(states.Parts[p], r)
				if o := left[string(mk)]; len(o) > 0 && string(o[0]) == string(r.RawValue) {
					left[string(mk)] = o[1:]
					pairs = append(pairs, Pair{Src: r, Copy: r})
				}
			}
			states.Committed[p] = 1<<63 - 1 // every state reached the filter
		}
		unpaired := 0
		for _, o := range left {
			unpaired += len(o)
		}
		if unpaired > 0 {
			why = append(why, fmt.Sprintf("under %s %d of the %d output records are no state of the store's changelog, in order", k.name, unpaired, n))
			continue
		}
		out := TableOutputGuess{}
		if k.expr != "" {
			out.Rekey = Guess{Value: k.expr, Evidence: fmt.Sprintf("each of the %d output records is a state of the store under %s", n, k.name), Explained: n, Of: n}
		}
		filter := GuessFilter(states, pairs)
		filter.Evidence = strings.NewReplacer("source records", "states", "a copy", "an output record", "its copy", "its output record").Replace(filter.Evidence)
		switch {
		case s.TableFilter:
			out.TableFilter = filter
			if s.StreamFilter {
				if nulls == 0 {
					out.StreamFilter = Guess{Value: "value != nil", Evidence: fmt.Sprintf("the output holds none of the tombstones the KTable filter forwards for a rejected state, and every state it passes (%d)", n), Explained: n, Of: n}
				} else {
					out.StreamFilter = Guess{Evidence: fmt.Sprintf("the output holds %d tombstones: the filter after toStream() passes some nulls", nulls)}
				}
			}
		case s.StreamFilter:
			out.StreamFilter = filter
		}
		return out
	}
	return none(strings.Join(why, "; "))
}
