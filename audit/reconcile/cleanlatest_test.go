package reconcile_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestCleanLatestSameReport: judgeKey's fast path for plainly explained
// keys of latest tables gives the same report as the full explanation, on
// random latest apps with random faults, spilled or not.
func TestCleanLatestSameReport(t *testing.T) {
	defer reconcile.SetCleanLatest(true)
	kinds := []fakeapp.FaultKind{fakeapp.FaultStateDiverged, fakeapp.FaultDuplicate, fakeapp.FaultDrop, fakeapp.FaultAbortNotReplayed, fakeapp.FaultStateDiverged,
		fakeapp.FaultPurgeBeforeCommit, fakeapp.FaultRetentionGap, fakeapp.FaultJoinMissing, fakeapp.FaultHangingTransaction,
		fakeapp.FaultDuplicate}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	seeds := 40
	if testing.Short() || raceEnabled {
		seeds = 8
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 31))
		s := fakeapp.SeedScenario("fast", 100+rng.IntN(300))
		s.Seed = uint64(seed)
		s.Partitions = int32(1 + rng.IntN(4))
		s.Commit = 3 + rng.IntN(15)
		s.AbortEvery = rng.IntN(8)
		s.Lag = 1 + rng.IntN(4)
		s.Inflight = rng.IntN(4)
		s.Purge = rng.IntN(3) == 0
		s.Keys = max(s.Inputs/(1+rng.IntN(6)), 2)
		s.SpreadSources = rng.IntN(2) == 0
		for range 1 + rng.IntN(4) {
			s.Faults = append(s.Faults, fakeapp.Fault{Kind: kinds[rng.IntN(len(kinds))], Table: rng.IntN(3), Partition: int32(rng.IntN(int(s.Partitions)))})
		}
		budget := int64(0)
		if rng.IntN(3) == 0 {
			budget = 1 // spilled, a bucket at a time
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			m := fakeapp.NewMemory(time.UnixMilli(s.Now))
			if _, err := fakeapp.Generate(s, fakeapp.NewMemoryBackend(m)); err != nil {
				t.Fatal(err)
			}
			p := pipelineOf(s)
			var reps [2][]byte
			for i, on := range []bool{false, true} {
				reconcile.SetCleanLatest(on)
				rep, err := reconcile.Run(t.Context(), m, p, reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute, MemoryBudget: budget, SpillDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				if reps[i], err = json.Marshal(rep); err != nil {
					t.Fatal(err)
				}
			}
			if string(reps[0]) != string(reps[1]) {
				t.Fatalf("reports differ:\nfull explanation: %s\nfast path:        %s", reps[0], reps[1])
			}
		})
	}
}
