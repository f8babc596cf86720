package snapshot

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// TestFileDroppedCompacted: a compacted topic's segment deleted from the
// bundle and from the manifest's file list, while the manifest's partition
// still says records were captured. Compaction never empties a log, so the
// partition is unreadable; read as an empty changelog it gave hundreds of
// state-diverged and join-stale losses with no missing evidence (found by
// the safety probe, testdata/probe, on testdata/incidents/dropped).
func TestFileDroppedCompacted(t *testing.T) {
	dir := t.TempDir()
	capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
	rel, m := segmentOf(t, dir)
	if err := os.RemoveAll(filepath.Join(dir, filepath.Dir(rel))); err != nil {
		t.Fatal(err)
	}
	m.Files = slices.DeleteFunc(m.Files, func(f File) bool { return strings.HasPrefix(f.Path, partitionDir(tp0)+"/") })
	setCompacted(m, tp0.Topic)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	problems, recs, err := damaged(t, dir)
	named := false
	for _, f := range problems {
		if f.Cause == audit.CauseUnreadable && f.Topic == tp0.Topic && f.Partition == tp0.Partition && strings.Contains(f.Detail, partitionDir(tp0)) {
			named = true
		}
	}
	if !named {
		t.Errorf("problems %+v, want an unreadable finding naming %s", problems, partitionDir(tp0))
	}
	if err == nil {
		t.Errorf("reading %s gave %d records and no error; want an error", tp0, len(recs))
	}
}

// TestOffsetsContradict: a manifest whose log start is above its high
// watermark (an edited or damaged manifest) gives no offsets: read as a log
// start of 2^62, it made a retention-gap loss on the incident bundle (found
// by the safety probe, testdata/probe).
func TestOffsetsContradict(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(p *PartitionState)
	}{
		{"log start above the HW", func(p *PartitionState) { p.LogStart = 1 << 62 }},
		{"captured from above the next offset", func(p *PartitionState) { p.From = p.HW + 1000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for i := range m.Partitions {
				if m.Partitions[i].TP() == tp0 {
					tc.edit(&m.Partitions[i])
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s in the manifest", tp0)
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if o, err := s.Offsets(t.Context(), tp0); !errors.Is(err, ErrNotCaptured) {
				t.Errorf("offsets %+v, error %v; want an error wrapping %v", o, err, ErrNotCaptured)
			}
		})
	}
}

// TestCompactedCutRehashed: a compacted topic's segment cut at a batch
// boundary, or emptied, and the manifest's file hash and size updated to
// match: the log may end early after compaction, but the partition's bytes
// in the manifest no longer add up, so it is unreadable. Read as the
// changelog, it gave 160-200 state-diverged and join-stale losses with no
// missing evidence on testdata/incidents/dropped (found with the safety
// probe, testdata/probe).
func TestCompactedCutRehashed(t *testing.T) {
	for _, keep := range []int{1, 0} {
		t.Run(fmt.Sprintf("%d batches kept", keep), func(t *testing.T) {
			dir := t.TempDir()
			capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
			rel, m := segmentOf(t, dir)
			setCompacted(m, tp0.Topic)
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, rel)
			seg, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			cut := 0
			if keep > 0 {
				cut = 12 + int(binary.BigEndian.Uint32(seg[8:12]))
			}
			if cut >= len(seg) {
				t.Fatalf("the segment holds one batch: nothing to cut")
			}
			if err := os.WriteFile(p, seg[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			rehash(t, dir)
			problems, _, _ := damaged(t, dir)
			named := false
			for _, f := range problems {
				named = named || (f.Cause == audit.CauseUnreadable && f.Topic == tp0.Topic && f.Partition == tp0.Partition && strings.Contains(f.Detail, partitionDir(tp0)))
			}
			if !named {
				t.Errorf("problems %+v, want an unreadable finding naming %s", problems, partitionDir(tp0))
			}
		})
	}
}

// setCompacted makes the manifest say topic is compacted.
func setCompacted(m *Manifest, topic string) {
	for i := range m.Topics {
		if m.Topics[i].Name == topic {
			if m.Topics[i].Configs == nil {
				m.Topics[i].Configs = map[string]string{}
			}
			m.Topics[i].Configs["cleanup.policy"] = "compact"
			return
		}
	}
	m.Topics = append(m.Topics, audit.TopicInfo{Name: topic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
}

// TestManifestUnknownField: a manifest key flipped into one the format does
// not have (the partition's "log_start" lost) is damage, not a log start of
// 0: read loosely, it gave state-diverged losses on testdata/bad/snapshot/base
// (found by the safety probe, testdata/probe).
func TestManifestUnknownField(t *testing.T) {
	dir := t.TempDir()
	capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
	p := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"log_start"`) {
		t.Fatal("no log_start in the manifest")
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"log_start"`, `"log_sta\u0072u"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); !errors.Is(err, audit.ErrCorrupt) {
		t.Errorf("read manifest: %v, want an error wrapping %v", err, audit.ErrCorrupt)
	}
	// a key in another case is not the key either
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"log_start"`, `"LOG_START"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir); !errors.Is(err, audit.ErrCorrupt) {
		t.Errorf("read manifest with LOG_START: %v, want an error wrapping %v", err, audit.ErrCorrupt)
	}
}
