package history

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/offsetslog"
)

const group = "app"

var (
	src  = audit.TopicPartition{Topic: "orders", Partition: 0}
	rep  = audit.TopicPartition{Topic: "app-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition", Partition: 1}
	t0   = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	day0 = t0.UnixMilli()
)

// at is t0 plus s seconds, in ms.
func at(s float64) int64 { return day0 + int64(s*1000) }

// group log builds the group's __consumer_offsets partition the way the
// broker writes it, each record stamped with the time given, and replays
// it through offsetslog (the decoder every source uses).
type glog struct {
	recs  []audit.Record
	next  int64
	epoch int16 // the producers' epoch: a restart bumps it
}

func (l *glog) add(key, value []byte, t int64, pid int64, txn bool) {
	b := audit.Batch{BaseOffset: l.next, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, Compression: "none", MaxTimestamp: t}
	if pid >= 0 {
		b.ProducerID, b.ProducerEpoch, b.Transactional = pid, l.epoch, txn
	}
	l.recs = append(l.recs, audit.Record{Topic: audit.ConsumerOffsetsTopic, Offset: l.next, Key: key, Value: value, Timestamp: t, Batch: b})
	l.next++
}

func (l *glog) commitRec(tp audit.TopicPartition, off int64, t int64, pid int64) {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	v := kmsg.NewOffsetCommitValue()
	v.Version, v.Offset, v.LeaderEpoch, v.CommitTimestamp = 3, off, -1, t
	l.add(k.AppendTo(nil), v.AppendTo(nil), t, pid, pid >= 0)
}

// txn commits offsets in one transaction of producer pid at time t
// (the TxnOffsetCommit received 10 ms before its COMMIT marker).
func (l *glog) txn(pid int64, t int64, offs ...any) {
	for i := 0; i < len(offs); i += 2 {
		l.commitRec(offs[i].(audit.TopicPartition), int64(offs[i+1].(int)), t-10, pid)
	}
	l.marker(pid, audit.MarkerCommit, t)
}

func (l *glog) abort(pid int64, t int64, tp audit.TopicPartition, off int64) {
	l.commitRec(tp, off, t-10, pid)
	l.marker(pid, audit.MarkerAbort, t)
}

func (l *glog) marker(pid int64, typ audit.MarkerType, t int64) {
	b := audit.Batch{BaseOffset: l.next, ProducerID: pid, ProducerEpoch: l.epoch, BaseSequence: -1, Transactional: true, Control: true, Compression: "none", MaxTimestamp: t}
	l.recs = append(l.recs, audit.Record{Topic: audit.ConsumerOffsetsTopic, Offset: l.next, Timestamp: t, Batch: b, Marker: &audit.Marker{Type: typ}})
	l.next++
}

// plain is an OffsetCommit without transaction (an admin tool's, or an
// at-least-once consumer's).
func (l *glog) plain(tp audit.TopicPartition, off int64, t int64) { l.commitRec(tp, off, t, -1) }

func (l *glog) gen(g int32, members int, t int64) {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 3, "consumer", g
	for i := range members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{MemberID: fmt.Sprint("m", i)})
	}
	l.add((&kmsg.GroupMetadataKey{Version: 2, Group: group}).AppendTo(nil), v.AppendTo(nil), t, -1, false)
}

// genOf writes generation g with the named members.
func (l *glog) genOf(g int32, t int64, members ...string) {
	v := kmsg.NewGroupMetadataValue()
	v.Version, v.ProtocolType, v.Generation = 3, "consumer", g
	for _, m := range members {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{MemberID: m})
	}
	l.add((&kmsg.GroupMetadataKey{Version: 2, Group: group}).AppendTo(nil), v.AppendTo(nil), t, -1, false)
}

