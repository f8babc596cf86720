package segment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/segment/segmenttest"
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
	recs := segmenttest.Fixture()
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
