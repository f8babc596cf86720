package reconcile

// One table end to end: its repartition copies, changelog and source inputs.

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"runtime/trace"
	"slices"
	"sort"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/history"
	"github.com/kaudit/kaudit/audit/ledger"
)

// fingerprint identifies one input record across hops: Streams passes the
// selected key, the value and the timestamp through to the repartition
// topic (re-serialized, possibly under another schema id, so values are
// compared decoded).
type fingerprint [16]byte

func fingerprintOf[K string | []byte](key K, value codec.Digest, ts int64) fingerprint {
	// a 128-bit non-cryptographic hash: fingerprints never leave the process
	var buf [128]byte // on the stack for keys up to 103 bytes: a hasher is a 1 KiB allocation
	b := append(buf[:0], key...)
	b = append(b, 0) // after the key, the value's digest and the timestamp
	b = append(b, value[:]...)
	b = binary.BigEndian.AppendUint64(b, uint64(ts))
	return fingerprint(xxh3.Hash128(b).Bytes())
}

// copyInfo is what the repartition topic holds of one fingerprint. It has
// no pointer, so the map of a topic's copies costs the garbage collector
// nothing to scan; the transaction of an aborted copy is in tableState.aborts.
type copyInfo struct {
	applied, pending, open, aborted int32 // copies by fate; applied = committed below the cut
	matched                         int32 // inputs matched to an applied or pending copy
	partition                       int32
	// claims counts the inputs of this fingerprint, claimPart and
	// claimOffset name the first (addFound)
	claims, claimPart int32
	claimOffset       int64
	// claimMin and claimMax bound the inputs' offsets, claimMixed says they
	// come from several source partitions
	claimMin, claimMax int64
	claimMixed         bool
	offset             int64 // offset of the first committed copy, else of the first other one
	abortedAt          int64
	ts                 int64
}

// copyStatus is what became of one input on the repartition topic.
type copyStatus uint8

const (
	copyNone    copyStatus = iota // no copy anywhere readable
	copyApplied                   // a committed copy below the cut
	copyPending                   // a committed copy at or above the cut: in flight
	copyOpen                      // only in an open transaction
	copyAborted                   // only in aborted transactions
	copyDirect                    // no repartition hop: the source feeds the store
)

// input is one consumed source record of a table. It is kept small: the
// decoded value only where the state check folds it (not for latest
// tables, whose check compares digests), re-read from the source for the
// inputs that end in a finding.
type input struct {
	table  *tableState
	tp     audit.TopicPartition
	part   int32 // tp as inputRec.part encodes it (sourcePart)
	offset int64
	ts     int64
	key    string // table key as canonical JSON text, shared with the table's map
	digest codec.Digest
	value  audit.Value
	status copyStatus
	cpy    *copyInfo
	r      int32          // repartition partition, -1 unknown
	f      *audit.Finding // its finding, once reported
	loss   *loss          // set once attributed
	detail []string
	cpos   int64    // its copy's offset, as match found it
	how    lostHow  // how the key's explanation lost it
	kind   elemKind // what the evidence allowed of it
	late   bool     // windowed: late for its window (inputRec.late)
	// unsure: a filter or branch whose predicate the spec leaves TODO
	// stands before its copy (Table.Unsure): with no copy it may have
	// been filtered on purpose, so it is never a loss
	unsure bool
	// elem is its index among the elements the table's steps emit for
	// its source record (Table.Steps), 0 without steps
	elem int
}

// divergence is a key whose state no set of inputs explains: its finding
// is added once the table's keys are known to be the store's; want: the
// store holds a state for it, to be named as the finding's Actual.
type divergence struct {
	f    audit.Finding
	want bool
}

// loss is what attribution learned of a vanished input.
type loss struct {
	cause  audit.Cause
	stage  audit.Stage
	rawKey []byte
}

// inputRec is what a table keeps of one input until the table is
// checked: 56 bytes and no pointer. The check makes an input of it for
// one key at a time (materialize).
type inputRec struct {
	offset, ts int64
	digest     codec.Digest
	part, r    int32 // part: the source partition, encoded with its topic (sourcePart)
	status     copyStatus
	late       bool // windowed: late for its window under the stream time bound (window.go)
	unsure     bool // passed a filter whose predicate is not known (input.unsure)
	elem       uint16
	pos        int64 // the offset of its copy (copyInfo.offset), when applied or pending
}

// inputRef names one input of a table: its source partition and offset.
type inputRef struct {
	part   int32
	offset int64
	elem   int // the steps' element (input.elem)
}

type keyState struct {
	key     string        // the map's key, shared by the inputs
	r       int32         // the key's repartition partition, -1 unknown, rUnset not worked out yet
	cl      *clState      // the key's changelog state, where clKnown
	clKnown bool          // cl is ts.changelog[key] (the keys of a table in memory start as the store's)
	inputs  []inputRec    // consumed, not pending, in source partition then offset order
	values  []audit.Value // the inputs' decoded values, for folds only
	pending []inputRec    // consumed, with a copy still in flight
	pvalues []audit.Value // the pending inputs' values, for folds only
}

// rUnset is keyState.r before the key's first input works it out.
const rUnset = -2

// clOf is the key's changelog state.
func (ts *tableState) clOf(key string, ks *keyState) *clState {
	if ks.clKnown {
		return ks.cl
	}
	return ts.changelog[key]
}

// materialize makes the inputs the check works with from what the table
// kept of them.
func (ts *tableState) materialize(key string, recs []inputRec, values []audit.Value) []*input {
	out := make([]*input, len(recs))
	for i, x := range recs {
		in := &input{table: ts, tp: ts.tpOf(x.part), part: x.part, offset: x.offset, ts: x.ts,
			key: key, digest: x.digest, status: x.status, r: x.r, late: x.late, unsure: x.unsure, elem: int(x.elem), cpos: x.pos}
		if i < len(values) {
			in.value = values[i]
		}
		out[i] = in // its copy, if any, is looked up when it is attributed (copyOf)
	}
	return out
}

// copyOf looks up what the repartition topic holds of an input.
func (ts *tableState) copyOf(in *input) *copyInfo {
	if in.cpy == nil && ts.copies != nil && in.status != copyDirect {
		if ci, ok := ts.copies[fingerprintOf(ts.fpKey(in.key), in.digest, in.ts)]; ok {
			in.cpy = &ci
		}
	}
	return in.cpy
}

type clEntry struct {
	offset int64
	digest codec.Digest
	ts     int64
	null   bool
}

type clState struct {
	partition int32
	// history holds the committed states in offset order (where not
	// compacted) for folds, whose reset check walks it; only the final
	// state for latest tables.
	history []clEntry
	txn     int64 // the first offset of the last state's transaction, -1 for none
	// first holds history's first state until a second one moves it out:
	// reading a key's final state then touches one block of memory
	first [1]clEntry
}

// add appends a committed state of the key, of the transaction whose
// first offset is txn (-1: none); it reports whether the key's last state
// was of the same transaction.
func (c *clState) add(e clEntry, txn int64) (twice bool) {
	if txn >= 0 {
		twice = c.txn == txn
	}
	c.txn = txn
	if c.history == nil {
		c.first[0] = e
		c.history = c.first[:1:1]
	} else {
		c.history = append(c.history, e) // the key's states, in order: the judge explains them
	}
	return twice
}

func (c *clState) final() (clEntry, bool) {
	if c == nil || len(c.history) == 0 {
		return clEntry{}, false
	}
	e := c.history[len(c.history)-1]
	return e, !e.null
}

