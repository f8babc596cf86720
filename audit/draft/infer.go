package draft

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/discovery"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/infer"
)

// initRecords bounds the records kaudit init keeps of each topic (a
// sample of the keys beyond, as the spec check does).
const initRecords = 200_000

// inferred is what kaudit init learned from the evidence.
type inferred struct {
	keySerde, valueSerde infer.Guess
	ev                   *infer.Evidence
	plan                 *spec.Plan // the drafted tables, for the join checks
	dec                  *codec.Codec
	notes                []string
	foundJoins           bool // joins found without a topology
	// storeSerde is, per changelog whose values are of another serde
	// than the streams' (a count's Longs beside String values), its own
	storeSerde map[string]infer.Guess
	// raw are the candidate outputs read undecoded, by name (rawRead)
	raw map[string]*infer.Topic
	// topicSerde is, where the app's topics hold values of different
	// formats (an Avro table beside JSON streams: no one serde decodes
	// them all), each topic's own serde, as its values show it
	topicSerde map[string]infer.Guess
}

// rawRead reads a candidate output's first records undecoded, once for
// every table that looks for its output.
func (inf *inferred) rawRead(ctx context.Context, src audit.Source, name string) (*infer.Topic, error) {
	if t, ok := inf.raw[name]; ok {
		return t, nil
	}
	t, err := infer.Read(ctx, src, nil, name, infer.ReadOptions{PerPartition: initRecords})
	if err != nil {
		return nil, err
	}
	if inf.raw == nil {
		inf.raw = map[string]*infer.Topic{}
	}
	inf.raw[name] = t
	return t, nil
}

// inferTables reads the evidence of the drafted tables and fills in what
// it shows: the serdes, each table's source, select_key and reducer.
func inferTables(ctx context.Context, o Options, src audit.Source, tables []draftTable, outputs []string) (*inferred, error) {
	inf := &inferred{}
	var topics []string
	add := func(t string) {
		if t != "" && !slices.Contains(topics, t) {
			topics = append(topics, t)
		}
	}
	for _, t := range tables {
		add(t.repartition)
		add(t.changelog)
	}
	for _, out := range outputs {
		add(out)
	}
	var sources []string
	for _, t := range tables {
		for _, src := range append([]string{t.source}, t.merged...) {
			if src != "" && !slices.Contains(sources, src) {
				sources = append(sources, src)
			}
		}
		for _, c := range t.candidates {
			if !slices.Contains(sources, c) {
				sources = append(sources, c)
			}
		}
	}
	sm, err := inf.readSamples(ctx, src, tables, topics, sources, outputs)
	if err != nil {
		return nil, err
	}
	if sm.read == 0 {
		return nil, nil // nothing to infer from
	}
	if err := inf.guessSerdes(ctx, o, src, sm); err != nil {
		return nil, err
	}
	ev, err := inf.loadEvidence(ctx, o, src, topics, sources, sm.windowedTopics)
	switch {
	case err != nil:
		return nil, err
	case ev == nil:
		return inf, nil // the evidence was not read: a note says why
	}
	inf.inferEach(o, tables, ev)
	slices.Sort(inf.notes)
	return inf, nil
}

// samples are the first records of every topic the draft reads, for its
// serdes: the keys of the app's own topics (sources may be keyed
// otherwise), the values of all, by what holds them.
type samples struct {
	keys, vals [][]byte
	outVals    [][]byte            // the outputs': a table's output has its store's serde
	stateVals  map[string][][]byte // per changelog: a store's values may be of their own serde
	topicVals  map[string][][]byte // the streams' values, per topic
	// windowedTopics are the window stores' changelogs and the outputs
	// keyed by windows: their keys are not the serde's alone (the audit
	// reads them as windows; here they are not decoded)
	windowedTopics map[string]bool
	read           int // the topics read
}

