package kafka

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
)

// Fetch sizes: generous, so that a partition reads in few round trips.
// Brokers always return at least one whole batch, however large. A
// sample's read (RecordsSample) fetches sampleFirstBytes first and four
// times more each fetch after, up to partitionMaxBytes.
var (
	partitionMaxBytes int32 = 8 << 20
	fetchMaxBytes     int32 = 16 << 20
	sampleFirstBytes  int32 = 64 << 10
)

const fetchMaxWait = 250 // ms; data below the end is answered at once

// Retry budget of one read: transient leader changes are retried this many
// times; a response that makes no progress below the end this many times
// ends the read with an error instead of looping.
const (
	maxLeaderRetries = 4
	maxStalls        = 3
)

// decompressor is bounded: a batch inflating past segment.MaxBatchBytes (a
// gzip bomb) is corrupt evidence, found with about that much memory.
var decompressor kgo.Decompressor = segment.Decompressor{}

// Records yields the partition's records with offsets in [from, to) as
// written: read_uncommitted, control records kept, each with its batch
// header and, for control records, the decoded marker. to < 0 means up to
// the high watermark at the first fetch. Offsets that no longer exist
// (below log start, compacted) are skipped. An error is yielded once, wrapped
// with the partition and offset, and ends the sequence.
func (s *Source) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return s.read(ctx, tp, from, to, readRaw, nil)
}

// RecordsIndexed yields what Records yields, and learns the broker's
// read_committed view of [from, to) from the same fetches: below the last
// stable offset it fetches read_committed, which returns the same raw
// batches along with the aborted transactions a read_committed consumer
// filters out, and from the LSO on it fetches read_uncommitted. When the
// sequence ends without error, *idx holds the LSO the last read_committed
// response reported and every aborted transaction the responses named.
func (s *Source) RecordsIndexed(ctx context.Context, tp audit.TopicPartition, from, to int64, idx *audit.CommittedIndex) iter.Seq2[audit.Record, error] {
	return s.read(ctx, tp, from, to, readIndexed, idx)
}

// RecordsSample yields what Records yields, fetching little at first
// (sampleFirstBytes) and four times more each fetch after: every record
// of a fetch is decompressed and decoded before the first is yielded, so
// a read that stops after its first records (infer's sample of a source)
// costs little more than them, where a full fetch (8 MiB) may hold the
// whole partition.
func (s *Source) RecordsSample(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return s.read(ctx, tp, from, to, readSample, nil)
}

// ReadCommitted yields the partition's records in [from, to) the way a
// read_committed consumer sees them: the broker stops at the last stable
// offset and franz-go drops aborted data and control records using the
// broker's aborted-transaction list. to < 0 means up to the LSO.
func (s *Source) ReadCommitted(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return s.read(ctx, tp, from, to, readCommitted, nil)
}

// readMode says how read fetches and what it yields.
type readMode int

const (
	readRaw       readMode = iota // read_uncommitted, control records kept
	readCommitted                 // read_committed, filtered as a consumer sees it, up to the LSO
	readIndexed                   // raw, fetched read_committed below the LSO to learn the aborted index
	readSample                    // raw, in fetches growing from sampleFirstBytes
)

// indexer collects the broker's read_committed view from the responses of
// an indexed read.
type indexer struct {
	idx  *audit.CommittedIndex
	seen map[audit.AbortedTxn]bool
}

func newIndexer(idx *audit.CommittedIndex) *indexer {
	*idx = audit.CommittedIndex{LSO: -1}
	return &indexer{idx: idx, seen: map[audit.AbortedTxn]bool{}}
}

// add notes one read_committed response.
func (x *indexer) add(rp *kmsg.FetchResponseTopicPartition) {
	x.idx.LSO = rp.LastStableOffset
	for _, at := range rp.AbortedTransactions {
		a := audit.AbortedTxn{ProducerID: at.ProducerID, FirstOffset: at.FirstOffset}
		if !x.seen[a] {
			x.seen[a] = true
			x.idx.Aborted = append(x.idx.Aborted, a)
		}
	}
}

