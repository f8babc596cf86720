package discovery

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit/topology"

	"github.com/kaudit/kaudit/audit"
)

// fakeSource is an in-memory audit.Source holding only what discovery
// reads: topics, one group and transactions.
type fakeSource struct {
	topics []audit.TopicInfo
	group  *audit.GroupOffsets
	txns   []audit.Transaction
	txnErr error
}

var _ audit.Source = (*fakeSource)(nil)

func (f *fakeSource) Partitions(_ context.Context, topic string) (int32, error) {
	for _, t := range f.topics {
		if t.Name == topic {
			return t.Partitions, nil
		}
	}
	return 0, fmt.Errorf("%s: %w", topic, audit.ErrTopicNotFound)
}

func (f *fakeSource) Offsets(context.Context, audit.TopicPartition) (audit.PartitionOffsets, error) {
	return audit.PartitionOffsets{}, audit.ErrNotSupported
}

func (f *fakeSource) Records(context.Context, audit.TopicPartition, int64, int64) iter.Seq2[audit.Record, error] {
	return func(yield func(audit.Record, error) bool) { yield(audit.Record{}, audit.ErrNotSupported) }
}

func (f *fakeSource) Topics(context.Context) ([]audit.TopicInfo, error) { return f.topics, nil }

func (f *fakeSource) GroupOffsets(_ context.Context, group string) (audit.GroupOffsets, error) {
	if f.group == nil || f.group.Group != group {
		return audit.GroupOffsets{}, fmt.Errorf("%s: %w", group, audit.ErrGroupNotFound)
	}
	return *f.group, nil
}