// readSamples reads the first records of the tables' topics, the
// outputs and the sources; a topic not read is a note.
func (inf *inferred) readSamples(ctx context.Context, src audit.Source, tables []draftTable, topics, sources, outputs []string) (*samples, error) {
	sm := &samples{stateVals: map[string][][]byte{}, topicVals: map[string][][]byte{}, windowedTopics: map[string]bool{}}
	changelogs := map[string]bool{}
	for _, t := range tables {
		if t.changelog != "" {
			changelogs[t.changelog] = true
		}
	}
	innerKeys := map[string]bool{} // the keys inside window stores' keys
	// the changelogs first: a windowed output's key (the key's bytes and
	// an 8-byte start) is cut to its inner key only once the window
	// store's changelog has shown that key, whatever order the topics
	// were listed in (AB's V14: read first, every output key was sampled
	// whole and the whole app's keys guessed bytes)
	order := append(slices.Clone(topics), sources...)
	slices.SortStableFunc(order, func(a, b string) int {
		switch {
		case changelogs[a] && !changelogs[b]:
			return -1
		case changelogs[b] && !changelogs[a]:
			return 1
		}
		return 0
	})
	for _, topic := range order {
		t, err := infer.Read(ctx, src, nil, topic, infer.ReadOptions{PerPartition: 1000})
		switch {
		case errors.Is(err, audit.ErrTopicNotFound):
			inf.notes = append(inf.notes, "topic "+topic+" does not exist")
			continue
		case err != nil && ctx.Err() != nil:
			return nil, err
		case err != nil:
			inf.notes = append(inf.notes, "not read: "+err.Error())
			continue
		}
		sm.read++
		windowed := false
		if changelogs[topic] {
			windowed, _ = infer.WindowedChangelog(t) // only a store's changelog holds window keys
		}
		sm.windowedTopics[topic] = windowed
		for _, r := range t.Records() {
			if !slices.Contains(sources, topic) {
				// a window store's keys and a windowed output's (the
				// key, the start) hold the key's bytes: those are its serde's
				k := r.RawKey
				if in, _, _, ok := infer.SplitWindowKey(k); ok && windowed {
					k = in
					innerKeys[string(in)] = true
				} else if len(k) > 8 && innerKeys[string(k[:len(k)-8])] && slices.Contains(outputs, topic) {
					k = k[:len(k)-8]
					sm.windowedTopics[topic] = true
				}
				sm.keys = append(sm.keys, k)
			}
			if changelogs[topic] {
				sm.stateVals[topic] = append(sm.stateVals[topic], r.RawValue)
				continue
			}
			if slices.Contains(outputs, topic) {
				sm.outVals = append(sm.outVals, r.RawValue) // a table's output has its store's serde
				continue
			}
			sm.vals = append(sm.vals, r.RawValue)
			sm.topicVals[topic] = append(sm.topicVals[topic], r.RawValue)
		}
	}
	return sm, nil
}

// guessSerdes guesses the app's serdes from the samples (the caller's
// where it names them), a store's own where its values are binary Longs,
// each topic's own where no one serde decodes every stream's values, and
// builds the decoder the evidence is read with.
func (inf *inferred) guessSerdes(ctx context.Context, o Options, src audit.Source, sm *samples) error {
	keys, vals, outVals, stateVals, topicVals := sm.keys, sm.vals, sm.outVals, sm.stateVals, sm.topicVals
	inf.keySerde, inf.valueSerde = infer.GuessSerde(keys, nil), infer.GuessSerde(vals, nil)
	if len(vals) == 0 {
		all := outVals
		for _, v := range stateVals {
			all = append(all, v...)
		}
		inf.valueSerde = infer.GuessSerde(all, nil)
	}
	if inf.valueSerde.Value == "bytes" && len(inf.valueSerde.Candidates) > 0 && o.ValueSerde == "" {
		// no one serde decodes every stream's values: each topic its own,
		// the app's the most topics share
		inf.topicSerde = map[string]infer.Guess{}
		count := map[string]int{}
		for topic, vs := range topicVals {
			if g := infer.GuessSerde(vs, nil); g.Value != "bytes" {
				inf.topicSerde[topic] = g
				count[g.Value]++
			}
		}
		best := ""
		for _, v := range slices.Sorted(maps.Keys(count)) {
			if count[v] > count[best] {
				best = v
			}
		}
		if best != "" {
			inf.valueSerde = infer.Guess{Value: best, Evidence: fmt.Sprintf("the values of %d of the %d topics read (the others' have serdes of their own)", count[best], len(topicVals))}
		}
		for topic, g := range inf.topicSerde {
			if g.Value == best {
				delete(inf.topicSerde, topic)
			}
		}
	}
	// a store whose values are of another serde than the streams' (a
	// count's Longs, a JSON aggregate of Avro streams): its own
	// store_serdes, which its output shares
	isFramed := func(v string) bool {
		return v == codec.SerdeAvro || v == codec.SerdeJSONSchema || v == codec.SerdeProtobuf
	}
	for cl, vs := range stateVals {
		// binary Longs (count, a Long sum) tell a serde apart from the
		// streams' for sure (a JSON number is text as well); so does a
		// store of unframed values behind Confluent-framed streams, or of
		// framed values behind unframed ones (a builder.table of Avro
		// beside JSON streams): the app's serde cannot read them (AB's V13)
		g := infer.GuessSerde(vs, nil)
		own := g.Value == "long" || g.Value != "" && g.Value != "bytes" && isFramed(g.Value) != isFramed(inf.valueSerde.Value)
		// (equal to the app's, it is still its own where topics have
		// serdes of their own: a table's serdes would otherwise cover its
		// changelog, as an Avro source's did a session count's Longs)
		if own && (g.Value != inf.valueSerde.Value || len(inf.topicSerde) > 0) && len(vals) > 0 {
			if inf.storeSerde == nil {
				inf.storeSerde = map[string]infer.Guess{}
			}
			inf.storeSerde[cl] = g
		}
	}
	if o.KeySerde != "" {
		inf.keySerde = infer.Guess{Value: o.KeySerde, Evidence: "--key-serde"}
	}
	if o.ValueSerde != "" {
		inf.valueSerde = infer.Guess{Value: o.ValueSerde, Evidence: "--value-serde"}
	}
	cfg := o.Codec
	cfg.KeySerde, cfg.ValueSerde = cmp.Or(inf.keySerde.Value, "bytes"), cmp.Or(inf.valueSerde.Value, "bytes")
	if len(inf.storeSerde)+len(inf.topicSerde) > 0 {
		cfg.Topics = maps.Clone(cfg.Topics)
		if cfg.Topics == nil {
			cfg.Topics = map[string]codec.TopicSerdes{}
		}
		for topic, g := range inf.topicSerde {
			cfg.Topics[topic] = codec.TopicSerdes{Value: g.Value}
		}
		for cl, g := range inf.storeSerde {
			cfg.Topics[cl] = codec.TopicSerdes{Value: g.Value}
		}
	}
	dec, err := codec.NewWithSchemas(cfg, audit.SchemasOf(src))
	if err != nil {
		return err
	}
	inf.dec = dec
	// Avro and Protobuf look alike: their schemas' types tell them apart
	valRaws := vals
	if len(vals) == 0 {
		valRaws = outVals
		for _, v := range stateVals {
			valRaws = append(valRaws, v...)
		}
	}
	if o.KeySerde == "" {
		inf.keySerde = infer.RefineFramed(ctx, dec, keys, inf.keySerde)
	}
	if o.ValueSerde == "" {
		inf.valueSerde = infer.RefineFramed(ctx, dec, valRaws, inf.valueSerde)
	}
	return nil
}

