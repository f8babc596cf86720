package segment

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/kaudit/kaudit/audit"
)

// Files of a log dir root and of a partition dir.
const (
	LogStartCheckpoint    = "log-start-offset-checkpoint"
	ReplicationCheckpoint = "replication-offset-checkpoint"
	LeaderEpochCheckpoint = "leader-epoch-checkpoint"
	PartitionMetadataFile = "partition.metadata"
)

var (
	partitionDirRe = regexp.MustCompile(`^(.+)-([0-9]+)$`)
	segmentFileRe  = regexp.MustCompile(`^([0-9]+)\.log$`)
)

var (
	_ audit.Source          = (*Dir)(nil)
	_ audit.Clock           = (*Dir)(nil)
	_ audit.CommittedReader = (*Dir)(nil)
	_ audit.IndexedReader   = (*Dir)(nil)
)

// Dir is one or several brokers' log dirs read offline. It serves
// audit.Source: records and offsets come from the partition dirs, topics
// and configs from the KRaft metadata log (metadata.go), group offsets from
// __consumer_offsets (groups.go), transactions from __transaction_state
// (txnlog.go). When several dirs hold the same
// partition (one per broker), the replica with the latest leader epoch and
// then the longest log is read, and Divergence compares the others with it.
type Dir struct {
	dirs     []string
	replicas map[audit.TopicPartition][]*replica // primary first
	topics   map[string][]int32
	bad      []audit.Finding // partition dirs that cannot be read as one

	mu   sync.Mutex
	torn map[string]TornTail

	offline offlineState // what the internal topics say, replayed once (metadata.go, clock.go)
	schemas schemasCache // what the Schema Registry's _schemas topic says (schemas.go)
}

var (
	_ audit.Source          = (*Dir)(nil)
	_ audit.CommittedReader = (*Dir)(nil)
	_ audit.IndexedReader   = (*Dir)(nil)
)

// TornTail is an incomplete batch at the end of a partition's active
// segment, as a crash leaves it: reading stops cleanly before it.
type TornTail struct {
	TP    audit.TopicPartition
	File  string
	Pos   int64 // byte offset where the torn batch starts
	Bytes int64 // bytes from Pos to the end of the file
}

// replica is one broker's copy of a partition.
type replica struct {
	tp       audit.TopicPartition
	path     string
	segments []*segmentFile
	logStart int64
	hw       int64
	logEnd   int64
	epochs   []EpochEntry
	topicID  string
	broker   int32 // the node id of the log dir's meta.properties, or -1
	err      error // set when the partition's files cannot be read

	stateMu  sync.Mutex
	state    *txnState
	stateErr error
}

type segmentFile struct {
	base    int64
	path    string
	size    int64 // bytes to read: the file size, less a torn tail
	last    bool
	idxOnce sync.Once
	index   []OffsetIndexEntry
}

// OpenDirs opens broker log dirs (each holding <topic>-<partition>/
// directories). A partition whose files cannot be read is still listed; its
// Offsets and Records return the error, which names the file and the byte
// offset and wraps audit.ErrCorrupt.
func OpenDirs(dirs ...string) (*Dir, error) {
	if len(dirs) == 0 {
		return nil, errors.New("open log dirs: no dir given")
	}
	d := &Dir{dirs: dirs, replicas: map[audit.TopicPartition][]*replica{}, topics: map[string][]int32{}, torn: map[string]TornTail{}}
	for _, root := range dirs {
		if err := d.openLogDir(root); err != nil {
			return nil, err
		}
	}
	for tp, rs := range d.replicas {
		slices.SortStableFunc(rs, func(a, b *replica) int {
			if (a.err == nil) != (b.err == nil) {
				if a.err == nil {
					return -1
				}
				return 1
			}
			return cmp.Or(-cmp.Compare(a.lastEpoch(), b.lastEpoch()), -cmp.Compare(a.logEnd, b.logEnd))
		})
		liftLogStart(rs)
		d.topics[tp.Topic] = append(d.topics[tp.Topic], tp.Partition)
	}
	for _, ps := range d.topics {
		slices.Sort(ps)
	}
	return d, nil
}