type tableState struct {
	t *Table
	// keys and copies hold the per-record state: the inputs by key and
	// the repartition copies by fingerprint; for a table spilled to disk,
	// those of one bucket of keys at a time (eachBucket). keysKnown: keys
	// holds every key of the store, so a key added later has no state.
	keys      map[string]*keyState
	keysKnown bool
	copies    map[fingerprint]copyInfo
	// copyOffs holds, for a fingerprint with several committed copies
	// below the cut, their offsets in order (copyInfo keeps the first)
	copyOffs  map[fingerprint][]int64
	leftover  map[fingerprint]bool // while the keys are checked: copies no input matched (cleanLatest)
	spill     *spill
	pass      checkPass // which keys checkKeys judges (a spilled table's)
	putOff    bool      // passFound left out a key of the bucket
	changelog map[string]*clState
	// kept, while a store rebuilt a bucket at a time is checked, holds the
	// states of the keys whose check needs them after (retain); the
	// bucket's own are ts.changelog
	kept   map[string]*clState
	aborts map[fingerprint]*audit.Txn // the transaction of a fingerprint's first aborted copy
	// found holds, per (source partition, repartition partition), the
	// lowest and highest source offsets whose copies are readable.
	found       map[[2]int32][2]int64
	rParts      int32
	purgedRange map[int32][2]int64 // repartition partition → [committed, log start) purged before commit
	complete    bool               // every source partition's history is readable from offset 0
	// For an uncached table (Table.Uncached): whether each changelog
	// partition is whole (readable from offset 0, nothing compacted or
	// missing); exact lists the changelog partitions whose histories hold
	// every state, and twiceInTxn says some key has two states in one
	// transaction.
	clWhole    map[int32]bool
	exact      map[int32]bool
	twiceInTxn bool
	// expected holds a key's expected final value where the inputs say
	// otherwise than the store (for the join); expIn the input whose value
	// it is, re-read when needed, for latest tables.
	expected map[string]audit.Value
	expIn    map[string]inputRef
	// want lists, per key, the findings whose Actual is the key's final
	// state; finals holds those states, decoded, for the report.
	want      map[string][]*audit.Finding
	finals    map[string]audit.Value
	consumed  int64 // consumed inputs, null keys included
	inputs    int64 // inputs checked against the store, counted before they are dropped
	storeKeys int64 // keys in the store
	unplaced  bool  // --partitions, and an input's key could not be placed in a partition
	// deletedFrom lists the source partitions whose oldest records are gone
	// (retention, DeleteRecords): a store's state may be one of theirs.
	deletedFrom  map[int32]bool
	deletedState int // keys whose state may be a deleted input's, not judged
	diverged     []divergence
	undecided    []audit.Finding      // keys that lost inputs the evidence cannot name
	doubled      []audit.Finding      // duplicates a fold's state shows
	resets       map[int32]*lostRange // changelog partition → the states restarted keys lost
	failed       int                  // keys whose inputs the reducer failed on
	failedKeys   []string
	bounded      int // keys whose explanation search gave up
	// unsureLeft counts the consumed inputs with no copy behind a filter
	// whose predicate is not known (Table.Unsure): not judged; unsureAt
	// names the first; unsurePurged the repartition partitions purged
	// before commit that would hold some of their copies
	unsureLeft   int
	unsureAt     []tpOffset
	unsurePurged map[int32]bool
	// namedPurge: repartition partitions purged before commit some of
	// whose inputs have a finding of their own
	namedPurge map[int32]bool
	// cut2 is, per repartition partition, the group's committed offset
	// read again once the changelog was read, where it moved past the cut
	// (a running app, recut): a copy below it may be applied in the
	// changelog read
	cut2 map[int32]int64
	// srcCut2 is cut2 for the source partitions (sourcePart) of a table
	// fed straight from them (no repartition hop): their records at or
	// above the cut and below it were maybe applied in the changelog read,
	// so they are inputs in flight (lag inputs, readSourceTopic)
	srcCut2 map[int32]int64
	// moved: the group's offsets on the table's topics moved while the
	// audit read them (recut): its changelog may be ahead of the cut
	moved bool
	// lagged: its source or repartition topic holds committed records at
	// or above the cut (not consumed yet)
	lagged bool
	// atLeastOnce says that the store's changelog holds records written
	// outside transactions: the app runs at-least-once, and after a
	// restart it applies again what it processed since its last commit;
	// reapplied counts the keys whose history only that explains.
	atLeastOnce     bool
	plainCopies     bool // repartition copies written outside transactions (at-least-once)
	reapplied       int
	reappliedInputs int             // inputs an explanation applies twice, by design under at-least-once
	rLogStart       map[int32]int64 // repartition partition → its log start
	keyNotes        []string        // notes on single keys, sorted before they are added
	// unreadable lists partitions of the table's topics that could not be
	// read: its state is then not judged, since any conclusion could rest
	// on the missing part.
	unreadable []audit.TopicPartition
	// absent lists the table's topics the source does not show (deleted,
	// or hidden by an ACL): an empty store or topic is not evidence.
	absent []string
	win    *winState // windowed tables (window.go)
	steps  stepTally // what the table's steps did with its inputs (steps.go)
	// multiElem says the steps emitted several elements for some input: a
	// finding then says which element it is
	multiElem bool
	// xout, while a shard reads a source partition of its own, holds its
	// inputs for the shards that own their keys (exchange.go)
	xout *xsend
	// xself holds, by source partition, the inputs the shard sent itself
	// until it receives them (exchange.go)
	xself map[int32][]byte
	// deletedOffsets counts the offsets below the source partitions' log
	// starts (retention, DeleteRecords): their copies may still be on the
	// repartition topic. elements and consumedWithKey count what the
	// steps emitted and the inputs they emitted for.
	deletedOffsets, elements, consumedWithKey int64
}

// audit checks one table end to end.
func (r *run) audit(ctx context.Context, t *Table) error {
	ctx, task := trace.NewTask(ctx, "table "+t.Name) // go tool trace shows the phases (kaudit --trace)
	defer task.End()
	if t.Regroup != nil && !r.p.Keyless {
		r.checkRegroup(ctx, t)
		return ctx.Err()
	}
	if t.Cogroup != nil && !r.p.Keyless {
		r.checkCogroup(ctx, t)
		return ctx.Err()
	}
	ts := &tableState{t: t, keys: map[string]*keyState{}, changelog: map[string]*clState{}, copies: map[fingerprint]copyInfo{}, aborts: map[fingerprint]*audit.Txn{},
		found: map[[2]int32][2]int64{}, purgedRange: map[int32][2]int64{}, unsurePurged: map[int32]bool{}, namedPurge: map[int32]bool{}, complete: true, expected: map[string]audit.Value{}, expIn: map[string]inputRef{},
		want: map[string][]*audit.Finding{}, finals: map[string]audit.Value{}, deletedFrom: map[int32]bool{},
		rLogStart: map[int32]int64{},
		clWhole:   map[int32]bool{}, exact: map[int32]bool{}}
	r.tables[t.Name] = ts
	if t.Window != nil {
		ts.win = newWinState(r.windowOf(t))
	}
	if r.p.Keyless {
		return r.keyless(ctx, ts)
	}
	if err := r.planSpill(ctx, ts); err != nil {
		return err
	}
	if ts.spill != nil {
		defer ts.spill.close()
	}
	if t.Repartition != "" {
		if !phase(ctx, "repartition", func() bool { return r.readRepartition(ctx, ts) }) {
			return ctx.Err()
		}
		if ts.win != nil {
			ts.win.index()
		}
	}
	if t.Changelog != "" {
		phase(ctx, "changelog", func() bool { r.readChangelog(ctx, ts); return true })
		if ts.spill == nil {
			ts.startKeys(len(ts.changelog), 0, maps.All(ts.changelog)) // the store's keys first
		}
		r.recut(ctx, ts)
	}
	if err := phaseErr(ctx, "source", func() error { return r.readSource(ctx, ts) }); err != nil {
		return err
	}
	if ts.win != nil {
		ts.win.index()
		r.decideLate(ts)
	}
	if ts.spill != nil {
		if err := ts.spill.finish(); err != nil {
			return err
		}
	}
	if err := phaseErr(ctx, "check", func() error { return r.checkTable(ctx, ts) }); err != nil {
		return err
	}
	if t.Output != "" {
		r.checkOutput(ctx, ts)
	}
	r.fillActuals(ctx, ts)
	r.drop(ts)
	return ctx.Err()
}