// loadEvidence reads the records the inference rests on, with the app's
// committed offsets (a source record below them was consumed, so one
// with no copy was rejected by the steps); nil when they could not be
// read (a note says why).
func (inf *inferred) loadEvidence(ctx context.Context, o Options, src audit.Source, topics, sources []string, windowedTopics map[string]bool) (*infer.Evidence, error) {
	ev, err := infer.LoadTopics(ctx, src, inf.dec, topics, sources, initRecords, initRecords)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		inf.notes = append(inf.notes, "the evidence was not read: "+err.Error())
		return nil, nil
	}
	inf.ev = ev
	// the app's committed offsets: a source record below them was
	// consumed, so one with no copy was rejected by the steps
	if g, err := src.GroupOffsets(ctx, o.AppID); err == nil {
		for tp, off := range g.Offsets {
			if t := ev.Topics[tp.Topic]; t != nil {
				if t.Committed == nil {
					t.Committed = map[int32]int64{}
				}
				t.Committed[tp.Partition] = off
			}
		}
	} else if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for _, t := range ev.Topics {
		if t.Undecodable > 0 && !windowedTopics[t.Name] {
			inf.notes = append(inf.notes, fmt.Sprintf("%d records of %s could not be decoded (the first: %v)", t.Undecodable, t.Name, t.FirstError))
		}
	}
	return ev, nil
}

// inferEach infers each table's source, steps, key and reducer from the
// evidence, then each KTable groupBy from the table it re-groups.
func (inf *inferred) inferEach(o Options, tables []draftTable, ev *infer.Evidence) {
	inf.plan = &spec.Plan{AppID: o.AppID}
	names := map[string]bool{}
	for _, t := range tables {
		names[t.name] = true
	}
	for i := range tables {
		t := &tables[i]
		t.evSource = t.source
		if len(t.merged) > 0 {
			// a merged stream's records are those of every source topic
			t.evSource = strings.Join(append([]string{t.source}, t.merged...), "+")
			var ts []*infer.Topic
			for _, n := range append([]string{t.source}, t.merged...) {
				ts = append(ts, ev.Topics[n])
			}
			ev.Topics[t.evSource] = infer.Union(t.evSource, ts...)
		}
		if t.regroupOf != "" {
			continue // once the table it re-groups is inferred (below)
		}
		inferTable(t, ev)
		if t.name == t.store && t.source != "" && !names[t.source] {
			// named after its source, as with a topology
			delete(names, t.name)
			t.name, names[t.source] = t.source, true
		}
		if t.store != "" { // not a stream join's side
			inf.plan.Tables = append(inf.plan.Tables, spec.PlannedTable{Name: t.name, Source: t.source, Repartition: t.repartition, Store: t.store, Changelog: t.changelog})
		}
	}
	for i := range tables {
		if t := &tables[i]; t.regroupOf != "" {
			inferRegroup(t, tables, ev)
		}
	}
}

