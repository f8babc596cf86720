package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/internal/fakeapp"
)

// jsonSpec is the demo app's spec with JSON values (what the scenario
// generator writes), as cmd/kaudit's safety tests use it.
const jsonSpec = `app_id: shop
topology: topology.txt
serdes: {key: string, value: json}
tables:
  - {name: orders,    source: orders-v1,    select_key: value.orderId, reduce: latest}
  - {name: payments,  source: payments-v1,  select_key: value.orderId, reduce: latest}
  - {name: shipments, source: shipments-v1, select_key: value.orderId, reduce: latest}
joins:
  - output: order-status
    left: orders
    right: [payments, shipments]
    type: left
`

// writeKeys are the requests a read-only auditor must never send.
var writeKeys = []kmsg.Key{
	kmsg.Produce, kmsg.OffsetCommit, kmsg.TxnOffsetCommit, kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat,
	kmsg.LeaveGroup, kmsg.DeleteRecords, kmsg.CreateTopics, kmsg.DeleteTopics, kmsg.CreatePartitions,
	kmsg.AlterConfigs, kmsg.IncrementalAlterConfigs, kmsg.InitProducerID, kmsg.AddPartitionsToTxn,
	kmsg.AddOffsetsToTxn, kmsg.EndTxn, kmsg.WriteTxnMarkers, kmsg.DeleteGroups, kmsg.OffsetDelete,
	kmsg.ElectLeaders, kmsg.AlterPartitionAssignments, kmsg.ConsumerGroupHeartbeat, kmsg.AlterReplicaLogDirs,
	kmsg.CreateACLs, kmsg.DeleteACLs, kmsg.AlterClientQuotas, kmsg.AlterUserSCRAMCredentials, kmsg.CreateDelegationToken,
}

// liveKeys limits the faults to these request keys (comma-separated names).
var liveKeys string

// broker is a kfake cluster holding one app, watched on every request key.
type broker struct {
	name    string
	c       *kfake.Cluster
	bs      string
	mu      sync.Mutex
	on      bool
	seen    map[kmsg.Key]int
	auto    int          // Metadata requests allowing auto topic creation
	drop    atomic.Int32 // key+1 whose requests drop the connection; 0 none
	left    atomic.Int32 // drops left, -1 unlimited
	dropped atomic.Int32 // connections dropped
}

func loopback() kfake.Opt {
	return kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") })
}

// newBroker writes scenario s into a fresh one-broker kfake cluster.
func newBroker(ctx context.Context, name string, s fakeapp.Scenario, opts ...kfake.Opt) (*broker, func(), error) {
	f, _, err := fakeapp.WriteFake(ctx, s, append([]kfake.Opt{loopback()}, opts...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("write %s: %w", name, err)
	}
	c := f.Cluster
	br := &broker{name: name, c: c, bs: strings.Join(c.ListenAddrs(), ","), seen: map[kmsg.Key]int{}}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		c.ControlKey(k, func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			br.mu.Lock()
			if br.on {
				br.seen[kmsg.Key(req.Key())]++
				if m, ok := req.(*kmsg.MetadataRequest); ok && m.AllowAutoTopicCreation && len(m.Topics) > 0 {
					br.auto++
				}
			}
			br.mu.Unlock()
			if br.drop.Load() == int32(req.Key())+1 {
				if l := br.left.Load(); l != 0 {
					if l > 0 {
						br.left.Add(-1)
					}
					br.dropped.Add(1)
					return nil, errors.New("probe: injected connection drop"), true
				}
			}
			return nil, nil, false
		})
	}
	return br, f.Close, nil
}

// record starts counting requests; stop ends it and returns the counts.
func (b *broker) record() {
	b.mu.Lock()
	b.on, b.seen, b.auto = true, map[kmsg.Key]int{}, 0
	b.mu.Unlock()
}

func (b *broker) stop() (map[kmsg.Key]int, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.on = false
	return b.seen, b.auto
}

// liveRun is one diff against a faulted broker.
type liveRun struct {
	app, key, fault, mode string
	res                   result
	v                     verdictOf
	writes                int
	hits                  int // requests the fault answered
	wrongCause            []string
}

type liveReport struct {
	keys      map[string][]string // app: request keys kaudit sends
	baselines map[string]outcome
	runs      []liveRun
	writes    map[string]int // write request name: count
	elapsed   time.Duration
}

