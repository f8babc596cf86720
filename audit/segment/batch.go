package segment

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
)

const (
	logOverhead    = 12 // int64 base offset + int32 length
	batchHeaderLen = 61 // a v2 batch's bytes before its records
	minBatchLength = batchHeaderLen - logOverhead
	// maxBatchLength bounds the length field: Kafka's own limit is
	// message.max.bytes (1 MiB by default), far below this.
	maxBatchLength = 1 << 30

	attrCompression   = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

// ErrTruncated is wrapped by errors about input that ends inside a batch or
// an entry.
var ErrTruncated = fmt.Errorf("truncated: %w", audit.ErrCorrupt)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Compression names, indexed by the codec bits of a batch's attributes.
var compressionNames = [...]string{"none", "gzip", "snappy", "lz4", "zstd"}

func compressionCodec(name string) (kgo.CompressionCodecType, error) {
	switch name {
	case "", "none", "legacy": // legacy: a v0/v1 message set, rewritten as v2
		return kgo.CodecNone, nil
	case "gzip":
		return kgo.CodecGzip, nil
	case "snappy":
		return kgo.CodecSnappy, nil
	case "lz4":
		return kgo.CodecLz4, nil
	case "zstd":
		return kgo.CodecZstd, nil
	}
	return 0, fmt.Errorf("unknown compression %q", name)
}

var (
	compressorMu sync.Mutex
	compressors  = map[kgo.CompressionCodecType]kgo.Compressor{}
)

func compressor(c kgo.CompressionCodecType) (kgo.Compressor, error) {
	compressorMu.Lock()
	defer compressorMu.Unlock()
	if comp, ok := compressors[c]; ok {
		return comp, nil
	}
	var codec kgo.CompressionCodec
	switch c {
	case kgo.CodecGzip:
		codec = kgo.GzipCompression()
	case kgo.CodecSnappy:
		codec = kgo.SnappyCompression()
	case kgo.CodecLz4:
		codec = kgo.Lz4Compression()
	case kgo.CodecZstd:
		codec = kgo.ZstdCompression()
	default:
		return nil, fmt.Errorf("no compressor for codec %d", c)
	}
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		return nil, fmt.Errorf("make compressor: %w", err)
	}
	compressors[c] = comp
	return comp, nil
}

// batchFrame checks the framing of the batch at the start of b without
// decoding it: the magic byte and the length. It returns the batch's total
// size (length + 12). Input too short for the frame wraps ErrTruncated.
func batchFrame(b []byte) (int, error) {
	if len(b) < 17 {
		return 0, fmt.Errorf("%d bytes left, a batch header needs %d: %w", len(b), batchHeaderLen, ErrTruncated)
	}
	length := int32(binary.BigEndian.Uint32(b[8:12]))
	switch magic := int8(b[16]); magic {
	case 2:
	case 0, 1:
		return 0, fmt.Errorf("message set v%d: %w", magic, ErrOldFormat)
	default:
		return 0, fmt.Errorf("magic byte %d, want 2: %w", magic, audit.ErrCorrupt)
	}
	if length < minBatchLength || length > maxBatchLength {
		return 0, fmt.Errorf("batch length %d out of range: %w", length, audit.ErrCorrupt)
	}
	total := logOverhead + int(length)
	if len(b) < total {
		return 0, fmt.Errorf("%d bytes left, the batch needs %d: %w", len(b), total, ErrTruncated)
	}
	return total, nil
}

// crcOK reports whether a framed batch's CRC-32C matches its bytes.
func crcOK(b []byte) bool {
	return len(b) >= batchHeaderLen && crc32.Checksum(b[21:], castagnoli) == binary.BigEndian.Uint32(b[17:21])
}

