package reconcile

// Stores without a cache: every applied input a changelog state.

// This file decides where a table's changelog holds every state of its
// store. Without a cache (statestore.cache.max.bytes=0, or
// Materialized.withCachingDisabled()), each input the store applies writes
// one changelog record: where the changelog partition is whole (nothing
// purged, compacted or missing) and the source is readable from offset 0, a
// key's history is then every application's state, in order, and an input
// whose state is not there was not applied, even when a later input's state
// hides it (a min that missed a value above the minimum). The hop may be
// purged: its purged copies' places in the apply order are searched as
// always, each application still a state. With a cache, the history is only
// a subsequence of the states.

// exactFor reports whether key histories on changelog partition p hold
// every state.
func (ts *tableState) exactFor(cl *clState) bool {
	return cl != nil && ts.exact[cl.partition]
}

// exactHistories fills ts.exact for an uncached table. The spec's word is
// checked against the evidence: a cache writes a key once per flush (one
// transaction under exactly-once), so the spec's caching: false is taken
// only where the changelog shows some key with two states in one
// transaction, which only a store without a cache writes (or a cache that
// evicts the key and takes it again before the commit). Otherwise a note
// says so and the histories are judged as a cache's: a wrong caching:
// false never makes a loss.
func (r *run) exactHistories(ts *tableState) {
	t := ts.t
	if !t.Uncached || t.Changelog == "" {
		return
	}
	hop := t.Repartition
	if hop == "" {
		hop = t.Source
	}
	if r.topics[hop].Partitions != r.topics[t.Changelog].Partitions {
		return // the tasks do not map one to one: nothing to rest the order on
	}
	if ts.spill != nil && ts.spill.states != nil {
		// the states are in buckets: a key's are all in its bucket
		for b := range ts.spill.buckets() {
			if ts.twiceInTxn {
				break
			}
			_, twice, _ := ts.loadStates(b)
			ts.twiceInTxn = twice
		}
	}
	if !ts.twiceInTxn {
		r.note("table %s: the spec says caching: false, but no key of changelog %s has two states in one transaction, which a store without a cache writes when a key is updated twice before a commit: its histories are judged as a cache's", t.Name, t.Changelog)
		return
	}
	if !ts.complete {
		return // an input retention deleted may have made a state: the history holds states no input explains
	}
	for p, whole := range ts.clWhole {
		ts.exact[p] = whole
	}
}
