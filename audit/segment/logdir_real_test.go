package segment

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/kaudit/kaudit/internal/golden"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/offsetslog"
)

// liveAnswers is what testdata/real/gen asked the live broker before it
// stopped (live.json).
type liveAnswers struct {
	Version      string                            `json:"version"`
	Group        string                            `json:"group"`
	GroupState   string                            `json:"group_state"`
	Offsets      map[string]int64                  `json:"offsets"`
	Metadata     map[string]string                 `json:"metadata"`
	Transactions []audit.Transaction               `json:"transactions"`
	Producers    map[string][]audit.Producer       `json:"producers"`
	Topics       []audit.TopicInfo                 `json:"topics"`
	Partitions   map[string]audit.PartitionOffsets `json:"partition_offsets"`
	Pending      map[string]int64                  `json:"pending"`
	Groups       map[string]struct {
		State    string            `json:"state"`
		Members  int               `json:"members"`
		Offsets  map[string]int64  `json:"offsets"`
		Metadata map[string]string `json:"metadata"`
	} `json:"groups"`
}

func realLogDirs(t *testing.T) []string {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "real", "kafka-*-logdir"))
	if len(dirs) == 0 {
		t.Fatal("no testdata/real/kafka-*-logdir fixture (run testdata/real/gen.sh VERSION)")
	}
	return dirs
}

func readLive(t *testing.T, dir string) liveAnswers {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "live.json"))
	if err != nil {
		t.Fatal(err)
	}
	var l liveAnswers
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

func tpKeys[V any](t *testing.T, m map[string]V) map[audit.TopicPartition]V {
	t.Helper()
	out := map[audit.TopicPartition]V{}
	for k, v := range m {
		tp, err := audit.ParseTopicPartition(k)
		if err != nil {
			t.Fatal(err)
		}
		out[tp] = v
	}
	return out
}

