package infer

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/spec"
)

// ExplainedBy counts the repartition copies that a chain of steps
// explains: copies that are, by key, value and timestamp, an element the
// steps emit for a source record read (each copy explains one element).
// total is the copies with a value.
func ExplainedBy(source, copies *Topic, steps []*spec.Step) (n, total int) {
	return explainedBy(source, copies, steps, false)
}

// explainedBy is ExplainedBy; with unsure, a filter or branch whose
// predicate is TODO passes every record (spec.ApplyStepsUnsure).
func explainedBy(source, copies *Topic, steps []*spec.Step, unsure bool) (n, total int) {
	apply := spec.ApplySteps
	if unsure {
		apply = spec.ApplyStepsUnsure
	}
	type fp struct {
		k, v codec.Digest
		ts   int64
	}
	idx := map[fp]int{}
	stamps := map[int64]bool{}
	for r := range copies.each() {
		if r.Value == nil || r.Undecodable {
			continue
		}
		idx[fp{r.key().d, r.value().d, r.Timestamp}]++
		stamps[r.Timestamp] = true
		total++
	}
	for r := range source.each() {
		if r.Undecodable || !stamps[r.Timestamp] {
			continue
		}
		els, err := apply(steps, spec.RecordEnv{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
		if err != nil {
			continue
		}
		for _, e := range els {
			if e.Key == nil || e.Value == nil {
				continue
			}
			f := fp{valOf(e.Key).d, valOf(e.Value).d, r.Timestamp}
			if idx[f] > 0 {
				idx[f]--
				n++
			}
		}
	}
	return n, total
}

// SplitCandidates are the flatMapValues lambdas kaudit init tries on text
// values: Java's split on non-word characters or white space, lowercased
// or not, and a split on single spaces.
var SplitCandidates = []string{
	`regexSplit(lower(value), "\\W+")`,
	`regexSplit(value, "\\W+")`,
	`regexSplit(lower(value), "\\s+")`,
	`regexSplit(value, "\\s+")`,
	`split(value, " ")`,
}

// GuessChain tries candidate expressions for the steps of a chain whose
// kinds are given (the topology's), with the last step's key expression
// keyExpr (a selectKey or groupBy; "" when the chain keeps the key), and
// returns the first chain that explains at least 90 % of the copies, its
// expressions in order. tries gives, per step, the candidates to try
// (one-element lists for steps already known).
func GuessChain(source, copies *Topic, kinds []spec.StepKind, tries [][]string) ([]string, Guess) {
	if source == nil || copies == nil || copies.Count() == 0 {
		return nil, Guess{Evidence: "no repartition copy to check the steps against"}
	}
	best, bestN, total := []string(nil), -1, 0
	var walkTries func(i int, cur []string)
	walkTries = func(i int, cur []string) {
		if i == len(kinds) {
			steps := make([]*spec.Step, len(kinds))
			for j, k := range kinds {
				st, err := spec.NewStep(k, cur[j], "")
				if err != nil {
					return
				}
				steps[j] = st
			}
			n, t := ExplainedBy(source, copies, steps)
			total = t
			if n > bestN {
				best, bestN = slices.Clone(cur), n
			}
			return
		}
		for _, c := range tries[i] {
			walkTries(i+1, append(cur, c))
		}
	}
	walkTries(0, nil)
	// the lambdas explain every copy, unless the source was not read
	// whole (a copy may then be of a record not read)
	if best == nil || total == 0 || bestN < total && !(partial(source) && bestN*10 >= total*9) {
		return nil, Guess{Evidence: fmt.Sprintf("no candidate explains all %d copies (the best %d)", total, max(bestN, 0)), Explained: max(bestN, 0), Of: total}
	}
	return best, Guess{Value: strings.Join(best, "; "), Evidence: fmt.Sprintf("explains %d of %d copies on %s", bestN, total, copies.Name), Explained: bestN, Of: total}
}

// GuessFilter finds a predicate on one field of the source values that
// keeps exactly the source records that have a copy (pairs) and rejects
// those that have none, over enough of each (MinKeys): one key in every
// rejected record and in no kept one, a field equal to one constant in
// every rejected record and in no kept one (or in every kept one and in
// no rejected one), or a threshold on a numeric field. Records after the last copied one of
// their source partition are not consumed yet and are left out. Without
// a rejected record the predicate is "true"; without a predicate that
// separates them, none (Value "").
func GuessFilter(source *Topic, pairs []Pair) Guess { return guessFilter(source, pairs, nil) }

// GuessFilterOverwritten is GuessFilter where the pairs are a latest
// store's changelog records, not copies: a store with a cache writes only
// a key's last update before a commit, so a source record without one of
// its own whose key has a later record with one may have been overwritten
// in the cache, or taken by another branch. Such records tell nothing and
// are left out of both sides.
func GuessFilterOverwritten(source *Topic, pairs []Pair) Guess {
	lastPaired := map[int32]map[string]int64{}
	for _, p := range pairs {
		m := lastPaired[p.Src.Partition]
		if m == nil {
			m = map[string]int64{}
			lastPaired[p.Src.Partition] = m
		}
		k := keyOf(p.Src.Key)
		if o, ok := m[k]; !ok || p.Src.Offset > o {
			m[k] = p.Src.Offset
		}
	}
	return guessFilter(source, pairs, func(r *Rec) bool {
		o, ok := lastPaired[r.Partition][keyOf(r.Key)]
		return ok && r.Offset < o
	})
}

// guessFilter is GuessFilter leaving out the unpaired records skip says
// tell nothing.
func guessFilter(source *Topic, pairs []Pair, skip func(*Rec) bool) Guess {
	kept := map[[2]int64]bool{}
	last := map[int32]int64{}
	for _, p := range pairs {
		kept[[2]int64{int64(p.Src.Partition), p.Src.Offset}] = true
		if o, ok := last[p.Src.Partition]; !ok || p.Src.Offset > o {
			last[p.Src.Partition] = p.Src.Offset
		}
	}
	var in, out []*Rec
	for r := range source.each() {
		if r.Undecodable || r.Value == nil {
			continue
		}
		if kept[[2]int64{int64(r.Partition), r.Offset}] {
			in = append(in, r)
		} else if o, ok := last[r.Partition]; (ok && r.Offset < o || r.Offset < source.Committed[r.Partition]) && (skip == nil || !skip(r)) {
			// read before the last copied one, or consumed (below the
			// app's committed offset): rejected
			out = append(out, r)
		}
	}
	if len(in) < MinKeys {
		return Guess{Evidence: fmt.Sprintf("%d source records have a copy (want %d)", len(in), MinKeys)}
	}
	if len(out) == 0 {
		return Guess{Value: "true", Evidence: fmt.Sprintf("every one of the %d source records read before the last copied one has its copy: the filter passed them all", len(in))}
	}
	if len(out) < MinKeys {
		return Guess{Evidence: fmt.Sprintf("%d source records have no copy: too few to tell a filter from a loss (want %d)", len(out), MinKeys)}
	}
	// one key in every rejected record and in no kept one (SmokeTestClient's
	// filterNot((k, v) -> k.equals("flush")))
	if k := valOf(out[0].Key); k.v != nil && !slices.ContainsFunc(out, func(r *Rec) bool { return !valOf(r.Key).same(k) }) &&
		!slices.ContainsFunc(in, func(r *Rec) bool { return valOf(r.Key).same(k) }) {
		return Guess{Value: fmt.Sprintf("key != %s", literal(k.v)), Evidence: fmt.Sprintf("the %d source records without a copy all have key %s, none of the %d with one", len(out), literal(k.v), len(in))}
	}
	var paths [][]string
	leafPaths(in[0].Value, nil, &paths)
	if _, ok := in[0].Value.(map[string]any); !ok {
		paths = [][]string{nil} // a scalar value: the value itself
	}
	slices.SortFunc(paths, func(a, b []string) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	for _, path := range paths {
		name := strings.Join(append([]string{"value"}, path...), ".") // "value" for a scalar
		// one constant in every rejected record, in no kept one
		c := valOf(walk(out[0].Value, path))
		if c.v != nil && allSame(out, path, c) && noneSame(in, path, c) {
			return Guess{Value: fmt.Sprintf("%s != %s", name, literal(c.v)), Evidence: fmt.Sprintf("the %d source records without a copy all have %s %s, none of the %d with one", len(out), name, literal(c.v), len(in))}
		}
		// one constant in every kept record, in no rejected one
		// (filter((k, v) -> v.type.equals("click")), a branch per type)
		if c := valOf(walk(in[0].Value, path)); c.v != nil && allSame(in, path, c) && noneSame(out, path, c) {
			return Guess{Value: fmt.Sprintf("%s == %s", name, literal(c.v)), Evidence: fmt.Sprintf("the %d source records with a copy all have %s %s, none of the %d without one", len(in), name, literal(c.v), len(out))}
		}
		// a threshold
		lo, hi, ok := numRange(in, path)
		olo, ohi, ok2 := numRange(out, path)
		if !ok || !ok2 {
			// numbers written as text (String values, TemperatureDemo's
			// Integer.parseInt(value) > 20)
			lo, hi, ok = textRange(in, path)
			olo, ohi, ok2 = textRange(out, path)
			name = "int(" + name + ")"
		}
		// a parity (filter((k, v) -> v % 2 != 0))
		if kOdd, ok := parityOf(in, path); ok {
			if rOdd, ok := parityOf(out, path); ok && kOdd != rOdd {
				name := strings.Join(append([]string{"value"}, path...), ".")
				op, kept, rejected := "!=", "odd", "even"
				if !kOdd {
					op, kept, rejected = "==", "even", "odd"
				}
				return Guess{Value: fmt.Sprintf("%s %% 2 %s 0", name, op), Evidence: fmt.Sprintf("the %d source records without a copy all have %s %s, the %d with one %s", len(out), name, rejected, len(in), kept)}
			}
		}
		switch {
		case !ok || !ok2:
		case ohi < lo:
			return Guess{Value: fmt.Sprintf("%s >= %s", name, num(lo)), Evidence: fmt.Sprintf("the %d source records without a copy have %s at most %s, the %d with one at least %s", len(out), name, num(ohi), len(in), num(lo))}
		case olo > hi:
			return Guess{Value: fmt.Sprintf("%s <= %s", name, num(hi)), Evidence: fmt.Sprintf("the %d source records without a copy have %s at least %s, the %d with one at most %s", len(out), name, num(olo), len(in), num(hi))}
		}
	}
	return Guess{Evidence: fmt.Sprintf("%d source records have no copy and no comparison on one field tells them from the %d that have one: a filter, or a loss", len(out), len(in))}
}

// parityOf says whether every number at path is odd (true) or every one
// even (false); ok is false when they are not all whole numbers of one
// parity.
func parityOf(rs []*Rec, path []string) (odd, ok bool) {
	for i, r := range rs {
		f, isNum := toFloat(walk(r.Value, path))
		if !isNum || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return false, false
		}
		o := int64(f)%2 != 0
		if i > 0 && o != odd {
			return false, false
		}
		odd = o
	}
	return odd, len(rs) > 0
}

func allSame(rs []*Rec, path []string, c val) bool {
	for _, r := range rs {
		if !valOf(walk(r.Value, path)).same(c) {
			return false
		}
	}
	return true
}

func noneSame(rs []*Rec, path []string, c val) bool {
	for _, r := range rs {
		if valOf(walk(r.Value, path)).same(c) {
			return false
		}
	}
	return true
}

// numRange is the lowest and highest number at path, false when a record
// has none there.
func numRange(rs []*Rec, path []string) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		f, isNum := toFloat(walk(r.Value, path))
		if !isNum {
			return 0, 0, false
		}
		lo, hi = min(lo, f), max(hi, f)
	}
	return lo, hi, len(rs) > 0
}

