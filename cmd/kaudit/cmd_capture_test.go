package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/kafka"
	"github.com/kaudit/kaudit/audit/snapshot"
	"github.com/kaudit/kaudit/audit/sourcetest"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

func TestCaptureCLIErrors(t *testing.T) {
	brokerDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(brokerDir, "meta.properties"), []byte("node.id=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no app id", []string{"capture", "--out", "x", "--bootstrap-server", "127.0.0.1:1"}, "--app-id is required"},
		{"no out", []string{"capture", "--app-id", "a", "--bootstrap-server", "127.0.0.1:1"}, "--out is required"},
		{"bad since", []string{"capture", "--app-id", "a", "--out", "x", "--since", "yesterday"}, "--since"},
		{"bad max bytes", []string{"capture", "--app-id", "a", "--out", "x", "--max-bytes", "-5"}, "--max-bytes"},
		{"no source", []string{"capture", "--app-id", "a", "--out", "x"}, "needs a source"},
		{"into a broker's log dir", []string{"capture", "--app-id", "kaudit-drill", "--snapshot", "../../testdata/incidents/dropped", "--out", filepath.Join(brokerDir, "newsub")}, "a broker's log dir"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, exitUsage, tt.want)
			}
		})
	}
}

func TestParseBytes(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
	}{{"512", 512}, {"4K", 4096}, {"500M", 500 << 20}, {"2GiB", 2 << 30}, {"1gb", 1 << 30}} {
		if got, err := parseBytes(tt.in); err != nil || got != tt.want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0", "-1", "12X", "K"} {
		if _, err := parseBytes(bad); err == nil {
			t.Errorf("parseBytes(%q): no error", bad)
		}
	}
}

func captureMemory() *fakeapp.Memory {
	m := fakeapp.NewMemory(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
	m.AddTopic(audit.TopicInfo{Name: sourcetest.Topic, Partitions: 2, ReplicationFactor: 3})
	m.Append(sourcetest.Fixture()...)
	m.SetOffsets(audit.TopicPartition{Topic: sourcetest.Topic, Partition: 1}, sourcetest.Offsets1)
	m.SetGroup(audit.GroupOffsets{Group: "conf", Offsets: map[audit.TopicPartition]int64{{Topic: sourcetest.Topic, Partition: 0}: 9}})
	return m
}

func TestRunCapture(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	topo := filepath.Join(t.TempDir(), "topology.txt")
	os.WriteFile(topo, []byte("Topologies:\n"), 0o644)
	schemas := t.TempDir()
	os.WriteFile(filepath.Join(schemas, "7.avsc"), []byte(`"string"`), 0o644)
	src := captureMemory()
	o := captureOptions{AppID: "conf", Out: dir, Topology: topo, SchemasDir: schemas, MaxBytes: 100}
	var out, errOut strings.Builder
	err := runCapture(t.Context(), o, src, &out, &errOut)
	if code := exitCode(t.Context(), err); code != exitIncomplete || !strings.Contains(out.String(), "stopped by --max-bytes") {
		t.Fatalf("bounded run: exit %d, err %v, output %q", code, err, out.String())
	}
	if strings.Contains(errOut.String(), "\r") {
		t.Errorf("progress written to a non-terminal: %q", errOut.String())
	}
	out.Reset()
	o.MaxBytes = 0
	if err := runCapture(t.Context(), o, src, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "captured 2 of 2 partitions of conf: 14 records") || !strings.Contains(out.String(), "is complete") {
		t.Fatalf("output %q", out.String())
	}
	s, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems()) != 0 || s.Topology() != "Topologies:\n" || s.Schemas()[7].Schema != `"string"` {
		t.Fatalf("problems %v, topology %q, schemas %v", s.Problems(), s.Topology(), s.Schemas())
	}
}

