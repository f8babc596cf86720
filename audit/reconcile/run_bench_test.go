package reconcile_test

import (
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/audittest"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
)

// BenchmarkRun audits a clean seed-shaped app of 3 × 30,000 inputs in
// memory, copies purged, keys spread over the source partitions (the
// judgement's common path):
//
//	go test ./audit/reconcile -run '^$' -bench Run -benchtime 3x
func BenchmarkRun(b *testing.B) {
	s := audittest.SeedScenario("bench", 30_000)
	s.SpreadSources = true
	s.Partitions = 6
	s.Commit = 100
	m := audittest.NewMemory(time.UnixMilli(s.Now))
	if _, err := audittest.Generate(s, audittest.NewMemoryBackend(m)); err != nil {
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