func (f *fakeSource) Transactions(_ context.Context, prefix string) ([]audit.Transaction, error) {
	if f.txnErr != nil {
		return nil, f.txnErr
	}
	var out []audit.Transaction
	for _, t := range f.txns {
		if strings.HasPrefix(t.TransactionalID, prefix) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (f *fakeSource) Producers(context.Context, []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	return nil, audit.ErrNotSupported
}

func (f *fakeSource) Describe() string { return "fake" }

// seedSource is a cluster holding the seed app's topics.
func seedSource() *fakeSource {
	topic := func(name string, parts int32, cfg ...string) audit.TopicInfo {
		t := audit.TopicInfo{Name: name, Partitions: parts, ReplicationFactor: 3, Configs: map[string]string{"min.insync.replicas": "2"}}
		for i := 0; i+1 < len(cfg); i += 2 {
			t.Configs[cfg[i]] = cfg[i+1]
		}
		return t
	}
	const p = "orders-app-KSTREAM-REDUCE-STATE-STORE-00000000"
	f := &fakeSource{
		topics: []audit.TopicInfo{
			topic("orders-v1", 6, "cleanup.policy", "delete", "retention.ms", "600000"),
			topic("payments-v1", 6, "cleanup.policy", "delete", "retention.ms", "604800000"),
			topic("shipments-v1", 6, "cleanup.policy", "delete", "min.insync.replicas", "1"),
			topic(p+"02-repartition", 12, "cleanup.policy", "delete", "retention.ms", "-1"),
			topic(p+"09-repartition", 12, "cleanup.policy", "compact", "retention.ms", "-1"),
			topic(p+"16-repartition", 12, "cleanup.policy", "delete", "retention.ms", "-1"),
			topic(p+"02-changelog", 12, "cleanup.policy", "compact"),
			topic(p+"09-changelog", 12, "cleanup.policy", "compact", "unclean.leader.election.enable", "true"),
			topic(p+"16-changelog", 12, "cleanup.policy", "delete"),
			topic("order-status", 12, "cleanup.policy", "delete"),
			topic("unrelated", 1),
			topic("orders-app-notes", 1),
		},
		group: &audit.GroupOffsets{Group: "orders-app", State: "Empty", Offsets: map[audit.TopicPartition]int64{
			{Topic: "orders-v1", Partition: 0}:          10,
			{Topic: "payments-v1", Partition: 0}:        10,
			{Topic: "shipments-v1", Partition: 3}:       10,
			{Topic: p + "02-repartition", Partition: 0}: 5,
		}},
		txns: []audit.Transaction{
			{TransactionalID: "orders-app-9b1c-1", State: "Ongoing"},
			{TransactionalID: "other-app-1", State: "Empty"},
			{TransactionalID: "orders-app-9b1c-0", State: "CompleteCommit"},
		},
	}
	return f
}

func TestDiscover(t *testing.T) {
	seed := parseFile(t, filepath.Join(describeDir, "3.6", "seed.txt"))
	for _, tt := range []struct {
		name        string
		topo        *topology.Topology
		wantRoles   []string
		wantUnknown []string
	}{
		{"without a topology", nil,
			[]string{"source orders-v1", "source payments-v1", "source shipments-v1",
				"repartition ...02-repartition", "repartition ...09-repartition", "repartition ...16-repartition",
				"changelog ...02-changelog", "changelog ...09-changelog", "changelog ...16-changelog"},
			[]string{"orders-app-notes starts with orders-app- but follows no internal-topic convention", "output topics: not known without a topology", "which source topic feeds which repartition topic"}},
		{"with the topology", seed,
			[]string{"source orders-v1", "source payments-v1", "source shipments-v1",
				"repartition ...02-repartition", "repartition ...09-repartition", "repartition ...16-repartition",
				"changelog ...02-changelog", "changelog ...09-changelog", "changelog ...16-changelog", "output order-status"},
			nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Discover(t.Context(), seedSource(), "orders-app", tt.topo)
			if err != nil {
				t.Fatal(err)
			}
			var roles []string
			for _, dt := range d.Topics {
				roles = append(roles, string(dt.Role)+" "+strings.Replace(dt.Name, "orders-app-KSTREAM-REDUCE-STATE-STORE-00000000", "...", 1))
				if !dt.Exists || dt.Partitions == 0 {
					t.Errorf("topic %+v", dt)
				}
			}
			if !slices.Equal(roles, tt.wantRoles) {
				t.Errorf("topics:\n%s\nwant:\n%s", strings.Join(roles, "\n"), strings.Join(tt.wantRoles, "\n"))
			}
			unknown := strings.Join(d.Unknown, "\n")
			for _, w := range tt.wantUnknown {
				if !strings.Contains(unknown, w) {
					t.Errorf("unknown lacks %q:\n%s", w, unknown)
				}
			}
			if tt.wantUnknown == nil && len(d.Unknown) != 0 {
				t.Errorf("unknown = %v", d.Unknown)
			}
			if d.Group == nil || len(d.Transactions) != 2 || d.Transactions[0].TransactionalID != "orders-app-9b1c-0" {
				t.Errorf("group %v transactions %v", d.Group, d.Transactions)
			}
		})
	}
	t.Run("missing group, transactions not supported, missing topics", func(t *testing.T) {
		src := &fakeSource{topics: []audit.TopicInfo{{Name: "orders-v1", Partitions: 1}}, txnErr: audit.ErrNotSupported}
		d, err := Discover(t.Context(), src, "orders-app", seed)
		if err != nil {
			t.Fatal(err)
		}
		unknown := strings.Join(d.Unknown, "\n")
		for _, w := range []string{"consumer group orders-app not found", "transactional ids orders-app-*: not supported", "changelog topic orders-app-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog is named by the topology but does not exist"} {
			if !strings.Contains(unknown, w) {
				t.Errorf("unknown lacks %q:\n%s", w, unknown)
			}
		}
	})
	t.Run("a topic the app writes and reads back under its own name", func(t *testing.T) {
		topo, err := topology.ParseString("Topologies:\n   Sub-topology: 0\n    Source: in (topics: [raw])\n      --> out\n    Sink: out (topic: through)\n      <-- in\n\n" +
			"  Sub-topology: 1\n    Source: back (topics: [through])\n      --> none\n\n")
		if err != nil {
			t.Fatal(err)
		}
		src := &fakeSource{topics: []audit.TopicInfo{{Name: "raw", Partitions: 1}, {Name: "through", Partitions: 2}}}
		d, err := Discover(t.Context(), src, "app", topo)
		if err != nil {
			t.Fatal(err)
		}
		got := d.ByRole(topology.RoleInternal)
		if len(got) != 1 || got[0].Name != "through" || !got[0].Exists || got[0].Partitions != 2 {
			t.Errorf("internal topics = %+v; unknown %v", got, d.Unknown)
		}
	})
	t.Run("pattern source", func(t *testing.T) {
		src := &fakeSource{topics: []audit.TopicInfo{{Name: "events-a", Partitions: 1}, {Name: "events-b", Partitions: 1}, {Name: "other", Partitions: 1}}}
		d, err := Discover(t.Context(), src, "app", parseFile(t, filepath.Join(describeDir, "3.6", "pattern-source.txt")))
		if err != nil {
			t.Fatal(err)
		}
		var srcs []string
		for _, dt := range d.ByRole(topology.RoleSource) {
			srcs = append(srcs, dt.Name)
		}
		if !slices.Equal(srcs, []string{"events-a", "events-b"}) {
			t.Errorf("sources = %v", srcs)
		}
	})
}

func TestConfigRisks(t *testing.T) {
	d, err := Discover(t.Context(), seedSource(), "orders-app", nil)
	if err != nil {
		t.Fatal(err)
	}
	summary := func(fs []audit.Finding) []string {
		var out []string
		for _, f := range fs {
			if f.Stage != audit.StageConfig || f.Cause != audit.CauseConfigRisk || f.Severity != audit.SeverityRisk {
				t.Errorf("finding %+v", f)
			}
			out = append(out, strings.Replace(f.Topic, "orders-app-KSTREAM-REDUCE-STATE-STORE-00000000", "...", 1)+" "+f.Actual)
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		outage time.Duration
		want   []string
	}{
		{"no outage", 0, []string{
			"...09-changelog unclean.leader.election.enable=true",
			"...09-repartition cleanup.policy=compact",
			"...16-changelog cleanup.policy=delete",
			"shipments-v1 min.insync.replicas=1",
		}},
		{"20 minute outage", 20 * time.Minute, []string{
			"...09-changelog unclean.leader.election.enable=true",
			"...09-repartition cleanup.policy=compact",
			"...16-changelog cleanup.policy=delete",
			"orders-v1 retention.ms=600000",
			"shipments-v1 min.insync.replicas=1",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := summary(ConfigRisksFor(d, tt.outage)); !slices.Equal(got, tt.want) {
				t.Errorf("risks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestSpecCheck(t *testing.T) {
	seed := parseFile(t, filepath.Join(describeDir, "3.6", "seed.txt"))
	t.Run("consistent", func(t *testing.T) {
		d, err := Discover(t.Context(), seedSource(), "orders-app", seed)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckSpec(loadSeedSpec(t), d); err != nil {
			t.Error(err)
		}
	})
	t.Run("missing source, changelog and co-partitioning", func(t *testing.T) {
		src := seedSource()
		src.topics = slices.DeleteFunc(src.topics, func(ti audit.TopicInfo) bool {
			return ti.Name == "payments-v1" || strings.HasSuffix(ti.Name, "16-changelog")
		})
		for i := range src.topics {
			if strings.HasSuffix(src.topics[i].Name, "02-repartition") {
				src.topics[i].Partitions = 6
			}
		}
		d, err := Discover(t.Context(), src, "orders-app", seed)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckSpec(loadSeedSpec(t), d)
		var se *spec.SpecError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v", err)
		}
		msg := err.Error()
		for _, w := range []string{
			"seed.yaml:5: tables[0].repartition: repartition topic orders-app-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition has 6 partitions but changelog",
			"seed.yaml:9: tables[1].source: topic payments-v1 does not exist",
			"seed.yaml:10: tables[2].store: store KSTREAM-REDUCE-STATE-STORE-0000000016 has no changelog",
		} {
			if !strings.Contains(msg, w) {
				t.Errorf("error lacks %q:\n%s", w, msg)
			}
		}
	})
}

func TestSpecCheckCoPartitioning(t *testing.T) {
	src := seedSource()
	for i := range src.topics {
		if strings.HasSuffix(src.topics[i].Name, "09-changelog") || strings.HasSuffix(src.topics[i].Name, "09-repartition") {
			src.topics[i].Partitions = 6
		}
	}
	d, err := Discover(t.Context(), src, "orders-app", parseFile(t, filepath.Join(describeDir, "3.6", "seed.txt")))
	if err != nil {
		t.Fatal(err)
	}
	err = CheckSpec(loadSeedSpec(t), d)
	want := "../spec/testdata/spec/seed.yaml:16: joins[0].right: table payments has 6 partitions but orders has 12: a table-table join needs co-partitioned tables"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

func TestDiscoverCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Discover(ctx, seedSource(), "orders-app", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
}

// describeDir holds describe() texts printed by real Kafka Streams builds.
const describeDir = "../../testdata/kafka/describe/out"

func parseFile(t testing.TB, file string) *topology.Topology {
	t.Helper()
	topo, err := topology.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func loadSeedSpec(t *testing.T) *spec.Spec {
	t.Helper()
	s, err := spec.LoadSpec(filepath.Join("..", "spec", "testdata", "spec", "seed.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
