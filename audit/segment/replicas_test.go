package segment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/sourcetest"
)

func writeMeta(t *testing.T, root, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, "meta.properties"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeEpochs(t *testing.T, root string, tp audit.TopicPartition, epochs string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), LeaderEpochCheckpoint), []byte(epochs), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUncleanElectionReplicas: broker 2, out of sync, was elected at
// epoch 5 with a shorter log; broker 1, the old leader at epoch 4, holds
// more. The audit reads broker 2's replica (the leader's by the
// leader-epoch history, although shorter), and the divergence names both
// brokers and the range broker 2 lacks.
func TestUncleanElectionReplicas(t *testing.T) {
	b1, b2 := t.TempDir(), t.TempDir()
	recs := sourcetest.Fixture()
	writeLogDir(t, b1, recs)
	var short []audit.Record
	for _, r := range recs {
		if r.TP() == tp0 && r.Offset >= 8 {
			continue
		}
		short = append(short, r)
	}
	writeLogDir(t, b2, short)
	writeMeta(t, b1, "#\nnode.id=1\nversion=1\ncluster.id=x\n")
	writeMeta(t, b2, "#\nnode.id=2\nversion=1\ncluster.id=x\n")
	writeEpochs(t, b1, tp0, "0\n1\n4 0\n")
	writeEpochs(t, b2, tp0, "0\n2\n4 0\n5 8\n")
	d := mustOpen(t, b1, b2)
	if got := d.Replicas(tp0); len(got) != 2 || !strings.HasPrefix(got[0], b2) {
		t.Fatalf("replicas %v, want broker 2's (%s) first", got, b2)
	}
	if e, err := d.LeaderEpochs(tp0); err != nil || len(e) != 2 || e[1].Epoch != 5 {
		t.Errorf("leader epochs %+v, %v", e, err)
	}
	fs, err := d.Divergence(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 {
		t.Fatalf("findings %+v, want one", fs)
	}
	f := fs[0]
	for _, want := range []string{"(broker 2) lacks offsets 8-9", "that replica " + filepath.Join(b1, tp0.Topic+"-0") + " (broker 1) holds", "the audit reads replica " + filepath.Join(b2, tp0.Topic+"-0") + " (broker 2) (leader epoch 5"} {
		if !strings.Contains(f.Detail, want) {
			t.Errorf("detail %q lacks %q", f.Detail, want)
		}
	}
	if f.Cause != audit.CauseTruncated || f.Offset != 8 || f.Count != 2 {
		t.Errorf("finding %+v, want truncated at 8, 2 records", f)
	}
	// the audit's view is broker 2's: the log ends at 8
	if o, err := d.Offsets(t.Context(), tp0); err != nil || o.HW != 8 {
		t.Errorf("Offsets = %+v, %v; want broker 2's log (HW 8)", o, err)
	}
	if BrokerID(t.TempDir()) != -1 {
		t.Error("BrokerID of a dir without meta.properties")
	}
}

// TestRealReplicas reads two copies of a real broker's log dir as two
// brokers: broker 2's gen.orders-0 lost its last batch (a follower that had
// not fetched it). Every answer still comes from the dirs (the internal
// topics are held twice), and the divergence names broker 2 and the
// offsets it lacks.
func TestRealReplicas(t *testing.T) {
	src := filepath.Join("testdata", "real", "kafka-4.1.1-logdir")
	b1, b2 := filepath.Join(t.TempDir(), "n1"), filepath.Join(t.TempDir(), "n2")
	for _, dst := range []string{b1, b2} {
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := os.ReadFile(filepath.Join(b2, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	writeMeta(t, b2, strings.Replace(string(meta), "node.id=1", "node.id=2", 1))
	// cut broker 2's gen.orders-0 before its last batch
	seg := filepath.Join(b2, "gen.orders-0", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	tp := audit.TopicPartition{Topic: "gen.orders", Partition: 0}
	last, lastBase := 0, int64(0)
	for pos := 0; pos < len(b); {
		h, _, n, err := DecodeBatch(b[pos:], tp)
		if err != nil {
			t.Fatal(err)
		}
		last, lastBase = pos, h.BaseOffset
		pos += n
	}
	if err := os.WriteFile(seg, b[:last], 0o644); err != nil {
		t.Fatal(err)
	}
	// its checkpoints say what it had: the HW it acknowledged is its end
	cp := filepath.Join(b2, ReplicationCheckpoint)
	cb, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, []byte(strings.Replace(string(cb), "gen.orders 0 10", fmt.Sprintf("gen.orders 0 %d", lastBase), 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, b2, b1)
	ctx := t.Context()
	if got := d.Replicas(tp); len(got) != 2 || !strings.HasPrefix(got[0], b1) {
		t.Fatalf("replicas %v, want broker 1's (the longer log at the same epoch) first", got)
	}
	fs, err := d.Divergence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 1 || fs[0].Topic != tp.Topic || fs[0].Partition != 0 || fs[0].Offset != lastBase || fs[0].Cause != audit.CauseUnderReplicated {
		// broker 1, read, holds the batch broker 2 lacks: nothing is lost
		t.Fatalf("divergence %+v, want one under-replicated finding on gen.orders/0 at %d", fs, lastBase)
	}
	if want := "(broker 2) lacks offsets " + fmt.Sprint(lastBase); !strings.Contains(fs[0].Detail, want) || !strings.Contains(fs[0].Detail, "(broker 1) holds") {
		t.Errorf("detail %q, want %q and broker 1", fs[0].Detail, want)
	}
	if g, err := d.GroupOffsets(ctx, "gen-app"); err != nil || g.Offsets[tp] != 6 {
		t.Errorf("GroupOffsets over two brokers' dirs = %+v, %v", g, err)
	}
	if txns, err := d.Transactions(ctx, "gen-app-"); err != nil || len(txns) != 3 {
		t.Errorf("Transactions over two brokers' dirs = %+v, %v", txns, err)
	}
	if ts, err := d.Topics(ctx); err != nil || len(ts) != 4 {
		t.Errorf("Topics over two brokers' dirs = %+v, %v", ts, err)
	}
	// a broker's metadata log trailing the controller's is no divergence
	mseg := filepath.Join(b2, "__cluster_metadata-0", "00000000000000000000.log")
	mb, err := os.ReadFile(mseg)
	if err != nil {
		t.Fatal(err)
	}
	mlast := 0
	for pos := 0; pos < len(mb); {
		_, _, n, err := DecodeBatch(mb[pos:], audit.TopicPartition{Topic: ClusterMetadataTopic})
		if err != nil {
			t.Fatal(err)
		}
		mlast = pos
		pos += n
	}
	if err := os.WriteFile(mseg, mb[:mlast], 0o644); err != nil {
		t.Fatal(err)
	}
	if fs, err := mustOpen(t, b2, b1).Divergence(ctx); err != nil || len(fs) != 1 {
		t.Errorf("divergence with broker 2's metadata log one batch behind: %+v, %v; want only gen.orders/0's", fs, err)
	}
}

// TestRealTornOffsetsTail: a broker killed mid-write leaves half a batch
// at the end of __consumer_offsets-0. The group's offsets are those before
// it, and the torn tail is listed (kaudit reports it as unreadable).
func TestRealTornOffsetsTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "real", "kafka-3.6.2-logdir"))); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "__consumer_offsets-0", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	size := len(b)
	// the first 40 bytes of the partition's first batch, again, at the end
	if err := os.WriteFile(seg, append(b, b[:40]...), 0o644); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, dir)
	tt := d.TornTails()
	if len(tt) != 1 || tt[0].File != seg || tt[0].Pos != int64(size) || tt[0].Bytes != 40 {
		t.Fatalf("torn tails %+v, want 40 bytes at %d of %s", tt, size, seg)
	}
	g, err := d.GroupOffsets(t.Context(), "gen-app")
	if err != nil || g.Offsets[audit.TopicPartition{Topic: "gen.orders", Partition: 0}] != 6 || g.Offsets[audit.TopicPartition{Topic: "gen.orders", Partition: 1}] != 7 {
		t.Errorf("GroupOffsets before the torn tail = %+v, %v", g, err)
	}
}

// TestPartitionElsewhere: a partition the metadata log places on a broker
// whose dir was not given is missing evidence naming that broker, not a
// topic that does not exist.
func TestPartitionElsewhere(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "real", "kafka-3.6.2-logdir"))); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "gen.out-0")); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, dir)
	ts, err := d.Topics(t.Context())
	if err != nil || !slices.ContainsFunc(ts, func(ti audit.TopicInfo) bool { return ti.Name == "gen.out" && ti.Partitions == 1 }) {
		t.Fatalf("Topics = %+v, %v; want gen.out from the metadata log", ts, err)
	}
	if n, err := d.Partitions(t.Context(), "gen.out"); err != nil || n != 1 {
		t.Errorf("Partitions(gen.out) = %d, %v; want 1 from the metadata log", n, err)
	}
	_, err = d.Offsets(t.Context(), audit.TopicPartition{Topic: "gen.out", Partition: 0})
	if !errors.Is(err, audit.ErrPartitionNotFound) || errors.Is(err, audit.ErrTopicNotFound) || !strings.Contains(err.Error(), "brokers [1]") {
		t.Errorf("Offsets(gen.out/0) = %v; want partition not found, on broker 1", err)
	}
}