// inferRegroup guesses a KTable groupBy's mapper and aggregation from the
// final states of the table it re-groups (its store's changelog, else the
// topic of a builder.table) and of its own store.
func inferRegroup(t *draftTable, tables []draftTable, ev *infer.Evidence) {
	i := slices.IndexFunc(tables, func(o draftTable) bool { return o.name == t.regroupOf })
	if i < 0 {
		return
	}
	from := tables[i]
	rows := ev.Topics[from.changelog]
	if (rows == nil || rows.Count() == 0) && from.tableSource {
		rows = ev.Topics[from.source]
	}
	g := infer.GuessRegroup(rows, ev.Topics[t.changelog])
	t.regroup = &g
}

// inferTable fills in one table's source, select_key and reducer.
func inferTable(t *draftTable, ev *infer.Evidence) {
	purgedIdentity := false
	copies := ev.Topics[t.repartition]
	if t.repartition != "" && copies != nil && copies.Count() > 0 {
		cands := t.candidates
		if t.source != "" {
			cands = []string{t.source}
		}
		var best []infer.Pair
		bestSrc := ""
		var counts []string
		for _, c := range cands {
			if c == t.source {
				c = t.evSource
			}
			st := ev.Topics[c]
			if st == nil {
				continue
			}
			pairs := infer.MatchCopies(st, copies)
			counts = append(counts, fmt.Sprintf("%s %d", c, len(pairs)))
			if len(pairs) > len(best) {
				best, bestSrc = pairs, c
			}
		}
		n := copies.Count()
		if bestSrc != "" && t.source == "" && len(best) < n && len(cands) > 1 {
			// no topology, and no one source explains every copy: the
			// streams of several may be merged before the re-key
			if srcs, pairs, ok := mergedSources(ev, cands, copies, len(best)); ok {
				t.source, t.merged = srcs[0], srcs[1:]
				t.evSource = strings.Join(srcs, "+")
				t.sourceNote = fmt.Sprintf("%d/%d copies on %s match the records of %s by value and timestamp, merged before the re-key (%s)", len(pairs), n, t.repartition, strings.Join(srcs, ", "), strings.Join(counts, ", "))
				t.sourceMatched = [2]int{len(pairs), n}
				best, bestSrc = pairs, ""
			}
		}
		if t.source == "" && len(t.steps) == 0 && t.chain == nil && len(best)*10 < n*9 && splitCopies(t, ev, cands, copies) {
			if t.unseenExtra > 0 && t.unseenExtra == seenNodes(t) {
				t.unseen = "" // the split takes every number left
			}
			return // no topology, and the copies are the words of a split
		}
		switch {
		case bestSrc != "" && t.source == "" && len(best) < n && !partial(ev.Topics[bestSrc]):
			// a source that explains only part of the copies is no
			// source: the table is not judged (a guess judges only what it
			// explains)
			t.sourceNote = fmt.Sprintf("only %d of the %d copies on %s match the records of any one source topic, and of no merge of them (%s)", len(best), n, t.repartition, strings.Join(counts, ", "))
			t.sourceMatched = [2]int{len(best), n}
			return
		case bestSrc != "" && t.source == "":
			t.source = bestSrc
			t.sourceNote = fmt.Sprintf("%d/%d copies on %s match its records by value and timestamp (%s)", len(best), n, t.repartition, strings.Join(counts, ", "))
			t.sourceMatched = [2]int{len(best), n}
		case bestSrc != "":
			t.sourceNote = fmt.Sprintf("%d/%d copies on %s match its records by value and timestamp", len(best), n, t.repartition)
			t.sourceMatched = [2]int{len(best), n}
		}
		if len(t.steps) == 0 && t.chain == nil && len(best)*10 < n*9 && splitCopies(t, ev, cands, copies) {
			return // no topology, and the copies are the words of a split
		}
		if t.rekeyed || t.repartition != "" {
			t.selectKey = infer.GuessSelectKey(best, t.rekeyed)
		}
		inferSteps(t, ev, best)
		if t.chain == nil && t.unseen != "" && len(t.steps) == 0 && t.source != "" && len(best) > 0 {
			unseenFilter(t, ev, best)
		}
	}
	if t.chain == nil && t.unseen != "" && t.unseenExtra > 0 && t.unseenExtra == seenNodes(t) {
		// the steps the evidence shows take every number left
		t.unseen = ""
	}
	if cl := ev.Topics[t.changelog]; cl != nil && !t.tableSource {
		if ok, why := infer.WindowedChangelog(cl); ok {
			inferWindow(t, ev, why)
			return
		}
	}
	if t.repartition == "" && !t.tableSource {
		changelogSteps(t, ev)
	}
	if t.repartition != "" && (copies == nil || copies.Count() == 0) && ev.Topics[t.changelog] != nil {
		// the copies were purged: the source whose records' field is a
		// key of the changelog
		cands := t.candidates
		if t.source != "" {
			cands = []string{t.source}
		}
		bestN := 0
		for _, c := range cands {
			g, n := infer.GuessSelectKeyFromStates(ev.Topics[c], ev.Topics[t.changelog], true)
			if n > bestN || (bestN == 0 && c == t.source) {
				bestN, t.selectKey = n, g
				if t.source == "" && g.Value != "" {
					t.source, t.sourceNote = c, "its records' "+g.Value+" are keys of the changelog"
				}
			}
		}
		if t.selectKey.Value != "" {
			// the source's own records carry the changelog's keys: they
			// reach the store as they are, if the reducer folds them too
			purgedIdentity = true
			identitySteps(t, "the repartition topic is purged; the source records' "+t.selectKey.Value+" are the changelog's keys and the reducer folds them as they are", [2]int{}, nil)
		} else if splitSteps(t, ev, cands) {
			return
		}
	}
	if t.tableSource || t.source == "" || ev.Topics[t.changelog] == nil {
		return
	}
	g := infer.GuessReducer(spec.PlannedTable{Name: t.name, Source: cmp.Or(t.evSource, t.source), Repartition: t.repartition, Store: t.store, Changelog: t.changelog}, ev, t.selectKey.Value)
	t.reduce = &g
	if purgedIdentity && g.Value == "" {
		t.steps = topologySteps(t.chain) // no reducer folds the records as they are: the steps are not known
	}
}

