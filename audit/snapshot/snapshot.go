package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/offsetslog"
	"github.com/kaudit/kaudit/audit/segment"
)

// ErrNotCaptured is wrapped by errors about offsets a bundle should hold
// and does not: an interrupted capture, a missing or altered file.
var ErrNotCaptured = fmt.Errorf("evidence not captured or altered: %w", audit.ErrCorrupt)

var (
	_ audit.Source         = (*Snapshot)(nil)
	_ audit.Clock          = (*Snapshot)(nil)
	_ audit.Bounded        = (*Snapshot)(nil)
	_ audit.Fingerprinter  = (*Snapshot)(nil)
	_ audit.TopologyHolder = (*Snapshot)(nil)
	_ audit.SchemaHolder   = (*Snapshot)(nil)
)

// Snapshot is a bundle opened for reading: an audit.Source whose records
// come from the bundle's segment files and everything else from its
// manifest, and an audit.Clock reading the capture time.
type Snapshot struct {
	dir   string
	m     *Manifest
	seg   *segment.Dir // nil when no partition holds a record
	parts map[audit.TopicPartition]*PartitionState
	bad   map[audit.TopicPartition]string // why a partition cannot be trusted
	// badOffsets says why a partition's offsets in the manifest contradict
	// each other: it has no offsets to give.
	badOffsets map[audit.TopicPartition]string
	problems   []audit.Finding
}

var (
	_ audit.Source = (*Snapshot)(nil)
	_ audit.Clock  = (*Snapshot)(nil)
)

// Open opens the bundle in dir. It fails only when the manifest cannot be
// read. A file that is missing, whose sha256 does not match, or that the
// manifest does not list, and a partition whose capture stopped early, make
// Problems list unreadable findings, and reading those partitions fails
// with an error wrapping ErrNotCaptured.
func Open(dir string) (*Snapshot, error) { return OpenContext(context.Background(), dir) }