// drop releases what the table's check needed per input and per key once
// it is done: the vanished inputs, the expected values that differ from
// the store and the store's state of their keys stay for the join (which
// reads the changelogs again, a partition at a time) and the report.
func (r *run) drop(ts *tableState) {
	if ts.spill == nil || ts.spill.states == nil {
		ts.storeKeys = int64(len(ts.changelog)) // else counted a bucket at a time
	}
	kept := map[string]*clState{}
	for _, in := range r.losses {
		if in.table == ts {
			kept[in.key] = ts.changelog[in.key]
		}
	}
	ts.keys, ts.copies, ts.aborts, ts.found, ts.changelog = nil, nil, nil, nil, kept
}

func (r *run) readRepartition(ctx context.Context, ts *tableState) bool {
	parts, ok := r.partitionsOf(ctx, ts.t.Repartition, "repartition")
	if !ok {
		ts.absent = append(ts.absent, ts.t.Repartition)
		return true
	}
	ts.rParts = r.topics[ts.t.Repartition].Partitions
	if ts.spill == nil && len(ts.copies) == 0 && !r.p.Keyless {
		ts.copies = make(map[fingerprint]copyInfo, r.records(ctx, ts.t.Repartition, parts)) // grown once, not doubled up to it
	}
	rd := r.read(ctx, tpsOf(ts.t.Repartition, parts), "repartition", r.mode(decodeDigest))
	defer rd.stop()
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: ts.t.Repartition, Partition: p}
		c := r.committed(tp)
		var inFlight, inFlightOpen int64
		applied, repartitioned := r.counter("applied"), r.counter("repartitioned")
		l, ok := r.walkTable(ctx, ts, rd, tp, func(it *item) {
			e := &it.Entry
			if r.p.Keyless {
				if e.Fate == audit.FateCommitted && (c < 0 || e.Record.Offset >= c) {
					inFlight++
				}
				return
			}
			if !r.decoded(it) {
				return
			}
			fp := it.fp
			if !it.hasFP {
				fp = fingerprintOf(it.keyText, it.digest, e.Record.Timestamp)
			}
			if e.Txn == nil && e.Fate == audit.FateCommitted {
				ts.plainCopies = true
			}
			ev := copyEvent{f: fp, partition: p, offset: e.Record.Offset, ts: e.Record.Timestamp,
				fate: e.Fate, applied: c >= 0 && e.Record.Offset < c}
			switch e.Fate {
			case audit.FateCommitted:
				if ev.applied {
					*applied++
					if ts.win != nil {
						ts.win.processedAt(p, ev.offset, ev.ts)
					}
				} else {
					inFlight++
				}
				*repartitioned++
			case audit.FateOpen:
				inFlightOpen++
			case audit.FateAborted:
				if _, ok := ts.aborts[ev.f]; !ok {
					ts.aborts[ev.f] = e.Txn // the transaction of its first aborted copy
				}
			}
			if ts.spill != nil {
				ts.spill.addCopy(it.keyText, ev)
			} else {
				ts.addCopy(ev)
			}
		})
		if !ok {
			continue
		}
		if inFlight+inFlightOpen > 0 {
			f := audit.NewFinding(audit.StageRepartition, audit.CausePending, tp, max(c, l.Offsets.LogStart))
			f.Count = inFlight + inFlightOpen
			f.Detail = fmt.Sprintf("%d committed records at or above the group's committed offset %d are not applied yet", inFlight, c)
			if inFlightOpen > 0 {
				f.Detail += fmt.Sprintf("; %d more wait in open transactions", inFlightOpen)
			}
			r.add(f)
			if c < 0 && !r.p.Keyless && len(r.group.Offsets) > 0 {
				// Kafka Streams gives an internal topic no reset policy of its
				// own (InternalTopologyBuilder.offsetResetStrategy: NONE), so
				// the app-wide auto.offset.reset applies, whose Streams
				// default is earliest: the app reads these records from the
				// log start, they are in flight
				r.note("%s: the group has no committed offset for this partition, which holds %d records: taken as in flight (pending), as Kafka Streams resets an internal topic by the app's auto.offset.reset, earliest unless the app overrides it (its log's ConsumerConfig values show it)", tp, inFlight+inFlightOpen)
			}
		}
		logStart := r.clusterLogStart(tp, l.Offsets.LogStart)
		ts.rLogStart[p] = logStart
		if c >= 0 && logStart > c {
			ts.purgedRange[p] = [2]int64{c, logStart}
		}
		if r.uncaptured(tp, l.Offsets.LogStart, c) {
			ts.unreadable = append(ts.unreadable, tp)
		}
		if r.aboveHW(tp, audit.StageRepartition, c, l.Offsets.HW) {
			ts.unreadable = append(ts.unreadable, tp) // the copies the cut covers are gone
		}
	}
	return true
}

// records returns how many offsets the partitions of topic hold (capped
// at 16M), to size a map for them; 0 when the source cannot say.
func (r *run) records(ctx context.Context, topic string, parts []int32) int {
	var n int64
	for _, p := range parts {
		o, err := r.src.Offsets(ctx, audit.TopicPartition{Topic: topic, Partition: p})
		if err != nil {
			return 0
		}
		n += max(o.HW-o.LogStart, 0)
	}
	return int(min(n, 1<<24))
}

// copyEvent is one record of a repartition topic, as the table keeps it.
type copyEvent struct {
	f         fingerprint
	partition int32
	offset    int64
	ts        int64
	fate      audit.Fate
	applied   bool // committed below the group's committed offset
}

// addCopy adds one repartition record to what the table holds of its
// fingerprint.
func (ts *tableState) addCopy(ev copyEvent) {
	ci, seen := ts.copies[ev.f]
	if !seen {
		ci = copyInfo{partition: ev.partition, offset: ev.offset, abortedAt: -1, ts: ev.ts}
	}
	switch ev.fate {
	case audit.FateCommitted:
		if ci.applied+ci.pending == 0 {
			ci.offset, ci.partition = ev.offset, ev.partition
		} else if ev.applied && ci.applied > 0 {
			// a second committed copy of the fingerprint: inputs alike take
			// one copy each, each at its own place (elements)
			if ts.copyOffs == nil {
				ts.copyOffs = map[fingerprint][]int64{}
			}
			if len(ts.copyOffs[ev.f]) == 0 {
				ts.copyOffs[ev.f] = []int64{ci.offset}
			}
			ts.copyOffs[ev.f] = append(ts.copyOffs[ev.f], ev.offset)
		}
		if ev.applied {
			ci.applied++
		} else {
			ci.pending++
			ts.lagged = true
		}
	case audit.FateOpen:
		ci.open++
	case audit.FateAborted:
		ci.aborted++
		if ci.abortedAt < 0 {
			ci.abortedAt = ev.offset
		}
	}
	ts.copies[ev.f] = ci
}

