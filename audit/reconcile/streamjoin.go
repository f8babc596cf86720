package reconcile

// Stream-table joins: each consumed record's joined record, with a state the table held.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// StreamJoin is stream.join(table) or stream.leftJoin(table) written to
// an output topic. Kafka Streams 3.6.2's KStreamKTableJoinProcessor skips
// a record whose key or value is null; for every other record it looks
// the table's store up by the record's key as the task reaches it and
// forwards one record with the stream record's key and timestamp and the
// joiner's value (left), or one only where the store holds the key
// (inner).
type StreamJoin struct {
	Name   string // for findings: "stream join into <output>"
	Output string
	// Sources are the stream's source topics (the first, then those
	// merged into it).
	Sources []string
	// Steps runs the stateless steps between the sources and the join
	// on one record (nil: the record as it is); ValueChanging says they
	// may change values.
	Steps         func(Env) ([]Element, error)
	ValueChanging bool
	// Repartition is the topic Streams re-keys the stream through before
	// the join, "" when the stream reaches the join on its source
	// partitions.
	Repartition string
	// Table is the name of the pipeline's table the join looks up.
	Table string
	Inner bool
	// Value is the joiner (table nil where the store holds no value for
	// the key); nil checks presence, keys and timestamps only.
	Value func(key, stream, table audit.Value) (audit.Value, error)
	// OutputSteps runs the steps between the join and to(Output) on one
	// joined record (nil: written as it is).
	OutputSteps func(Env) ([]Element, error)
	// Unjudged says why the join is not judged ("" judges it).
	Unjudged string
}

// sjState is one state a table held for a key: its record's offset
// on the topic the states are read from, and its value (nil: none).
type sjState struct {
	offset int64
	value  audit.Value
}

// sjOut is one committed record of a stream join's output.
type sjOut struct {
	tp     audit.TopicPartition
	offset int64
	digest codec.Digest
	null   bool
	used   bool
}

// sjCopy is one committed copy of a stream element on the repartition
// topic before the join.
type sjCopy struct {
	partition int32
	offset    int64
}

// sjKey is what an output record is found by: its key and timestamp.
type sjKey struct {
	key string
	ts  int64
}

// checkStreamJoin judges a stream-table join: each element of each
// consumed stream record (its steps applied) must reach the join
// (through the repartition topic, when there is one) and yield its
// joined record on the output, with its key and timestamp and the
// joiner's value over one state the table could have held when the task
// joined it. What the evidence cannot settle (an inner join's record
// whose key the table may or may not have held then) is missing evidence.
func (r *run) checkStreamJoin(ctx context.Context, j *StreamJoin) {
	if j.Unjudged != "" {
		r.missing("%s", j.Unjudged)
		return
	}
	t := r.p.table(j.Table)
	if t == nil {
		r.skipped("%s: its table %s is not in the spec", j.Name, j.Table)
		return
	}
	states, statesTopic, ok := r.sjStates(ctx, j, t)
	if !ok {
		return
	}
	outs, ok := r.sjOutputs(ctx, j)
	if !ok {
		return
	}
	copies, copyParts, repLogStart, ok := r.sjCopies(ctx, j)
	if !ok {
		return
	}
	sj := &sjRun{r: r, j: j, t: t, states: states, statesTopic: statesTopic, outs: outs, copies: copies, copyParts: copyParts, repLogStart: repLogStart}
	for _, topic := range j.Sources {
		if !sj.readStream(ctx, topic) {
			return
		}
	}
	// the elements whose copies a purge may have taken claim a joined
	// record only now: one whose copy the join consumed claims first, so
	// that of two joined records alike the purged element is the one
	// without (AB's V19)
	for _, judge := range sj.purgedCopies {
		judge()
	}
	sj.finish()
}