// OpenContext is Open, stopping when ctx ends: checking the hashes reads
// every file of the bundle. Only regular files are read, and no file or
// directory of the bundle may be a symlink: a bundle is read only from its
// own files.
func OpenContext(ctx context.Context, dir string) (*Snapshot, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("open snapshot: %w", err)
	}
	s := &Snapshot{dir: dir, m: m, parts: map[audit.TopicPartition]*PartitionState{}, bad: map[audit.TopicPartition]string{}, badOffsets: map[audit.TopicPartition]string{}}
	for _, p := range m.allPartitions() {
		s.parts[p.TP()] = p
	}
	counts := map[string]int32{}
	for _, t := range m.Topics {
		counts[t.Name] = t.Partitions
	}
	if cl := m.CommitLog; cl != nil {
		counts[cl.Topic] = cl.TopicPartitions
	}
	for _, p := range m.allPartitions() {
		if n, ok := counts[p.Topic]; ok && p.Partition >= n {
			s.problem(p.TP(), fmt.Sprintf("the manifest lists partition %d of %s, which has %d partitions", p.Partition, p.Topic, n))
		}
		if p.Partition < 0 || p.LogStart < 0 || p.LogStart > p.HW || p.LSO > p.HW || p.From < 0 || p.From > p.Next || p.Next > p.HW {
			why := fmt.Sprintf("%s: the manifest's offsets contradict each other: log start %d, LSO %d, HW %d, captured from %d to %d", partitionDir(p.TP()), p.LogStart, p.LSO, p.HW, p.From, p.Next)
			s.problem(p.TP(), why)
			s.badOffsets[p.TP()] = why
		}
	}
	listed := map[string]bool{}
	for _, f := range m.Files {
		tp := s.fileTP(f.Path)
		if listed[f.Path] {
			// a capture lists each file once: twice, its offsets would
			// be read twice (overlapping), a damaged bundle
			s.problem(tp, f.Path+" is listed twice in the manifest")
			continue
		}
		listed[f.Path] = true
		if clean := path.Clean(f.Path); clean != f.Path || path.IsAbs(clean) || strings.HasPrefix(clean, "../") || clean == ".." {
			// never read outside the bundle
			s.problem(tp, f.Path+": the manifest names a file outside the bundle")
			continue
		}
		if link := symlinkIn(dir, f.Path); link != "" {
			s.problem(tp, f.Path+": "+link+" is a symlink (a bundle is read only from its own files)")
			continue
		}
		size, sum, err := hashFile(ctx, filepath.Join(dir, filepath.FromSlash(f.Path)), f.Size)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("open snapshot: %w", ctx.Err())
		case errors.Is(err, fs.ErrNotExist):
			s.problem(tp, f.Path+" is missing")
		case err != nil:
			s.problem(tp, fmt.Sprintf("read %s: %v", f.Path, err))
		case size != f.Size:
			s.problem(tp, fmt.Sprintf("%s: %d bytes, the manifest says %d", f.Path, size, f.Size))
		case sum != f.SHA256:
			s.problem(tp, fmt.Sprintf("%s: sha256 %s (%d bytes), the manifest says %s (%d bytes)", f.Path, sum, size, f.SHA256, f.Size))
		}
	}
	filesOf, bytesOf := map[string]int{}, map[string]int64{}
	filesIn := map[string][]string{} // per partition dir, its files, each once
	for _, f := range m.Files {
		if d, _, ok := strings.Cut(f.Path, "/"); ok && !slices.Contains(filesIn[d], f.Path) {
			filesIn[d] = append(filesIn[d], f.Path)
			filesOf[d]++
			bytesOf[d] += f.Size
		}
	}
	for _, p := range m.allPartitions() {
		dirName := partitionDir(p.TP())
		switch {
		case filesOf[dirName] == 0 && p.Next > p.From:
			// compaction never empties a log: a partition captured with
			// records and no file has lost its file
			s.problem(p.TP(), fmt.Sprintf("%s: the manifest says offsets %d-%d were captured, and lists no file of it", dirName, p.From, p.Next-1))
		case bytesOf[dirName] != p.Bytes:
			// the capture adds each file's size to its partition's
			// bytes: a file cut or emptied and rehashed no longer adds up
			// (a compacted log may end early, so offsets cannot tell)
			s.problem(p.TP(), fmt.Sprintf("%s: the manifest lists %d bytes of files, and says %d bytes were captured", dirName, bytesOf[dirName], p.Bytes))
		}
		entries, err := os.ReadDir(filepath.Join(dir, dirName))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.problem(p.TP(), fmt.Sprintf("list %s: %v", dirName, err))
		}
		for _, e := range entries {
			if rel := path.Join(dirName, e.Name()); strings.HasSuffix(e.Name(), ".log") && !listed[rel] {
				s.problem(p.TP(), rel+" is not in the manifest (a capture that stopped before saving it?)")
			}
		}
		for _, v := range p.Vanished {
			s.addProblem(p.TP(), v[0], v[1]-v[0], fmt.Sprintf("offsets %d-%d were deleted from the cluster between the cut and the copy: the bundle lacks them", v[0], v[1]-1))
		}
		if !p.Complete {
			s.addProblem(p.TP(), p.Next, p.HW-p.Next, fmt.Sprintf("offsets %d-%d were not captured: the capture stopped early; run kaudit capture again to resume", p.Next, p.HW-1))
		}
	}
	if len(m.Files) > 0 {
		if s.seg, err = segment.OpenDirs(dir); err != nil {
			return nil, fmt.Errorf("open snapshot: %w", err)
		}
		// A capture writes whole batches: a last batch cut short or
		// failing its CRC is damage, not a crash's torn write.
		for _, t := range s.seg.TornTails() {
			if _, ok := s.bad[t.TP]; ok {
				continue // one finding per damaged partition
			}
			rel, _ := filepath.Rel(dir, t.File)
			s.problem(t.TP, fmt.Sprintf("%s: the %d bytes from byte %d are not a whole batch with a valid CRC: %v", filepath.ToSlash(rel), t.Bytes, t.Pos, audit.ErrCorrupt))
		}
		for _, p := range m.allPartitions() {
			tp := p.TP()
			if _, ok := s.bad[tp]; ok {
				continue
			}
			// the bundle's log must end where the capture stopped
			// copying: a batch beyond it (a base offset altered) would
			// hide the offsets before it
			// (it may end earlier only where compaction removed the
			// last records, tombstones past delete.retention.ms)
			o, err := s.seg.Offsets(ctx, tp)
			if err == nil && (o.HW > p.Next || (o.HW < p.Next && p.Complete && s.notCompacted(tp.Topic))) {
				s.problem(tp, fmt.Sprintf("%s: the captured batches end at offset %d, the manifest says the capture copied up to %d: %v", partitionDir(tp), o.HW, p.Next, audit.ErrCorrupt))
				continue
			}
			// every batch of a bundle is whole with a valid CRC (a record
			// in one that is not is damage, never an undecodable record),
			// and the capture counts the records it writes: batches
			// missing (a cut at a batch boundary, the last COMMIT marker of
			// a compacted log gone, with the manifest rehashed) or
			// overlapping (a copy listed as another segment) do not add up
			// the group's commit history is judged up to its damage
			// (CommitHistory, offsetslog.ReadFrom): its partition is named
			// damaged, and still read
			problem := s.problem
			if cl := m.CommitLog; cl != nil && cl.TP() == tp {
				problem = func(tp audit.TopicPartition, detail string) { s.addProblem(tp, -1, 1, detail) }
			}
			n, err := s.recordsIn(ctx, filesIn[partitionDir(tp)])
			switch {
			case ctx.Err() != nil:
				return nil, fmt.Errorf("open snapshot: %w", ctx.Err())
			case err != nil:
				problem(tp, err.Error())
			case n != p.Records:
				problem(tp, fmt.Sprintf("%s: its batches hold %d records, the manifest says the capture copied %d: %v", partitionDir(tp), n, p.Records, ErrNotCaptured))
			}
		}
		for _, f := range s.seg.Problems() {
			if _, ok := s.bad[audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}]; ok {
				continue
			}
			s.problem(audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}, f.Detail)
		}
	}
	audit.SortFindings(s.problems)
	return s, nil
}