func (r *run) readChangelog(ctx context.Context, ts *tableState) {
	parts, ok := r.partitionsOf(ctx, ts.t.Changelog, "changelog")
	if !ok {
		ts.absent = append(ts.absent, ts.t.Changelog)
		return
	}
	if len(ts.changelog) == 0 && r.topics[ts.t.Changelog].Compacted() && (ts.spill == nil || ts.spill.states == nil) {
		ts.changelog = make(map[string]*clState, r.records(ctx, ts.t.Changelog, parts)) // about a record per key
	}
	rd := r.startReads(ctx, &reads{r: r, role: "changelog", decode: decodeDigest, window: ts.t.Window, withSeq: true}, tpsOf(ts.t.Changelog, parts))
	defer rd.stop()
	var slab []clState // the states, allocated a block at a time
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: ts.t.Changelog, Partition: p}
		l, ok := r.walkTable(ctx, ts, rd, tp, func(it *item) {
			e := &it.Entry
			if e.Fate != audit.FateCommitted {
				return
			}
			if !r.decoded(it) {
				return
			}
			key := it.keyText
			if ts.win != nil {
				inner := innerOf(it.key)
				key += r.taskSuffix(ts, inner, p)
				ts.win.inner[key] = inner
			} else {
				key += r.taskSuffix(ts, key, p)
			}
			txn := int64(-1)
			if e.Txn != nil {
				txn = e.Txn.FirstOffset
			} else {
				ts.atLeastOnce = true
			}
			ent := clEntry{offset: e.Record.Offset, ts: e.Record.Timestamp, null: e.Record.Value == nil}
			if !ent.null {
				ent.digest = it.digest
			}
			if ts.spill != nil && ts.spill.states != nil {
				ts.spill.addState(key, p, ent, txn) // the store is rebuilt a bucket at a time
				return
			}
			cs := ts.changelog[key]
			if cs == nil {
				if len(slab) == cap(slab) {
					slab = make([]clState, 0, 1024)
				}
				slab = append(slab, clState{partition: p, txn: -1})
				cs = &slab[len(slab)-1]
				ts.changelog[key] = cs
			}
			ts.twiceInTxn = cs.add(ent, txn) || ts.twiceInTxn
		})
		if ok && l != nil {
			n := l.Counts
			ts.clWhole[p] = l.Offsets.LogStart == 0 && n.Purged == 0 && n.Compacted == 0 && n.Gap == 0
		}
	}
}

func (r *run) readSource(ctx context.Context, ts *tableState) error {
	for i, topic := range append([]string{ts.t.Source}, ts.t.Merged...) {
		if err := r.readSourceTopic(ctx, ts, i, topic); err != nil {
			return err
		}
	}
	return nil
}

// readSourceTopic reads one source topic of the table, the src-th
// (Table.Merged): its consumed records are the table's inputs.
func (r *run) readSourceTopic(ctx context.Context, ts *tableState, src int, topic string) error {
	t := ts.t
	parts, ok := r.partitionsOf(ctx, topic, "source")
	if !ok {
		if r.exchanging(ts, topic) {
			return r.sendGone(ts, topic) // the shards waiting for its partitions
		}
		return nil
	}
	// A shard (--partitions) is a set of the tasks that apply a re-keyed
	// table: its inputs come from every source partition, so all are read
	// and only the inputs whose keys the shard's partitions hold are kept;
	// a source partition's own findings belong to the shard of its number.
	shardByKey := r.opts.Partitions != nil && t.Repartition != "" && !r.p.Keyless
	// With an exchange, the shard reads its own partitions only and the
	// shards hand each other the inputs of their keys (exchange.go).
	exchange := shardByKey && r.exchanging(ts, topic)
	var foreign map[audit.TopicPartition]bool
	if shardByKey && !exchange {
		parts = allPartitions(r.topics[topic].Partitions)
		foreign = r.foreignOf(tpsOf(topic, parts))
	}
	rd := &reads{r: r, role: "source", decode: r.mode(decodeAll), foreign: foreign}
	if t.Latest && t.SelectField != "" {
		rd.field = t.SelectField // the inputs' values are compared by digest
	}
	rd = r.startReads(ctx, rd, tpsOf(topic, parts))
	defer rd.stop()
	for _, p := range parts {
		tp := audit.TopicPartition{Topic: topic, Partition: p}
		own := !foreign[tp]
		c := r.committed(tp)
		var lag int64
		read, consumed := r.counter("read"), r.counter("consumed")
		var nullKeys []int64
		var nullCount int64
		if exchange {
			ts.xout = &xsend{bufs: make([][]byte, r.opts.Exchange.Count)}
		}
		l, ok := r.walkTable(ctx, ts, rd, tp, func(it *item) {
			e := &it.Entry
			if e.Fate != audit.FateCommitted {
				return
			}
			rec := &e.Record
			// lagIn: consumed after the cut, before the offsets read
			// again after the changelog (recut): maybe applied there
			lagIn := c >= 0 && rec.Offset >= c && rec.Offset < ts.srcCut2[sourcePart(src, p)]
			if c < 0 || rec.Offset >= c {
				if own {
					*read++
					lag++
				}
				ts.lagged = true
				if !lagIn || r.p.Keyless || it.decErr != nil {
					return
				}
			} else {
				if !r.inputOutsideSkips(tp, rec.Offset) {
					return // the committed offset was moved past it: never consumed (the history's finding)
				}
				if own {
					*read++
					*consumed++
					ts.consumed++
				}
				if r.p.Keyless {
					return
				}
			}
			if !own && it.decErr != nil {
				return // the shard that owns the partition reports it
			}
			if !r.decoded(it) {
				return
			}
			counted := own && !lagIn // a lag input's failures are the next audit's
			if t.Steps != nil {
				els, err := t.Steps(Env{Key: it.key, Value: it.value, Headers: rec.Headers, Timestamp: rec.Timestamp})
				switch {
				case err != nil:
					if counted {
						ts.steps.failed(tp, rec.Offset, err)
					}
				case len(els) == 0:
					if counted {
						ts.steps.filter(rec.Offset)
					}
				}
				if len(els) > 1 {
					ts.multiElem = true
				}
				if len(els) > maxElem && counted {
					ts.steps.failed(tp, rec.Offset, fmt.Errorf("the steps emit %d elements for one input, more than kaudit tells apart (%d)", len(els), maxElem))
					return
				}
				for i, e := range els {
					dg := it.digest
					if t.ValueChanging {
						dg = codec.DigestOf(e.Value)
					}
					r.addElement(ts, elemOf{it: it, own: own, lag: lagIn, p: p, part: sourcePart(src, p), key: e.Key, v: e.Value, digest: dg, elem: i, unsure: e.Unsure, shardByKey: shardByKey}, &nullKeys, &nullCount)
				}
				return
			}
			key := it.key
			if t.SelectKey != nil {
				var err error
				switch s, isString := it.field.(string); {
				case it.picked && isString:
					key = s // value.FIELD of a string is the string
				case it.picked:
					key, err = t.SelectKey(Env{Key: it.key, Value: map[string]any{t.SelectField: it.field}, Headers: rec.Headers, Timestamp: rec.Timestamp})
				default:
					key, err = t.SelectKey(Env{Key: it.key, Value: it.value, Headers: rec.Headers, Timestamp: rec.Timestamp})
				}
				if err != nil {
					if counted {
						ts.steps.failed(tp, rec.Offset, err)
					}
					return
				}
			}
			v := it.value
			if it.picked {
				v = pickedValue // not null, and not kept (Latest)
			}
			r.addElement(ts, elemOf{it: it, own: own, lag: lagIn, p: p, part: sourcePart(src, p), key: key, v: v, digest: it.digest, shardByKey: shardByKey}, &nullKeys, &nullCount)
		})
		if exchange {
			m := xmeta{Unreadable: rd.failed, MultiElem: ts.multiElem, Unplaced: ts.unplaced}
			if ok {
				m.Unreadable = ""
				m.LogStart = l.Offsets.LogStart
				m.Incomplete = r.clusterLogStart(tp, l.Offsets.LogStart) > max(c, 0) || c > l.Offsets.HW
			}
			if err := r.send(ts, topic, p, m); err != nil {
				return err
			}
		}
		if !ok {
			ts.complete = false
			continue
		}
		if l.Offsets.LogStart > 0 {
			ts.complete = false
			ts.deletedFrom[sourcePart(src, p)] = true
			ts.deletedOffsets += l.Offsets.LogStart
		}
		if !own {
			if r.clusterLogStart(tp, l.Offsets.LogStart) > max(c, 0) || c > l.Offsets.HW {
				ts.complete = false // reported by the shard that owns the partition
			}
			continue
		}
		r.lagFinding(tp, l, c, lag)
		if n := ts.steps.filtered; n > 0 {
			f := audit.NewFinding(audit.StageSource, audit.CauseFiltered, tp, ts.steps.firstFiltered[0])
			f.Count = n
			f.Detail = fmt.Sprintf("table %s: its steps emit nothing for %d consumed inputs (a filter, a branch not taken, an empty flatMap), as the spec says the app does (offsets %s)", t.Name, n, joinOffsets(ts.steps.firstFiltered, n))
			r.add(f)
		}
		ts.steps.filtered, ts.steps.firstFiltered = 0, nil
		if nullCount > 0 {
			f := audit.NewFinding(audit.StageSource, audit.CauseNullKey, tp, nullKeys[0])
			f.Count = nullCount
			f.Detail = fmt.Sprintf("table %s: %d inputs have a null selected key or value, which Kafka Streams drops by design (offsets %s)", t.Name, nullCount, joinOffsets(nullKeys, nullCount))
			r.add(f)
		}
		if r.gapFindings(tp, l, c) {
			ts.complete = false
		}
	}
	if exchange && ctx.Err() == nil {
		return r.receive(ctx, ts, src, topic, r.topics[topic].Partitions)
	}
	return ctx.Err()
}

