package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// writeKeys are the requests a read-only auditor must never send.
var writeKeys = []kmsg.Key{
	kmsg.Produce, kmsg.OffsetCommit, kmsg.TxnOffsetCommit, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat,
	kmsg.LeaveGroup, kmsg.DeleteRecords, kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions,
	kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs, kmsg.InitProducerID, kmsg.AddPartitionsToTxn,
	kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.WriteTxnMarkers, kmsg.DeleteGroups, kmsg.OffsetDelete,
	kmsg.ElectLeaders, kmsg.AlterPartitionAssignments,
}

// requestLog records, while on, every request key a kfake cluster sees and
// the Metadata requests that allow topic auto-creation. It observes only:
// kfake handles every request itself.
type requestLog struct {
	mu         sync.Mutex
	on         bool
	seen       map[string]int
	autoCreate []string
}

// watch installs an observer on every request key. Call it after the
// cluster is seeded: seeding writes.
func watch(c *kfake.Cluster) *requestLog {
	l := &requestLog{seen: map[string]int{}}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		c.ControlKey(k, func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			l.mu.Lock()
			defer l.mu.Unlock()
			if !l.on {
				return nil, nil, false
			}
			l.seen[kmsg.NameForKey(req.Key())]++
			if m, ok := req.(*kmsg.MetadataRequest); ok && m.AllowAutoTopicCreation {
				var topics []string
				for _, t := range m.Topics {
					if t.Topic != nil {
						topics = append(topics, *t.Topic)
					}
				}
				l.autoCreate = append(l.autoCreate, strings.Join(topics, ","))
			}
			return nil, nil, false
		})
	}
	return l
}

// record starts a fresh recording.
func (l *requestLog) record() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on, l.seen, l.autoCreate = true, map[string]int{}, nil
}

// stop ends the recording and returns what it saw.
func (l *requestLog) stop() (seen map[string]int, autoCreate []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = false
	return l.seen, l.autoCreate
}