// recordsIn checks a partition's files and counts their records
// (segment.CheckSegment).
func (s *Snapshot) recordsIn(ctx context.Context, files []string) (int64, error) {
	var n int64
	for _, f := range files {
		c, err := segment.CheckSegment(ctx, filepath.Join(s.dir, filepath.FromSlash(f)))
		if err != nil {
			return 0, err // it names the file
		}
		n += c
	}
	return n, nil
}

// notCompacted reports whether the manifest says the topic is not
// compacted (its cleanup.policy is known and has no compact).
func (s *Snapshot) notCompacted(topic string) bool {
	for _, t := range s.m.Topics {
		if t.Name == topic {
			_, known := t.Configs["cleanup.policy"]
			return known && !t.Compacted()
		}
	}
	return false
}

// symlinkIn returns the first element of rel (slash-separated, inside
// dir) that is a symlink, or "".
func symlinkIn(dir, rel string) string {
	p := dir
	for _, e := range strings.Split(rel, "/") {
		p = filepath.Join(p, e)
		if info, err := os.Lstat(p); err == nil && info.Mode()&fs.ModeSymlink != 0 {
			r, _ := filepath.Rel(dir, p)
			return filepath.ToSlash(r)
		}
	}
	return ""
}

// fileTP is the partition a bundle file belongs to.
func (s *Snapshot) fileTP(rel string) audit.TopicPartition {
	d, _, _ := strings.Cut(rel, "/")
	if i := strings.LastIndexByte(d, '-'); i > 0 {
		if p, err := strconv.ParseInt(d[i+1:], 10, 32); err == nil {
			return audit.TopicPartition{Topic: d[:i], Partition: int32(p)}
		}
	}
	return audit.TopicPartition{Topic: d, Partition: -1}
}

// problem records an unreadable finding about tp whose files cannot be
// trusted.
func (s *Snapshot) problem(tp audit.TopicPartition, detail string) {
	s.addProblem(tp, -1, 1, detail)
	if _, ok := s.bad[tp]; !ok {
		s.bad[tp] = detail
	}
}

func (s *Snapshot) addProblem(tp audit.TopicPartition, offset, count int64, detail string) {
	s.problems = append(s.problems, audit.Unreadable(tp, offset, count, "snapshot "+s.dir+": "+detail))
}

// Problems lists the bundle's integrity problems as unreadable findings, so
// that a run over it is incomplete rather than clean.
func (s *Snapshot) Problems() []audit.Finding { return slices.Clone(s.problems) }

// Fingerprint names the capture: the sha256 of its manifest, which holds
// the cut and the sha256 of every file (audit.Fingerprinter).
func (s *Snapshot) Fingerprint(context.Context, []string) (string, error) {
	return fmt.Sprintf("capture sha256:%x", s.m.sum), nil
}

// Manifest returns the bundle's manifest.
func (s *Snapshot) Manifest() *Manifest { return s.m }

// Now is the capture time.
func (s *Snapshot) Now() time.Time { return s.m.CapturedAt }

// Describe names the bundle and what it was captured from.
func (s *Snapshot) Describe() string {
	return fmt.Sprintf("snapshot %s captured %s from %s", s.dir, s.m.CapturedAt.Format(time.RFC3339), s.m.Source)
}