// sjRun is one stream join's check under way.
type sjRun struct {
	r *run
	j *StreamJoin
	t *Table
	// states are the table's states per key and partition, in offset
	// order; statesTopic the topic they are read from (the table's source
	// for builder.table, whose offsets the commit history bounds, else its
	// changelog)
	states      map[string]map[int32][]sjState
	statesTopic string
	outs        map[sjKey][]*sjOut
	copies      map[fingerprint][]sjCopy
	copyParts   int32
	repLogStart map[int32]int64
	// gone names the stream's source partitions whose first records the
	// evidence lacks
	gone []string
	// unplaced, in a shard, is a key the key serde cannot place in a
	// repartition partition: its records are not judged
	unplaced string
	found    []audit.Finding
	// purgedCopies judge, once every consumed copy claimed its joined
	// record, the elements whose copies are missing where the repartition
	// topic was purged
	purgedCopies []func()
	// took lists, per fingerprint, the elements that took a copy in the
	// order they took it: of elements alike, the first took the first copy
	// left, but a purge takes the first copies, so the one without is the
	// earliest of them
	took map[fingerprint][]sjElem
	// what the check counted
	joined, pending, undecided, mismatched, failures int64
	firstUndecided, firstMismatch, firstFailure      string
	failedAt                                         []string
}

// sjStates reads the states the table held: for builder.table, every
// committed record of its source (a tombstone is no value); otherwise
// every committed state of its changelog.
func (r *run) sjStates(ctx context.Context, j *StreamJoin, t *Table) (map[string]map[int32][]sjState, string, bool) {
	topic, role := t.Changelog, "changelog"
	if t.TableSource {
		topic, role = t.Source, "source"
	}
	parts, ok := r.partitionsOf(ctx, topic, role)
	if !ok {
		r.missing("%s: its table %s's %s %s cannot be read, so the join is not judged", j.Name, t.Name, role, topic)
		return nil, "", false
	}
	states := map[string]map[int32][]sjState{}
	tps := tpsOf(topic, parts)
	rd := r.readAgain(ctx, tps, role, decodeAll)
	defer rd.stop()
	for _, tp := range tps {
		if !r.walk(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || it.decErr != nil || it.key == nil {
				return
			}
			key := it.keyText
			if key == "" {
				key = codec.Text(it.key)
			}
			byPart := states[key]
			if byPart == nil {
				byPart = map[int32][]sjState{}
				states[key] = byPart
			}
			byPart[tp.Partition] = append(byPart[tp.Partition], sjState{offset: it.Record.Offset, value: it.value})
		}) {
			r.missing("%s: %s is unreadable, so the states its table %s held are not known and the join is not judged", j.Name, tp, t.Name)
			return nil, "", false
		}
	}
	return states, topic, true
}

// sjOutputs reads the join's output: its committed records by key and
// timestamp. An output whose first records were deleted cannot tell a
// missing record from a deleted one: the join is not judged.
func (r *run) sjOutputs(ctx context.Context, j *StreamJoin) (map[sjKey][]*sjOut, bool) {
	parts, ok := r.partitionsOf(ctx, j.Output, "output")
	if !ok {
		return nil, false
	}
	outs := map[sjKey][]*sjOut{}
	tps := tpsOf(j.Output, parts)
	rd := r.read(ctx, tps, "output", decodeDigest)
	defer rd.stop()
	for _, tp := range tps {
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			r.count("output", 1)
			k := sjKey{key: it.keyText, ts: it.Record.Timestamp}
			outs[k] = append(outs[k], &sjOut{tp: tp, offset: it.Record.Offset, digest: it.digest, null: it.Record.Value == nil})
		})
		if !ok || l == nil || r.clusterLogStart(tp, l.Offsets.LogStart) > 0 {
			r.missing("%s: the output's partition %s is unreadable or its first records deleted, so the join is not judged", j.Name, tp)
			return nil, false
		}
	}
	return outs, true
}

