package reconcile

// Windowed tables: the windows of each input, late inputs, expired windows.

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/codec"
)

// This file audits windowed aggregations (windowedBy(TimeWindows…)), as
// Kafka Streams 3.6's KStreamWindowAggregate applies them:
//
//   - Each input is applied to every window it falls in (TimeWindows.windowsFor:
//     the starts s = k*advance with s <= ts < s+size), and each (key,
//     window start) is its own state: the store's changelog key is the key,
//     the start and a sequence number (WindowKeySchema.toStoreKeyBinary).
//     So every window is judged as a key of its own, with the existing rules.
//   - The processor keeps observedStreamTime, the largest timestamp it has
//     seen (records with a null key are skipped before it), and skips an
//     input for a window whose end <= observedStreamTime - grace ("Skipping
//     record for expired window"): dropped by design. observedStreamTime is a
//     field of the processor, reset when the task is created again (a
//     restart, a rebalance), so the task's stream time kaudit computes in
//     apply order without restarts (the hop's partition offsets, or the
//     source partition without a hop) is an upper bound. An input late for
//     a window under that bound may be missing from it (a `late` info
//     finding) or applied (a restart lowered stream time): never a loss.
//   - The changelog is compact,delete with the store's retention plus a day:
//     a window whose records retention deleted is missing evidence, not
//     judged.
//   - suppress(untilWindowCloses) emits a window's final result once the
//     suppress processor's stream time reaches the window's end plus grace.

// Window is a table's TimeWindows, in milliseconds.
type Window struct {
	Size, Advance, Grace int64
	// GraceUnknown says Grace (0) is a lower bound, not the app's: an
	// input missing from a window that had closed under it is missing
	// evidence (Streams skips it if its grace was shorter, else it was lost).
	GraceUnknown bool
	// Suppress is suppress(untilWindowCloses): Output holds each closed
	// window's final result.
	Suppress bool
}

// starts returns the starts of the windows a record at ts falls in.
func (w *Window) starts(ts int64) []int64 {
	start := max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance
	var out []int64
	for ; start <= ts; start += w.Advance {
		out = append(out, start)
	}
	return out
}

// timeAt is one record the task processed: its offset and timestamp.
type timeAt struct {
	offset, ts int64
}

// winState is what a windowed table keeps beyond a plain one.
type winState struct {
	w *Window
	// inner maps a window key's text to its inner key's text (the
	// repartition copies' key, which places it in a partition).
	inner map[string]string
	end   map[string]int64 // a window key's end, for the keys with inputs
	// processed lists, per task partition, the records the window
	// processor saw in apply order (committed, below the cut, with a
	// key): the hop's copies, or the source records without a hop.
	processed map[int32][]timeAt
	// prefix[p][i] is the largest timestamp of processed[p][:i];
	// suffix[p][i] the largest of processed[p][i:].
	prefix, suffix map[int32][]int64
	// late holds the inputs late for a window under the stream time
	// bound, by source partition and offset; lateWin the windows.
	late map[inputRef]*lateInput
	// expired counts the windows not judged: their changelog partition's
	// log start is above 0, it holds no record of them, and time
	// retention may have deleted theirs; unbounded those that the
	// topic's retention, unknown or by size, may have deleted.
	expired, unbounded int
	// nulls holds the window keys an input with a null value fell in
	// (KStreamWindowAggregate passes it to the aggregator): not judged,
	// counted in nullJudged
	nulls      map[string]bool
	nullJudged int
}

// lateInput is one input skipped for at least one expired window.
type lateInput struct {
	// sure: the stream time had passed its windows' close for certain
	// without a restart (a lower bound: the records before it on the
	// readable copies or its source partition, and the inputs of its
	// source partition before it); else only the timestamps of inputs
	// whose copies are purged bound it, and a missing input may as well
	// be lost
	sure    bool
	tp      audit.TopicPartition
	offset  int64
	ts      int64
	key     string // inner key text
	windows []string
	applied map[string]bool // the windows a least explanation applies it to
	stream  int64           // the stream time bound before it
}