func keysOf(m map[string]int) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestSafetyReadOnly runs every command that reads a live cluster against
// a seeded kfake broker and checks, request by request, that none writes.
func TestSafetyReadOnly(t *testing.T) {
	c, bs := seededCluster(t, 120)
	spec := writeSafetySpec(t)
	topo := filepath.Join(filepath.Dir(spec), "topology.txt")
	before := c.GroupInfo("shop")
	if before == nil || len(before.Commits) == 0 {
		t.Fatal("the seeded group shop has no committed offsets")
	}
	log := watch(c)
	capture := filepath.Join(t.TempDir(), "bundle")

	for _, tt := range []struct {
		name  string
		args  []string
		fetch bool // the command must read records
	}{
		{"diff keyless", []string{"diff", "--app-id", "shop", "--format", "json"}, true},
		{"diff with spec", []string{"diff", "--spec", spec, "--format", "md"}, true},
		{"diff with spec to file", []string{"diff", "--spec", spec, "--output", filepath.Join(t.TempDir(), "r.json")}, true},
		{"diff unknown app", []string{"diff", "--app-id", "nosuch-app", "--format", "json"}, false},
		{"capture", []string{"capture", "--app-id", "shop", "--out", capture}, true},
		{"capture resumed", []string{"capture", "--app-id", "shop", "--out", capture}, false},
		{"capture missing topic", []string{"capture", "--app-id", "shop", "--topic", "nosuch-topic", "--out", filepath.Join(t.TempDir(), "b")}, false},
		{"capture bounded", []string{"capture", "--app-id", "shop", "--max-bytes", "2K", "--since", "24h", "--out", filepath.Join(t.TempDir(), "b2")}, true},
		{"diff against the capture", []string{"diff", "--spec", spec, "--baseline-snapshot", capture, "--partitions", "0-1", "--format", "csv"}, true},
		{"ledger source", []string{"ledger", "--topic", "orders-v1", "--format", "json"}, true},
		{"ledger no cross-check", []string{"ledger", "--topic", "order-status", "--no-cross-check"}, true},
		{"ledger output with offsets", []string{"ledger", "--topic", "order-status", "--offsets", "0-20", "--value-serde", "json"}, true},
		{"ledger repartition", []string{"ledger", "--topic", "shop-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition", "--partition", "1", "--format", "csv"}, true},
		{"ledger missing topic", []string{"ledger", "--topic", "nosuch-topic"}, false},
		{"txns", []string{"txns", "--app-id", "shop", "--format", "json"}, false},
		{"topology", []string{"topology", "--app-id", "shop", "--topology", topo, "--format", "json"}, false},
		{"topology discovered", []string{"topology", "--app-id", "shop"}, false},
		{"init", []string{"init", "--app-id", "shop"}, false},
		{"init with topology", []string{"init", "--app-id", "shop", "--topology", topo}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log.record()
			out, errOut, code := runCLI(t, append(tt.args, "--bootstrap-server", bs)...)
			seen, auto := log.stop()
			t.Logf("exit %d; requests %v", code, seen)
			if code == exitUsage && (strings.Contains(errOut, "not built") || strings.Contains(errOut, "live cluster only") ||
				strings.Contains(errOut, "flag provided but not defined")) {
				t.Fatalf("cannot run against a live cluster yet: %s", errOut)
			}
			if strings.Contains(errOut, "panic") {
				t.Fatalf("panic: %s", errOut)
			}
			for _, k := range writeKeys {
				if n := seen[k.Name()]; n > 0 {
					t.Errorf("sent %d %s requests", n, k.Name())
				}
			}
			if len(auto) > 0 {
				t.Errorf("Metadata requests allow topic auto-creation: %q", auto)
			}
			if seen["Metadata"] == 0 && seen["ApiVersions"] == 0 {
				t.Errorf("no request seen at all (is the observer on?): %v", keysOf(seen))
			}
			if tt.fetch && seen["Fetch"] == 0 {
				t.Errorf("no Fetch request: %v; exit %d, stderr %s, stdout %.300s", keysOf(seen), code, errOut, out)
			}
		})
	}
	for _, topic := range []string{"nosuch-topic", "nosuch-app-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition"} {
		if c.TopicInfo(topic) != nil {
			t.Errorf("topic %s exists after the audit", topic)
		}
	}
	after := c.GroupInfo("shop")
	if after == nil || len(after.Members) != 0 || !reflect.DeepEqual(after.Commits, before.Commits) {
		t.Errorf("group shop changed: before %+v, after %+v", before, after)
	}
}

