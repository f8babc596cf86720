package snapshot

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
)

// ManifestFile is the manifest's name inside a bundle.
const ManifestFile = "manifest.json"

// FormatVersion is the manifest format this package writes and the newest
// it reads. Format 2 added CommitLog; a format 1 bundle reads as one whose
// commit history was not captured.
const FormatVersion = 2

// Manifest describes a bundle. It is rewritten after every partition while
// capturing, so that an interrupted capture can resume.
type Manifest struct {
	Format     int       `json:"format"`
	ClusterID  string    `json:"cluster_id,omitempty"`
	AppID      string    `json:"app_id"`
	CapturedAt time.Time `json:"captured_at"` // when the cut was read
	UpdatedAt  time.Time `json:"updated_at"`  // the last capture run
	Source     string    `json:"source"`
	// Since is the capture's lower time bound, when one was given.
	Since *time.Time `json:"since,omitempty"`
	// Complete is true when the bundle holds all the evidence of the cut:
	// every partition copied (Copied) and nothing Missing. An audit of a
	// bundle that is not is incomplete.
	Complete   bool              `json:"complete"`
	Partitions []PartitionState  `json:"partitions"`
	Group      *Group            `json:"group,omitempty"`
	Topics     []audit.TopicInfo `json:"topics,omitempty"`
	// Transactions and Producers are nil when the source could not give
	// them (see Missing).
	Transactions []audit.Transaction  `json:"transactions"`
	Producers    []PartitionProducers `json:"producers"`
	// CommitLog is the group's partition of __consumer_offsets, nil when
	// the bundle holds none (format 1, or the source could not give it:
	// see Missing).
	CommitLog *CommitLog `json:"commit_log,omitempty"`
	Topology  string     `json:"topology,omitempty"`
	// Schemas are the schemas of the records copied, by id: an Avro
	// schema as its text, any other one with its type and the files it
	// imports (audit.Schema).
	Schemas map[int32]audit.Schema `json:"schemas,omitempty"`
	Files   []File                 `json:"files"`
	// Missing lists the evidence the source could not give, with why.
	Missing []string `json:"missing,omitempty"`
	// Notes say where the bundle differs from what the source served, and
	// what the capture chose that the reader should know (a topic captured
	// for want of the group's offsets).
	Notes []string `json:"notes,omitempty"`
	// sum is the sha256 of manifest.json as ReadManifest read it
	sum [sha256.Size]byte
}

// PartitionState is one partition's offsets at the cut and the capture's
// progress on it.
type PartitionState struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	LogStart  int64  `json:"log_start"`
	LSO       int64  `json:"lso"`
	HW        int64  `json:"hw"`
	// From is the first offset captured: the log start, or later when
	// Since skipped older batches.
	From int64 `json:"captured_from"`
	// Next is the next offset to capture; HW once Complete.
	Next int64 `json:"next"`
	// Vanished lists [first, end) offset ranges the cluster deleted
	// between the cut and the copy (retention ran meanwhile): at the cut
	// they held records the bundle does not have.
	Vanished [][2]int64 `json:"vanished,omitempty"`
	Records  int64      `json:"records"`
	Bytes    int64      `json:"bytes"`
	Complete bool       `json:"complete"`
}

// Copied reports whether every partition's records were copied: false
// while a capture cut by --max-bytes is to be resumed.
func (m *Manifest) Copied() bool {
	for _, p := range m.allPartitions() {
		if !p.Complete {
			return false
		}
	}
	return true
}

// TP returns the state's topic partition.
func (p PartitionState) TP() audit.TopicPartition {
	return audit.TopicPartition{Topic: p.Topic, Partition: p.Partition}
}

// CommitLog is the application's group's partition of __consumer_offsets
// (Kafka's hash of the group id), captured raw like any partition: every
// record of it, the commits of other groups hashed to the same partition
// included, so that the group's commit history replays offline as the
// coordinator would load it. It is copied whole, from its log start, even
// when Since bounds the rest.
type CommitLog struct {
	PartitionState
	// TopicPartitions is __consumer_offsets' partition count at the cut:
	// with the group id, it says which partition holds the group.
	TopicPartitions int32 `json:"topic_partitions"`
}

// allPartitions lists the states of every partition the bundle holds:
// the app's topics' and the commit log's.
func (m *Manifest) allPartitions() []*PartitionState {
	out := make([]*PartitionState, 0, len(m.Partitions)+1)
	for i := range m.Partitions {
		out = append(out, &m.Partitions[i])
	}
	if m.CommitLog != nil {
		out = append(out, &m.CommitLog.PartitionState)
	}
	return out
}

// Group is the application's consumer group at the cut.
type Group struct {
	Group   string        `json:"group"`
	State   string        `json:"state"`
	Members int           `json:"members"`
	Offsets []GroupOffset `json:"offsets"`
}

// GroupOffset is one committed offset of the group.
type GroupOffset struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Metadata  string `json:"metadata,omitempty"`
}

// PartitionProducers is the producer state of one partition.
type PartitionProducers struct {
	Topic     string           `json:"topic"`
	Partition int32            `json:"partition"`
	Producers []audit.Producer `json:"producers"`
}

