package infer

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kaudit/kaudit/audit/spec"
)

// A windowed aggregation (groupByKey().windowedBy(TimeWindows…)) keeps
// one state per key and window: its store's changelog key is the key's
// bytes, the window start (8 bytes big-endian) and a sequence number (4
// bytes, 0 unless the store retains duplicates, which an aggregation's
// does not: WindowKeySchema.toStoreKeyBinary). Its record's timestamp is
// the largest of the inputs applied to the window, so it lies in
// [start, start+size). From that and the inputs, the window's size, its
// advance and the reducer are inferred. The grace is not: an input
// missing from a window that had closed may have been skipped by design
// or lost, and only the grace tells which.

// SplitWindowKey splits a window store's changelog key into the inner
// key's bytes, the window start and the sequence number.
func SplitWindowKey(raw []byte) (inner []byte, start int64, seq uint32, ok bool) {
	if len(raw) < 12 {
		return nil, 0, 0, false
	}
	n := len(raw) - 12
	start = int64(binary.BigEndian.Uint64(raw[n:]))
	seq = binary.BigEndian.Uint32(raw[n+8:])
	return raw[:n], start, seq, start >= 0
}

// windowedRec reports whether r is a window store's changelog record: a
// key of the shape above, sequence number 0, and a timestamp at or after
// the window's start and less than 30 days after it.
func windowedRec(r *Rec) bool {
	_, start, seq, ok := SplitWindowKey(r.RawKey)
	return ok && seq == 0 && r.Timestamp >= start && r.Timestamp-start < int64(30*24*time.Hour/time.Millisecond)
}

// WindowedChangelog reports whether at least 90 % of a changelog's
// records (and at least 5) are a window store's (see SplitWindowKey), and
// says so.
func WindowedChangelog(cl *Topic) (bool, string) {
	if cl == nil {
		return false, ""
	}
	n, total := 0, 0
	for r := range cl.each() {
		total++
		if windowedRec(r) {
			n++
		}
	}
	if total < MinKeys || n*10 < total*9 {
		return false, ""
	}
	return true, fmt.Sprintf("%d/%d changelog keys are a window store's: the key, the window start and a sequence number 0", n, total)
}

// WindowGuess is a windowed aggregation inferred from its inputs and its
// store's changelog. Size is 0 when nothing was settled (Evidence says
// why, Candidates what was left).
type WindowGuess struct {
	Size, Advance int64
	Reduce        string
	Evidence      string
	Candidates    []string
	// Explained and Of are how many windows the best candidate explains,
	// of how many it or the changelog has (0 and 0: none was scored).
	Explained, Of int
}

// maxScored bounds the windows a candidate is scored on.
const maxScored = 5000

// roundMillis are the window sizes and advances apps write, tried besides
// the greatest common divisor of the starts.
var roundMillis = []int64{1000, 2000, 5000, 10000, 15000, 20000, 30000, 60000, 120000, 300000, 600000,
	900000, 1200000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000, 86400000, 7 * 86400000}

// winInput is one input of a window: its value and how late it came,
// the task's stream time (its largest timestamp so far, this input's
// included) minus the window's end: at 0 or more the window had closed
// under a grace of 0, and Streams applied it only if its grace is larger.
type winInput struct {
	v    any
	late int64
}

// GuessWindow infers a windowed aggregation's size, advance and reducer
// from its inputs (the records the window processor read: the source's
// or the repartition copies, per partition in offset order, each a task's
// stream) and its store's changelog. A candidate explains a window when
// some grace (a bound on lateness: the inputs later than it skipped)
// folds the window's inputs to its final state; it must explain at least
// 90 % of the windows it or the changelog has (at least 5), and no other
// candidate as many.
func GuessWindow(inputs, changelog *Topic) WindowGuess { return guessWindow(inputs, changelog, 0) }

// GuessWindowSized is GuessWindow where the window's size is known (size,
// from an output written under Windowed#toString: WindowSizeFromOutput):
// the advance and the reducer are inferred alike, without the three
// window starts GuessWindow needs to tell a size.
func GuessWindowSized(inputs, changelog *Topic, size int64) WindowGuess {
	return guessWindow(inputs, changelog, size)
}

