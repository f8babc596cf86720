package reconcile_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// BenchmarkRun audits a clean seed-shaped app of 3 × 30,000 inputs in
// memory, copies purged, keys spread over the source partitions (the
// judgement's common path):
//
//	go test ./audit/reconcile -run '^$' -bench Run -benchtime 3x
func BenchmarkRun(b *testing.B) {
	s := fakeapp.SeedScenario("bench", 30_000)
	s.SpreadSources = true
	s.Partitions = 6
	s.Commit = 100
	m := fakeapp.NewMemory(time.UnixMilli(s.Now))
	if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
		b.Fatal(err)
	}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		b.Fatal(err)
	}
	p := pipelineOf(s)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := reconcile.Run(b.Context(), m, p, reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Verdict != "clean" {
			b.Fatalf("verdict %s: %v", rep.Summary.Verdict, rep.Summary.Missing)
		}
	}
}

// BenchmarkRunAvro is BenchmarkRun with Confluent-framed Avro values, as
// the bench harness's data (the decoders' common path):
//
//	go test ./audit/reconcile -run '^$' -bench RunAvro -benchtime 3x
func BenchmarkRunAvro(b *testing.B) {
	reg := fakeregistry.New()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		b.Fatal(err)
	}
	s := fakeapp.SeedScenario("bench", 30_000)
	s.SpreadSources = true
	s.Partitions = 6
	s.Commit = 100
	s.Encode = enc.Encode
	m := fakeapp.NewMemory(time.UnixMilli(s.Now))
	if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
		b.Fatal(err)
	}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "avro", RegistryURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	p := pipelineOf(s)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := reconcile.Run(b.Context(), m, p, reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute, Concurrency: 2})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Summary.Verdict != "clean" {
			b.Fatalf("verdict %s: %v", rep.Summary.Verdict, rep.Summary.Missing)
		}
	}
}