// Partitions returns a captured topic's partition count; for
// __consumer_offsets, of which the bundle holds the group's partition,
// the topic's at the cut.
func (s *Snapshot) Partitions(ctx context.Context, topic string) (int32, error) {
	if cl := s.m.CommitLog; cl != nil && topic == cl.Topic {
		return cl.TopicPartitions, nil
	}
	n := int32(-1)
	for _, p := range s.m.Partitions {
		if p.Topic == topic {
			n = max(n, p.Partition)
		}
	}
	for _, t := range s.m.Topics {
		if t.Name == topic {
			n = max(n, t.Partitions-1)
		}
	}
	if n < 0 {
		return 0, fmt.Errorf("partitions of %s in the snapshot: %w", topic, audit.ErrTopicNotFound)
	}
	return n + 1, nil
}

func (s *Snapshot) part(tp audit.TopicPartition) (*PartitionState, error) {
	p, ok := s.parts[tp]
	if ok {
		return p, nil
	}
	if _, err := s.Partitions(context.Background(), tp.Topic); err != nil {
		return nil, fmt.Errorf("read %s: %w: %w", tp, audit.ErrPartitionNotFound, err)
	}
	return nil, fmt.Errorf("read %s in the snapshot: %w", tp, audit.ErrPartitionNotFound)
}

// Offsets returns the partition's offsets at the cut. When Since made the
// capture start later than the log start, the first offset captured is the
// log start: nothing below it can be read.
func (s *Snapshot) Offsets(ctx context.Context, tp audit.TopicPartition) (audit.PartitionOffsets, error) {
	p, err := s.part(tp)
	if err != nil {
		return audit.PartitionOffsets{}, err
	}
	if why, ok := s.badOffsets[tp]; ok {
		return audit.PartitionOffsets{}, fmt.Errorf("offsets of %s: %s: %w", tp, why, ErrNotCaptured)
	}
	ls := max(p.LogStart, p.From)
	return audit.PartitionOffsets{LogStart: ls, LSO: max(p.LSO, ls), HW: max(p.HW, ls)}, nil
}

// Records yields the captured records of [from, to); to < 0 means the HW at
// the cut. A partition with a problem (see Problems) yields an error
// wrapping ErrNotCaptured for the offsets it cannot vouch for.
func (s *Snapshot) Records(ctx context.Context, tp audit.TopicPartition, from, to int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(audit.Record{}, fmt.Errorf("read %s: %w", tp, err))
			return
		}
		p, err := s.part(tp)
		if err != nil {
			yield(audit.Record{}, err)
			return
		}
		if to < 0 || to > p.HW {
			to = p.HW
		}
		from = max(from, p.LogStart, p.From)
		if from >= to {
			return
		}
		if why, ok := s.bad[tp]; ok {
			yield(audit.Record{}, fmt.Errorf("read %s: %s: %w", tp, why, ErrNotCaptured))
			return
		}
		if s.seg != nil && from < p.Next {
			for r, err := range s.seg.Records(ctx, tp, from, min(to, p.Next)) {
				if errors.Is(err, audit.ErrPartitionNotFound) {
					if p.Records > 0 {
						yield(audit.Record{}, fmt.Errorf("read %s: the manifest says %d records were captured, the bundle has no %s directory: %w", tp, p.Records, partitionDir(tp), ErrNotCaptured))
						return
					}
					break // no record was captured: the range was empty
				}
				if !yield(r, err) || err != nil {
					return
				}
			}
		}
		if to > p.Next {
			yield(audit.Record{}, fmt.Errorf("read %s: offsets %d-%d were not captured: %w", tp, p.Next, to-1, ErrNotCaptured))
		}
	}
}

// Topics lists the captured topics with their configs at the cut.
func (s *Snapshot) Topics(ctx context.Context) ([]audit.TopicInfo, error) {
	out := slices.Clone(s.m.Topics)
	have := map[string]bool{}
	for _, t := range out {
		have[t.Name] = true
	}
	for _, p := range s.m.Partitions {
		if !have[p.Topic] {
			n, _ := s.Partitions(ctx, p.Topic)
			out = append(out, audit.TopicInfo{Name: p.Topic, Partitions: n})
			have[p.Topic] = true
		}
	}
	return out, nil
}

// GroupOffsets returns the app's group offsets at the cut.
func (s *Snapshot) GroupOffsets(ctx context.Context, group string) (audit.GroupOffsets, error) {
	if s.m.Group == nil || s.m.Group.Group != group {
		return audit.GroupOffsets{}, fmt.Errorf("group %s in the snapshot: %w", group, audit.ErrGroupNotFound)
	}
	return s.m.Group.offsets(), nil
}