func guessWindow(inputs, changelog *Topic, size int64) WindowGuess {
	if inputs == nil || changelog == nil {
		return WindowGuess{Evidence: "the inputs or the changelog were not read"}
	}
	if inputs.KeyMod > 1 || changelog.KeyMod > 1 {
		return WindowGuess{Evidence: "the evidence is a sample of the keys: a window key's sample is not its key's"}
	}
	final, part, g, lo := finalWindows(changelog)
	starts := map[int64]bool{}
	for k := range final {
		starts[k.start] = true
	}
	switch {
	case size > 0 && len(final) < MinKeys:
		return WindowGuess{Evidence: fmt.Sprintf("%d windows in the changelog: too few", len(final))}
	case size > 0: // the size is known: one start is enough
	case len(final) < MinKeys || len(starts) < 3 || g == 0 || g > roundMillis[len(roundMillis)-1]:
		return WindowGuess{Evidence: fmt.Sprintf("%d windows at %d starts in the changelog: too few to tell a window's size", len(final), len(starts))}
	}
	// the candidates are scored on the windows of the first keys (in byte
	// order) that hold maxScored windows, so that a large app's inference
	// costs what those cost; the stream time still counts every input
	scored := map[string]bool{}
	if len(final) > maxScored {
		perKey := map[string]int{}
		for k := range final {
			perKey[k.inner]++
		}
		n := 0
		for _, k := range slices.Sorted(maps.Keys(perKey)) {
			if n >= maxScored {
				break
			}
			scored[k], n = true, n+perKey[k]
		}
		for k := range final {
			if !scored[k.inner] {
				delete(final, k)
			}
		}
	}
	keep := func(key []byte) bool { return len(scored) == 0 || scored[string(key)] }
	var values []any
	for r := range inputs.each() {
		if r.RawKey != nil && r.Value != nil && keep(r.RawKey) {
			values = append(values, r.Value)
		}
	}
	reducers := windowReducers(values)
	type cand struct {
		name           string
		size, adv      int64
		reduce         string
		explained, all int
	}
	var cands []cand
	advs := []int64{g}
	if size > 0 {
		// the advance divides the size and every start
		advs = []int64{size}
		for _, d := range roundMillis {
			if d < size && size%d == 0 && (g == 0 || g%d == 0) && d*60 >= size {
				advs = append(advs, d)
			}
		}
	}
	for _, d := range roundMillis {
		if size == 0 && d < g && g%d == 0 && d*60 >= g {
			advs = append(advs, d)
		}
	}
	for _, adv := range advs {
		k0 := (lo + adv - 1) / adv
		if size > 0 {
			if k0 = size / adv; k0*adv < lo {
				continue // a window shorter than the changelog's timestamps allow
			}
		}
		if k0 > 100 {
			continue // a hop of more than 100 windows per input: not tried
		}
		if adv != g {
			// every input makes the window that starts at its timestamp
			// rounded down to the advance: an advance whose such windows
			// the changelog lacks for more than 10 % of the inputs is not
			// tried further
			n, miss := 0, 0
			for r := range inputs.each() {
				if r.RawKey != nil && r.Value != nil && keep(r.RawKey) {
					n++
					if _, ok := final[winKey{string(r.RawKey), r.Timestamp / adv * adv}]; !ok {
						miss++
					}
				}
			}
			if miss*10 > n {
				continue
			}
		}
		for k := k0; k <= k0+3 && k <= 100 && (size == 0 || k == k0); k++ {
			w := &spec.Window{Size: k * adv, Advance: adv}
			wins := windowsOf(inputs, w, keep)
			for _, red := range reducers {
				rd, err := spec.ParseReducer(red)
				if err != nil {
					continue
				}
				c := cand{size: w.Size, adv: adv, reduce: red}
				c.explained, c.all = scoreWindows(&spec.TableSpec{Reducer: rd}, wins, final, part, changelog.Whole)
				c.name = windowText(c.size, c.adv) + ", " + red
				cands = append(cands, c)
			}
		}
	}
	if len(cands) == 0 {
		return WindowGuess{Evidence: "no window size fits the changelog's timestamps"}
	}
	slices.SortStableFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(b.explained*a.all, a.explained*b.all), cmp.Compare(b.explained, a.explained))
	})
	best := cands[0]
	score := func(c cand) string { return fmt.Sprintf("%s %d/%d", c.name, c.explained, c.all) }
	ev := fmt.Sprintf("explains %d/%d windows", best.explained, best.all)
	if len(scored) > 0 {
		ev += fmt.Sprintf(" (those of the first %d keys)", len(scored))
	}
	var others []string
	for _, c := range cands[1:min(3, len(cands))] {
		others = append(others, score(c))
	}
	if len(others) > 0 {
		ev += "; " + strings.Join(others, ", ")
	}
	if best.explained < MinKeys || best.explained*10 < best.all*9 {
		return WindowGuess{Evidence: ev + ": none explains 90 % of the windows", Candidates: []string{best.name}, Explained: best.explained, Of: best.all}
	}
	var ties []string
	for _, c := range cands[1:] {
		if c.explained == best.explained && c.all == best.all {
			ties = append(ties, c.name)
		}
	}
	if len(ties) > 0 {
		return WindowGuess{Evidence: ev + ": " + strings.Join(append([]string{best.name}, ties...), ", ") + " explain the same windows", Candidates: append([]string{best.name}, ties...), Explained: best.explained, Of: best.all}
	}
	return WindowGuess{Size: best.size, Advance: best.adv, Reduce: best.reduce, Evidence: ev, Explained: best.explained, Of: best.all}
}

