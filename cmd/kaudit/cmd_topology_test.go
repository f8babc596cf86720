package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/internal/golden"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
)

// describeOut holds describe() texts printed by real Kafka Streams builds.
const describeOut = "../../testdata/kafka/describe/out"

func seedTopologyFile() string { return filepath.Join(describeOut, "3.6", "seed.txt") }

// checkGolden compares got with testdata/name, rewriting it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// runCLI runs kaudit in process and returns stdout, stderr and the exit
// code.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), append([]string{"kaudit"}, args...), &out, &errb)
	return out.String(), errb.String(), code
}

// topoFakeSource is an in-memory audit.Source with topics, one group and
// transactions: what discovery reads.
type topoFakeSource struct {
	topics []audit.TopicInfo
	group  *audit.GroupOffsets
	txns   []audit.Transaction
}

var _ audit.Source = (*topoFakeSource)(nil)

func (f *topoFakeSource) Partitions(_ context.Context, topic string) (int32, error) {
	for _, t := range f.topics {
		if t.Name == topic {
			return t.Partitions, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", topic, audit.ErrTopicNotFound)
}

func (f *topoFakeSource) Offsets(context.Context, audit.TopicPartition) (audit.PartitionOffsets, error) {
	return audit.PartitionOffsets{}, audit.ErrNotSupported
}

func (f *topoFakeSource) Records(context.Context, audit.TopicPartition, int64, int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) { yield(audit.Record{}, audit.ErrNotSupported) }
}

func (f *topoFakeSource) Topics(context.Context) ([]audit.TopicInfo, error) { return f.topics, nil }

func (f *topoFakeSource) GroupOffsets(_ context.Context, group string) (audit.GroupOffsets, error) {
	if f.group == nil || f.group.Group != group {
		return audit.GroupOffsets{}, fmt.Errorf("%s: %w", group, audit.ErrGroupNotFound)
	}
	return *f.group, nil
}

func (f *topoFakeSource) Transactions(_ context.Context, prefix string) ([]audit.Transaction, error) {
	var out []audit.Transaction
	for _, t := range f.txns {
		if strings.HasPrefix(t.TransactionalID, prefix) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *topoFakeSource) Producers(context.Context, []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	return nil, audit.ErrNotSupported
}

func (f *topoFakeSource) Describe() string { return "fake cluster" }

// seedCluster holds the seed app's topics, one with a compacted
// repartition topic.
func seedCluster() *topoFakeSource {
	const p = "orders-app-KSTREAM-REDUCE-STATE-STORE-00000000"
	topic := func(name string, parts int32, policy string) audit.TopicInfo {
		return audit.TopicInfo{Name: name, Partitions: parts, ReplicationFactor: 3,
			Configs: map[string]string{"cleanup.policy": policy, "min.insync.replicas": "2"}}
	}
	return &topoFakeSource{
		topics: []audit.TopicInfo{
			topic("orders-v1", 6, "delete"), topic("payments-v1", 6, "delete"), topic("shipments-v1", 6, "delete"),
			topic(p+"02-repartition", 6, "delete"), topic(p+"09-repartition", 6, "compact"), topic(p+"16-repartition", 6, "delete"),
			topic(p+"02-changelog", 6, "compact"), topic(p+"09-changelog", 6, "compact"), topic(p+"16-changelog", 6, "compact"),
			topic("order-status", 6, "delete"),
		},
		group: &audit.GroupOffsets{Group: "orders-app", State: "Empty", Offsets: map[audit.TopicPartition]int64{
			{Topic: "orders-v1", Partition: 0}: 3, {Topic: "payments-v1", Partition: 0}: 3, {Topic: "shipments-v1", Partition: 0}: 3,
		}},
		txns: []audit.Transaction{{TransactionalID: "orders-app-1f2e-1", State: "CompleteCommit", ProducerID: 7, ProducerEpoch: 2}},
	}
}

func TestTopologyCommand(t *testing.T) {
	for _, tt := range []struct {
		name   string
		args   []string
		golden string
	}{
		{"table", []string{"--topology", seedTopologyFile(), "--app-id", "orders-app"}, "topology-seed.txt"},
		{"mermaid", []string{"--topology", seedTopologyFile(), "--app-id", "orders-app", "--format", "mermaid"}, "topology-seed.mmd"},
		{"no app id", []string{"--topology", filepath.Join(describeOut, "3.6", "fk-join.txt")}, "topology-fk-join.txt"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runCLI(t, append([]string{"topology"}, tt.args...)...)
			if code != exitClean || errOut != "" {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			checkGolden(t, tt.golden, []byte(out))
		})
	}
	t.Run("json", func(t *testing.T) {
		out, _, code := runCLI(t, "topology", "--topology", seedTopologyFile(), "--app-id", "orders-app", "--format", "json")
		var doc struct {
			AppID  string `json:"app_id"`
			Layout struct {
				Stores []struct{ Changelog string } `json:"stores"`
			} `json:"layout"`
			Findings []audit.Finding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil || code != exitClean {
			t.Fatalf("exit %d, %v:\n%s", code, err, out)
		}
		if doc.AppID != "orders-app" || len(doc.Layout.Stores) != 3 || doc.Findings == nil {
			t.Errorf("doc = %+v", doc)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to show", nil, "needs --topology FILE"},
		{"not a topology", []string{"--topology", "cmd_topology.go"}, "cmd_topology.go: line 1: not a topology description"},
		{"missing file", []string{"--topology", "no-such-file.txt"}, "read topology"},
		{"bad format", []string{"--topology", seedTopologyFile(), "--format", "svg"}, `--format "svg": want table, mermaid, json`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, append([]string{"topology"}, tt.args...)...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q, want 2 and %q", code, errOut, tt.want)
			}
		})
	}
}

func TestRunTopologyWithSource(t *testing.T) {
	var out bytes.Buffer
	o := topologyOptions{TopologyFile: seedTopologyFile(), AppID: "orders-app", Format: "table"}
	if err := runTopology(t.Context(), o, seedCluster(), &out); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "topology-seed-source.txt", out.Bytes())
	for _, want := range []string{"fake cluster", "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition  cleanup.policy=delete  cleanup.policy=compact", "orders-app-1f2e-1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	t.Run("no topology, naming conventions", func(t *testing.T) {
		var out bytes.Buffer
		o := topologyOptions{AppID: "orders-app", Format: "mermaid"}
		if err := runTopology(t.Context(), o, seedCluster(), &out); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "topology-seed-naming.mmd", out.Bytes())
	})
}