// inferWindow guesses a windowed table's window and reducer from the
// records its window processor read (the repartition copies, else the
// source's) and its store's changelog.
func inferWindow(t *draftTable, ev *infer.Evidence, why string) {
	t.windowNote, t.reduce = why, nil
	in := ev.Topics[cmp.Or(t.evSource, t.source)]
	if t.repartition != "" {
		in = ev.Topics[t.repartition]
	}
	if (t.repartition != "" || t.source == "") && (in == nil || in.Count() == 0) {
		// the copies are purged, or the source is not known (no topology):
		// the source's records under the windows' key; one source topic
		// only, where several carry it (the app's own through() topic and
		// the one before it), none
		cands := t.candidates
		if t.source != "" {
			cands = []string{cmp.Or(t.evSource, t.source)}
		}
		var found []string
		for _, c := range cands {
			keyed, sel := infer.RekeyForWindow(ev.Topics[c], ev.Topics[t.changelog])
			if keyed != nil && t.repartition == "" && sel.Value != "key" {
				keyed = nil // without a repartition the key is the record's own (a new key repartitions)
			}
			if keyed == nil {
				if t.selectKey.Value == "" {
					t.selectKey = sel
				}
				continue
			}
			found = append(found, c)
			if len(found) > 1 {
				t.source, t.selectKey, in = "", infer.Guess{}, nil
				t.sourceNote = "several source topics carry the windows' keys: " + strings.Join(found, ", ")
				continue
			}
			if t.source == "" {
				t.source, t.sourceNote = c, "its records carry the windows' keys: "+sel.Evidence
			}
			if t.repartition != "" {
				sel.Evidence = "the repartition copies are purged; " + sel.Evidence
			}
			t.selectKey, in = sel, keyed
			if t.repartition == "" {
				in = ev.Topics[c] // the task's own partition order: its stream time
			}
		}
	}
	var g infer.WindowGuess
	switch {
	case t.source == "":
		g.Evidence = "its source is not known"
	case in == nil || in.Count() == 0:
		g.Evidence = "the records the window processor read are not readable (" + cmp.Or(t.repartition, t.source) + ")"
	case t.repartition == "" && len(t.steps) > 0:
		g.Evidence = "the steps between the source and the window are not inferred (a window's states are not its inputs)"
	default:
		g = infer.GuessWindow(in, ev.Topics[t.changelog])
		if g.Size == 0 {
			// too few starts to tell the size: an output written under
			// the windows' toString() says it
			for _, name := range slices.Sorted(maps.Keys(ev.Topics)) {
				if name == t.changelog || name == t.source || name == t.repartition {
					continue
				}
				if size, why, ok := infer.WindowSizeFromOutput(ev.Topics[t.changelog], ev.Topics[name]); ok {
					if sized := infer.GuessWindowSized(in, ev.Topics[t.changelog], size); sized.Size > 0 {
						sized.Evidence = name + ": " + why + "; " + sized.Evidence
						g = sized
					}
					break
				}
			}
		}
	}
	t.window = &g
	if g.Size > 0 {
		t.reduce = &infer.Guess{Value: g.Reduce, Evidence: "with the window, " + g.Evidence, Explained: g.Explained, Of: g.Of}
	}
}