// textRange is numRange over integers written as text.
func textRange(rs []*Rec, path []string) (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		s, isText := walk(r.Value, path).(string)
		n, err := strconv.ParseInt(s, 10, 32)
		if !isText || err != nil {
			return 0, 0, false
		}
		lo, hi = min(lo, float64(n)), max(hi, float64(n))
	}
	return lo, hi, len(rs) > 0
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// literal writes a canonical value as an expression literal.
func literal(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "nil"
	}
	return codec.Text(v)
}

// GuessMapValues finds a mapValues lambda from the copies whose source
// record is known by timestamp (one source record and one copy with the
// same timestamp in their partitions' sample): each field of the copy's
// value is a field of the source value (the same or renamed), or a
// constant factor of a numeric one, for at least 90 % of the pairs. The
// expression builds the copy's value field by field.
func GuessMapValues(source, copies *Topic) Guess {
	bySrc := map[int64][]*Rec{}
	for r := range source.each() {
		if !r.Undecodable && r.Value != nil {
			bySrc[r.Timestamp] = append(bySrc[r.Timestamp], r)
		}
	}
	byCopy := map[int64][]*Rec{}
	for r := range copies.each() {
		if !r.Undecodable && r.Value != nil {
			byCopy[r.Timestamp] = append(byCopy[r.Timestamp], r)
		}
	}
	var pairs [][2]*Rec
	for ts, cs := range byCopy {
		ss := bySrc[ts]
		switch {
		case len(cs) == 1 && len(ss) == 1:
			pairs = append(pairs, [2]*Rec{ss[0], cs[0]})
		case len(cs) > 0 && len(ss) > 0 && len(cs)*len(ss) <= maxAlikePairs:
			// records produced in one millisecond: a copy whose every
			// scalar is among the values of exactly one of them
			for _, c := range cs {
				if s := holder(c, ss); s != nil {
					pairs = append(pairs, [2]*Rec{s, c})
				}
			}
		}
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][1].Timestamp < pairs[j][1].Timestamp })
	if len(pairs) < MinKeys {
		return Guess{Evidence: fmt.Sprintf("%d copies pair with a source record by timestamp (want %d)", len(pairs), MinKeys)}
	}
	cm, ok := pairs[0][1].Value.(map[string]any)
	if !ok {
		return Guess{Evidence: "the copies' values are not records"}
	}
	var srcPaths [][]string
	leafPaths(pairs[0][0].Value, nil, &srcPaths)
	slices.SortFunc(srcPaths, func(a, b []string) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
	fields := slices.Sorted(mapKeys(cm))
	// a lambda that makes a copy from its source record explains every
	// pair: an exception is a wrong guess, unless the source was not read
	// whole (a copy may then pair with another record of its timestamp)
	need := len(pairs)
	if partial(source) {
		need = (len(pairs)*9 + 9) / 10
	}
	var parts []string
	for _, f := range fields {
		found := ""
		for _, c := range fieldExprs(pairs, srcPaths, f) {
			if fieldExplains(c, pairs, f) >= need {
				found = c
				break
			}
		}
		if found == "" {
			if c := valOf(fieldOf(pairs[0][1].Value, f)); c.v == nil || constantField(pairs, f, c, need) {
				found = literal(c.v)
			}
		}
		if found == "" {
			return Guess{Evidence: fmt.Sprintf("field %s of the copies is no field of the source values, nor a number or text made of one as Java does (a factor, Math.round, integer division, upper/lower case, trim, String.valueOf), in all of %d pairs", f, len(pairs))}
		}
		parts = append(parts, fmt.Sprintf("%s: %s", strconv.Quote(f), found))
	}
	return Guess{Value: "{" + strings.Join(parts, ", ") + "}", Evidence: fmt.Sprintf("each field of the copies' values, from %d copies paired with their source record by timestamp (%d of them explained)", len(pairs), len(pairs)), Explained: len(pairs), Of: len(pairs)}
}