// windowReducers are the reducers a window is tried with: Candidates',
// and the extremes of the numbers they sum (reduce((a, b) -> max), as
// Kafka's TemperatureDemo), of numbers written as text too (its String
// values: Integer.parseInt(v1) > Integer.parseInt(v2) ? v1 : v2).
func windowReducers(values []any) []string {
	out := Candidates(values)
	for _, c := range slices.Clone(out) {
		switch {
		case c == "sum":
			out = append(out, "min", "max")
		case strings.HasPrefix(c, "sum("):
			out = append(out, "min"+c[3:], "max"+c[3:])
		}
	}
	text := len(values) > 0
	for _, v := range values {
		s, ok := v.(string)
		if _, err := strconv.ParseInt(s, 10, 32); !ok || err != nil {
			text = false
			break
		}
	}
	if text {
		out = append(out, "expr: int(value) > int(agg) ? value : agg", "expr: int(value) < int(agg) ? value : agg")
	}
	return out
}

// winKey is a window: its key's bytes and its start.
type winKey struct {
	inner string
	start int64
}

// finalWindows reads a window store's changelog: each window's last
// state, each key's partition, the greatest common divisor of the starts
// and the smallest size the records' timestamps allow.
func finalWindows(changelog *Topic) (final map[winKey]val, part map[string]int32, g, lo int64) {
	final, part = map[winKey]val{}, map[string]int32{}
	for r := range changelog.each() {
		if !windowedRec(r) {
			continue
		}
		inner, start, _, _ := SplitWindowKey(r.RawKey)
		k := winKey{string(inner), start}
		final[k], part[k.inner] = valOf(r.Value), r.Partition
		if start > 0 {
			g = gcd(g, start)
		}
		lo = max(lo, r.Timestamp-start+1)
	}
	return final, part, g, lo
}

// windowsOf applies the inputs (per partition in offset order, a task's
// stream) to the windows w gives each, with how late each came: the
// task's stream time (its largest timestamp so far, the input's
// included) minus the window's end.
func windowsOf(inputs *Topic, w *spec.Window, keep func([]byte) bool) map[winKey][]winInput {
	wins := map[winKey][]winInput{}
	for p := int32(0); p < inputs.Partitions; p++ {
		stream := int64(-1)
		for _, r := range inputs.Parts[p] {
			if r.RawKey == nil {
				continue // Streams skips a null key before its stream time
			}
			stream = max(stream, r.Timestamp)
			if r.Value == nil || !keep(r.RawKey) {
				continue
			}
			for _, s := range w.Starts(r.Timestamp) {
				wk := winKey{string(r.RawKey), s}
				wins[wk] = append(wins[wk], winInput{r.Value, stream - (s + w.Size)})
			}
		}
	}
	return wins
}

// scoreWindows counts the windows a reducer explains (see
// explainsWindow) among those the changelog or the inputs have: a window
// an on-time input created with no state counts against it where the
// changelog's partition holds its windows from the start.
func scoreWindows(t *spec.TableSpec, wins map[winKey][]winInput, final map[winKey]val, part map[string]int32, whole map[int32]bool) (explained, all int) {
	for wk, f := range final {
		all++
		if explainsWindow(t, wins[wk], f) {
			explained++
		}
	}
	for wk, ins := range wins {
		if _, ok := final[wk]; ok || !slices.ContainsFunc(ins, func(x winInput) bool { return x.late < 0 }) {
			continue
		}
		if p, ok := part[wk.inner]; !ok || whole[p] {
			all++
		}
	}
	return explained, all
}