// inferJoin guesses a drafted join's type and value.
func (inf *inferred) inferJoin(ctx context.Context, output, left string, rights []string) infer.JoinGuess {
	if inf.ev == nil || inf.plan == nil {
		return infer.JoinGuess{}
	}
	pj := spec.PlannedJoin{Output: output, Left: left, Right: rights}
	return infer.InferJoin(pj, inf.plan, inf.ev, infer.OutputOrder(ctx, inf.ev.Topics[output], inf.dec))
}

// windowedOutputWithoutTopology finds, without a topology, the output of
// a windowed table: the topic the app neither reads nor owns whose keys
// are its windows' (the key's bytes and the start, as
// WindowedSerdes.timeWindowedSerdeFrom writes them) for at least 90 % of
// its records (and at least 5), with the filter before it inferred from
// the states that reached it; nil for none.
func (inf *inferred) windowedOutputWithoutTopology(ctx context.Context, src audit.Source, d *discovery.Discovery, t draftTable, tables []draftTable) *Output {
	if inf.ev == nil {
		return nil // the evidence was not read (a note says why)
	}
	cl := inf.ev.Topics[t.changelog]
	if cl == nil {
		return nil
	}
	windows := map[string]bool{}
	for _, r := range cl.Records() {
		if k, _, _, ok := infer.SplitWindowKey(r.RawKey); ok {
			windows[string(r.RawKey[:len(k)+8])] = true // the key and the start, without the sequence number
		}
	}
	for _, m := range inf.outputsWhere(ctx, src, d, tables, func(r infer.Rec) bool { return windows[string(r.RawKey)] }) {
		name, n, out := m.name, m.n, m.out
		inf.ev.Topics[name] = out
		o := &Output{Topic: name, Evidence: fmt.Sprintf("keyed by its windows: %d/%d records (found without a topology)", n, out.Count())}
		g := infer.GuessWindowedOutputFilter(cl, out)
		switch {
		case g.Value == "true":
		case g.Value != "":
			o.Steps = []Step{{Kind: spec.StepFilter, Expr: guessOf(g)}}
		default:
			o.Steps = []Step{{Kind: spec.StepFilter, Expr: Guess{Unknown: g.Evidence}}}
		}
		return o
	}
	return nil
}

// tableOutputWithoutTopology finds, without a topology, the output of a
// table's toStream().to(): the topic whose records are, by their bytes,
// the changelog's records (the cache forwards to both what it flushes)
// for 90 % of its records (and at least 5); nil when none or more than
// one topic is.
func (inf *inferred) tableOutputWithoutTopology(ctx context.Context, src audit.Source, d *discovery.Discovery, t draftTable, tables []draftTable) *Output {
	if inf.ev == nil {
		return nil // the evidence was not read (a note says why)
	}
	cl := inf.ev.Topics[t.changelog]
	if cl == nil || cl.Count() < infer.MinKeys {
		return nil
	}
	states := map[string]bool{}
	for _, r := range cl.Records() {
		if r.RawValue != nil {
			states[string(r.RawKey)+"\x00"+string(r.RawValue)] = true
		}
	}
	found := inf.outputsWhere(ctx, src, d, tables, func(r infer.Rec) bool { return states[string(r.RawKey)+"\x00"+string(r.RawValue)] })
	if len(found) != 1 {
		return nil
	}
	out := found[0].out
	o := &Output{Topic: found[0].name, Evidence: fmt.Sprintf("%d/%d records are the changelog's (found without a topology)", found[0].n, out.Count())}
	if g, ok := inf.storeSerde[t.changelog]; ok {
		o.Serdes = Guess{Value: g.Value, Evidence: "the changelog's values, as its records are"}
	}
	// with no step before it, every state reaches the output; a state it
	// lacks may be a filter's (toStream().filter(…).to(…)), which is not
	// inferred here: the output is then left unjudged, never a loss
	if why := missingStates(cl, out); why != "" {
		o.Steps = []Step{{Kind: spec.StepFilter, Expr: Guess{Unknown: why}}}
	}
	return o
}

// missingStates says why the output may not hold every state of the
// changelog: a state read that it lacks, or either topic not read whole;
// "" when it holds them all.
func missingStates(cl, out *infer.Topic) string {
	for _, t := range []*infer.Topic{cl, out} {
		for p := range t.Partitions {
			if !t.Whole[p] || !t.Full[p] {
				return fmt.Sprintf("%s was read in part, so whether a filter drops some states before the output is not known", t.Name)
			}
		}
	}
	have := map[string]bool{}
	for _, r := range out.Records() {
		have[string(r.RawKey)+"\x00"+string(r.RawValue)] = true
	}
	lack := 0
	for _, r := range cl.Records() {
		if r.RawValue != nil && !have[string(r.RawKey)+"\x00"+string(r.RawValue)] {
			lack++
		}
	}
	if lack > 0 {
		return fmt.Sprintf("%d states of the changelog are not on the output: a filter before it, or lost records", lack)
	}
	return ""
}