func newWinState(w *Window) *winState {
	return &winState{w: w, inner: map[string]string{}, end: map[string]int64{}, processed: map[int32][]timeAt{}, late: map[inputRef]*lateInput{}, nulls: map[string]bool{}}
}

// windowOf is a table's window, its grace read from the app's log where
// the spec does not know it (grace: unknown): Kafka Streams logs each
// record it skips for an expired window with the window, the expiration
// and the stream time, and expiration = stream time − grace. The lines
// of the window processor's input topic (the repartition topic, else the
// sources) whose window has the table's size count, and only those tied to
// the app (its thread, as the layout shows it: applog.Event.Tie): another
// app reading the same source logs its own grace. Where they imply two
// graces, the grace stays unknown.
func (r *run) windowOf(t *Table) *Window {
	w := t.Window
	if !w.GraceUnknown || r.opts.History == nil {
		return w
	}
	inputs := append([]string{t.Source}, t.Merged...)
	if t.Repartition != "" {
		inputs = []string{t.Repartition}
	}
	graces := map[int64]string{}
	for _, e := range r.opts.History.Events {
		if e.Kind != applog.ExpiredWindow || !slices.Contains(inputs, e.TP.Topic) || e.Count < 0 || e.Tie(r.p.AppID) != applog.Tied {
			continue
		}
		var start, end int64
		if _, err := fmt.Sscanf(e.Reason, "[%d,%d)", &start, &end); err != nil || end-start != w.Size {
			continue
		}
		if _, ok := graces[e.Count]; !ok {
			graces[e.Count] = e.Where()
		}
	}
	switch len(graces) {
	case 0:
		return w
	case 1:
		for g, where := range graces {
			r.note("table %s: the window's grace is %d ms, from the app's log (%s: \"Skipping record for expired window\", its stream time minus its expiration)", t.Name, g, where)
			out := *w
			out.Grace, out.GraceUnknown = g, false
			return &out
		}
	}
	var list []string
	for _, g := range slices.Sorted(maps.Keys(graces)) {
		list = append(list, fmt.Sprintf("%d ms (%s)", g, graces[g]))
	}
	r.note("table %s: the app's log implies several graces for the window (%s): it stays unknown", t.Name, strings.Join(list, ", "))
	return w
}

// fpKey is the key of a table key's repartition copies: the inner key of
// a window key, the key itself otherwise.
func (ts *tableState) fpKey(key string) string {
	if ts.win == nil {
		return key
	}
	if k, ok := ts.win.inner[key]; ok {
		return k
	}
	return key
}

// processedAt records that the task of partition p processed a record.
func (ws *winState) processedAt(p int32, offset, ts int64) {
	ws.processed[p] = append(ws.processed[p], timeAt{offset, ts})
}

// index builds the prefix and suffix maxima of the processed records.
func (ws *winState) index() {
	ws.prefix, ws.suffix = map[int32][]int64{}, map[int32][]int64{}
	for p, recs := range ws.processed {
		slices.SortFunc(recs, func(a, b timeAt) int { return cmp.Compare(a.offset, b.offset) })
		pre := make([]int64, len(recs)+1)
		suf := make([]int64, len(recs)+1)
		pre[0], suf[len(recs)] = -1, -1
		for i, x := range recs {
			pre[i+1] = max(pre[i], x.ts)
		}
		for i := len(recs) - 1; i >= 0; i-- {
			suf[i] = max(suf[i+1], recs[i].ts)
		}
		ws.prefix[p], ws.suffix[p] = pre, suf
	}
}

// before is the task's stream time before the record at offset (the
// largest timestamp processed at lower offsets; -1 none).
func (ws *winState) before(p int32, offset int64) int64 {
	recs, pre := ws.processed[p], ws.prefix[p]
	if pre == nil {
		return -1
	}
	i := sort.Search(len(recs), func(i int) bool { return recs[i].offset >= offset })
	return pre[i]
}

