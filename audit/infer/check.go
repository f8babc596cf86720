package infer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
)

// Evidence is what the checks read: topics by name, decoded.
type Evidence struct {
	Topics map[string]*Topic
}

// MaxRecords bounds the records Load keeps of one repartition, changelog
// or output topic: it reads the partitions 0, 1, … that fit (at least
// one), the same numbers in every topic, and where one partition holds
// more, a sample of the keys (the same in every topic), so a key's
// copies, states and output are kept together.
const MaxRecords = 20_000

// Load reads the evidence the checks of plan need: the first records of
// each source (their fields), and the repartition, changelog and output
// topics of its tables and joins, bounded by max records a topic (0:
// MaxRecords).
func Load(ctx context.Context, src audit.RecordSource, dec audit.Decoder, plan *spec.Plan, max int) (*Evidence, error) {
	var hops, sources []string
	for _, t := range plan.Tables {
		if t.Spec != nil && (t.Spec.Regroup != "" || len(t.Spec.Cogroup) > 0) {
			continue // a KTable groupBy's change records, a cogroup's members: the audit's
		}
		if t.Repartition == "" {
			hops = append(hops, t.Source)
		} else {
			hops = append(hops, t.Repartition)
		}
		hops = append(hops, t.Changelog)
		sources = append(sources, t.Source)
	}
	for _, j := range plan.Joins {
		hops = append(hops, j.Output)
	}
	return LoadTopics(ctx, src, dec, hops, sources, max, fieldSample)
}

// LoadTopics reads hops (topics keyed by the tables' keys: repartition,
// changelog, output) bounded by max records each as Load does, and the
// first perSource records of each partition of sources. Topics that do
// not exist are left out.
func LoadTopics(ctx context.Context, src audit.RecordSource, dec audit.Decoder, hops, sources []string, max, perSource int) (*Evidence, error) {
	if max <= 0 {
		max = MaxRecords
	}
	ev := &Evidence{Topics: map[string]*Topic{}}
	parts, mod, err := partitionsFitting(ctx, src, hops, max)
	if err != nil {
		return nil, err
	}
	// each topic once, as first listed; read up to GOMAXPROCS at once, the
	// first error in that order returned
	type job struct {
		topic string
		o     ReadOptions
		t     *Topic
		err   error
	}
	var jobs []*job
	seen := map[string]bool{}
	add := func(topics []string, o ReadOptions) {
		for _, topic := range topics {
			if topic != "" && !seen[topic] {
				seen[topic] = true
				jobs = append(jobs, &job{topic: topic, o: o})
			}
		}
	}
	add(hops, ReadOptions{Partitions: parts, KeyMod: mod})
	add(sources, ReadOptions{PerPartition: perSource, undigested: true})
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, jb := range jobs {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			jb.t, jb.err = Read(ctx, src, dec, jb.topic, jb.o)
		})
	}
	wg.Wait()
	for _, jb := range jobs {
		switch {
		case errors.Is(jb.err, audit.ErrTopicNotFound):
		case jb.err != nil:
			return nil, jb.err
		default:
			ev.Topics[jb.topic] = jb.t
		}
	}
	return ev, nil
}

// partitionsFitting picks the partitions 0…k whose records, summed over
// the topics, stay under max per topic (at least partition 0), and the
// key sample (KeyMod) that brings the largest topic's records in them
// under max; nil partitions when every one fits.
func partitionsFitting(ctx context.Context, src audit.RecordSource, topics []string, max int) ([]int32, uint64, error) {
	var counts [][]int64
	for _, topic := range topics {
		n, err := src.Partitions(ctx, topic)
		if errors.Is(err, audit.ErrTopicNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, fmt.Errorf("count the records of %s: %w", topic, err)
		}
		c := make([]int64, n)
		for p := range n {
			offs, err := src.Offsets(ctx, audit.TopicPartition{Topic: topic, Partition: p})
			if err != nil {
				return nil, 0, fmt.Errorf("count the records of %s/%d: %w", topic, p, err)
			}
			c[p] = offs.HW - offs.LogStart
		}
		counts = append(counts, c)
	}
	sumOf := func(c []int64, parts []int32) int64 {
		var sum int64
		for _, q := range parts {
			if int(q) < len(c) {
				sum += c[q]
			}
		}
		return sum
	}
	var parts []int32
	all := false
	for _, c := range counts {
		if len(c) != len(counts[0]) {
			// not co-partitioned: partition p holds other keys in each
			// topic, so only a sample of keys keeps them together
			all = true
			n := 0
			for _, d := range counts {
				if len(d) > n {
					n = len(d)
				}
			}
			for p := range n {
				parts = append(parts, int32(p))
			}
			break
		}
	}
	for p := int32(0); !all; p++ {
		fits, any := true, false
		for _, c := range counts {
			if int(p) >= len(c) {
				continue
			}
			any = true
			if sumOf(c, parts)+c[p] > int64(max) {
				fits = false
			}
		}
		if !any {
			all = true
			break
		}
		if !fits && len(parts) > 0 {
			break
		}
		parts = append(parts, p)
		if !fits {
			break
		}
	}
	var biggest int64
	for _, c := range counts {
		biggest = maxOf(biggest, sumOf(c, parts))
	}
	mod := uint64(1)
	if biggest > int64(max) {
		mod = uint64((biggest + int64(max) - 1) / int64(max))
	}
	if all {
		parts = nil
	}
	return parts, mod, nil
}