// done orders the aborted transactions.
func (x *indexer) done() {
	slices.SortFunc(x.idx.Aborted, func(a, b audit.AbortedTxn) int {
		return cmp.Or(cmp.Compare(a.FirstOffset, b.FirstOffset), cmp.Compare(a.ProducerID, b.ProducerID))
	})
}

// leaderInfo is where a partition's fetches go.
type leaderInfo struct {
	leader  int32
	topicID [16]byte
}

// leaderOf asks for the partition's leader afresh (no cached metadata: it
// runs again after a leader change), or returns an error wrapping
// audit.ErrTopicNotFound, audit.ErrPartitionNotFound or the partition's
// metadata error.
func (s *Source) leaderOf(ctx context.Context, tp audit.TopicPartition) (leaderInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false // never create what is audited
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(tp.Topic)
	req.Topics = append(req.Topics, rt)
	resp, err := retryDial(ctx, &s.refused, func() (*kmsg.MetadataResponse, error) {
		rctx, cancel := s.reqCtx(ctx)
		defer cancel()
		return req.RequestWith(rctx, s.cl)
	})
	if err != nil {
		if ctx.Err() != nil {
			return leaderInfo{}, ctx.Err()
		}
		return leaderInfo{}, fmt.Errorf("describe topic %q: %w", tp.Topic, err)
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != tp.Topic {
			continue
		}
		switch terr := kerr.ErrorForCode(t.ErrorCode); {
		case errors.Is(terr, kerr.UnknownTopicOrPartition) || errors.Is(terr, kerr.UnknownTopicID):
			return leaderInfo{}, fmt.Errorf("describe topic %q: %w", tp.Topic, audit.ErrTopicNotFound)
		case terr != nil:
			return leaderInfo{}, fmt.Errorf("describe topic %q: %w", tp.Topic, authErr(terr, "topic "+tp.Topic, "DESCRIBE"))
		}
		for _, p := range t.Partitions {
			if p.Partition != tp.Partition {
				continue
			}
			if p.Leader < 0 {
				perr := kerr.ErrorForCode(p.ErrorCode)
				if perr == nil {
					perr = kerr.LeaderNotAvailable
				}
				return leaderInfo{}, fmt.Errorf("find leader of %s: %w", tp, perr)
			}
			return leaderInfo{leader: p.Leader, topicID: t.TopicID}, nil
		}
		return leaderInfo{}, fmt.Errorf("describe %s: %w (topic %q has %d)", tp, audit.ErrPartitionNotFound, tp.Topic, len(t.Partitions))
	}
	return leaderInfo{}, fmt.Errorf("describe topic %q: %w", tp.Topic, audit.ErrTopicNotFound)
}