// mergedMax is the largest timestamp the task of source partition part
// (sourcePart) processed from the other topics merged into its stream
// (merged of them beside the first), -1 for none.
func (ws *winState) mergedMax(part int32, merged int) int64 {
	p := part & (1<<srcShift - 1)
	out := int64(-1)
	for i := 0; i <= merged; i++ {
		q := sourcePart(i, p)
		if q == part {
			continue
		}
		if recs := ws.processed[q]; len(recs) > 0 {
			out = max(out, ws.prefix[q][len(recs)])
		}
	}
	return out
}

// after is the largest timestamp the task processed above offset (-1
// none).
func (ws *winState) after(p int32, offset int64) int64 {
	recs, suf := ws.processed[p], ws.suffix[p]
	if suf == nil {
		return -1
	}
	i := sort.Search(len(recs), func(i int) bool { return recs[i].offset > offset })
	return suf[i]
}

// windowKey is the table key of inner's window at start.
func (ws *winState) windowKey(inner audit.Value, start int64) string {
	return codec.Text(codec.WindowedKey(inner, start, start+ws.w.Size))
}

// addWindowed adds one consumed input to each window it falls in: its
// copy is matched once (one copy feeds every window), and an input late
// for a window under the stream time bound is optional there.
func (r *run) addWindowed(ts *tableState, innerText, suffix string, inner audit.Value, x inputRec, v audit.Value, fp *fingerprint) {
	ws := ts.win
	in := input{table: ts, tp: ts.tpOf(x.part), part: x.part, offset: x.offset, ts: x.ts, key: innerText, digest: x.digest,
		r: partitionOfKey(r.keySerde(ts.t), innerText, ts.rParts)}
	r.match(ts, &in, fp)
	x.r, x.status, x.pos = in.r, in.status, in.cpos
	for _, start := range ws.w.starts(x.ts) {
		key := ws.windowKey(inner, start) + suffix
		ws.inner[key] = innerText
		ws.end[key] = start + ws.w.Size
		wx := x
		ks := ts.keys[key]
		if ks == nil {
			ks = &keyState{key: key, r: in.r}
			ts.keys[key] = ks
		}
		if wx.status == copyPending || wx.status == copyOpen {
			ks.pending = append(ks.pending, wx)
			if !ts.t.Latest {
				ks.pvalues = append(ks.pvalues, v)
			}
			continue
		}
		ks.inputs = append(ks.inputs, wx)
		if !ts.t.Latest {
			ks.values = append(ks.values, v)
		}
	}
}

