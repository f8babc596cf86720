package reconcile

// A table checked a bucket of keys at a time, spilled to files under the memory budget.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
)

// bytesPerRecord is what a table keeps in memory per source input and
// per repartition copy while it is checked: the record (56 bytes each),
// its share of the maps and of their growth, measured on the bench.
const bytesPerRecord = 200

// bytesPerStoreRecord is what a table keeps in memory per changelog
// record (a key's state, its map entry and key, for a compacted
// changelog): 125-155 bytes by the sizes of the types, rounded up.
const bytesPerStoreRecord = 160

// maxBuckets bounds the buckets of a spill on disk: each holds a chunk
// being written in memory (diskChunk).
const maxBuckets = 1024

// A bucket of a spill on disk is written a chunk at a time into the
// spill's one file: chunks of diskChunk bytes, fewer where the buckets'
// chunks would pass an eighth of the table's budget, and not below
// minDiskChunk.
const (
	diskChunk    = 64 << 10
	minDiskChunk = 4 << 10
)

// recordsPerBucket is about how many source and repartition records one
// bucket of keys holds: few enough that the bucket's maps (its keys and
// its copies) stay in the processor's caches while its inputs are matched
// and judged. A table's maps of every key at once missed the caches on
// nearly every lookup (the map probes were a fifth of a diff's CPU on the
// bench); checked in buckets of about this many records, a diff at 1M
// took a quarter less CPU (testdata/bench/README.md, "History").
const recordsPerBucket = 4096

// maxMemBuckets bounds the buckets of a spill held in memory.
const maxMemBuckets = 8192

// spilledBytes is about what one record of a table's source and
// repartition topics costs spilled: an input is its key and 37 bytes, a
// copy 38, and a fold's input also carries its serialized value.
func spilledBytes(t *Table) int64 {
	if t.Latest {
		return 64
	}
	return bytesPerRecord + 56
}

// spill holds a table's per-record state in buckets of table keys: the
// repartition copies and the consumed inputs, written in the order they
// are read into one file (or one run of memory) each per bucket. The
// table is then checked one bucket at a time (eachBucket): a key's inputs
// and copies are all in its bucket, in read order, so each bucket
// rebuilds exactly the state the check of every key at once would hold
// for its keys. Its buckets are in memory, where the budget allows, for
// the caches' sake; on disk when the state would pass the budget, in one
// file: each bucket's records are written a chunk at a time, and read
// back chunk by chunk (one file, whatever the buckets: a file per bucket
// took two or three descriptors a bucket, past a limit of 1,024 at 10M).
//
// It is a hash partition of a plain file rather than an embedded store:
// the check needs no lookup across buckets, and random lookups in an
// LSM store (pebble) measured 60 µs per record once it was on disk.
type spill struct {
	dir    string   // "": the buckets are in memory
	f      *os.File // on disk: the buckets' chunks
	size   int64    // bytes written to f
	chunk  int      // on disk: the size of a bucket's chunk
	read   []byte   // on disk: the chunk read last, reused
	copies []*spillFile
	inputs []*spillFile
	// states, where set, holds the changelog's states by bucket too
	// (planSpill): the store's state is then rebuilt a bucket at a time
	states []*spillFile
	// nCopies, nInputs and nStates count each bucket's records, to size
	// its maps; storeKeys counts the keys of each bucket's store once it
	// is rebuilt (-1 before)
	nCopies, nInputs, nStates, storeKeys []int
	err                                  error  // the first write error
	buf                                  []byte // addInput's record, reused
}

// spillFile is one bucket's copies, inputs or states: a run of chunks
// that no record spans, in memory, or on disk the extents of the spill's
// file that hold them and the chunk being written.
type spillFile struct {
	chunks  [][]byte
	extents []extent
}

// extent is a chunk of a bucket in the spill's file.
type extent struct {
	off int64
	n   int
}

// Chunks of a bucket in memory double from minChunk to maxChunk, so that
// a small bucket wastes little and a large one is not copied as it grows.
const (
	minChunk = 4 << 10
	maxChunk = 256 << 10
)

