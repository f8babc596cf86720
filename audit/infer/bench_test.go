package infer

import (
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/spec"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// benchEvidence is a seed-shaped app of 3 × 84,000 inputs with Avro
// values, copies kept, 3 partitions: each hop topic's partition 0 holds
// about 28,000 records, as the bench harness's 1M app's do, so Load reads
// partition 0 and keeps half its keys.
var benchEvidence = sync.OnceValues(func() (*benchSetup, error) {
	reg := fakeregistry.New()
	srv := httptest.NewServer(reg)
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		return nil, err
	}
	s := fakeapp.SeedScenario("bench", 84_000)
	s.Commit = 100
	s.Purge = false
	s.Encode = enc.Encode
	m := fakeapp.NewMemory(time.UnixMilli(s.Now))
	if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
		return nil, err
	}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "avro", RegistryURL: srv.URL})
	if err != nil {
		return nil, err
	}
	return &benchSetup{srv: srv, m: m, dec: dec, s: s}, nil
})

type benchSetup struct {
	srv *httptest.Server // left open: the decoder looks schemas up once
	m   *fakeapp.Memory
	dec *codec.Codec
	s   fakeapp.Scenario
}

// specCheck runs the checks diff.CheckSpec runs, and returns the verdicts'
// summaries.
func specCheck(b *testing.B, sp *spec.Spec, plan *spec.Plan, ev *Evidence, dec *codec.Codec) []Verdict {
	if _, err := CheckFields(sp, plan, ev); err != nil {
		b.Fatal(err)
	}
	var out []Verdict
	for _, pt := range plan.Tables {
		out = append(out, CheckSelectKey(pt, ev), CheckTable(pt, ev))
	}
	for _, pj := range plan.Joins {
		out = append(out, CheckJoin(pj, plan, ev, OutputOrder(b.Context(), ev.Topics[pj.Output], dec)))
	}
	return out
}

// cpuTime is the process's CPU time: cpu-ns/op holds on a shared machine
// where ns/op does not.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSpecCheck reads the spec check's evidence (Load) and checks the
// app's spec against it, as kaudit diff does:
//
//	go test ./audit/infer -run '^$' -bench SpecCheck -benchtime 10x -cpu 1
func BenchmarkSpecCheck(b *testing.B) {
	bs, err := benchEvidence()
	if err != nil {
		b.Fatal(err)
	}
	// the bench harness's spec
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(`app_id: bench
serdes: {key: string, value: avro}
tables:
  - {name: orders, source: orders-v1, select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000002}
  - {name: payments, source: payments-v1, select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000009}
  - {name: shipments, source: shipments-v1, select_key: value.orderId, reduce: latest, store: KSTREAM-REDUCE-STATE-STORE-0000000016}
joins:
  - output: order-status
    left: orders
    right: [payments, shipments]
    type: left
    value: '{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}'
`))
	if err != nil {
		b.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		b.Fatal(err)
	}
	check := func(b *testing.B, ev *Evidence) {
		for _, v := range specCheck(b, sp, plan, ev, bs.dec) {
			if v.Unjudged != "" || v.Keys < 100 {
				b.Fatalf("%s: %d keys: %s", v.Name, v.Keys, v.Unjudged)
			}
		}
	}
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := Load(b.Context(), bs.m, bs.dec, plan, 0); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	ev, err := Load(b.Context(), bs.m, bs.dec, plan, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := cpuTime()
		for b.Loop() {
			check(b, ev)
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
