package infer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/codec"
)

// Guess is one inferred spec field: its value, the evidence it rests on
// (for a YAML comment), or, when the evidence cannot settle it, the
// candidates (Value is then "").
type Guess struct {
	Value      string
	Evidence   string
	Candidates []string
	// Explained and Of are, where the guess counts them, how many records
	// (copies, keys' histories) it explains of how many it was measured
	// on; 0 and 0 where it does not.
	Explained, Of int
}

// GuessSerde guesses the serde of a topic's keys or values from their
// bytes: Confluent framing with a schema id known to the registry or the
// bundle (known) is json-schema when JSON text follows every schema id,
// else avro (RefineFramed then asks the schemas' types: protobuf is told
// from avro by its schema, not its bytes); text that parses as JSON objects or arrays is
// json; 8 bytes that are not text are long, 4 bytes int (Kafka's
// IntegerSerializer, as EosTestClient's values); UTF-8 text is string;
// else bytes.
func GuessSerde(raws [][]byte, known func(id int32) bool) Guess {
	n, framed, ids, jsonObj, text, eight, four := 0, 0, map[int32]bool{}, 0, 0, 0, 0
	for _, b := range raws {
		if b == nil {
			continue
		}
		n++
		if id, ok := codec.SchemaID(b); ok && id > 0 && (known == nil || known(id)) { // registries number schemas from 1: a zero id is a Long
			framed++
			ids[id] = true
		}
		t := bytes.TrimSpace(b)
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
			jsonObj++
		}
		if utf8.Valid(b) && !bytes.ContainsAny(b, "\x00") {
			text++
		}
		switch len(b) {
		case 8:
			eight++
		case 4:
			four++
		}
	}
	if n == 0 {
		return Guess{Evidence: "no record to tell the serde"}
	}
	switch {
	case framed == n:
		var s []string
		for id := range ids {
			s = append(s, fmt.Sprint(id))
		}
		sort.Strings(s)
		return Guess{Value: codec.FramedFormat(raws), Evidence: fmt.Sprintf("%d/%d Confluent-framed, schema ids %s", framed, n, strings.Join(s, ", ")), Explained: framed, Of: n}
	case jsonObj == n:
		return Guess{Value: "json", Evidence: fmt.Sprintf("%d/%d JSON", jsonObj, n), Explained: jsonObj, Of: n}
	case eight == n && text < n:
		return Guess{Value: "long", Evidence: fmt.Sprintf("%d/%d 8-byte binary", eight, n), Explained: eight, Of: n}
	case four == n && text < n:
		return Guess{Value: "int", Evidence: fmt.Sprintf("%d/%d 4-byte binary", four, n), Explained: four, Of: n}
	case text == n:
		return Guess{Value: "string", Evidence: fmt.Sprintf("%d/%d UTF-8 text", text, n), Explained: text, Of: n}
	}
	return Guess{Value: "bytes", Evidence: fmt.Sprintf("%d records neither framed, JSON nor text", n),
		Candidates: []string{"avro", "json", "string", "bytes"}}
}

// RefineFramed names the serde of Confluent-framed records (g guessed
// from their bytes: avro or json-schema) from their schemas' types, which
// dec looks up: a Protobuf schema makes them protobuf. g as it is when
// the records are not framed or a schema is not known.
func RefineFramed(ctx context.Context, dec *codec.Codec, raws [][]byte, g Guess) Guess {
	if g.Value != codec.SerdeAvro && g.Value != codec.SerdeJSONSchema || dec == nil {
		return g
	}
	if s, ev := dec.FramedSerde(ctx, raws); s != "" && s != g.Value {
		return Guess{Value: s, Evidence: g.Evidence + "; " + ev}
	}
	return g
}

// Pair is a source record and its repartition copy.
type Pair struct{ Src, Copy Rec }

// MatchCopies pairs repartition copies with the source records they copy:
// Streams passes value and timestamp through (the value compared decoded:
// the copy may carry another schema id).
func MatchCopies(source, copies *Topic) []Pair {
	type fp struct {
		d  codec.Digest
		ts int64
	}
	idx := make(map[fp][]*Rec, copies.Count())
	stamps := make(map[int64]bool, copies.Count())
	for _, rs := range copies.Parts {
		for i := range rs {
			r := &rs[i]
			if r.Value == nil || r.Undecodable {
				continue
			}
			k := fp{r.value().d, r.Timestamp}
			idx[k] = append(idx[k], r)
			stamps[r.Timestamp] = true
		}
	}
	var out []Pair
	for r := range source.each() {
		if r.Value == nil || r.Undecodable || !stamps[r.Timestamp] {
			continue // no copy has its timestamp: no need to digest it
		}
		k := fp{r.value().d, r.Timestamp}
		if cs := idx[k]; len(cs) > 0 {
			out = append(out, Pair{Src: *r, Copy: *cs[0]})
			idx[k] = cs[1:]
		}
	}
	return out
}