// Groups lists the group the capture holds (a bundle holds its app's).
func (s *Snapshot) Groups(context.Context) ([]string, error) {
	if s.m.Group == nil {
		return nil, nil
	}
	return []string{s.m.Group.Group}, nil
}

// Transactions returns the captured transactional ids starting with prefix.
func (s *Snapshot) Transactions(ctx context.Context, prefix string) ([]audit.Transaction, error) {
	if s.m.Transactions == nil {
		return nil, fmt.Errorf("transactions in the snapshot: not captured: %w", audit.ErrNotSupported)
	}
	var out []audit.Transaction
	for _, t := range s.m.Transactions {
		if strings.HasPrefix(t.TransactionalID, prefix) {
			out = append(out, t)
		}
	}
	return out, nil
}

// Producers returns the captured producer state of the partitions asked.
func (s *Snapshot) Producers(ctx context.Context, tps []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	if s.m.Producers == nil {
		return nil, fmt.Errorf("producers in the snapshot: not captured: %w", audit.ErrNotSupported)
	}
	out := map[audit.TopicPartition][]audit.Producer{}
	for _, pp := range s.m.Producers {
		tp := audit.TopicPartition{Topic: pp.Topic, Partition: pp.Partition}
		if slices.Contains(tps, tp) {
			out[tp] = pp.Producers
		}
	}
	return out, nil
}

// Topology returns the Topology#describe() text captured, if any.
func (s *Snapshot) Topology() string { return s.m.Topology }

// Schemas returns the schemas captured, by id.
func (s *Snapshot) Schemas() map[int32]audit.Schema { return s.m.Schemas }

var _ audit.Bounded = (*Snapshot)(nil)

var _ audit.CommitHistoryReader = (*Snapshot)(nil)

// CommitHistory replays the group's partition of __consumer_offsets from
// the bundle (offsetslog, as live and in log dirs). A bundle without it
// (captured by a kaudit before format 2, or from a source that could not
// give it) returns an error wrapping audit.ErrNotSupported that says so;
// so does a group whose partition is not the one captured.
func (s *Snapshot) CommitHistory(ctx context.Context, group string) (audit.CommitHistory, error) {
	cl := s.m.CommitLog
	if cl == nil {
		why := "the bundle was captured before kaudit kept it (a capture now keeps it)"
		for _, m := range s.m.Missing {
			if strings.HasPrefix(m, commitLogMissing) {
				why = "the capture could not read it: " + strings.TrimPrefix(m, commitLogMissing)
			}
		}
		return audit.CommitHistory{}, fmt.Errorf("group %s: %s: %w", group, why, audit.ErrNotSupported)
	}
	if p := offsetslog.Partition(group, cl.TopicPartitions); p != cl.Partition {
		return audit.CommitHistory{}, fmt.Errorf("commit history of group %s: its partition of %s is %d, snapshot %s holds %d: %w", group, cl.Topic, p, s.dir, cl.Partition, audit.ErrNotSupported)
	}
	o, err := s.Offsets(ctx, cl.TP())
	if err != nil {
		return audit.CommitHistory{}, fmt.Errorf("commit history of group %s: %w", group, err)
	}
	h, err := offsetslog.ReadFrom(ctx, s, group, cl.TP(), cl.TopicPartitions, o)
	if err == nil && len(h.Unread) == 0 && h.Records < cl.Records {
		// the capture copied whole batches: a record it counted and the
		// bundle lacks was lost from the bundle (a file cut or edited), and
		// no gap in the log can be taken for compaction's any more
		why := fmt.Sprintf("the bundle's %s holds %d records, the capture copied %d: records were lost from the bundle (not captured, or cut), and where is not known", cl.TP(), h.Records, cl.Records)
		holes := slices.Clone(h.Holes)
		if h.HolesDropped > 0 && len(holes) > 0 {
			h.MarkUnread(0, holes[0].From, why)
		}
		for _, r := range holes {
			h.MarkUnread(r.From, r.To, why)
		}
		if len(h.Unread) == 0 {
			h.MarkUnread(h.LogStart, h.End, why)
		}
	}
	return h, err
}

// ClusterLogStart returns the cluster's log start for a partition whose
// capture started later (Since), and false for one captured whole.
func (s *Snapshot) ClusterLogStart(tp audit.TopicPartition) (int64, bool) {
	p, err := s.part(tp)
	if err != nil || p.From <= p.LogStart {
		return 0, false
	}
	return p.LogStart, true
}