// TestTopologyLive reads a seed app's topics and configs from an
// in-process broker.
func TestTopologyLive(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	compact := "compact"
	for _, tt := range []struct {
		name    string
		compact bool
	}{
		{"orders-v1", false}, {"payments-v1", false}, {"shipments-v1", false}, {"order-status", false},
		{"orders-app-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition", false},
		{"orders-app-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition", true},
		{"orders-app-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog", true},
		{"orders-app-KSTREAM-REDUCE-STATE-STORE-0000000009-changelog", true},
	} {
		var cfg map[string]*string
		if tt.compact {
			cfg = map[string]*string{"cleanup.policy": &compact}
		}
		if _, err := adm.CreateTopic(t.Context(), 3, 1, cfg, tt.name); err != nil {
			t.Fatal(err)
		}
	}
	bs := strings.Join(c.ListenAddrs(), ",")
	out, errOut, code := runCLI(t, "topology", "--topology", seedTopologyFile(), "--app-id", "orders-app", "--bootstrap-server", bs, "--format", "json")
	if code != exitClean {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var doc struct {
		Source    string `json:"source"`
		Discovery struct {
			Topics []struct {
				Name       string `json:"name"`
				Partitions int32  `json:"partitions"`
				Exists     bool   `json:"exists"`
			} `json:"topics"`
			Unknown []string `json:"unknown"`
		} `json:"discovery"`
		Findings []audit.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	present, missing := 0, 0
	for _, tp := range doc.Discovery.Topics {
		switch {
		case tp.Exists && tp.Partitions == 3:
			present++
		case !tp.Exists:
			missing++
		default:
			t.Errorf("topic %+v", tp)
		}
	}
	if doc.Source != "live "+bs || present != 8 || missing != 2 {
		t.Errorf("source %q, %d topics present, %d missing; unknown: %v", doc.Source, present, missing, doc.Discovery.Unknown)
	}
	if len(doc.Findings) != 1 || doc.Findings[0].Topic != "orders-app-KSTREAM-REDUCE-STATE-STORE-0000000009-repartition" || doc.Findings[0].Cause != audit.CauseConfigRisk {
		t.Errorf("findings = %+v", doc.Findings)
	}
	t.Run("an empty directory is no snapshot", func(t *testing.T) {
		_, errOut, code := runCLI(t, "topology", "--app-id", "a", "--snapshot", t.TempDir())
		if code != exitNotRun || !strings.Contains(errOut, "open snapshot") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}
