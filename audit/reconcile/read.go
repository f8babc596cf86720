package reconcile

// Reading partitions: readers that decode ahead, walked through each partition's ledger.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/ledger"
)

// item is one data record of a partition walk, decoded by its reader.
type item struct {
	ledger.Entry
	key, value audit.Value
	keyText    string       // canonical text of key, where the role needs it
	digest     codec.Digest // digest of value, where the role needs it
	decErr     error        // decoding failed; decWhat says which part
	decWhat    string
	// picked says value was not built (reads.field): field holds the one
	// field of it the table's select_key reads
	picked bool
	field  audit.Value
	// fp is the record's fingerprint, computed by its reader where the
	// role needs it and hasFP says so: for repartition copies, and for
	// picked sources whose table key is the field's string (selText)
	fp      fingerprint
	hasFP   bool
	selText string
}

// readBatch is how many items a reader hands over at once; readAhead is
// how many batches each reader may hold before the audit consumes them.
const (
	readBatch = 256
	readAhead = 16
)

// batchPool recycles the batches readers hand over, once the audit has
// consumed them (no consumer keeps an item past its call).
var batchPool = sync.Pool{New: func() any { b := make([]item, 0, readBatch); return &b }}

func newBatch() []item { return (*batchPool.Get().(*[]item))[:0] }

func freeBatch(b []item) {
	clear(b[:cap(b)])
	b = b[:0]
	batchPool.Put(&b)
}

// stream is one partition being read by a reader goroutine.
type stream struct {
	batches chan []item
	done    chan struct{} // closed once l and err are set
	l       *ledger.Ledger
	err     error
	slot    bool // a reader ran and holds a slot until the audit has consumed it
}

// reads reads the partitions of one topic for one role, up to
// Options.Concurrency partitions at a time ahead of the audit, which
// consumes them in order: reading and decoding run in parallel, the
// audit's state changes stay in one goroutine and in a fixed order, so a
// report does not depend on the concurrency.
type reads struct {
	r      *run
	role   string
	decode decodeMode
	// field, with decodeAll, is the one field of a source value the
	// table reads (Table.SelectField of a Latest table): the value is
	// digested and only that field built, where the codec can
	field string
	again bool // a second read: the ledger's findings and the cut are recorded already
	// window, when set, says the keys are windowed (window.go): the
	// inner key and the window start, and withSeq a sequence number (a
	// window store's changelog)
	window  *Window
	withSeq bool
	// foreign lists partitions another shard owns (--partitions): read for
	// the inputs of this shard's keys, their findings and cut left to the owner
	foreign map[audit.TopicPartition]bool
	// failed is the detail of the last partition that could not be read
	// (its unreadable finding's), for the shards it sends inputs to
	// (exchange.go)
	failed  string
	streams map[audit.TopicPartition]*stream
	slots   chan struct{}
	cancel  context.CancelFunc
}

// decodeMode says what a reader decodes of each record.
type decodeMode uint8

const (
	decodeNone   decodeMode = iota // keyless audits
	decodeKey                      // the key and its text only
	decodeDigest                   // the key, its text and the value's digest: the value is not kept
	decodeAll                      // key, value and the value's digest (sources, whose table key is selected from the value)
)

// fieldDigester is implemented by decoders that digest a value and build
// only one of its fields (codec.Codec).
type fieldDigester interface {
	DigestField(ctx context.Context, topic string, data []byte, field string) (audit.Value, codec.Digest, bool, error)
}

// textDecoder is implemented by decoders that give a key's canonical text
// without building it where they can (codec.Codec).
type textDecoder interface {
	DecodeText(ctx context.Context, topic string, isKey bool, data []byte) (string, error)
}

// digester is implemented by decoders that digest a value without a
// second walk over it (codec.Codec), or without building it at all.
type digester interface {
	DecodeDigest(ctx context.Context, topic string, isKey bool, data []byte) (audit.Value, codec.Digest, error)
	DigestBytes(ctx context.Context, topic string, isKey bool, data []byte) (codec.Digest, error)
}

// read starts reading tps (in this order) for role, decoding what mode
// says. Call stop when done.
func (r *run) read(ctx context.Context, tps []audit.TopicPartition, role string, mode decodeMode) *reads {
	return r.startReads(ctx, &reads{r: r, role: role, decode: mode}, tps)
}

