package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment"
)

// realDir is a real Kafka 3.6.2 broker's log dir (audit/segment's fixture):
// group gen-app committed plainly and in transactions in
// __consumer_offsets-0.
const realDir = "../segment/testdata/real/kafka-3.6.2-logdir"

// TestCommitLogCaptured: a capture keeps the group's partition of
// __consumer_offsets, whole even under Since, listed with its sha256 like
// every file, without asking the registry about its records; the bundle
// then gives the commit history the log dirs give, through the same
// decoder.
func TestCommitLogCaptured(t *testing.T) {
	d, err := segment.OpenDirs(realDir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := d.CommitHistory(t.Context(), "gen-app")
	if err != nil {
		t.Fatal(err)
	}
	want.CleanedTo, want.Notes = -1, nil
	var asked []int32
	dir := filepath.Join(t.TempDir(), "b")
	m := capture(t, d, CaptureOptions{Dir: dir, AppID: "gen-app", Since: time.Now().Add(time.Hour),
		Schema: func(_ context.Context, id int32) (audit.Schema, error) {
			asked = append(asked, id)
			return audit.Schema{}, nil
		}})
	cl := m.CommitLog
	if cl == nil || cl.TP() != want.Log || cl.TopicPartitions != 4 || !cl.Complete || cl.From != 0 || cl.Records != want.Records {
		t.Fatalf("commit log %+v: want %s whole (%d records), with the topic's 4 partitions", cl, want.Log, want.Records)
	}
	if !slices.ContainsFunc(m.Files, func(f File) bool {
		return strings.HasPrefix(f.Path, "__consumer_offsets-0/") && len(f.SHA256) == 64
	}) || m.Format != 2 {
		t.Fatalf("files %+v, format %d: want the commit log's segment listed with its sha256, format 2", m.Files, m.Format)
	}
	if len(asked) != 0 {
		t.Errorf("the registry was asked about schema ids %v: commit log records are no Confluent-framed data", asked)
	}
	s := mustOpen(t, dir)
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("problems %+v", p)
	}
	got, err := s.CommitHistory(t.Context(), "gen-app")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("snapshot history\n%+v\nlog dirs\n%+v", got, want)
	}
	if n, err := s.Partitions(t.Context(), audit.ConsumerOffsetsTopic); err != nil || n != 4 {
		t.Errorf("Partitions(%s) = %d, %v; want the topic's 4", audit.ConsumerOffsetsTopic, n, err)
	}
	ts, _ := s.Topics(t.Context())
	if slices.ContainsFunc(ts, func(ti audit.TopicInfo) bool { return ti.Name == audit.ConsumerOffsetsTopic }) {
		t.Errorf("Topics lists %s: it is evidence about the app, not one of its topics", audit.ConsumerOffsetsTopic)
	}
	if _, err := s.CommitHistory(t.Context(), "gen-x"); !errors.Is(err, audit.ErrNotSupported) {
		t.Errorf("a group hashed to another partition: %v; want ErrNotSupported", err)
	}

	// a damaged commit log is unreadable evidence, never another history
	seg := filepath.Join(dir, "__consumer_offsets-0", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir)
	if p := s.Problems(); len(p) == 0 || p[0].Topic != audit.ConsumerOffsetsTopic {
		t.Errorf("problems of a damaged commit log: %+v", p)
	}
	h, err := s.CommitHistory(t.Context(), "gen-app")
	if err != nil || len(h.Commits) != 0 || len(h.Unread) != 1 || h.Unread[0].From != 0 || h.Unread[0].To != want.End || !strings.Contains(h.Unread[0].Why, "not captured") {
		t.Errorf("history of a damaged commit log: %+v, %v; want every offset unread", h, err)
	}
}

// TestCommitLogAbsent: a bundle without the commit log (format 1, or a
// source without __consumer_offsets) still opens and audits; its history
// is not known, and the error says why.
func TestCommitLogAbsent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "b")
	m := capture(t, fixtureSource(t), CaptureOptions{Dir: dir, AppID: "conf"})
	if m.CommitLog != nil || !slices.ContainsFunc(m.Missing, func(s string) bool { return strings.HasPrefix(s, commitLogMissing) }) {
		t.Fatalf("commit log %+v, missing %q: want none, and why", m.CommitLog, m.Missing)
	}
	_, err := mustOpen(t, dir).CommitHistory(t.Context(), "conf")
	if !errors.Is(err, audit.ErrNotSupported) || !strings.Contains(err.Error(), "could not read it") {
		t.Errorf("history: %v", err)
	}
	old := mustOpen(t, filepath.Join("..", "..", "testdata", "incidents", "dropped"))
	if old.Manifest().Format != 1 {
		t.Fatalf("the incident bundle is format %d; this test wants a format 1 bundle", old.Manifest().Format)
	}
	_, err = old.CommitHistory(t.Context(), old.Manifest().AppID)
	if !errors.Is(err, audit.ErrNotSupported) || !strings.Contains(err.Error(), "captured before kaudit kept it") {
		t.Errorf("history of a format 1 bundle: %v", err)
	}
}

// TestCommitLogResumed: a capture stopped by MaxBytes resumes into the
// commit log like any partition, and the finished bundle gives the same
// history as one captured at once.
func TestCommitLogResumed(t *testing.T) {
	d, err := segment.OpenDirs(realDir)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "whole")
	capture(t, d, CaptureOptions{Dir: whole, AppID: "gen-app"})
	want, err := mustOpen(t, whole).CommitHistory(t.Context(), "gen-app")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "b")
	runs := 0
	for m := (*Manifest)(nil); m == nil || !m.Complete; runs++ {
		if runs > 200 {
			t.Fatal("the capture does not finish")
		}
		m = capture(t, d, CaptureOptions{Dir: dir, AppID: "gen-app", MaxBytes: 600})
	}
	got, err := mustOpen(t, dir).CommitHistory(t.Context(), "gen-app")
	if err != nil {
		t.Fatal(err)
	}
	if runs < 3 || !reflect.DeepEqual(got, want) {
		t.Errorf("after %d runs: history\n%+v\nwant\n%+v", runs, got, want)
	}
}