// lagFinding reports a source partition's records at or above the
// group's committed offset: not consumed yet.
func (r *run) lagFinding(tp audit.TopicPartition, l *ledger.Ledger, c, lag int64) {
	if lag <= 0 {
		return
	}
	f := audit.NewFinding(audit.StageSource, audit.CausePending, tp, max(c, l.Offsets.LogStart))
	f.Count = lag
	f.Detail = fmt.Sprintf("%d committed records at or above the group's committed offset %d are not consumed yet (lag)", lag, c)
	if c < 0 {
		f.Detail = fmt.Sprintf("the group has no committed offset for this partition: its %d committed records are not consumed yet", lag)
		if len(r.group.Offsets) > 0 {
			r.missing("%s: the group has no committed offset for this partition, which holds %d committed records: whether the app consumed them cannot be judged", tp, lag)
		}
	}
	r.add(f)
}

// gapFindings reports what a source partition's offsets prove lost
// before the app read it (a retention gap) and what the evidence does
// not hold (a capture that misses records, a committed offset above the
// high watermark); it reports whether records were deleted unread.
func (r *run) gapFindings(tp audit.TopicPartition, l *ledger.Ledger, c int64) (gap bool) {
	if logStart := r.clusterLogStart(tp, l.Offsets.LogStart); c >= 0 && logStart > c {
		f := audit.NewFinding(audit.StageSource, audit.CauseRetentionGap, tp, c)
		f.Count = logStart - c
		f.Detail = fmt.Sprintf("the log-start offset %d is above the group's committed offset %d: offsets %d-%d were deleted (retention or DeleteRecords) before the app read them",
			logStart, c, c, logStart-1)
		r.add(f)
		gap = true
	}
	r.uncaptured(tp, l.Offsets.LogStart, c)
	r.aboveHW(tp, audit.StageSource, c, l.Offsets.HW)
	return gap
}

// elemOf is one element an input yields for the table: the input
// itself, or what the table's steps emit for it.
type elemOf struct {
	it         *item
	own        bool  // the shard owns the source partition
	lag        bool  // at or above the cut, maybe applied (readSourceTopic's lagIn)
	p          int32 // the source partition
	part       int32 // p with its topic (sourcePart)
	key, v     audit.Value
	digest     codec.Digest
	elem       int  // its index among the steps' elements
	unsure     bool // it passed a filter whose predicate is not known
	shardByKey bool
}

// addElement adds one element of a consumed input to the table: a null
// key or value is counted (Streams drops it), else it is matched with its
// copy.
func (r *run) addElement(ts *tableState, e elemOf, nullKeys *[]int64, nullCount *int64) {
	t, rec, it := ts.t, &e.it.Record, e.it
	if ts.win != nil && t.Repartition == "" && e.key != nil && e.elem == 0 && !e.lag {
		ts.win.sourceRecord(e.part, rec.Offset, rec.Timestamp) // the window processor's stream time, without a hop
	}
	if e.v == nil && e.key != nil && t.TableSource {
		e.digest = tombDigest // a tombstone: it deletes the key
	} else if e.v == nil && e.key != nil && ts.win != nil {
		// KStreamWindowAggregate (3.6.2) skips a null key only: a null
		// value reaches the aggregator (count() counts it), which kaudit
		// does not model; the windows it falls in are not judged
		if !e.shardByKey || r.inShard(ts, codec.Text(e.key)) {
			text := codec.Text(e.key)
			suffix := r.taskSuffix(ts, text, e.p)
			for _, start := range ts.win.w.starts(rec.Timestamp) {
				ts.win.nulls[ts.win.windowKey(e.key, start)+suffix] = true
			}
		}
		return
	} else if e.key == nil || e.v == nil {
		if e.own && !e.lag {
			*nullCount++
			if len(*nullKeys) < 10 {
				*nullKeys = append(*nullKeys, rec.Offset)
			}
		}
		return
	}
	var text string
	var fp *fingerprint
	if it.picked && it.hasFP && t.SelectKey != nil && t.Steps == nil {
		text, fp = it.selText, &it.fp // key is the field's string: its text and fingerprint are the reader's
	} else {
		text = codec.Text(e.key)
	}
	if ts.xout != nil {
		r.route(ts, text, inputRec{offset: rec.Offset, ts: rec.Timestamp, digest: e.digest, part: e.part, r: -1, elem: uint16(e.elem), unsure: e.unsure}, inputRaw(t, &e))
		return // added by the shard that receives it (exchange.go)
	}
	if e.shardByKey && !r.inShard(ts, text) {
		return
	}
	suffix := r.taskSuffix(ts, text, e.p)
	if !e.lag {
		ts.elements++
		if e.elem == 0 {
			ts.consumedWithKey++
		}
	}
	x := inputRec{offset: rec.Offset, ts: rec.Timestamp, digest: e.digest, part: e.part, r: -1, elem: uint16(e.elem), unsure: e.unsure}
	if ts.spill != nil {
		ts.spill.addInput(text+suffix, x, inputRaw(t, &e)) // decoded again when its bucket is checked
		return
	}
	if ts.win != nil {
		r.addWindowed(ts, text, suffix, e.key, x, e.v, fp)
		return
	}
	if suffix != "" {
		fp = nil // the reader's fingerprint is the key's own
	}
	r.addInput(ts, text+suffix, x, e.v, fp)
}

// tombDigest is the digest a tombstone input of a table source
// (Table.TableSource) carries in place of its value's: applying it
// deletes the key.
var tombDigest = codec.Digest{0xde, 0x1e, 0x7e, 0xd0, 't', 'o', 'm', 'b', 's', 't', 'o', 'n', 'e', 0, 0, 1}