func (s *Source) read(ctx context.Context, tp audit.TopicPartition, from, to int64, mode readMode, idx *audit.CommittedIndex) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		committed := mode == readCommitted // filter as a read_committed consumer
		var ix *indexer
		if mode == readIndexed {
			ix = newIndexer(idx)
			defer ix.done()
		}
		off := max(from, 0)
		fail := func(err error) {
			yield(audit.Record{}, fmt.Errorf("read %s at offset %d: %w", tp, off, err))
		}
		if to >= 0 && off >= to {
			return
		}
		var (
			li      leaderInfo
			leader  bool // li is current
			end     = to // fixed at the first response when to < 0
			retries int
			stalls  int
			pool    = recordSlicesPool.Get().(*recordSlices)
			size    = partitionMaxBytes // of the next fetch
		)
		if mode == readSample {
			size = min(sampleFirstBytes, partitionMaxBytes)
		}
		defer func() { pool.reuse(); recordSlicesPool.Put(pool) }()
		for {
			if err := ctx.Err(); err != nil {
				fail(err)
				return
			}
			var (
				rp  *kmsg.FetchResponseTopicPartition
				err error
				// an indexed read fetches read_committed up to the LSO
				// the last read_committed response reported
				isolated = committed || (ix != nil && (ix.idx.LSO < 0 || off < ix.idx.LSO))
			)
			if !leader {
				li, err = s.leaderOf(ctx, tp)
				leader = err == nil
			}
			if err == nil {
				wait := int32(fetchMaxWait)
				if ix != nil && ix.idx.LSO < 0 {
					// The LSO is not known yet and may be where the read
					// starts: a broker holds a read_committed fetch at the
					// LSO for the whole wait.
					wait = 0
				}
				rp, err = s.fetchSized(ctx, tp, li, off, isolated, wait, size)
			}
			if err == nil {
				err = kerr.ErrorForCode(rp.ErrorCode)
			}
			switch {
			case err == nil:
				retries = 0
			case errors.Is(err, kerr.OffsetOutOfRange):
				po, oerr := s.Offsets(ctx, tp)
				if oerr != nil {
					fail(oerr)
					return
				}
				limit := po.HW
				if committed {
					limit = po.LSO
				}
				if ix != nil && isolated {
					ix.idx.LSO = po.LSO
				}
				switch {
				case off < po.LogStart && stalls < maxStalls:
					off, stalls = po.LogStart, stalls+1 // purged since: skip to log start
					if end >= 0 && off >= end {
						return
					}
					continue
				case off >= limit:
					return
				}
				fail(err)
				return
			case brokerGone(err) && s.refused.retryable(time.Now()):
				// the leader refuses connections (killed), or the client's
				// metadata has dropped it already: the metadata names
				// another once the controller fences it
				if !sleep(ctx, dialRetry) {
					fail(ctx.Err())
					return
				}
				leader = false
				continue
			case isLeaderChange(err) && retries < maxLeaderRetries:
				retries++
				if !sleep(ctx, time.Duration(retries)*200*time.Millisecond) {
					fail(ctx.Err())
					return
				}
				leader = false // ask again
				continue
			case !leader: // the leader lookup failed for good
				fail(err)
				return
			case errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID):
				fail(fmt.Errorf("%w (deleted or never existed): %w", audit.ErrTopicNotFound, err))
				return
			default:
				fail(authErr(err, "topic "+tp.Topic, "READ"))
				return
			}

			limit := rp.HighWatermark
			if committed {
				limit = rp.LastStableOffset
			}
			if ix != nil && isolated {
				ix.add(rp)
			}
			if end < 0 {
				end = limit
			}
			stop := min(end, limit)
			if off >= stop {
				return
			}

			start := off
			batches, data, corrupt := splitBatches(rp.RecordBatches)
			if len(batches) == 0 && corrupt {
				fail(fmt.Errorf("%w: unreadable record batch header", audit.ErrCorrupt))
				return
			}
			if len(batches) == 0 && ix != nil && isolated && off >= ix.idx.LSO {
				continue // at the LSO: read_uncommitted from here
			}
			if len(batches) == 0 {
				stalls++
				if stalls >= maxStalls {
					fail(fmt.Errorf("no record batch returned below offset %d after %d fetches", stop, stalls))
					return
				}
				continue
			}
			rp.RecordBatches = data
			pool.reuse() // the last fetch's records are converted
			if size < partitionMaxBytes {
				size = int32(min(int64(size)*4, int64(partitionMaxBytes)))
			}
			opts := kgo.ProcessFetchPartitionOpts{
				KeepControlRecords: !committed,
				Offset:             off,
				Topic:              tp.Topic,
				Partition:          tp.Partition,
				Pools:              []kgo.Pool{pool},
			}
			if committed {
				opts.IsolationLevel = kgo.ReadCommitted()
			}
			fp, _ := kgo.ProcessFetchPartition(opts, rp, decompressor, nil)
			if fp.Err != nil {
				fail(fmt.Errorf("%w: decode batches: %w", audit.ErrCorrupt, fp.Err))
				return
			}
			bi := 0
			for _, kr := range fp.Records {
				if kr.Offset < off {
					continue
				}
				if kr.Offset >= stop {
					return
				}
				for bi < len(batches)-1 && batches[bi].LastOffset() < kr.Offset {
					bi++
				}
				rec := toRecord(kr, batches[bi])
				off = kr.Offset
				if err := ctx.Err(); err != nil {
					fail(err)
					return
				}
				if !yield(rec, nil) {
					return
				}
				off = kr.Offset + 1
			}
			off = max(off, batches[len(batches)-1].LastOffset()+1)
			if off > start {
				stalls = 0
			} else {
				stalls++
				if stalls >= maxStalls {
					fail(fmt.Errorf("fetch made no progress below offset %d after %d tries", stop, stalls))
					return
				}
			}
			if off >= stop {
				return
			}
		}
	}
}