// TestRealUncleanElection reads the dirs a real unclean election left
// (testdata/real/gen-unclean.sh, Kafka 3.6.2): broker 1 held offsets 5-8
// alone when it was killed; broker 2, out of sync, was elected uncleanly at
// a later epoch and wrote offsets 5-6 anew. The audit reads broker 2's log
// (the leader-epoch history's last leader, although shorter), and the
// divergence names both brokers: different records at 5-6, and 7-8 that
// broker 2 lacks.
func TestRealUncleanElection(t *testing.T) {
	root := filepath.Join("testdata", "real", "kafka-3.6.2-unclean")
	n1, n2, n100 := filepath.Join(root, "n1"), filepath.Join(root, "n2"), filepath.Join(root, "n100")
	d := mustOpen(t, n1, n2, n100)
	ctx := t.Context()
	tp := audit.TopicPartition{Topic: "u.orders", Partition: 0}
	if got := d.Replicas(tp); len(got) != 2 || !strings.HasPrefix(got[0], n2) {
		t.Fatalf("replicas %v, want broker 2's first", got)
	}
	recs := collectAll(t, d, tp, 0, -1)
	if len(recs) != 7 || string(recs[5].Value) != "wave 3 #0" {
		t.Fatalf("read %d records, offset 5 %q; want broker 2's 7, offset 5 from wave 3", len(recs), recs[min(5, len(recs)-1)].Value)
	}
	fs, err := d.Divergence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 {
		t.Fatalf("divergence %+v, want 2 findings", fs)
	}
	r1, r2 := filepath.Join(n1, "u.orders-0"), filepath.Join(n2, "u.orders-0")
	want := []struct {
		offset, count int64
		detail        string
	}{
		{5, 2, "replicas " + r2 + " (broker 2) and " + r1 + " (broker 1) hold different records at offsets 5-6"},
		{7, 2, "replica " + r2 + " (broker 2) lacks offsets 7-8 (2 records) that replica " + r1 + " (broker 1) holds"},
	}
	for i, w := range want {
		f := fs[i]
		if f.Cause != audit.CauseTruncated || f.Topic != tp.Topic || f.Offset != w.offset || f.Count != w.count || !strings.Contains(f.Detail, w.detail) {
			t.Errorf("finding %d: %+v; want truncated at %d (%d) %q", i, f, w.offset, w.count, w.detail)
		}
		if !strings.Contains(f.Detail, "the audit reads replica "+r2+" (broker 2) (leader epoch 3") {
			t.Errorf("finding %d does not say the audit reads broker 2's replica: %q", i, f.Detail)
		}
	}
	ts, err := d.Topics(ctx)
	if err != nil || len(ts) != 1 || ts[0].ReplicationFactor != 2 || ts[0].Configs["unclean.leader.election.enable"] != "false" {
		t.Errorf("topics %+v, %v; want u.orders with RF 2 and its overrides from the controller's metadata log", ts, err)
	}
	if _, err := d.GroupOffsets(ctx, "any"); !errors.Is(err, audit.ErrGroupNotFound) {
		t.Errorf("GroupOffsets on a cluster that never had a group = %v", err)
	}
	// broker 1, killed, alone: its checkpointed HW (5) trails its log (9)
	u := mustOpen(t, n1).Unknowns(ctx)
	if len(u) != 2 || !strings.Contains(u[1], "log dir "+n1+" was not shut down cleanly") || !strings.Contains(u[1], "on 1 partitions read from it, 4 offsets") {
		t.Errorf("unknowns of the killed broker's dir: %q", u)
	}
	if u := d.Unknowns(ctx); len(u) != 1 {
		t.Errorf("unknowns with broker 2's log read: %q", u)
	}
}