func (d *Dir) openLogDir(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return fmt.Errorf("open log dir: %w", err)
	}
	logStarts, err := readOffsetCheckpoint(filepath.Join(root, LogStartCheckpoint))
	if err != nil {
		return err
	}
	hws, err := readOffsetCheckpoint(filepath.Join(root, ReplicationCheckpoint))
	if err != nil {
		return err
	}
	broker := BrokerID(root)
	for _, e := range entries {
		m := partitionDirRe.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		p, err := strconv.ParseInt(m[2], 10, 32)
		if err != nil {
			// a partition dir whose number is no partition: corrupt, say so
			d.bad = append(d.bad, audit.UnreadablePartition(audit.TopicPartition{Topic: m[1], Partition: -1},
				fmt.Sprintf("%s: %q is not a partition number: %v", filepath.Join(root, e.Name()), m[2], audit.ErrCorrupt)))
			continue
		}
		tp := audit.TopicPartition{Topic: m[1], Partition: int32(p)}
		r := &replica{tp: tp, path: filepath.Join(root, e.Name()), broker: broker}
		if err := r.open(d, logStarts, hws); err != nil {
			r.err = err
		}
		d.replicas[tp] = append(d.replicas[tp], r)
	}
	return nil
}

// liftLogStart raises the read replica's log start to the highest of the
// replicas of its leader epoch. A broker writes its log-start-offset-
// checkpoint every log.flush.start.offset.checkpoint.interval.ms (60 s)
// and at a clean shutdown; one killed -9 restarts with the last one, so a
// DeleteRecords (a repartition purge) after it is undone on that replica,
// whose segments still hold the records, until it fetches the leader's log
// start again (measured on the drill: a broker killed -9 and restarted,
// then stopped, left log start 0 where the cluster's was 30). The cluster's
// log start only moves forward within an epoch, so the highest is the
// nearest to it. Replicas of an older last epoch (an unclean election's
// old leader) are left out.
func liftLogStart(rs []*replica) {
	if len(rs) < 2 || rs[0].err != nil {
		return
	}
	p := rs[0]
	for _, o := range rs[1:] {
		if o.err != nil || o.lastEpoch() != p.lastEpoch() || o.logStart <= p.logStart {
			continue
		}
		p.logStart = min(o.logStart, p.logEnd)
		p.hw = max(p.hw, p.logStart)
	}
}

