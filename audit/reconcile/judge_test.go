package reconcile_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit/spec"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/codec"
	"github.com/kaudit/kaudit/audit/reconcile"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// judgeIn is one source input of key "k": its partition, id, amount and
// timestamp.
type judgeIn struct {
	p      int32
	id     string
	amount int
	ts     int64
}

// judgeCopy is one repartition copy: of the input with id, committed
// below the cut (fate "c"), committed and purged since ("x"), committed at
// or above the cut, in flight ("p"), or in an aborted transaction ("a").
type judgeCopy struct {
	id   string
	fate string
}

// judgeState is one changelog state of key "k".
type judgeState struct {
	v  string // the value as JSON; "" for a tombstone
	ts int64
}

func judgeValue(id string, amount int) string {
	return fmt.Sprintf(`{"orderId":"k","id":%q,"amount":%d}`, id, amount)
}

// runJudge writes one key's evidence and audits it: inputs on topic src,
// copies on one repartition partition (purged past every copy when
// purged), states on the changelog; every input and copy is below the
// group's committed offsets.
func runJudge(t *testing.T, reduce string, ins []judgeIn, copies []judgeCopy, purged bool, states []judgeState) *audit.Report {
	t.Helper()
	return runJudgeOut(t, reduce, ins, copies, purged, states, nil, judgeOpts{})
}

// judgeOpts is how the output topic of runJudgeOut was kept (compacted,
// or its first records deleted: its log start), and whether the spec says
// the store has no cache.
type judgeOpts struct {
	compacted bool
	logStart  int64
	uncached  bool
	// oneTxn writes the changelog states in one transaction (as a store
	// without a cache does for a key updated twice before a commit), each
	// in its own otherwise
	oneTxn bool
	// alos writes the changelog outside transactions, as at-least-once does
	alos bool
}