// add appends one record to a bucket in memory.
func (sf *spillFile) add(b []byte) {
	n := len(sf.chunks)
	if n == 0 || len(sf.chunks[n-1])+len(b) > cap(sf.chunks[n-1]) {
		size := minChunk
		if n > 0 {
			size = min(2*cap(sf.chunks[n-1]), maxChunk)
		}
		sf.chunks = append(sf.chunks, make([]byte, 0, max(size, len(b))))
		n++
	}
	sf.chunks[n-1] = append(sf.chunks[n-1], b...)
}

// newMemSpill makes n buckets in memory, with the changelog's states
// where states is set.
func newMemSpill(n int, states bool) *spill {
	s := &spill{nCopies: make([]int, n), nInputs: make([]int, n)}
	for range n {
		s.copies = append(s.copies, &spillFile{})
		s.inputs = append(s.inputs, &spillFile{})
	}
	if states {
		s.withStates(n)
		for range n {
			s.states = append(s.states, &spillFile{})
		}
	}
	return s
}

func (s *spill) withStates(n int) {
	s.nStates, s.storeKeys = make([]int, n), make([]int, n)
	for b := range s.storeKeys {
		s.storeKeys[b] = -1
	}
}

// newSpill creates n buckets in a file of a new directory in parent ("":
// the system's temporary directory), with the changelog's states where
// states is set; chunk is the size of a bucket's chunk.
func newSpill(parent string, n int, states bool, chunk int) (*spill, error) {
	dir, err := os.MkdirTemp(parent, "kaudit-spill-")
	if err != nil {
		return nil, fmt.Errorf("create the spill directory: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "buckets"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create a spill file: %w", err)
	}
	s := newMemSpill(n, states)
	s.dir, s.f, s.chunk = dir, f, chunk
	return s, nil
}

func (s *spill) buckets() int { return len(s.copies) }

func (s *spill) bucket(key string) int { return int(xxh3.HashString(key) % uint64(len(s.copies))) }

func (s *spill) write(sf *spillFile, b []byte) {
	if s.f == nil {
		sf.add(b)
		return
	}
	if len(sf.chunks) == 0 {
		sf.chunks = [][]byte{make([]byte, 0, max(s.chunk, len(b)))}
	}
	c := sf.chunks[0]
	if len(c)+len(b) > cap(c) {
		s.flush(sf)
		if c = sf.chunks[0]; len(b) > cap(c) {
			c = make([]byte, 0, len(b))
		}
	}
	sf.chunks[0] = append(c, b...)
}

// flush writes a bucket's chunk to the spill's file (on disk).
func (s *spill) flush(sf *spillFile) {
	c := sf.chunks[0]
	if len(c) == 0 {
		return
	}
	if s.err == nil {
		if _, err := s.f.Write(c); err != nil {
			s.err = fmt.Errorf("write %s: %w", s.f.Name(), err)
		}
	}
	sf.extents = append(sf.extents, extent{off: s.size, n: len(c)})
	s.size += int64(len(c))
	sf.chunks[0] = c[:0]
}

// copy record: fingerprint, partition, offset, timestamp, fate, applied
const copyRecLen = 16 + 4 + 8 + 8 + 1 + 1

// addCopy writes one repartition record of table key key.
func (s *spill) addCopy(key string, ev copyEvent) {
	var b [copyRecLen]byte
	copy(b[:16], ev.f[:])
	binary.LittleEndian.PutUint32(b[16:], uint32(ev.partition))
	binary.LittleEndian.PutUint64(b[20:], uint64(ev.offset))
	binary.LittleEndian.PutUint64(b[28:], uint64(ev.ts))
	b[36] = byte(ev.fate)
	if ev.applied {
		b[37] = 1
	}
	bk := s.bucket(key)
	s.nCopies[bk]++
	s.write(s.copies[bk], b[:])
}

// addInput writes one consumed input of key; raw is its serialized value
// where the check folds it, else nil.
func (s *spill) addInput(key string, x inputRec, raw []byte) {
	b := appendInput(s.buf[:0], key, x, raw)
	bk := s.bucket(key)
	s.nInputs[bk]++
	s.write(s.inputs[bk], b)
	s.buf = b
}

