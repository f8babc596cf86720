package statedir

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kaudit/kaudit/audit/segment"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// Files of a Streams state directory.
const (
	CheckpointFile      = ".checkpoint"
	ProcessMetadataFile = "kafka-streams-process-metadata"
)

// OffsetUnknown is the checkpoint offset Streams writes when it does not
// know a store's position.
const OffsetUnknown = -4

// State is what a Streams state directory holds for one application.
type State struct {
	Dir       string // <state.dir>/<application.id>
	AppID     string
	ProcessID string // from kafka-streams-process-metadata; "" when absent
	Tasks     []Task // sorted by subtopology, then partition
}

// Task is one task directory.
type Task struct {
	ID          string // as named on disk, e.g. "0_1" or "__name__0_1"
	Subtopology int
	Partition   int32
	Path        string
	// Stores are the store directories: rocksdb/<store>/ and segmented
	// stores' <store>/ directories.
	Stores []string
	// HasCheckpoint reports a .checkpoint file; Checkpoint holds its
	// entries: the last changelog offset written or restored per
	// changelog partition (not +1; OffsetUnknown when unknown).
	HasCheckpoint bool
	Checkpoint    map[audit.TopicPartition]int64
	// CheckpointErr is set when the .checkpoint could not be parsed.
	CheckpointErr error
}

var taskDirRe = regexp.MustCompile(`^(?:__.+__)?([0-9]+)_([0-9]+)$`)

// Read reads the state of appID under the state directory dir (dir may
// also be the application's directory itself). A .checkpoint that cannot
// be parsed is kept in Task.CheckpointErr, not returned.
func Read(dir, appID string) (*State, error) {
	appDir := filepath.Join(dir, appID)
	if _, err := os.Stat(appDir); errors.Is(err, fs.ErrNotExist) && filepath.Base(filepath.Clean(dir)) == appID {
		appDir = dir
	}
	entries, err := os.ReadDir(appDir)
	if err != nil {
		return nil, fmt.Errorf("read state dir: %w", err)
	}
	s := &State{Dir: appDir, AppID: appID}
	if b, err := segment.ReadRegular(filepath.Join(appDir, ProcessMetadataFile), segment.MaxMetaFileBytes); err == nil {
		var meta struct {
			ProcessID string `json:"processId"`
		}
		if err := json.Unmarshal(b, &meta); err != nil {
			return nil, fmt.Errorf("read %s: %v: %w", filepath.Join(appDir, ProcessMetadataFile), err, audit.ErrCorrupt)
		}
		s.ProcessID = meta.ProcessID
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read process metadata: %w", err)
	}
	for _, e := range entries {
		m := taskDirRe.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		sub, err1 := strconv.Atoi(m[1])
		part, err2 := strconv.ParseInt(m[2], 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		t, err := readTask(filepath.Join(appDir, e.Name()))
		if err != nil {
			return nil, err
		}
		t.ID, t.Subtopology, t.Partition = e.Name(), sub, int32(part)
		s.Tasks = append(s.Tasks, t)
	}
	slices.SortFunc(s.Tasks, func(a, b Task) int {
		return cmp.Or(cmp.Compare(a.Subtopology, b.Subtopology), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.ID, b.ID))
	})
	return s, nil
}

func readTask(path string) (Task, error) {
	t := Task{Path: path}
	entries, err := os.ReadDir(path)
	if err != nil {
		return t, fmt.Errorf("read task dir: %w", err)
	}
	for _, e := range entries {
		switch {
		case e.Name() == "rocksdb" && e.IsDir():
			stores, err := os.ReadDir(filepath.Join(path, "rocksdb"))
			if err != nil {
				return t, fmt.Errorf("read task stores: %w", err)
			}
			for _, st := range stores {
				if st.IsDir() {
					t.Stores = append(t.Stores, st.Name())
				}
			}
		case e.IsDir():
			t.Stores = append(t.Stores, e.Name()) // a segmented (window/session) store
		case e.Name() == CheckpointFile:
			t.HasCheckpoint = true
			b, err := segment.ReadRegular(filepath.Join(path, CheckpointFile), segment.MaxMetaFileBytes)
			if err != nil {
				return t, fmt.Errorf("read checkpoint: %w", err)
			}
			if t.Checkpoint, err = ParseCheckpoint(b); err != nil {
				t.CheckpointErr = fmt.Errorf("read %s: %w", filepath.Join(path, CheckpointFile), err)
			}
		}
	}
	slices.Sort(t.Stores)
	return t, nil
}

