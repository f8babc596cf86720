package draft

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit/infer"
	"github.com/kaudit/kaudit/audit/spec"
)

// unseenFilter drafts, without a topology, the filter that may stand
// between a re-keyed table's source and its re-key (t.unseen says why the
// node numbers do not rule one out): the predicate that tells the consumed
// source records without a copy from those with one, when one comparison
// does (GuessFilter), else a filter whose predicate is TODO, so that an
// input without a copy is not judged (it may have been filtered on
// purpose), never a loss. A predicate on the record key, or on the field
// the table is re-keyed by, is no evidence of a filter: it would equally
// be a loss of every record of one key.
func unseenFilter(t *draftTable, ev *infer.Evidence, pairs []infer.Pair) {
	src := ev.Topics[cmp.Or(t.evSource, t.source)]
	if src == nil {
		return
	}
	g := infer.GuessFilter(src, pairs)
	if g.Value == "true" {
		t.unseenNote = "no consumed source record lacks its copy, so a filter there would have removed none; " + t.unseen
		return
	}
	onKey := strings.HasPrefix(g.Value, "key ") || t.selectKey.Value != "" && t.selectKey.Value != "key" && strings.HasPrefix(g.Value, t.selectKey.Value+" ")
	if g.Value != "" && !onKey {
		t.steps = []draftStep{{kind: spec.StepFilter, expr: g.Value, note: fmt.Sprintf("inferred without a topology: %s; %s", g.Evidence, t.unseen)}}
		return
	}
	why := g.Evidence
	if onKey {
		why = fmt.Sprintf("only %s tells them apart, which a loss of every record of one key would too", g.Value)
	}
	t.steps = []draftStep{{kind: spec.StepFilter, note: fmt.Sprintf("a filter may stand before the re-key (%s); %s: an input without a copy is not judged", t.unseen, why)}}
}

// mergedSources finds, without a topology, the source topics whose
// records together explain every copy a table's repartition topic holds
// (by value and timestamp) where no one of them does: the streams merged
// before the re-key. It returns them in the order given, each one needed,
// with the evidence topic of their union (registered in ev) and its
// pairs; false when no union explains more copies than the best one topic
// (best) or all of them.
func mergedSources(ev *infer.Evidence, cands []string, copies *infer.Topic, best int) ([]string, []infer.Pair, bool) {
	var used []string
	var parts []*infer.Topic
	for _, c := range cands {
		st := ev.Topics[c]
		if st == nil || len(infer.MatchCopies(st, copies)) == 0 {
			continue
		}
		used, parts = append(used, c), append(parts, st)
	}
	if len(used) < 2 {
		return nil, nil, false
	}
	name := strings.Join(used, "+")
	u := infer.Union(name, parts...)
	pairs := infer.MatchCopies(u, copies)
	if len(pairs) <= best || len(pairs) < copies.Count() && !partial(u) {
		return nil, nil, false
	}
	ev.Topics[name] = u
	return used, pairs, true
}

// partial reports whether a source or its copies were not read whole
// (retention, a purge, a bound on the read): copies may then lack their
// source records, or the other way round, without a fault of the app.
func partial(ts ...*infer.Topic) bool {
	for _, t := range ts {
		if t == nil {
			return true
		}
		for p := range t.Parts {
			if !t.Whole[p] || !t.Full[p] {
				return true
			}
		}
	}
	return false
}

// seenNodes counts the nodes a table's drafted steps stand for before its
// key selector, each a number of its own: those the evidence shows
// (a split's flatMapValues, a filter it inferred), not a TODO filter the
// draft supposes.
func seenNodes(t *draftTable) int {
	n := 0
	for _, s := range t.steps {
		if !s.open() && !s.kind.KeyChanging() {
			n++
		}
	}
	return n
}

// tableSerde is the value serde of a table's own topics where it is not
// the app's (inferred.topicSerde): the one its source topics and its
// repartition topic agree on.
func (inf *inferred) tableSerde(t draftTable) (infer.Guess, bool) {
	var g infer.Guess
	found := false
	for _, topic := range append([]string{t.source, t.repartition}, t.merged...) {
		tg, ok := inf.topicSerde[topic]
		switch {
		case topic == "" || !ok:
		case found && tg.Value != g.Value:
			return infer.Guess{}, false
		default:
			g, found = tg, true
		}
	}
	return g, found
}