// appendInput appends one input of key, as readInputs parses it: the
// spill's and the shards' exchange's (exchange.go) record of an input.
func appendInput(b []byte, key string, x inputRec, raw []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = binary.LittleEndian.AppendUint64(b, uint64(x.offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(x.ts))
	b = append(b, x.digest[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(x.part))
	elem := x.elem
	if x.unsure {
		elem |= unsureBit
	}
	b = binary.LittleEndian.AppendUint16(b, elem)
	if raw == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(raw))+1) // 0: no value kept
	return append(b, raw...)
}

// addState writes one committed changelog record of key: its state,
// partition p and the first offset of its transaction (-1: none).
func (s *spill) addState(key string, p int32, e clEntry, txn int64) {
	b := binary.AppendUvarint(s.buf[:0], uint64(len(key)))
	b = append(b, key...)
	b = binary.LittleEndian.AppendUint32(b, uint32(p))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.offset))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.ts))
	b = binary.LittleEndian.AppendUint64(b, uint64(txn))
	b = append(b, e.digest[:]...)
	if e.null {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	bk := s.bucket(key)
	s.nStates[bk]++
	s.write(s.states[bk], b)
	s.buf = b
}

// stateRecLen is a state record's length after its key (addState's).
const stateRecLen = 4 + 8 + 8 + 8 + 16 + 1

// eachState calls fn for the changelog records of bucket b, in read
// order; key is only valid during the call.
func (s *spill) eachState(b int, fn func(key []byte, p int32, e clEntry, txn int64)) error {
	return s.parse(s.states[b], func(rd byteReader, size uint64) error { return readStates(rd, size, fn) })
}

// byteReader is what the parsers of a bucket's records read from.
type byteReader interface {
	io.Reader
	io.ByteReader
}

// parse hands a bucket's records to parser a chunk at a time, in memory
// or read back from disk (no record spans two chunks), with the chunk's
// size in bytes.
func (s *spill) parse(sf *spillFile, parser func(rd byteReader, size uint64) error) error {
	return s.eachChunk(sf, func(c []byte) error { return parser(bytes.NewReader(c), uint64(len(c))) })
}