// runJudgeOut is runJudge with the table's own output topic "out" holding
// outputs (nil: no output topic), from offset out.logStart.
func runJudgeOut(t *testing.T, reduce string, ins []judgeIn, copies []judgeCopy, purged bool, states, outputs []judgeState, out judgeOpts) *audit.Report {
	t.Helper()
	sp, err := spec.ParseSpec("kaudit.yaml", []byte(fmt.Sprintf(`app_id: app
serdes: {key: string, value: json}
tables:
  - {name: t, source: src, select_key: value.orderId, reduce: %s, store: S}
`, reduce)))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Resolve(sp, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	m := fakeapp.NewMemory(time.UnixMilli(1_000_000))
	m.AddTopic(audit.TopicInfo{Name: "src", Partitions: 2})
	m.AddTopic(audit.TopicInfo{Name: "app-S-repartition", Partitions: 1})
	m.AddTopic(audit.TopicInfo{Name: "app-S-changelog", Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}})
	plain := audit.Batch{ProducerID: -1, ProducerEpoch: -1}
	next := map[int32]int64{}
	byID := map[string]judgeIn{}
	for _, in := range ins {
		byID[in.id] = in
		m.Append(audit.Record{Topic: "src", Partition: in.p, Offset: next[in.p], Key: []byte(in.id), Value: []byte(judgeValue(in.id, in.amount)), Timestamp: in.ts, Batch: plain})
		next[in.p]++
	}
	var off, purgeTo int64
	cut := int64(-1) // the repartition's committed offset: before the first copy in flight
	for _, c := range copies {
		if c.fate == "p" && cut < 0 {
			cut = off
		}
		if c.fate == "x" {
			purgeTo = off + 1
		}
		in := byID[c.id]
		r := audit.Record{Topic: "app-S-repartition", Offset: off, Key: []byte("k"), Value: []byte(judgeValue(in.id, in.amount)), Timestamp: in.ts, Batch: plain}
		if c.fate == "a" {
			r.Batch = audit.Batch{ProducerID: 7, ProducerEpoch: 0, Transactional: true, BaseOffset: off}
			m.Append(r)
			off++
			m.Append(audit.Record{Topic: "app-S-repartition", Offset: off, Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 0}, Timestamp: in.ts,
				Batch: audit.Batch{ProducerID: 7, ProducerEpoch: 0, Transactional: true, Control: true, BaseOffset: off}, Marker: &audit.Marker{Type: audit.MarkerAbort}})
		} else {
			m.Append(r)
		}
		off++
	}
	switch {
	case purged:
		m.SetOffsets(audit.TopicPartition{Topic: "app-S-repartition"}, audit.PartitionOffsets{LogStart: off + 5, LSO: off + 5, HW: off + 5})
		off += 5
	case purgeTo > 0:
		m.SetOffsets(audit.TopicPartition{Topic: "app-S-repartition"}, audit.PartitionOffsets{LogStart: purgeTo, LSO: off, HW: off})
	}
	var clOff int64
	commit := func() {
		m.Append(audit.Record{Topic: "app-S-changelog", Offset: clOff, Key: []byte{0, 0, 0, 0}, Value: []byte{0, 0, 0, 0, 0, 1},
			Batch: audit.Batch{ProducerID: 9, ProducerEpoch: 0, Transactional: true, Control: true, BaseOffset: clOff}, Marker: &audit.Marker{Type: audit.MarkerCommit}})
		clOff++
	}
	// the states in transactions, as exactly-once writes them (a
	// changelog written outside transactions is at-least-once's): one a
	// state uncached, else one for them all
	base := int64(0)
	for i, s := range states {
		r := audit.Record{Topic: "app-S-changelog", Offset: clOff, Key: []byte("k"), Timestamp: s.ts}
		if out.uncached && !out.oneTxn || i == 0 {
			base = clOff
		}
		r.Batch = audit.Batch{ProducerID: 9, ProducerEpoch: 0, Transactional: true, BaseOffset: base}
		if out.alos {
			r.Batch = plain
		}
		if s.v != "" {
			r.Value = []byte(s.v)
		}
		m.Append(r)
		clOff++
		if !out.alos && (out.uncached && !out.oneTxn || i == len(states)-1) {
			commit()
		}
	}
	if cut < 0 {
		cut = off
	}
	m.SetGroup(audit.GroupOffsets{Group: "app", Offsets: map[audit.TopicPartition]int64{
		{Topic: "src", Partition: 0}: next[0], {Topic: "src", Partition: 1}: next[1], {Topic: "app-S-repartition"}: cut}})
	pl := reconcile.FromPlan(plan, "string")
	pl.Tables[0].Uncached = out.uncached
	if outputs != nil {
		info := audit.TopicInfo{Name: "out", Partitions: 1}
		if out.compacted {
			info.Configs = map[string]string{"cleanup.policy": "compact"}
		}
		m.AddTopic(info)
		pl.Tables[0].Output = "out"
		for i, s := range outputs {
			r := audit.Record{Topic: "out", Offset: out.logStart + int64(i), Key: []byte("k"), Timestamp: s.ts, Batch: plain}
			if s.v != "" {
				r.Value = []byte(s.v)
			}
			m.Append(r)
		}
		if out.logStart > 0 {
			end := out.logStart + int64(len(outputs))
			m.SetOffsets(audit.TopicPartition{Topic: "out"}, audit.PartitionOffsets{LogStart: out.logStart, LSO: end, HW: end})
		}
	}
	dec, err := codec.New(codec.Config{KeySerde: "string", ValueSerde: "json"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := reconcile.Run(t.Context(), m, pl, reconcile.Options{Decoder: dec})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// judged lists a report's loss and anomaly findings as
// "stage/cause topic/partition@offset" (with "×N [candidates]" for an
// undecided one), sorted.
func judged(rep *audit.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		if f.Severity != audit.SeverityLoss && f.Severity != audit.SeverityAnomaly {
			continue
		}
		s := fmt.Sprintf("%s/%s %s/%d@%d", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset)
		if f.Candidates != "" {
			s += fmt.Sprintf(" ×%d [%s]", f.Count, f.Candidates)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func sumState(id string, amount int, ts int64) judgeState {
	return judgeState{v: judgeValue(id, amount), ts: ts}
}

func countState(n int, ts int64) judgeState { return judgeState{v: fmt.Sprint(n), ts: ts} }

// TestJudgeRules pins each rule of the key judgement (docs/how-it-decides.md,
// "Judging a key") with a case it decides and the cause it must name; every rule
// has a clean case beside it that must stay clean. A misattributed cause
// fails the case.
func TestJudgeRules(t *testing.T) {
	a, b, c := judgeIn{0, "a", 5, 100}, judgeIn{0, "b", 7, 200}, judgeIn{0, "c", 3, 300}
	b1 := judgeIn{1, "b", 7, 200} // b in the other source partition
	for _, tt := range []struct {
		name   string
		reduce string
		ins    []judgeIn
		copies []judgeCopy
		purged bool
		states []judgeState
		want   []string
	}{
		// The timestamp rule: a state's timestamp is the largest of the
		// inputs applied to it, so a newer input was not applied, under
		// any interleaving of the key's source partitions.
		{"latest, spread, last update lost", "latest", []judgeIn{a, b1}, nil, true,
			[]judgeState{{judgeValue("a", 5), 100}},
			[]string{"repartition/unapplied src/1@0"}},
		{"latest, spread, applied out of timestamp order: clean", "latest", []judgeIn{a, b1}, nil, true,
			[]judgeState{{judgeValue("b", 7), 200}, {judgeValue("a", 5), 200}}, nil},
		{"latest, spread, in timestamp order: clean", "latest", []judgeIn{a, b1}, nil, true,
			[]judgeState{{judgeValue("b", 7), 200}}, nil},
		// The history rule: the changelog's states are a subsequence of the
		// fold's; the inputs an explanation leaves out are the vanished ones,
		// each with the cause its own copy gives.
		{"sum, copies purged, middle input dropped: unapplied, not the store's fault", "sum(amount)", []judgeIn{a, b, c}, nil, true,
			[]judgeState{sumState("a", 5, 100), sumState("a", 8, 300)},
			[]string{"repartition/unapplied src/0@1"}},
		{"sum, history starting from the second input is no reset", "sum(amount)", []judgeIn{a, b, c}, nil, true,
			[]judgeState{sumState("b", 7, 200), sumState("b", 10, 300)},
			[]string{"repartition/unapplied src/0@0"}},
		{"sum, copies purged: clean", "sum(amount)", []judgeIn{a, b, c}, nil, true,
			[]judgeState{sumState("a", 12, 200), sumState("a", 15, 300)}, nil},
		{"sum, copies readable, one never written: dropped", "sum(amount)", []judgeIn{a, b, c}, []judgeCopy{{"a", "c"}, {"c", "c"}}, false,
			[]judgeState{sumState("a", 8, 300)},
			[]string{"repartition/dropped src/0@1"}},
		{"sum, copy readable and applied, not in the state: state-diverged", "sum(amount)", []judgeIn{a, b, c}, []judgeCopy{{"a", "c"}, {"b", "c"}, {"c", "c"}}, false,
			[]judgeState{sumState("a", 8, 300)},
			[]string{"store/state-diverged src/0@1"}},
		{"sum, only an aborted copy: aborted-not-replayed", "sum(amount)", []judgeIn{a, b, c}, []judgeCopy{{"a", "c"}, {"b", "a"}, {"c", "c"}}, false,
			[]judgeState{sumState("a", 8, 300)},
			[]string{"repartition/aborted-not-replayed src/0@1"}},
		{"sum, aborted and replayed: clean", "sum(amount)", []judgeIn{a, b, c}, []judgeCopy{{"a", "c"}, {"b", "a"}, {"b", "c"}, {"c", "c"}}, false,
			[]judgeState{sumState("a", 15, 300)}, nil},
		// The readable copies fix the apply order.
		{"sum, applied against the readable copies' order", "sum(amount)", []judgeIn{a, b1}, []judgeCopy{{"b", "c"}, {"a", "c"}}, false,
			[]judgeState{sumState("a", 12, 200)},
			[]string{"store/state-diverged app-S-changelog/0@0"}},
		// Inputs alike (value and timestamp: a mapValues that keeps a
		// customer and an amount) share their copies: where the
		// repartition was purged, the readable copy is the later input's.
		{"sum, two inputs alike, the earlier one's copy purged: clean", "sum(amount)", []judgeIn{a, b, b, c}, []judgeCopy{{"a", "x"}, {"b", "x"}, {"b", "c"}, {"c", "c"}}, false,
			[]judgeState{sumState("a", 5, 100), sumState("a", 12, 200), sumState("a", 22, 300)}, nil},
		{"sum, two inputs alike, one applied, the other not: undecided between them", "sum(amount)", []judgeIn{a, b, b, c}, []judgeCopy{{"a", "x"}, {"b", "x"}, {"c", "c"}}, false,
			[]judgeState{sumState("a", 5, 100), sumState("a", 12, 200), sumState("a", 15, 300)}, []string{"repartition/unapplied src/0@1 ×1 [src/0@1, src/0@2]"}},
		// A restart: the history shows the aggregate continuing, then
		// starting again from a raw input.
		{"count, store restarted: state-reset of what it held", "count", []judgeIn{a, b, c, {0, "d", 1, 400}, {0, "e", 1, 500}}, nil, true,
			[]judgeState{countState(1, 100), countState(2, 200), countState(3, 300), countState(1, 400), countState(2, 500)},
			[]string{"store/state-reset src/0@0", "store/state-reset src/0@1", "store/state-reset src/0@2"}},
		{"count: clean", "count", []judgeIn{a, b, c}, nil, true,
			[]judgeState{countState(1, 100), countState(3, 300)}, nil},
		// Undecided: a loss is proven, not which input it is.
		{"count, one of two inputs missing: undecided", "count", []judgeIn{a, b, c}, nil, true,
			[]judgeState{countState(2, 300)},
			[]string{"repartition/unapplied src/0@0 ×1 [src/0@0, src/0@1]"}},
		// Duplicates: an input with two committed copies was applied twice.
		{"sum, duplicate applied twice: the duplicate only", "sum(amount)", []judgeIn{a, b}, []judgeCopy{{"a", "c"}, {"a", "c"}, {"b", "c"}}, false,
			[]judgeState{sumState("a", 17, 200)},
			[]string{"repartition/duplicate app-S-repartition/0@0"}},
		{"latest, a duplicate's second copy in flight, applied through the first (purged): clean", "latest", []judgeIn{a, b}, []judgeCopy{{"a", "x"}, {"b", "x"}, {"b", "p"}}, false,
			[]judgeState{{judgeValue("b", 7), 200}}, nil},
		{"sum, the last input in flight, not applied yet: clean", "sum(amount)", []judgeIn{a, b, c}, []judgeCopy{{"a", "c"}, {"b", "c"}, {"c", "p"}}, false,
			[]judgeState{sumState("a", 12, 200)}, nil},
		{"sum, duplicate with its copies purged: the duplicate only", "sum(amount)", []judgeIn{a, b}, nil, true,
			[]judgeState{sumState("a", 10, 100), sumState("a", 17, 200)},
			[]string{"store/duplicate src/0@0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := runJudge(t, tt.reduce, tt.ins, tt.copies, tt.purged, tt.states)
			got := judged(rep)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				var b strings.Builder
				for _, f := range rep.Findings {
					fmt.Fprintf(&b, "\n  %s/%s %s/%d@%d: %s", f.Stage, f.Cause, f.Topic, f.Partition, f.Offset, f.Detail)
				}
				t.Errorf("findings\n  %s\nwant\n  %s\nreport:%s\nmissing %v", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "), b.String(), rep.Summary.Missing)
			}
			wantVerdict := audit.VerdictClean
			for _, w := range tt.want {
				if strings.Contains(w, "duplicate") {
					wantVerdict = audit.VerdictAnomaly
				} else {
					wantVerdict = audit.VerdictLoss
					break
				}
			}
			if rep.Summary.Verdict != wantVerdict {
				t.Errorf("verdict %s, want %s (missing %v)", rep.Summary.Verdict, wantVerdict, rep.Summary.Missing)
			}
		})
	}
}

// TestSignatures: the evidence a known bug leaves ties its findings to it:
// a repartition partition purged above the cut (KAFKA-17635), one
// changelog range a store lost under restarted keys (KAFKA-16017).
func TestSignatures(t *testing.T) {
	a, b, c := judgeIn{0, "a", 5, 100}, judgeIn{0, "b", 7, 200}, judgeIn{0, "c", 3, 300}
	rep := runJudge(t, "count", []judgeIn{a, b, c, {0, "d", 1, 400}, {0, "e", 1, 500}}, nil, true,
		[]judgeState{countState(1, 100), countState(2, 200), countState(3, 300), countState(1, 400), countState(2, 500)})
	if len(rep.Signatures) != 1 {
		t.Fatalf("signatures %+v, want one", rep.Signatures)
	}
	sg := rep.Signatures[0]
	if sg.Issue != "KAFKA-16017" || sg.Topic != "app-S-changelog" || sg.From != 0 || sg.To != 2 || sg.Findings != 3 {
		t.Errorf("signature %+v, want KAFKA-16017 on app-S-changelog/0 offsets 0-2 with 3 findings", sg)
	}

	// after recovery: inputs never applied, their copies' range purged
	rep = runJudge(t, "sum(amount)", []judgeIn{a, b, c}, nil, true, []judgeState{sumState("a", 5, 100), sumState("a", 8, 300)})
	if len(rep.Signatures) != 1 || !rep.Signatures[0].Candidate || rep.Signatures[0].Issue != "KAFKA-17635" || rep.Signatures[0].Findings != 1 {
		t.Errorf("signatures %+v, want one KAFKA-17635 candidate over the unapplied input", rep.Signatures)
	}

	s := fakeapp.SeedScenario("shop", 300)
	s.Faults = []fakeapp.Fault{{Kind: fakeapp.FaultPurgeBeforeCommit, Table: 0, Partition: 1}}
	rep, truth := runScenario(t, s)
	compare(t, rep, truth)
	var n int64
	for _, f := range rep.Findings {
		if f.Cause == audit.CausePurgedBeforeCommit {
			n += f.Count
		}
	}
	var proven []audit.Signature
	for _, sg := range rep.Signatures {
		if !sg.Candidate {
			proven = append(proven, sg)
		}
	}
	if len(proven) != 1 || proven[0].Issue != "KAFKA-17635" || proven[0].Partition != 1 || proven[0].Findings != n || n == 0 {
		t.Errorf("signatures %+v, want one KAFKA-17635 on partition 1 over the %d purged-before-commit inputs", rep.Signatures, n)
	}
}

// TestTableOutput: a table's own output topic (toStream().to(t)) holds, for
// each key, the store's final state last, and every committed changelog
// state in order (one flush writes both); the store right and the output
// behind is a join-stage finding, the store wrong is the table's.
func TestTableOutput(t *testing.T) {
	a, b, c := judgeIn{0, "a", 5, 100}, judgeIn{0, "b", 7, 200}, judgeIn{0, "c", 9, 300}
	every := []judgeState{countState(1, 100), countState(2, 200), countState(3, 300)}
	for _, tt := range []struct {
		name    string
		states  []judgeState // the changelog's
		outputs []judgeState
		out     judgeOpts
		want    []string
	}{
		{"every state forwarded: clean", every, every, judgeOpts{}, nil},
		{"the cache flushed the last only, to both: clean", every[2:], every[2:], judgeOpts{}, nil},
		{"the cache flushed the first and the last: clean", []judgeState{every[0], every[2]}, []judgeState{every[0], every[2]}, judgeOpts{}, nil},
		{"the output holds states the compacted changelog lost: clean", every[1:], every, judgeOpts{}, nil},
		{"a middle state never reached the output", every, []judgeState{every[0], every[2]}, judgeOpts{}, []string{"join/join-missing out/0@-1"}},
		{"the first state never reached the output", every, every[1:], judgeOpts{}, []string{"join/join-missing out/0@-1"}},
		{"two states never reached the output", every, every[2:], judgeOpts{}, []string{"join/join-missing out/0@-1", "join/join-missing out/0@-1"}},
		{"retention deleted the output's first records: the last is checked: clean", every, every[2:], judgeOpts{logStart: 2}, nil},
		{"the output compacted: the last is checked: clean", every, every[2:], judgeOpts{compacted: true}, nil},
		{"the last update never reached the output", every, every[:2], judgeOpts{}, []string{"join/join-stale out/0@1"}},
		{"the last update never reached the compacted output", every, every[1:2], judgeOpts{compacted: true}, []string{"join/join-stale out/0@0"}},
		{"nothing reached the output", every, []judgeState{}, judgeOpts{}, []string{"join/join-missing out/0@-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := runJudgeOut(t, "count", []judgeIn{a, b, c}, nil, true, tt.states, tt.outputs, tt.out)
			if got := judged(rep); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings %v, want %v (missing %v)", got, tt.want, rep.Summary.Missing)
			}
		})
	}
}

// TestJudgeAtLeastOnceRestart (AB's V15): a changelog written outside
// transactions is an at-least-once app's, which after a restart applies
// again what it processed since its last commit. For a latest table a
// history that starts over from an earlier input is that as much as a
// wiped store (the generated app of the violation, re-run on real Kafka,
// pins it); an aggregate applied again only grows, so a count that drops
// back to 1 stays a state-reset under at-least-once too.
func TestJudgeAtLeastOnceRestart(t *testing.T) {
	a, b, c := judgeIn{0, "a", 5, 100}, judgeIn{0, "b", 7, 200}, judgeIn{0, "c", 3, 300}
	ins := []judgeIn{a, b, c, {0, "d", 1, 400}, {0, "e", 1, 500}}
	states := []judgeState{countState(1, 100), countState(2, 200), countState(3, 300), countState(1, 400), countState(2, 500)}
	for _, alos := range []bool{false, true} {
		t.Run(fmt.Sprintf("count, at-least-once=%v", alos), func(t *testing.T) {
			rep := runJudgeOut(t, "count", ins, nil, true, states, nil, judgeOpts{alos: alos, uncached: true})
			want := []string{"store/state-reset src/0@0", "store/state-reset src/0@1", "store/state-reset src/0@2"}
			if got := judged(rep); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("findings %v, want %v (missing %v)", got, want, rep.Summary.Missing)
			}
		})
	}
}
