package reconcile

// KTable-KTable join chains: each output key's last record against the tables' final states.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

type outRecord struct {
	tp     audit.TopicPartition
	offset int64
	ts     int64
	digest codec.Digest
	raw    []byte // serialized value, decoded for a finding
	null   bool
}

// side is one table's value for a key, actual or expected.
type side struct {
	value   audit.Value
	ts      int64
	present bool
}

// join checks the output topic against the joiner chain over the actual
// tables (a join-stage finding when they disagree), and notes in each
// vanished input's detail what the output should have held end to end.
func (r *run) join(ctx context.Context, j *Join) error {
	if j.Unjudged != "" {
		if strings.HasPrefix(j.Unjudged, "join into "+j.Output+" ") || strings.HasPrefix(j.Unjudged, "join "+j.Output+" ") {
			r.missing("%s", j.Unjudged) // it names the join itself
		} else {
			r.missing("join into %s is not judged: %s", j.Output, j.Unjudged)
		}
		if parts, ok := r.partitionsOf(ctx, j.Output, "output"); ok {
			return r.joinUnjudged(ctx, j, parts, nil)
		}
		return nil
	}
	left := r.tables[j.Left]
	if left == nil {
		r.skipped("join into %s: its left table %s is not in the spec", j.Output, j.Left)
		return nil
	}
	rights := make([]*tableState, len(j.Right))
	for i, name := range j.Right {
		if rights[i] = r.tables[name]; rights[i] == nil {
			r.skipped("join into %s: its table %s is not in the spec", j.Output, name)
			return nil
		}
	}
	for _, ts := range append([]*tableState{left}, rights...) {
		if ts.t.Changelog == "" || r.topics[ts.t.Changelog].Name == "" {
			r.skipped("join into %s: table %s has no readable changelog", j.Output, ts.t.Name)
			return nil
		}
	}
	parts, ok := r.partitionsOf(ctx, j.Output, "output")
	if !ok {
		return nil
	}
	sides := append([]*tableState{left}, rights...)
	var unreadable []audit.TopicPartition
	for _, ts := range sides {
		unreadable = append(unreadable, ts.unreadable...)
	}
	bounded := false
	if b, ok := r.src.(audit.Bounded); ok {
		// a store's or the output's older records are not in a bounded
		// capture: a key's state or output may predate it
		for _, tp := range tpsOf(j.Output, parts) {
			_, out := b.ClusterLogStart(tp)
			bounded = bounded || out
		}
		for _, c := range r.rep.Cut {
			if _, cl := b.ClusterLogStart(audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}); cl && c.Role == "changelog" {
				bounded = true
			}
		}
	}
	if len(unreadable) > 0 || bounded {
		return r.joinUnjudged(ctx, j, parts, unreadable)
	}
	if r.opts.Partitions != nil && !coPartitioned(r, j, sides) {
		// a shard's keys are in its changelog partitions; the output
		// holds them in other partition numbers
		r.missing("join into %s: the output has %d partitions and the changelogs %d, so a shard (--partitions) cannot judge it (run without --partitions)",
			j.Output, r.topics[j.Output].Partitions, r.topics[sides[0].t.Changelog].Partitions)
		return r.joinUnjudged(ctx, j, parts, nil)
	}
	g := joinGroups(ctx, r, j, sides, parts)
	// a running app writes between the reads of its tables and of its
	// output: where the group's offsets moved while the audit read, a
	// changelog grew after it was read, or an at-least-once table has
	// input not consumed yet (it writes outside transactions), what
	// differs between them is in flight
	j.racing = r.movedSince(ctx, sides) || slices.ContainsFunc(sides, func(ts *tableState) bool {
		return ts.atLeastOnce && ts.lagged || r.grew(ctx, ts.t.Changelog)
	})
	lossByKey := map[string][]*input{}
	for _, in := range r.losses {
		lossByKey[in.key] = append(lossByKey[in.key], in)
	}
	var found []audit.Finding
	var failed []string // keys the joiner failed on
	e2e := map[string]string{}
	var judging []*judgedGroup
	rdOut := r.read(ctx, tpsOf(j.Output, parts), "output", decodeDigest)
	defer rdOut.stop()
	rdCl := make([]*reads, len(sides))
	for i, ts := range sides {
		var tps []audit.TopicPartition
		for _, grp := range g {
			tps = append(tps, tpsOf(ts.t.Changelog, grp.changelog)...)
		}
		rdCl[i] = r.readAgain(ctx, tps, "changelog", decodeKey)
		defer rdCl[i].stop()
	}
	for _, grp := range g {
		// the tables' final states of this group's keys, and the output's
		var n int64 // about a key per changelog record: the rows' size
		for _, ts := range sides {
			var m int64
			for _, p := range grp.changelog {
				if l := r.ledgers[audit.TopicPartition{Topic: ts.t.Changelog, Partition: p}]; l != nil {
					m += l.Offsets.HW - l.Offsets.LogStart
				}
			}
			n = max(n, m)
		}
		rows := newJoinRows(len(sides), int(min(n, 1<<22)))
		for i, ts := range sides {
			for _, p := range grp.changelog {
				tp := audit.TopicPartition{Topic: ts.t.Changelog, Partition: p}
				ok := r.walk(ctx, rdCl[i], tp, func(it *item) {
					if it.Fate != audit.FateCommitted || it.decErr != nil {
						return
					}
					rec := &it.Record
					*rows.final(rows.row(it.keyText), i) = clFinal{offset: rec.Offset, ts: rec.Timestamp, raw: rows.clone(rec.Value), null: rec.Value == nil, seen: true}
				})
				if !ok {
					unreadable = append(unreadable, tp)
				}
			}
		}
		for _, p := range grp.output {
			tp := audit.TopicPartition{Topic: j.Output, Partition: p}
			ok := r.walk(ctx, rdOut, tp, func(it *item) {
				if it.Fate != audit.FateCommitted || !r.decoded(it) {
					return
				}
				rec := &it.Record
				r.count("output", 1)
				row := &rows.rows[rows.row(it.keyText)]
				row.out, row.hasOut = outRecord{tp: tp, offset: rec.Offset, ts: rec.Timestamp, digest: it.digest, raw: rows.clone(rec.Value), null: rec.Value == nil}, true
			})
			if !ok {
				unreadable = append(unreadable, tp)
			}
		}
		if len(unreadable) > 0 || ctx.Err() != nil {
			continue // the rest is read for the cut, not judged
		}
		actual := func(ts *tableState, key string) side {
			i, ok := rows.idx[key]
			if !ok {
				return side{}
			}
			for s := range sides {
				if sides[s] == ts {
					return r.finalSide(ctx, ts, *rows.final(i, s))
				}
			}
			return side{}
		}
		// the group is judged while the next one is read (FromPlan's
		// joiner is safe for it), its findings taken in group order
		jd := &judgedGroup{done: make(chan struct{})}
		if j.concurrent {
			if n := len(judging); n > 0 {
				<-judging[n-1].done // one group judged at a time, beside the reading
			}
			go func() {
				defer close(jd.done)
				jd.found, jd.failed, jd.racing = r.judgeJoin(ctx, j, sides, rows)
			}()
		} else {
			jd.found, jd.failed, jd.racing = r.judgeJoin(ctx, j, sides, rows)
			close(jd.done)
		}
		judging = append(judging, jd)
		for key := range lossByKey {
			i, in := rows.idx[key]
			if _, done := e2e[key]; done || !in {
				continue
			}
			row := &rows.rows[i]
			e2e[key] = r.endToEnd(ctx, j, sides, key, row.out, row.hasOut, actual)
		}
	}
	racing := 0
	for _, jd := range judging {
		<-jd.done
		found, failed = append(found, jd.found...), append(failed, jd.failed...)
		racing += jd.racing
	}
	if racing > 0 {
		r.note("join into %s: for %d keys the output and the tables differ where the app wrote between their reads (the group's offsets moved while the audit read, a changelog grew after it was read, or an at-least-once app had input not consumed): in flight, not judged stale or missing", j.Output, racing)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(unreadable) > 0 {
		r.missing("join into %s: %s could not be read, so the output is not judged", j.Output, tpList(unreadable))
		return nil
	}
	if len(failed) > 0 {
		// a joiner that fails on the data judges nothing: any key could be wrong
		slices.Sort(failed)
		r.missing("join into %s: the joiner failed for %d keys (%s), so the output is not judged", j.Output, len(failed), strings.Join(head(failed, 3), "; "))
		return nil
	}
	for _, f := range found {
		r.add(f)
	}
	absent := func(*tableState, string) side { return side{} }
	for key, ins := range lossByKey {
		text, ok := e2e[key]
		if !ok { // no table holds the key and the output has no record of it
			text = r.endToEnd(ctx, j, sides, key, outRecord{}, false, absent)
		}
		if text == "" {
			continue // the joiner failed
		}
		for _, in := range ins {
			if in.f != nil {
				in.f.Detail += "; " + text
			}
		}
	}
	return nil
}

