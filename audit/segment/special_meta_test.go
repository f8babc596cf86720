package segment

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// TestSpecialFilesWholeReads: the files of a real log dir that are read
// whole (the KRaft metadata snapshot, a .txnindex, meta.properties) as a
// symlink to /dev/zero: each read ends within two seconds, and the
// metadata snapshot and transaction index say they are not regular files.
// Found by the safety probe (testdata/probe): a .checkpoint symlinked to
// /dev/zero hung kaudit diff --log-dir, deaf to SIGTERM.
func TestSpecialFilesWholeReads(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip(err)
	}
	real := func(t *testing.T, version string) string {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "real", "kafka-"+version+"-logdir"))); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	link := func(t *testing.T, path string) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
	}
	within := func(t *testing.T, what string, f func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- f() }()
		select {
		case err := <-done:
			return err
		case <-time.After(2 * time.Second):
			t.Fatalf("%s did not end", what)
			return nil
		}
	}
	wantNotRegular := func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotRegular) || !errors.Is(err, audit.ErrCorrupt) {
			t.Fatalf("got %v, want an error wrapping %v", err, ErrNotRegular)
		}
	}

	t.Run("metadata snapshot", func(t *testing.T) {
		root := real(t, "4.1.1")
		snap, _, err := latestCheckpoint(filepath.Join(root, ClusterMetadataTopic+"-0"))
		if err != nil || snap == "" {
			t.Fatalf("no metadata snapshot: %v", err)
		}
		link(t, snap)
		d, err := OpenDirs(root)
		if err != nil {
			t.Fatal(err)
		}
		wantNotRegular(t, within(t, "reading the metadata", func() error { _, err := d.Metadata(t.Context()); return err }))
	})
	t.Run("transaction index", func(t *testing.T) {
		root := real(t, "3.6.2")
		tp := audit.TopicPartition{Topic: "__consumer_offsets", Partition: 0}
		link(t, filepath.Join(root, "__consumer_offsets-0", "00000000000000000000.txnindex"))
		d, err := OpenDirs(root)
		if err != nil {
			t.Fatal(err)
		}
		wantNotRegular(t, within(t, "reading the transaction index", func() error { _, err := d.AbortedTxns(t.Context(), tp); return err }))
	})
	t.Run("meta.properties", func(t *testing.T) {
		root := real(t, "4.1.1")
		link(t, filepath.Join(root, "meta.properties"))
		var id int32
		within(t, "reading meta.properties", func() error { id = BrokerID(root); return nil })
		if id != -1 {
			t.Errorf("broker id %d from /dev/zero, want -1", id)
		}
		d, err := OpenDirs(root)
		if err != nil {
			return // refused: fine
		}
		within(t, "the ZooKeeper-era check", func() error { d.zkEra(); return nil })
	})
}

// TestSegmentFileDeleted: a partition dir of a real log dir whose only .log
// was deleted (its indexes and the dir's high-watermark checkpoint left):
// Kafka never leaves a partition without a segment, and the checkpoint says
// acknowledged offsets are gone, so the partition is corrupt evidence. Read
// as an empty log it made a confident truncated loss (found by the safety
// probe, testdata/probe).
func TestSegmentFileDeleted(t *testing.T) {
	for _, version := range []string{"3.6.2", "4.1.1"} {
		t.Run(version, func(t *testing.T) {
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "real", "kafka-"+version+"-logdir"))); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(root, "gen.orders-1", "00000000000000000000.log")); err != nil {
				t.Fatal(err)
			}
			d, err := OpenDirs(root)
			if err != nil {
				t.Fatal(err)
			}
			o, err := d.Offsets(t.Context(), audit.TopicPartition{Topic: "gen.orders", Partition: 1})
			if !errors.Is(err, audit.ErrCorrupt) {
				t.Fatalf("offsets %+v, error %v; want an error wrapping %v", o, err, audit.ErrCorrupt)
			}
		})
	}
}