// sjCopies reads the repartition topic before the join, if there is one:
// its committed copies by fingerprint, and each partition's log start.
func (r *run) sjCopies(ctx context.Context, j *StreamJoin) (map[fingerprint][]sjCopy, int32, map[int32]int64, bool) {
	if j.Repartition == "" {
		return nil, 0, nil, true
	}
	parts, ok := r.partitionsOf(ctx, j.Repartition, "repartition")
	if !ok {
		return nil, 0, nil, false
	}
	copies := map[fingerprint][]sjCopy{}
	logStart := map[int32]int64{}
	tps := tpsOf(j.Repartition, parts)
	rd := r.read(ctx, tps, "repartition", decodeDigest)
	defer rd.stop()
	for _, tp := range tps {
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			r.count("repartition", 1)
			f := fingerprintOf(it.keyText, it.digest, it.Record.Timestamp)
			copies[f] = append(copies[f], sjCopy{partition: tp.Partition, offset: it.Record.Offset})
		})
		if !ok || l == nil {
			r.missing("%s: the repartition partition %s is unreadable, so the join is not judged", j.Name, tp)
			return nil, 0, nil, false
		}
		logStart[tp.Partition] = r.clusterLogStart(tp, l.Offsets.LogStart)
		r.purgedPastCommit(tp, logStart[tp.Partition], r.committed(tp), j.Name, "offsets", "the join consumed them")
	}
	return copies, r.topics[j.Repartition].Partitions, logStart, true
}

// readStream reads one source topic of the stream and judges each
// consumed record's elements.
func (sj *sjRun) readStream(ctx context.Context, topic string) bool {
	r, j := sj.r, sj.j
	parts, ok := r.partitionsOf(ctx, topic, "source")
	if !ok {
		return false
	}
	// A shard of a join through a repartition topic takes records from
	// every source partition, as a table's inputs (readSourceTopic): it
	// reads them all and judges the elements of its keys; a partition's
	// own findings belong to the shard of its number.
	byKey := r.opts.Partitions != nil && j.Repartition != ""
	tps := tpsOf(topic, parts)
	if byKey {
		tps = tpsOf(topic, allPartitions(r.topics[topic].Partitions))
	}
	rd, first, foreign := r.readSourceShard(ctx, tps, byKey) // first: no table reads it, its own findings are the join's to say
	defer rd.stop()
	for _, tp := range tps {
		c := r.committed(tp)
		own := !foreign[tp]
		var lag, nulls, filtered int64
		var firstNull, firstFiltered []int64
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			rec := &it.Record
			if it.Fate != audit.FateCommitted {
				return
			}
			if c < 0 || rec.Offset >= c {
				lag++
				return
			}
			if !r.inputOutsideSkips(tp, rec.Offset) {
				return
			}
			if first && own && !r.decoded(it) || it.decErr != nil {
				return
			}
			els := []Element{{Key: it.key, Value: it.value}}
			if j.Steps != nil {
				var err error
				if els, err = j.Steps(Env{Key: it.key, Value: it.value, Headers: rec.Headers, Timestamp: rec.Timestamp}); err != nil {
					if own {
						sj.failed(tp, rec.Offset, err)
					}
					return
				}
			}
			if len(els) == 0 {
				filtered++
				if len(firstFiltered) < 10 {
					firstFiltered = append(firstFiltered, rec.Offset)
				}
			}
			for i, e := range els {
				if e.Key == nil || e.Value == nil {
					// the repartition's filter or the join skips it ("Skipping
					// record due to null join key or value")
					nulls++
					if len(firstNull) < 10 {
						firstNull = append(firstNull, rec.Offset)
					}
					continue
				}
				if byKey {
					p := sj.partitionOf(codec.Text(e.Key))
					if p < 0 {
						sj.unplaced = codec.Text(e.Key)
						continue
					}
					if !containsPartition(r.opts.Partitions, p) {
						continue // another shard's key
					}
				}
				dg := it.digest
				if j.ValueChanging || j.Steps != nil && len(els) > 1 {
					dg = codec.DigestOf(e.Value)
				}
				sj.element(tp, rec, i, len(els), e, dg)
			}
		})
		if !ok {
			if own {
				r.missing("%s: source partition %s is unreadable, so its records' joins are not judged", j.Name, tp)
			} else {
				r.missing("%s: source partition %s is unreadable, so the joins of this shard's keys' records there are not judged", j.Name, tp)
			}
			continue
		}
		if !own {
			if g := r.goneOf(tp, l); g != "" {
				sj.gone = append(sj.gone, g)
			}
			continue // its own findings are its shard's
		}
		if first {
			r.lagFinding(tp, l, c, lag)
			r.gapFindings(tp, l, c)
		}
		sj.gone = append(sj.gone, r.inputsGone([]audit.TopicPartition{tp})...)
		// joins of one stream through one repartition topic share its
		// records' fate before it: said once
		shared := ""
		if j.Repartition != "" {
			shared = tp.String() + " " + j.Repartition
		}
		if shared != "" && r.sjShared[shared] {
			nulls, filtered = 0, 0
		} else if shared != "" {
			if r.sjShared == nil {
				r.sjShared = map[string]bool{}
			}
			r.sjShared[shared] = true
		}
		if nulls > 0 {
			f := audit.NewFinding(audit.StageSource, audit.CauseNullKey, tp, firstNull[0])
			f.Count = nulls
			f.Detail = fmt.Sprintf("%s: %d consumed records reach the join with a null key or value, which Kafka Streams skips by design (offsets %s)", j.Name, nulls, joinOffsets(firstNull, nulls))
			sj.found = append(sj.found, f)
		}
		if filtered > 0 {
			f := audit.NewFinding(audit.StageSource, audit.CauseFiltered, tp, firstFiltered[0])
			f.Count = filtered
			f.Detail = fmt.Sprintf("%s: its steps emit nothing for %d consumed records, as the spec says the app does (offsets %s)", j.Name, filtered, joinOffsets(firstFiltered, filtered))
			sj.found = append(sj.found, f)
		}
	}
	if sj.unplaced != "" {
		r.missing("%s: --partitions judges the records whose keys the shard's partitions hold, but the key serde %q cannot place key %s in a partition, so the records of such keys on %s are not judged (run without --partitions)", j.Name, r.p.KeySerde, sj.unplaced, topic)
		sj.unplaced = ""
	}
	return ctx.Err() == nil
}