// readOffsetCheckpoint reads a log dir checkpoint; a missing file is empty.
func readOffsetCheckpoint(path string) (map[audit.TopicPartition]int64, error) {
	b, err := ReadRegular(path, MaxMetaFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	if len(b) == 0 {
		// Kafka creates its checkpoint files empty at startup and reads an
		// empty one as no entries: a broker killed before its first flush
		// leaves them so
		return nil, nil
	}
	m, err := ParseOffsetCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return m, nil
}

func (r *replica) lastEpoch() int32 {
	if len(r.epochs) == 0 {
		return -1
	}
	return r.epochs[len(r.epochs)-1].Epoch
}

// open lists the partition's segments, reads its metadata files and finds
// the log start, the log end (stopping before a torn tail) and the HW.
func (r *replica) open(d *Dir, logStarts, hws map[audit.TopicPartition]int64) error {
	entries, err := os.ReadDir(r.path)
	if err != nil {
		return fmt.Errorf("list partition %s: %w", r.tp, err)
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(r.path, name)
		switch m := segmentFileRe.FindStringSubmatch(name); {
		case m != nil:
			base, err := strconv.ParseInt(m[1], 10, 64)
			if err != nil {
				return fmt.Errorf("segment %s: bad base offset: %w", path, audit.ErrCorrupt)
			}
			info, err := os.Stat(path) // a symlink's target
			if err == nil && !info.Mode().IsRegular() {
				err = &FileError{File: path, Err: fmt.Errorf("%s: %w", KindOf(info.Mode()), ErrNotRegular)}
			}
			if err != nil {
				return fmt.Errorf("stat segment: %w", err)
			}
			r.segments = append(r.segments, &segmentFile{base: base, path: path, size: info.Size()})
		case name == LeaderEpochCheckpoint:
			b, err := ReadRegular(path, MaxMetaFileBytes)
			if err != nil {
				return fmt.Errorf("read leader epochs: %w", err)
			}
			if len(b) == 0 {
				continue // created empty, never flushed: no entries (as Kafka reads it)
			}
			if r.epochs, err = ParseLeaderEpochCheckpoint(b); err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
		case name == PartitionMetadataFile:
			b, err := ReadRegular(path, MaxMetaFileBytes)
			if err != nil {
				return fmt.Errorf("read partition metadata: %w", err)
			}
			m, err := ParsePartitionMetadata(b)
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			r.topicID = m.TopicID
		}
	}
	slices.SortFunc(r.segments, func(a, b *segmentFile) int { return cmp.Compare(a.base, b.base) })
	if len(r.segments) == 0 {
		// No segment at all: an empty log whose start is the checkpoint's.
		start := max(logStarts[r.tp], 0)
		r.logStart, r.logEnd, r.hw = start, start, start
		if hw, ok := hws[r.tp]; ok && hw > start {
			// Kafka keeps an active segment in every partition: offsets
			// the checkpoint says were acknowledged have no file
			return fmt.Errorf("%s: the high watermark %d is past the log start %d, and %s holds no segment file: %w", ReplicationCheckpoint, hw, start, r.path, audit.ErrCorrupt)
		}
		return nil
	}
	last := r.segments[len(r.segments)-1]
	last.last = true
	if err := r.walkLast(d, last); err != nil {
		return err
	}
	first, err := r.firstOffset()
	if err != nil {
		return err
	}
	r.logStart = first
	if ls, ok := logStarts[r.tp]; ok && ls > r.logStart {
		if ls > r.logEnd {
			return fmt.Errorf("%s: the log-start checkpoint says %d, past the log end %d: %w", LogStartCheckpoint, ls, r.logEnd, audit.ErrCorrupt)
		}
		r.logStart = ls
	}
	r.hw = r.logEnd
	if hw, ok := hws[r.tp]; ok {
		switch {
		case hw < 0:
			return fmt.Errorf("%s: high watermark %d: %w", ReplicationCheckpoint, hw, audit.ErrCorrupt)
		case hw > r.logEnd:
			// acknowledged offsets this replica no longer holds
			return fmt.Errorf("%s: the high watermark %d is past the log end %d: the replica lost records it had acknowledged (truncated): %w", ReplicationCheckpoint, hw, r.logEnd, audit.ErrCorrupt)
		case hw < r.hw:
			r.hw = max(hw, r.logStart)
		}
	}
	return nil
}

// firstOffset is the base offset of the first batch present, or the end of
// the log when every segment is empty.
func (r *replica) firstOffset() (int64, error) {
	for _, s := range r.segments {
		if s.size < logOverhead {
			continue
		}
		f, _, err := OpenRegular(s.path)
		if err != nil {
			return 0, fmt.Errorf("open segment: %w", err)
		}
		var b [8]byte
		_, err = io.ReadFull(f, b[:])
		f.Close()
		if err != nil {
			return 0, &FileError{File: s.path, Pos: 0, Err: fmt.Errorf("%v: %w", err, ErrTruncated)}
		}
		return int64(binary.BigEndian.Uint64(b[:])), nil
	}
	return r.logEnd, nil
}

// walkLast walks the batch frames of the active segment to find the log end
// and a torn tail: an incomplete frame at the end, or preallocated zeros.
func (r *replica) walkLast(d *Dir, s *segmentFile) error {
	f, _, err := OpenRegular(s.path)
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	defer f.Close()
	r.logEnd = s.base
	pos := int64(0)
	if idx, err := s.loadIndex(); err == nil && len(idx) > 0 {
		e := idx[len(idx)-1]
		var hdr [batchHeaderLen]byte
		if _, err := f.ReadAt(hdr[:], e.Pos); err == nil {
			if _, err := batchFrame(hdr[:]); err == nil || errors.Is(err, ErrTruncated) {
				if h := batchHeader(hdr[:]); indexed(h, e) {
					pos, r.logEnd = e.Pos, h.BaseOffset
				}
			}
		}
	}
	var (
		hdr              [batchHeaderLen]byte
		lastPos, prevEnd int64 = -1, s.base
	)
	for pos < s.size {
		n, err := f.ReadAt(hdr[:], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read segment: %w", err)
		}
		if n < batchHeaderLen || allZero(hdr[:logOverhead]) {
			break // torn or preallocated
		}
		if _, err := batchFrame(hdr[:]); err != nil && !errors.Is(err, ErrTruncated) {
			return &FileError{File: s.path, Pos: pos, Err: err}
		}
		length := int64(int32(binary.BigEndian.Uint32(hdr[8:12])))
		if pos+logOverhead+length > s.size {
			break
		}
		h := batchHeader(hdr[:])
		if lastPos >= 0 && h.BaseOffset < r.logEnd {
			if pos+logOverhead+length == s.size {
				break // the last batch: a torn write, handled as one below
			}
			return &FileError{File: s.path, Pos: pos, Err: fmt.Errorf("batch at offset %d after one ending at %d: offsets go backwards: %w", h.BaseOffset, r.logEnd, audit.ErrCorrupt)}
		}
		prevEnd, r.logEnd = r.logEnd, h.LastOffset()+1
		lastPos = pos
		pos += logOverhead + length
	}
	// A last batch whose CRC fails is a write the crash cut short (pages
	// not flushed): Kafka's recovery truncates it, and so do we.
	if pos == s.size && lastPos >= 0 {
		b := make([]byte, s.size-lastPos)
		if _, err := f.ReadAt(b, lastPos); err != nil {
			return fmt.Errorf("read segment: %w", err)
		}
		if !crcOK(b) {
			pos, r.logEnd = lastPos, prevEnd
		}
	}
	if pos < s.size {
		d.mu.Lock()
		d.torn[s.path] = TornTail{TP: r.tp, File: s.path, Pos: pos, Bytes: s.size - pos}
		d.mu.Unlock()
		s.size = pos
	}
	return nil
}

// loadIndex reads the segment's .index once; a missing index is empty.
func (s *segmentFile) loadIndex() ([]OffsetIndexEntry, error) {
	var err error
	s.idxOnce.Do(func() {
		var b []byte
		b, err = ReadRegular(strings.TrimSuffix(s.path, ".log")+".index", MaxMetaFileBytes)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			return
		}
		s.index, _, err = ParseOffsetIndex(b, s.base)
	})
	return s.index, err
}