// partial reports whether a topic was not read whole: a partition read
// from after offset 0 (retention, a purge) or not to its end.
func partial(t *Topic) bool {
	for p := range t.Parts {
		if !t.Whole[p] || !t.Full[p] {
			return true
		}
	}
	return false
}

// fieldExprs are the expressions tried for field f of the copies, each
// over one field of the source values, in the order tried: the field as
// it is; numbers as a Java lambda makes them (a constant factor or
// divisor, then Math.round, a cast to long, integer division); text upper
// or lower cased, trimmed, or a number as text (String.valueOf).
func fieldExprs(pairs [][2]*Rec, srcPaths [][]string, f string) []string {
	var out []string
	for _, path := range srcPaths {
		out = append(out, strings.Join(append([]string{"value"}, path...), "."))
	}
	for _, path := range srcPaths {
		name := strings.Join(append([]string{"value"}, path...), ".")
		if k, ok := ratioOf(pairs, path, f); ok {
			for _, e := range []string{"%s * %s", "mathRound(%s * %s)", "int(%s * %s)"} {
				out = append(out, fmt.Sprintf(e, name, num(k)))
			}
			if k != 0 && k < 1 {
				d := math.Round(1 / k)
				for _, e := range []string{"%s / %s", "mathRound(%s / %s)", "int(%s / %s)"} {
					out = append(out, fmt.Sprintf(e, name, num(d)))
				}
			}
		}
		for _, e := range []string{"upper(%s)", "lower(%s)", "trim(%s)", "string(%s)", "mathRound(%s)", "int(%s)"} {
			out = append(out, fmt.Sprintf(e, name))
		}
	}
	return out
}

