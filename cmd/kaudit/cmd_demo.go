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
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
	"github.com/kaudit/kaudit/report"
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
		Flags: append(outputFlags("table"),
			&cli.IntFlag{Name: "records", Value: 600, Usage: "input records per source topic"},
			wideFlag(),
			&cli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "no progress on stderr (it is drawn only on a terminal)"},
		),
		Action: func(c *cli.Context) error {
			outs, err := readOutputs(c, "table")
			if err != nil {
				return err
			}
			if err := checkWrites(outputDests(outs), nil); err != nil {
				return err
			}
			d := demoOptions{Outputs: outs, Records: c.Int("records"), Wide: c.Bool("wide"), Width: terminalWidth(c.App.Writer),
				Args: provenanceArgs(c), Quiet: c.Bool("quiet")}
			return runDemo(c.Context, d, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// demoOptions are kaudit demo's flags.
type demoOptions struct {
	Outputs []output
	Records int
	Wide    bool
	Width   int
	Args    []string // the command line, for the provenance
	Quiet   bool     // no progress
}

// demoScenario is the embedded incident: an app with the topology of the
// incident kaudit was built around (README.md), one injected fault per
// cause the demo names.
func demoScenario(n int) fakeapp.Scenario {
	s := fakeapp.SeedScenario("shop", n)
	s.Now = time.Now().UnixMilli()
	s.NullKeys = 2
	s.Lag = 3
	// repartition.purge.interval.ms set high, so that the repartition
	// topics still hold what the evidence needs to name every cause
	s.Purge = false
	s.Faults = []fakeapp.Fault{
		{Kind: fakeapp.FaultStateDiverged, Table: 2},                   // applied, yet the store never reflected it
		{Kind: fakeapp.FaultDrop, Table: 1},                            // a processor swallowed a payment
		{Kind: fakeapp.FaultAbortNotReplayed, Table: 0},                // an order held only by an aborted transaction
		{Kind: fakeapp.FaultPurgeBeforeCommit, Table: 2, Partition: 1}, // KAFKA-17635: shipments purged before they were applied
		{Kind: fakeapp.FaultRetentionGap, Table: 0, Partition: 2},      // orders deleted before the app read them
		{Kind: fakeapp.FaultJoinMissing},                               // the join never emitted one order
		{Kind: fakeapp.FaultHangingTransaction},                        // a transaction left open on the output
	}
	return s
}

func runDemo(ctx context.Context, d demoOptions, stdout, stderr io.Writer) error {
	n := d.Records
	if n < 60 {
		return usagef("--records %d: want at least 60", n)
	}
	started := time.Now()
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
	reg := fakeregistry.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen for the demo registry: %w", err)
	}
	srv := &http.Server{Handler: reg, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // closed below
	defer srv.Close()
	regURL := "http://" + ln.Addr().String()
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		return err
	}
	s := demoScenario(n)
	s.Encode = enc.Encode
	fmt.Fprintf(stderr, "kaudit demo: writing the incident to an in-process broker (registry %s)…\n", regURL)
	spun := newSpinner(stderr, d.Quiet, fmt.Sprintf("writing %d records", len(s.Tables)*n))
	cluster, truth, err := fakeapp.WriteFake(ctx, s, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, "127.0.0.1:0")
	}))
	spun()
	if err != nil {
		return fmt.Errorf("write the demo incident: %w", err)
	}
	defer cluster.Close()
	fmt.Fprintf(stderr, "kaudit demo: %d input records written (%d per source topic), %d injected faults (%d findings expected); auditing…\n", truth.Inputs, n, len(s.Faults), len(truth.Findings))

	o := diffOptions{
		source:       sourceOptions{Bootstrap: cluster.ListenAddrs(), Timeout: 10 * time.Second, SchemaRegistry: regURL, MaxTxnTimeout: 15 * time.Minute},
		AppID:        "shop",
		TopologyFile: filepath.Join(dir, "topology.txt"), // no --spec: the spec is inferred from the evidence
		Outputs:      d.Outputs, CrossCheck: true, KafkaVersion: "3.6.1", Concurrency: runtime.GOMAXPROCS(0),
		Wide: d.Wide, Width: d.Width, started: started, args: d.Args,
	}
	src, err := openSource(ctx, "demo", o.source)
	if err != nil {
		return err
	}
	defer src.close()
	var got []fakeapp.Expected
	var read, judged int64
	o.inspect = func(rep *audit.Report) {
		read, judged = rep.Summary.Records["read"], report.TallyOf(rep).Judged
		for _, f := range rep.Findings {
			if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
				got = append(got, fakeapp.Expected{Stage: f.Stage, Cause: f.Cause, Topic: f.Topic, Partition: f.Partition, Offset: f.Offset, Key: f.Key})
			}
		}
	}
	p, stop := newProgress(stderr, d.Quiet)
	o.progress = p
	err = runDiff(ctx, o, src, stdout)
	stop()
	if read > 0 {
		fmt.Fprintf(stderr, "\nkaudit demo: of the %d input records written, Kafka still holds %d (the injected retention gap deleted the others); the audit judged %d of them (the funnel's `judged`: the consumed inputs with a key, less those whose copies still wait on a repartition topic; the funnel says why each other one is not).\n", truth.Inputs, read, judged)
	}
	missed, extra := fakeapp.Match(truth.Findings, got)
	if len(missed)+len(extra) == 0 {
		fmt.Fprintf(stderr, "kaudit demo: the audit named exactly the %d injected losses and anomalies, and nothing else.\n", len(truth.Findings))
	} else {
		fmt.Fprintf(stderr, "kaudit demo: the audit disagrees with the injected faults: missed %v, unexpected %v\n", missed, extra)
	}
	return err
}