// TestRealLogDirAnswers checks that real brokers' log dirs (3.6.2 and 4.1.1,
// made by testdata/real/gen.sh) give offline what the live broker answered
// just before it stopped: the group's committed offsets (plain, deleted,
// transactional committed, aborted and left open), the transactions, the
// producers, the topics with their overrides, and the partition offsets.
func TestRealLogDirAnswers(t *testing.T) {
	for _, dir := range realLogDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			live := readLive(t, dir)
			d := mustOpen(t, dir)
			ctx := t.Context()

			gl, err := d.GroupLog(ctx, live.Group)
			if err != nil {
				t.Fatalf("GroupLog(%s): %v", live.Group, err)
			}
			if gl.Partition != CoordinatorPartition(live.Group, 4) || gl.Partition != 0 {
				t.Errorf("group partition %d, want 0 (Kafka's hash of %q over 4 partitions)", gl.Partition, live.Group)
			}
			if want := tpKeys(t, live.Offsets); !maps.Equal(gl.Offsets, want) {
				t.Errorf("offsets %v, the broker said %v", gl.Offsets, want)
			}
			if want := tpKeys(t, live.Metadata); !maps.Equal(gl.Metadata, want) {
				t.Errorf("metadata %v, the broker said %v", gl.Metadata, want)
			}
			if gl.State != live.GroupState || gl.Members != 0 {
				t.Errorf("state %q with %d members, the broker said %q with none", gl.State, gl.Members, live.GroupState)
			}
			var pending = map[audit.TopicPartition]int64{}
			for _, p := range gl.Pending {
				if p.Committed {
					t.Errorf("pending commit %+v counted: its transaction is open", p)
				}
				pending[p.TP] = p.Offset
			}
			if want := tpKeys(t, live.Pending); !maps.Equal(pending, want) {
				t.Errorf("pending commits %v, want %v", pending, want)
			}
			// a GroupTransactSession's group (offsets committed in
			// transactions by a member, as Streams does) and, on 4.x, a
			// KIP-848 consumer group whose member was in it at the stop
			if len(live.Groups) == 0 {
				t.Error("live.json has no other groups (regenerate with gen.sh)")
			}
			for g, want := range live.Groups {
				got, err := d.GroupOffsets(ctx, g)
				if err != nil {
					t.Errorf("GroupOffsets(%s): %v", g, err)
					continue
				}
				if !maps.Equal(got.Offsets, tpKeys(t, want.Offsets)) || !maps.Equal(got.Metadata, tpKeys(t, want.Metadata)) {
					t.Errorf("%s: offsets %v %q, the broker said %v %q", g, got.Offsets, got.Metadata, want.Offsets, want.Metadata)
				}
				if got.State != want.State || got.Members != want.Members {
					t.Errorf("%s: state %s with %d members, the broker said %s with %d", g, got.State, got.Members, want.State, want.Members)
				}
			}
			if _, err := d.GroupOffsets(ctx, "no-such-group"); !errors.Is(err, audit.ErrGroupNotFound) {
				t.Errorf("GroupOffsets(no-such-group) = %v, want ErrGroupNotFound", err)
			}

			txns, err := d.Transactions(ctx, "")
			if err != nil {
				t.Fatalf("Transactions: %v", err)
			}
			if !reflect.DeepEqual(txns, live.Transactions) {
				t.Errorf("transactions\n%+v\nthe broker said\n%+v", txns, live.Transactions)
			}
			if some, err := d.Transactions(ctx, live.Group+"-1_"); err != nil || len(some) != 1 || some[0].State != "Ongoing" {
				t.Errorf("Transactions(%s-1_) = %+v, %v; want the open one", live.Group, some, err)
			}

			tps := slices.Collect(maps.Keys(tpKeys(t, live.Partitions)))
			prods, err := d.Producers(ctx, tps)
			if err != nil {
				t.Fatalf("Producers: %v", err)
			}
			for tp, want := range tpKeys(t, live.Producers) {
				if !reflect.DeepEqual(prods[tp], want) {
					t.Errorf("producers of %s\n%+v\nthe broker said\n%+v", tp, prods[tp], want)
				}
			}
			for tp, want := range tpKeys(t, live.Partitions) {
				if o, err := d.Offsets(ctx, tp); err != nil || o != want {
					t.Errorf("Offsets(%s) = %+v, %v; the broker said %+v", tp, o, err, want)
				}
			}

			topics, err := d.Topics(ctx)
			if err != nil {
				t.Fatalf("Topics: %v", err)
			}
			if len(topics) != len(live.Topics) {
				t.Errorf("topics %+v, the broker listed %+v", topics, live.Topics)
			}
			for i := range min(len(topics), len(live.Topics)) {
				got, want := topics[i], live.Topics[i]
				if got.Name != want.Name || got.Partitions != want.Partitions || got.ReplicationFactor != want.ReplicationFactor {
					t.Errorf("topic %+v, the broker said %+v", got, want)
				}
				for k, v := range got.Configs {
					if want.Configs[k] != v {
						t.Errorf("%s: %s=%s, the broker said %q", got.Name, k, v, want.Configs[k])
					}
				}
			}
			// the overrides gen set, the last change winning
			wantOverrides := map[string]map[string]string{
				"gen.orders":              {"cleanup.policy": "delete", "retention.ms": "172800000", "unclean.leader.election.enable": "true"},
				"gen-app-store-changelog": {"cleanup.policy": "compact", "min.compaction.lag.ms": "0", "segment.bytes": "1048576"},
				"gen.out":                 {},
				"gen.eos-out":             {},
			}
			if live.Version >= "4" {
				// Kafka 4 writes min.insync.replicas as a cluster-wide
				// dynamic config when it formats (KIP-966)
				for _, cs := range wantOverrides {
					cs["min.insync.replicas"] = "1"
				}
			}
			for _, ti := range topics {
				if !maps.Equal(ti.Configs, wantOverrides[ti.Name]) {
					t.Errorf("%s configs %v, want the overrides %v", ti.Name, ti.Configs, wantOverrides[ti.Name])
				}
			}
			// the clock: when the broker stopped (gen sleeps 7 s after its
			// last transaction, then the broker shuts down)
			lastStart := slices.MaxFunc(live.Transactions, func(a, b audit.Transaction) int { return cmp.Compare(a.StartTimestamp, b.StartTimestamp) }).StartTimestamp
			if now := d.Now().UnixMilli(); now < lastStart+7000 || now > lastStart+60000 {
				t.Errorf("Now() = %v, %d ms after the last transaction started; want when the broker stopped, 7-60 s after", d.Now(), now-lastStart)
			}
			if m, err := d.Metadata(ctx); err != nil || m == nil || m.Snapshot == "" {
				t.Errorf("Metadata: %+v, %v; want a replay from a snapshot", m, err)
			}
		})
	}
}

// decodedInternal is the golden dump of a fixture's internal records.
type decodedInternal struct {
	Offsets     []goldenRecord `json:"consumer_offsets"`
	Txns        []goldenRecord `json:"transaction_state"`
	Metadata    []goldenRecord `json:"cluster_metadata"`
	CheckpointV string         `json:"metadata_snapshot"`
}