// batchHeader decodes the header of a framed batch (len(b) ≥ 61).
func batchHeader(b []byte) audit.Batch {
	attrs := int16(binary.BigEndian.Uint16(b[21:23]))
	codec := int(attrs & attrCompression)
	comp := "unknown"
	if codec < len(compressionNames) {
		comp = compressionNames[codec]
	}
	return audit.Batch{
		BaseOffset:           int64(binary.BigEndian.Uint64(b[0:8])),
		PartitionLeaderEpoch: int32(binary.BigEndian.Uint32(b[12:16])),
		LastOffsetDelta:      int32(binary.BigEndian.Uint32(b[23:27])),
		MaxTimestamp:         int64(binary.BigEndian.Uint64(b[35:43])),
		ProducerID:           int64(binary.BigEndian.Uint64(b[43:51])),
		ProducerEpoch:        int16(binary.BigEndian.Uint16(b[51:53])),
		BaseSequence:         int32(binary.BigEndian.Uint32(b[53:57])),
		Transactional:        attrs&attrTransactional != 0,
		Control:              attrs&attrControl != 0,
		LogAppendTime:        attrs&attrLogAppendTime != 0,
		Compression:          comp,
	}
}

// DecodeBatch decodes the v2 record batch at the start of b: it checks the
// magic byte and the CRC-32C, decompresses the records and decodes them,
// control records included. It returns the batch header, its records (with
// Topic and Partition from tp) and the bytes consumed, which never exceed
// len(b). Errors wrap ErrTruncated, ErrOldFormat or audit.ErrCorrupt.
func DecodeBatch(b []byte, tp audit.TopicPartition) (audit.Batch, []audit.Record, int, error) {
	return decodeBatch(b, tp, nil)
}

// decodeBatch is DecodeBatch appending the records to recs[:0] (a
// reader's slice, reused from batch to batch where no caller keeps it).
func decodeBatch(b []byte, tp audit.TopicPartition, recs []audit.Record) (audit.Batch, []audit.Record, int, error) {
	total, err := batchFrame(b)
	if err != nil {
		return audit.Batch{}, nil, 0, err
	}
	b = b[:total]
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		return audit.Batch{}, nil, 0, fmt.Errorf("decode batch header: %v: %w", err, audit.ErrCorrupt)
	}
	if got := crc32.Checksum(b[21:], castagnoli); got != uint32(rb.CRC) {
		return audit.Batch{}, nil, 0, fmt.Errorf("crc32c %08x, batch says %08x: %w", got, uint32(rb.CRC), audit.ErrCorrupt)
	}
	hdr := batchHeader(b)
	codec := kgo.CompressionCodecType(rb.Attributes & attrCompression)
	if codec > kgo.CodecZstd {
		return hdr, nil, 0, fmt.Errorf("compression codec %d: %w", codec, audit.ErrCorrupt)
	}
	if rb.NumRecords < 0 {
		return hdr, nil, 0, fmt.Errorf("record count %d: %w", rb.NumRecords, audit.ErrCorrupt)
	}
	if int64(rb.NumRecords) > int64(rb.LastOffsetDelta)+1 {
		return hdr, nil, 0, fmt.Errorf("%d records in a batch of %d offsets: %w", rb.NumRecords, int64(rb.LastOffsetDelta)+1, audit.ErrCorrupt)
	}
	data := rb.Records
	if codec != kgo.CodecNone && rb.NumRecords > 0 {
		data, err = decompressRecords(rb.Records, codec, rb.NumRecords, MaxBatchBytes)
		if err != nil {
			return hdr, nil, 0, fmt.Errorf("decompress %s records: %w", hdr.Compression, err)
		}
	}
	if n := min(int(rb.NumRecords), len(data)/7+1); cap(recs) < n {
		recs = make([]audit.Record, 0, n)
	}
	recs = recs[:0]
	for i := range int(rb.NumRecords) {
		l, n := binary.Varint(data)
		if n <= 0 || l < 0 || l > int64(len(data)-n) {
			return hdr, nil, 0, fmt.Errorf("record %d of %d: bad length: %w", i, rb.NumRecords, audit.ErrCorrupt)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(data[:n+int(l)]); err != nil {
			return hdr, nil, 0, fmt.Errorf("record %d of %d: %v: %w", i, rb.NumRecords, err, audit.ErrCorrupt)
		}
		data = data[n+int(l):]
		r := audit.Record{
			Topic: tp.Topic, Partition: tp.Partition,
			Offset:    hdr.BaseOffset + int64(kr.OffsetDelta),
			Key:       kr.Key,
			Value:     kr.Value,
			Timestamp: rb.FirstTimestamp + kr.TimestampDelta64,
			Batch:     hdr,
		}
		if hdr.LogAppendTime {
			r.Timestamp = hdr.MaxTimestamp
		}
		if len(kr.Headers) > 0 {
			r.Headers = make([]audit.Header, len(kr.Headers))
			for j, h := range kr.Headers {
				r.Headers[j] = audit.Header{Key: h.Key, Value: h.Value}
			}
		}
		if hdr.Control {
			m, err := decodeMarker(kr.Key, kr.Value)
			if err != nil {
				return hdr, nil, 0, fmt.Errorf("control record at offset %d: %w", r.Offset, err)
			}
			r.Marker = m
		}
		recs = append(recs, r)
	}
	if len(data) != 0 {
		return hdr, nil, 0, fmt.Errorf("%d bytes after the last of %d records: %w", len(data), rb.NumRecords, audit.ErrCorrupt)
	}
	return hdr, recs, total, nil
}