// decideLate marks, once every input is read, the window inputs that may
// be late: the window's end plus grace at or below an upper bound of the
// task's stream time before the input. The bound, without restarts: the
// largest timestamp the task processed before it: its source partition's
// records without a hop; with one, the readable copies before its copy
// and every input whose copy is purged (a purged copy precedes the
// readable ones, at a position the evidence does not give). An input
// with only aborted copies, or with no copy where copies are readable,
// never reached the window processor.
func (r *run) decideLate(ts *tableState) {
	ws := ts.win
	purgedMax := map[int32]int64{}
	// own[(source partition, repartition partition)]: the inputs whose
	// copies precede a later input's of the same source partition there
	// (one producer writes them in offset order), for a lower bound
	own := map[[2]int32][]timeAt{}
	if ts.t.Repartition != "" {
		seen := map[inputRef]bool{}
		for _, ks := range ts.keys {
			for _, x := range ks.inputs {
				if x.r < 0 || seen[inputRef{part: x.part, offset: x.offset}] || x.status != copyNone && x.status != copyApplied {
					continue
				}
				seen[inputRef{part: x.part, offset: x.offset}] = true
				k := [2]int32{x.part, x.r}
				own[k] = append(own[k], timeAt{x.offset, x.ts})
				if x.status == copyNone && ts.rLogStart[x.r] > 0 {
					if m, ok := purgedMax[x.r]; !ok || x.ts > m {
						purgedMax[x.r] = x.ts
					}
				}
			}
		}
		for k, recs := range own {
			slices.SortFunc(recs, func(a, b timeAt) int { return cmp.Compare(a.offset, b.offset) })
			for i := 1; i < len(recs); i++ {
				recs[i].ts = max(recs[i].ts, recs[i-1].ts) // prefix maxima
			}
			own[k] = recs
		}
	}
	ownBefore := func(part, rp int32, offset int64) int64 {
		recs := own[[2]int32{part, rp}]
		i := sort.Search(len(recs), func(i int) bool { return recs[i].offset >= offset })
		if i == 0 {
			return -1
		}
		return recs[i-1].ts
	}
	for _, key := range slices.Sorted(maps.Keys(ts.keys)) {
		ks := ts.keys[key]
		closes := ws.end[key] + ws.w.Grace
		for i := range ks.inputs {
			x := &ks.inputs[i]
			upper, lower := int64(-1), int64(-1)
			switch x.status {
			case copyDirect:
				// its own topic's records at lower offsets were processed
				// before it; a topic merged into its task's stream
				// interleaves in an order the offsets do not say, so its
				// records raise only the upper bound
				lower = ws.before(x.part, x.offset)
				upper = max(lower, ws.mergedMax(x.part, len(ts.t.Merged)))
			case copyApplied:
				lower = max(ws.before(x.r, x.pos), ownBefore(x.part, x.r, x.offset))
				upper = ws.before(x.r, x.pos)
				if m, ok := purgedMax[x.r]; ok {
					upper = max(upper, m)
				}
			case copyNone:
				in := &input{tp: ts.tpOf(x.part), part: x.part, offset: x.offset, r: x.r}
				if m, ok := purgedMax[x.r]; ok && !r.positionReadable(ts, in) {
					upper = m
					if _, beforeCommit := ts.purgedRange[x.r]; !beforeCommit {
						lower = ownBefore(x.part, x.r, x.offset) // else it may never have been processed
					}
				}
			}
			if upper < closes {
				continue
			}
			x.late = true
			ref := inputRef{part: x.part, offset: x.offset}
			li := ws.late[ref]
			if li == nil {
				li = &lateInput{tp: ts.tpOf(x.part), offset: x.offset, ts: x.ts, key: ws.inner[key], stream: upper, sure: true, applied: map[string]bool{}}
				ws.late[ref] = li
			}
			li.sure = li.sure && lower >= closes
			li.stream = min(li.stream, upper)
			li.windows = append(li.windows, key)
		}
	}
}

// windowKeyOf decodes a windowed key as the store's changelog (withSeq)
// or a windowed serde's topic holds it, into the table key's value.
func (r *run) windowKeyOf(ctx context.Context, w *Window, topic string, raw []byte, withSeq bool) (audit.Value, error) {
	inner, start, _, err := codec.SplitWindowedKey(raw, withSeq)
	if err != nil {
		return nil, err
	}
	var k audit.Value
	if inner != nil {
		if k, err = r.opts.Decoder.Decode(ctx, topic, true, inner); err != nil {
			return nil, err
		}
	}
	return codec.WindowedKey(k, start, start+w.Size), nil
}

// innerOf returns the inner key text of a decoded window key.
func innerOf(k audit.Value) string {
	if m, ok := k.(map[string]any); ok {
		return codec.Text(m["key"])
	}
	return codec.Text(k)
}

// windowExpired reports whether a window key is not to be judged: it
// has no changelog record, its changelog partition's log start is above 0
// (compact,delete), and retention may have deleted its records. Time
// retention deletes a segment only once its newest record is older than
// retention.ms, and a window's changelog records carry the timestamps of
// inputs applied to it (the cache's flush keeps the last one's): a window
// whose every input is newer than now - retention.ms has its records
// still, and is judged. Where the topic's retention is unknown, bounded
// by size (retention.bytes) or the timestamps are the broker's
// (LogAppendTime), any record may be gone: those windows are missing
// evidence.
func (r *run) windowExpired(ts *tableState, ks *keyState, cl *clState) bool {
	if ts.win == nil || cl != nil && len(cl.history) > 0 {
		return false
	}
	p := ks.r
	if ts.t.Repartition == "" && len(ks.inputs) > 0 {
		p = ts.tpOf(ks.inputs[0].part).Partition // the source partition is the task
	}
	if l := r.ledgers[audit.TopicPartition{Topic: ts.t.Changelog, Partition: p}]; l == nil || l.Offsets.LogStart == 0 {
		return false
	}
	horizon, ok := retentionHorizon(r.topics[ts.t.Changelog], r.opts.Now)
	if !ok {
		if slices.ContainsFunc(ks.inputs, func(x inputRec) bool { return r.inWindow(x.ts) }) {
			ts.win.unbounded++
		}
		return true
	}
	if !slices.ContainsFunc(ks.inputs, func(x inputRec) bool { return x.ts < horizon }) {
		return false // no record of it can be older than the retention
	}
	ts.win.expired++
	return true
}