// TestEmptyCheckpoints: Kafka creates its checkpoint files empty and a
// broker killed before its first flush leaves them so; they read as no
// entries, as Kafka reads them.
func TestEmptyCheckpoints(t *testing.T) {
	root := t.TempDir()
	writeLogDir(t, root, sourcetest.Fixture())
	for _, p := range []string{LogStartCheckpoint, ReplicationCheckpoint, filepath.Join(tp0.Topic+"-0", LeaderEpochCheckpoint)} {
		if err := os.WriteFile(filepath.Join(root, p), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := mustOpen(t, root)
	if p := d.Problems(); len(p) != 0 {
		t.Errorf("problems %+v", p)
	}
	if e, err := d.LeaderEpochs(tp0); err != nil || len(e) != 0 {
		t.Errorf("leader epochs %+v, %v", e, err)
	}
}

// TestDivergenceCountsOnce: after an unclean election the read replica
// (broker 3, the new leader) lacks what the old leader and its follower
// (brokers 1 and 2) both hold. The range is one finding naming both, so a
// lost offset counts once whatever the replication factor; where only one
// of them holds an offset, that part is its own finding. A replica whose
// broker was killed (no clean-shutdown marker) with a checkpointed HW below
// its log end makes the detail say that whether it acknowledged the
// records above it is not known.
func TestDivergenceCountsOnce(t *testing.T) {
	recs := sourcetest.Fixture()
	upTo := func(end int64) []audit.Record {
		var out []audit.Record
		for _, r := range recs {
			if r.TP() != tp0 || r.Offset < end {
				out = append(out, r)
			}
		}
		return out
	}
	setup := func(t *testing.T, end2 int64) (b1, b2, b3 string) {
		b1, b2, b3 = t.TempDir(), t.TempDir(), t.TempDir()
		writeLogDir(t, b1, recs)
		writeLogDir(t, b2, upTo(end2))
		writeLogDir(t, b3, upTo(8))
		for i, b := range []string{b1, b2, b3} {
			writeMeta(t, b, fmt.Sprintf("#\nnode.id=%d\nversion=1\ncluster.id=x\n", i+1))
			if err := os.WriteFile(filepath.Join(b, CleanShutdownFile), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeEpochs(t, b1, tp0, "0\n1\n4 0\n")
		writeEpochs(t, b2, tp0, "0\n1\n4 0\n")
		writeEpochs(t, b3, tp0, "0\n2\n4 0\n5 8\n")
		return b1, b2, b3
	}
	rep := func(b string) string { return filepath.Join(b, tp0.Topic+"-0") }
	summary := func(fs []audit.Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, fmt.Sprintf("%s@%d+%d", f.Cause, f.Offset, f.Count))
		}
		return out
	}

	t.Run("both hold the range", func(t *testing.T) {
		b1, b2, b3 := setup(t, 10)
		fs, err := mustOpen(t, b1, b2, b3).Divergence(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(fs); !slices.Equal(got, []string{"truncated@8+2"}) {
			t.Fatalf("findings %v, want one truncated@8+2", got)
		}
		want := "replica " + rep(b3) + " (broker 3) lacks offsets 8-9 (2 records) that replicas " + rep(b1) + " (broker 1) and " + rep(b2) + " (broker 2) hold"
		if !strings.Contains(fs[0].Detail, want) {
			t.Errorf("detail %q lacks %q", fs[0].Detail, want)
		}
		if strings.Contains(fs[0].Detail, "not known") {
			t.Errorf("detail %q: every broker shut down cleanly", fs[0].Detail)
		}
	})
	t.Run("one holds more", func(t *testing.T) {
		b1, b2, b3 := setup(t, 9)
		fs, err := mustOpen(t, b1, b2, b3).Divergence(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(fs); !slices.Equal(got, []string{"truncated@8+1", "truncated@9+1"}) {
			t.Fatalf("findings %v, want truncated@8+1 (brokers 1 and 2) and @9+1 (broker 1)", got)
		}
		if !strings.Contains(fs[0].Detail, "replicas "+rep(b1)+" (broker 1) and "+rep(b2)+" (broker 2) hold") ||
			!strings.Contains(fs[1].Detail, "that replica "+rep(b1)+" (broker 1) holds") {
			t.Errorf("details %q, %q", fs[0].Detail, fs[1].Detail)
		}
	})
	t.Run("stale checkpoint of a killed broker", func(t *testing.T) {
		b1, b2, b3 := setup(t, 10)
		for _, b := range []string{b1, b2} {
			if err := os.Remove(filepath.Join(b, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			// the last flush before the kill -9: HW 8, the log goes to 10
			if err := os.WriteFile(filepath.Join(b, ReplicationCheckpoint), []byte("0\n1\n"+tp0.Topic+" 0 8\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		fs, err := mustOpen(t, b1, b2, b3).Divergence(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got := summary(fs); !slices.Equal(got, []string{"truncated@8+2"}) {
			t.Fatalf("findings %v, want one truncated@8+2", got)
		}
		for _, want := range []string{"; above the high watermark 8",
			rep(b1) + " (broker 1) was not shut down cleanly: its checkpointed high watermark 8 trails its log end 10, so whether it acknowledged offsets 8-9 is not known",
			rep(b2) + " (broker 2) was not shut down cleanly"} {
			if !strings.Contains(fs[0].Detail, want) {
				t.Errorf("detail %q lacks %q", fs[0].Detail, want)
			}
		}
	})
}
