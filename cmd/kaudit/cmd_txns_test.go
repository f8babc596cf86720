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
	"github.com/kaudit/kaudit/audit/txns"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// failingSource is a Memory whose producers cannot be read.
type failingSource struct{ *fakeapp.Memory }

func (failingSource) Producers(context.Context, []audit.TopicPartition) (map[audit.TopicPartition][]audit.Producer, error) {
	return nil, errors.New("describe producers: not authorized")
}

func TestTxnsIncomplete(t *testing.T) {
	m := fakeapp.NewMemory(time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC))
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
		{"bad format", []string{"txns", "--app-id", "a", "--format", "csv", "--bootstrap-server", closed}, exitUsage, `--format "csv": want table, json`},
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
	var doc txns.Census
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
