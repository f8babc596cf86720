package main

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/audittest"
)

var txnsTestNow = time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC)

func ms(d time.Duration) int64 { return txnsTestNow.Add(-d).UnixMilli() }

// txnsMemory is an app "shop" with:
//
//	shop-0_0: open 20 minutes on shop-repartition/0 and out/0 (hanging: timeout)
//	shop-0_1: open 1 minute on shop-repartition/1 (fine)
//	shop-1_0: complete, yet shop-store-changelog/0 holds its producer's
//	          transaction open (hanging: KIP-664, coordinator state)
//	a producer with no transactional id holding orders/0 open (KIP-664)
//	an idempotent producer on orders/1 with nothing open
func txnsMemory() *audittest.Memory {
	m := audittest.NewMemory(txnsTestNow)
	for _, ti := range []audit.TopicInfo{
		{Name: "orders", Partitions: 2, ReplicationFactor: 3},
		{Name: "out", Partitions: 1, ReplicationFactor: 3},
		{Name: "unrelated", Partitions: 1, ReplicationFactor: 3},
		{Name: "shop-repartition", Partitions: 2, ReplicationFactor: 3},
		{Name: "shop-store-changelog", Partitions: 1, ReplicationFactor: 3},
	} {
		m.AddTopic(ti)
	}
	m.SetGroup(audit.GroupOffsets{Group: "shop", State: "Stable", Members: 2, Offsets: map[audit.TopicPartition]int64{
		{Topic: "orders", Partition: 0}: 40, {Topic: "orders", Partition: 1}: 7,
		{Topic: "shop-repartition", Partition: 0}: 9, {Topic: "shop-repartition", Partition: 1}: 3,
	}})
	rep0, rep1 := audit.TopicPartition{Topic: "shop-repartition", Partition: 0}, audit.TopicPartition{Topic: "shop-repartition", Partition: 1}
	out0, cl0 := audit.TopicPartition{Topic: "out", Partition: 0}, audit.TopicPartition{Topic: "shop-store-changelog", Partition: 0}
	m.SetTransactions([]audit.Transaction{
		{TransactionalID: "shop-0_0", State: "Ongoing", ProducerID: 100, ProducerEpoch: 4, TimeoutMillis: 60000,
			StartTimestamp: ms(20 * time.Minute), Partitions: []audit.TopicPartition{out0, rep0}},
		{TransactionalID: "shop-0_1", State: "Ongoing", ProducerID: 101, ProducerEpoch: 2, TimeoutMillis: 60000,
			StartTimestamp: ms(time.Minute), Partitions: []audit.TopicPartition{rep1}},
		{TransactionalID: "shop-1_0", State: "CompleteCommit", ProducerID: 102, ProducerEpoch: 7, TimeoutMillis: 60000, StartTimestamp: -1},
		{TransactionalID: "other-0", State: "Empty", ProducerID: 300, ProducerEpoch: 0, TimeoutMillis: 60000, StartTimestamp: -1},
	})
	m.SetProducers(rep0, []audit.Producer{{ProducerID: 100, ProducerEpoch: 4, LastSequence: 12, LastTimestamp: ms(19 * time.Minute), CoordinatorEpoch: 1, CurrentTxnStartOffset: 10}})
	m.SetProducers(rep1, []audit.Producer{{ProducerID: 101, ProducerEpoch: 2, LastSequence: 3, LastTimestamp: ms(50 * time.Second), CoordinatorEpoch: 1, CurrentTxnStartOffset: 4}})
	m.SetProducers(out0, []audit.Producer{{ProducerID: 100, ProducerEpoch: 4, LastSequence: 0, LastTimestamp: ms(19 * time.Minute), CoordinatorEpoch: 1, CurrentTxnStartOffset: 5}})
	m.SetProducers(cl0, []audit.Producer{{ProducerID: 102, ProducerEpoch: 7, LastSequence: 8, LastTimestamp: ms(2 * time.Minute), CoordinatorEpoch: 1, CurrentTxnStartOffset: 77}})
	m.SetProducers(audit.TopicPartition{Topic: "orders", Partition: 0}, []audit.Producer{{ProducerID: 200, ProducerEpoch: 0, LastSequence: 5, LastTimestamp: ms(3 * time.Hour), CoordinatorEpoch: 0, CurrentTxnStartOffset: 41}})
	m.SetProducers(audit.TopicPartition{Topic: "orders", Partition: 1}, []audit.Producer{{ProducerID: 201, ProducerEpoch: 0, LastSequence: 99, LastTimestamp: ms(time.Hour), CoordinatorEpoch: -1, CurrentTxnStartOffset: -1}})
	m.SetProducers(audit.TopicPartition{Topic: "unrelated", Partition: 0}, []audit.Producer{{ProducerID: 999, CurrentTxnStartOffset: 1}})
	return m
}