// outputMatch is a candidate output n of whose records out matched.
type outputMatch struct {
	name string
	n    int
	out  *infer.Topic
}

// outputsWhere reads the candidate outputs (none when there are more than
// maxOutputCandidates) and returns, in name order, those with at least
// MinKeys records read of which 90 % or more match.
func (inf *inferred) outputsWhere(ctx context.Context, src audit.Source, d *discovery.Discovery, tables []draftTable, match func(infer.Rec) bool) []outputMatch {
	cands := outputCandidates(ctx, src, d, tables)
	if len(cands) > maxOutputCandidates {
		return nil
	}
	var out []outputMatch
	for _, name := range cands {
		t, err := inf.rawRead(ctx, src, name)
		if err != nil && !slices.Contains(inf.notes, "not read: "+err.Error()) {
			inf.notes = append(inf.notes, "not read: "+err.Error()) // a damaged candidate is named, not skipped unsaid
		}
		if err != nil || t.Count() < infer.MinKeys {
			continue
		}
		n := 0
		for _, r := range t.Records() {
			if match(r) {
				n++
			}
		}
		if n*10 >= t.Count()*9 {
			out = append(out, outputMatch{name: name, n: n, out: t})
		}
	}
	return out
}

// outputCandidates are the topics that may be an app's outputs without a
// topology: those it neither reads nor owns (the internal topics are
// discovery's; one named after the app that follows no internal topic's
// convention is a user topic: WordCountDemo's streams-wordcount-output).
func outputCandidates(ctx context.Context, src audit.Source, d *discovery.Discovery, tables []draftTable) []string {
	infos, err := src.Topics(ctx)
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	for _, t := range d.Topics {
		known[t.Name] = true
	}
	for _, t := range tables {
		known[t.source] = true
		for _, c := range t.candidates {
			known[c] = true
		}
	}
	var cands []string
	for _, t := range infos {
		if !known[t.Name] && !strings.HasPrefix(t.Name, "_") {
			cands = append(cands, t.Name)
		}
	}
	slices.Sort(cands)
	return cands
}

// maxOutputCandidates bounds the topics read as possible join outputs
// without a topology.
const maxOutputCandidates = 50

// joinsWithoutTopology finds the join outputs among the topics the app
// neither reads nor owns: those whose keys are a table's keys (its left
// table: the one holding 90 % of them), and drafts each one's join over
// the tables whose fields its values hold. Where it drafts none, note
// says why ("" for nothing to say).
func (inf *inferred) joinsWithoutTopology(ctx context.Context, src audit.Source, d *discovery.Discovery, tables []draftTable) (joins []Join, note string) {
	if inf == nil || inf.ev == nil || len(tables) == 0 {
		return nil, ""
	}
	cands := outputCandidates(ctx, src, d, tables)
	if len(cands) > maxOutputCandidates {
		return nil, fmt.Sprintf("not inferred: %d topics could be outputs (more than %d); give --topology", len(cands), maxOutputCandidates)
	}
	var mod uint64
	if cl := inf.ev.Topics[tables[0].changelog]; cl != nil {
		mod = cl.KeyMod
	}
	for _, name := range cands {
		out, err := infer.Read(ctx, src, inf.dec, name, infer.ReadOptions{KeyMod: mod})
		if err != nil || out.Count() == 0 {
			continue
		}
		left, leftN, total := "", 0, 0
		for _, t := range tables {
			cl := inf.ev.Topics[t.changelog]
			if cl == nil {
				continue
			}
			n, tot := infer.KeyCoverage(out, cl)
			if n > leftN {
				left, leftN, total = t.name, n, tot
			}
		}
		if left == "" || leftN*10 < total*9 {
			continue // not keyed by the tables' keys
		}
		inf.ev.Topics[name] = out
		var rights []string
		for _, t := range tables {
			if t.name != left {
				rights = append(rights, t.name)
			}
		}
		g := inf.inferJoin(ctx, name, left, rights)
		// keep the right tables the value reads
		var used []string
		for i, r := range rights {
			if regexp.MustCompile(fmt.Sprintf(`\br%d\b`, i+1)).MatchString(g.Value) {
				used = append(used, r)
			}
		}
		if g.Value == "" {
			// the output is keyed by the tables' keys, its value not
			// settled: the join's presence is still checked (value TODO)
			used = rights
		}
		if len(used) == 0 {
			continue
		}
		if len(used) < len(rights) && g.Value != "" {
			rights = used
			g = inf.inferJoin(ctx, name, left, rights)
		}
		j := Join{Output: Guess{Value: name, Evidence: fmt.Sprintf("keyed by table %s's keys: %d/%d (found without a topology)", left, leftN, total), Explained: leftN, Of: total},
			Left: Guess{Value: left}}
		for _, r := range rights {
			j.Right = append(j.Right, Guess{Value: r})
		}
		j.Type, j.Value, j.Fields = joinGuess(&g)
		joins = append(joins, j)
	}
	if len(joins) == 0 {
		return nil, "none found without a topology (--topology)"
	}
	return joins, ""
}