// sjElem names an element of a stream record in a finding.
type sjElem struct {
	tp     audit.TopicPartition
	offset int64
	which  string
}

// failed counts a record the steps failed on.
func (sj *sjRun) failed(tp audit.TopicPartition, offset int64, err error) {
	sj.failures++
	if sj.firstFailure == "" {
		sj.firstFailure = err.Error()
	}
	if len(sj.failedAt) < 5 {
		sj.failedAt = append(sj.failedAt, fmt.Sprintf("%s@%d", tp, offset))
	}
}

// element judges one element of a consumed stream record.
func (sj *sjRun) element(tp audit.TopicPartition, rec *audit.Record, idx, n int, e Element, dg codec.Digest) {
	r, j := sj.r, sj.j
	key := codec.Text(e.Key)
	which := ""
	if n > 1 {
		which = fmt.Sprintf(" (element %d of %d its steps emit)", idx+1, n)
	}
	judged := r.inWindow(rec.Timestamp)
	// where the join reads it: its copy on the repartition topic, or the
	// source partition itself
	joinTP, pos := tp, rec.Offset
	if j.Repartition != "" {
		f := fingerprintOf(key, dg, rec.Timestamp)
		cs := sj.copies[f]
		if len(cs) == 0 {
			p := sj.partitionOf(key)
			if !judged || p < 0 {
				return
			}
			rtp := audit.TopicPartition{Topic: j.Repartition, Partition: p}
			if sj.repLogStart[p] == 0 {
				fd := audit.NewFinding(audit.StageRepartition, audit.CauseDropped, tp, rec.Offset)
				fd.Key, fd.Timestamp = key, rec.Timestamp
				fd.Detail = fmt.Sprintf("%s: consumed (below the group's committed offset), but %s, never purged, holds no committed copy of it%s for the join: the app consumed it and wrote nothing for it", j.Name, rtp, which)
				sj.found = append(sj.found, fd)
				return
			}
			// its copy may be purged: consumed by the join, then its record
			// must be on the output. Where an earlier element alike took a
			// copy, the purge took the earlier one's: the loss is that one
			// (AB's V19)
			offset, ts, ek, ev := rec.Offset, rec.Timestamp, e.Key, e.Value
			if prev := sj.took[f]; len(prev) > 0 && prev[0].tp == tp {
				first := prev[0]
				sj.took[f] = append(prev[1:], sjElem{tp, offset, which})
				offset, which = first.offset, first.which
			}
			sj.purgedCopies = append(sj.purgedCopies, func() {
				if !sj.hasOutput(key, ek, ts, ev, rtp, -1) && !sj.mayBeAbsent(key, ek, ev, ts, rtp, -1) {
					fd := audit.NewFinding(audit.StageRepartition, audit.CauseUnapplied, tp, offset)
					fd.Key, fd.Timestamp = key, ts
					fd.Detail = fmt.Sprintf("%s: consumed, and neither its copy on %s (purged from offset %d down) nor a joined record on %s is there%s: dropped before the repartition, or joined and lost; the evidence cannot tell", j.Name, rtp, sj.repLogStart[p], j.Output, which)
					sj.found = append(sj.found, fd)
					if r.purgeNamed == nil {
						r.purgeNamed = map[audit.TopicPartition]bool{}
					}
					r.purgeNamed[rtp] = true
				}
			})
			return
		}
		c := cs[0]
		sj.copies[f] = cs[1:]
		if sj.took == nil {
			sj.took = map[fingerprint][]sjElem{}
		}
		sj.took[f] = append(sj.took[f], sjElem{tp, rec.Offset, which})
		joinTP, pos = audit.TopicPartition{Topic: j.Repartition, Partition: c.partition}, c.offset
		if cut := r.committed(joinTP); cut < 0 || pos >= cut {
			sj.pending++ // the join has not consumed it yet
			return
		}
	}
	if !judged {
		sj.claim(key, rec.Timestamp)
		return
	}
	if sj.hasOutput(key, e.Key, rec.Timestamp, e.Value, joinTP, pos) {
		return
	}
	if sj.mayBeAbsent(key, e.Key, e.Value, rec.Timestamp, joinTP, pos) {
		return
	}
	fd := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, tp, rec.Offset)
	fd.Key, fd.Timestamp = key, rec.Timestamp
	via := ""
	if j.Repartition != "" {
		via = fmt.Sprintf(" (its copy at %s@%d, consumed)", joinTP, pos)
	}
	fd.Detail = fmt.Sprintf("%s: consumed%s%s, but %s holds no joined record of it (key %s, timestamp %d)%s", j.Name, via, which, j.Output, key, rec.Timestamp, sj.because())
	sj.found = append(sj.found, fd)
}

