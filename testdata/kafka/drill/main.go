// Command drill is kaudit's real drill: it starts Apache Kafka (KRaft, from Maven Central jars),
// the drill's Schema Registry and the reference Kafka Streams app (testdata/kafka/app, the
// seed's topology under exactly_once_v2), produces deterministic Avro input, injects one fault
// per scenario for real, runs `kaudit diff` and checks its findings against the ground truth
// the drill recorded. It prints one PASS/FAIL line per scenario and exits 1 on any failure.
//
// Run from the repository root (the Java app and the broker classpath must be built first,
// see .ci/drill):
//
//	go run ./testdata/kafka/drill [-scenarios clean,retention-gap,...] [-work testdata/kafka/work]
//
// Everything it writes goes under -work: the cluster (work/cluster), the app's state dirs, and
// per scenario work/results/<scenario>/: describe.txt, truth.json, kaudit.json, kaudit.md,
// the app's and kaudit's logs.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// options are the drill's command-line settings.
type options struct {
	work         string
	scenarios    []string
	kafkaVersion string
	registryAddr string
	outage       time.Duration
	kaudit       string // path of a prebuilt kaudit binary; empty: build one
	keepGoing    bool
	inferred     bool       // also audit captures with the spec kaudit init drafts
	logDirs      bool       // also audit the stopped brokers' log dirs after each live audit
	chaos        bool       // on the RF 3 cluster, kill a broker in the middle of kaudit diff and capture
	gen          genOptions // the generated apps (genapps.go), instead of the scenarios
}

func main() {
	var o options
	var list string
	flag.StringVar(&o.work, "work", "testdata/kafka/work", "work directory (git-ignored)")
	flag.StringVar(&list, "scenarios", strings.Join(scenarioNames(), ","), "comma-separated scenarios to run, in order")
	flag.StringVar(&o.kafkaVersion, "kafka-version", envOr("KAFKA_VERSION", "3.6.2"), "Kafka version of the broker and the app classpath")
	flag.StringVar(&o.registryAddr, "registry-addr", "127.0.0.1:"+envOr("PORT_PREFIX", "19")+"081", "listen address of the drill's Schema Registry")
	flag.DurationVar(&o.outage, "outage", 30*time.Second, "how long the outage scenario keeps every broker down")
	flag.StringVar(&o.kaudit, "kaudit", "", "a prebuilt kaudit binary (default: go build ./cmd/kaudit into -work)")
	flag.BoolVar(&o.keepGoing, "keep-going", true, "run the remaining scenarios after a failure")
	flag.BoolVar(&o.inferred, "inferred", true, "also audit each standard scenario's capture with the spec kaudit init drafts from it")
	flag.BoolVar(&o.logDirs, "log-dirs", true, "after each live audit, stop the brokers and audit their log dirs with kaudit diff --log-dir: the same verdict and findings")
	flag.BoolVar(&o.chaos, "chaos", true, "on the RF 3 cluster, after the live audit, kill -9 one broker in the middle of kaudit diff and of kaudit capture: the same report, or incomplete")
	flag.IntVar(&o.gen.n, "gen-apps", 0, "run this many generated apps (seeds -gen-seed, -gen-seed+1, …) instead of the scenarios")
	flag.Uint64Var(&o.gen.seed, "gen-seed", 1, "the first generated app's seed")
	flag.StringVar(&o.gen.seeds, "gen-seeds", "", "comma-separated seeds of the generated apps to run (instead of -gen-apps)")
	flag.StringVar(&o.gen.descs, "gen-desc", "", "comma-separated description files of generated apps to run (a shrunk failure)")
	flag.IntVar(&o.gen.parallel, "gen-parallel", 4, "generated apps run at once on the cluster (a batch)")
	flag.BoolVar(&o.gen.during, "gen-during", true, "audit the generated apps while they process (issue AJ)")
	flag.BoolVar(&o.gen.shrink, "gen-shrink", false, "shrink each failing generated app (reruns it, smaller, while it still fails)")
	flag.StringVar(&o.gen.rejudge, "gen-rejudge", "", "judge again, with today's properties, the generated apps whose results are under this dir (results/gen of a run; no Kafka)")
	flag.StringVar(&o.gen.summary, "gen-summary", "", "where to write the generated apps' figures (JSON; default results/gen/summary.json)")
	flag.Parse()
	o.scenarios = strings.Split(list, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, o))
}

func run(ctx context.Context, o options) int {
	start := time.Now()
	abs, err := filepath.Abs(o.work)
	if err != nil {
		logf("resolve %s: %v", o.work, err)
		return 2
	}
	o.work = abs
	if o.gen.active() {
		return runGen(ctx, o)
	}
	if err := os.MkdirAll(filepath.Join(o.work, "results"), 0o755); err != nil {
		logf("create work dir: %v", err)
		return 2
	}
	for _, name := range o.scenarios {
		if _, ok := scenarioByName(name); !ok {
			logf("unknown scenario %q (known: %s)", name, strings.Join(scenarioNames(), ", "))
			return 2
		}
	}

	d, err := newDrill(ctx, o)
	if err != nil {
		logf("set up the drill: %v", err)
		return 1
	}
	defer d.close()

	type outcome struct {
		name string
		err  error
		took time.Duration
	}
	var outcomes []outcome
	failed := false
	for _, name := range o.scenarios {
		if ctx.Err() != nil {
			break
		}
		sc, _ := scenarioByName(name)
		t0 := time.Now()
		logf("=== scenario %s: %s", sc.name, sc.about)
		err := d.runScenario(ctx, sc)
		took := time.Since(t0).Round(time.Second)
		outcomes = append(outcomes, outcome{name, err, took})
		if err != nil {
			failed = true
			fmt.Printf("FAIL %-22s %6s  %v\n", name, took, err)
			if !o.keepGoing {
				break
			}
		} else {
			fmt.Printf("PASS %-22s %6s\n", name, took)
		}
	}
	fmt.Println("--- drill summary (results in " + filepath.Join(o.work, "results") + ")")
	for _, oc := range outcomes {
		status := "PASS"
		if oc.err != nil {
			status = "FAIL"
		}
		fmt.Printf("%s %-22s %6s\n", status, oc.name, oc.took)
	}
	fmt.Printf("drill total wall time: %s\n", time.Since(start).Round(time.Second))
	if ctx.Err() != nil {
		return 130
	}
	if failed || len(outcomes) < len(o.scenarios) {
		return 1
	}
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s drill: %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}