type goldenRecord struct {
	TP     string `json:"tp"`
	Offset int64  `json:"offset"`
	Txn    bool   `json:"txn,omitempty"`
	PID    int64  `json:"pid,omitempty"`
	Marker string `json:"marker,omitempty"`
	Record any    `json:"record,omitempty"`
}

// TestRealInternalRecordsGolden decodes every record of the fixtures'
// __consumer_offsets, __transaction_state and __cluster_metadata logs and
// compares them with testdata/real/kafka-*-logdir.golden.json (-update
// rewrites it).
func TestRealInternalRecordsGolden(t *testing.T) {
	for _, dir := range realLogDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			d := mustOpen(t, dir)
			var got decodedInternal
			for _, topic := range []string{ConsumerOffsetsTopic, TransactionStateTopic, ClusterMetadataTopic} {
				n, err := d.Partitions(t.Context(), topic)
				if err != nil {
					t.Fatal(err)
				}
				for p := range n {
					tp := audit.TopicPartition{Topic: topic, Partition: p}
					for _, rec := range collectAll(t, d, tp, 0, 1<<62) {
						g := goldenRecord{TP: tp.String(), Offset: rec.Offset, Txn: rec.Batch.Transactional}
						if rec.Batch.ProducerID >= 0 {
							g.PID = rec.Batch.ProducerID
						}
						var err error
						switch {
						case rec.Batch.Control:
							g.Marker = "control"
							if rec.Marker != nil {
								g.Marker = rec.Marker.Type.String()
							}
						case topic == ConsumerOffsetsTopic:
							g.Record, err = offsetslog.Parse(rec.Key, rec.Value)
						case topic == TransactionStateTopic:
							g.Record, err = ParseTxnLogRecord(rec.Key, rec.Value)
						default:
							g.Record, err = ParseMetadataRecord(rec.Value)
						}
						if err != nil {
							t.Errorf("%s at %d: %v", tp, rec.Offset, err)
						}
						switch topic {
						case ConsumerOffsetsTopic:
							got.Offsets = append(got.Offsets, g)
						case TransactionStateTopic:
							got.Txns = append(got.Txns, g)
						default:
							got.Metadata = append(got.Metadata, g)
						}
					}
				}
			}
			m, err := d.Metadata(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			got.CheckpointV = filepath.Base(m.Snapshot)
			b, err := json.MarshalIndent(got, "", " ")
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, '\n')
			golden.Check(t, dir+".golden.json", b)
		})
	}
}

// TestRealLogDirReadOnly audits a read-only copy of each fixture through
// every offline answer and checks that no file changed, appeared or
// vanished: kaudit never writes to, locks or modifies a log dir.
func TestRealLogDirReadOnly(t *testing.T) {
	for _, src := range realLogDirs(t) {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "logdir")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			before := treeState(t, dir)
			setReadOnly(t, dir, true)
			t.Cleanup(func() { setReadOnly(t, dir, false) })
			d := mustOpen(t, dir)
			ctx := t.Context()
			if _, err := d.GroupOffsets(ctx, "gen-app"); err != nil {
				t.Errorf("GroupOffsets on a read-only copy: %v", err)
			}
			if _, err := d.Transactions(ctx, ""); err != nil {
				t.Errorf("Transactions on a read-only copy: %v", err)
			}
			ts, err := d.Topics(ctx)
			if err != nil {
				t.Errorf("Topics on a read-only copy: %v", err)
			}
			for _, ti := range ts {
				for p := range ti.Partitions {
					tp := audit.TopicPartition{Topic: ti.Name, Partition: p}
					collectAll(t, d, tp, 0, -1)
					if _, err := d.Producers(ctx, []audit.TopicPartition{tp}); err != nil {
						t.Errorf("Producers(%s): %v", tp, err)
					}
				}
			}
			if _, err := d.Divergence(ctx); err != nil {
				t.Errorf("Divergence: %v", err)
			}
			setReadOnly(t, dir, false)
			if after := treeState(t, dir); !maps.Equal(before, after) {
				t.Errorf("the log dir changed under the audit:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// treeState maps every path under dir to its mode, size and content.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		s := fmt.Sprintf("%v %d", info.Mode(), info.Size())
		if e.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			s += fmt.Sprintf(" %x", b)
		}
		out[p] = s
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func setReadOnly(t *testing.T, dir string, ro bool) {
	t.Helper()
	var paths []string
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	// directories last when locking, first when unlocking
	slices.SortFunc(paths, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	if !ro {
		slices.Reverse(paths)
	}
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			continue
		}
		mode := info.Mode().Perm()
		if ro {
			mode &^= 0o222
		} else {
			mode |= 0o200
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}