// leafPaths lists the paths to a value's scalar fields, to depth 3.
func leafPaths(v any, prefix []string, out *[][]string) {
	m, ok := v.(map[string]any)
	if !ok || len(prefix) >= 3 {
		if len(prefix) > 0 {
			*out = append(*out, slices.Clone(prefix))
		}
		return
	}
	for k, x := range m {
		if spec.IsIdent(k) {
			leafPaths(x, append(prefix, k), out)
		}
	}
}

func walk(v any, path []string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// GuessSelectKey finds the expression whose value is each copy's key:
// the record key (unchanged; no select_key) or a value field path. Where
// the key and a value field both equal it, rekeyed (the topology has a
// key-changing operation) takes the field.
func GuessSelectKey(pairs []Pair, rekeyed bool) Guess {
	if len(pairs) == 0 {
		return Guess{Evidence: "no repartition copy matched a source record"}
	}
	counts := map[string]int{}
	for i := range pairs {
		p := &pairs[i]
		key := p.Copy.key()
		if p.Src.key().same(key) {
			counts["key"]++
		}
		if _, rec := p.Src.Value.(map[string]any); !rec && p.Src.Value != nil && valOf(p.Src.Value).same(key) {
			counts["value"]++ // the value itself: map((k, user) -> pair(user, user))
		}
		var paths [][]string
		leafPaths(p.Src.Value, nil, &paths)
		for _, path := range paths {
			if valOf(walk(p.Src.Value, path)).same(key) {
				counts["value."+strings.Join(path, ".")]++
			}
		}
	}
	var cands []string
	for c := range counts {
		cands = append(cands, c)
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if counts[a] != counts[b] {
			return counts[a] > counts[b]
		}
		return a < b
	})
	n := len(pairs)
	// a copy paired with its source record carries the key the lambda
	// gave it: a field that gives fewer than all of them is not the key
	if len(cands) == 0 || counts[cands[0]] < n {
		if k, ok := constantKey(pairs); ok && n >= 5 {
			// selectKey((k, v) -> "temp"), as Kafka's TemperatureDemo does
			return Guess{Value: k, Evidence: fmt.Sprintf("every one of %d copies matched to source records has this key, which no source key or field holds", n), Explained: n, Of: n}
		}
		g := Guess{Evidence: fmt.Sprintf("no field equals the keys of all %d copies matched to source records", n)}
		for _, c := range cands[:min(3, len(cands))] {
			g.Candidates = append(g.Candidates, fmt.Sprintf("%s %d/%d", c, counts[c], n))
		}
		return g
	}
	best := cands[0]
	var ties []string
	for _, c := range cands[1:] {
		if counts[c] == counts[best] {
			ties = append(ties, c)
		}
	}
	ev := fmt.Sprintf("equals the key of %d/%d copies matched to source records", counts[best], n)
	if best == "key" && rekeyed && len(ties) == 1 {
		return Guess{Value: ties[0], Evidence: ev + " (as does the record key, but the app repartitions by a new key)", Explained: counts[best], Of: n}
	}
	if len(ties) > 0 {
		if best == "key" {
			// the key is unchanged; fields that equal it too say nothing
			return Guess{Value: "key", Evidence: ev + " (so do " + strings.Join(ties, ", ") + ")", Explained: counts[best], Of: n}
		}
		return Guess{Evidence: ev + " for each of " + strings.Join(append([]string{best}, ties...), ", "), Candidates: append([]string{best}, ties...), Explained: counts[best], Of: n}
	}
	return Guess{Value: best, Evidence: ev, Explained: counts[best], Of: n}
}

// GuessReducer finds the reducer among latest, count and sum(F) that
// explains the most keys' histories (CheckTable's). Where several explain
// every key alike (no key has two inputs that tell them apart) and latest
// is one, latest is taken: on this evidence they predict the same states.
// selectKey is the table's guessed select_key ("" or "key": unchanged),
// used where the repartition copies were purged.
func GuessReducer(pt spec.PlannedTable, ev *Evidence, selectKey string) Guess {
	pt.Spec = nil
	v := checkTable(pt, ev, SelectPath(selectKey))
	if v.Keys == 0 {
		return Guess{Evidence: "no key's copies and changelog history were read whole (repartition purged?)", Candidates: Candidates(nil)}
	}
	best := v.Order[0]
	var ties []string
	for _, c := range v.Order {
		if v.Explained[c] == v.Explained[best] {
			ties = append(ties, c)
		}
	}
	summary := func(list []string) string {
		var s []string
		for _, c := range list {
			s = append(s, fmt.Sprintf("%s %d", c, v.Explained[c]))
		}
		return strings.Join(s, ", ")
	}
	var others []string
	for _, c := range v.Order {
		if !slices.Contains(ties, c) && len(others) < 2 {
			others = append(others, c)
		}
	}
	ev2 := fmt.Sprintf("explains %d/%d %s", v.Explained[best], v.Keys, cmp.Or(v.of, "keys' histories"))
	if len(others) > 0 {
		ev2 += "; " + summary(others)
	}
	explained, of := v.Explained[best], v.Keys
	if len(ties) == 1 {
		if v.Explained[best]*2 < v.Keys {
			return Guess{Evidence: ev2 + ": none explains most keys", Candidates: v.Order[:min(3, len(v.Order))], Explained: explained, Of: of}
		}
		return Guess{Value: best, Evidence: ev2, Explained: explained, Of: of}
	}
	if slices.Contains(ties, "latest") && v.Explained["latest"]*10 >= v.Keys*9 {
		return Guess{Value: "latest", Evidence: ev2 + "; " + strings.Join(ties, ", ") + " explain the same keys: no key's inputs tell them apart", Explained: v.Explained["latest"], Of: of}
	}
	return Guess{Evidence: ev2 + "; " + strings.Join(ties, ", ") + " explain the same keys", Candidates: ties, Explained: explained, Of: of}
}