// because says why a missing joined record was due.
func (sj *sjRun) because() string {
	if !sj.j.Inner {
		return ": a left join writes one for every record"
	}
	return ": the table held the key whenever the task could have joined it"
}

// partitionOf is the repartition partition a key's copies go to, -1 when
// the key serde cannot place it.
func (sj *sjRun) partitionOf(key string) int32 {
	return partitionOfKey(sj.r.p.KeySerde, key, sj.copyParts)
}

// candidates are the values the table could have held for key when the
// task joined the record at joinTP@pos: nil (none) among them where the
// table may not have held the key.
func (sj *sjRun) candidates(key string, joinTP audit.TopicPartition, pos int64) (vals []audit.Value, none bool) {
	byPart := sj.states[key]
	if !sj.t.TableSource {
		// a fold's changelog: any of its states, or none yet
		for _, p := range slices.Sorted(maps.Keys(byPart)) {
			for _, s := range byPart[p] {
				if s.value == nil {
					none = true
				} else {
					vals = append(vals, s.value)
				}
			}
		}
		return vals, true
	}
	// builder.table: co-partitioned with the stream, its partition is the
	// join's; the commit history bounds how far the task had read it
	list := byPart[joinTP.Partition]
	lo, hi := sj.bounds(joinTP, pos, audit.TopicPartition{Topic: sj.statesTopic, Partition: joinTP.Partition})
	none = true
	for _, s := range list {
		switch {
		case s.offset < lo:
			none = s.value == nil
			vals = vals[:0]
			if s.value != nil {
				vals = append(vals, s.value)
			}
		case s.offset < hi:
			if s.value == nil {
				none = true
			} else {
				vals = append(vals, s.value)
			}
		}
	}
	return vals, none
}