// treeState is every file and directory under a root: path, mode, size,
// modification time and content hash.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum = sha256Hex(b)
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fmt.Sprintf("%v %d %d %s", info.Mode(), info.Size(), info.ModTime().UnixNano(), sum)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// copyTree copies the files under src into a fresh directory.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestSafetyReadOnlyOnDisk reads broker log dirs and a snapshot with every
// command that takes them, and checks that not a byte, a file or a
// timestamp under them changed.
func TestSafetyReadOnlyOnDisk(t *testing.T) {
	logdir := copyTree(t, bad("logdir/good"))
	torn := copyTree(t, bad("logdir/torn-tail"))
	snap := copyTree(t, bad("snapshot/with-schemas"))
	spec := bad("spec/good/kaudit.yaml")
	// a broker's log dir: meta.properties and partition dirs
	broker := copyTree(t, bad("logdir/good"))
	if err := os.WriteFile(filepath.Join(broker, "meta.properties"), []byte("node.id=1\nversion=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reports := copyTree(t, bad("reports"))
	rep := filepath.Join(reports, "clean.json")
	specs := copyTree(t, bad("spec/good"))
	specCopy := filepath.Join(specs, "kaudit.yaml")
	before := map[string]map[string]string{logdir: treeState(t, logdir), torn: treeState(t, torn), snap: treeState(t, snap),
		broker: treeState(t, broker), reports: treeState(t, reports), specs: treeState(t, specs)}
	refused := map[string]bool{}
	for _, args := range [][]string{
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", snap},
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", filepath.Join(snap, "inner")},
		{"capture", "--snapshot", filepath.Join(snap, "."), "--app-id", "shop", "--out", filepath.Dir(snap)},
		{"capture", "--log-dir", logdir, "--app-id", "events", "--topic", "events", "--out", logdir},
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", broker},
		{"capture", "--log-dir", logdir, "--app-id", "events", "--topic", "events", "--out", broker},
		{"diff", "--snapshot", snap, "--spec", spec, "--output", filepath.Join(snap, "report.md")},
		{"diff", "--snapshot", snap, "--spec", specCopy, "--output", specCopy},
		{"diff", "--log-dir", logdir, "--app-id", "events", "--output", filepath.Join(logdir, "events-0", "r.json")},
		{"diff", "--snapshot", snap, "--spec", spec, "--spill-dir", snap},
		{"diff", "--snapshot", snap, "--spec", spec, "--baseline", rep, "--format", "json", "--output", rep},
		{"merge", "--output", rep, rep},
	} {
		refused[strings.Join(args, " ")] = true
	}
	for _, args := range [][]string{
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", snap},
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", filepath.Join(snap, "inner")},
		{"capture", "--snapshot", filepath.Join(snap, "."), "--app-id", "shop", "--out", filepath.Dir(snap)},
		{"capture", "--log-dir", logdir, "--app-id", "events", "--topic", "events", "--out", logdir},
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", broker},
		{"capture", "--log-dir", logdir, "--app-id", "events", "--topic", "events", "--out", broker},
		{"diff", "--snapshot", snap, "--spec", spec, "--output", filepath.Join(snap, "report.md")},
		{"diff", "--snapshot", snap, "--spec", specCopy, "--output", specCopy},
		{"diff", "--log-dir", logdir, "--app-id", "events", "--output", filepath.Join(logdir, "events-0", "r.json")},
		{"diff", "--snapshot", snap, "--spec", spec, "--spill-dir", snap},
		{"diff", "--snapshot", snap, "--spec", spec, "--baseline", rep, "--format", "json", "--output", rep},
		{"merge", "--output", rep, rep},
		{"merge", rep},
		{"capture", "--snapshot", snap, "--app-id", "shop", "--out", filepath.Join(t.TempDir(), "copy")},
		{"capture", "--log-dir", logdir, "--app-id", "events", "--topic", "events", "--out", filepath.Join(t.TempDir(), "copy")},
		{"ledger", "--log-dir", logdir, "--topic", "events", "--offsets", "0-5", "--value-serde", "json"},
		{"ledger", "--log-dir", torn, "--topic", "events", "--format", "json"},
		{"ledger", "--log-dir", logdir, "--log-dir", torn, "--topic", "events"},
		{"diff", "--log-dir", logdir, "--app-id", "events"},
		{"diff", "--log-dir", torn, "--app-id", "events"},
		{"ledger", "--snapshot", snap, "--topic", "orders-v1", "--offsets", "0-9", "--value-serde", "avro"},
		{"diff", "--snapshot", snap, "--spec", spec, "--format", "md"},
		{"diff", "--snapshot", snap, "--app-id", "shop", "--baseline-snapshot", snap},
		{"txns", "--snapshot", snap, "--app-id", "shop"},
		{"topology", "--snapshot", snap, "--app-id", "shop"},
		{"init", "--snapshot", snap, "--app-id", "shop"},
	} {
		name := strings.Join(args[:2], " ")
		if refused[strings.Join(args, " ")] || args[0] == "capture" {
			name = strings.Join(args, " ")
		}
		t.Run(name, func(t *testing.T) {
			res := runGuarded(t, args...)
			t.Logf("exit %d, stderr %s", res.code, strings.TrimSpace(res.stderr))
			if res.panicked != nil {
				t.Fatalf("panic: %v", res.panicked)
			}
			if refused[strings.Join(args, " ")] && res.code != exitUsage {
				t.Errorf("exit %d, want %d: the output overlaps an input or is a broker's log dir", res.code, exitUsage)
			}
			for root, want := range before {
				if got := treeState(t, root); !reflect.DeepEqual(got, want) {
					t.Errorf("%s changed:\nbefore %v\nafter  %v", root, want, got)
				}
			}
		})
	}
}
