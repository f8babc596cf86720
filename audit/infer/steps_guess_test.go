package infer

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// topicOf is a one-partition topic of the records, offsets in order.
func topicOf(name string, recs ...Rec) *Topic {
	t := &Topic{Name: name, Parts: map[int32][]Rec{}, Whole: map[int32]bool{0: true}, Full: map[int32]bool{0: true}, Partitions: 1}
	for i, r := range recs {
		r.Offset = int64(i)
		t.Parts[0] = append(t.Parts[0], r)
	}
	return t
}

// TestGuessMapValuesOneMillisecond: a burst of orders produced in one
// millisecond (as a producer's batch is), each copied by a mapValues that
// keeps the customer and the amount. Pairing by timestamp alone finds no
// pair; a copy whose every value is among exactly one source record's
// pairs with it, so the mapping is found. Two orders alike in what the
// copy keeps pair with neither.
func TestGuessMapValuesOneMillisecond(t *testing.T) {
	var src, copies []Rec
	for i := range 12 {
		v := map[string]any{"orderId": fmt.Sprintf("o%d", i), "customer": fmt.Sprintf("c%d", i%5), "amount": float64(10 + i), "channel": "web"}
		src = append(src, Rec{Key: v["orderId"], Value: v, Timestamp: 1000})
		copies = append(copies, Rec{Key: v["customer"], Value: map[string]any{"customer": v["customer"], "amount": v["amount"]}, Timestamp: 1000})
	}
	g := GuessMapValues(topicOf("src", src...), topicOf("rep", copies...))
	if want := `{"amount": value.amount, "customer": value.customer}`; g.Value != want {
		t.Errorf("guess %q (%s), want %q", g.Value, g.Evidence, want)
	}
	// every copy alike: none pairs
	for i := range copies {
		copies[i].Value = map[string]any{"customer": "c0", "amount": float64(10)}
		src[i].Value.(map[string]any)["customer"], src[i].Value.(map[string]any)["amount"] = "c0", float64(10)
	}
	if g := GuessMapValues(topicOf("src", src...), topicOf("rep", copies...)); g.Value != "" {
		t.Errorf("alike copies: guess %q, want none", g.Value)
	}
}

// TestGuessFilterOverwritten: a latest store behind a branch, with a
// cache: its changelog holds a key's last update of a commit interval, so
// an order updated twice in the branch has a changelog record for its
// second version only. GuessFilter takes the first version for one the
// branch rejected, and no threshold separates the sides; left out as
// telling nothing, the branch's predicate is found.
func TestGuessFilterOverwritten(t *testing.T) {
	var src []Rec
	for i := range 20 {
		src = append(src, Rec{Key: fmt.Sprintf("o%d", i), Value: map[string]any{"amount": float64(i * 10)}, Timestamp: int64(i)})
	}
	// o1 (amount 10) updated to 5: both small, the first overwritten in the cache
	src = append(src, Rec{Key: "o1", Value: map[string]any{"amount": float64(5)}, Timestamp: 30})
	src = append(src, Rec{Key: "o99", Value: map[string]any{"amount": float64(1)}, Timestamp: 31})
	s := topicOf("src", src...)
	var pairs []Pair
	for _, r := range s.Parts[0] {
		a := r.Value.(map[string]any)["amount"].(float64)
		if a < 50 && r.Key != "o1" || r.Key == "o1" && a == 5 {
			pairs = append(pairs, Pair{Src: r, Copy: r})
		}
	}
	if g := GuessFilter(s, pairs); g.Value != "" {
		t.Errorf("GuessFilter: %q, want none (the overwritten o1 sits among the rejected)", g.Value)
	}
	if g := GuessFilterOverwritten(s, pairs); g.Value != "value.amount <= 40" {
		t.Errorf("GuessFilterOverwritten: %q (%s), want value.amount <= 40", g.Value, g.Evidence)
	}
}

// TestGuessFilterConsumed: Kafka's SmokeTestClient copies data to echo
// through filterNot(key is "flush"); the flush records are each
// partition's last, after every copy. Read as not consumed yet, they made
// the filter "true" and the audit then called them lost; below the app's
// committed offset they are consumed, so rejected, and one key tells them
// apart.
func TestGuessFilterConsumed(t *testing.T) {
	var recs []Rec
	for i := range 10 {
		recs = append(recs, Rec{Key: fmt.Sprintf("k%d", i), Value: float64(i)})
	}
	recs = append(recs, Rec{Key: "flush", Value: nil}, Rec{Key: "flush", Value: float64(0)})
	s := topicOf("data", recs...)
	var pairs []Pair
	for _, r := range s.Parts[0][:10] {
		pairs = append(pairs, Pair{Src: r, Copy: r})
	}
	if g := GuessFilter(s, pairs); g.Value != "true" {
		t.Errorf("not known consumed: %q (%s), want true", g.Value, g.Evidence)
	}
	for i := range 5 {
		s.Parts[0] = append(s.Parts[0], Rec{Offset: int64(12 + i), Key: "flush", Value: float64(i)})
	}
	s.Committed = map[int32]int64{0: int64(len(s.Parts[0]))}
	if g := GuessFilter(s, pairs); g.Value != `key != "flush"` {
		t.Errorf("consumed: %q (%s), want key != \"flush\"", g.Value, g.Evidence)
	}
}