// ParseCheckpoint parses a Streams .checkpoint file (OffsetCheckpoint):
// UTF-8 text, a version line (0), a count line, then count lines
// "<topic> <partition> <offset>". Errors name the line and wrap
// audit.ErrCorrupt.
func ParseCheckpoint(b []byte) (map[audit.TopicPartition]int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	line := 0
	next := func() (string, bool) {
		for sc.Scan() {
			line++
			return sc.Text(), true
		}
		return "", false
	}
	v, ok := next()
	if !ok {
		return nil, fmt.Errorf("empty checkpoint: %w", audit.ErrCorrupt)
	}
	if strings.TrimSpace(v) != "0" {
		return nil, fmt.Errorf("line 1: version %q, want 0: %w", v, audit.ErrCorrupt)
	}
	c, ok := next()
	n, err := strconv.Atoi(strings.TrimSpace(c))
	if !ok || err != nil || n < 0 {
		return nil, fmt.Errorf("line 2: bad count %q: %w", c, audit.ErrCorrupt)
	}
	out := make(map[audit.TopicPartition]int64, min(n, len(b)/6))
	for range n {
		l, ok := next()
		if !ok {
			return nil, fmt.Errorf("count %d, %d entry lines: %w", n, line-2, audit.ErrCorrupt)
		}
		f := strings.Fields(l)
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %d fields, want topic, partition, offset: %w", line, len(f), audit.ErrCorrupt)
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		o, err2 := strconv.ParseInt(f[2], 10, 64)
		// -4 is Streams' "offset unknown"; no other negative offset is written
		if err1 != nil || err2 != nil || p < 0 || (o < 0 && o != -4) {
			return nil, fmt.Errorf("line %d: bad entry %q: %w", line, l, audit.ErrCorrupt)
		}
		out[audit.TopicPartition{Topic: f[0], Partition: int32(p)}] = o
	}
	for {
		l, ok := next()
		if !ok {
			break
		}
		if strings.TrimSpace(l) != "" {
			return nil, fmt.Errorf("line %d: more entries than the count %d: %w", line, n, audit.ErrCorrupt)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scan checkpoint: %v: %w", err, audit.ErrCorrupt)
	}
	return out, nil
}

// FormatCheckpoint writes entries the way Streams does, sorted by topic and
// partition.
func FormatCheckpoint(entries map[audit.TopicPartition]int64) []byte {
	tps := make([]audit.TopicPartition, 0, len(entries))
	for tp := range entries {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b audit.TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&b, "%s %d %d\n", tp.Topic, tp.Partition, entries[tp])
	}
	return b.Bytes()
}

// Check compares the state with the changelogs. offsets holds each
// changelog partition's offsets (HW: what the changelog holds); committed
// holds its end at the consistent cut. It returns:
//   - checkpoint-ahead (stage offsets) for a checkpoint offset at or above
//     the changelog's HW, or at or above its end at the cut: the store
//     claims records the changelog does not hold, so a restore skips them;
//   - unclean-shutdown (info, stage store) for a task with stores and no
//     .checkpoint: under exactly-once its last close was not clean and
//     Streams wipes and restores those stores;
//   - unreadable for a .checkpoint that cannot be parsed.
//
// Changelog partitions absent from offsets are not judged.
func Check(s *State, offsets map[audit.TopicPartition]audit.PartitionOffsets, committed map[audit.TopicPartition]int64) []audit.Finding {
	var out []audit.Finding
	for _, t := range s.Tasks {
		ckpt := filepath.Join(t.Path, CheckpointFile)
		switch {
		case t.CheckpointErr != nil:
			out = append(out, audit.UnreadablePartition(audit.TopicPartition{Partition: t.Partition}, fmt.Sprintf("task %s: %v", t.ID, t.CheckpointErr)))
			continue
		case !t.HasCheckpoint && len(t.Stores) > 0:
			f := audit.NewFinding(audit.StageStore, audit.CauseUncleanShutdown, audit.TopicPartition{Partition: t.Partition}, -1)
			f.Detail = fmt.Sprintf("task %s (%s) holds stores %s but no .checkpoint: under exactly-once its last close was not clean, Streams wipes and restores these stores",
				t.ID, t.Path, strings.Join(t.Stores, ", "))
			out = append(out, f)
			continue
		}
		for tp, off := range t.Checkpoint {
			o, ok := offsets[tp]
			if !ok || off == OffsetUnknown || off < 0 {
				continue
			}
			end, hasEnd := committed[tp]
			var why string
			switch {
			case off >= o.HW:
				why = fmt.Sprintf("the changelog's high watermark is %d: it holds offsets up to %d only", o.HW, o.HW-1)
			case hasEnd && off >= end:
				why = fmt.Sprintf("the changelog ends at %d at the committed cut", end)
			default:
				continue
			}
			f := audit.NewFinding(audit.StageOffsets, audit.CauseCheckpointAhead, tp, off)
			limit := o.HW
			if hasEnd {
				limit = min(limit, end)
			}
			f.Expected = fmt.Sprintf("< %d", limit)
			f.Actual = strconv.FormatInt(off, 10)
			f.Detail = fmt.Sprintf("task %s: %s says changelog offset %d was written, but %s; a restore from it skips the records in between",
				t.ID, ckpt, off, why)
			out = append(out, f)
		}
	}
	audit.SortFindings(out)
	return out
}