// ratioOf is the factor from the source field at path to the copies'
// field f in the first pair where both are numbers and the source's is
// not 0, rounded to a whole number or to six significant digits where it
// is that close (100 for a ratio of 99.99999999999999).
func ratioOf(pairs [][2]*Rec, path []string, f string) (float64, bool) {
	for _, p := range pairs {
		a, ok1 := toFloat(walk(p[0].Value, path))
		b, ok2 := toFloat(fieldOf(p[1].Value, f))
		if !ok1 || !ok2 || a == 0 || b == 0 {
			continue
		}
		k := b / a
		if r := math.Round(k); r != 0 && math.Abs(k-r) <= 1e-6*math.Abs(k) {
			return r, r != 1
		}
		if k < 1 {
			if d := math.Round(1 / k); math.Abs(1/k-d) <= 1e-6*math.Abs(1/k) {
				return 1 / d, true
			}
		}
		r, _ := strconv.ParseFloat(strconv.FormatFloat(k, 'g', 6, 64), 64)
		return r, true
	}
	return 0, false
}

// fieldExplains counts the pairs whose copy's field f is exactly, as the
// audit compares values (canonical JSON), what expression e gives on the
// source record: the lambda is run as the audit will run it.
func fieldExplains(e string, pairs [][2]*Rec, f string) int {
	st, err := spec.NewStep(spec.StepMapValues, e, "")
	if err != nil {
		return 0
	}
	n := 0
	for _, p := range pairs {
		els, err := spec.ApplySteps([]*spec.Step{st}, spec.RecordEnv{Key: p[0].Key, Value: p[0].Value, Timestamp: p[0].Timestamp})
		if err != nil || len(els) != 1 {
			continue
		}
		if valOf(els[0].Value).same(valOf(fieldOf(p[1].Value, f))) {
			n++
		}
	}
	return n
}