// retentionHorizon is the timestamp below which time retention may have
// deleted a topic's records by now; false where more than time retention
// deletes them, or the record timestamps are not the producer's.
func retentionHorizon(info audit.TopicInfo, now time.Time) (int64, bool) {
	ms, err := strconv.ParseInt(info.Configs["retention.ms"], 10, 64)
	if err != nil || ms < 0 {
		return 0, false // unknown, or infinite: a log start above 0 is not retention's
	}
	if b := info.Configs["retention.bytes"]; b != "" && b != "-1" {
		return 0, false
	}
	if info.Configs["message.timestamp.type"] == "LogAppendTime" {
		return 0, false
	}
	return now.UnixMilli() - ms, true
}

// judgeLate decides, for the key's inputs late for its window, whether
// a least explanation applies them (a restart lowered stream time): each
// is tried as an input that must be applied or lost, and applied when
// that explains the history at no more cost.
func (r *run) judgeLate(ts *tableState, key string, x *explainer, els []*elem) {
	if ts.win == nil {
		return
	}
	var lates []*elem
	for _, e := range els {
		if e.in != nil && e.in.late && e.kind == elemOptional {
			lates = append(lates, e)
		}
	}
	if len(lates) == 0 {
		return
	}
	base := x.search(true, nil, -1)
	// every late input applied at once: where that costs no more, a least
	// explanation applies each of them (forcing one is a weaker demand than
	// forcing all), and one search decides them all
	if base != nil {
		for _, e := range lates {
			e.kind = elemFree
			if slices.Contains(x.fixed, e) {
				e.kind = elemFixed
			}
		}
		alt := x.search(true, nil, -1)
		for _, e := range lates {
			e.kind = elemOptional
		}
		if alt != nil && alt.cost <= base.cost {
			for _, e := range lates {
				if li := ts.win.late[inputRef{part: e.in.part, offset: e.in.offset}]; li != nil {
					li.applied[key] = true
				}
			}
			x.failed = nil
			return
		}
	}
	for _, e := range lates {
		li := ts.win.late[inputRef{part: e.in.part, offset: e.in.offset}]
		if li == nil || base == nil {
			continue
		}
		kind := elemFree
		if slices.Contains(x.fixed, e) {
			kind = elemFixed
		}
		e.kind = kind
		alt := x.search(true, nil, -1)
		e.kind = elemOptional
		if alt != nil && alt.cost <= base.cost {
			li.applied[key] = true
		}
	}
	x.failed = nil
}

