package reconcile_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
	"github.com/kaudit/kaudit/internal/fakeregistry"
)

// TestJoinFields: a join whose value only copies fields decodes only those
// fields of each table's final state (Join.Fields, codec.DecodeFields); on
// Avro apps with every cause, that gives the report decoding the values
// whole gives, byte for byte, and the report names exactly the faults.
func TestJoinFields(t *testing.T) {
	reg := fakeregistry.New()
	srv := httptest.NewServer(reg)
	defer srv.Close()
	enc, err := fakeapp.NewAvroEncoder(reg)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "avro", RegistryURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultStateDiverged, fakeapp.FaultJoinMissing,
		fakeapp.FaultAbortNotReplayed, fakeapp.FaultDuplicate, fakeapp.FaultPurgeBeforeCommit}
	for seed := range 12 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		s := fakeapp.SeedScenario("fields", 150+rng.IntN(200))
		s.Seed = uint64(seed)
		s.Partitions = int32(1 + rng.IntN(3))
		s.Keys = max(s.Inputs/(1+rng.IntN(4)), 2)
		s.SpreadSources = rng.IntN(2) == 0
		s.Encode = enc.Encode
		for range 1 + rng.IntN(3) {
			s.Faults = append(s.Faults, fakeapp.Fault{Kind: kinds[rng.IntN(len(kinds))], Table: rng.IntN(3), Partition: int32(rng.IntN(int(s.Partitions)))})
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			m := fakeapp.NewMemory(time.UnixMilli(s.Now))
			truth, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m))
			if err != nil {
				t.Fatal(err)
			}
			p := avroPipelineOf(t, s)
			if p.Joins[0].Fields == nil {
				t.Fatal("the join's value is a projection, yet it names no fields")
			}
			var reps [2][]byte
			for i := range reps {
				if i == 1 {
					p.Joins[0].Fields = nil // the values decoded whole
				}
				rep, err := reconcile.Run(t.Context(), m, p, reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute, Concurrency: 2})
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					compare(t, rep, truth)
				}
				reps[i], _ = json.Marshal(rep)
			}
			if !bytes.Equal(reps[0], reps[1]) {
				t.Errorf("the report decoding the join's fields differs from the one decoding the values whole:\n%s\n%s", reps[0], reps[1])
			}
		})
	}
}

// avroPipelineOf is pipelineOf for an Avro app, with the join value the
// output holds (fakeapp.StatusSchema).
func avroPipelineOf(t *testing.T, s fakeapp.Scenario) *reconcile.Pipeline {
	t.Helper()
	p, err := scenarioPipeline(s, "avro", `{"orderId": left.orderId, "orderAmount": left.amount, "paid": r1?.amount, "shipped": r2?.amount}`)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