// maxElem bounds the elements the steps may emit for one input: an
// input keeps its element's index in 15 bits, the 16th (unsureBit) saying,
// in the spill and the exchange, that it is unsure (a table whose steps
// emit more is not judged).
const (
	maxElem   = 1 << 15
	unsureBit = 1 << 15
)

// pickedValue stands for a source value that was digested, not built
// (item.picked): not null, and never folded.
var pickedValue audit.Value = struct{}{}

// addInput matches one consumed input with its copy and adds it to its
// key's state; v is its decoded value, kept for folds only.
func (r *run) addInput(ts *tableState, key string, x inputRec, v audit.Value, fp *fingerprint) {
	r.addInputTo(ts, ts.keyState(key), x, v, fp)
}

// keyState returns key's state in ts.keys, added if it has none.
func (ts *tableState) keyState(key string) *keyState {
	ks := ts.keys[key]
	if ks == nil {
		ks = &keyState{key: key, r: rUnset, clKnown: ts.keysKnown}
		ts.keys[key] = ks
	}
	return ks
}

// addInputTo is addInput for the key whose state is ks.
func (r *run) addInputTo(ts *tableState, ks *keyState, x inputRec, v audit.Value, fp *fingerprint) {
	if ks.r == rUnset {
		ks.r = partitionOfKey(r.keySerde(ts.t), ks.key, ts.rParts)
	}
	in := input{table: ts, tp: ts.tpOf(x.part), part: x.part, offset: x.offset, ts: x.ts, key: ks.key, digest: x.digest, r: ks.r, elem: int(x.elem), unsure: x.unsure}
	r.match(ts, &in, fp)
	x.r, x.status, x.pos = in.r, in.status, in.cpos
	if in.status == copyPending || in.status == copyOpen {
		ks.pending = append(ks.pending, x) // in flight: not part of the expected state
		if !ts.t.Latest {
			ks.pvalues = append(ks.pvalues, v)
		}
		return
	}
	ks.inputs = append(ks.inputs, x)
	if !ts.t.Latest {
		ks.values = append(ks.values, v) // folded by the state check
	}
}

// inShard reports whether a table key belongs to the audited shard: its
// repartition partition is one of --partitions. A key the key serde
// cannot place makes the table unjudgeable.
func (r *run) inShard(ts *tableState, key string) bool {
	p := partitionOfKey(r.keySerde(ts.t), key, ts.rParts)
	if p < 0 {
		ts.unplaced = true
		return false
	}
	return containsPartition(r.opts.Partitions, p)
}

// walkTable is walk for one of a table's topics; an unreadable partition
// is remembered against the table.
func (r *run) walkTable(ctx context.Context, ts *tableState, rd *reads, tp audit.TopicPartition, fn func(*item)) (*ledger.Ledger, bool) {
	l, ok := r.walkLedger(ctx, rd, tp, fn)
	if !ok {
		ts.unreadable = append(ts.unreadable, tp)
	}
	return l, ok
}

// match finds the input's copy on the repartition topic; in.r is the
// partition its key hashes to, which a matched copy's replaces.
func (r *run) match(ts *tableState, in *input, fp *fingerprint) {
	if ts.t.Repartition == "" {
		in.status = copyDirect
		if c := r.committed(in.tp); c >= 0 && in.offset >= c {
			in.status = copyPending // a lag input (readSourceTopic): maybe applied
		}
		return
	}
	var f fingerprint
	if fp != nil {
		f = *fp // computed by the reader of the same key, digest and timestamp
	} else {
		f = fingerprintOf(in.key, in.digest, in.ts)
	}
	ci, ok := ts.copies[f]
	switch {
	case !ok:
		in.status = copyNone
	case ci.applied > 0:
		ci.applied--
		ci.matched++
		in.status = copyApplied
	case ci.pending > 0:
		ci.pending--
		ci.matched++
		in.status = copyPending
	case ci.open > 0:
		ci.open--
		in.status = copyOpen
	case ci.aborted > 0:
		in.status = copyAborted
	default:
		in.status = copyNone // every copy was matched by an identical earlier input
	}
	if ok {
		ci.claims++
		if ci.claims == 1 {
			ci.claimPart, ci.claimOffset, ci.claimMin, ci.claimMax = in.part, in.offset, in.offset, in.offset
		} else {
			ci.claimMixed = ci.claimMixed || ci.claimPart != in.part
			ci.claimMin, ci.claimMax = min(ci.claimMin, in.offset), max(ci.claimMax, in.offset)
		}
		ts.copies[f] = ci
	}
	if in.status == copyApplied || in.status == copyPending {
		in.r, in.cpos = ci.partition, ci.offset
	}
}

// addFound adds to ts.found the readable copies whose input is known for
// certain: a fingerprint of one copy on the topic and one input. Where
// several inputs (or copies) share a fingerprint (a mapValues that keeps
// only a customer and an amount: two orders alike at one timestamp), which
// input a copy is of is not known, and taking the first input's would
// place a copy where its input's neighbours are not (a false dropped).
// Called once every input of the copies' keys is matched: for the whole
// table, or for a bucket of keys (all of a key's inputs and copies are in
// its bucket).
func (ts *tableState) addFound(copies map[fingerprint]copyInfo) {
	for _, ci := range copies {
		if ci.claims != 1 || ci.matched != 1 || ci.applied+ci.pending+ci.open+ci.aborted != 0 {
			continue
		}
		k := [2]int32{ci.claimPart, ci.partition}
		if mm, ok := ts.found[k]; ok {
			ts.found[k] = [2]int64{min(mm[0], ci.claimOffset), max(mm[1], ci.claimOffset)}
		} else {
			ts.found[k] = [2]int64{ci.claimOffset, ci.claimOffset}
		}
	}
}

// dups returns the committed copies that no input accounts for, of
// fingerprints some input matched: one input applied twice.
func (ts *tableState) dups() []copyInfo {
	var dups []copyInfo
	for _, ci := range ts.copies {
		if ci.applied+ci.pending > 0 && ci.matched > 0 {
			dups = append(dups, ci)
		}
	}
	return dups
}

// duplicates reports the duplicate copies dups found.
func (r *run) duplicates(ctx context.Context, ts *tableState, dups []copyInfo) {
	sort.Slice(dups, func(i, j int) bool {
		if dups[i].partition != dups[j].partition {
			return dups[i].partition < dups[j].partition
		}
		return dups[i].offset < dups[j].offset
	})
	if ts.plainCopies && ts.atLeastOnce && len(dups) > 0 {
		n := 0
		for _, ci := range dups {
			n += int(ci.applied + ci.pending)
		}
		r.note("table %s: %d committed repartition copies more than their inputs, written outside transactions: under at-least-once an input processed again after a restart is copied again, by design (under exactly-once it would be a duplicate)", ts.t.Name, n)
		return
	}
	if len(ts.deletedFrom) > 0 && len(dups) > 0 {
		// the inputs the app consumed before their records were deleted
		// (retention, DeleteRecords) still have their copies, which match
		// any readable input alike (one key, value and timestamp): a copy
		// more than the readable inputs is then no proof of a duplicate
		n := 0
		for _, ci := range dups {
			n += int(ci.applied + ci.pending)
		}
		r.note("table %s: %d committed repartition copies more than the readable inputs alike (one key, value and timestamp) that account for them; the records of %s before their log start are deleted, and the inputs the app consumed there may have been theirs, so they are not judged duplicates", ts.t.Name, n, ts.partList(ts.deletedFrom))
		return
	}
	for _, ci := range dups {
		tp := audit.TopicPartition{Topic: ts.t.Repartition, Partition: ci.partition}
		fd := audit.NewFinding(audit.StageRepartition, audit.CauseDuplicate, tp, ci.offset)
		fd.Count = int64(ci.applied + ci.pending)
		if rec, ok := r.recordAt(ctx, tp, ci.offset); ok { // the audit keeps no key per copy
			fd.Key = r.text(ctx, tp.Topic, true, rec.Key)
		}
		fd.Timestamp = ci.ts
		fd.Detail = fmt.Sprintf("table %s: %d committed repartition copies of one input beyond the %d inputs that account for them", ts.t.Name, ci.applied+ci.pending, ci.matched)
		r.add(fd)
	}
}