// recordSlices is a kgo.PoolRecords for one partition's read: the
// record slices ProcessFetchPartition decodes a fetch's batches into,
// handed out again once the read has converted the fetch's records
// (toRecord copies what it keeps, so nothing refers to them then): a
// record slice per batch was the largest allocation after the batches'
// decompression (17 % of the bytes of a diff). Record.Recycle is never
// called: its last call zeroes the decompressed batch, which the
// converted records alias.
type recordSlices struct {
	free, used [][]kgo.Record
}

var _ kgo.PoolRecords = (*recordSlices)(nil)

// recordSlicesPool keeps the slices from one partition's read to the next
// (a read is often a fetch or two).
var recordSlicesPool = sync.Pool{New: func() any { return new(recordSlices) }}

// GetRecords returns a slice of capacity n or more for one batch: the
// smallest free one large enough, else a new one.
func (p *recordSlices) GetRecords(n int) []kgo.Record {
	best := -1
	for i, f := range p.free {
		if cap(f) >= n && (best < 0 || cap(f) < cap(p.free[best])) {
			best = i
		}
	}
	var s []kgo.Record
	if best >= 0 {
		s = p.free[best]
		p.free = append(p.free[:best], p.free[best+1:]...)
	} else {
		s = make([]kgo.Record, 0, n)
	}
	p.used = append(p.used, s)
	return s[:0]
}

// PutRecords takes back the slice of a batch none of whose records was
// kept: it is among those handed out, reused with them.
func (p *recordSlices) PutRecords([]kgo.Record) {}

// reuse makes the slices handed out for the last fetch free again,
// cleared: a pooled slice holds no batch alive.
func (p *recordSlices) reuse() {
	for _, s := range p.used {
		clear(s[:cap(s)])
	}
	p.free = append(p.free, p.used...)
	p.used = p.used[:0]
}