// splitSteps drafts, for a store whose repartition copies are purged and
// whose keys no field of the source carries, the word split of Kafka's
// WordCountDemo (flatMapValues(split) → groupBy((k, word) → word)) where
// the words of one candidate source are the changelog's keys, and the
// reducer from the words as the store's inputs. It applies only to a
// chain with nothing else: no topology, or the topology's flatMapValues
// and key selection. It reports whether it drafted them.
func splitSteps(t *draftTable, ev *infer.Evidence, cands []string) bool {
	var kinds []spec.StepKind
	for _, s := range t.steps {
		kinds = append(kinds, s.kind)
	}
	if len(kinds) > 0 && !slices.Equal(kinds, []spec.StepKind{spec.StepFlatMapValues, spec.StepSelectKey}) &&
		!slices.Equal(kinds, []spec.StepKind{spec.StepFlatMapValues, spec.StepGroupBy}) {
		return false
	}
	var (
		best    infer.Guess
		words   *infer.Topic
		bestSrc string
	)
	for _, c := range cands {
		src := c
		if c == t.source {
			src = cmp.Or(t.evSource, c)
		}
		g, els := infer.GuessSplitFromStates(ev.Topics[src], ev.Topics[t.changelog])
		switch {
		case g.Value != "" && best.Value != "":
			return false // two sources' words fit: which one feeds the store is not settled
		case g.Value != "":
			best, words, bestSrc = g, els, c
		}
	}
	if best.Value == "" {
		return false
	}
	if t.source == "" {
		t.source, t.sourceNote = bestSrc, "its records' words are the changelog's keys"
	}
	node := func(i int) string {
		if i < len(t.steps) {
			return t.steps[i].node
		}
		return ""
	}
	t.steps = []draftStep{{kind: spec.StepFlatMapValues, expr: best.Value, node: node(0), note: best.Evidence}}
	if len(kinds) == 2 {
		t.steps = append(t.steps, draftStep{kind: kinds[1], expr: "value", node: node(1), note: "each word is its own key"})
		t.selectKey = infer.Guess{}
	} else {
		t.selectKey = infer.Guess{Value: "value", Evidence: "each word is its own key: groupBy((k, word) -> word)"}
	}
	wordsReducer(t, ev, words)
	return true
}

// splitCopies drafts, without a topology, the word split of a store
// whose repartition copies are words of one candidate source's text
// records (flatMapValues(split) → groupBy((k, word) → word)), by key,
// value and timestamp for 90 % of them, and the reducer over the words.
// It reports whether it drafted them.
func splitCopies(t *draftTable, ev *infer.Evidence, cands []string, copies *infer.Topic) bool {
	kinds := []spec.StepKind{spec.StepFlatMapValues, spec.StepSelectKey}
	var exprs []string
	var g infer.Guess
	bestSrc := ""
	for _, c := range cands {
		src := c
		if c == t.source {
			src = cmp.Or(t.evSource, c)
		}
		e, cg := infer.GuessChain(ev.Topics[src], copies, kinds, [][]string{infer.SplitCandidates, {"value"}})
		switch {
		case e != nil && exprs != nil:
			return false // two sources' words fit
		case e != nil:
			exprs, g, bestSrc = e, cg, c
		}
	}
	if exprs == nil {
		return false
	}
	src := bestSrc
	if bestSrc == t.source {
		src = cmp.Or(t.evSource, bestSrc) // merged sources: their union
	}
	words, err := infer.Words(ev.Topics[src], exprs[0])
	if err != nil {
		return false
	}
	t.source, t.sourceNote = bestSrc, "the copies on "+t.repartition+" are its records' words"
	t.steps = []draftStep{{kind: spec.StepFlatMapValues, expr: exprs[0], note: "with the key, " + g.Evidence}}
	t.selectKey = infer.Guess{Value: "value", Evidence: "each word is its own key: groupBy((k, word) -> word)"}
	wordsReducer(t, ev, words)
	return true
}

// wordsReducer guesses a word count's reducer over the words as the
// store's inputs.
func wordsReducer(t *draftTable, ev *infer.Evidence, words *infer.Topic) {
	topics := maps.Clone(ev.Topics)
	src := cmp.Or(t.evSource, t.source)
	topics[src] = words
	g := infer.GuessReducer(spec.PlannedTable{Name: t.name, Source: src, Repartition: t.repartition, Store: t.store, Changelog: t.changelog}, &infer.Evidence{Topics: topics}, "key")
	t.reduce = &g
}