// GuessSelectKeyFromStates guesses select_key where no repartition copy
// is left (Streams purges them): the record key or the value field whose
// values are keys of the table's changelog for the most source records
// (at least 90 % of those where it is not null, and n the count).
func GuessSelectKeyFromStates(source, changelog *Topic, rekeyed bool) (Guess, int) {
	if source == nil || changelog == nil {
		return Guess{Evidence: "no source or changelog record"}, 0
	}
	keys := map[string]bool{}
	for r := range changelog.each() {
		if r.Key != nil && !r.Undecodable {
			keys[keyOf(r.Key)] = true
		}
	}
	if len(keys) == 0 {
		return Guess{Evidence: "no changelog record"}, 0
	}
	mod := max(changelog.KeyMod, 1)
	hit, seen := map[string]int{}, map[string]int{}
	for r := range source.each() {
		if r.Undecodable || r.Value == nil {
			continue
		}
		try := func(name string, v any) {
			if v == nil {
				return
			}
			seen[name]++
			if keys[keyOf(v)] {
				hit[name]++
			}
		}
		try("key", r.Key)
		var paths [][]string
		leafPaths(r.Value, nil, &paths)
		for _, path := range paths {
			try("value."+strings.Join(path, "."), walk(r.Value, path))
		}
	}
	var cands []string
	for c := range hit {
		// a sample of the keys holds 1/mod of them
		if uint64(hit[c])*10*mod >= uint64(seen[c])*9 && hit[c] > 0 {
			cands = append(cands, c)
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if hit[a] != hit[b] {
			return hit[a] > hit[b]
		}
		return a < b
	})
	if len(cands) == 0 {
		return Guess{Evidence: "no field of the source's values is a key of the changelog for 90 % of the records"}, 0
	}
	best := cands[0]
	ev := fmt.Sprintf("a key of the changelog for %d/%d source records (no repartition copy left)", hit[best], seen[best])
	var ties []string
	for _, c := range cands[1:] {
		if hit[c] == hit[best] {
			ties = append(ties, c)
		}
	}
	switch {
	case len(ties) == 0:
		return Guess{Value: best, Evidence: ev}, hit[best]
	case best == "key" && rekeyed && len(ties) == 1:
		return Guess{Value: ties[0], Evidence: ev + " (as is the record key, but the app repartitions by a new key)"}, hit[best]
	case best == "key":
		return Guess{Value: "key", Evidence: ev}, hit[best]
	}
	return Guess{Evidence: ev + " for each of " + strings.Join(append([]string{best}, ties...), ", "), Candidates: append([]string{best}, ties...)}, hit[best]
}

// constantKey returns the expression of the one key every copy has (a
// string or a number), when no source record has it as its key.
func constantKey(pairs []Pair) (string, bool) {
	first := pairs[0].Copy.key()
	for i := range pairs {
		if !pairs[i].Copy.key().same(first) || pairs[i].Src.key().same(first) {
			return "", false
		}
	}
	switch k := first.v.(type) {
	case string:
		return strconv.Quote(k), true
	case int, int32, int64, float64, json.Number:
		return fmt.Sprint(k), true
	}
	return "", false
}

// PairedOrTwin counts the copies that pairs pair with a source record,
// and those that repeat a paired copy's value and timestamp (a second
// copy of one input, a duplicate the audit names, is evidence of the same
// lambda, not against it), of the copies with a value decoded.
func PairedOrTwin(pairs []Pair, copies *Topic) (n, of int) {
	type fp struct {
		d  codec.Digest
		ts int64
	}
	paired := make(map[fp]bool, len(pairs))
	for _, p := range pairs {
		paired[fp{p.Copy.value().d, p.Copy.Timestamp}] = true
	}
	for r := range copies.each() {
		if r.Value == nil || r.Undecodable {
			continue
		}
		of++
		if paired[fp{r.value().d, r.Timestamp}] {
			n++
		}
	}
	return n, of
}