// decodeMarker decodes a control record's key (version, type) and, for
// COMMIT and ABORT, its value (version, coordinator epoch).
func decodeMarker(key, value []byte) (*audit.Marker, error) {
	var k kmsg.ControlRecordKey
	if len(key) < 4 || k.ReadFrom(key) != nil {
		return nil, fmt.Errorf("control key of %d bytes: %w", len(key), audit.ErrCorrupt)
	}
	m := &audit.Marker{Type: audit.MarkerType(k.Type), CoordinatorEpoch: -1}
	if k.Type == kmsg.ControlRecordKeyTypeAbort || k.Type == kmsg.ControlRecordKeyTypeCommit {
		var v kmsg.EndTxnMarker
		if len(value) < 6 || v.ReadFrom(value) != nil {
			return nil, fmt.Errorf("end transaction marker of %d bytes: %w", len(value), audit.ErrCorrupt)
		}
		m.CoordinatorEpoch = v.CoordinatorEpoch
	}
	return m, nil
}

// AppendBatch appends recs to dst as one v2 record batch with the header of
// recs[0].Batch: base offset, last offset delta, leader epoch, producer
// id/epoch, base sequence, transactional, control and timestamp-type bits
// and compression. A "legacy" batch (a v0/v1 message set as a live source
// reports it) is written as an uncompressed v2 batch and reads back as
// "none". Every record must carry the same batch base offset and
// an offset inside the batch. Control records without key bytes get them
// from their Marker. DecodeBatch of the result gives back recs.
func AppendBatch(dst []byte, recs []audit.Record) ([]byte, error) {
	if len(recs) == 0 {
		return dst, fmt.Errorf("append batch: no records")
	}
	h := recs[0].Batch
	codec, err := compressionCodec(h.Compression)
	if err != nil {
		return dst, fmt.Errorf("append batch at offset %d: %w", h.BaseOffset, err)
	}
	first := recs[0].Timestamp
	var body []byte
	for _, r := range recs {
		if r.Batch.BaseOffset != h.BaseOffset || r.Offset < h.BaseOffset || r.Offset > h.LastOffset() {
			return dst, fmt.Errorf("append batch at offset %d: record at offset %d belongs to batch %d", h.BaseOffset, r.Offset, r.Batch.BaseOffset)
		}
		key, value := r.Key, r.Value
		if h.Control && key == nil && r.Marker != nil {
			k := kmsg.ControlRecordKey{Type: kmsg.ControlRecordKeyType(r.Marker.Type)}
			key = k.AppendTo(nil)
			v := kmsg.EndTxnMarker{CoordinatorEpoch: r.Marker.CoordinatorEpoch}
			value = v.AppendTo(nil)
		}
		kr := kmsg.Record{
			TimestampDelta64: r.Timestamp - first,
			OffsetDelta:      int32(r.Offset - h.BaseOffset),
			Key:              key,
			Value:            value,
		}
		for _, hd := range r.Headers {
			kr.Headers = append(kr.Headers, kmsg.Header{Key: hd.Key, Value: hd.Value})
		}
		enc := kr.AppendTo(nil) // Length 0 encodes as one byte
		body = binary.AppendVarint(body, int64(len(enc)-1))
		body = append(body, enc[1:]...)
	}
	if codec != kgo.CodecNone {
		comp, err := compressor(codec)
		if err != nil {
			return dst, fmt.Errorf("append batch at offset %d: %w", h.BaseOffset, err)
		}
		var buf bytes.Buffer
		out, used := comp.Compress(&buf, body)
		if used != codec {
			return dst, fmt.Errorf("append batch at offset %d: compress with %s", h.BaseOffset, h.Compression)
		}
		body = bytes.Clone(out)
	}
	attrs := int16(codec)
	if h.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	if h.Transactional {
		attrs |= attrTransactional
	}
	if h.Control {
		attrs |= attrControl
	}
	rb := kmsg.RecordBatch{
		FirstOffset:          h.BaseOffset,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      h.LastOffsetDelta,
		FirstTimestamp:       first,
		MaxTimestamp:         h.MaxTimestamp,
		ProducerID:           h.ProducerID,
		ProducerEpoch:        h.ProducerEpoch,
		FirstSequence:        h.BaseSequence,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	start := len(dst)
	dst = rb.AppendTo(dst)
	b := dst[start:]
	binary.BigEndian.PutUint32(b[8:12], uint32(len(b)-logOverhead))
	binary.BigEndian.PutUint32(b[17:21], crc32.Checksum(b[21:], castagnoli))
	return dst, nil
}

// MaxBatchBytes bounds the bytes one batch's records may decompress to.
// Kafka bounds a batch's compressed size (message.max.bytes, 1 MiB by
// default) and a producer's record size, so real batches inflate to a few
// MiB; a batch claiming more is corrupt or hostile (a gzip bomb).
var MaxBatchBytes = 64 << 20

// ErrTooLarge is wrapped by errors about a batch whose records decompress
// to more than MaxBatchBytes; it also wraps audit.ErrCorrupt.
var ErrTooLarge = fmt.Errorf("batch too large: %w", audit.ErrCorrupt)

// decompressRecords inflates a batch's records, bounded by what the batch
// declares: it reads exactly n length-prefixed records and then expects the
// end of the stream, so it never inflates more than the records' own
// lengths, and never more than limit bytes in all. A snappy block declares
// its decoded length, checked before decoding; zstd decodes whole within
// limit (the caller checks the records' framing). Errors wrap
// audit.ErrCorrupt.
func decompressRecords(src []byte, codec kgo.CompressionCodecType, n int32, limit int) ([]byte, error) {
	var r io.Reader
	switch codec {
	case kgo.CodecSnappy:
		return decodeSnappy(src, limit)
	case kgo.CodecGzip, kgo.CodecLz4:
		pr, release, err := pooledStream(src, codec)
		if err != nil {
			return nil, err
		}
		defer release()
		r = pr
	case kgo.CodecZstd:
		// zstd decodes whole, faster than as a stream: the decoder's
		// memory bound refuses a frame declaring more than the cap before
		// allocating, and stops one that outgrows it while decoding
		z := zstdPool.Get().(*zstdReader)
		defer zstdPool.Put(z)
		if z.err != nil {
			return nil, fmt.Errorf("make zstd decoder: %w", z.err)
		}
		out, err := z.d.DecodeAll(src, make([]byte, 0, min(limit, 4*len(src)+64)))
		switch {
		case errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit:
			return nil, fmt.Errorf("the records inflate past %d bytes: %w", limit, ErrTooLarge)
		case err != nil:
			return nil, fmt.Errorf("%v: %w", err, audit.ErrCorrupt)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("compression codec %d: %w", codec, audit.ErrCorrupt)
	}
	br := bufPool.Get().(*bufio.Reader)
	defer bufPool.Put(br)
	br.Reset(r)
	defer br.Reset(nil)
	out := make([]byte, 0, min(limit, 4*len(src)+64))
	for i := range int(n) {
		l, err := binary.ReadVarint(br)
		if err != nil {
			return nil, fmt.Errorf("record %d of %d: length: %v: %w", i, n, eofIsTruncated(err), audit.ErrCorrupt)
		}
		if l < 0 || l > int64(limit-len(out)-binary.MaxVarintLen64) {
			return nil, fmt.Errorf("record %d of %d: length %d: the records would pass %d bytes: %w", i, n, l, limit, ErrTooLarge)
		}
		out = binary.AppendVarint(out, l)
		start := len(out)
		if need := start + int(l); need > cap(out) {
			// double, so that what is allocated in all stays under
			// twice the records' size
			grown := make([]byte, start, min(max(2*cap(out), need), limit))
			copy(grown, out)
			out = grown
		}
		out = out[:start+int(l)]
		if _, err := io.ReadFull(br, out[start:]); err != nil {
			return nil, fmt.Errorf("record %d of %d: %v: %w", i, n, eofIsTruncated(err), audit.ErrCorrupt)
		}
	}
	// The stream must end here; reading to its end also checks the
	// codec's own checksum (gzip's CRC-32, lz4's and zstd's xxhash).
	switch m, err := br.Read(make([]byte, 1)); {
	case m > 0:
		return nil, fmt.Errorf("bytes after the last of %d records: %w", n, audit.ErrCorrupt)
	case err != nil && !errors.Is(err, io.EOF):
		return nil, fmt.Errorf("after the last of %d records: %v: %w", n, err, audit.ErrCorrupt)
	}
	return out, nil
}

func eofIsTruncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the compressed stream ends early")
	}
	return err
}

