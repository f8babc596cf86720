package snapshot

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/offsetslog"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/internal/dest"
)

// CaptureOptions configure Capture.
type CaptureOptions struct {
	// Dir is the bundle directory; created when missing (its parent is
	// never created: internal/dest). A bundle already
	// there (a manifest) is resumed.
	Dir string
	// AppID is the application.id: the group and the prefix of the
	// internal topics and transactional ids.
	AppID string
	// Topics to capture; empty means the app's topics: those the group
	// committed offsets for, plus every topic named <AppID>-….
	Topics []string
	// Also adds topics to the default set (the app's output topics, which
	// are neither the group's nor named <app>-…).
	Also []string
	// Topology is the Topology#describe() text, stored in the manifest.
	Topology string
	// Schemas are the schemas used, by id, stored in the manifest.
	Schemas map[int32]audit.Schema
	// Schema, when set, returns a schema by id, self-contained (of any
	// type: Avro, JSON, Protobuf with the files it imports): the capture
	// then stores the schema of every Confluent-framed key and value it
	// copies (a zero byte, then the schema id), so that the bundle can be
	// audited offline. An id it returns an empty schema for, without
	// error, is no schema id (the bytes only look framed) and is skipped;
	// one it fails for is listed in Manifest.Missing.
	Schema func(ctx context.Context, id int32) (audit.Schema, error)
	// Since skips the batches written before it at the start of each
	// partition, never at or above the group's committed offset there.
	Since time.Time
	// MaxBytes stops the run, at a batch boundary, once this many bytes
	// were written (0: no bound). Run Capture again to continue.
	MaxBytes int64
	// Progress is called as offsets are captured: done of total offsets.
	Progress func(done, total int64)
}

// clusterIDer is implemented by sources that know their cluster id.
type clusterIDer interface {
	ClusterID(ctx context.Context) (string, error)
}

// Capture writes a bundle of the application's evidence from src into
// opts.Dir: first the cut (group offsets, then each partition's offsets,
// topic configs, transactions and producers), then the records of every
// partition from its log start up to the HW at the cut, batch by batch.
// When a manifest is already in opts.Dir, Capture resumes it: the cut is
// kept and each partition continues where the last run stopped. It returns
// the manifest; Complete is false when MaxBytes stopped the run. Evidence
// the source cannot give is listed in Manifest.Missing, not an error.
func Capture(ctx context.Context, src audit.Source, opts CaptureOptions) (*Manifest, error) {
	if opts.Dir == "" || opts.AppID == "" {
		return nil, errors.New("capture: a directory and an application id are required")
	}
	if err := checkOutDir(opts.Dir); err != nil {
		return nil, err
	}
	// the folder named, never its parents (internal/dest)
	if err := os.Mkdir(opts.Dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("capture: %w", err)
	}
	m, err := ReadManifest(opts.Dir)
	switch {
	case err == nil:
		if m.AppID != opts.AppID {
			return nil, fmt.Errorf("resume capture in %s: it holds app %q, not %q: %w", opts.Dir, m.AppID, opts.AppID, ErrOutDir)
		}
		if err := checkBundle(opts.Dir, m); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
		if m, err = readCut(ctx, src, opts); err != nil {
			return nil, err
		}
		if err := writeManifest(opts.Dir, m); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("resume capture: %w", err)
	}
	return m, copyRecords(ctx, src, opts, m)
}

// ErrOutDir is wrapped by Capture's refusals to write into a directory:
// one that is neither empty nor a kaudit bundle, or that looks like a
// broker's log dir. Capture writes nowhere else.
var ErrOutDir = errors.New("not a directory capture may write into")

// brokerFiles are files only a broker's log dir (or a copy of one) has.
var brokerFiles = []string{"meta.properties", "log-start-offset-checkpoint", "replication-offset-checkpoint",
	"recovery-point-offset-checkpoint", "cleaner-offset-checkpoint", ".lock", ".kafka_cleanshutdown", "bootstrap.checkpoint"}

