package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/txns"
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
			// gen-app folds no table: no spec can be inferred and the keyed
			// checks do not run; its commit history shows the committed
			// offset of gen.orders/0 moved from 4 to 6 by an admin commit while
			// the group was empty: offsets 4-5 never consumed (gen/main.go)
			if code != exitFindings {
				t.Fatalf("diff exit %d, want 1 (loss); stderr %s", code, stderr)
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
					Missing []string `json:"missing_evidence"`
					Notes   []string `json:"notes"`
				} `json:"summary"`
				Findings []struct {
					Cause     string `json:"cause"`
					Severity  string `json:"severity"`
					Topic     string `json:"topic"`
					Partition int32  `json:"partition"`
					Offset    int64  `json:"offset"`
					Count     int64  `json:"count"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var other []string
			for _, m := range rep.Summary.Missing {
				if !strings.HasPrefix(m, "no spec") {
					other = append(other, m)
				}
			}
			if rep.Summary.Verdict != "loss" || len(other) != 0 {
				t.Errorf("verdict %s, missing %v; want loss with only the spec missing", rep.Summary.Verdict, rep.Summary.Missing)
			}
			var lost []string
			for _, f := range rep.Findings {
				if f.Severity == "loss" || f.Severity == "anomaly" {
					lost = append(lost, fmt.Sprintf("%s %s/%d@%d+%d", f.Cause, f.Topic, f.Partition, f.Offset, f.Count))
				}
			}
			if want := []string{"offsets-forward gen.orders/0@4+2"}; !slices.Equal(lost, want) {
				t.Errorf("findings %v, want %v", lost, want)
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

// liveAnswers is what the live broker answered before it stopped
// (live.json, written by audit/segment/testdata/real/gen).
type liveAnswers struct {
	Transactions []audit.Transaction `json:"transactions"`
	Topics       []struct {
		Name              string `json:"name"`
		Partitions        int32  `json:"partitions"`
		ReplicationFactor int16  `json:"replication_factor"`
	} `json:"topics"`
	Partitions map[string]struct {
		LogStart int64 `json:"log_start"`
		LSO      int64 `json:"lso"`
		HW       int64 `json:"hw"`
	} `json:"partition_offsets"`
}

func readLive(t *testing.T, dir string) liveAnswers {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "live.json"))
	if err != nil {
		t.Fatal(err)
	}
	var live liveAnswers
	if err := json.Unmarshal(b, &live); err != nil {
		t.Fatal(err)
	}
	return live
}

// TestOfflineLogDirCommands runs kaudit ledger, txns and topology on
// stopped real brokers' log dirs and compares what they say with what
// the live broker answered before it stopped: every partition's log
// start, LSO and high watermark with every offset below it accounted
// for, the app's transactional ids with their state, producer and epoch,
// and the app's topics with their partition counts.
func TestOfflineLogDirCommands(t *testing.T) {
	for _, dir := range realLogDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			live := readLive(t, dir)
			topics := map[string]bool{}
			for tp := range live.Partitions {
				topics[tp[:strings.LastIndexByte(tp, '/')]] = true
			}
			for topic := range topics {
				out, stderr, code := runCLI(t, "ledger", "--log-dir", dir, "--topic", topic, "--format", "json")
				if code != exitClean {
					t.Errorf("ledger %s: exit %d, stderr %s", topic, code, stderr)
					continue
				}
				var l struct {
					Partitions []struct {
						Partition int32            `json:"partition"`
						LogStart  int64            `json:"log_start"`
						LSO       int64            `json:"lso"`
						HW        int64            `json:"hw"`
						Fates     map[string]int64 `json:"fates"`
					} `json:"partitions"`
				}
				if err := json.Unmarshal([]byte(out), &l); err != nil {
					t.Fatalf("ledger %s: %v\n%s", topic, err, out)
				}
				for _, p := range l.Partitions {
					tp := fmt.Sprintf("%s/%d", topic, p.Partition)
					want, ok := live.Partitions[tp]
					if !ok {
						t.Errorf("ledger lists %s, which the live broker did not", tp)
						continue
					}
					if p.LogStart != want.LogStart || p.LSO != want.LSO || p.HW != want.HW {
						t.Errorf("%s: log start %d, LSO %d, HW %d; live %d, %d, %d", tp, p.LogStart, p.LSO, p.HW, want.LogStart, want.LSO, want.HW)
					}
					var n int64
					for _, c := range p.Fates {
						n += c
					}
					if n != p.HW {
						t.Errorf("%s: fates %v account for %d offsets, want all %d below the HW", tp, p.Fates, n, p.HW)
					}
				}
			}

			out, stderr, code := runCLI(t, "txns", "--log-dir", dir, "--app-id", "gen-app", "--format", "json")
			if code != exitClean {
				t.Fatalf("txns: exit %d, stderr %s", code, stderr)
			}
			var census txns.Census
			if err := json.Unmarshal([]byte(out), &census); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, tx := range live.Transactions {
				if strings.HasPrefix(tx.TransactionalID, "gen-app-") {
					want = append(want, fmt.Sprintf("%s %s %d/%d", tx.TransactionalID, tx.State, tx.ProducerID, tx.ProducerEpoch))
				}
			}
			var got []string
			for _, tx := range census.Transactions {
				got = append(got, fmt.Sprintf("%s %s %d/%d", tx.TransactionalID, tx.State, tx.ProducerID, tx.ProducerEpoch))
			}
			slices.Sort(want)
			slices.Sort(got)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Errorf("txns from the log dir:\n%q\nlive:\n%q", got, want)
			}

			out, stderr, code = runCLI(t, "topology", "--log-dir", dir, "--app-id", "gen-app", "--format", "json")
			if code != exitClean {
				t.Fatalf("topology: exit %d, stderr %s", code, stderr)
			}
			var topo struct {
				Discovery struct {
					Topics []struct {
						Name       string `json:"name"`
						Role       string `json:"role"`
						Partitions int32  `json:"partitions"`
					} `json:"topics"`
				} `json:"discovery"`
				Findings []struct {
					Cause     string `json:"cause"`
					Severity  string `json:"severity"`
					Topic     string `json:"topic"`
					Partition int32  `json:"partition"`
					Offset    int64  `json:"offset"`
					Count     int64  `json:"count"`
				} `json:"findings"`
			}
			if err := json.Unmarshal([]byte(out), &topo); err != nil {
				t.Fatal(err)
			}
			liveParts := map[string]int32{}
			for _, ti := range live.Topics {
				liveParts[ti.Name] = ti.Partitions
			}
			roles := map[string]string{}
			for _, ti := range topo.Discovery.Topics {
				roles[ti.Name] = ti.Role
				if n, ok := liveParts[ti.Name]; !ok || n != ti.Partitions {
					t.Errorf("topology: %s has %d partitions, live %d", ti.Name, ti.Partitions, n)
				}
			}
			if roles["gen.orders"] != "source" || roles["gen-app-store-changelog"] != "changelog" {
				t.Errorf("topology roles %v, want gen.orders a source and gen-app-store-changelog a changelog", roles)
			}
			risky := false
			for _, f := range topo.Findings {
				risky = risky || f.Cause == "config-risk" && f.Topic == "gen.orders"
			}
			if !risky {
				t.Errorf("topology: no config risk on gen.orders (unclean.leader.election.enable from the metadata log): %+v", topo.Findings)
			}
		})
	}
}
