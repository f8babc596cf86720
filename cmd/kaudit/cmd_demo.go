package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/urfave/cli/v2"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/audittest"
	"github.com/kaudit/kaudit/audit/codec/registrytest"
)

//go:embed demo/kaudit.yaml demo/topology.txt
var demoFiles embed.FS

func demoCommand() *cli.Command {
	return &cli.Command{
		Name:  "demo",
		Usage: "an embedded incident, audited: a seed-shaped Streams app on an in-process broker with injected losses",
		Description: `kaudit demo starts an in-process Kafka broker (kfake) and Schema Registry on
127.0.0.1, writes a Streams app shaped like the one in the incident report
(3 sources → selectKey → repartition → reduce → leftJoin chain → output,
exactly-once transactions, Avro values) with a handful of injected losses,
then runs kaudit diff on it with the embedded spec and topology.

` + exitStatusHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "table", Usage: "md, table, json, csv or prom"},
			&cli.StringFlag{Name: "output", Usage: "write the report to `FILE`"},
			&cli.IntFlag{Name: "records", Value: 600, Usage: "input records per source topic"},
		},
		Action: func(c *cli.Context) error {
			return runDemo(c.Context, c.String("format"), c.String("output"), c.Int("records"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// demoScenario is the embedded incident: an app with the topology of the
// incident kaudit was built around (README.md), one injected fault per
// cause the demo names.
func demoScenario(n int) audittest.Scenario {
	s := audittest.SeedScenario("shop", n)
	s.Now = time.Now().UnixMilli()
	s.NullKeys = 2
	s.Lag = 3
	// repartition.purge.interval.ms set high, so that the repartition
	// topics still hold what the evidence needs to name every cause
	s.Purge = false
	s.Faults = []audittest.Fault{
		{Kind: audittest.FaultStateDiverged, Table: 2},                   // applied, yet the store never reflected it
		{Kind: audittest.FaultDrop, Table: 1},                            // a processor swallowed a payment
		{Kind: audittest.FaultAbortNotReplayed, Table: 0},                // an order held only by an aborted transaction
		{Kind: audittest.FaultPurgeBeforeCommit, Table: 2, Partition: 1}, // KAFKA-17635: shipments purged before they were applied
		{Kind: audittest.FaultRetentionGap, Table: 0, Partition: 2},      // orders deleted before the app read them
		{Kind: audittest.FaultJoinMissing},                               // the join never emitted one order
		{Kind: audittest.FaultHangingTransaction},                        // a transaction left open on the output
	}
	return s
}

func runDemo(ctx context.Context, format, output string, n int, stdout, stderr io.Writer) error {
	if n < 60 {
		return usagef("--records %d: want at least 60", n)
	}
	dir, err := os.MkdirTemp("", "kaudit-demo-")
	if err != nil {
		return fmt.Errorf("make demo dir: %w", err)
	}
	defer os.RemoveAll(dir)
	for _, name := range []string{"kaudit.yaml", "topology.txt"} {
		b, err := demoFiles.ReadFile("demo/" + name)
		if err != nil {
			return fmt.Errorf("read embedded %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}

	// A Schema Registry and a broker, on loopback only.
	reg := registrytest.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the demo registry: %w", err)
	}
	srv := &http.Server{Handler: reg, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	regURL := "http://" + ln.Addr().String()
	enc, err := audittest.NewAvroEncoder(reg)
	if err != nil {
		return err
	}
	s := demoScenario(n)
	s.Encode = enc.Encode
	fmt.Fprintf(stderr, "kaudit demo: writing the incident to an in-process broker (registry %s)…\n", regURL)
	cluster, truth, err := audittest.WriteFake(ctx, s, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, "127.0.0.1:0")
	}))
	if err != nil {
		return fmt.Errorf("write the demo incident: %w", err)
	}
	defer cluster.Close()
	fmt.Fprintf(stderr, "kaudit demo: %d input records, %d injected faults (%d findings expected); auditing…\n\n", truth.Inputs, len(s.Faults), len(truth.Findings))

	o := diffOptions{
		source:       sourceOptions{Bootstrap: cluster.ListenAddrs(), Timeout: 10 * time.Second, SchemaRegistry: regURL, MaxTxnTimeout: 15 * time.Minute},
		AppID:        "shop",
		TopologyFile: filepath.Join(dir, "topology.txt"),
		Format:       format, Output: output, CrossCheck: true, KafkaVersion: "3.6.1", Concurrency: runtime.GOMAXPROCS(0),
	}
	if output != "" && format == "table" {
		o.Format = "md"
	}
	src, err := openSource(ctx, "demo", o.source)
	if err != nil {
		return err
	}
	defer src.close()
	var got []audittest.Expected
	o.inspect = func(rep *audit.Report) {
		for _, f := range rep.Findings {
			if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
				got = append(got, audittest.Expected{Stage: f.Stage, Cause: f.Cause, Topic: f.Topic, Partition: f.Partition, Offset: f.Offset, Key: f.Key})
			}
		}
	}
	err = runDiff(ctx, o, src, stdout)
	missed, extra := audittest.Match(truth.Findings, got)
	if len(missed)+len(extra) == 0 {
		fmt.Fprintf(stderr, "\nkaudit demo: the audit named exactly the %d injected losses and anomalies, and nothing else.\n", len(truth.Findings))
	} else {
		fmt.Fprintf(stderr, "\nkaudit demo: the audit disagrees with the injected faults: missed %v, unexpected %v\n", missed, extra)
	}
	return err
}