// checkOutDir refuses an output directory that is a broker's log dir or
// inside one, or that holds anything when it is not a bundle. A missing
// one is created later.
func checkOutDir(dir string) error {
	if abs, err := filepath.Abs(dir); err == nil {
		for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
			for _, name := range brokerFiles {
				if _, err := os.Lstat(filepath.Join(d, name)); err == nil {
					return fmt.Errorf("capture into %s: it is inside %s, which holds %s: a broker's log dir, which kaudit never writes into: %w", dir, d, name, ErrOutDir)
				}
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	info, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("capture: %w", err)
	case !info.IsDir():
		return fmt.Errorf("capture into %s: it is not a directory: %w", dir, ErrOutDir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	manifest := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case slices.Contains(brokerFiles, name) || strings.HasPrefix(name, "__cluster_metadata-"):
			return fmt.Errorf("capture into %s: it holds %s: it looks like a broker's log dir, which kaudit never writes into: %w", dir, name, ErrOutDir)
		case name == ManifestFile:
			manifest = true
		}
	}
	if !manifest && len(entries) > 0 {
		return fmt.Errorf("capture into %s: it is not empty and holds no kaudit bundle (%s): give an empty or new directory: %w", dir, ManifestFile, ErrOutDir)
	}
	return nil
}

// checkBundle refuses to resume into a directory holding anything a
// bundle does not: only the manifest (and its temporary file) and the
// manifest's partition dirs, which hold only segment files.
func checkBundle(dir string, m *Manifest) error {
	parts := map[string]bool{}
	for _, p := range m.allPartitions() {
		parts[partitionDir(p.TP())] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("resume capture: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if name == ManifestFile || name == ManifestFile+".tmp" {
			continue
		}
		if !parts[name] || e.Type() != fs.ModeDir {
			return fmt.Errorf("resume capture in %s: %s is no part of the bundle: %w", dir, name, ErrOutDir)
		}
		files, err := os.ReadDir(filepath.Join(dir, name))
		if err != nil {
			return fmt.Errorf("resume capture: %w", err)
		}
		for _, f := range files {
			if !f.Type().IsRegular() || !segmentName.MatchString(f.Name()) {
				return fmt.Errorf("resume capture in %s: %s is no part of the bundle: %w", dir, path.Join(name, f.Name()), ErrOutDir)
			}
		}
	}
	return nil
}

var segmentName = regexp.MustCompile(`^[0-9]{20}\.log$`)

// readCut reads everything but the records. The group's offsets are read
// before the partitions' so that every committed offset is at or below its
// partition's HW.
func readCut(ctx context.Context, src audit.Source, opts CaptureOptions) (*Manifest, error) {
	now, _ := audit.SourceClock(src)
	now = now.UTC()
	m := &Manifest{Format: FormatVersion, AppID: opts.AppID, CapturedAt: now, Source: src.Describe(),
		Topology: opts.Topology, Schemas: opts.Schemas}
	if !opts.Since.IsZero() {
		since := opts.Since.UTC()
		m.Since = &since
	}
	if c, ok := src.(clusterIDer); ok {
		if id, err := c.ClusterID(ctx); err == nil {
			m.ClusterID = id
		} else {
			m.Missing = append(m.Missing, "cluster id: "+err.Error())
		}
	}
	g, err := src.GroupOffsets(ctx, opts.AppID)
	switch {
	case err == nil:
		m.Group = groupFrom(g)
	case errors.Is(err, audit.ErrGroupNotFound) || errors.Is(err, audit.ErrNotSupported):
		m.Missing = append(m.Missing, "group offsets: "+err.Error())
	default:
		return nil, fmt.Errorf("capture group offsets: %w", err)
	}
	// the group's commit log, read after its offsets so that it holds
	// every commit of the cut
	if cl, err := commitLogCut(ctx, src, opts.AppID); err != nil {
		m.Missing = append(m.Missing, commitLogMissing+err.Error())
	} else {
		m.CommitLog = cl
	}
	all, err := src.Topics(ctx)
	if err != nil && !errors.Is(err, audit.ErrNotSupported) {
		return nil, fmt.Errorf("capture topics: %w", err)
	}
	if err != nil {
		m.Missing = append(m.Missing, "topic configs: "+err.Error())
	}
	topics := opts.Topics
	if len(topics) == 0 {
		seen := map[string]bool{}
		if m.Group != nil {
			for _, o := range m.Group.Offsets {
				seen[o.Topic] = true
			}
		}
		for _, t := range all {
			if strings.HasPrefix(t.Name, opts.AppID+"-") {
				seen[t.Name] = true
			}
		}
		for _, t := range opts.Also {
			seen[t] = true
		}
		if m.Group == nil {
			// without the group's offsets its source topics are not known,
			// and they are what a replay needs and what retention takes
			// first: every topic of the source but the brokers' own and
			// other apps' internal ones is captured
			for _, t := range all {
				if !strings.HasPrefix(t.Name, "__") && t.Name != "_schemas" && !otherAppsInternal(t.Name, opts.AppID) && !seen[t.Name] {
					seen[t.Name] = true
					m.Notes = append(m.Notes, fmt.Sprintf("%s captured: without the group's offsets the app's source topics are not known", t.Name))
				}
			}
		}
		for t := range seen {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if len(topics) == 0 {
		return nil, fmt.Errorf("capture %s: no topics: the group committed none and none is named %s-…", opts.AppID, opts.AppID)
	}
	var tps []audit.TopicPartition
	for _, topic := range topics {
		n, err := src.Partitions(ctx, topic)
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", topic, err)
		}
		for _, t := range all {
			if t.Name == topic {
				m.Topics = append(m.Topics, t)
			}
		}
		for p := range n {
			tp := audit.TopicPartition{Topic: topic, Partition: p}
			o, err := src.Offsets(ctx, tp)
			if err != nil {
				return nil, fmt.Errorf("capture offsets: %w", err)
			}
			m.Partitions = append(m.Partitions, PartitionState{Topic: topic, Partition: p,
				LogStart: o.LogStart, LSO: o.LSO, HW: o.HW, From: o.LogStart, Next: o.LogStart, Complete: o.HW <= o.LogStart})
			tps = append(tps, tp)
		}
	}
	txns, err := src.Transactions(ctx, opts.AppID)
	switch {
	case err == nil:
		m.Transactions = append([]audit.Transaction{}, txns...)
	case errors.Is(err, audit.ErrNotSupported):
		m.Missing = append(m.Missing, "transactions: "+err.Error())
	default:
		return nil, fmt.Errorf("capture transactions: %w", err)
	}
	ps, err := src.Producers(ctx, tps)
	switch {
	case err == nil:
		m.Producers = []PartitionProducers{}
		for _, tp := range tps {
			if p, ok := ps[tp]; ok {
				m.Producers = append(m.Producers, PartitionProducers{Topic: tp.Topic, Partition: tp.Partition, Producers: p})
			}
		}
	case errors.Is(err, audit.ErrNotSupported):
		m.Missing = append(m.Missing, "producers: "+err.Error())
	default:
		return nil, fmt.Errorf("capture producers: %w", err)
	}
	m.Files = []File{}
	return m, nil
}

// otherAppsInternal says whether topic is another Streams app's internal
// topic (a …-changelog or …-repartition not named appID-…).
func otherAppsInternal(topic, appID string) bool {
	internal := strings.HasSuffix(topic, "-changelog") || strings.HasSuffix(topic, "-repartition")
	return internal && !strings.HasPrefix(topic, appID+"-")
}

// commitLogMissing begins the Missing entry of a bundle without the
// group's commit log.
const commitLogMissing = "the group's commit log (its partition of " + audit.ConsumerOffsetsTopic + "): "

// commitLogCut is the state of the group's partition of
// __consumer_offsets at the cut, nothing copied yet.
func commitLogCut(ctx context.Context, src audit.Source, group string) (*CommitLog, error) {
	n, err := src.Partitions(ctx, audit.ConsumerOffsetsTopic)
	if err != nil {
		return nil, err
	}
	tp := audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic, Partition: offsetslog.Partition(group, n)}
	o, err := src.Offsets(ctx, tp)
	if err != nil {
		return nil, err
	}
	return &CommitLog{TopicPartitions: n, PartitionState: PartitionState{Topic: tp.Topic, Partition: tp.Partition,
		LogStart: o.LogStart, LSO: o.LSO, HW: o.HW, From: o.LogStart, Next: o.LogStart, Complete: o.HW <= o.LogStart}}, nil
}

func partitionDir(tp audit.TopicPartition) string {
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition))
}