// bounds are the offsets of the table's partition the task had applied
// at least (lo) and at most (hi) when it joined the record at
// joinTP@pos. The transaction that committed the record's offset is the
// first commit of joinTP past pos; the table's partition, in the same
// task, is committed by the same producer, whose transactions follow
// one another: every table commit before that transaction's marker was
// applied before it began (lo), and none after it was applied in it
// (hi). Where the commit history has holes that could hide one of those
// commits, that bound is not known (0, or no bound).
func (sj *sjRun) bounds(joinTP audit.TopicPartition, pos int64, tableTP audit.TopicPartition) (lo, hi int64) {
	lo, hi = 0, math.MaxInt64
	h := sj.r.opts.History
	if h == nil || h.History == nil || pos < 0 {
		return lo, hi
	}
	hist := h.History
	jc := hist.Commits[joinTP]
	i := slices.IndexFunc(jc, func(c audit.Commit) bool { return !c.Deleted && c.Offset > pos })
	if i < 0 {
		return lo, hi
	}
	at, from := jc[i].At, int64(0)
	if i > 0 {
		from = jc[i-1].At
	}
	if !hist.Whole(from, at+1) {
		return lo, hi // the transaction that consumed it may be in a hole
	}
	var last *audit.Commit // the table's last commit at or before the marker
	for k := range hist.Commits[tableTP] {
		c := &hist.Commits[tableTP][k]
		if c.Deleted || c.At > at {
			continue
		}
		if c.At < at {
			lo = c.Offset
		}
		last = c
	}
	switch {
	case last == nil && hist.Whole(0, at+1):
		hi = 0 // the table's partition was never committed before
	case last != nil && hist.Whole(last.At, at+1):
		hi = last.Offset
	}
	return lo, max(hi, lo)
}

// expected are the digests of the records the join writes for an
// element, one per state the table may have held (none where the output
// steps filter it out); maybeNone says some state gives no record.
func (sj *sjRun) expected(key string, kv, value audit.Value, ts int64, joinTP audit.TopicPartition, pos int64) (digests []codec.Digest, maybeNone bool) {
	j := sj.j
	vals, none := sj.candidates(key, joinTP, pos)
	var tables []audit.Value
	tables = append(tables, vals...)
	switch {
	case none && j.Inner:
		maybeNone = true
	case none:
		tables = append(tables, nil)
	}
	for _, tv := range tables {
		if j.Value == nil {
			digests = append(digests, codec.Digest{}) // presence: any record
			continue
		}
		out, err := j.Value(kv, value, tv)
		if err != nil {
			sj.failed(audit.TopicPartition{Topic: j.Output}, -1, err)
			return nil, true
		}
		if j.OutputSteps != nil {
			els, err := j.OutputSteps(Env{Key: kv, Value: out, Timestamp: ts})
			if err != nil {
				sj.failed(audit.TopicPartition{Topic: j.Output}, -1, err)
				return nil, true
			}
			if len(els) == 0 {
				maybeNone = true
				continue
			}
			out = els[0].Value
		}
		digests = append(digests, codec.DigestOf(out))
	}
	return digests, maybeNone
}

// hasOutput finds an unused output record for the element: same key and
// timestamp and, when the joiner is known, a value it gives for one of
// the table's possible states. It counts a record of the key and
// timestamp whose value no state explains.
func (sj *sjRun) hasOutput(key string, kv audit.Value, ts int64, value audit.Value, joinTP audit.TopicPartition, pos int64) bool {
	outs := sj.outs[sjKey{key: key, ts: ts}]
	if len(outs) == 0 {
		return false
	}
	want, _ := sj.expected(key, kv, value, ts, joinTP, pos)
	var unused *sjOut
	for _, o := range outs {
		if o.used {
			continue
		}
		if unused == nil {
			unused = o
		}
		if sj.j.Value == nil || slices.Contains(want, o.digest) {
			o.used = true
			sj.joined++
			return true
		}
	}
	if unused == nil {
		return false
	}
	// a joined record of it whose value is not the joiner's over any
	// state the table held
	unused.used = true
	sj.mismatched++
	if sj.firstMismatch == "" {
		sj.firstMismatch = fmt.Sprintf("%s@%d (key %s)", unused.tp, unused.offset, key)
	}
	fd := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, unused.tp, unused.offset)
	fd.Key, fd.Timestamp = key, ts
	fd.Detail = fmt.Sprintf("%s: the joined record's value is not the joiner over the stream record and any state table %s held for the key", sj.j.Name, sj.j.Table)
	sj.found = append(sj.found, fd)
	return true
}

