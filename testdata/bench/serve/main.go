// Command serve writes a generated Streams-shaped app into an in-process
// broker and Schema Registry on 127.0.0.1 and keeps them up, so that
// kaudit can be measured on it as a separate process (testdata/bench/diff.sh).
//
//	go run ./testdata/bench/serve -records 200000 -dir /tmp/bench
//
// It prints "ready BOOTSTRAP REGISTRY_URL" once the app is written, and
// stops on SIGINT or SIGTERM. The app is clean unless -faults is given.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

func main() {
	records := flag.Int("records", 200_000, "input records per source topic")
	partitions := flag.Int("partitions", 3, "partitions of every topic")
	dir := flag.String("dir", "", "where to write kaudit.yaml and topology.txt")
	flag.Parse()
	if *dir == "" {
		log.Fatal("serve: -dir is required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	reg := fakeregistry.New()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, reg) //nolint:errcheck
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		log.Fatal(err)
	}
	s := fakeapp.SeedScenario("shop", *records)
	s.Partitions = int32(*partitions)
	s.Now = time.Now().UnixMilli()
	s.Keys = *records / 4
	s.Commit = 500
	s.AbortEvery = 50
	s.Encode = enc.Encode
	start := time.Now()
	c, truth, err := fakeapp.WriteFake(ctx, s, kfake.ListenFn(func(network, _ string) (net.Listener, error) {
		return net.Listen(network, "127.0.0.1:0")
	}))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := os.WriteFile(filepath.Join(*dir, "kaudit.yaml"), []byte(benchSpec), 0o600); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "serve: wrote %d input records in %s\n", truth.Inputs, time.Since(start).Round(time.Millisecond))
	fmt.Printf("ready %s http://%s\n", c.ListenAddrs()[0], ln.Addr())
	<-ctx.Done()
}

// benchSpec is the demo's spec without a topology file: names follow the
// Streams conventions, stores numbered as the seed's describe() shows.
const benchSpec = `app_id: shop
serdes: {key: string, value: avro}
tables:
  - {name: orders,    source: orders-v1,    select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000002}
  - {name: payments,  source: payments-v1,  select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000009}
  - {name: shipments, source: shipments-v1, select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000016}
joins:
  - output: order-status
    left: orders
    right: [payments, shipments]
    type: left
    value: '{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}'
`