// readAgain is read for partitions the audit has read before: their
// ledger findings and cut are not recorded twice, nor cross-checked again.
func (r *run) readAgain(ctx context.Context, tps []audit.TopicPartition, role string, mode decodeMode) *reads {
	if r.opts.Progress != nil {
		for _, tp := range tps {
			if l := r.ledgers[tp]; l != nil {
				r.opts.Progress.Expect(role, l.Offsets.HW-l.Offsets.LogStart)
			}
		}
	}
	return r.startReads(ctx, &reads{r: r, role: role, decode: mode, again: true}, tps)
}

// readSourceOnce reads a source's partitions with read the first time the
// audit reads them, readAgain after; first says which, so that the
// source's own findings (lag, gaps) are said by its first reader only.
func (r *run) readSourceOnce(ctx context.Context, tps []audit.TopicPartition, mode decodeMode) (rd *reads, first bool) {
	if len(tps) == 0 || r.ledgers[tps[0]] == nil { // (a shard may own none of them)
		return r.read(ctx, tps, "source", mode), true
	}
	return r.readAgain(ctx, tps, "source", mode), false
}

// readSourceShard is readSourceOnce for a shard that reads tps, every
// partition of a source, for the inputs of its keys (byKey): the
// partitions it does not own are foreign (read for the inputs, their
// findings left to their owner), and first says whether the audit reads
// its own partitions for the first time.
func (r *run) readSourceShard(ctx context.Context, tps []audit.TopicPartition, byKey bool) (rd *reads, first bool, foreign map[audit.TopicPartition]bool) {
	if !byKey {
		rd, first = r.readSourceOnce(ctx, tps, decodeAll)
		return rd, first, nil
	}
	foreign = r.foreignOf(tps)
	first = !slices.ContainsFunc(tps, func(tp audit.TopicPartition) bool { return !foreign[tp] && r.ledgers[tp] != nil })
	if first {
		rd = r.read(ctx, tps, "source", decodeAll)
	} else {
		rd = r.readAgain(ctx, tps, "source", decodeAll)
	}
	rd.foreign = foreign // read by walkLedger only, not by the readers
	return rd, first, foreign
}

// foreignOf is the partitions of tps the shard (Options.Partitions) does
// not own.
func (r *run) foreignOf(tps []audit.TopicPartition) map[audit.TopicPartition]bool {
	foreign := map[audit.TopicPartition]bool{}
	for _, tp := range tps {
		if !containsPartition(r.opts.Partitions, tp.Partition) {
			foreign[tp] = true
		}
	}
	return foreign
}

func (r *run) startReads(ctx context.Context, rd *reads, tps []audit.TopicPartition) *reads {
	rd.streams = map[audit.TopicPartition]*stream{}
	n := r.opts.Concurrency
	if n <= 0 {
		return rd // read inline, one partition at a time
	}
	ctx, rd.cancel = context.WithCancel(ctx)
	rd.slots = make(chan struct{}, n)
	for _, tp := range tps {
		rd.streams[tp] = &stream{batches: make(chan []item, readAhead), done: make(chan struct{})}
	}
	go func() {
		for i, tp := range tps {
			s := rd.streams[tp]
			select {
			case rd.slots <- struct{}{}: // released when the audit has consumed the partition
			case <-ctx.Done():
				for _, tp := range tps[i:] { // never read: the audit still walks them
					s := rd.streams[tp]
					s.err = ctx.Err()
					close(s.batches)
					close(s.done)
				}
				return
			}
			s.slot = true
			go func() {
				defer close(s.done)
				defer close(s.batches)
				s.l, s.err = rd.produce(ctx, tp, func(b []item) bool {
					select {
					case s.batches <- b:
						return true
					case <-ctx.Done():
						return false
					}
				})
			}()
		}
	}()
	return rd
}

func (rd *reads) stop() {
	if rd.cancel != nil {
		rd.cancel()
	}
}