// maxAlikePairs bounds the comparisons of the copies and source records
// of one timestamp that GuessMapValues makes.
const maxAlikePairs = 1 << 16

// holder is the one source record among ss that shares the most scalar
// values with the copy (a mapValues keeps some fields, an orderId among
// them, and changes others: an amount in cents), nil when none shares one
// or two share as many: which record it copies is then not known. A wrong
// pair only makes the guess fail (it must explain every pair).
func holder(c *Rec, ss []*Rec) *Rec {
	var cp [][]string
	leafPaths(c.Value, nil, &cp)
	if len(cp) == 0 {
		return nil
	}
	var best *Rec
	bestN, tie := 0, false
	for _, s := range ss {
		var sp [][]string
		leafPaths(s.Value, nil, &sp)
		have := map[string]int{}
		for _, p := range sp {
			have[codec.Text(walk(s.Value, p))]++
		}
		n := 0
		for _, p := range cp {
			if k := codec.Text(walk(c.Value, p)); have[k] > 0 {
				have[k]--
				n++
			}
		}
		switch {
		case n > bestN:
			best, bestN, tie = s, n, false
		case n == bestN && n > 0:
			tie = true
		}
	}
	if tie || bestN == 0 {
		return nil
	}
	return best
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func fieldOf(v any, f string) any {
	m, _ := v.(map[string]any)
	return m[f]
}

func constantField(pairs [][2]*Rec, f string, c val, need int) bool {
	n := 0
	for _, p := range pairs {
		if valOf(fieldOf(p[1].Value, f)).same(c) {
			n++
		}
	}
	return n >= need
}

// Words is the source as flatMapValues(split) → groupBy((k, word) →
// word) turns it into a store's inputs: each record's words, keyed by
// themselves, with the record's place and timestamp.
func Words(source *Topic, split string) (*Topic, error) {
	st, err := spec.NewStep(spec.StepFlatMapValues, split, "")
	if err != nil {
		return nil, err
	}
	els, err := elementsOf(source, []*spec.Step{st})
	if err != nil {
		return nil, err
	}
	for _, rs := range els.Parts {
		for i := range rs {
			if !rs[i].Undecodable {
				rs[i].Key = rs[i].Value
			}
		}
	}
	return els, nil
}

// GuessSplitFromStates guesses, where no repartition copy is left
// (Streams purges them) and no field of the source's records is a key of
// the changelog, a flatMapValues that splits each text value into words
// the table groups by (Kafka's WordCountDemo: flatMapValues(split) →
// groupBy((k, word) → word) → count()): the SplitCandidates whose words
// are keys of the changelog for at least 90 % of the words (over MinKeys
// or more), and, where the source was read whole, make up 90 % of the
// changelog's keys read. It returns the guess and the source as the
// split turns it into inputs, keyed by word (nil without a guess).
// Candidates that split every record read alike are one guess when the
// source was read whole (they are the same on all the evidence), else
// the guess is left to the user among them.
func GuessSplitFromStates(source, changelog *Topic) (Guess, *Topic) {
	if source == nil || changelog == nil {
		return Guess{Evidence: "no source or changelog record"}, nil
	}
	keys := map[string]bool{}
	for r := range changelog.each() {
		if r.Key != nil && !r.Undecodable {
			keys[keyOf(r.Key)] = true
		}
	}
	if len(keys) == 0 {
		return Guess{Evidence: "no changelog record"}, nil
	}
	whole := source.Partitions > 0
	for p := range source.Partitions {
		whole = whole && source.Whole[p] && source.Full[p]
	}
	mod := uint64(max(changelog.KeyMod, 1))
	type result struct {
		expr       string
		els        *Topic
		hit, words int
		sig        codec.Digest // of every word in order: candidates alike split alike
	}
	var fits []result
	for _, c := range SplitCandidates {
		els, err := Words(source, c)
		if err != nil {
			continue // not a text value: no split of it
		}
		res := result{expr: c, els: els}
		covered := map[string]bool{}
		var all []byte
		for p := range els.Partitions {
			for i := range els.Parts[p] {
				e := &els.Parts[p][i]
				if e.Undecodable || e.Value == nil {
					continue
				}
				w := keyOf(e.Value)
				all = append(append(all, w...), 0)
				res.words++
				if keys[w] {
					res.hit++
					covered[w] = true
				}
			}
		}
		res.sig = codec.DigestText(all)
		if res.words < MinKeys || uint64(res.hit)*10*mod < uint64(res.words)*9 {
			continue
		}
		if whole && mod == 1 && len(covered)*10 < len(keys)*9 {
			continue // the changelog has keys no word of the source is
		}
		fits = append(fits, res)
	}
	if len(fits) == 0 {
		return Guess{Evidence: "no split of the source's text values into words gives the changelog's keys for 90 % of the words"}, nil
	}
	slices.SortStableFunc(fits, func(a, b result) int { return b.hit - a.hit })
	best := fits[0]
	ev := fmt.Sprintf("%d/%d words of the source's records are keys of the changelog (no repartition copy left)", best.hit, best.words)
	var ties []string
	alike := true
	for _, f := range fits[1:] {
		if f.hit == best.hit {
			ties = append(ties, f.expr)
			alike = alike && f.sig == best.sig
		}
	}
	switch {
	case len(ties) == 0:
		return Guess{Value: best.expr, Evidence: ev}, best.els
	case alike && whole:
		return Guess{Value: best.expr, Evidence: ev + "; " + strings.Join(ties, ", ") + " split every record alike"}, best.els
	}
	return Guess{Evidence: ev + "; so do " + strings.Join(ties, ", "), Candidates: append([]string{best.expr}, ties...)}, nil
}