// eachChunk calls fn with each chunk of a bucket, in the order written:
// in memory, or read back from the spill's file into one buffer.
func (s *spill) eachChunk(sf *spillFile, fn func(c []byte) error) error {
	if s.f == nil {
		for _, c := range sf.chunks {
			if err := fn(c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range sf.extents {
		s.read = grow(s.read, uint64(e.n))
		if _, err := s.f.ReadAt(s.read, e.off); err != nil {
			return fmt.Errorf("read %s: %w", s.f.Name(), err)
		}
		if err := fn(s.read); err != nil {
			return fmt.Errorf("read %s: %w", s.f.Name(), err)
		}
	}
	return nil
}

// readStates parses a chunk of a bucket's states, size bytes in all, and
// calls fn for each.
func readStates(rd byteReader, size uint64, fn func(key []byte, p int32, e clEntry, txn int64)) error {
	var key []byte
	var fixed [stateRecLen]byte
	for {
		n, err := binary.ReadUvarint(rd)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err == nil && n > size { // no key is longer than the file
			err = fmt.Errorf("a length of %d bytes in a file of %d", n, size)
		}
		if err != nil {
			return err
		}
		key = grow(key, n)
		if _, err := io.ReadFull(rd, key); err != nil {
			return err
		}
		if _, err := io.ReadFull(rd, fixed[:]); err != nil {
			return err
		}
		e := clEntry{offset: int64(binary.LittleEndian.Uint64(fixed[4:])), ts: int64(binary.LittleEndian.Uint64(fixed[12:])), null: fixed[44] == 1}
		copy(e.digest[:], fixed[28:44])
		fn(key, int32(binary.LittleEndian.Uint32(fixed[0:])), e, int64(binary.LittleEndian.Uint64(fixed[20:])))
	}
}

// files lists every bucket's files.
func (s *spill) files() []*spillFile {
	return append(append(slices.Clip(s.copies), s.inputs...), s.states...)
}

// finish flushes every bucket; the spill is then read with eachCopy,
// eachInput and eachState.
func (s *spill) finish() error {
	if s.f == nil {
		return nil
	}
	for _, sf := range s.files() {
		if len(sf.chunks) > 0 {
			s.flush(sf)
			sf.chunks = nil // the chunks being written are done with
		}
	}
	return s.err
}

// eachCopy calls fn for the repartition records of bucket b, in read order.
func (s *spill) eachCopy(b int, fn func(copyEvent)) error {
	return s.eachChunk(s.copies[b], func(c []byte) error {
		for ; len(c) >= copyRecLen; c = c[copyRecLen:] {
			fn(copyRec(c))
		}
		if len(c) > 0 {
			return fmt.Errorf("%d bytes after the last copy of a chunk", len(c))
		}
		return nil
	})
}

// copyRec parses the copy record b begins with (addCopy's).
func copyRec(b []byte) copyEvent {
	ev := copyEvent{partition: int32(binary.LittleEndian.Uint32(b[16:])), offset: int64(binary.LittleEndian.Uint64(b[20:])),
		ts: int64(binary.LittleEndian.Uint64(b[28:])), fate: audit.Fate(b[36]), applied: b[37] == 1}
	copy(ev.f[:], b[:16])
	return ev
}

// eachInput calls fn for the inputs of bucket b, in read order; key and
// raw are only valid during the call.
func (s *spill) eachInput(b int, fn func(key []byte, x inputRec, raw []byte) error) error {
	return s.parse(s.inputs[b], func(rd byteReader, size uint64) error { return readInputs(rd, size, fn) })
}

// readInputs parses a chunk of a bucket's inputs, size bytes in all, and
// calls fn for each; fn's error is returned as is.
func readInputs(rd byteReader, size uint64, fn func(key []byte, x inputRec, raw []byte) error) error {
	length := func() (uint64, error) {
		n, err := binary.ReadUvarint(rd)
		if err == nil && n > size { // no key or value is longer than the file
			err = fmt.Errorf("a length of %d bytes in a file of %d", n, size)
		}
		return n, err
	}
	var key, raw []byte
	var fixed [8 + 8 + 16 + 4 + 2]byte
	for {
		n, err := length()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		key = grow(key, n)
		if _, err := io.ReadFull(rd, key); err != nil {
			return err
		}
		if _, err := io.ReadFull(rd, fixed[:]); err != nil {
			return err
		}
		if n, err = length(); err != nil {
			return err
		}
		raw = grow(raw, max(n, 1)-1)
		if _, err := io.ReadFull(rd, raw); err != nil {
			return err
		}
		x := inputRec{offset: int64(binary.LittleEndian.Uint64(fixed[0:])), ts: int64(binary.LittleEndian.Uint64(fixed[8:])),
			part: int32(binary.LittleEndian.Uint32(fixed[32:])), elem: binary.LittleEndian.Uint16(fixed[36:]), r: -1}
		x.elem, x.unsure = x.elem&^unsureBit, x.elem&unsureBit != 0
		copy(x.digest[:], fixed[16:32])
		var v []byte
		if n > 0 {
			v = raw[:len(raw):len(raw)]
			if v == nil {
				v = []byte{} // an empty value kept, not none
			}
		}
		if err := fn(key, x, v); err != nil {
			return err
		}
	}
}

func grow(b []byte, n uint64) []byte {
	if uint64(cap(b)) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// close removes the spill's file, or drops its memory.
func (s *spill) close() {
	s.copies, s.inputs, s.states = nil, nil, nil
	if s.f != nil {
		s.f.Close()
		os.RemoveAll(s.dir)
	}
}

// planSpill decides, from the offsets of the table's source and
// repartition partitions (those of the shard, with --partitions), how its
// per-record state is kept (bucketPlan): in buckets in memory, or spilled
// to disk when it would pass Options.MemoryBudget.
func (r *run) planSpill(ctx context.Context, ts *tableState) error {
	if r.p.Keyless || ts.win != nil || r.opts.oneMap { // windowed tables keep every key in a map (window.go)
		return nil
	}
	records := r.stateRecords(ctx, ts.t)
	n, disk := r.bucketPlan(ts.t, records)
	// the store's state goes in the buckets too, but where the table's own
	// output is checked against every key of its store (checkOutput)
	states := ts.t.Changelog != "" && ts.t.Output == ""
	if !disk {
		ts.spill = newMemSpill(n, states)
		return nil
	}
	s, err := newSpill(r.opts.SpillDir, n, states, chunkSize(r.opts.MemoryBudget, n))
	if err != nil {
		return err
	}
	ts.spill = s
	if r.opts.Log != nil {
		r.opts.Log(fmt.Sprintf("table %s: about %d MiB of per-record state for %d records is over the table's memory budget of %d MiB: spilled to %s, checked in %d buckets of keys",
			ts.t.Name, records*spilledBytes(ts.t)>>20, records, r.opts.MemoryBudget>>20, s.dir, n))
	}
	return nil
}

// bucketPlan is how many buckets of keys a table of records source and
// repartition records is checked in, and whether they are on disk: about
// recordsPerBucket records each; on disk when they would pass the budget,
// then at least as many as it takes for one bucket's maps to fit it, and
// no more than their chunks being written (minDiskChunk each, three a
// bucket) fit an eighth of it.
func (r *run) bucketPlan(t *Table, records int64) (n int, disk bool) {
	budget := r.opts.MemoryBudget
	want := max((records+recordsPerBucket-1)/recordsPerBucket, 1)
	if budget > 0 && records*spilledBytes(t) > budget {
		fit := (records*bytesPerRecord + budget - 1) / budget
		return int(min(max(min(want, budget/8/(3*minDiskChunk)), fit, 1), maxBuckets)), true
	}
	return int(min(want, maxMemBuckets)), false
}

// chunkSize is the size of the chunks the n buckets of a spill on disk
// are written in, for a table's budget: together an eighth of it, within
// minDiskChunk and diskChunk.
func chunkSize(budget int64, n int) int {
	return int(min(max(budget/8/int64(3*n), minDiskChunk), diskChunk))
}

// memoryOf is what a table of records source and repartition records
// keeps in memory while it is audited, beside its store: its buckets in
// memory and one bucket's maps, or one bucket's maps of a spill on disk,
// or every key's maps (oneMap).
func (r *run) memoryOf(t *Table, records int64) int64 {
	if r.opts.oneMap || t.Window != nil {
		return records * bytesPerRecord
	}
	n, disk := r.bucketPlan(t, records)
	w := records * bytesPerRecord / int64(n)
	if disk {
		w += int64(3 * n * chunkSize(r.opts.MemoryBudget, n))
	} else {
		w += records * spilledBytes(t)
	}
	return w
}

// stateRecords is how many records of the table's source and repartition
// partitions (those of the shard, with --partitions) its per-record state
// holds, from their offsets.
func (r *run) stateRecords(ctx context.Context, t *Table) int64 {
	// a shard keeps about its share of the inputs, read from every source partition
	n := r.shardRecords(ctx, t.Source) + r.shardRecords(ctx, t.Repartition)
	for _, m := range t.Merged {
		n += r.shardRecords(ctx, m)
	}
	return n
}

// storeRecords is how many records of the table's changelog partitions
// (those of the shard) its store's state holds at most, from their
// offsets: that state stays in memory while the table is audited.
func (r *run) storeRecords(ctx context.Context, t *Table) int64 {
	return r.shardRecords(ctx, t.Changelog)
}

// shardRecords is how many records the shard's partitions of topic hold,
// from their offsets; 0 for no topic, and nothing for a partition whose
// offsets cannot be read (its read reports it).
func (r *run) shardRecords(ctx context.Context, topic string) int64 {
	info, ok := r.topics[topic]
	if topic == "" || !ok {
		return 0
	}
	var records int64
	for _, p := range r.shardPartitions(info.Partitions) {
		if o, err := r.src.Offsets(ctx, audit.TopicPartition{Topic: topic, Partition: p}); err == nil {
			records += o.HW - o.LogStart
		}
	}
	return records
}

// eachBucket calls fn with the table's per-key state in ts.keys and
// ts.copies: once, as read, for a table in memory; once per bucket of keys
// (those in buckets, nil: all), rebuilt from the spill, for a spilled
// table. A bucket's keys start as the store's, as a table's in memory do.
func (r *run) eachBucket(ctx context.Context, ts *tableState, buckets []int, fn func(b int)) error {
	if ts.spill == nil {
		fn(0)
		return ctx.Err()
	}
	if buckets == nil {
		buckets = make([]int, ts.spill.buckets())
		for b := range buckets {
			buckets[b] = b
		}
	}
	if ts.spill.states != nil {
		return r.eachStateBucket(ctx, ts, buckets, fn)
	}
	byBucket := ts.storeByBucket()
	defer func() { ts.keys, ts.copies, ts.keysKnown = nil, nil, false }()
	for _, b := range buckets {
		ts.startKeys(len(byBucket[b]), ts.spill.nInputs[b]/2, func(yield func(string, *clState) bool) {
			for _, sk := range byBucket[b] {
				if !yield(sk.key, sk.cs) {
					return
				}
			}
		})
		if err := r.loadInputs(ctx, ts, b); err != nil {
			return err
		}
		fn(b)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// eachStateBucket is eachBucket for a spill that holds the changelog's
// states: each bucket's store is rebuilt with its keys, as ts.changelog
// while fn checks them; what the check keeps of it for after (retain) is
// then ts.changelog.
func (r *run) eachStateBucket(ctx context.Context, ts *tableState, buckets []int, fn func(b int)) error {
	kept := ts.changelog
	defer func() { ts.keys, ts.copies, ts.keysKnown, ts.changelog, ts.kept = nil, nil, false, kept, nil }()
	ts.kept = kept
	for _, b := range buckets {
		cl, _, err := ts.loadStates(b)
		if err != nil {
			return err
		}
		if ts.spill.storeKeys[b] < 0 {
			ts.spill.storeKeys[b] = len(cl)
			ts.storeKeys += int64(len(cl))
		}
		ts.changelog = cl
		ts.startKeys(len(cl), ts.spill.nInputs[b]/2, maps.All(cl))
		if err := r.loadInputs(ctx, ts, b); err != nil {
			return err
		}
		fn(b)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// loadStates rebuilds bucket b's store: its keys' states, as
// readChangelog builds them; twice: some key has two states in one
// transaction.
func (ts *tableState) loadStates(b int) (cl map[string]*clState, twice bool, err error) {
	cl = make(map[string]*clState, ts.spill.nStates[b])
	var slab []clState
	err = ts.spill.eachState(b, func(kb []byte, p int32, e clEntry, txn int64) {
		cs := cl[string(kb)]
		if cs == nil {
			if len(slab) == cap(slab) {
				slab = make([]clState, 0, min(max(ts.spill.nStates[b], 16), 1024))
			}
			slab = append(slab, clState{partition: p, txn: -1})
			cs = &slab[len(slab)-1]
			cl[string(kb)] = cs
		}
		twice = cs.add(e, txn) || twice
	})
	return cl, twice, err
}

// retain keeps key's state past its bucket's check, for what follows it
// (the attribution of its vanished inputs, the actual state of its
// findings): a store rebuilt a bucket at a time keeps only those.
func (ts *tableState) retain(key string) {
	if ts.kept == nil {
		return
	}
	if cs, ok := ts.changelog[key]; ok {
		ts.kept[key] = cs
	}
}

// loadInputs sets ts.copies to bucket b's copies and adds its inputs to
// the keys' states.
func (r *run) loadInputs(ctx context.Context, ts *tableState, b int) error {
	if err := ts.loadCopies(b); err != nil {
		return err
	}
	defer func() { ts.addFound(ts.copies) }() // the bucket's keys' inputs all matched
	return ts.spill.eachInput(b, func(kb []byte, x inputRec, raw []byte) error {
		if err := r.addRecorded(ctx, ts, kb, x, raw); err != nil {
			return fmt.Errorf("decode a spilled input of %s@%d: %w", ts.tpOf(x.part), x.offset, err)
		}
		return nil
	})
}

// addRecorded adds an input as the spill and the exchange record it
// (appendInput): its value decoded again from raw (inputValue), its
// key's state looked up by the key's bytes.
func (r *run) addRecorded(ctx context.Context, ts *tableState, kb []byte, x inputRec, raw []byte) error {
	v, err := r.inputValue(ctx, ts, x, raw)
	if err != nil {
		return err
	}
	ks := ts.keys[string(kb)] // one string per key: its later inputs share the state's
	if ks == nil {
		ks = ts.keyState(string(kb))
	}
	r.addInputTo(ts, ks, x, v, nil)
	return nil
}

// inputRaw is what the spill and the exchange keep of an element's value
// (appendInput): nothing for a latest table, whose check compares
// digests; the value its steps gave in canonical JSON where they change
// values; else the source record's serialized value.
func inputRaw(t *Table, e *elemOf) []byte {
	switch {
	case t.Latest:
		return nil
	case t.ValueChanging:
		return codec.Canonical(e.v) // decoded again as JSON (inputValue)
	default:
		return e.it.Record.Value
	}
}

// inputValue decodes what inputRaw kept of an input's value.
func (r *run) inputValue(ctx context.Context, ts *tableState, x inputRec, raw []byte) (audit.Value, error) {
	switch {
	case raw == nil:
		return nil, nil
	case ts.t.ValueChanging:
		return codec.ParseCanonical(raw) // the element's value as its steps gave it
	default:
		return r.opts.Decoder.Decode(ctx, ts.tpOf(x.part).Topic, false, raw)
	}
}

// startKeys sets ts.keys to the n store keys that keys yields, each with
// its changelog state, so that an input finds both in one lookup; the map
// is sized for at least size keys. keysKnown: a key added later has no
// state.
func (ts *tableState) startKeys(n, size int, keys iter.Seq2[string, *clState]) {
	ts.keys = make(map[string]*keyState, max(n, size))
	slab := make([]keyState, n)
	i := 0
	for k, cs := range keys {
		slab[i] = keyState{key: k, r: rUnset, cl: cs, clKnown: true}
		ts.keys[k] = &slab[i]
		i++
	}
	ts.keysKnown = true
}

// loadCopies sets ts.copies to bucket b's repartition copies.
func (ts *tableState) loadCopies(b int) error {
	ts.copies, ts.copyOffs = make(map[fingerprint]copyInfo, ts.spill.nCopies[b]), nil
	return ts.spill.eachCopy(b, ts.addCopy)
}

// storeKey is a key of the store and its state.
type storeKey struct {
	key string
	cs  *clState
}

// storeByBucket returns the store's keys (ts.changelog) by spill bucket.
func (ts *tableState) storeByBucket() [][]storeKey {
	out := make([][]storeKey, ts.spill.buckets())
	for k, cs := range ts.changelog {
		b := ts.spill.bucket(k)
		out[b] = append(out[b], storeKey{k, cs})
	}
	return out
}

// matchBuckets matches every spilled input with its copy, bucket by
// bucket, for what the check needs of all the buckets before it judges
// one (ts.found): the inputs are matched as addInput matches them, and
// nothing else of them is kept.
func (r *run) matchBuckets(ctx context.Context, ts *tableState) error {
	defer func() { ts.copies, ts.copyOffs = nil, nil }()
	for b := range ts.spill.buckets() {
		if err := ts.loadCopies(b); err != nil {
			return err
		}
		err := ts.spill.eachInput(b, func(kb []byte, x inputRec, _ []byte) error {
			in := input{table: ts, tp: ts.tpOf(x.part), part: x.part, offset: x.offset, ts: x.ts, digest: x.digest, r: -1}
			f := fingerprintOf(kb, x.digest, x.ts)
			r.match(ts, &in, &f)
			return nil
		})
		if err != nil {
			return err
		}
		ts.addFound(ts.copies)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}
