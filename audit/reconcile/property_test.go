package reconcile_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestRandomScenarios: random apps with random injected faults; the
// engine must find exactly the ground truth (recall and precision 100 %).
func TestRandomScenarios(t *testing.T) {
	seeds := 80
	if testing.Short() || raceEnabled {
		seeds = 16
	}
	kinds := []fakeapp.FaultKind{fakeapp.FaultDrop, fakeapp.FaultAbortNotReplayed, fakeapp.FaultStateDiverged,
		fakeapp.FaultPurgeBeforeCommit, fakeapp.FaultRetentionGap, fakeapp.FaultJoinMissing, fakeapp.FaultHangingTransaction,
		fakeapp.FaultDuplicate, fakeapp.FaultStateReset}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		s := fakeapp.SeedScenario("prop", 120+rng.IntN(300))
		s.Seed = uint64(seed)
		s.Partitions = int32(1 + rng.IntN(4))
		s.Commit = 3 + rng.IntN(15)
		s.AbortEvery = rng.IntN(8)
		s.Lag = 1 + rng.IntN(4)
		s.Inflight = rng.IntN(4)
		s.Purge = rng.IntN(2) == 0
		s.NullKeys = rng.IntN(3)
		s.Keys = max(s.Inputs/(1+rng.IntN(6)), 2)
		// production conditions in every combination: keys spread over
		// source partitions, copies purged to the cut, every reducer
		s.SpreadSources = rng.IntN(2) == 0
		for i := range s.Tables {
			s.Tables[i].Reducer = fakeapp.Reducers[rng.IntN(len(fakeapp.Reducers))]
		}
		for range 1 + rng.IntN(4) {
			f := fakeapp.Fault{Kind: kinds[rng.IntN(len(kinds))], Table: rng.IntN(3), Partition: int32(rng.IntN(int(s.Partitions)))}
			if f.Kind == fakeapp.FaultStateReset && s.Tables[f.Table].Reducer == fakeapp.ReduceLatest {
				continue // a restart of a latest state is overwritten by the next input
			}
			s.Faults = append(s.Faults, f)
		}
		if rng.IntN(3) == 0 {
			s.OutputPartitions = int32(1 + rng.IntN(5)) // the join then reads the output in one group
		}
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rep, truth := runScenario(t, s)
			compare(t, rep, truth)
			if t.Failed() {
				t.Logf("scenario: %+v", s)
			}
		})
	}
}