// copyRecords copies every incomplete partition, saving the manifest after
// each one and when stopping.
func copyRecords(ctx context.Context, src audit.Source, opts CaptureOptions, m *Manifest) error {
	m.UpdatedAt = time.Now().UTC()
	var total, done int64
	for _, p := range m.allPartitions() {
		total += p.HW - p.From
		done += p.Next - p.From
	}
	report := func() {
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	report()
	committed := map[audit.TopicPartition]int64{}
	if m.Group != nil {
		for _, o := range m.Group.Offsets {
			committed[audit.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
		}
	}
	var written int64
	ids := map[int32]bool{}
	for _, p := range m.allPartitions() {
		if p.Complete {
			continue
		}
		before := p.Next
		c, hasC := committed[p.TP()]
		log := m.CommitLog != nil && p == &m.CommitLog.PartitionState
		n, stop, err := copyPartition(ctx, src, opts, m, p, c, hasC, opts.MaxBytes-written, ids, log)
		written += n
		done += p.Next - before
		report()
		if log && err != nil && ctx.Err() == nil {
			// optional evidence: the bundle goes on without it
			err = dropCommitLog(opts.Dir, m, err)
		}
		keepSchemas(ctx, opts, m, ids)
		if serr := saveManifest(opts.Dir, m); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		if stop {
			return nil
		}
	}
	// the commit log is optional evidence: a bundle without it audits as
	// the cut holds (its absence is said, not missing)
	m.Complete = !slices.ContainsFunc(m.Missing, func(s string) bool { return !strings.HasPrefix(s, commitLogMissing) })
	for _, p := range m.allPartitions() {
		m.Complete = m.Complete && p.Complete
	}
	return saveManifest(opts.Dir, m)
}

// dropCommitLog removes the commit log that could not be copied (why)
// from the bundle: its files and its state, with why in Missing.
func dropCommitLog(dir string, m *Manifest, why error) error {
	d := partitionDir(m.CommitLog.TP())
	m.Files = slices.DeleteFunc(m.Files, func(f File) bool { return strings.HasPrefix(f.Path, d+"/") })
	m.CommitLog = nil
	m.Missing = append(m.Missing, commitLogMissing+why.Error())
	if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	return nil
}

// keepSchemas stores the schemas of the ids seen that the manifest does
// not hold yet; each id is asked once per run.
func keepSchemas(ctx context.Context, opts CaptureOptions, m *Manifest, ids map[int32]bool) {
	if opts.Schema == nil {
		return
	}
	var todo []int32
	for id, asked := range ids {
		if _, ok := m.Schemas[id]; !ok && !asked {
			todo = append(todo, id)
		}
	}
	slices.Sort(todo)
	for _, id := range todo {
		ids[id] = true
		sc, err := opts.Schema(ctx, id)
		if err != nil {
			m.Missing = append(m.Missing, fmt.Sprintf("schema id %d of the records copied: %v", id, err))
			continue
		}
		if sc.Schema == "" {
			continue
		}
		if m.Schemas == nil {
			m.Schemas = map[int32]audit.Schema{}
		}
		m.Schemas[id] = sc
	}
}

// noteSchemaIDs adds the schema ids of a record's Confluent-framed key and
// value to ids.
func noteSchemaIDs(r audit.Record, ids map[int32]bool) {
	if r.Batch.Control {
		return
	}
	for _, b := range [][]byte{r.Key, r.Value} {
		if len(b) >= 5 && b[0] == 0 {
			if id := int32(binary.BigEndian.Uint32(b[1:5])); id >= 0 {
				if _, ok := ids[id]; !ok {
					ids[id] = false
				}
			}
		}
	}
}

func saveManifest(dir string, m *Manifest) error {
	slices.SortFunc(m.Files, func(a, b File) int { return cmp.Compare(a.Path, b.Path) })
	return writeManifest(dir, m)
}

// copyPartition appends the partition's records from p.Next to its HW to a
// new segment file. It returns the bytes written and whether the byte
// budget ran out (budget ≤ 0 with MaxBytes set means none is left).
//
// The commit log (log) is copied whole, whatever Since says, and its
// records are no Confluent-framed data: their schema ids are not asked.
func copyPartition(ctx context.Context, src audit.Source, opts CaptureOptions, m *Manifest, p *PartitionState, committed int64, hasCommitted bool, budget int64, ids map[int32]bool, log bool) (int64, bool, error) {
	tp := p.TP()
	dir, err := dest.Mkdir(opts.Dir, partitionDir(tp))
	if err != nil {
		return 0, false, fmt.Errorf("capture %s: %w", tp, err)
	}
	if err := removeUnlisted(opts.Dir, dir, m); err != nil {
		return 0, false, err
	}
	if opts.MaxBytes > 0 && budget <= 0 {
		return 0, true, nil
	}
	var (
		w       *segment.Writer
		name    string
		cur     audit.Batch
		inBatch int64
		stop    bool
		legacy  bool
		skipOld = m.Since != nil && p.Next == p.From && !log
	)
	// finish closes the segment and lists it in the manifest.
	finish := func() error {
		if w == nil {
			return nil
		}
		w.DropPending() // a batch not read to its end is not kept
		err := w.Close()
		// the file just written is listed even when ctx ended: the
		// manifest already counts its batches
		size, sum, herr := hashFile(context.WithoutCancel(ctx), filepath.Join(dir, name), -1)
		if err == nil {
			err = herr
		}
		if err != nil {
			return fmt.Errorf("capture %s: %w", tp, err)
		}
		m.Files = append(m.Files, File{Path: path.Join(partitionDir(tp), name), Size: size, SHA256: sum})
		p.Bytes += size
		w = nil
		return nil
	}
	// endBatch records the batch written: the partition continues after it.
	endBatch := func() error {
		if w == nil || !w.Pending() {
			return nil
		}
		if err := w.Flush(); err != nil {
			return err
		}
		p.Next = max(p.Next, cur.LastOffset()+1)
		p.Records += inBatch
		inBatch = 0
		return nil
	}
	var copyErr error
	for r, err := range src.Records(ctx, tp, p.Next, p.HW) {
		if err != nil {
			copyErr = fmt.Errorf("capture %s: %w", tp, err)
			break
		}
		if skipOld {
			if r.Batch.MaxTimestamp < m.Since.UnixMilli() && (!hasCommitted || r.Batch.LastOffset() < committed) {
				p.From = max(p.From, r.Batch.LastOffset()+1)
				p.Next = p.From
				continue
			}
			skipOld = false
		}
		if w == nil && !skipOld && r.Offset > p.Next {
			// Compaction leaves gaps too: only a log start that moved
			// past p.Next says the records were deleted meanwhile.
			if o, err := src.Offsets(ctx, tp); err == nil && o.LogStart > p.Next {
				p.Vanished = append(p.Vanished, [2]int64{p.Next, min(o.LogStart, r.Offset)})
			}
		}
		if w != nil && r.Batch.BaseOffset != cur.BaseOffset {
			if copyErr = endBatch(); copyErr != nil {
				break
			}
			if opts.MaxBytes > 0 && w.Size() >= budget {
				stop = true
				break
			}
		}
		if w == nil {
			name = segment.SegmentName(r.Batch.BaseOffset)
			if w, copyErr = segment.CreateSegment(filepath.Join(dir, name)); copyErr != nil {
				break
			}
		}
		if r.Batch.Compression == "legacy" && !legacy {
			legacy = true
			m.Notes = append(m.Notes, fmt.Sprintf("%s holds v0/v1 message sets from offset %d: stored as uncompressed v2 batches", tp, r.Offset))
		}
		if opts.Schema != nil && !log {
			noteSchemaIDs(r, ids)
		}
		cur = r.Batch
		inBatch++
		if copyErr = w.Write(r); copyErr != nil {
			break
		}
	}
	if copyErr == nil && !stop {
		copyErr = endBatch()
	}
	var n int64
	if w != nil {
		n = w.Size()
	}
	if err := finish(); copyErr == nil {
		copyErr = err
	}
	if copyErr != nil {
		return n, false, copyErr
	}
	if !stop {
		p.Next, p.Complete = p.HW, true
		p.From = min(p.From, p.HW)
	}
	return n, stop, nil
}

// removeUnlisted deletes segment files of dir that the manifest does not
// list: the leftovers of a run that stopped before saving it.
func removeUnlisted(root, dir string, m *Manifest) error {
	listed := map[string]bool{}
	for _, f := range m.Files {
		listed[filepath.Join(root, filepath.FromSlash(f.Path))] = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("resume capture: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".log") && !listed[p] {
			if err := os.Remove(p); err != nil {
				return fmt.Errorf("resume capture: %w", err)
			}
		}
	}
	return nil
}