// xerialMagic starts a snappy stream framed the way the Java client
// writes it: the magic, two int32 versions, then length-prefixed blocks.
var xerialMagic = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// decodeSnappy decodes a raw snappy block or a xerial stream, checking
// each block's declared length against what is left of limit first.
func decodeSnappy(src []byte, limit int) ([]byte, error) {
	var blocks [][]byte
	if len(src) >= 16 && bytes.HasPrefix(src, xerialMagic) {
		for rest := src[16:]; len(rest) > 0; {
			if len(rest) < 4 {
				return nil, fmt.Errorf("xerial block header of %d bytes: %w", len(rest), audit.ErrCorrupt)
			}
			size := binary.BigEndian.Uint32(rest)
			rest = rest[4:]
			if uint64(size) > uint64(len(rest)) {
				return nil, fmt.Errorf("xerial block of %d bytes, %d left: %w", size, len(rest), audit.ErrCorrupt)
			}
			blocks = append(blocks, rest[:size])
			rest = rest[size:]
		}
	} else {
		blocks = [][]byte{src}
	}
	total := 0
	for _, b := range blocks {
		l, err := s2.DecodedLen(b)
		if err != nil {
			return nil, fmt.Errorf("snappy block: %v: %w", err, audit.ErrCorrupt)
		}
		if l > limit-total {
			return nil, fmt.Errorf("snappy blocks declare more than %d bytes: %w", limit, ErrTooLarge)
		}
		total += l
	}
	out := make([]byte, 0, total)
	for _, b := range blocks {
		l, _ := s2.DecodedLen(b)
		if _, err := s2.Decode(out[len(out):len(out)+l], b); err != nil {
			return nil, fmt.Errorf("snappy block: %v: %w", err, audit.ErrCorrupt)
		}
		out = out[:len(out)+l]
	}
	return out, nil
}