// judgedGroup is what judgeJoin found in one group, once done is closed.
type judgedGroup struct {
	found  []audit.Finding
	failed []string
	racing int // keys in flight between the reads of the tables and the output
	done   chan struct{}
}

// clFinal is a key's final state in a changelog, kept serialized; seen
// says the changelog has the key (the zero clFinal is an absent key).
type clFinal struct {
	offset, ts int64
	raw        []byte
	null, seen bool
}

// joinRows holds one join group's keys, a row each: every table's final
// state of the key and the output's last record of it. One map finds a
// key's row as the topics are read, and the rows are judged in key order
// without a lookup (a map per table and one for the output were a third
// of the join's CPU on the bench).
type joinRows struct {
	sides  int
	rows   []joinRow
	finals []clFinal // the rows' states, sides per row
	idx    map[string]int
	slab   []byte // the values' bytes, a block at a time
}

// joinRow is one key of a join group.
type joinRow struct {
	key    string
	out    outRecord
	hasOut bool
}

// newJoinRows makes the rows of a group of about n keys.
func newJoinRows(sides, n int) *joinRows {
	return &joinRows{sides: sides, idx: make(map[string]int, n), rows: make([]joinRow, 0, n), finals: make([]clFinal, 0, n*sides)}
}

// row returns the index of key's row, added if it has none.
func (g *joinRows) row(key string) int {
	i, ok := g.idx[key]
	if !ok {
		i = len(g.rows)
		g.rows = append(g.rows, joinRow{key: key})
		for range g.sides {
			g.finals = append(g.finals, clFinal{})
		}
		g.idx[key] = i
	}
	return i
}

