package reconcile_test

import (
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/kafka"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// runOnKfake writes the scenario to an in-process kfake broker with real
// transactional producers and audits it through the live source.
func runOnKfake(t *testing.T, s fakeapp.Scenario) (*audit.Report, *fakeapp.Truth) {
	t.Helper()
	c, truth := fakeapp.KfakeApp(t, s)
	src, err := kafka.Open(t.Context(), kafka.Config{Bootstrap: c.ListenAddrs(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reconcile.Run(t.Context(), src, pipelineOf(s), reconcile.Options{Decoder: dec, MaxTxnTimeout: 15 * time.Minute, CrossCheck: true})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return rep, truth
}

// TestKfake runs the seed-shaped app on a real wire-protocol broker:
// clean, then several faults at once.
func TestKfake(t *testing.T) {
	t.Run("clean", func(t *testing.T) {
		s := fakeapp.SeedScenario("shop", 200)
		s.NullKeys = 1
		rep, truth := runOnKfake(t, s)
		compare(t, rep, truth)
		if rep.Summary.Verdict != audit.VerdictClean {
			t.Errorf("verdict %s (missing %v)", rep.Summary.Verdict, rep.Summary.Missing)
		}
	})
	t.Run("faults", func(t *testing.T) {
		s := fakeapp.SeedScenario("shop", 240)
		s.Lag = 3
		s.Faults = []fakeapp.Fault{
			{Kind: fakeapp.FaultDrop, Table: 1},
			{Kind: fakeapp.FaultAbortNotReplayed, Table: 0},
			{Kind: fakeapp.FaultPurgeBeforeCommit, Table: 2, Partition: 1},
			{Kind: fakeapp.FaultRetentionGap, Table: 0, Partition: 2},
			{Kind: fakeapp.FaultJoinMissing},
			{Kind: fakeapp.FaultHangingTransaction},
		}
		rep, truth := runOnKfake(t, s)
		if len(truth.Findings) < 5 {
			t.Fatalf("ground truth too small: %v", truth.Findings)
		}
		compare(t, rep, truth)
	})
	// production conditions together: keys' updates spread over source
	// partitions, repartition records purged to the committed offsets,
	// latest, summing and expression reducers side by side
	production := func(faults ...fakeapp.Fault) fakeapp.Scenario {
		s := fakeapp.SeedScenario("shop", 240)
		s.Lag = 2
		s.SpreadSources = true
		s.Purge = true
		s.Tables[0].Reducer = fakeapp.ReduceLatest
		s.Tables[1].Reducer = fakeapp.ReduceSum
		s.Tables[2].Reducer = fakeapp.ReduceExpr
		s.Faults = faults
		return s
	}
	t.Run("production conditions clean", func(t *testing.T) {
		rep, truth := runOnKfake(t, production())
		if len(truth.Findings) != 0 || rep.Summary.Verdict != audit.VerdictClean {
			t.Errorf("verdict %s (missing %v), findings %v", rep.Summary.Verdict, rep.Summary.Missing, truth.Findings)
		}
		compare(t, rep, truth)
	})
	t.Run("production conditions faults", func(t *testing.T) {
		rep, truth := runOnKfake(t, production(
			fakeapp.Fault{Kind: fakeapp.FaultDrop, Table: 1},
			fakeapp.Fault{Kind: fakeapp.FaultDrop, Table: 2},
			fakeapp.Fault{Kind: fakeapp.FaultPurgeBeforeCommit, Table: 0, Partition: 1},
			fakeapp.Fault{Kind: fakeapp.FaultAbortNotReplayed, Table: 2},
		))
		if len(truth.Findings) < 3 {
			t.Fatalf("ground truth too small: %v", truth.Findings)
		}
		compare(t, rep, truth)
	})
}