// claim takes the output record of an element outside --since/--until,
// so that it is not taken for another's.
func (sj *sjRun) claim(key string, ts int64) {
	for _, o := range sj.outs[sjKey{key: key, ts: ts}] {
		if !o.used {
			o.used = true
			return
		}
	}
}

// mayBeAbsent reports whether an element may rightly have no joined
// record: an inner join where the table may not have held the key, or
// output steps that may filter it out. Where the evidence cannot tell
// whether the table held it, the element is counted as undecided.
func (sj *sjRun) mayBeAbsent(key string, kv, value audit.Value, ts int64, joinTP audit.TopicPartition, pos int64) bool {
	want, maybeNone := sj.expected(key, kv, value, ts, joinTP, pos)
	if !maybeNone {
		return false
	}
	if len(want) > 0 {
		// some states give a record, some none: the evidence cannot tell
		sj.undecided++
		if sj.firstUndecided == "" {
			sj.firstUndecided = fmt.Sprintf("key %s at %s@%d", key, joinTP, pos)
		}
	}
	return true
}

// finish reports what the check found, unless the spec's joiner or steps
// could not be evaluated or the joiner explains too few records to be
// trusted.
func (sj *sjRun) finish() {
	r, j := sj.r, sj.j
	if sj.failures > 0 {
		r.missing("%s is not judged: its steps or joiner failed on %d records (%s; the first: %s), so what it writes is not known", j.Name, sj.failures, strings.Join(sj.failedAt, ", "), sj.firstFailure)
		sj.found = slices.DeleteFunc(sj.found, func(f audit.Finding) bool {
			return f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly
		})
	}
	if sj.mismatched >= 3 && sj.mismatched*10 > sj.joined+sj.mismatched {
		r.missing("%s: the spec's joiner gives the value of only %d of %d joined records (the first it does not: %s), so the values are not judged; the records' presence is", j.Name, sj.joined, sj.joined+sj.mismatched, sj.firstMismatch)
		sj.found = slices.DeleteFunc(sj.found, func(f audit.Finding) bool { return f.Cause == audit.CauseJoinStale })
	}
	if sj.undecided > 0 {
		r.missing("%s: %d consumed records have no joined record, and the evidence cannot tell whether table %s held their key when the task joined them (the first: %s; the group's commit history bounds it where it is whole)", j.Name, sj.undecided, j.Table, sj.firstUndecided)
	}
	// an input joined twice: the extra records of a key and timestamp
	// whose every input found its record, unless inputs of the stream are
	// gone (their records remain, and inputs of the same key and
	// timestamp among them account for them)
	unjudged := 0
	for k, outs := range sj.outs {
		var used, more []*sjOut
		for _, o := range outs {
			if o.used {
				used = append(used, o)
			} else {
				more = append(more, o)
			}
		}
		if len(used) == 0 || len(more) == 0 {
			continue
		}
		if len(sj.gone) > 0 {
			unjudged += len(more)
			continue
		}
		o := more[0]
		fd := audit.NewFinding(audit.StageJoin, audit.CauseDuplicate, o.tp, o.offset)
		fd.Key, fd.Timestamp, fd.Count = k.key, k.ts, int64(len(more))
		fd.Detail = fmt.Sprintf("%s: %d joined records of key %s at timestamp %d beyond the consumed records that account for them (the first at %s@%d)", j.Name, len(more), k.key, k.ts, used[0].tp, used[0].offset)
		sj.found = append(sj.found, fd)
	}
	if unjudged > 0 {
		r.note("%s: %d joined records beyond the remaining consumed records of their key and timestamp; the first records of %s are gone, and inputs among them account for them, so they are not judged duplicates", j.Name, unjudged, strings.Join(sj.gone, ", "))
	}
	slices.SortFunc(sj.found, func(a, b audit.Finding) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	for _, f := range sj.found {
		r.add(f)
	}
	if sj.pending > 0 {
		r.note("%s: %d consumed records' copies on %s are not consumed by the join yet", j.Name, sj.pending, j.Repartition)
	}
}