// startPos is where to start reading for offset from: the position of the
// last index entry at or below it, or 0.
func (s *segmentFile) startPos(f *os.File, from int64) int64 {
	idx, err := s.loadIndex()
	if err != nil {
		return 0
	}
	i, _ := slices.BinarySearchFunc(idx, from, func(e OffsetIndexEntry, o int64) int { return cmp.Compare(e.Offset, o) })
	// idx[i-1] is the last entry with an offset below from: its batch ends
	// before from, so reading from it never misses from.
	if i == 0 {
		return 0
	}
	e := idx[i-1]
	var hdr [batchHeaderLen]byte
	if e.Pos >= s.size {
		return 0
	}
	if _, err := f.ReadAt(hdr[:], e.Pos); err != nil {
		return 0
	}
	if _, err := batchFrame(hdr[:]); err != nil && !errors.Is(err, ErrTruncated) {
		return 0
	}
	if h := batchHeader(hdr[:]); !indexed(h, e) {
		return 0
	}
	return e.Pos
}

// indexed reports whether index entry e may point at the batch h: Kafka
// 3.x indexes a batch by its last offset, older brokers by an offset inside
// it. A stale entry pointing elsewhere is not used.
func indexed(h audit.Batch, e OffsetIndexEntry) bool {
	return e.Offset >= h.BaseOffset && e.Offset <= h.LastOffset()
}

// TornTails lists the torn tails found in active segments, by file.
func (d *Dir) TornTails() []TornTail {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]TornTail, 0, len(d.torn))
	for _, t := range d.torn {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b TornTail) int { return cmp.Compare(a.File, b.File) })
	return out
}

// Replicas lists the partition dirs holding tp, the one read first.
func (d *Dir) Replicas(tp audit.TopicPartition) []string {
	var out []string
	for _, r := range d.replicas[tp] {
		out = append(out, r.path)
	}
	return out
}

// LeaderEpochs returns the read replica's leader-epoch-checkpoint entries.
func (d *Dir) LeaderEpochs(tp audit.TopicPartition) ([]EpochEntry, error) {
	r, err := d.primary(tp)
	if err != nil {
		return nil, err
	}
	return r.epochs, nil
}