func isLeaderChange(err error) bool {
	for _, e := range []error{kerr.NotLeaderForPartition, kerr.LeaderNotAvailable, kerr.FencedLeaderEpoch,
		kerr.UnknownLeaderEpoch, kerr.ReplicaNotAvailable, kerr.NotCoordinator, kerr.OffsetNotAvailable} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// fetch issues one Fetch for the partition to its leader, read_committed
// when isolated, waiting at most wait ms for data, and returns the
// partition's part of the response.
func (s *Source) fetch(ctx context.Context, tp audit.TopicPartition, li leaderInfo, off int64, isolated bool, wait int32) (*kmsg.FetchResponseTopicPartition, error) {
	return s.fetchSized(ctx, tp, li, off, isolated, wait, partitionMaxBytes)
}

// fetchSized is fetch asking for at most size bytes of the partition.
func (s *Source) fetchSized(ctx context.Context, tp audit.TopicPartition, li leaderInfo, off int64, isolated bool, wait, size int32) (*kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = wait
	req.MinBytes = 1
	req.MaxBytes = max(fetchMaxBytes, size)
	req.SessionID = 0
	req.SessionEpoch = -1 // no fetch session: a full, stateless fetch
	if isolated {
		req.IsolationLevel = 1 // read_committed
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = tp.Topic
	rt.TopicID = li.topicID
	rpp := kmsg.NewFetchRequestTopicPartition()
	rpp.Partition = tp.Partition
	rpp.FetchOffset = off
	rpp.CurrentLeaderEpoch = -1
	rpp.LogStartOffset = -1
	rpp.PartitionMaxBytes = size
	rt.Partitions = append(rt.Partitions, rpp)
	req.Topics = append(req.Topics, rt)

	rctx, cancel := s.reqCtx(ctx)
	defer cancel()
	kresp, err := s.cl.Broker(int(li.leader)).RetriableRequest(rctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("fetch from broker %d: %w", li.leader, err)
	}
	resp := kresp.(*kmsg.FetchResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetch from broker %d: %w", li.leader, err)
	}
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.Topic != tp.Topic && t.TopicID != li.topicID {
			continue
		}
		for j := range t.Partitions {
			if t.Partitions[j].Partition == tp.Partition {
				return &t.Partitions[j], nil
			}
		}
	}
	return nil, fmt.Errorf("fetch from broker %d: the response has no data for the partition", li.leader)
}

// splitBatches parses the v2 batch headers of a fetch's records and returns
// them with the bytes of the complete batches. A fetch may end in a partial
// batch, which is dropped; corrupt reports a batch header that cannot be
// read (before the end). Legacy message sets (magic 0 and 1) get a header
// built from the message offsets in toRecord.
func splitBatches(b []byte) (batches []audit.Batch, kept []byte, corrupt bool) {
	n := 0
	for len(b)-n >= 12 {
		length := int32(binary.BigEndian.Uint32(b[n+8:]))
		size := 12 + int(length)
		if length < 5 { // too short to hold its magic byte
			return batches, b[:n], true
		}
		if size > len(b)-n { // cut off by the fetch size
			break
		}
		raw := b[n : n+size]
		if raw[16] != 2 { // magic
			base := int64(binary.BigEndian.Uint64(raw))
			batches = append(batches, audit.Batch{BaseOffset: base, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1, Compression: "legacy"})
			n += size
			continue
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return batches, b[:n], true
		}
		batches = append(batches, batchOf(&rb))
		n += size
	}
	return batches, b[:n], false
}

var compressionNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

func batchOf(rb *kmsg.RecordBatch) audit.Batch {
	codec := "unknown"
	if c := int(rb.Attributes & 0x07); c < len(compressionNames) {
		codec = compressionNames[c]
	}
	return audit.Batch{
		BaseOffset:           rb.FirstOffset,
		LastOffsetDelta:      rb.LastOffsetDelta,
		PartitionLeaderEpoch: rb.PartitionLeaderEpoch,
		ProducerID:           rb.ProducerID,
		ProducerEpoch:        rb.ProducerEpoch,
		BaseSequence:         rb.FirstSequence,
		Transactional:        rb.Attributes&0x10 != 0,
		Control:              rb.Attributes&0x20 != 0,
		LogAppendTime:        rb.Attributes&0x08 != 0,
		MaxTimestamp:         rb.MaxTimestamp,
		Compression:          codec,
	}
}

// toRecord converts a decoded record and the header of its batch.
func toRecord(kr *kgo.Record, b audit.Batch) audit.Record {
	if b.Compression == "legacy" {
		b.BaseOffset = kr.Offset
		b.MaxTimestamp = kr.Timestamp.UnixMilli()
		b.LogAppendTime = kr.Attrs.TimestampType() == 1
	}
	r := audit.Record{
		Topic: kr.Topic, Partition: kr.Partition, Offset: kr.Offset,
		Key: kr.Key, Value: kr.Value, Timestamp: kr.Timestamp.UnixMilli(), Batch: b,
	}
	for _, h := range kr.Headers {
		r.Headers = append(r.Headers, audit.Header{Key: h.Key, Value: h.Value})
	}
	if b.Control {
		r.Marker = decodeMarker(kr.Key, kr.Value)
	}
	return r
}

// decodeMarker decodes a control record's key (version, type) and, for
// COMMIT and ABORT, its value (version, coordinator epoch). It returns nil
// when the key cannot be read.
func decodeMarker(key, value []byte) *audit.Marker {
	var k kmsg.ControlRecordKey
	if err := k.ReadFrom(key); err != nil {
		return nil
	}
	m := &audit.Marker{Type: audit.MarkerType(k.Type), CoordinatorEpoch: -1}
	var v kmsg.EndTxnMarker
	if err := v.ReadFrom(value); err == nil {
		m.CoordinatorEpoch = v.CoordinatorEpoch
	}
	return m
}