// clone copies a value into the group's slab (nil stays nil): the values
// of a group are dropped together.
func (g *joinRows) clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	if len(b) == 0 {
		return []byte{} // empty, not null
	}
	if len(g.slab)+len(b) > cap(g.slab) {
		g.slab = make([]byte, 0, max(64<<10, len(b)))
	}
	g.slab = append(g.slab, b...)
	return g.slab[len(g.slab)-len(b) : len(g.slab) : len(g.slab)]
}

// final is side's final state in row i.
func (g *joinRows) final(i, side int) *clFinal { return &g.finals[i*g.sides+side] }

// finalSide decodes a final state; the zero clFinal is an absent key.
func (r *run) finalSide(ctx context.Context, ts *tableState, f clFinal) side {
	return r.finalFields(ctx, ts, f, nil)
}

// fieldsDecoder is implemented by decoders that build only some fields
// of a record value (codec.Codec).
type fieldsDecoder interface {
	DecodeFields(ctx context.Context, topic string, data []byte, fields []string) (map[string]any, bool, error)
}

// finalFields is finalSide for a joiner that reads only fields of the
// value (Join.Fields; nil: all): only those are built, where the decoder
// can.
func (r *run) finalFields(ctx context.Context, ts *tableState, f clFinal, fields []string) side {
	if f.raw == nil {
		return side{}
	}
	if fd, ok := r.opts.Decoder.(fieldsDecoder); ok && fields != nil {
		if v, ok, err := fd.DecodeFields(ctx, ts.t.Changelog, f.raw, fields); ok || err != nil {
			if err != nil {
				return side{}
			}
			return side{value: v, ts: f.ts, present: true}
		}
	}
	v, err := r.opts.Decoder.Decode(ctx, ts.t.Changelog, false, f.raw)
	if err != nil {
		return side{}
	}
	return side{value: v, ts: f.ts, present: true}
}