// reportLate adds the late findings of a windowed table: one per input
// missing from a window that had closed under the stream time bound.
func (r *run) reportLate(ts *tableState) {
	if ts.win == nil {
		return
	}
	refs := slices.SortedFunc(maps.Keys(ts.win.late), func(a, b inputRef) int {
		return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.offset, b.offset))
	})
	w := ts.win.w
	var ambiguous, graceUnknown []string
	for _, ref := range refs {
		li := ts.win.late[ref]
		if !r.inWindow(li.ts) {
			continue // outside --since/--until, as its losses would be
		}
		var wins []string
		for _, k := range li.windows {
			if !li.applied[k] {
				wins = append(wins, k)
			}
		}
		if len(wins) == 0 {
			continue // applied: a restart had lowered stream time
		}
		if w.GraceUnknown {
			graceUnknown = append(graceUnknown, fmt.Sprintf("%s@%d", li.tp, li.offset))
			continue
		}
		if !li.sure {
			ambiguous = append(ambiguous, fmt.Sprintf("%s@%d", li.tp, li.offset))
			continue
		}
		f := audit.NewFinding(audit.StageStore, audit.CauseLate, li.tp, li.offset)
		f.Key, f.Timestamp = li.key, li.ts
		f.Detail = fmt.Sprintf("table %s: the input's timestamp %d is late for its window %s: the task's stream time before it was at most %d, and the window closes at its end plus the grace of %d ms; Kafka Streams skips a record for an expired window by design (\"Skipping record for expired window\"), unless a restart had lowered its stream time",
			ts.t.Name, li.ts, windowList(wins), li.stream, w.Grace)
		r.add(f)
	}
	if len(ambiguous) > 0 {
		ex := ambiguous[:min(len(ambiguous), 5)]
		r.missing("table %s: %d inputs (%s) are missing from windows that may have closed before them: their repartition copies are purged, so the task's stream time before them is known only as at most the timestamp of an input whose copy is purged; whether Streams skipped them as late or lost them cannot be told", ts.t.Name, len(ambiguous), strings.Join(ex, ", "))
	}
	if len(graceUnknown) > 0 {
		ex := graceUnknown[:min(len(graceUnknown), 5)]
		r.missing("table %s: %d inputs (%s) are missing from windows that had closed before them under a grace of 0, and the window's grace is not known (the spec says grace: unknown; kaudit infers the size and advance, not the grace): whether Streams skipped them as late or lost them cannot be told; write the app's grace (TimeWindows.ofSizeAndGrace) to judge them", ts.t.Name, len(graceUnknown), strings.Join(ex, ", "))
	}
	if ts.win.nullJudged > 0 {
		r.missing("table %s: %d windows had an input with a null value, which Kafka Streams 3.6 passes to a windowed aggregator (KStreamWindowAggregate skips a null key only: count() counts it, a reduce or aggregate gets it); kaudit does not model it, so they are not judged", ts.t.Name, ts.win.nullJudged)
	}
	if ts.win.expired > 0 {
		r.note("table %s: %d windows with inputs have no record in the changelog, whose log start is above 0 (compact,delete: retention deletes old windows), and inputs older than its retention.ms; they are not judged", ts.t.Name, ts.win.expired)
	}
	if ts.win.unbounded > 0 {
		r.missing("table %s: %d windows with inputs have no record in the changelog, whose log start is above 0, and its retention (retention.ms unknown or infinite, retention.bytes, or LogAppendTime) may have deleted any record: they are not judged", ts.t.Name, ts.win.unbounded)
	}
}

func windowList(keys []string) string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, "["+k+"]")
	}
	return strings.Join(out, ", ")
}

// windowClosed reports whether a suppressed window's final result must be
// on the output at the cut: the task processed, after the last applied
// input of the window, a record at or past its end plus grace (that
// record, or one that raised stream time after it, reached the suppress
// processor, whose buffer is restored after a restart).
func (r *run) windowClosed(ts *tableState, key string) bool {
	ks, end := ts.keys[key], ts.win.end[key]
	if ks == nil {
		return false
	}
	var p int32 = -1
	last := int64(-1)
	for _, x := range ks.inputs {
		switch x.status {
		case copyApplied:
			p, last = x.r, max(last, x.pos)
		case copyDirect:
			p, last = ts.tpOf(x.part).Partition, max(last, x.offset)
		case copyNone:
			if x.r >= 0 && ts.rLogStart[x.r] > 0 {
				// a purged copy precedes every readable one
				p, last = x.r, max(last, ts.rLogStart[x.r]-1)
			}
		}
	}
	if p < 0 {
		return false
	}
	return ts.win.after(p, last) >= end+ts.win.w.Grace
}

// sourceRecord records a source record the window processor of a table
// without a hop saw, in offset order.
func (ws *winState) sourceRecord(p int32, offset, ts int64) {
	ws.processedAt(p, offset, ts)
}
