package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// realLogDirs are the log dirs real brokers left (audit/segment/testdata/real/gen.sh).
func realLogDirs(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join("..", "..", "audit", "segment", "testdata", "real", "kafka-*-logdir"))
	if len(dirs) == 0 {
		t.Fatal("no real log dir fixture")
	}
	return dirs
}

// TestOfflineLogDirAudit audits stopped real brokers' log dirs with no
// cluster: the group's cut comes from __consumer_offsets, the configs from
// the metadata log (the unclean-election override is a config risk), the
// transactions from __transaction_state, and the clock is when the broker
// stopped, so the transaction left open 9 s before is open, not hanging,
// until the timeout is shorter than that.
func TestOfflineLogDirAudit(t *testing.T) {
	for _, dir := range realLogDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			out, stderr, code := runCLI(t, "diff", "--log-dir", dir, "--app-id", "gen-app", "--format", "json")
			if code != 0 {
				t.Fatalf("diff exit %d, want 0 (clean); stderr %s", code, stderr)
			}
			var rep struct {
				Cut []struct {
					Topic     string `json:"topic"`
					Partition int32  `json:"partition"`
					Committed *int64 `json:"committed"` // null: none
					LogStart  int64  `json:"log_start"`
				} `json:"cut"`
				Summary struct {
					Verdict string   `json:"verdict"`
					Missing []string `json:"missing"`
					Notes   []string `json:"notes"`
				} `json:"summary"`
				Findings []struct {
					Cause string `json:"cause"`
					Topic string `json:"topic"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if rep.Summary.Verdict != "clean" || len(rep.Summary.Missing) != 0 {
				t.Errorf("verdict %s, missing %v; want clean with nothing missing", rep.Summary.Verdict, rep.Summary.Missing)
			}
			if !slices.ContainsFunc(rep.Summary.Notes, func(n string) bool {
				return strings.Contains(n, "offset commit of gen.orders/0 to 8 by producer ") && strings.Contains(n, "not counted")
			}) {
				t.Errorf("no note about the open transaction's offset commit: %q", rep.Summary.Notes)
			}
			cut := map[string]int64{}
			for _, c := range rep.Cut {
				cut[fmt.Sprintf("%s/%d", c.Topic, c.Partition)] = -1
				if c.Committed != nil {
					cut[fmt.Sprintf("%s/%d", c.Topic, c.Partition)] = *c.Committed
				}
				if c.Topic == "gen.orders" && c.Partition == 1 && c.LogStart != 2 {
					t.Errorf("gen.orders/1 log start %d, want 2 (purged)", c.LogStart)
				}
			}
			if cut["gen.orders/0"] != 6 || cut["gen.orders/1"] != 7 || cut["gen-app-store-changelog/0"] != -1 {
				t.Errorf("cut %v, want gen.orders 6 and 7 (the aborted 99 and the open 8 not counted) and the deleted changelog offset absent", cut)
			}
			risks := 0
			for _, f := range rep.Findings {
				if f.Cause == "config-risk" && f.Topic == "gen.orders" {
					risks++
				}
			}
			if risks != 1 {
				t.Errorf("%d config risks on gen.orders, want 1 (unclean.leader.election.enable=true from the metadata log)", risks)
			}

			out, stderr, code = runCLI(t, "txns", "--log-dir", dir, "--app-id", "gen-app")
			if code != 0 || !strings.Contains(out, "gen-app-1_0  Ongoing") || !strings.Contains(out, "0 hanging") {
				t.Errorf("txns exit %d: want the open transaction, not hanging:\n%s\n%s", code, out, stderr)
			}
			out, _, code = runCLI(t, "txns", "--log-dir", dir, "--app-id", "gen-app", "--max-transaction-timeout", "5s")
			if code != 1 || !strings.Contains(out, "hanging-transaction  gen.out/0@4") {
				t.Errorf("txns --max-transaction-timeout 5s exit %d: want a hanging transaction on gen.out/0:\n%s", code, out)
			}
		})
	}
}