// joinGroup is a set of changelog partitions (the same numbers in every
// table, which Streams co-partitions) and the output partitions that hold
// their keys.
type joinGroup struct {
	changelog, output []int32
}

// joinGroups splits the join into one group per partition when the
// output has as many partitions as the changelogs (the default
// partitioner then puts a key in the same partition everywhere), so the
// join holds one partition's keys at a time; else into one group.
func joinGroups(ctx context.Context, r *run, j *Join, sides []*tableState, outParts []int32) []joinGroup {
	clParts, _ := r.partitionsOf(ctx, sides[0].t.Changelog, "changelog")
	if !coPartitioned(r, j, sides) || !slices.Equal(clParts, outParts) {
		return []joinGroup{{changelog: clParts, output: outParts}}
	}
	g := make([]joinGroup, len(outParts))
	for i, p := range outParts {
		g[i] = joinGroup{changelog: []int32{p}, output: []int32{p}}
	}
	return g
}

// coPartitioned reports whether the output and the tables' changelogs
// have as many partitions: the default partitioner then puts a key in the
// same partition of each.
func coPartitioned(r *run, j *Join, sides []*tableState) bool {
	n := r.topics[j.Output].Partitions
	for _, ts := range sides {
		if r.topics[ts.t.Changelog].Partitions != n {
			return false
		}
	}
	return true
}

// joinUnjudged reads the output for its cut and says why it is not
// judged.
func (r *run) joinUnjudged(ctx context.Context, j *Join, parts []int32, unreadable []audit.TopicPartition) error {
	unreadable = append(unreadable, r.walkAll(ctx, tpsOf(j.Output, parts), "output", func(it *item) {
		if it.Fate == audit.FateCommitted {
			r.count("output", 1)
		}
	})...)
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(unreadable) > 0 {
		r.missing("join into %s: %s could not be read, so the output is not judged", j.Output, tpList(unreadable))
		return nil
	}
	b, ok := r.src.(audit.Bounded)
	if !ok {
		return nil
	}
	for _, c := range r.rep.Cut {
		if c.Role != "changelog" && c.Role != "output" {
			continue
		}
		if _, bounded := b.ClusterLogStart(audit.TopicPartition{Topic: c.Topic, Partition: c.Partition}); bounded {
			r.missing("join into %s: the capture holds %s/%d only from offset %d, so the output is not judged", j.Output, c.Topic, c.Partition, c.LogStart)
			return nil
		}
	}
	return nil
}