// runLive audits two apps (clean, and one with a dropped payment) on kfake,
// first untouched, then with every request key kaudit sends failing once and
// always, by a dropped connection, an error code on every entity and an
// error code at the top level.
func runLive(root, bin, work string, timeout time.Duration, logf func(string, ...any)) (*liveReport, error) {
	start := time.Now()
	ctx := context.Background()
	dir := filepath.Join(work, "live")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	topo, err := os.ReadFile(filepath.Join(root, "cmd", "kaudit", "demo", "topology.txt"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "topology.txt"), topo, 0o644); err != nil {
		return nil, err
	}
	spec := filepath.Join(dir, "kaudit.yaml")
	if err := os.WriteFile(spec, []byte(jsonSpec), 0o644); err != nil {
		return nil, err
	}
	clean := fakeapp.SeedScenario("shop", 60)
	clean.Lag, clean.Inflight = 0, 0
	lossy := clean
	lossy.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultDrop, Table: 1}}
	hanging := clean
	hanging.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultHangingTransaction}}
	rep := &liveReport{keys: map[string][]string{}, baselines: map[string]outcome{}, writes: map[string]int{}}
	var brokers []*broker
	for _, a := range []struct {
		name string
		s    fakeapp.Scenario
	}{{"clean app", clean}, {"app with a drop", lossy}, {"app with a hanging transaction", hanging}} {
		b, closeFn, err := newBroker(ctx, a.name, a.s)
		if err != nil {
			return nil, err
		}
		defer closeFn()
		brokers = append(brokers, b)
	}
	args := func(b *broker) []string {
		return []string{"diff", "--spec", spec, "--bootstrap-server", b.bs, "--timeout", "2s", "--stable-timeout", "3s", "--format", "json"}
	}
	// Baselines, and the keys each run sends.
	for _, b := range brokers {
		b.record()
		res := runKaudit(bin, runOpts{dir: dir, timeout: timeout}, args(b)...)
		seen, auto := b.stop()
		rep.countWrites(seen, auto)
		o := parseOutcome(res.stdout, res.code)
		if !o.parsed || res.code > 1 {
			return nil, fmt.Errorf("%s untouched: exit %d: %s", b.name, res.code, trim(res.stderr, 300))
		}
		rep.baselines[b.name] = o
		var ks []string
		for k := range seen {
			ks = append(ks, kmsg.NameForKey(int16(k)))
		}
		sort.Strings(ks)
		rep.keys[b.name] = ks
		logf("live %s untouched: verdict %s, %d losses; keys %s", b.name, o.verdict, len(o.losses()), strings.Join(ks, ","))
	}
	faults := []string{"connection drop", "UNKNOWN_SERVER_ERROR", "top-level NOT_COORDINATOR"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, b := range brokers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, name := range rep.keys[b.name] {
				if liveKeys != "" && !slices.Contains(strings.Split(liveKeys, ","), name) {
					continue
				}
				k := keyByName(name)
				for _, f := range faults {
					for _, mode := range []string{"once", "always"} {
						var h *kfake.FaultHandle
						count := 1
						if mode == "always" {
							count = -1
						}
						switch f {
						case "connection drop":
							b.left.Store(int32(count))
							b.drop.Store(int32(k) + 1)
						case "UNKNOWN_SERVER_ERROR":
							h = b.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Key(k)}, Err: kerr.UnknownServerError, Count: count})
						default:
							h = b.c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Key(k)}, Err: kerr.NotCoordinator, Count: count, TopLevel: true})
						}
						b.record()
						b.dropped.Store(0)
						res := runKaudit(bin, runOpts{dir: dir, timeout: timeout}, args(b)...)
						seen, auto := b.stop()
						b.drop.Store(0)
						hits := int(b.dropped.Load())
						if h != nil {
							hits = h.Hits()
							h.Remove()
						}
						m := &mutation{kind: "live", class: classEvidence, target: &target{name: b.name}}
						v := judge(m, rep.baselines[b.name], res, nil)
						// a network fault changes no data: any new loss is misleading
						var wrongCause []string
						for _, f := range v.out.findings {
							if f.Severity == "loss" && !slices.Contains(rep.baselines[b.name].losses(), f.id()) {
								wrongCause = append(wrongCause, f.id())
							}
						}
						mu.Lock()
						n := rep.countWrites(seen, auto)
						rep.runs = append(rep.runs, liveRun{app: b.name, key: name, fault: f, mode: mode, res: res, v: v, writes: n, hits: hits, wrongCause: wrongCause})
						mu.Unlock()
					}
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(rep.runs, func(i, j int) bool {
		a, b := rep.runs[i], rep.runs[j]
		return a.app+a.key+a.fault+a.mode < b.app+b.key+b.fault+b.mode
	})
	rep.elapsed = time.Since(start)
	return rep, nil
}