func (d *Dir) primary(tp audit.TopicPartition) (*replica, error) {
	rs := d.replicas[tp]
	if len(rs) == 0 {
		if err := d.placedElsewhere(tp); err != nil {
			return nil, err
		}
		if _, ok := d.topics[tp.Topic]; !ok {
			return nil, fmt.Errorf("read %s: %w: %w", tp, audit.ErrPartitionNotFound, audit.ErrTopicNotFound)
		}
		return nil, fmt.Errorf("read %s: %w", tp, audit.ErrPartitionNotFound)
	}
	if rs[0].err != nil {
		return nil, rs[0].err
	}
	return rs[0], nil
}

// Partitions returns the topic's partition count: the KRaft metadata
// log's when it lists the topic (metadata.go), else one more than the
// highest partition dir found.
func (d *Dir) Partitions(ctx context.Context, topic string) (int32, error) {
	if n, ok := d.metadataPartitions(ctx, topic); ok {
		return n, nil
	}
	ps, ok := d.topics[topic]
	if !ok {
		return 0, fmt.Errorf("partitions of %s: %w", topic, audit.ErrTopicNotFound)
	}
	return ps[len(ps)-1] + 1, nil
}

// Offsets returns the partition's log start (the first offset present, or
// the log dir's log-start-offset-checkpoint when higher), its HW (from
// replication-offset-checkpoint, else the log end) and its LSO (the first
// offset of the earliest open transaction below the HW, else the HW).
func (d *Dir) Offsets(ctx context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	r, err := d.primary(tp)
	if err != nil {
		return audit.PartitionOffsets{}, err
	}
	st, err := r.txnState(ctx)
	if err != nil {
		return audit.PartitionOffsets{}, err
	}
	return audit.PartitionOffsets{LogStart: r.logStart, LSO: st.lso, HW: r.hw}, nil
}

// Records yields the records of [from, to) from the read replica, control
// records included; to < 0 means up to the HW, and a to above the HW reads
// up to the log end.
func (d *Dir) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		r, err := d.primary(tp)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		for rec, err := range r.records(ctx, from, to) {
			if !yield(rec, err) || err != nil {
				return
			}
		}
	}
}

func (r *replica) records(ctx context.Context, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		if r.err != nil {
			yield(audit.Record{}, r.err)
			return
		}
		if to < 0 {
			to = r.hw
		}
		to = min(to, r.logEnd)
		from = max(from, r.logStart)
		r.batches(ctx, from, to, true, func(_ audit.Batch, recs []audit.Record, err error) bool {
			if err != nil {
				yield(audit.Record{}, err)
				return false
			}
			for _, rec := range recs {
				if rec.Offset < from {
					continue
				}
				if rec.Offset >= to {
					return false
				}
				if !yield(rec, nil) {
					return false
				}
			}
			return true
		})
	}
}

// batches calls fn for every batch that may hold offsets in [from, to), in
// order, until fn returns false. With decode false, only control batches
// are decoded and data batches come with a nil record slice.
func (r *replica) batches(ctx context.Context, from, to int64, decode bool, fn func(audit.Batch, []audit.Record, error) bool) {
	if from >= to {
		return
	}
	for i, s := range r.segments {
		if s.base >= to {
			return
		}
		if i+1 < len(r.segments) && r.segments[i+1].base <= from {
			continue
		}
		if !s.batches(ctx, r.tp, from, to, decode, fn) {
			return
		}
	}
}