// judgeJoin checks one group's output against the joiner over the tables'
// final states: the keys the left table has (any table, for an outer
// join) or the output holds, in key order (a key no table has and the
// output holds no record of is judged to nothing).
func (r *run) judgeJoin(ctx context.Context, j *Join, sides []*tableState, rows *joinRows) (found []audit.Finding, failed []string, racing int) {
	sorted := make([]int, 0, len(rows.rows))
	for i, row := range rows.rows {
		judged := row.hasOut && !row.out.null
		for s := range sides {
			judged = judged || rows.final(i, s).seen && (s == 0 || j.Type == "outer")
		}
		if judged {
			sorted = append(sorted, i)
		}
	}
	slices.SortFunc(sorted, func(a, b int) int { return strings.Compare(rows.rows[a].key, rows.rows[b].key) })
	if !j.concurrent || len(sorted) < 4096 {
		return r.judgeJoinKeys(ctx, j, sides, rows, sorted)
	}
	// two halves at once (FromPlan's joiner and the decoders are safe for
	// it), their findings and failures put back in key order
	mid := len(sorted) / 2
	var found2 []audit.Finding
	var failed2 []string
	var racing2 int
	done := make(chan struct{})
	go func() {
		defer close(done)
		found2, failed2, racing2 = r.judgeJoinKeys(ctx, j, sides, rows, sorted[mid:])
	}()
	found, failed, racing = r.judgeJoinKeys(ctx, j, sides, rows, sorted[:mid])
	<-done
	return append(found, found2...), append(failed, failed2...), racing + racing2
}

// judgeJoinKeys is judgeJoin for the rows keys, in their order; it
// changes nothing of r.
func (r *run) judgeJoinKeys(ctx context.Context, j *Join, sides []*tableState, rows *joinRows, keys []int) (found []audit.Finding, failed []string, racing int) {
	outValue := func(o outRecord) string { return r.text(ctx, j.Output, false, o.raw) }
	rs := make([]side, len(sides)-1)
	ex := r.newExpected(j, len(sides))
	for _, i := range keys {
		key := rows.rows[i].key
		if o := rows.rows[i].out; ex != nil && rows.rows[i].hasOut && !o.null {
			if dg, ok := ex.digest(ctx, r, sides, rows, i); ok && dg == o.digest {
				if countExpected {
					expectedMatched.Add(1)
				}
				continue // the output holds the expected value: no finding
			}
		}
		l := r.finalFields(ctx, sides[0], *rows.final(i, 0), fieldsOf(j, 0))
		for s := range rs {
			rs[s] = r.finalFields(ctx, sides[s+1], *rows.final(i, s+1), fieldsOf(j, s+1))
		}
		want, wantPresent, err := r.joined(j, l, rs)
		if err != nil {
			failed = append(failed, fmt.Sprintf("key %s: %v", key, err))
			continue
		}
		if wantPresent && j.OutputSteps != nil {
			kv, _ := codec.ParseCanonical([]byte(key))
			els, err := j.OutputSteps(Env{Key: kv, Value: want.value, Timestamp: want.ts})
			if err != nil {
				failed = append(failed, fmt.Sprintf("key %s: output steps: %v", key, err))
				continue
			}
			if len(els) == 0 {
				// the final joined value is filtered out: the output's last
				// record is an earlier one that passed, or none
				continue
			}
			want.value = els[0].Value
		}
		o, have := rows.rows[i].out, rows.rows[i].hasOut
		havePresent := have && !o.null
		if j.racing && (wantPresent != havePresent || wantPresent && o.ts != want.ts) {
			// the output and the tables were read at moments the app wrote
			// between: what differs is in flight, not stale
			racing++
			continue
		}
		switch {
		case wantPresent && !havePresent:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, audit.TopicPartition{Topic: j.Output, Partition: r.outPartition(j.Output, key, o, have)}, -1)
			f.Key, f.Expected = key, codec.Text(want.value)
			f.Timestamp = want.ts
			f.Detail = fmt.Sprintf("the tables hold key %s at the cut (left table %s), the output %s has no record for it", key, j.Left, j.Output)
			found = append(found, f)
		case !wantPresent && havePresent:
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Actual, f.Expected = key, outValue(o), "absent"
			f.Timestamp = o.ts
			f.Detail = fmt.Sprintf("the output holds key %s, but the left table %s does not at the cut", key, j.Left)
			found = append(found, f)
		case wantPresent && havePresent:
			stale := ""
			if j.Value != nil {
				if codec.DigestOf(want.value) != o.digest {
					stale = "the output's last value differs from the joiner over the tables at the cut"
				}
			} else if want.ts != o.ts {
				stale = fmt.Sprintf("the output's last record has timestamp %d, the tables' latest update for the key has %d", o.ts, want.ts)
			}
			if stale == "" {
				continue
			}
			f := audit.NewFinding(audit.StageJoin, audit.CauseJoinStale, o.tp, o.offset)
			f.Key, f.Actual, f.Timestamp = key, outValue(o), o.ts
			if j.Value != nil {
				f.Expected = codec.Text(want.value)
			}
			f.Detail = stale
			found = append(found, f)
		}
	}
	return found, failed, racing
}