// File is one file of the bundle with its sha256.
type File struct {
	Path   string `json:"path"` // relative to the bundle, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

func groupFrom(g audit.GroupOffsets) *Group {
	out := &Group{Group: g.Group, State: g.State, Members: g.Members}
	for tp, o := range g.Offsets {
		out.Offsets = append(out.Offsets, GroupOffset{Topic: tp.Topic, Partition: tp.Partition, Offset: o, Metadata: g.Metadata[tp]})
	}
	sortGroupOffsets(out.Offsets)
	return out
}

func (g *Group) offsets() audit.GroupOffsets {
	out := audit.GroupOffsets{Group: g.Group, State: g.State, Members: g.Members,
		Offsets: map[audit.TopicPartition]int64{}, Metadata: map[audit.TopicPartition]string{}}
	for _, o := range g.Offsets {
		tp := audit.TopicPartition{Topic: o.Topic, Partition: o.Partition}
		out.Offsets[tp] = o.Offset
		if o.Metadata != "" {
			out.Metadata[tp] = o.Metadata
		}
	}
	return out
}

// ReadManifest reads a bundle's manifest.
func ReadManifest(dir string) (*Manifest, error) {
	if info, err := os.Lstat(filepath.Join(dir, ManifestFile)); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		// a bundle holds no symlinks: one would read a manifest from
		// outside it
		return nil, fmt.Errorf("read manifest: %s is a symlink, and a bundle holds none: %w", filepath.Join(dir, ManifestFile), audit.ErrCorrupt)
	}
	b, err := segment.ReadRegular(filepath.Join(dir, ManifestFile), MaxManifestBytes)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	m := Manifest{sum: sha256.Sum256(b)}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decode %s: %v: %w", filepath.Join(dir, ManifestFile), err, audit.ErrCorrupt)
	}
	if m.Format < 1 || m.Format > FormatVersion {
		return nil, fmt.Errorf("read %s: format %d, this kaudit reads 1 to %d: %w", filepath.Join(dir, ManifestFile), m.Format, FormatVersion, audit.ErrNotSupported)
	}
	// A format this kaudit reads has no key it does not know: a key
	// damaged into another (or another case of it) would read as absent,
	// a log start or offset of 0.
	if err := checkKeys(b, reflect.TypeFor[Manifest]()); err != nil {
		return nil, fmt.Errorf("decode %s: %v: %w", filepath.Join(dir, ManifestFile), err, audit.ErrCorrupt)
	}
	return &m, nil
}

// writeManifest replaces the manifest atomically.
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	tmp := filepath.Join(dir, ManifestFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ManifestFile)); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return nil
}

// MaxManifestBytes bounds the manifest's size: it is read whole.
const MaxManifestBytes = 256 << 20

// hashFile returns a regular file's size and sha256, reading it in chunks
// and stopping when ctx ends. A path that is a symlink, a device or any
// other non-regular file is refused before it is read (a symlink to
// /dev/zero would never end); so is a file whose size is not want (when
// want ≥ 0): its hash cannot match.
func hashFile(ctx context.Context, path string, want int64) (int64, string, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return 0, "", err
	}
	if !info.Mode().IsRegular() {
		return 0, "", fmt.Errorf("%s: %s: %w", path, describeMode(info.Mode()), segment.ErrNotRegular)
	}
	if want >= 0 && info.Size() != want {
		return info.Size(), "", nil
	}
	f, info2, err := segment.OpenRegular(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	if !os.SameFile(info, info2) {
		return 0, "", fmt.Errorf("%s changed while it was opened: %w", path, audit.ErrCorrupt)
	}
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, "", fmt.Errorf("hash %s: %w", path, err)
		}
		m, err := f.Read(buf)
		h.Write(buf[:m])
		n += int64(m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, "", err
		}
		if n > info2.Size() {
			return n, "", fmt.Errorf("%s grows while it is read: %w", path, audit.ErrCorrupt)
		}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symlink (a bundle is read only from its own regular files)"
	case m.IsDir():
		return "a directory"
	}
	return segment.KindOf(m)
}

func sortGroupOffsets(os []GroupOffset) {
	slices.SortFunc(os, func(a, b GroupOffset) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
}

// checkKeys reports the first object key of the JSON document b that is
// not, exactly, the JSON name of a field of t's struct types (maps take any
// key).
func checkKeys(b []byte, t reflect.Type) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return keysOf(v, t, "")
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

func keysOf(v any, t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshaler) {
		return nil // its own decoding says what it takes
	}
	switch x := v.(type) {
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range x {
				if err := keysOf(e, t.Elem(), at+"."+k); err != nil {
					return err
				}
			}
		case reflect.Struct:
			fields := map[string]reflect.Type{}
			jsonFields(t, fields)
			for k, e := range x {
				ft, ok := fields[k]
				if !ok {
					return fmt.Errorf("unknown key %q at %s", k, strings.TrimPrefix(at+"."+k, "."))
				}
				if err := keysOf(e, ft, at+"."+k); err != nil {
					return err
				}
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range x {
				if err := keysOf(e, t.Elem(), fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// jsonFields adds the JSON names of t's fields, those of embedded structs
// without a name of their own included, as encoding/json sees them.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}