func (s *segmentFile) batches(ctx context.Context, tp audit.TopicPartition, from, to int64, decode bool, fn func(audit.Batch, []audit.Record, error) bool) bool {
	f, _, err := OpenRegular(s.path)
	if err != nil {
		return fn(audit.Batch{}, nil, fmt.Errorf("open segment: %w", err))
	}
	defer f.Close()
	pos := s.startPos(f, from)
	if _, err := f.Seek(pos, io.SeekStart); err != nil {
		return fn(audit.Batch{}, nil, fmt.Errorf("seek segment: %w", err))
	}
	br := bufio.NewReaderSize(io.LimitReader(f, s.size-pos), 256<<10)
	// spare is a batch's bytes that nothing refers to once it is decoded (a
	// compressed batch's records are in the decompressed bytes), for the
	// next batch; recs is the records' slice, which fn does not keep
	var spare []byte
	var recs []audit.Record
	for pos < s.size {
		if err := ctx.Err(); err != nil {
			return fn(audit.Batch{}, nil, fmt.Errorf("read %s: %w", tp, err))
		}
		peek, _ := br.Peek(batchHeaderLen)
		if _, err := batchFrame(peek); err != nil && (!errors.Is(err, ErrTruncated) || len(peek) < batchHeaderLen) {
			if errors.Is(err, ErrTruncated) {
				err = fmt.Errorf("file ends inside a batch header: %w", ErrTruncated)
			}
			return fn(audit.Batch{}, nil, &FileError{File: s.path, Pos: pos, Err: err})
		}
		length := int32(binary.BigEndian.Uint32(peek[8:12]))
		if int64(logOverhead)+int64(length) > s.size-pos {
			return fn(audit.Batch{}, nil, &FileError{File: s.path, Pos: pos, Err: fmt.Errorf("a batch of %d bytes, %d left in the file: %w", logOverhead+int64(length), s.size-pos, ErrTruncated)})
		}
		var buf []byte
		if n := logOverhead + int(length); cap(spare) >= n {
			buf, spare = spare[:n], nil
		} else {
			buf = make([]byte, n)
		}
		if _, err := io.ReadFull(br, buf); err != nil {
			return fn(audit.Batch{}, nil, &FileError{File: s.path, Pos: pos, Err: fmt.Errorf("file ends inside a batch of %d bytes: %w", len(buf), ErrTruncated)})
		}
		h := batchHeader(buf)
		batchPos := pos
		pos += int64(len(buf))
		if h.BaseOffset >= to {
			return false
		}
		if h.LastOffset() < from {
			spare = buf
			continue
		}
		if !decode && !h.Control {
			if !fn(h, nil, nil) {
				return false
			}
			spare = buf
			continue
		}
		h, rs, _, err := decodeBatch(buf, tp, recs)
		if err != nil {
			return fn(audit.Batch{}, nil, &FileError{File: s.path, Pos: batchPos, Err: err})
		}
		recs = rs
		if !fn(h, recs, nil) {
			return false
		}
		if h.Compression != "none" {
			spare = buf
		}
	}
	return true
}

// Describe names the log dirs.
func (d *Dir) Describe() string { return "log dirs " + strings.Join(d.dirs, ", ") }

// ProducerSnapshot reads the read replica's latest producer .snapshot file:
// the producers' state as of the snapshot's offset, returned with it. It
// returns -1 and no entries when the partition has no snapshot.
func (d *Dir) ProducerSnapshot(tp audit.TopicPartition) (int64, []ProducerEntry, error) {
	r, err := d.primary(tp)
	if err != nil {
		return -1, nil, err
	}
	entries, err := os.ReadDir(r.path)
	if err != nil {
		return -1, nil, fmt.Errorf("list partition %s: %w", tp, err)
	}
	best, name := int64(-1), ""
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".snapshot")
		if !ok {
			continue
		}
		if o, err := strconv.ParseInt(base, 10, 64); err == nil && o > best {
			best, name = o, e.Name()
		}
	}
	if name == "" {
		return -1, nil, nil
	}
	path := filepath.Join(r.path, name)
	b, err := ReadRegular(path, MaxMetaFileBytes)
	if err != nil {
		return -1, nil, fmt.Errorf("read producer snapshot: %w", err)
	}
	ps, _, err := ParseProducerSnapshot(b)
	if err != nil {
		return -1, nil, &FileError{File: path, Pos: 0, Err: err}
	}
	return best, ps, nil
}

// Problems lists an unreadable finding for every partition whose read
// replica's files cannot be read (the error names the file and the byte
// offset), so that a run over the dirs is incomplete rather than clean.
// Snapshot.Problems is the same for bundles.
func (d *Dir) Problems() []audit.Finding {
	out := slices.Clone(d.bad)
	for tp, rs := range d.replicas {
		if rs[0].err != nil {
			out = append(out, audit.UnreadablePartition(tp, rs[0].err.Error()))
		}
	}
	audit.SortFindings(out)
	return out
}