func TestTxnsGolden(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			var out strings.Builder
			err := runTxns(t.Context(), txnsOptions{AppID: "shop", MaxTxnTimeout: 15 * time.Minute, Format: format}, txnsMemory(), &out)
			if code := exitCode(t.Context(), err); code != exitFindings {
				t.Errorf("exit %d (%v), want %d", code, err, exitFindings)
			}
			ext := map[string]string{"table": "txt", "json": "json"}[format]
			checkGolden(t, "txns-shop."+ext, []byte(out.String()))
		})
	}
}

func TestTxnsFindings(t *testing.T) {
	doc, err := auditTxns(t.Context(), txnsOptions{AppID: "shop", MaxTxnTimeout: 15 * time.Minute}, txnsMemory())
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		where string
		id    string
	}
	got := map[key]string{}
	for _, f := range doc.Findings {
		if f.Stage != audit.StageTransactions || f.Cause != audit.CauseHangingTransaction || f.Severity != audit.SeverityAnomaly {
			t.Errorf("finding %+v", f)
		}
		got[key{audit.TopicPartition{Topic: f.Topic, Partition: f.Partition}.String() + "@" + itoa(f.Offset), f.TransactionalID}] = f.Detail
	}
	want := map[key]string{
		{"shop-repartition/0@10", "shop-0_0"}:     "open for 20m0s, longer than --max-transaction-timeout 15m0s",
		{"out/0@5", "shop-0_0"}:                   "open for 20m0s",
		{"shop-store-changelog/0@77", "shop-1_0"}: "the coordinator's transaction is CompleteCommit (KIP-664)",
		{"orders/0@41", ""}:                       "no transaction of this producer id on the coordinator (KIP-664)",
	}
	for k, sub := range want {
		if d, ok := got[k]; !ok || !strings.Contains(d, sub) {
			t.Errorf("finding %v: detail %q, want one containing %q", k, d, sub)
		}
	}
	if len(got) != len(want) {
		t.Errorf("findings = %v, want %d", got, len(want))
	}
	if doc.Verdict != audit.VerdictAnomaly || len(doc.Open) != 5 {
		t.Errorf("verdict %s, %d open, want anomaly and 5", doc.Verdict, len(doc.Open))
	}

	t.Run("longer timeout", func(t *testing.T) {
		doc, err := auditTxns(t.Context(), txnsOptions{AppID: "shop", MaxTxnTimeout: time.Hour}, txnsMemory())
		if err != nil {
			t.Fatal(err)
		}
		if len(doc.Findings) != 2 {
			t.Errorf("findings = %+v, want only the two KIP-664 ones", doc.Findings)
		}
	})
	t.Run("coordinator-only timeout", func(t *testing.T) {
		// No producer state anywhere: the coordinator's start time alone
		// shows shop-0_0 hanging, on each partition it holds.
		m := txnsMemory()
		for _, tp := range []audit.TopicPartition{{Topic: "shop-repartition"}, {Topic: "out"}} {
			m.SetProducers(tp, nil)
		}
		doc, err := auditTxns(t.Context(), txnsOptions{AppID: "shop", MaxTxnTimeout: 15 * time.Minute}, m)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range doc.Findings {
			if f.TransactionalID == "shop-0_0" {
				n++
				if f.Offset != -1 || !strings.Contains(f.Detail, "coordinator's transaction has been open for 20m0s") {
					t.Errorf("finding %+v", f)
				}
			}
		}
		if n != 2 {
			t.Errorf("%d findings for shop-0_0, want 2 (out/0, shop-repartition/0)", n)
		}
	})
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// failingSource is a Memory whose producers cannot be read.
type failingSource struct{ *audittest.Memory }