// countWrites adds the write requests among seen and returns how many.
func (rep *liveReport) countWrites(seen map[kmsg.Key]int, auto int) int {
	n := 0
	for _, k := range writeKeys {
		if seen[k] > 0 {
			rep.writes[kmsg.NameForKey(int16(k))] += seen[k]
			n += seen[k]
		}
	}
	if auto > 0 {
		rep.writes["Metadata allowing auto-creation"] += auto
		n += auto
	}
	return n
}

func printLive(rep *liveReport, verbose bool) {
	fmt.Printf("## 3. Live faults (kfake, %d runs, %s)\n\n", len(rep.runs), rep.elapsed.Round(time.Second))
	apps := make([]string, 0, len(rep.keys))
	for app := range rep.keys {
		apps = append(apps, app)
	}
	sort.Strings(apps)
	for _, app := range apps {
		ks, b := rep.keys[app], rep.baselines[app]
		fmt.Printf("- %s untouched: verdict %s, %d loss findings; request keys kaudit sends: %s\n", app, b.verdict, len(b.losses()), strings.Join(ks, ", "))
	}
	fmt.Println()
	fmt.Println("| app / fault | runs | fault not hit | exit codes | panic | hang | write requests | same as untouched | said incomplete / not run | confident wrong verdict | new loss findings |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	type row struct {
		runs, notHit, panics, hangs, writes, same, qual, wrong, mis int
		codes                                                       map[int]int
	}
	rows := map[string]*row{}
	var names []string
	for _, r := range rep.runs {
		k := r.app + " / " + r.fault + " " + r.mode
		x := rows[k]
		if x == nil {
			x = &row{codes: map[int]int{}}
			rows[k] = x
			names = append(names, k)
		}
		x.runs++
		if r.hits == 0 {
			x.notHit++
		}
		x.codes[r.res.code]++
		if r.res.panicked {
			x.panics++
		}
		if r.res.hang {
			x.hangs++
		}
		x.writes += r.writes
		switch {
		case r.v.confident && r.v.same:
			x.same++
		case r.res.code == 3 || r.res.code == 4 || r.v.out.qualified():
			x.qual++
		}
		if r.v.wrong {
			x.wrong++
		}
		if len(r.wrongCause) > 0 {
			x.mis++
		}
	}
	sort.Strings(names)
	for _, n := range names {
		x := rows[n]
		fmt.Printf("| %s | %d | %d | %s | %d | %d | %d | %d | %d | %d | %d |\n", n, x.runs, x.notHit, codes(x.codes), x.panics, x.hangs, x.writes, x.same, x.qual, x.wrong, x.mis)
	}
	fmt.Println()
	if len(rep.writes) > 0 {
		fmt.Printf("Write requests: %v\n\n", rep.writes)
	}
	for _, r := range rep.runs {
		bad := r.res.panicked || r.res.hang || r.writes > 0 || r.v.wrong || len(r.wrongCause) > 0
		if bad || verbose {
			fmt.Printf("- %s, %s %s %s (hit %d): exit %d, verdict %s, losses %d, missing %d, %s; wrong %v; new losses %d; %s; stderr %s\n", r.app, r.key, r.fault, r.mode, r.hits,
				r.res.code, r.v.out.verdict, len(r.v.out.losses()), r.v.out.missing, r.res.elapsed.Round(100*time.Millisecond), r.v.wrong, len(r.wrongCause), lossCauses(r.v.out), trim(r.res.stderr, 160))
		}
	}
	fmt.Println()
}

func (s *summary) addLive(rep *liveReport) {
	for _, n := range rep.writes {
		s.writeRequests += n
	}
	for _, r := range rep.runs {
		s.liveRuns++
		if r.v.wrong || len(r.wrongCause) > 0 {
			s.liveWrong++
		}
		if r.res.panicked {
			s.panics++
		}
		if r.res.hang {
			s.hangs++
		}
	}
}

func keyByName(name string) int16 {
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		if kmsg.NameForKey(k) == name {
			return k
		}
	}
	return -1
}