func maxOf(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// Rule: the minimum sample and margin by which an alternative must
// explain more keys than the spec's reducer (or join value) for the table
// (join) not to be judged.
const (
	// MinKeys is the fewest keys with complete evidence a check needs.
	MinKeys = 5
	// MinMargin is how many more keys an alternative must explain.
	MinMargin = 3
)

// Verdict is the outcome of checking one table's reducer or one join's
// value against the evidence.
type Verdict struct {
	Name string // the table, or the join's output
	// Keys is how many keys had the evidence to check.
	Keys int
	// Spec is what the spec says (latest, sum(amount), the join's value).
	Spec string
	// Explained is how many of Keys each candidate explains, by name;
	// Order lists the candidates, best first.
	Explained map[string]int
	Order     []string
	// Unjudged says why the table (join) must not be judged; "" judges it.
	Unjudged string
	// Note says what the check could not do (too few keys).
	Note string
	// of is what a key's evidence is: "keys' histories", "output keys".
	of string
	// twoRestarts counts the keys whose history the spec's reducer
	// explains with no fewer than two restarts from a raw input.
	twoRestarts int
}

// Summary says, in one line, how the spec and the best alternatives
// explain the evidence.
func (v Verdict) Summary() string {
	if v.Keys == 0 {
		return v.Note
	}
	parts := []string{fmt.Sprintf("%s explains %d of %d %s", v.Spec, v.Explained[v.Spec], v.Keys, cmp.Or(v.of, "keys' histories"))}
	for _, c := range v.Order {
		if c == v.Spec || len(parts) >= 3 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s explains %d", c, v.Explained[c]))
	}
	return strings.Join(parts, "; ")
}

// decide applies the rule to a verdict whose counts are filled in.
func (v *Verdict) decide(what string) {
	v.Order = v.Order[:0]
	for c := range v.Explained {
		v.Order = append(v.Order, c)
	}
	sort.Slice(v.Order, func(i, j int) bool {
		a, b := v.Order[i], v.Order[j]
		if v.Explained[a] != v.Explained[b] {
			return v.Explained[a] > v.Explained[b]
		}
		if (a == v.Spec) != (b == v.Spec) {
			return a == v.Spec
		}
		return a < b
	})
	if v.Keys < MinKeys {
		v.Note = fmt.Sprintf("%s %s not checked against the evidence: %d keys have complete evidence (want %d)", what, v.Name, v.Keys, MinKeys)
		return
	}
	best := v.Order[0]
	e, b := v.Explained[v.Spec], v.Explained[best]
	if best == "latest" && v.Spec != "latest" && v.twoRestarts < MinMargin {
		// a store reset (KAFKA-16017) restarts a key's fold from a raw
		// input, which looks like latest: that latest explains more keys
		// proves the spec wrong only where keys' histories restart from a
		// raw input twice or more (a reset makes one restart)
		return
	}
	if best != v.Spec && b > e && (b-e >= MinMargin || 2*e < b) {
		v.Unjudged = fmt.Sprintf("%s %s is not judged: the spec does not describe the app: %s", what, v.Name, v.Summary())
	}
}

// history is one key's inputs in apply order and its changelog states.
type history struct {
	inputs []val
	states []val
	parts  map[int32][]val // inputs per source partition (from the source)
	// all is every changelog state, when states holds only the final one
	all []val
}

// rawStates counts the states after a key's first that equal one of its
// inputs as is.
func rawStates(h *history) int {
	n := 0
	for i, st := range h.all {
		if i == 0 {
			continue
		}
		for _, in := range h.inputs {
			if st.same(in) {
				n++
				break
			}
		}
	}
	return n
}

// tableHistories groups a table's copies (the repartition topic's, or the
// source's when nothing repartitions) and its changelog states by key,
// for the keys whose copies were read whole, in the keys' order.
func tableHistories(pt spec.PlannedTable, ev *Evidence) []*history {
	copies := ev.Topics[cmp.Or(pt.Repartition, pt.Source)]
	changelog := ev.Topics[pt.Changelog]
	if copies == nil || changelog == nil {
		return nil
	}
	hs := map[string]*history{}
	var keys []string
	for p, rs := range copies.Parts {
		if !copies.Whole[p] {
			continue
		}
		for i := range rs {
			r := &rs[i]
			if r.Undecodable || r.Key == nil || r.Value == nil {
				continue // Streams skips null values in reduce
			}
			k := keyOf(r.Key)
			h := hs[k]
			if h == nil {
				h = &history{}
				hs[k] = h
				keys = append(keys, k)
			}
			h.inputs = append(h.inputs, r.value())
		}
	}
	for _, rs := range changelog.Parts {
		for i := range rs {
			r := &rs[i]
			if r.Undecodable || r.Key == nil || r.Value == nil {
				continue
			}
			if h := hs[keyOf(r.Key)]; h != nil {
				h.states = append(h.states, r.value())
			}
		}
	}
	var out []string
	for _, k := range keys {
		if len(hs[k].states) > 0 {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return inOrder(hs, out)
}

// inOrder is the histories of keys, in their order.
func inOrder(hs map[string]*history, keys []string) []*history {
	out := make([]*history, len(keys))
	for i, k := range keys {
		out[i] = hs[k]
	}
	return out
}

// explains reports whether folding inputs with t gives states as a
// subsequence of its states (caching and compaction skip states, never
// reorder them); err when the reducer fails on an input.
func explains(t *spec.TableSpec, h *history) (bool, error) {
	var agg any
	j := 0
	for i, in := range h.inputs {
		next, err := t.Reduce(agg, in.v, i == 0)
		if err != nil {
			return false, err
		}
		agg = next
		if j < len(h.states) {
			a := folded(agg, in)
			for j < len(h.states) && h.states[j].same(a) {
				j++
			}
		}
	}
	return j == len(h.states), nil
}

// folded is a fold's aggregate with its digest: the input's where the
// aggregate is the input itself (latest, a sum's first input; reducers
// build new values and never change their inputs).
func folded(agg any, in val) val {
	if identical(agg, in.v) {
		return val{agg, in.d}
	}
	return valOf(agg)
}

// identical reports whether a is b itself: the same map, or the same
// string or number.
func identical(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		y, ok := b.(json.Number)
		return ok && x == y
	}
	return false
}

// explainsRestarting is explains allowing the fold to restart from the
// raw input up to restarts times: the shape a store reset leaves.
func explainsRestarting(t *spec.TableSpec, h *history, restarts int) (bool, error) {
	var agg any
	j := 0
	for i, in := range h.inputs {
		next, err := t.Reduce(agg, in.v, i == 0)
		if err != nil {
			return false, err
		}
		agg = next
		if j == len(h.states) {
			continue
		}
		a := folded(agg, in)
		if !h.states[j].same(a) && h.states[j].same(in) && restarts > 0 {
			agg, a = in.v, in
			restarts--
		}
		for j < len(h.states) && h.states[j].same(a) {
			j++
		}
	}
	return j == len(h.states), nil
}

// Candidates lists the reducers the evidence is tried with: latest,
// count and sum(F) for each numeric field F of the inputs.
func Candidates(inputs []any) []string {
	out := []string{"latest", "count"}
	nums := map[string]bool{}
	for _, v := range inputs {
		m, ok := v.(map[string]any)
		if !ok {
			if isNumber(v) {
				nums[""] = true
			}
			continue
		}
		for k, x := range m {
			if isNumber(x) && spec.IsIdent(k) {
				nums[k] = true
			}
		}
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range nums {
			if !yield(k) {
				return
			}
		}
	}) {
		if k == "" {
			out = append(out, "sum")
		} else {
			out = append(out, "sum("+k+")")
		}
	}
	return out
}

// CheckTable measures how many keys' histories the table's reducer and
// each candidate explain. A reducer that fails on the data, or that an
// alternative beats by the rule (MinMargin more keys, or twice as many),
// leaves the table unjudged. Where the repartition copies were purged,
// the keys' final states are checked against their inputs on the source
// instead, when the source was read whole.
func CheckTable(pt spec.PlannedTable, ev *Evidence) Verdict {
	var sel func(Rec) (any, error)
	switch {
	case pt.Spec == nil:
	case pt.Spec.HasSteps() && pt.Unsure != "":
		// a filter's predicate is TODO: only the copies tell which records
		// it kept, so the keys' histories come from the copies alone
	case pt.Spec.HasSteps():
		// the inputs are what the steps emit for the source's records
		if src := ev.Topics[pt.Source]; src != nil {
			els, err := elementsOf(src, pt.Spec.Chain())
			if err != nil {
				return Verdict{Name: pt.Name, Unjudged: fmt.Sprintf("table %s is not judged: its steps fail on the data: %v", pt.Name, err)}
			}
			topics := maps.Clone(ev.Topics)
			topics[pt.Source] = els
			ev = &Evidence{Topics: topics}
		}
		sel = func(r Rec) (any, error) { return r.Key, nil }
	default:
		sel = func(r Rec) (any, error) {
			return pt.Spec.SelectKey(spec.RecordEnv{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp})
		}
	}
	return checkTable(pt, ev, sel)
}

// SelectPath returns the select function of a guessed select_key: the
// record key, or a value path.
func SelectPath(expr string) func(Rec) (any, error) {
	if expr == "" || expr == "key" {
		return func(r Rec) (any, error) { return r.Key, nil }
	}
	path := strings.Split(strings.TrimPrefix(expr, "value."), ".")
	return func(r Rec) (any, error) { return walk(r.Value, path), nil }
}

func checkTable(pt spec.PlannedTable, ev *Evidence, sel func(Rec) (any, error)) Verdict {
	v := Verdict{Name: pt.Name, Explained: map[string]int{}}
	if pt.Spec != nil {
		v.Spec = pt.Spec.Reducer.String()
	}
	hs := tableHistories(pt, ev)
	explain := explains
	final := false
	if len(hs) < MinKeys && sel != nil {
		if fs := sourceHistories(pt, ev, sel); len(fs) > len(hs) {
			hs, explain = fs, explainsFinal
			v.of = "keys' final states (from the source: the repartition topic was purged)"
			final = true
		}
	}
	v.Keys = len(hs)
	var inputs []any
	for _, h := range hs {
		for _, in := range h.inputs {
			inputs = append(inputs, in.v)
		}
	}
	cands := Candidates(inputs)
	if v.Spec != "" && !slices.Contains(cands, v.Spec) {
		cands = append(cands, v.Spec)
	}
	for _, c := range cands {
		var r spec.Reducer
		var err error
		if c == v.Spec && pt.Spec != nil {
			r = pt.Spec.Reducer
		} else if r, err = spec.ParseReducer(c); err != nil {
			continue
		}
		t := &spec.TableSpec{Name: pt.Name, Reducer: r}
		n := 0
		var failed error
		for _, h := range hs {
			ok, err := explain(t, h)
			if err != nil {
				failed = err
				continue
			}
			if ok {
				n++
			}
		}
		if failed != nil && c != v.Spec {
			continue // a candidate that does not fit the data is no candidate
		}
		v.Explained[c] = n
		if c == v.Spec {
			for _, h := range hs {
				if final {
					// inputs' order unknown: states after the first that are
					// raw inputs, twice or more
					if rawStates(h) >= 2 {
						v.twoRestarts++
					}
				} else if ok, _ := explainsRestarting(t, h, 1); !ok {
					v.twoRestarts++
				}
			}
		}
		if failed != nil && c == v.Spec {
			v.Unjudged = fmt.Sprintf("table %s is not judged: its reducer %s fails on the data: %v", pt.Name, c, failed)
		}
	}
	if v.Spec == "" {
		v.Spec = "?"
	}
	u := v.Unjudged
	v.decide("table")
	if u != "" {
		v.Unjudged = u + " (" + v.Summary() + ")"
	}
	return v
}

// sourceHistories gives each key its inputs read from the source (per
// source partition, in offset order: parts) and its final changelog
// state, when every source partition was read whole and to its end, in
// the keys' order.
func sourceHistories(pt spec.PlannedTable, ev *Evidence, sel func(Rec) (any, error)) []*history {
	source, changelog := ev.Topics[pt.Source], ev.Topics[pt.Changelog]
	if source == nil || changelog == nil || source.Partitions == 0 {
		return nil
	}
	for p := range source.Partitions {
		if !source.Whole[p] || !source.Full[p] {
			return nil
		}
	}
	final := finalStates(changelog)
	all := map[string][]val{}
	for _, rs := range changelog.Parts {
		for i := range rs {
			if r := &rs[i]; r.Key != nil && r.Value != nil && !r.Undecodable {
				k := keyOf(r.Key)
				all[k] = append(all[k], r.value())
			}
		}
	}
	hs := map[string]*history{}
	for p := range source.Partitions {
		rs := source.Parts[p]
		for i := range rs {
			r := &rs[i]
			if r.Undecodable || r.Value == nil {
				continue
			}
			k, err := sel(*r)
			if err != nil || k == nil {
				continue
			}
			key := keyOf(k)
			if _, ok := final[key]; !ok {
				continue // a key outside the sample, or never applied
			}
			h := hs[key]
			if h == nil {
				h = &history{parts: map[int32][]val{}}
				hs[key] = h
			}
			in := r.value()
			h.inputs = append(h.inputs, in)
			h.parts[p] = append(h.parts[p], in)
		}
	}
	var keys []string
	for k, h := range hs {
		if f := final[k]; f.v != nil {
			h.states, h.all = []val{f}, all[k]
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return inOrder(hs, keys)
}

// explainsFinal reports whether a key's final state is what its inputs
// (whose order across source partitions is unknown) fold to: for latest,
// the last input of one partition; for the others, the fold in partition
// order, with sum(F) compared on F and otherwise with any input's fields
// (the first input's stay in the aggregate).
func explainsFinal(t *spec.TableSpec, h *history) (bool, error) {
	final := h.states[0]
	switch t.Reducer.Kind {
	case spec.ReduceLatest:
		for _, in := range h.parts {
			if in[len(in)-1].same(final) {
				return true, nil
			}
		}
		return false, nil
	case spec.ReduceExpr, spec.ReduceAggregate:
		return explains(t, h)
	}
	var agg any
	for i, in := range h.inputs {
		next, err := t.Reduce(agg, in.v, i == 0)
		if err != nil {
			return false, err
		}
		agg = next
	}
	if t.Reducer.Field == "" { // sum(F), min(F), max(F) keep the first input's other fields
		return valOf(agg).same(final), nil
	}
	path := strings.Split(t.Reducer.Field, ".")
	if !valOf(walk(agg, path)).same(valOf(walk(final.v, path))) {
		return false, nil
	}
	rest := valOf(without(final.v, path[0]))
	for _, in := range h.inputs {
		if valOf(without(in.v, path[0])).same(rest) {
			return true, nil
		}
	}
	return false, nil
}

// without is a record value without one field.
func without(v any, field string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := make(map[string]any, len(m))
	for k, x := range m {
		if k != field {
			out[k] = x
		}
	}
	return out
}

func isNumber(v any) bool {
	switch v.(type) {
	case interface{ Int64() (int64, error) }, int, int64, float64:
		return true
	}
	return false
}

// CheckSelectKey measures how many repartition copies the table's
// select_key explains (it gives the copy's key from the source record the
// copy matches), against the expression the evidence suggests. A
// select_key that fails on the data, or that the suggestion beats by the
// rule, leaves the table unjudged.
func CheckSelectKey(pt spec.PlannedTable, ev *Evidence) Verdict {
	v := Verdict{Name: pt.Name, Explained: map[string]int{}, of: "repartition copies matched to source records"}
	if pt.Spec == nil || pt.Repartition == "" || ev.Topics[pt.Source] == nil || ev.Topics[pt.Repartition] == nil {
		return v
	}
	v.Spec = cmp.Or(pt.Spec.SelectKeyExpr, "key")
	pairs := MatchCopies(ev.Topics[pt.Source], ev.Topics[pt.Repartition])
	v.Keys = len(pairs)
	var fail error
	for i := range pairs {
		p := &pairs[i]
		k, err := pt.Spec.SelectKey(spec.RecordEnv{Key: p.Src.Key, Value: p.Src.Value, Timestamp: p.Src.Timestamp})
		if err != nil {
			fail = err
			continue
		}
		if valOf(k).same(p.Copy.key()) {
			v.Explained[v.Spec]++
		}
	}
	if g := GuessSelectKey(pairs, true); g.Value != "" && g.Value != v.Spec {
		n := 0
		for i := range pairs {
			p := &pairs[i]
			var k val
			if g.Value == "key" {
				k = p.Src.key()
			} else {
				k = valOf(walk(p.Src.Value, strings.Split(strings.TrimPrefix(g.Value, "value."), ".")))
			}
			if k.same(p.Copy.key()) {
				n++
			}
		}
		v.Explained[g.Value] = n
	} else if _, ok := v.Explained[v.Spec]; !ok {
		v.Explained[v.Spec] = 0
	}
	v.decide("table")
	if fail != nil {
		v.Unjudged = fmt.Sprintf("table %s is not judged: its select_key fails on the data: %v (%s)", pt.Name, fail, v.Summary())
	}
	return v
}