// produce walks tp through the ledger and hands its decoded records to
// emit in batches.
func (rd *reads) produce(ctx context.Context, tp audit.TopicPartition, emit func([]item) bool) (*ledger.Ledger, error) {
	r := rd.r
	info := r.topics[tp.Topic]
	opts := ledger.Options{Compacted: info.Compacted(), MaxTxnTimeout: r.opts.MaxTxnTimeout, Now: r.opts.Now,
		TxnIDs: r.txnIDs, TxnStarts: r.txnStarts, CrossCheck: r.opts.CrossCheck && !rd.again}
	var l *ledger.Ledger
	batch := newBatch()
	for e, err := range ledger.Walk(ctx, r.src, tp, opts, &l) {
		if err != nil {
			return nil, err
		}
		batch = append(batch, item{Entry: e})
		if rd.decode != decodeNone {
			rd.decodeItem(ctx, &batch[len(batch)-1])
		}
		if len(batch) == readBatch {
			if !emit(batch) {
				return nil, ctx.Err()
			}
			batch = newBatch()
		}
	}
	if len(batch) > 0 && !emit(batch) {
		return nil, ctx.Err()
	}
	return l, nil
}

// decodeItem decodes what the mode says of one record.
func (rd *reads) decodeItem(ctx context.Context, it *item) {
	rec := &it.Record
	dec := rd.r.opts.Decoder
	var err error
	if rec.Key != nil && rd.window != nil {
		if it.key, err = rd.r.windowKeyOf(ctx, rd.window, rec.Topic, rec.Key, rd.withSeq); err != nil {
			it.decErr, it.decWhat = err, "key"
			return
		}
	} else if td, ok := dec.(textDecoder); ok && rd.decode != decodeAll {
		// only the key's text is needed
		if it.keyText, err = td.DecodeText(ctx, rec.Topic, true, rec.Key); err != nil {
			it.decErr, it.decWhat = err, "key"
			return
		}
	} else if rec.Key != nil {
		if it.key, err = dec.Decode(ctx, rec.Topic, true, rec.Key); err != nil {
			it.decErr, it.decWhat = err, "key"
			return
		}
	}
	if rd.decode != decodeAll && it.keyText == "" {
		it.keyText = codec.Text(it.key)
	}
	if rec.Value == nil || rd.decode == decodeKey {
		return
	}
	if fd, ok := dec.(fieldDigester); ok && rd.field != "" {
		if v, dg, ok, err := fd.DigestField(ctx, rec.Topic, rec.Value, rd.field); ok && err == nil {
			it.picked, it.field, it.digest = true, v, dg
			if _, ok := v.(string); ok { // the table key (readSource), worked out here on both cores
				it.selText = codec.Text(v)
				it.fp, it.hasFP = fingerprintOf(it.selText, dg, rec.Timestamp), true
			}
			return
		}
		// anything else decodes in full, for Decode's own value or error
	}
	dg, fast := dec.(digester)
	switch {
	case fast && rd.decode == decodeDigest:
		it.digest, err = dg.DigestBytes(ctx, rec.Topic, false, rec.Value)
	case fast:
		it.value, it.digest, err = dg.DecodeDigest(ctx, rec.Topic, false, rec.Value)
	default:
		if it.value, err = dec.Decode(ctx, rec.Topic, false, rec.Value); err == nil {
			it.digest = codec.DigestOf(it.value)
		}
	}
	if err != nil {
		it.value, it.decErr, it.decWhat = nil, err, "value"
		return
	}
	if rd.role == "repartition" && rd.decode == decodeDigest {
		it.fp, it.hasFP = fingerprintOf(it.keyText, it.digest, rec.Timestamp), true
	}
}

// walkAll walks tps for role without decoding (for their ledgers and
// cut), calls fn for every data record, and returns the partitions that
// could not be read.
func (r *run) walkAll(ctx context.Context, tps []audit.TopicPartition, role string, fn func(*item)) []audit.TopicPartition {
	rd := r.read(ctx, tps, role, decodeNone)
	defer rd.stop()
	var unreadable []audit.TopicPartition
	for _, tp := range tps {
		if !r.walk(ctx, rd, tp, fn) {
			unreadable = append(unreadable, tp)
		}
	}
	return unreadable
}