func (l *glog) history(t testing.TB) *audit.CommitHistory {
	t.Helper()
	r := offsetslog.NewReplay(group)
	r.KeepHistory(audit.TopicPartition{Topic: audit.ConsumerOffsetsTopic, Partition: 14}, 50, 0)
	for _, rec := range l.recs {
		if err := r.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	return r.Finish(l.next)
}

// compact removes what the log cleaner removes from the records before
// offset upTo: every offset commit and group metadata record but the last
// of its key, and the markers of transactions none of whose commits is
// left.
func (l *glog) compact(upTo int64) {
	last := map[string]int64{}
	for _, r := range l.recs {
		if r.Offset < upTo && !r.Batch.Control {
			last[string(r.Key)] = r.Offset
		}
	}
	kept := map[int64]bool{} // producers with a commit left
	var out []audit.Record
	for _, r := range l.recs {
		if r.Offset < upTo && !r.Batch.Control && last[string(r.Key)] != r.Offset {
			continue
		}
		if !r.Batch.Control && r.Batch.Transactional {
			kept[r.Batch.ProducerID] = true
		}
		out = append(out, r)
	}
	l.recs = out[:0:0]
	for _, r := range out {
		if r.Offset < upTo && r.Batch.Control && !kept[r.Batch.ProducerID] {
			continue
		}
		l.recs = append(l.recs, r)
	}
}

// brokerLine is a broker's "Incremented log start offset" line at time t,
// the broker logging in UTC (Kafka's layout: its local time, no zone).
func brokerLine(tp audit.TopicPartition, n int64, reason string, t int64) string {
	return brokerLineIn(time.UTC, tp, n, reason, t)
}

// brokerLineIn is brokerLine of a broker logging in loc.
func brokerLineIn(loc *time.Location, tp audit.TopicPartition, n int64, reason string, t int64) string {
	return fmt.Sprintf("[%s] INFO [UnifiedLog partition=%s-%d, dir=/var/lib/kafka/data] Incremented log start offset to %d due to %s (kafka.log.UnifiedLog)",
		time.UnixMilli(t).In(loc).Format("2006-01-02 15:04:05,000"), tp.Topic, tp.Partition, n, reason)
}

// appReset is the app consumer's out-of-range and reset lines at time t.
func appReset(tp audit.TopicPartition, from, to int64, t int64) string {
	return consumerReset("app-StreamThread-1-consumer", group, tp, from, to, t)
}

// consumerReset is a consumer's out-of-range and reset lines at time t,
// with its client id and group id in their prefix.
func consumerReset(clientID, groupID string, tp audit.TopicPartition, from, to int64, t int64) string {
	ts := time.UnixMilli(t).UTC().Format("2006-01-02T15:04:05.000Z")
	pos := func(o int64) string {
		return fmt.Sprintf("FetchPosition{offset=%d, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[127.0.0.1:19192 (id: 1 rack: null)], epoch=0}}", o)
	}
	return fmt.Sprintf("%s INFO [main] o.a.k.c.c.i.AbstractFetch - [Consumer clientId=%s, groupId=%s] Fetch position %s is out of range for partition %s-%d, resetting offset\n", ts, clientID, groupID, pos(from), tp.Topic, tp.Partition) +
		fmt.Sprintf("%s INFO [main] o.a.k.c.c.i.SubscriptionState - [Consumer clientId=%s, groupId=%s] Resetting offset for partition %s-%d to position %s.", ts, clientID, groupID, tp.Topic, tp.Partition, pos(to))
}

// events are the lines' events, their times without a zone read in UTC
// (the brokers and apps of these tests log in UTC).
func events(t *testing.T, lines ...string) []applog.Event {
	t.Helper()
	return eventsWith(t, applog.Options{Location: time.UTC}, lines...)
}

func eventsWith(t *testing.T, o applog.Options, lines ...string) []applog.Event {
	t.Helper()
	l, err := applog.Parse(strings.NewReader(strings.Join(lines, "\n")+"\n"), "server.log", o)
	if err != nil {
		t.Fatal(err)
	}
	return l.Events
}

// restartApp writes an exactly-once app's commits of tp: running from
// generation 1, stopped after committing `stop` at 30 s (the group empty
// at 60 s, its members' sessions expired), back as generation 3 at 120 s,
// committing each of after from 121 s on.
func restartApp(l *glog, tp audit.TopicPartition, stop int, after ...int) {
	l.gen(1, 1, at(0))
	for i, o := range []int{stop - 20, stop - 10, stop} {
		l.txn(7, at(float64(10+10*i)), tp, o)
	}
	l.gen(2, 0, at(60))
	l.gen(3, 1, at(120))
	l.epoch++ // the restarted thread's producer: InitProducerId bumps its epoch
	for i, o := range after {
		l.txn(7, at(float64(121+i)), tp, o)
	}
}

// quickRestart is restartApp without the empty generation: Kafka
// Streams' consumers do not leave the group on close, so an app restarted
// within the session timeout forms generation 2 of new members only
// (keep: one old member stays, a rebalance, no restart).
func quickRestart(l *glog, tp audit.TopicPartition, keep bool, stop int, after ...int) {
	l.genOf(1, at(0), "a-1")
	for i, o := range []int{stop - 20, stop - 10, stop} {
		l.txn(7, at(float64(10+10*i)), tp, o)
	}
	if keep {
		l.genOf(2, at(120), "a-1", "b-1")
	} else {
		l.genOf(2, at(120), "b-1")
	}
	l.epoch++
	for i, o := range after {
		l.txn(7, at(float64(121+i)), tp, o)
	}
}

type want struct {
	skips   []string // "cause from-to"
	unknown []string // "from-to"
}

func check(t *testing.T, res Result, w want) {
	t.Helper()
	var skips, unknown []string
	for _, s := range res.Skips {
		skips = append(skips, fmt.Sprintf("%s %d-%d", s.Cause, s.From, s.To-1))
	}
	for _, g := range res.Unknown {
		unknown = append(unknown, fmt.Sprintf("%d-%d", g.From, g.To-1))
	}
	if !slices.Equal(skips, w.skips) || !slices.Equal(unknown, w.unknown) {
		t.Errorf("skips %q, unknown %q\nwant skips %q, unknown %q\nfindings %+v\nmissing %q", skips, unknown, w.skips, w.unknown, res.Findings(), res.Missing())
	}
	for _, f := range res.Findings() {
		if f.Severity != audit.SeverityLoss || f.Count <= 0 || f.Detail == "" || f.Timestamp <= 0 {
			t.Errorf("finding %+v", f)
		}
	}
}

// TestRules: every rule, each case built as a broker writes the group's
// log and, where it says so, with the broker's and the app's log lines.
// A cause misattributed (retention on a repartition topic, a hand move
// as retention, a proven loss as missing evidence or the reverse) fails.
func TestRules(t *testing.T) {
	now := t0.Add(time.Hour)
	// the incident's window: from the app's stop on (before it, the
	// records it consumed were deleted since, as retention does; see
	// TestConsumedThenDeleted)
	window := func(ev *Evidence) { ev.Since = time.UnixMilli(at(31)) }
	for _, tc := range []struct {
		name  string
		build func(l *glog)
		tp    audit.TopicPartition
		role  Role
		ls    int64 // the log start now
		lines []string
		ev    func(ev *Evidence)
		want  want
	}{
		{
			name:  "retention while the app was down, proven by the broker's log",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{brokerLine(src, 60, "segment deletion", at(90))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-59"}},
		},
		{
			name:  "restarted before the old members' sessions expired (no empty generation), proven by the broker's log",
			build: func(l *glog) { quickRestart(l, src, false, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{brokerLine(src, 60, "client delete records request", at(90))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-59"}},
		},
		{
			// the slow run the drill's regroup fault makes: started, stopped
			// without a commit; the purge; the run that resumed from the
			// committed offset after it
			name: "two restarts without a commit between, the log start moved between them: the last one proves it",
			build: func(l *glog) {
				l.genOf(1, at(0), "a-1")
				for i, o := range []int{10, 20, 30} {
					l.txn(7, at(float64(10+10*i)), src, o)
				}
				l.genOf(2, at(60), "b-1")
				l.genOf(3, at(100), "c-1")
				l.epoch++
				l.txn(7, at(121), src, 70)
			},
			tp: src, ls: 60,
			lines: []string{brokerLine(src, 60, "client delete records request", at(90))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-59"}},
		},
		{
			name:  "a rebalance that keeps a member is no restart: missing evidence",
			build: func(l *glog) { quickRestart(l, src, true, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{brokerLine(src, 60, "client delete records request", at(90))},
			ev:    window,
			want:  want{unknown: []string{"30-59"}},
		},
		{
			name:  "the same without any log: missing evidence, never clean",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			ev:   window,
			want: want{unknown: []string{"30-59"}},
		},
		{
			name:  "the app's log explains the reset",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{appReset(src, 30, 60, at(120.5))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-59"}},
		},
		{
			// the issue: another consumer group reading the source topic
			// fell behind retention and reset; matched by topic-partition
			// alone, its lines made a false retention-gap
			name:  "another consumer group's reset on the same partition is not the app's: missing evidence",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{consumerReset("consumer-audit-tool-1", "audit-tool", src, 30, 60, at(120.5))},
			ev:    window,
			want:  want{unknown: []string{"30-59"}},
		},
		{
			name:  "another Streams app's reset (its client id app-v2-<uuid>…) is not the app's: missing evidence",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{consumerReset("app-v2-ac6c0587-9be6-4293-a38e-21e59e33d1be-StreamThread-1-consumer", "app-v2", src, 30, 60, at(120.5))},
			ev:    window,
			want:  want{unknown: []string{"30-59"}},
		},
		{
			name:  "the app's own reset, tied by its Streams client id",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{consumerReset("app-ac6c0587-9be6-4293-a38e-21e59e33d1be-StreamThread-1-consumer", "app", src, 30, 60, at(120.5))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-59"}},
		},
		{
			name:  "the log start moved after the restart: the app had read the offsets (a capture at 150 s bounds it)",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{brokerLine(src, 20, "segment deletion", at(90)), brokerLine(src, 60, "segment deletion", at(200))},
			ev: func(ev *Evidence) {
				ev.LogStarts = map[audit.TopicPartition][]LogStartAt{src: {{Time: time.UnixMilli(at(150)), Offset: 20, Why: "a capture"}}}
				window(ev)
			},
			want: want{},
		},
		{
			name:  "the log start observed past the committed offset before that commit took effect",
			build: func(l *glog) { restartApp(l, src, 30, 70, 80) },
			tp:    src, ls: 60,
			lines: []string{brokerLine(src, 45, "segment deletion", at(25))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-44"}, unknown: []string{"45-59"}},
		},
		{
			name:  "DeleteRecords on a repartition topic while the app was down (KAFKA-17635's effect)",
			build: func(l *glog) { restartApp(l, rep, 30, 70, 80) },
			tp:    rep, role: Repartition, ls: 80,
			lines: []string{brokerLine(rep, 60, "client delete records request", at(90)), brokerLine(rep, 80, "client delete records request", at(200))},
			ev:    window,
			// the reset went to the log start at the restart: 60 or more,
			// up to the next observation (80 at 200 s): not recorded
			want: want{skips: []string{"purged-before-commit 30-59"}, unknown: []string{"60-69"}},
		},
		{
			name:  "a repartition partition purged past its committed offset across a rebalance, no log",
			build: func(l *glog) { restartApp(l, rep, 30, 70, 80) },
			tp:    rep, role: Repartition, ls: 80,
			ev:   window,
			want: want{unknown: []string{"30-69"}},
		},
		{
			name:  "a fixed Streams purges committed offsets only",
			build: func(l *glog) { restartApp(l, rep, 30, 70, 80) },
			tp:    rep, role: Repartition, ls: 80,
			ev:   func(ev *Evidence) { ev.StreamsPurgeFixed = true; window(ev) },
			want: want{},
		},
		{
			name: "a running app's repartition partition purged after each commit stays clean",
			build: func(l *glog) {
				l.gen(1, 1, at(0))
				for i := range 50 {
					l.txn(7, at(float64(1+i)), rep, 10*(i+1))
				}
			},
			tp: rep, role: Repartition, ls: 490,
			want: want{},
		},
		{
			name: "an aborted commit above the committed offset on a repartition partition (KAFKA-17635's precondition)",
			build: func(l *glog) {
				l.gen(1, 1, at(0))
				l.txn(7, at(1), rep, 10)
				l.abort(7, at(2), rep, 40)
				l.txn(7, at(3), rep, 50)
			},
			tp: rep, role: Repartition, ls: 50,
			want: want{unknown: []string{"10-49"}},
		},
		{
			name: "offsets moved forward by hand while the group was empty (exactly-once app)",
			build: func(l *glog) {
				restartApp(l, src, 30)
				l.plain(src, 90, at(100)) // kafka-consumer-groups --reset-offsets --to-offset 90
				l.txn(7, at(121), src, 95)
			},
			tp: src, ls: 0,
			ev:   window,
			want: want{skips: []string{"offsets-forward 30-89"}},
		},
		{
			name: "moved by hand past offsets retention had already deleted",
			build: func(l *glog) {
				restartApp(l, src, 30)
				l.plain(src, 90, at(100))
				l.txn(7, at(121), src, 95)
			},
			tp: src, ls: 50,
			lines: []string{brokerLine(src, 50, "segment deletion", at(80))},
			ev:    window,
			want:  want{skips: []string{"retention-gap 30-49", "offsets-forward 50-89"}},
		},
		{
			name: "an at-least-once app: its plain commits are its own, a plain commit while the group was empty is not",
			build: func(l *glog) {
				l.gen(1, 1, at(0))
				l.plain(src, 10, at(1))
				l.plain(src, 20, at(2))
				l.gen(2, 0, at(60))
				l.plain(src, 90, at(100))
				l.gen(3, 1, at(120))
				l.plain(src, 95, at(121))
			},
			tp: src, ls: 0,
			want: want{skips: []string{"offsets-forward 20-89"}},
		},
		{
			name: "moved back by hand: reprocessing, not a loss",
			build: func(l *glog) {
				restartApp(l, src, 30)
				l.plain(src, 5, at(100))
				l.txn(7, at(121), src, 25)
				l.txn(7, at(122), src, 40)
			},
			tp: src, ls: 0,
			want: want{},
		},
		{
			name: "a clean app restarted many times stays clean",
			build: func(l *glog) {
				off := 0
				for r := range 5 {
					base := float64(200 * r)
					l.gen(int32(2*r+1), 2, at(base))
					for i := range 10 {
						off += 7
						l.txn(int64(7+r), at(base+1+float64(i)), src, off, rep, off*2)
					}
					l.gen(int32(2*r+2), 0, at(base+100))
				}
			},
			tp: src, ls: 3,
			want: want{},
		},
		{
			name: "a clean app restarted many times: its repartition partition, Streams with KAFKA-17635's fix",
			build: func(l *glog) {
				off := 0
				for r := range 5 {
					base := float64(200 * r)
					l.gen(int32(2*r+1), 2, at(base))
					for i := range 10 {
						off += 7
						l.txn(int64(7+r), at(base+1+float64(i)), src, off, rep, off*2)
					}
					l.gen(int32(2*r+2), 0, at(base+100))
				}
			},
			tp: rep, role: Repartition, ls: 700,
			ev:   func(ev *Evidence) { ev.StreamsPurgeFixed = true },
			want: want{},
		},
		{
			name: "the same before the fix: each restart's purge past the committed offset is not recorded",
			build: func(l *glog) {
				off := 0
				for r := range 3 {
					base := float64(200 * r)
					l.gen(int32(2*r+1), 2, at(base))
					for i := range 3 {
						off += 7
						l.txn(int64(7+r), at(base+1+float64(i)), rep, off)
					}
					l.gen(int32(2*r+2), 0, at(base+100))
				}
			},
			tp: rep, role: Repartition, ls: 63,
			want: want{unknown: []string{"21-27", "42-48"}},
		},
		{
			name: "a running consumer's usual steps, retention past them since: clean",
			build: func(l *glog) {
				l.gen(1, 1, at(0))
				l.txn(7, at(1), src, 10)
				l.txn(7, at(2), src, 20)
				l.txn(7, at(3), src, 30)
			},
			tp: src, ls: 25,
			want: want{},
		},
		{
			name: "a running consumer's jump far beyond its usual steps (a reset behind retention?): missing evidence",
			build: func(l *glog) {
				l.gen(1, 1, at(0))
				for i := range 8 {
					l.txn(7, at(float64(1+i)), src, 10*(i+1))
				}
				l.txn(7, at(9), src, 2000)
			},
			tp: src, ls: 1500,
			want: want{unknown: []string{"80-1499"}},
		},
		{
			name: "compacted before the window: missing evidence, not clean",
			build: func(l *glog) {
				restartApp(l, src, 30, 70, 80)
				l.compact(9) // the cleaner ran up to the restart
			},
			tp: src, ls: 60,
			ev:   func(ev *Evidence) { ev.Since = t0 },
			want: want{unknown: []string{"-1-29", "30-59"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &glog{}
			tc.build(l)
			ev := &Evidence{Group: group, History: l.history(t)}
			if len(tc.lines) > 0 {
				ev.Events = events(t, tc.lines...)
			}
			if tc.ev != nil {
				tc.ev(ev)
			}
			res := ev.Analyze(Partition{TP: tc.tp, Role: tc.role, LogStart: tc.ls, Now: now})
			check(t, res, tc.want)
			for _, f := range res.Findings() {
				if f.Stage != tc.role.stage() {
					t.Errorf("stage %s on a %s partition", f.Stage, tc.role)
				}
				if len(tc.lines) > 0 && f.Cause != audit.CauseOffsetsForward && !strings.Contains(f.Detail, "log server.log:") {
					t.Errorf("the detail cites no log line: %s", f.Detail)
				}
			}
		})
	}
}

// TestConsumedThenDeleted: what a running app consumed and retention
// deleted later leaves the same commits as a consumer that fell behind
// retention and skipped: inside the window the log start passed, it is
// missing evidence; a window after it (or an observation of the log start
// at or below each commit when it was made) is clean; and a log start
// still at or below the committed offset at the window's start rules out
// every skip since.
func TestConsumedThenDeleted(t *testing.T) {
	l := &glog{}
	l.gen(1, 1, at(0))
	for i := range 10 {
		l.txn(7, at(float64(10*(i+1))), src, 100*(i+1))
	}
	ev := &Evidence{Group: group, History: l.history(t)}
	now := t0.Add(time.Hour)
	// a running consumer's usual steps: it read them before retention took them
	check(t, ev.Analyze(Partition{TP: src, LogStart: 350, Now: now}), want{})
	ev.Since = time.UnixMilli(at(41))
	check(t, ev.Analyze(Partition{TP: src, LogStart: 350, Now: now}), want{})
	ev.Since = time.Time{}
	check(t, ev.Analyze(Partition{TP: src, LogStart: 100, Now: now}), want{})
	ev.LogStarts = map[audit.TopicPartition][]LogStartAt{src: {
		{Time: time.UnixMilli(at(20)), Offset: 100}, {Time: time.UnixMilli(at(30)), Offset: 200}, {Time: time.UnixMilli(at(40)), Offset: 300},
	}}
	check(t, ev.Analyze(Partition{TP: src, LogStart: 350, Now: now}), want{})
}

// TestLogTimeZones: a broker in New York logs in its local time without a
// zone (Kafka's "[%d] %p %m (%c)%n"). Its line of a retention deletion
// made after the app restarted and committed past offsets it had read,
// read as UTC, came five hours earlier, before the commits, and proved a
// false retention-gap (149 records in the issue). Read in its zone, or
// with its zone not known (an interval of ±14 h, which settles no
// comparison with these commits), it proves nothing: missing evidence. A
// line with its offset (ISO 8601) still proves what it proves, and so does
// the New York line of a deletion before the restart, read in its zone.
func TestLogTimeZones(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	after, before := at(180), at(90) // the deletion: after the restart's commits (121, 122 s), or while the app was down
	iso := func(ts int64) string {
		return fmt.Sprintf("%s INFO [UnifiedLog partition=%s-%d, dir=/d] Incremented log start offset to 60 due to segment deletion (kafka.log.UnifiedLog)",
			time.UnixMilli(ts).In(ny).Format("2006-01-02T15:04:05.000-07:00"), src.Topic, src.Partition)
	}
	for _, tc := range []struct {
		name string
		line string
		o    applog.Options
		want want
	}{
		{"New York, after the restart, its zone not known", brokerLineIn(ny, src, 60, "segment deletion", after), applog.Options{}, want{unknown: []string{"30-59"}}},
		{"New York, after the restart, read in its zone", brokerLineIn(ny, src, 60, "segment deletion", after), applog.Options{Location: ny}, want{unknown: []string{"30-59"}}},
		{"New York, after the restart, with its offset", iso(after), applog.Options{}, want{unknown: []string{"30-59"}}},
		{"New York, while the app was down, its zone not known", brokerLineIn(ny, src, 60, "segment deletion", before), applog.Options{}, want{unknown: []string{"30-59"}}},
		{"New York, while the app was down, read in its zone", brokerLineIn(ny, src, 60, "segment deletion", before), applog.Options{Location: ny}, want{skips: []string{"retention-gap 30-59"}}},
		{"New York, while the app was down, with its offset", iso(before), applog.Options{}, want{skips: []string{"retention-gap 30-59"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &glog{}
			restartApp(l, src, 30, 70, 80)
			ev := &Evidence{Group: group, History: l.history(t), Since: time.UnixMilli(at(31)), Events: eventsWith(t, tc.o, tc.line)}
			check(t, ev.Analyze(Partition{TP: src, LogStart: 60, Now: t0.Add(time.Hour)}), tc.want)
		})
	}
}

// TestUnreadHistory: records of the commit log that could not be read (a
// batch failing its CRC and the rest after it, a record that does not
// decode) may hold commits: each partition's history is judged up to
// them, and the offsets its committed offset may have passed after them,
// from the last commit read to the committed offset now, are missing
// evidence; a partition none of whose commits was read is missing
// evidence up to its committed offset; one whose committed offset is
// where its last commit read left it has nothing at stake.
func TestUnreadHistory(t *testing.T) {
	build := func() *audit.CommitHistory {
		l := &glog{}
		restartApp(l, src, 30)
		l.plain(src, 90, at(100)) // moved by hand while the group was empty
		l.txn(7, at(121), src, 95)
		return l.history(t)
	}
	h := build()
	h.MarkUnread(h.End, h.End+2, "the read stopped: crc32c") // a transaction's commit and marker, say
	h.End += 2
	ev := &Evidence{Group: group, History: h}
	res := ev.Analyze(Partition{TP: src, Now: t0.Add(time.Hour), Committed: 120})
	check(t, res, want{skips: []string{"offsets-forward 30-89"}, unknown: []string{"95-119"}})
	if len(res.Unknown) != 1 || !strings.Contains(res.Unknown[0].Why, "could not be read (the read stopped: crc32c)") {
		t.Errorf("why %+v", res.Unknown)
	}
	check(t, ev.Analyze(Partition{TP: src, Now: t0.Add(time.Hour), Committed: 95}), want{skips: []string{"offsets-forward 30-89"}})

	h = build()
	h.MarkUnread(0, h.End, "not captured")
	h.Commits = map[audit.TopicPartition][]audit.Commit{}
	ev = &Evidence{Group: group, History: h}
	check(t, ev.Analyze(Partition{TP: src, Now: t0.Add(time.Hour), Committed: 120}), want{unknown: []string{"-1-119"}})
}
