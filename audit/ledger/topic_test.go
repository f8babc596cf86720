package ledger_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/ledger"
	"github.com/kaudit/kaudit/audit/segment"
)

// TestTopicLogDir classifies gen.out from a stopped real broker's log
// dir: one committed, one aborted and one open transaction, the open one
// judged at the time the broker stopped (the source's clock), so it hangs
// only under a timeout shorter than the 9 s it had been open.
func TestTopicLogDir(t *testing.T) {
	d, err := segment.OpenDirs(filepath.Join("..", "segment", "testdata", "real", "kafka-3.6.2-logdir"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		timeout time.Duration
		hanging int
	}{{15 * time.Minute, 0}, {5 * time.Second, 1}} {
		tl, err := ledger.Topic(t.Context(), d, ledger.TopicOptions{Topic: "gen.out", Partition: -1, To: -1, MaxTxnTimeout: tt.timeout})
		if err != nil {
			t.Fatal(err)
		}
		if len(tl.Partitions) != 1 {
			t.Fatalf("%d partitions, want 1", len(tl.Partitions))
		}
		p := tl.Partitions[0]
		if p.Transactions.Committed != 1 || p.Transactions.Aborted != 1 || p.Transactions.Open != 1 || p.HW != 5 || p.LSO != 4 {
			t.Errorf("timeout %s: transactions %+v, offsets %+v; want 1 committed, 1 aborted, 1 open, LSO 4, HW 5", tt.timeout, p.Transactions, p)
		}
		n := 0
		for _, f := range tl.Findings {
			if f.Cause == audit.CauseHangingTransaction {
				n++
			}
		}
		if n != tt.hanging {
			t.Errorf("timeout %s: %d hanging transactions, want %d: %+v", tt.timeout, n, tt.hanging, tl.Findings)
		}
	}
	for name, o := range map[string]ledger.TopicOptions{
		"no topic":     {Topic: "nope", Partition: -1, To: -1},
		"no partition": {Topic: "gen.out", Partition: 3, To: -1},
	} {
		var u audit.UsageError
		if _, err := ledger.Topic(t.Context(), d, o); !errors.As(err, &u) {
			t.Errorf("%s: error %v, want a usage error", name, err)
		}
	}
}
