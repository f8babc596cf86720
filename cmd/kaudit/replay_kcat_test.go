package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kaudit/kaudit/report"
)

// TestReplayCommandsKcat runs the postmortem's replay commands with the
// real kcat against an in-process broker: a binary value (NUL, tab,
// newline, 0xff: what breaks kcat's text mode) comes back byte for byte,
// with its key. CI installs kcat; without it the test skips.
func TestReplayCommandsKcat(t *testing.T) {
	if _, err := exec.LookPath("kcat"); err != nil {
		if os.Getenv("KAUDIT_REQUIRE_TOOLS") != "" {
			t.Fatal("kcat is not installed (KAUDIT_REQUIRE_TOOLS is set, as CI sets it: .ci/tools installs it)")
		}
		t.Skip("kcat is not installed (apt-get install kcat): the replay commands are not run")
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), loopback(), kfake.SeedTopics(1, "orders-v1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("orders-v1"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	values := [][]byte{{0x00, 0x00, 0x00, 0x00, 0x07, '\t', '\n', 0xff, 'x'}, []byte("plain\n")}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for i, v := range values {
		r := &kgo.Record{Partition: 0, Key: []byte("o-" + string(rune('1'+i))), Value: v}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	script := report.ReplayCommands([]report.Range{{Topic: "orders-v1", Partition: 0, From: 0, Count: 1}, {Topic: "orders-v1", Partition: 0, From: 1, Count: 1}}, addr, nil)
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", script)
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the replay commands failed: %v\n%s\n%s", err, script, out)
	}
	// the copies are at offsets 2 and 3
	rd, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders-v1": {0: kgo.NewOffset().At(2)}}))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var got []*kgo.Record
	for len(got) < 2 && ctx.Err() == nil {
		f := rd.PollFetches(ctx)
		got = append(got, f.Records()...)
	}
	if len(got) != 2 {
		t.Fatalf("%d copies", len(got))
	}
	for i, r := range got {
		if !bytes.Equal(r.Value, values[i]) || string(r.Key) != "o-"+string(rune('1'+i)) {
			t.Errorf("copy %d: key %q value %q, want %q", i, r.Key, r.Value, values[i])
		}
	}
}
