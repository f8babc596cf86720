package offsetslog_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/offsetslog"
	"github.com/kaudit/kaudit/audit/segment"
)

// realDirs are the real brokers' log dirs audit/segment keeps as fixtures
// (Apache Kafka 3.6.2 and 4.1.1; see its testdata/real/README.md).
func realDirs(t testing.TB) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("..", "segment", "testdata", "real", "kafka-*-logdir"))
	if len(dirs) == 0 {
		t.Fatal("no ../segment/testdata/real/kafka-*-logdir fixture")
	}
	return dirs
}

// realRecords are the keys and values of those brokers' __consumer_offsets
// records: the fuzz seeds.
func realRecords(f *testing.F) [][2][]byte {
	var out [][2][]byte
	for _, dir := range realDirs(f) {
		d, err := segment.OpenDirs(dir)
		if err != nil {
			f.Fatal(err)
		}
		n, err := d.Partitions(f.Context(), audit.ConsumerOffsetsTopic)
		if err != nil {
			f.Fatal(err)
		}
		for p := range n {
			for rec, err := range d.Records(f.Context(), audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic, Partition: p}, 0, 1<<62) {
				if err != nil {
					f.Fatal(err)
				}
				if !rec.Batch.Control {
					out = append(out, [2][]byte{rec.Key, rec.Value})
				}
			}
		}
	}
	return out
}

// FuzzParse: no panic, and a commit value that decodes re-encodes to the
// same value.
func FuzzParse(f *testing.F) {
	for _, kv := range realRecords(f) {
		f.Add(kv[0], kv[1])
	}
	f.Add((&kmsg.OffsetCommitKey{Group: "g", Topic: "t"}).AppendTo(nil), []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 'm', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r, err := offsetslog.Parse(key, value)
		if err != nil {
			return
		}
		if r.Commit != nil {
			var again kmsg.OffsetCommitValue
			if err := again.ReadFrom(r.Commit.AppendTo(nil)); err != nil || again.Offset != r.Commit.Offset || again.Metadata != r.Commit.Metadata {
				t.Fatalf("commit %+v re-encodes to %+v, %v", r.Commit, again, err)
			}
		}
		if r.Kind == offsetslog.Commit && r.TP.Partition < 0 {
			t.Fatalf("negative partition accepted: %+v", r)
		}
	})
}

// TestRealHistory replays the real brokers' groups through the three
// paths kaudit has (the log dirs' CommitHistory and GroupLog, and Read
// over any source) and checks them against what the live broker said
// before it stopped: the last effective commit of every partition is the
// committed offset the broker answered, a transactional commit took
// effect at its COMMIT marker with that marker's time (gen-app-0_0:
// 1 → 7), the aborted
// commit (gen-app-0_1: 0 → 99) is listed as aborted, the open one
// (gen-app-1_0: 0 → 8) as pending.
func TestRealHistory(t *testing.T) {
	for _, dir := range realDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			d, err := segment.OpenDirs(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, group := range []string{"gen-app", "gen-eos"} {
				h, err := d.CommitHistory(t.Context(), group)
				if err != nil {
					t.Fatal(err)
				}
				generic, err := offsetslog.Read(t.Context(), d, group)
				if err != nil {
					t.Fatal(err)
				}
				h.CleanedTo, h.Notes = -1, nil
				if !reflect.DeepEqual(h, generic) {
					t.Errorf("%s: the log dirs' history and Read's differ:\n%+v\n%+v", group, h, generic)
				}
				gl, err := d.GroupLog(t.Context(), group)
				if err != nil {
					t.Fatal(err)
				}
				for tp, off := range gl.Offsets {
					cs := h.Commits[tp]
					if len(cs) == 0 || cs[len(cs)-1].Offset != off || cs[len(cs)-1].Deleted {
						t.Errorf("%s %s: history %+v ends elsewhere than the committed offset %d", group, tp, cs, off)
					}
				}
				if h.Log.Partition != offsetslog.Partition(group, h.Partitions) || h.HoleOffsets != 0 || h.WholeFrom != 0 || h.Records == 0 {
					t.Errorf("%s: log %s of %d, %d records, holes %d from %d: want the group's partition, read whole", group, h.Log, h.Partitions, h.Records, h.HoleOffsets, h.WholeFrom)
				}
				for tp, cs := range h.Commits {
					for i, c := range cs {
						if i > 0 && c.At <= cs[i-1].LastAt {
							t.Errorf("%s %s: commit %d at %d does not follow %d", group, tp, i, c.At, cs[i-1].LastAt)
						}
						if c.Transactional && (c.ProducerID < 0 || c.At <= c.Record) {
							t.Errorf("%s %s: transactional commit %+v: want its producer and its marker after its record", group, tp, c)
						}
						if !c.Transactional && (c.ProducerID != -1 || c.At != c.Record) {
							t.Errorf("%s %s: plain commit %+v", group, tp, c)
						}
						if c.Time <= 0 {
							t.Errorf("%s %s: commit %+v has no time", group, tp, c)
						}
					}
				}
				if group != "gen-app" {
					if len(h.Generations) == 0 || !h.Generations[len(h.Generations)-1].Empty() {
						t.Errorf("gen-eos generations %+v: want the member's generation, then empty", h.Generations)
					}
					continue
				}
				orders0 := audit.TopicPartition{Topic: "gen.orders", Partition: 0}
				if a := h.Aborted[orders0]; len(a) != 1 || a[0].Offset != 99 {
					t.Errorf("gen-app aborted %+v: want the commit of 99", h.Aborted)
				}
				if p := h.Pending[orders0]; len(p) != 1 || p[0].Offset != 8 {
					t.Errorf("gen-app pending %+v: want the open commit of 8", h.Pending)
				}
				orders1 := audit.TopicPartition{Topic: "gen.orders", Partition: 1}
				if cs := h.Commits[orders1]; len(cs) != 2 || !cs[1].Transactional || cs[1].Offset != 7 {
					t.Errorf("gen-app %s: %+v: want the plain commit of 3, then gen-app-0_0's commit of 7", orders1, cs)
				}
			}
		})
	}
}