type zstdReader struct {
	d   *zstd.Decoder
	err error
}

var (
	bufPool  = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 32<<10) }}
	gzipPool = sync.Pool{New: func() any { return new(gzip.Reader) }}
	lz4Pool  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
	zstdPool = sync.Pool{New: func() any {
		// Concurrency 1 decodes synchronously, in the caller's goroutine;
		// the window bound keeps a hostile frame from allocating more
		// than a batch may hold.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(uint64(max(MaxBatchBytes, zstd.MinWindowSize))), zstd.WithDecoderMaxMemory(uint64(max(MaxBatchBytes, 1<<20))))
		return &zstdReader{d: d, err: err}
	}}
)

// pooledStream is a pooled gzip (multistream) or lz4 reader over src, and
// the func that gives it back to its pool.
func pooledStream(src []byte, codec kgo.CompressionCodecType) (io.Reader, func(), error) {
	if codec == kgo.CodecGzip {
		z := gzipPool.Get().(*gzip.Reader)
		if err := z.Reset(bytes.NewReader(src)); err != nil {
			gzipPool.Put(z)
			return nil, nil, fmt.Errorf("%v: %w", err, audit.ErrCorrupt)
		}
		z.Multistream(true)
		return z, func() { gzipPool.Put(z) }, nil
	}
	z := lz4Pool.Get().(*lz4.Reader)
	z.Reset(bytes.NewReader(src))
	return z, func() { lz4Pool.Put(z) }, nil
}

