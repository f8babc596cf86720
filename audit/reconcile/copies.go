package reconcile

// Copies: stream.to(t) of a source read as a stream, each input once on the output.

import (
	"context"
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// Copy is stream.to(Output) of a source topic read as a stream: each
// input the app consumed (below the group's committed offset) is written to
// Output once, with its key, value and timestamp, in the transaction that
// commits its offset (exactly-once). EosTestClient's data.to("echo").
type Copy struct {
	Source string
	Output string
	// Steps, when set, runs the stateless steps between the source and
	// to(Output) on one input (a filter: none); ValueChanging says they
	// may change its value.
	Steps         func(Env) ([]Element, error)
	ValueChanging bool
	// KeyChanging says they may change its key (map, selectKey, flatMap).
	KeyChanging bool
	// Unjudged says why the copy cannot be judged (a step left TODO, a
	// Processor API node): missing evidence.
	Unjudged string
}

// checkCopy reads the output, then the source: a consumed input with no
// committed record of its key, value and timestamp on the output is a
// join-missing finding (the input consumed, its copy never written or not
// committed); an input copied twice is a duplicate. Records of the output
// that no input accounts for are not judged (another writer may share the
// topic). With the output's first records deleted, or a partition of
// either unreadable, the copy is not judged.
func (r *run) checkCopy(ctx context.Context, c *Copy) {
	if c.Unjudged != "" {
		r.missing("%s", c.Unjudged)
		r.sourceOffsetsOnly(ctx, c.Source)
		return
	}
	oparts, ok := r.partitionsOf(ctx, c.Output, "output")
	if !ok {
		return
	}
	sparts, ok := r.partitionsOf(ctx, c.Source, "source")
	if !ok {
		return
	}
	// the copies of a shard's source partitions land on any output
	// partition: the output is read whole
	if n := r.topics[c.Output].Partitions; int(n) > len(oparts) {
		oparts = oparts[:0]
		for p := range n {
			oparts = append(oparts, p)
		}
	}
	type copyAt struct {
		tp         audit.TopicPartition // the first copy
		key        string
		offset     int64
		n          int  // copies no input accounted for yet
		used       bool // an input accounted for one
		plain      bool // one of them was written outside a transaction
		from       audit.TopicPartition
		fromOffset int64
	}
	copies := map[fingerprint]copyAt{}
	var unreadable []audit.TopicPartition
	rd := r.read(ctx, tpsOf(c.Output, oparts), "output", decodeDigest)
	for _, p := range oparts {
		tp := audit.TopicPartition{Topic: c.Output, Partition: p}
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate != audit.FateCommitted || !r.decoded(it) {
				return
			}
			r.count("output", 1)
			f := fingerprintOf(it.keyText, it.digest, it.Record.Timestamp)
			ca, seen := copies[f]
			if !seen {
				ca = copyAt{tp: tp, offset: it.Record.Offset, key: it.keyText}
			}
			ca.n++
			ca.plain = ca.plain || !it.Record.Batch.Transactional
			copies[f] = ca
		})
		if !ok || l == nil || r.clusterLogStart(tp, l.Offsets.LogStart) > 0 {
			unreadable = append(unreadable, tp)
		}
	}
	rd.stop()
	if ctx.Err() != nil {
		return
	}
	if len(unreadable) > 0 {
		r.missing("copy %s → %s: the output's partitions %s are unreadable or their first records deleted, so the copy is not judged", c.Source, c.Output, tpList(unreadable))
		return
	}
	tps := tpsOf(c.Source, sparts)
	stepFailures := 0
	mode := decodeDigest
	if c.Steps != nil {
		mode = decodeAll // the steps read the values
	}
	// no table read the source: its lag and what its offsets prove lost
	// are the copy's to say
	srd, first := r.readSourceOnce(ctx, tps, mode)
	defer srd.stop()
	// an input's element with no copy; reported once the steps are
	// trusted (see below)
	var missing []audit.Finding
	judgedEls := 0
	for _, tp := range tps {
		cut := r.committed(tp)
		var lag int64
		l, ok := r.walkLedger(ctx, srd, tp, func(it *item) {
			rec := &it.Record
			if it.Fate == audit.FateCommitted && (cut < 0 || rec.Offset >= cut) {
				lag++
				return
			}
			if it.Fate != audit.FateCommitted || !r.inputOutsideSkips(tp, rec.Offset) || !r.decoded(it) {
				return
			}
			judged := r.inWindow(rec.Timestamp) // --since/--until: only the window's inputs are judged
			keyText := it.keyText
			if keyText == "" {
				keyText = codec.Text(it.key) // read whole for the steps
			}
			type el struct {
				key string
				f   fingerprint
			}
			els := []el{{key: keyText, f: fingerprintOf(keyText, it.digest, rec.Timestamp)}}
			if c.Steps != nil {
				out, err := c.Steps(Env{Key: it.key, Value: it.value, Headers: rec.Headers, Timestamp: rec.Timestamp})
				if err != nil {
					stepFailures++
					return
				}
				els = els[:0]
				for _, e := range out {
					// to() writes every element, a null key or value as well
					k, dg := keyText, it.digest
					if c.KeyChanging {
						k = codec.Text(e.Key)
					}
					if c.ValueChanging || len(out) > 1 {
						dg = codec.DigestOf(e.Value)
					}
					els = append(els, el{key: k, f: fingerprintOf(k, dg, rec.Timestamp)})
				}
			}
			for i, e := range els {
				ca, ok := copies[e.f]
				if judged {
					judgedEls++
				}
				if !ok || ca.n == 0 {
					if judged {
						fd := audit.NewFinding(audit.StageJoin, audit.CauseJoinMissing, tp, rec.Offset)
						fd.Key, fd.Timestamp = e.key, rec.Timestamp
						which := ""
						if len(els) > 1 {
							which = fmt.Sprintf(" (element %d of %d its steps emit)", i+1, len(els))
						}
						fd.Detail = fmt.Sprintf("copy %s → %s: consumed (below the group's committed offset %d), but the output holds no committed copy of it%s (same key, value and timestamp): %s.to(%s) lost it", c.Source, c.Output, cut, which, c.Source, c.Output)
						missing = append(missing, fd)
					}
					continue
				}
				ca.n-- // one copy for one input: an equal input later needs another
				ca.used = ca.used || judged
				ca.from, ca.fromOffset = tp, rec.Offset
				copies[e.f] = ca
			}
		})
		if !ok || l == nil {
			r.missing("copy %s → %s: source partition %s is unreadable, so its inputs' copies are not judged", c.Source, c.Output, tp)
			continue
		}
		if first {
			r.lagFinding(tp, l, cut, lag)
			r.gapFindings(tp, l, cut)
		}
	}
	if stepFailures > 0 {
		r.missing("copy %s → %s is not judged: its steps failed on %d inputs", c.Source, c.Output, stepFailures)
		return
	}
	// steps that change the key or value: when the output holds records no
	// input's element accounts for as well as inputs without a copy, the
	// spec's steps are not the app's (a lost copy leaves no stray record)
	if c.ValueChanging || c.KeyChanging {
		stray := 0
		for _, ca := range copies {
			if !ca.used {
				stray += ca.n
			}
		}
		if len(missing) >= 3 && stray >= 3 && len(missing)*10 > judgedEls {
			r.missing("copy %s → %s is not judged: the spec's steps give no copy on the output for %d of %d elements, and %d output records match no element: the steps are not the app's", c.Source, c.Output, len(missing), judgedEls, stray)
			return
		}
	}
	for _, f := range missing {
		r.add(f)
	}
	// an input copied more than once (an at-least-once retry, a zombie
	// writer): its extra copies, unless inputs equal to it may be gone
	gone := r.inputsGone(tps)
	extra, again := 0, 0
	for _, ca := range copies {
		if ca.used && ca.n > 0 && len(gone) > 0 {
			extra += ca.n
			continue
		}
		if ca.used && ca.n > 0 && ca.plain {
			again += ca.n // at-least-once: processed again after a restart
			continue
		}
		if ca.used && ca.n > 0 {
			fd := audit.NewFinding(audit.StageJoin, audit.CauseDuplicate, ca.tp, ca.offset)
			fd.Count, fd.Key = int64(ca.n), ca.key
			fd.Detail = fmt.Sprintf("copy %s → %s: the input %s@%d has %d committed copies more on the output (the first at %s@%d)", c.Source, c.Output, ca.from, ca.fromOffset, ca.n, ca.tp, ca.offset)
			r.add(fd)
		}
	}
	if again > 0 {
		r.note("copy %s → %s: %d committed copies more than their inputs, written outside transactions: under at-least-once an input processed again after a restart is copied again, by design (under exactly-once it would be a duplicate)", c.Source, c.Output, again)
	}
	if extra > 0 {
		r.note("copy %s → %s: %d committed copies more than the inputs equal to them (same key, value and timestamp) that remain; the first records of %s are gone, and equal inputs among them account for them, so they are not judged duplicates", c.Source, c.Output, extra, strings.Join(gone, ", "))
	}
}

// sourceOffsetsOnly reports, for a source no table has read, its lag and
// what its offsets prove lost before the app read it: checks that need
// no spec, made even when the copy that reads it is not judged.
func (r *run) sourceOffsetsOnly(ctx context.Context, topic string) {
	parts, ok := r.partitionsOf(ctx, topic, "source")
	if !ok {
		return
	}
	tps := tpsOf(topic, parts)
	if len(tps) == 0 || r.ledgers[tps[0]] != nil {
		return // a shard that owns none of it, or a table read it and said so
	}
	rd := r.read(ctx, tps, "source", decodeNone)
	defer rd.stop()
	for _, tp := range tps {
		c := r.committed(tp)
		var lag int64
		l, ok := r.walkLedger(ctx, rd, tp, func(it *item) {
			if it.Fate == audit.FateCommitted && (c < 0 || it.Record.Offset >= c) {
				lag++
			}
		})
		if !ok || l == nil {
			r.missing("source partition %s is unreadable", tp)
			continue
		}
		r.lagFinding(tp, l, c, lag)
		r.gapFindings(tp, l, c)
	}
}