// explainsWindow reports whether some grace folds a window's inputs to
// its final state: the inputs on time under it applied, in order, the
// later ones skipped.
func explainsWindow(t *spec.TableSpec, ins []winInput, final val) bool {
	if len(ins) == 0 {
		return false
	}
	// the graces that apply a different set of inputs: 0, and one past
	// each late input's lateness
	graces := []int64{0}
	for _, x := range ins {
		if x.late >= 0 {
			graces = append(graces, x.late+1)
		}
	}
	slices.Sort(graces)
	graces = slices.Compact(graces)
	for _, gr := range graces {
		var agg any
		first := true
		for _, x := range ins {
			if x.late >= gr {
				continue
			}
			next, err := t.Reduce(agg, x.v, first)
			if err != nil {
				return false
			}
			agg, first = next, false
		}
		if !first && valOf(agg).same(final) {
			return true
		}
	}
	return false
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// windowText writes a window as the spec does: {size: 1m, advance: 30s}.
func windowText(size, adv int64) string {
	s := "size: " + Millis(size)
	if adv != size {
		s += ", advance: " + Millis(adv)
	}
	return "{" + s + "}"
}

// Millis writes milliseconds as the spec reads them: whole hours,
// minutes or seconds as a Go duration (1h, 5m, 30s), else a number.
func Millis(ms int64) string {
	switch {
	case ms > 0 && ms%3600000 == 0:
		return fmt.Sprintf("%dh", ms/3600000)
	case ms > 0 && ms%60000 == 0:
		return fmt.Sprintf("%dm", ms/60000)
	case ms > 0 && ms%1000 == 0:
		return fmt.Sprintf("%ds", ms/1000)
	}
	return fmt.Sprint(ms)
}

// GuessWindowedOutputFilter infers the filter between a windowed store
// and its output (toStream().filter(…).to(…), the output keyed by the
// window: WindowedSerdes.timeWindowedSerdeFrom, the key's bytes and the
// start). The store's cache forwards each state it writes to its
// changelog, so every changelog record reached the filter: those with an
// output record of the same window and value passed it, the others did
// not, and the filter is the one-field rule that tells them apart
// (GuessFilter's, over the states' values).
func GuessWindowedOutputFilter(changelog, output *Topic) Guess {
	if changelog == nil || output == nil {
		return Guess{Evidence: "the changelog or the output was not read"}
	}
	type wkey struct {
		inner string
		start int64
	}
	outs := map[wkey][][]byte{} // each window's output values, in order
	for r := range output.each() {
		if len(r.RawKey) <= 8 {
			return Guess{Evidence: "the output's keys are not windows"}
		}
		n := len(r.RawKey) - 8
		k := wkey{string(r.RawKey[:n]), int64(binary.BigEndian.Uint64(r.RawKey[n:]))}
		outs[k] = append(outs[k], r.RawValue)
	}
	states := &Topic{Name: changelog.Name, Parts: map[int32][]Rec{}, Partitions: changelog.Partitions, Committed: map[int32]int64{}}
	var pairs []Pair
	for p := int32(0); p < changelog.Partitions; p++ {
		for _, r := range changelog.Parts[p] {
			inner, start, _, ok := SplitWindowKey(r.RawKey)
			if !ok || r.Value == nil {
				continue
			}
			r.Key, r.Undecodable = nil, false // the window, not the key serde's
			states.Parts[p] = append(states.Parts[p], r)
			k := wkey{string(inner), start}
			if o := outs[k]; len(o) > 0 && string(o[0]) == string(r.RawValue) {
				outs[k] = o[1:]
				pairs = append(pairs, Pair{Src: r, Copy: r})
			}
		}
		states.Committed[p] = 1<<63 - 1 // every state reached the filter
	}
	left := 0
	for _, o := range outs {
		left += len(o)
	}
	if left > 0 {
		return Guess{Evidence: fmt.Sprintf("%d output records are no state of the store's changelog, in order", left)}
	}
	g := GuessFilter(states, pairs)
	g.Evidence = strings.NewReplacer("source records", "states", "a copy", "an output record", "its copy", "its output record").Replace(g.Evidence)
	return g
}

// WindowSizeFromOutput reads a window's size from an output written under
// Windowed#toString ("[key@start/end]", toStream().map((w, v) ->
// pair(w.toString(), v))): end - start of every output record, one size,
// each record's key and start a window of the changelog, at least MinKeys
// records; false otherwise.
func WindowSizeFromOutput(changelog, output *Topic) (int64, string, bool) {
	if changelog == nil || output == nil {
		return 0, "", false
	}
	wins := map[winKey]bool{}
	for r := range changelog.each() {
		if inner, start, _, ok := SplitWindowKey(r.RawKey); ok {
			wins[winKey{string(inner), start}] = true
		}
	}
	size, n := int64(0), 0
	for r := range output.each() {
		k := string(r.RawKey)
		at, slash := strings.LastIndexByte(k, '@'), strings.LastIndexByte(k, '/')
		if len(k) < 2 || k[0] != '[' || k[len(k)-1] != ']' || at < 1 || slash < at {
			return 0, "", false
		}
		start, err1 := strconv.ParseInt(k[at+1:slash], 10, 64)
		end, err2 := strconv.ParseInt(k[slash+1:len(k)-1], 10, 64)
		if err1 != nil || err2 != nil || end <= start || size != 0 && end-start != size || !wins[winKey{k[1:at], start}] {
			return 0, "", false
		}
		size, n = end-start, n+1
	}
	if n < MinKeys {
		return 0, "", false
	}
	return size, fmt.Sprintf("each of the %d output records is keyed by a window of the store, %s long (Windowed#toString)", n, Millis(size)), true
}

// RekeyForWindow stands in for a windowed store's repartition copies
// when they are purged (Streams deletes them once committed): the source
// records under the key the changelog's windows hold. That key is one
// constant no source record has as its key (selectKey((k, v) -> "temp"),
// Kafka's TemperatureDemo), the record key itself, or a value field, for
// at least 90 % of the source records (and at least 5). The records come
// in one partition per key, ordered by timestamp (the copies' order on
// their partition, which the purge took, is about the order the source
// tasks wrote them in). The select_key guess says which; nil when none
// fits.
func RekeyForWindow(source, changelog *Topic) (*Topic, Guess) {
	if source == nil || changelog == nil {
		return nil, Guess{Evidence: "the source or the changelog was not read"}
	}
	inner := map[string]bool{}
	for r := range changelog.each() {
		if k, _, _, ok := SplitWindowKey(r.RawKey); ok {
			inner[string(k)] = true
		}
	}
	var recs []*Rec
	for r := range source.each() {
		if r.Value != nil {
			recs = append(recs, r)
		}
	}
	if len(inner) == 0 || len(recs) < MinKeys {
		return nil, Guess{Evidence: fmt.Sprintf("%d source records and %d window keys: too few", len(recs), len(inner))}
	}
	keyOf := map[string]func(*Rec) ([]byte, bool){}
	if len(inner) == 1 {
		for k := range inner {
			if !slices.ContainsFunc(recs, func(r *Rec) bool { return string(r.RawKey) == k }) && utf8.ValidString(k) {
				keyOf[strconv.Quote(k)] = func(*Rec) ([]byte, bool) { return []byte(k), true }
			}
		}
	}
	keyOf["key"] = func(r *Rec) ([]byte, bool) { return r.RawKey, r.RawKey != nil }
	var paths [][]string
	leafPaths(recs[0].Value, nil, &paths)
	for _, p := range paths {
		keyOf["value."+strings.Join(p, ".")] = func(r *Rec) ([]byte, bool) {
			s, ok := walk(r.Value, p).(string)
			return []byte(s), ok
		}
	}
	best, bestN := "", 0
	for _, sel := range slices.Sorted(maps.Keys(keyOf)) {
		n := 0
		for _, r := range recs {
			if k, ok := keyOf[sel](r); ok && inner[string(k)] {
				n++
			}
		}
		if n > bestN {
			best, bestN = sel, n
		}
	}
	if bestN*10 < len(recs)*9 {
		return nil, Guess{Evidence: fmt.Sprintf("no key the source records carry is a window's key for 90 %% of them (best: %s, %d/%d)", cmp.Or(best, "none"), bestN, len(recs))}
	}
	out := &Topic{Name: source.Name + "(rekeyed)", Parts: map[int32][]Rec{}, Whole: map[int32]bool{}, Full: map[int32]bool{}}
	parts := map[string]int32{}
	for _, r := range recs {
		k, ok := keyOf[best](r)
		if !ok {
			continue
		}
		p, seen := parts[string(k)]
		if !seen {
			p = int32(len(parts))
			parts[string(k)] = p
		}
		c := *r
		c.RawKey = k
		out.Parts[p] = append(out.Parts[p], c)
	}
	out.Partitions = int32(len(parts))
	for p, rs := range out.Parts {
		slices.SortStableFunc(rs, func(a, b Rec) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
		out.Whole[p], out.Full[p] = true, true
	}
	ev := fmt.Sprintf("%d/%d source records carry this key, the windows' keys", bestN, len(recs))
	if best == "key" {
		return out, Guess{Value: "key", Evidence: ev}
	}
	return out, Guess{Value: best, Evidence: ev}
}

// CheckWindow measures how many windows a windowed table's window and
// reducer explain (see GuessWindow) beside the other reducers with the
// same window and the best window GuessWindow finds: the spec is
// contradicted by the rule of CheckTable (an alternative explains
// MinMargin more windows, or twice as many). The windows checked are
// those of the partitions read whole and to the end on both sides (the
// repartition copies, else the source without steps, and the changelog,
// partition by partition: a task's); with too few, or with inputs that
// are not known (steps without a hop, the copies purged), the verdict's
// Note says the window was not checked.
func CheckWindow(pt spec.PlannedTable, ev *Evidence) Verdict {
	v := Verdict{Name: pt.Name, Explained: map[string]int{}, of: "windows"}
	t := pt.Spec
	if t == nil || t.Window == nil {
		v.Note = "windowed: no window to check"
		return v
	}
	v.Spec = windowText(t.Window.Size, t.Window.Advance) + ", " + t.Reducer.String()
	in := ev.Topics[pt.Repartition]
	switch {
	case pt.Repartition == "" && (t.HasSteps() || len(pt.Merged) > 0):
		v.Note = "windowed: not checked against the evidence (its steps before the window: the audit judges each window)"
		return v
	case pt.Repartition == "":
		in = ev.Topics[pt.Source]
	}
	cl := ev.Topics[pt.Changelog]
	if in == nil || cl == nil || in.KeyMod > 1 || cl.KeyMod > 1 {
		v.Note = "windowed: not checked against the evidence (its inputs or changelog were not read whole: the audit judges each window)"
		return v
	}
	// the partitions read whole on both sides
	subIn := &Topic{Name: in.Name, Parts: map[int32][]Rec{}, Whole: map[int32]bool{}, Full: map[int32]bool{}, Partitions: in.Partitions}
	subCl := &Topic{Name: cl.Name, Parts: map[int32][]Rec{}, Whole: map[int32]bool{}, Full: map[int32]bool{}, Partitions: cl.Partitions}
	for p, rs := range cl.Parts {
		if ins, ok := in.Parts[p]; ok && in.Whole[p] && in.Full[p] && cl.Full[p] {
			subIn.Parts[p], subIn.Whole[p], subIn.Full[p] = ins, true, true
			subCl.Parts[p], subCl.Whole[p], subCl.Full[p] = rs, cl.Whole[p], true
		}
	}
	final, part, _, _ := finalWindows(subCl)
	v.Keys = len(final)
	all := func([]byte) bool { return true }
	wins := windowsOf(subIn, t.Window, all)
	var values []any
	for r := range subIn.each() {
		if r.RawKey != nil && r.Value != nil {
			values = append(values, r.Value)
		}
	}
	score := func(ts *spec.TableSpec, w map[winKey][]winInput) int {
		e, n := scoreWindows(ts, w, final, part, subCl.Whole)
		v.Keys = max(v.Keys, n)
		return e
	}
	v.Explained[v.Spec] = score(t, wins)
	for _, red := range windowReducers(values) {
		name := windowText(t.Window.Size, t.Window.Advance) + ", " + red
		if rd, err := spec.ParseReducer(red); err == nil && name != v.Spec {
			v.Explained[name] = score(&spec.TableSpec{Reducer: rd}, wins)
		}
	}
	if g := GuessWindow(subIn, subCl); g.Size > 0 {
		name := windowText(g.Size, g.Advance) + ", " + g.Reduce
		if _, ok := v.Explained[name]; !ok {
			if rd, err := spec.ParseReducer(g.Reduce); err == nil {
				v.Explained[name] = score(&spec.TableSpec{Reducer: rd}, windowsOf(subIn, &spec.Window{Size: g.Size, Advance: g.Advance}, all))
			}
		}
	}
	v.decide("table")
	return v
}