// keyBytes serializes a table key (canonical JSON text) the way the key
// serde would, to find its partition.
func keyBytes(serde, keyText string) ([]byte, bool) {
	if serde == "" {
		serde = "string"
	}
	return codec.KeyBytes(serde, keyText)
}

// keySerde is the serde of t's keys on its repartition topic and
// changelog: its own where its serdes name one, else the pipeline's.
func (r *run) keySerde(t *Table) string {
	return cmp.Or(t.KeySerde, r.p.KeySerde)
}

// partitionOfKey is the partition of a topic of n that a table key's bytes
// (keyBytes) hash to under Kafka's default partitioner; -1 when the key
// serde cannot place the key or n is not known.
func partitionOfKey(serde, keyText string, n int32) int32 {
	b, ok := keyBytes(serde, keyText)
	if !ok || n <= 0 {
		return -1
	}
	return audit.DefaultPartition(b, n)
}

func joinOffsets(offs []int64, total int64) string {
	var b strings.Builder
	for i, o := range offs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, o)
	}
	if total > int64(len(offs)) {
		fmt.Fprintf(&b, " and %d more", total-int64(len(offs)))
	}
	return b.String()
}

// keyless runs the checks that need no key on a table's topics.
func (r *run) keyless(ctx context.Context, ts *tableState) error {
	t := ts.t
	if t.Repartition != "" {
		r.readRepartition(ctx, ts)
		r.specFree(ts)
	}
	if t.Changelog != "" {
		if parts, ok := r.partitionsOf(ctx, t.Changelog, "changelog"); ok {
			r.walkAll(ctx, tpsOf(t.Changelog, parts), "changelog", func(*item) {})
		}
	}
	if t.Source != "" {
		return r.readSource(ctx, ts)
	}
	return ctx.Err()
}

// specFree reports what needs no key of a table that is not judged by
// key (no spec, or the spec cannot judge it): each repartition partition
// purged above the group's committed offset, as one finding for the range.
// A table judged by key names the inputs of those ranges instead.
func (r *run) specFree(ts *tableState) {
	t := ts.t
	for _, p := range slices.Sorted(maps.Keys(ts.purgedRange)) {
		pr := ts.purgedRange[p]
		tp := audit.TopicPartition{Topic: t.Repartition, Partition: p}
		if slices.ContainsFunc(r.skips[tp], func(s history.Skip) bool { return s.From <= pr[0] && pr[1] <= s.To }) {
			continue // the commit history's finding names it already
		}
		f := audit.NewFinding(audit.StageRepartition, audit.CausePurgedBeforeCommit, tp, pr[0])
		f.Count = pr[1] - pr[0]
		why := "without a spec"
		if !r.p.Keyless {
			why = fmt.Sprintf("table %s is not judged, so", t.Name)
		}
		f.Detail = fmt.Sprintf("the log-start offset %d is above the group's committed offset %d (the KAFKA-17635 signature): offsets %d-%d were deleted before the app applied them; %s the inputs they held cannot be named", pr[1], pr[0], pr[0], pr[1]-1, why)
		r.add(f)
	}
}

// recut reads the group's committed offsets again once the table's
// changelog is read: an app that runs commits while the audit reads, so
// the changelog may hold the states of copies above the cut the audit
// started from. Under exactly-once a state is committed with the offsets
// of the copies it applied, so a copy below the offsets read after the
// changelog may be applied there, one at or above them is not
// (ts.maybeApplied).
func (r *run) recut(ctx context.Context, ts *tableState) {
	if len(r.group.Offsets) == 0 {
		return
	}
	g, err := r.src.GroupOffsets(ctx, r.p.AppID)
	if err != nil {
		return // the first cut stands: a copy above it is in flight
	}
	sources := append([]string{ts.t.Source}, ts.t.Merged...)
	for tp, c2 := range g.Offsets {
		c := r.committed(tp)
		src := slices.Index(sources, tp.Topic)
		if c2 <= c || tp.Topic == "" || src < 0 && tp.Topic != ts.t.Repartition {
			continue
		}
		r.moved++
		ts.moved = true
		switch {
		case tp.Topic == ts.t.Repartition:
			if ts.cut2 == nil {
				ts.cut2 = map[int32]int64{}
			}
			ts.cut2[tp.Partition] = c2
		case ts.t.Repartition == "" && c >= 0:
			if ts.srcCut2 == nil {
				ts.srcCut2 = map[int32]int64{}
			}
			ts.srcCut2[sourcePart(src, tp.Partition)] = c2
		}
	}
}

// movedSince reports whether the group's committed offsets on the topics
// of tables moved while the audit read: on one of them at its recut, or
// now against the cut.
func (r *run) movedSince(ctx context.Context, tables []*tableState) bool {
	var topics []string
	for _, ts := range tables {
		if ts.moved {
			return true
		}
		topics = append(append(topics, ts.t.Repartition, ts.t.Source), ts.t.Merged...)
	}
	return r.movedOn(ctx, topics)
}

// movedOn reports whether the group's committed offsets on one of topics
// are now past the cut: the app committed while the audit read them.
func (r *run) movedOn(ctx context.Context, topics []string) bool {
	if len(r.group.Offsets) == 0 {
		return false
	}
	g, err := r.src.GroupOffsets(ctx, r.p.AppID)
	if err != nil {
		return false
	}
	for tp, c2 := range g.Offsets {
		if tp.Topic != "" && slices.Contains(topics, tp.Topic) && c2 > r.committed(tp) {
			return true
		}
	}
	return false
}

// grew reports whether a partition of topics the audit read has a high
// watermark now past the one it read: the app wrote there while the audit
// read (at-least-once writes its stores and outputs before it commits, so
// its offsets need not have moved).
func (r *run) grew(ctx context.Context, topics ...string) bool {
	for tp, l := range r.ledgers {
		if l == nil || !slices.Contains(topics, tp.Topic) {
			continue
		}
		if o, err := r.src.Offsets(ctx, tp); err == nil && o.HW > l.Offsets.HW {
			return true
		}
	}
	return false
}

// lagOn reports whether a partition of topics the audit read holds
// committed records the group has not consumed (at or above its
// committed offset, or no offset committed).
func (r *run) lagOn(topics ...string) bool {
	for tp, l := range r.ledgers {
		if l == nil || !slices.Contains(topics, tp.Topic) || l.Offsets.LSO <= l.Offsets.LogStart {
			continue
		}
		if c := r.committed(tp); c < l.Offsets.LSO {
			return true
		}
	}
	return false
}

// maybeApplied reports whether an input in flight at the cut may yet be
// applied in the changelog read: its committed copy is below the offsets
// read after the changelog (the app committed meanwhile: recut), or the
// app runs at-least-once (its store writes before it commits). A lag
// input of a table fed straight from its source has no copy: it is
// optional in its partition's sequence instead (elements).
func (ts *tableState) maybeApplied(in *input) bool {
	if in.status != copyPending || in.r < 0 || ts.t.Repartition == "" {
		return false
	}
	c2, moved := ts.cut2[in.r]
	return ts.atLeastOnce || moved && in.cpos < c2
}