// TestCaptureLive captures an app's topics from an in-process broker
// (committed and aborted transactions, plain records) and checks that the
// bundle gives back exactly what the broker serves, batch headers included.
func TestCaptureLive(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bs := strings.Join(c.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("shop-0_0"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 2, 1, nil, "shop-repartition"); err != nil {
		t.Fatal(err)
	}
	for i, commit := range []bool{true, false, true} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for p := range int32(2) {
			r := &kgo.Record{Topic: "shop-repartition", Partition: p, Key: []byte{byte('a' + i)}, Value: []byte(strings.Repeat("v", 50*i)),
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte{byte(i)}}}}
			if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(t.Context(), kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}

	// the app has no consumer group: the bundle holds every record and no
	// cut, so the capture, its manifest and an audit of it all say
	// incomplete
	dir := filepath.Join(t.TempDir(), "bundle")
	out, errOut, code := runCLI(t, "capture", "--app-id", "shop", "--bootstrap-server", bs, "--out", dir)
	if code != exitIncomplete || !strings.Contains(errOut, "not captured: group offsets") || !strings.Contains(out, "will be incomplete") || strings.Contains(out, "is complete") {
		t.Fatalf("exit %d, stderr %s, output %s: want 3, the group offsets named as not captured", code, errOut, out)
	}
	if m, err := snapshot.ReadManifest(dir); err != nil || m.Complete || !m.Copied() {
		t.Fatalf("manifest complete %v, copied %v (%v): want every record copied and the bundle not complete", m.Complete, m.Copied(), err)
	}
	if _, errOut, code := runCLI(t, "diff", "--snapshot", dir, "--app-id", "shop"); code != exitIncomplete {
		t.Errorf("diff of the bundle: exit %d, want %d: %s", code, exitIncomplete, errOut)
	}
	snap, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if p := snap.Problems(); len(p) != 0 {
		t.Fatalf("problems %+v", p)
	}
	live, err := kafka.Open(t.Context(), kafka.Config{Bootstrap: c.ListenAddrs(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	for p := range int32(2) {
		tp := audit.TopicPartition{Topic: "shop-repartition", Partition: p}
		want := readPartition(t, t.Context(), live, tp)
		got := readPartition(t, t.Context(), snap, tp)
		if len(want) != 6 {
			t.Fatalf("live %s: %d records, want 3 data records and 3 markers", tp, len(want))
		}
		if d := sourcetest.Diff(got, want); d != "" {
			t.Fatalf("%s: snapshot differs from the broker: %s", tp, d)
		}
		lo, _ := live.Offsets(t.Context(), tp)
		so, _ := snap.Offsets(t.Context(), tp)
		if lo != so {
			t.Fatalf("%s: offsets %+v, broker says %+v", tp, so, lo)
		}
	}
}

func readPartition(t *testing.T, ctx context.Context, src audit.RecordSource, tp audit.TopicPartition) []audit.Record {
	t.Helper()
	var out []audit.Record
	for r, err := range src.Records(ctx, tp, 0, -1) {
		if err != nil {
			t.Fatalf("read %s: %v", tp, err)
		}
		out = append(out, r)
	}
	return out
}

// produceFixture produces sourcetest.Fixture to a kfake cluster, batch by
// batch: what a producer controls of it (offsets, batch boundaries,
// transactions, markers, keys, values, headers).
func produceFixture(t *testing.T, c *kfake.Cluster, recs []audit.Record) {
	t.Helper()
	ctx := t.Context()
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	adm, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if _, err := kadm.NewClient(adm).CreateTopic(ctx, 2, 1, nil, sourcetest.Topic); err != nil {
		t.Fatal(err)
	}
	clients := map[int64]*kgo.Client{}
	client := func(b audit.Batch) *kgo.Client {
		if cl, ok := clients[b.ProducerID]; ok {
			return cl
		}
		opts := []kgo.Opt{seeds, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(20 * time.Millisecond)}
		switch {
		case b.Transactional:
			opts = append(opts, kgo.TransactionalID(fmt.Sprintf("conf-%d", b.ProducerID)))
		case b.ProducerID < 0:
			opts = append(opts, kgo.DisableIdempotentWrite())
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		clients[b.ProducerID] = cl
		t.Cleanup(cl.Close)
		return cl
	}
	for i := 0; i < len(recs); {
		b := recs[i].Batch
		j := i
		for j < len(recs) && recs[j].Batch.BaseOffset == b.BaseOffset && recs[j].Partition == recs[i].Partition {
			j++
		}
		cl := client(b)
		switch {
		case b.Control:
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(recs[i].Marker.Type == audit.MarkerCommit)); err != nil {
				t.Fatal(err)
			}
		default:
			if b.Transactional {
				if err := cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
			}
			var krs []*kgo.Record
			for _, r := range recs[i:j] {
				kr := &kgo.Record{Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value}
				for _, h := range r.Headers {
					kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				krs = append(krs, kr)
			}
			if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		i = j
	}
}

// TestLiveConformance runs the conformance suite, relaxed to what a
// producer controls, over the live source: the fixture produced to kfake.
func TestLiveConformance(t *testing.T) {
	sourcetest.RunSourceTestsWith(t, sourcetest.Options{ProducedHeaders: true}, func(t *testing.T, recs []audit.Record) audit.RecordSource {
		c, err := kfake.NewCluster(kfake.NumBrokers(1))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		produceFixture(t, c, recs)
		src, err := kafka.Open(t.Context(), kafka.Config{Bootstrap: c.ListenAddrs(), Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(src.Close)
		return src
	})
}

// TestCaptureCommitLog: a capture of a real broker's log dirs keeps the
// group's partition of __consumer_offsets and says so; the bundle then
// audits as before.
func TestCaptureCommitLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	logdir := filepath.Join("..", "..", "audit", "segment", "testdata", "real", "kafka-3.6.2-logdir")
	out, errOut, code := runCLI(t, "capture", "--app-id", "gen-app", "--log-dir", logdir, "--out", dir)
	if code != exitClean || !strings.Contains(out, "and the group's commit log, __consumer_offsets/0: 23 records") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if _, errOut, code = runCLI(t, "diff", "--app-id", "gen-app", "--snapshot", dir, "--format", "json", "--output", filepath.Join(t.TempDir(), "r.json")); code == exitUsage || code == exitNotRun {
		t.Fatalf("diff of the bundle: exit %d\n%s", code, errOut)
	}
}

// TestDamagedCommitLog: the group's commit history is evidence like the
// topics. A bundle of a real broker's log dirs whose commit log has a
// batch failing its CRC (its hash in the manifest updated, as someone
// editing a bundle would), or is cut short (its byte count too), is
// missing evidence naming the damage, where it was a note beside a
// verdict that could be clean; what the history proves before the damage
// (gen.orders/0's offsets 4-5 moved past by hand) still stands, and a cut
// is never read as compaction.
func TestDamagedCommitLog(t *testing.T) {
	logdir := filepath.Join("..", "..", "audit", "segment", "testdata", "real", "kafka-3.6.2-logdir")
	for _, tc := range []struct {
		name string
		hurt func(b []byte, at int) []byte // at: a batch boundary in the middle of the log
		want string
	}{
		{"a batch failing its CRC", func(b []byte, at int) []byte { b[at+30] ^= 0xff; return b }, "crc32c"},
		{"cut short", func(b []byte, at int) []byte { return b[:at] }, "records were lost from the bundle"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "bundle")
			if out, errOut, code := runCLI(t, "capture", "--app-id", "gen-app", "--log-dir", logdir, "--out", dir); code != exitClean {
				t.Fatalf("capture: exit %d\n%s\n%s", code, out, errOut)
			}
			seg := filepath.Join(dir, "__consumer_offsets-0", "00000000000000000000.log")
			b, err := os.ReadFile(seg)
			if err != nil {
				t.Fatal(err)
			}
			at := 0 // the batch boundary past half the file
			for at < len(b)/2 {
				at += 12 + int(binary.BigEndian.Uint32(b[at+8:]))
			}
			b = tc.hurt(b, at)
			if err := os.WriteFile(seg, b, 0o644); err != nil {
				t.Fatal(err)
			}
			mp := filepath.Join(dir, "manifest.json")
			var m map[string]any
			mb, err := os.ReadFile(mp)
			if err != nil || json.Unmarshal(mb, &m) != nil {
				t.Fatalf("manifest: %v", err)
			}
			sum := sha256.Sum256(b)
			for _, f := range m["files"].([]any) {
				if f := f.(map[string]any); f["path"] == "__consumer_offsets-0/00000000000000000000.log" {
					f["size"], f["sha256"] = len(b), hex.EncodeToString(sum[:])
				}
			}
			m["commit_log"].(map[string]any)["bytes"] = len(b)
			if mb, err = json.Marshal(m); err != nil || os.WriteFile(mp, mb, 0o644) != nil {
				t.Fatalf("manifest: %v", err)
			}
			rep := diffReport(t, exitFindings, "--app-id", "gen-app", "--snapshot", dir)
			if !slices.ContainsFunc(rep.Summary.Missing, func(s string) bool {
				return strings.Contains(s, "commit history __consumer_offsets/0 is damaged") && strings.Contains(s, tc.want)
			}) {
				t.Errorf("missing evidence %q: want the damaged commit history named", rep.Summary.Missing)
			}
			if slices.ContainsFunc(rep.Summary.Notes, func(s string) bool { return strings.Contains(s, "compaction removed") }) {
				t.Errorf("notes %q: damage read as compaction", rep.Summary.Notes)
			}
			if !slices.ContainsFunc(rep.Findings, func(f audit.Finding) bool {
				return f.Cause == audit.CauseOffsetsForward && f.Topic == "gen.orders" && f.Partition == 0 && f.Offset == 4
			}) {
				t.Errorf("findings %+v: want the moves the history read before the damage proves", rep.Findings)
			}
		})
	}
}