// TestGuessFilterKeptConstant: filter((k, v) -> v.type.equals("click")),
// or a split() with a branch per type: the kept records share one value
// of a field that no rejected record has, while the rejected records
// have several.
func TestGuessFilterKeptConstant(t *testing.T) {
	types := []string{"click", "view", "buy"}
	var recs []Rec
	for i := range 30 {
		recs = append(recs, Rec{Key: fmt.Sprintf("e%d", i), Value: map[string]any{"type": types[i%3], "n": float64(i)}, Timestamp: int64(i)})
	}
	s := topicOf("events", recs...)
	var pairs []Pair
	for _, r := range s.Parts[0] {
		if r.Value.(map[string]any)["type"] == "click" {
			pairs = append(pairs, Pair{Src: r, Copy: r})
		}
	}
	s.Committed = map[int32]int64{0: 30}
	if g := GuessFilter(s, pairs); g.Value != `value.type == "click"` {
		t.Errorf("guess %q (%s), want value.type == \"click\"", g.Value, g.Evidence)
	}
}

// TestGuessSplitFromStates: a word count whose repartition copies are
// purged (WordCountDemo at-least-once): the split is found from the
// changelog's keys alone, or declined where the words are not the keys.
func TestGuessSplitFromStates(t *testing.T) {
	lines := []string{"Kafka streams went down", "the app restarted, on-call typed: audit!", "(sic) Hello world", "It's fine? No it isn't", "kafka kafka streams"}
	counts := map[string]int64{}
	var src, states []Rec
	for i, l := range lines {
		src = append(src, Rec{Value: l, Timestamp: int64(1000 + i)})
		for _, w := range splitWords(l) {
			counts[w]++
			states = append(states, Rec{Key: w, Value: counts[w], Timestamp: int64(1000 + i)})
		}
	}
	for _, tc := range []struct {
		name   string
		states []Rec
		want   string
	}{
		{"the changelog of the lower-cased words", states, `regexSplit(lower(value), "\\W+")`},
		// a word lost from the store: still 90 % of the words are keys
		{"one word's states lost", slices.DeleteFunc(slices.Clone(states), func(r Rec) bool { return r.Key == "hello" }), `regexSplit(lower(value), "\\W+")`},
		{"keys no word is", []Rec{{Key: "x", Value: int64(1)}, {Key: "y", Value: int64(1)}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, els := GuessSplitFromStates(topicOf("lines", src...), topicOf("changelog", tc.states...))
			if g.Value != tc.want {
				t.Fatalf("guess %q (%s), want %q", g.Value, g.Evidence, tc.want)
			}
			if tc.want == "" {
				if els != nil {
					t.Errorf("no guess, but the words %v", els)
				}
				return
			}
			if n := els.Count(); n != len(states) {
				t.Errorf("%d words, want %d", n, len(states))
			}
			for r := range els.each() {
				if r.Key != r.Value {
					t.Errorf("word %v keyed %v, want by itself", r.Value, r.Key)
				}
			}
		})
	}
	// lines already lower-case and split by single spaces: every
	// candidate splits them alike, and the source was read whole
	var plain, plainStates []Rec
	n := map[string]int64{}
	for i, l := range []string{"a b c", "b c d", "c d e", "a a"} {
		plain = append(plain, Rec{Value: l, Timestamp: int64(i)})
		for _, w := range splitWords(l) {
			n[w]++
			plainStates = append(plainStates, Rec{Key: w, Value: n[w]})
		}
	}
	g, _ := GuessSplitFromStates(topicOf("lines", plain...), topicOf("changelog", plainStates...))
	if g.Value != SplitCandidates[0] {
		t.Errorf("alike candidates: guess %q (%s), want the first, %q", g.Value, g.Evidence, SplitCandidates[0])
	}
	// not read whole: the candidates stay the user's to choose
	partial := topicOf("lines", plain...)
	partial.Whole[0] = false
	if g, _ := GuessSplitFromStates(partial, topicOf("changelog", plainStates...)); g.Value != "" || len(g.Candidates) < 2 {
		t.Errorf("alike candidates, the source read in part: guess %q, candidates %v, want several and no guess", g.Value, g.Candidates)
	}
}

// splitWords is Java's value.toLowerCase().split("\\W+"): a leading empty
// word kept, trailing ones dropped.
func splitWords(s string) []string {
	words := regexp.MustCompile(`\W+`).Split(strings.ToLower(s), -1)
	for len(words) > 0 && words[len(words)-1] == "" {
		words = words[:len(words)-1]
	}
	return words
}