// Decompressor is a kgo.Decompressor bounded by MaxBatchBytes, for readers
// that hand whole batches to franz-go (the live source): a batch that
// would inflate past the bound fails with an error wrapping ErrTooLarge
// once the bound is reached, having allocated about that much.
type Decompressor struct{}

var _ kgo.Decompressor = Decompressor{}

// Decompress inflates src, at most MaxBatchBytes of it.
func (Decompressor) Decompress(src []byte, codec kgo.CompressionCodecType) ([]byte, error) {
	limit := MaxBatchBytes
	var r io.Reader
	switch codec {
	case kgo.CodecNone:
		return src, nil
	case kgo.CodecSnappy:
		return decodeSnappy(src, limit)
	case kgo.CodecGzip, kgo.CodecLz4:
		pr, release, err := pooledStream(src, codec)
		if err != nil {
			return nil, err
		}
		defer release()
		r = pr
	case kgo.CodecZstd:
		z := zstdPool.Get().(*zstdReader)
		defer zstdPool.Put(z)
		if z.err != nil {
			return nil, fmt.Errorf("make zstd decoder: %w", z.err)
		}
		if err := z.d.Reset(bytes.NewReader(src)); err != nil {
			return nil, fmt.Errorf("%v: %w", err, audit.ErrCorrupt)
		}
		defer z.d.Reset(nil) //nolint:errcheck // releases src
		r = z.d
	default:
		return nil, fmt.Errorf("compression codec %d: %w", codec, audit.ErrCorrupt)
	}
	var buf bytes.Buffer
	buf.Grow(min(limit, 4*len(src)+64))
	n, err := buf.ReadFrom(io.LimitReader(r, int64(limit)+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%v: %w", eofIsTruncated(err), audit.ErrCorrupt)
	case n > int64(limit):
		return nil, fmt.Errorf("the records inflate past %d bytes: %w", limit, ErrTooLarge)
	}
	return buf.Bytes(), nil
}