func (failingSource) Producers(context.Context, []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	return nil, errors.New("describe producers: not authorized")
}

func TestTxnsIncomplete(t *testing.T) {
	m := audittest.NewMemory(txnsTestNow)
	m.AddTopic(audit.TopicInfo{Name: "shop-repartition", Partitions: 1})
	var out strings.Builder
	err := runTxns(t.Context(), txnsOptions{AppID: "shop", MaxTxnTimeout: 15 * time.Minute, Format: "table"}, failingSource{m}, &out)
	if code := exitCode(t.Context(), err); code != exitIncomplete {
		t.Errorf("exit %d, want %d", code, exitIncomplete)
	}
	if !strings.Contains(out.String(), "missing evidence: producers of 1 partitions: describe producers: not authorized") ||
		!strings.Contains(out.String(), `group "shop" not found`) {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestTxnsCLIErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no app id", []string{"txns", "--bootstrap-server", closed}, exitUsage, "--app-id is required"},
		{"bad format", []string{"txns", "--app-id", "a", "--format", "csv", "--bootstrap-server", closed}, exitUsage, "want table or json"},
		{"no source", []string{"txns", "--app-id", "a"}, exitUsage, "needs a source"},
		{"snapshot with no manifest", []string{"txns", "--app-id", "a", "--snapshot", t.TempDir()}, exitNotRun, "manifest"},
		{"two sources", []string{"txns", "--app-id", "a", "--snapshot", "dir", "--bootstrap-server", closed}, exitUsage, "one of"},
		{"bad property", []string{"txns", "--app-id", "a", "--bootstrap-server", closed, "--command-property", "security.protocol=TLS"}, exitUsage, "security.protocol"},
		{"property without value", []string{"txns", "--app-id", "a", "--bootstrap-server", closed, "--command-property", "s3cr3t"}, exitUsage, "want key=value"},
		{"missing config file", []string{"txns", "--app-id", "a", "--bootstrap-server", closed, "--command-config", "/nonexistent/client.properties"}, exitUsage, "command-config"},
		{"unreachable", []string{"txns", "--app-id", "a", "--bootstrap-server", closed, "--timeout", "500ms"}, exitNotRun, closed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, tt.args...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tt.code, tt.want)
			}
			if strings.Contains(errOut, "s3cr3t") {
				t.Errorf("stderr shows a secret: %q", errOut)
			}
		})
	}
}

// TestTxnsLive runs kaudit txns against an in-process broker with an open
// transaction of app "shop".
func TestTxnsLive(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("shop-0_0"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(t.Context(), 2, 1, nil, "shop-repartition"); err != nil {
		t.Fatal(err)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: "shop-repartition", Partition: 1, Value: []byte("v")}
	if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	bs := strings.Join(c.ListenAddrs(), ",")

	out, errOut, code := runCLI(t, "txns", "--app-id", "shop", "--bootstrap-server", bs, "--format", "json")
	if code != exitClean {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	var doc txnsDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Transactions) != 1 || doc.Transactions[0].TransactionalID != "shop-0_0" || doc.Transactions[0].State != "Ongoing" ||
		len(doc.Open) != 1 || doc.Open[0].Partition != 1 || doc.Open[0].ProducerID != r.ProducerID || doc.Open[0].Hanging ||
		doc.Source != "live "+bs {
		t.Errorf("doc = %+v", doc)
	}

	time.Sleep(20 * time.Millisecond)
	out, errOut, code = runCLI(t, "txns", "--app-id", "shop", "--bootstrap-server", bs, "--max-transaction-timeout", "10ms")
	if code != exitFindings || !strings.Contains(out, "hanging-transaction") || !strings.Contains(out, "shop-repartition/1@0") {
		t.Errorf("exit %d, stderr %s, output:\n%s", code, errOut, out)
	}
}