// fieldTexter is implemented by decoders that write the canonical text of
// some fields of a record value without building them (codec.Codec).
type fieldTexter interface {
	FieldTexts(ctx context.Context, topic string, data []byte, fields []string, dst []byte, spans [][2]int) ([]byte, bool, error)
}

// expected digests a key's expected joined value from the canonical texts
// of the fields Join.Copies copies, where the join's value is such a
// projection: the text Canonical writes for what Value returns over the
// sides' decoded fields (spec.JoinSpec.Copies), so a digest equal to the
// output's says what Value's would. Any key it cannot digest so, or whose
// digest differs, is judged by Value as before: it only spares building
// what matches.
type expected struct {
	j       *Join
	dec     fieldTexter
	keys    []string   // each copy's key as a JSON string and a colon
	at      []int      // each copy's field's index in fieldsOf(j, copy.Side)
	spans   [][][2]int // per side, its fields' texts in buf
	buf     []byte
	text    []byte
	present []bool
}

// disableExpectedDigest turns expected off (a test compares the reports);
// with countExpected, expectedMatched counts the keys it judged.
var (
	disableExpectedDigest bool
	countExpected         bool
	expectedMatched       atomic.Int64
)

// newExpected returns the join's expected, nil where it does not apply:
// no Copies, output steps after the join, or a decoder that cannot write
// fields' texts.
func (r *run) newExpected(j *Join, sides int) *expected {
	dec, ok := r.opts.Decoder.(fieldTexter)
	if !ok || j.Copies == nil || j.Value == nil || j.OutputSteps != nil || disableExpectedDigest {
		return nil
	}
	ex := &expected{j: j, dec: dec, spans: make([][][2]int, sides), present: make([]bool, sides)}
	for s := range sides {
		if fieldsOf(j, s) == nil {
			return nil
		}
		ex.spans[s] = make([][2]int, len(fieldsOf(j, s)))
	}
	for _, c := range j.Copies {
		if c.Side < 0 || c.Side >= sides {
			return nil
		}
		at := slices.Index(fieldsOf(j, c.Side), c.Field)
		if at < 0 {
			return nil
		}
		ex.keys = append(ex.keys, codec.Text(c.Key)+":")
		ex.at = append(ex.at, at)
	}
	return ex
}