// tpOffset is one record's place.
type tpOffset struct {
	tp     audit.TopicPartition
	offset int64
}

// firstOffsets adds tp@offset to the n first places of list, in topic,
// partition and offset order (the same whatever order they come in).
func firstOffsets(list []tpOffset, tp audit.TopicPartition, offset int64, n int) []tpOffset {
	o := tpOffset{tp, offset}
	less := func(a, b tpOffset) int {
		return cmp.Or(strings.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition), cmp.Compare(a.offset, b.offset))
	}
	i, _ := slices.BinarySearchFunc(list, o, less)
	if i >= n {
		return list
	}
	list = slices.Insert(list, i, o)
	if len(list) > n {
		list = list[:n]
	}
	return list
}

// reportUnsure says what a filter with an unknown predicate left
// unjudged (Table.Unsure): the inputs with no copy, and, for each
// repartition partition purged before commit that would hold some of
// their copies, the range itself (its copies were deleted before the app
// applied them, whichever inputs they were of).
func (r *run) reportUnsure(ts *tableState) {
	t := ts.t
	if ts.unsureLeft == 0 {
		return
	}
	var at []string
	for _, o := range ts.unsureAt {
		at = append(at, fmt.Sprintf("%s@%d", o.tp, o.offset))
	}
	r.missing("table %s: %d consumed inputs have no copy on %s (the first: %s); %s before the re-key may remove records on purpose and its predicate is not known, so whether they were filtered or lost is not judged: give the app's Topology#describe() (--topology) or the predicate in the spec's steps",
		t.Name, ts.unsureLeft, t.Repartition, strings.Join(at, ", "), t.Unsure)
}

// reportUnnamedPurges reports, for a table judged by key, each
// repartition range purged before commit none of whose inputs was named:
// the inputs the key judgement could not name (a filter whose predicate
// is not known stands before them, or the explanation search gave up on
// their keys) leave the range itself the finding, as for a table not
// judged (the checks that need no key run whatever the judgement).
func (r *run) reportUnnamedPurges(ts *tableState) {
	t := ts.t
	for _, p := range slices.Sorted(maps.Keys(ts.purgedRange)) {
		why := ""
		switch {
		case ts.namedPurge[p]:
			continue
		case ts.unsurePurged[p]:
			why = "a filter with an unknown predicate stands before them"
		case ts.bounded > 0:
			why = fmt.Sprintf("the explanation search gave up on %d keys of table %s", ts.bounded, t.Name)
		default:
			continue
		}
		pr := ts.purgedRange[p]
		tp := audit.TopicPartition{Topic: t.Repartition, Partition: p}
		if slices.ContainsFunc(r.skips[tp], func(s history.Skip) bool { return s.From <= pr[0] && pr[1] <= s.To }) {
			continue
		}
		f := audit.NewFinding(audit.StageRepartition, audit.CausePurgedBeforeCommit, tp, pr[0])
		f.Count = pr[1] - pr[0]
		f.Detail = fmt.Sprintf("the log-start offset %d is above the group's committed offset %d (the KAFKA-17635 signature): offsets %d-%d were deleted before the app applied them; which inputs they held cannot be named (%s)", pr[1], pr[0], pr[0], pr[1]-1, why)
		r.add(f)
	}
}

// clusterLogStart is the cluster's log start of tp: the source's, unless
// the source holds the partition only from a later offset (a bounded
// capture).
func (r *run) clusterLogStart(tp audit.TopicPartition, held int64) int64 {
	if b, ok := r.src.(audit.Bounded); ok {
		if ls, ok := b.ClusterLogStart(tp); ok {
			return ls
		}
	}
	return held
}

// purgedPastCommit reports a repartition partition whose log start is
// above the group's committed offset c there: the records in between
// were purged before their reader (who's store, or join) applied them;
// what names them ("copies", "changes"), by its reader ("the store
// applied them", "the join consumed them").
func (r *run) purgedPastCommit(tp audit.TopicPartition, logStart, c int64, who, what, by string) {
	if c < 0 || logStart <= c {
		return
	}
	f := audit.NewFinding(audit.StageRepartition, audit.CausePurgedBeforeCommit, tp, c)
	f.Count = logStart - c
	f.Detail = fmt.Sprintf("%s: the log-start offset %d is above the group's committed offset %d: %s %d-%d were purged before %s", who, logStart, c, what, c, logStart-1, by)
	r.add(f)
}

// inputsGone names the partitions of tps whose first records the evidence
// lacks (retention, DeleteRecords, a capture that started later): the
// outputs of those inputs remain without them, so an output no input
// accounts for is no proof of a duplicate there.
func (r *run) inputsGone(tps []audit.TopicPartition) []string {
	var gone []string
	for _, tp := range tps {
		if l := r.ledgers[tp]; l != nil {
			if g := r.goneOf(tp, l); g != "" {
				gone = append(gone, g)
			}
		}
	}
	return gone
}

// goneOf names tp with its log start where its first records are gone
// (from the evidence, or from the cluster), "" when it holds them all.
func (r *run) goneOf(tp audit.TopicPartition, l *ledger.Ledger) string {
	if ls := max(l.Offsets.LogStart, r.clusterLogStart(tp, l.Offsets.LogStart)); ls > 0 {
		return fmt.Sprintf("%s (log start %d)", tp, ls)
	}
	return ""
}

// uncaptured notes, for a bounded capture, records at or above the group's
// committed offset c that the cluster had and the evidence lacks: they
// cannot be judged. It reports whether there are any.
func (r *run) uncaptured(tp audit.TopicPartition, held, c int64) bool {
	ls := r.clusterLogStart(tp, held)
	from := max(ls, c)
	if ls == held || c < 0 || held <= from {
		return false
	}
	r.missing("%s: offsets %d-%d are above the group's committed offset but were not captured (the capture starts at %d): they are not judged", tp, from, held-1, held)
	return true
}

// aboveHW reports a group committed offset beyond the partition's high
// watermark: the app consumed offsets the partition no longer holds, the
// signature of a truncation (an unclean election, or a crash of every
// replica that lost unflushed data).
func (r *run) aboveHW(tp audit.TopicPartition, stage audit.Stage, c, hw int64) bool {
	if c <= hw {
		return false
	}
	f := audit.NewFinding(stage, audit.CauseTruncated, tp, hw)
	f.Count = c - hw
	f.Detail = fmt.Sprintf("the group's committed offset %d is above the high watermark %d: offsets %d-%d were consumed and are gone from the partition (truncated)", c, hw, hw, c-1)
	r.add(f)
	return true
}

// phase runs fn as a region of the execution trace named name.
func phase(ctx context.Context, name string, fn func() bool) bool {
	defer trace.StartRegion(ctx, name).End()
	return fn()
}

// phaseErr is phase for a step that fails.
func phaseErr(ctx context.Context, name string, fn func() error) error {
	defer trace.StartRegion(ctx, name).End()
	return fn()
}

// taskSuffix is what a table without a hop adds to a key read from
// partition p whose bytes hash to another partition (a record written to
// a partition by number, as SmokeTestDriver writes its "flush" key to
// every partition): Streams keeps that key's state in partition p's task,
// apart from the same key's in other partitions, so kaudit judges it
// apart too. "" for a key in its own partition, and with a hop (the
// repartition topic places every key by its bytes).
func (r *run) taskSuffix(ts *tableState, key string, p int32) string {
	if ts.t.Repartition != "" {
		return ""
	}
	if q := partitionOfKey(r.keySerde(ts.t), key, r.topics[ts.t.Changelog].Partitions); q < 0 || q == p {
		return ""
	}
	return fmt.Sprintf(" (partition %d)", p)
}