// walk reads one partition through the ledger, adds the ledger's findings
// and the partition's cut, and calls fn for every data record. An
// unreadable partition becomes an unreadable finding and false.
func (r *run) walk(ctx context.Context, rd *reads, tp audit.TopicPartition, fn func(*item)) bool {
	_, ok := r.walkLedger(ctx, rd, tp, fn)
	return ok
}

// walkLedger is walk that also returns the partition's ledger.
func (r *run) walkLedger(ctx context.Context, rd *reads, tp audit.TopicPartition, fn func(*item)) (*ledger.Ledger, bool) {
	consume := func(b []item) bool {
		for i := range b {
			fn(&b[i])
		}
		r.progress(rd.role, len(b))
		return true
	}
	var l *ledger.Ledger
	var err error
	if s := rd.streams[tp]; s != nil {
		for b := range s.batches {
			consume(b)
			freeBatch(b)
		}
		<-s.done
		l, err = s.l, s.err
		if s.slot {
			<-rd.slots
		}
	} else {
		l, err = rd.produce(ctx, tp, func(b []item) bool {
			consume(b)
			freeBatch(b)
			return true
		})
	}
	if err == nil && l == nil {
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, false
		}
		f := audit.UnreadablePartition(tp, fmt.Sprintf("%s partition could not be read: %v", rd.role, err))
		rd.failed = f.Detail
		if rd.foreign[tp] {
			r.missing("%s (read for the inputs of this shard's keys): %s", tp, f.Detail)
		} else {
			r.add(f)
		}
		return nil, false
	}
	if rd.again || rd.foreign[tp] {
		return l, true
	}
	r.ledgers[tp] = l
	for _, f := range l.Findings {
		r.add(f)
	}
	c := int64(-1)
	if rd.role == "source" || rd.role == "repartition" {
		c = r.committed(tp)
	}
	r.rep.Cut = append(r.rep.Cut, audit.PartitionCut{Topic: tp.Topic, Partition: tp.Partition, Role: rd.role, Committed: c,
		LogStart: l.Offsets.LogStart, LSO: l.Offsets.LSO, HW: l.Offsets.HW})
	return l, true
}

// decoded reports whether the item's record decoded; a failure is an
// undecodable finding (or missing evidence when the registry is down).
func (r *run) decoded(it *item) bool {
	if it.decErr == nil {
		return true
	}
	rec := &it.Record
	if errors.Is(it.decErr, codec.ErrRegistryUnavailable) {
		msg := fmt.Sprintf("decoding %s: %v", rec.Topic, it.decErr)
		for _, m := range r.rep.Summary.Missing {
			if m == msg {
				return false
			}
		}
		r.missing("%s", msg)
		if r.once != nil {
			r.once[msg] = true // said once per run: merge drops it if an earlier table said it
		}
		return false
	}
	f := audit.NewFinding(audit.StageSource, audit.CauseUndecodable, rec.TP(), rec.Offset)
	f.Timestamp = rec.Timestamp
	f.Detail = fmt.Sprintf("%s: %v", it.decWhat, it.decErr)
	r.add(f)
	return false
}

// recordAt reads the record at tp@offset again: the audit keeps no key
// or value of records that end in no finding.
func (r *run) recordAt(ctx context.Context, tp audit.TopicPartition, offset int64) (audit.Record, bool) {
	for rec, err := range r.src.Records(ctx, tp, offset, offset+1) {
		if err != nil || rec.Offset != offset {
			break
		}
		return rec, true
	}
	return audit.Record{}, false
}

// text is a serialized key or value of topic as canonical text: "null"
// for nil, and b64: and base64 when it cannot be decoded.
func (r *run) text(ctx context.Context, topic string, isKey bool, b []byte) string {
	if b == nil {
		return "null"
	}
	v, err := r.opts.Decoder.Decode(ctx, topic, isKey, b)
	if err != nil {
		return codec.RawText(b)
	}
	return codec.Text(v)
}

// progress tells Options.Progress that n more records of role were read.
func (r *run) progress(role string, n int) {
	if r.opts.Progress != nil && n > 0 {
		r.opts.Progress.Read(role, int64(n))
	}
}

// mode is what the readers of a table's topics decode: nothing in a
// keyless audit.
func (r *run) mode(m decodeMode) decodeMode {
	if r.p.Keyless {
		return decodeNone
	}
	return m
}