// digest is the digest of row i's expected value; false where the join
// emits nothing for the key (joined), a side's value cannot be read field
// by field (see codec.Codec.FieldTexts), or a copy reads an absent side
// without ?.: Value says for those.
func (ex *expected) digest(ctx context.Context, r *run, sides []*tableState, rows *joinRows, i int) (codec.Digest, bool) {
	j := ex.j
	some := false
	for s := range sides {
		ex.present[s] = rows.final(i, s).raw != nil
		some = some || ex.present[s]
		if !ex.present[s] && (s == 0 && j.Type != "outer" || j.Type == "inner") {
			return codec.Digest{}, false
		}
	}
	if !some {
		return codec.Digest{}, false
	}
	ex.buf = ex.buf[:0]
	for s, ts := range sides {
		if !ex.present[s] {
			continue
		}
		var ok bool
		var err error
		ex.buf, ok, err = ex.dec.FieldTexts(ctx, ts.t.Changelog, rows.final(i, s).raw, fieldsOf(j, s), ex.buf, ex.spans[s])
		if !ok || err != nil {
			return codec.Digest{}, false
		}
	}
	t := append(ex.text[:0], '{')
	for k, c := range j.Copies {
		if k > 0 {
			t = append(t, ',')
		}
		t = append(t, ex.keys[k]...)
		switch sp := ex.spans[c.Side][ex.at[k]]; {
		case !ex.present[c.Side] && !c.Optional:
			return codec.Digest{}, false
		case !ex.present[c.Side] || sp[0] < 0:
			t = append(t, "null"...)
		default:
			t = append(t, ex.buf[sp[0]:sp[1]]...)
		}
	}
	ex.text = append(t, '}')
	return codec.DigestText(ex.text), true
}

func head(l []string, n int) []string {
	if len(l) > n {
		return append(l[:n:n], fmt.Sprintf("and %d more", len(l)-n))
	}
	return l
}

// endToEnd says what the output holds for a vanished input's key and what
// it would hold over the expected tables; "" when the joiner fails.
func (r *run) endToEnd(ctx context.Context, j *Join, sides []*tableState, key string, o outRecord, have bool, actual func(*tableState, string) side) string {
	l := r.expectedOf(ctx, sides[0], key, actual)
	rs := make([]side, len(sides)-1)
	for i := range rs {
		rs[i] = r.expectedOf(ctx, sides[i+1], key, actual)
	}
	want, wantPresent, err := r.joined(j, l, rs)
	if err != nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "downstream: output %s", j.Output)
	if have && !o.null {
		fmt.Fprintf(&b, " key %s holds %s at %s@%d", key, r.text(ctx, j.Output, false, o.raw), o.tp, o.offset)
	} else {
		fmt.Fprintf(&b, " has no record for key %s", key)
	}
	switch {
	case wantPresent && j.Value != nil:
		fmt.Fprintf(&b, "; end to end it should hold %s", codec.Text(want.value))
	case wantPresent:
		b.WriteString("; end to end it should hold a joined record")
	}
	return b.String()
}

// fieldsOf is the fields the join's value reads of side's value (nil: all).
func fieldsOf(j *Join, side int) []string {
	if side < len(j.Fields) {
		return j.Fields[side]
	}
	return nil
}

// outPartition is where the output holds, or would hold, key.
func (r *run) outPartition(topic, key string, o outRecord, have bool) int32 {
	if have {
		return o.tp.Partition
	}
	return partitionOfKey(r.p.KeySerde, key, r.topics[topic].Partitions)
}

// joined evaluates the join chain for one key.
func (r *run) joined(j *Join, l side, rs []side) (side, bool, error) {
	switch j.Type {
	case "inner":
		if !l.present {
			return side{}, false, nil
		}
		for _, s := range rs {
			if !s.present {
				return side{}, false, nil
			}
		}
	case "outer":
		any := l.present
		for _, s := range rs {
			any = any || s.present
		}
		if !any {
			return side{}, false, nil
		}
	default: // left
		if !l.present {
			return side{}, false, nil
		}
	}
	ts := int64(-1)
	if l.present {
		ts = l.ts
	}
	vals := make([]audit.Value, len(rs))
	for i, s := range rs {
		if s.present {
			vals[i] = s.value
			ts = max(ts, s.ts)
		}
	}
	out := side{ts: ts, present: true}
	if j.Value != nil {
		v, err := j.Value(l.value, vals)
		if err != nil {
			return side{}, false, err
		}
		out.value = v
		if v == nil {
			return side{}, false, nil
		}
	}
	return out, true, nil
}
