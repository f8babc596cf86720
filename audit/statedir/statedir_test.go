package statedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/internal/golden"

	"github.com/kaudit/kaudit/audit"
)

// TestParseCheckpointGolden parses testdata/checkpoints/*.checkpoint and
// compares the entries (or the error) with the .golden file beside it.
func TestParseCheckpointGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "checkpoints", "*.checkpoint"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			b, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			m, err := ParseCheckpoint(b)
			var got string
			if err != nil {
				if !errors.Is(err, audit.ErrCorrupt) {
					t.Errorf("error %v does not wrap ErrCorrupt", err)
				}
				got = "error: " + err.Error() + "\n"
			} else {
				got = string(FormatCheckpoint(m))
			}
			golden.Check(t, strings.TrimSuffix(in, ".checkpoint")+".golden", []byte(got))
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	reduceCL = "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog"
	tableCL  = "orders-app-KTABLE-SOURCE-STATE-STORE-0000000007-changelog"
)

// stateDir builds <root>/orders-app with four tasks: 0_0 checkpointed
// behind the changelog, 0_1 checkpointed ahead of it, 0_2 with a store and
// no checkpoint, 1_0 with a corrupt checkpoint.
func stateDir(t *testing.T) string {
	root := t.TempDir()
	app := filepath.Join(root, "orders-app")
	write(t, filepath.Join(app, ProcessMetadataFile), `{"processId":"8c1f0a4e-2b7d-4d4e-9a55-3e1c3f3b9d10"}`)
	write(t, filepath.Join(app, ".lock"), "")
	write(t, filepath.Join(app, "0_0", CheckpointFile), fmt.Sprintf("0\n2\n%s 0 99\n%s 0 -4\n", reduceCL, tableCL))
	write(t, filepath.Join(app, "0_0", "rocksdb", "KSTREAM-REDUCE-STATE-STORE-0000000002", "CURRENT"), "MANIFEST-000005\n")
	write(t, filepath.Join(app, "0_1", CheckpointFile), fmt.Sprintf("0\n1\n%s 1 120\n", reduceCL))
	write(t, filepath.Join(app, "0_1", "rocksdb", "KSTREAM-REDUCE-STATE-STORE-0000000002", "CURRENT"), "x")
	write(t, filepath.Join(app, "0_2", "rocksdb", "KSTREAM-REDUCE-STATE-STORE-0000000002", "CURRENT"), "x")
	write(t, filepath.Join(app, "1_0", CheckpointFile), "0\n5\n")
	write(t, filepath.Join(app, "not-a-task", "x"), "")
	return root
}

func TestRead(t *testing.T) {
	root := stateDir(t)
	for _, dir := range []string{root, filepath.Join(root, "orders-app")} {
		s, err := Read(dir, "orders-app")
		if err != nil {
			t.Fatal(err)
		}
		if s.ProcessID != "8c1f0a4e-2b7d-4d4e-9a55-3e1c3f3b9d10" {
			t.Errorf("process id %q", s.ProcessID)
		}
		var ids []string
		for _, task := range s.Tasks {
			ids = append(ids, fmt.Sprintf("%s:%d/%d:%v:%t:%d", task.ID, task.Subtopology, task.Partition, task.Stores, task.HasCheckpoint, len(task.Checkpoint)))
		}
		want := []string{
			"0_0:0/0:[KSTREAM-REDUCE-STATE-STORE-0000000002]:true:2",
			"0_1:0/1:[KSTREAM-REDUCE-STATE-STORE-0000000002]:true:1",
			"0_2:0/2:[KSTREAM-REDUCE-STATE-STORE-0000000002]:false:0",
			"1_0:1/0:[]:true:0",
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("tasks\n got %v\nwant %v", ids, want)
		}
		if !errors.Is(s.Tasks[3].CheckpointErr, audit.ErrCorrupt) {
			t.Fatalf("task 1_0 checkpoint error %v", s.Tasks[3].CheckpointErr)
		}
	}
	if _, err := Read(t.TempDir(), "orders-app"); err == nil {
		t.Fatal("no error for a missing app dir")
	}
}

func TestCheck(t *testing.T) {
	s, err := Read(stateDir(t), "orders-app")
	if err != nil {
		t.Fatal(err)
	}
	cl := func(p int32) audit.TopicPartition { return audit.TopicPartition{Topic: reduceCL, Partition: p} }
	for _, tc := range []struct {
		name      string
		offsets   map[audit.TopicPartition]audit.PartitionOffsets
		committed map[audit.TopicPartition]int64
		want      []string
	}{
		{
			name:    "checkpoint beyond the HW",
			offsets: map[audit.TopicPartition]audit.PartitionOffsets{cl(0): {HW: 150}, cl(1): {HW: 120}},
			want: []string{
				"store/unclean-shutdown//2@-1",
				"offsets/checkpoint-ahead/" + reduceCL + "/1@120 < 120",
				"offsets/unreadable//0@-1",
			},
		},
		{
			name:      "checkpoint ahead of the cut",
			offsets:   map[audit.TopicPartition]audit.PartitionOffsets{cl(0): {HW: 150}, cl(1): {HW: 200}},
			committed: map[audit.TopicPartition]int64{cl(0): 99, cl(1): 130},
			want: []string{
				"store/unclean-shutdown//2@-1",
				"offsets/checkpoint-ahead/" + reduceCL + "/0@99 < 99",
				"offsets/unreadable//0@-1",
			},
		},
		{
			name:    "all behind",
			offsets: map[audit.TopicPartition]audit.PartitionOffsets{cl(0): {HW: 150}, cl(1): {HW: 200}},
			want: []string{
				"store/unclean-shutdown//2@-1",
				"offsets/unreadable//0@-1",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, f := range Check(s, tc.offsets, tc.committed) {
				if f.Severity != f.Cause.Severity() {
					t.Errorf("finding %+v: severity", f)
				}
				got = append(got, strings.TrimSpace(fmt.Sprintf("%s/%s/%s/%d@%d %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Expected)))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("findings\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

// FuzzParseCheckpoint: no panic, no more entries than lines, and what
// parses formats back to a checkpoint that parses to the same entries.
func FuzzParseCheckpoint(f *testing.F) {
	inputs, _ := filepath.Glob(filepath.Join("testdata", "checkpoints", "*.checkpoint"))
	for _, in := range inputs {
		b, _ := os.ReadFile(in)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseCheckpoint(b)
		if err != nil {
			return
		}
		if len(m) > strings.Count(string(b), "\n")+1 {
			t.Fatalf("%d entries from %d lines", len(m), strings.Count(string(b), "\n")+1)
		}
		again, err := ParseCheckpoint(FormatCheckpoint(m))
		if err != nil || len(again) != len(m) {
			t.Fatalf("reparse: %d entries, %v; want %d", len(again), err, len(m))
		}
		for tp, o := range m {
			if again[tp] != o {
				t.Fatalf("reparse: %s = %d, want %d", tp, again[tp], o)
			}
		}
	})
}
