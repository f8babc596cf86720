package applog

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// parse reads text as a log, a newline ending its last line.
func parse(t *testing.T, text string, o Options) []Event {
	t.Helper()
	l, err := Parse(strings.NewReader(text+"\n"), "app.log", o)
	if err != nil {
		t.Fatal(err)
	}
	return l.Events
}

// TestIncidentLines: the lines of a real Kafka Streams 3.6 incident (an
// app whose changelog writes failed with BufferExhaustedException during
// a broker outage, layout "[LEVEL] [thread] [class.method(File:line)]:",
// no timestamp) give their events, each with its task, level and line;
// the exception on a continuation line belongs to its entry.
func TestIncidentLines(t *testing.T) {
	l, err := ReadFile(filepath.Join("testdata", "streams-3.6-send-error.txt"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(l.File)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	const changelog = "xxxx-yyyyyy-xxxx-KSTREAM-REDUCE-STATE-STORE-0000000011-changelog"
	want := []Event{
		{Line: 1, Level: "ERROR", Kind: SendError, Task: "1_3", TP: audit.TopicPartition{Topic: changelog, Partition: -1}},
		{Line: 2, Level: "ERROR", Kind: BufferExhausted, Task: "1_3", Count: 16384},
		{Line: 5, Level: "ERROR", Kind: BufferExhausted, Task: "1_3", Count: 16384},
		{Line: 6, Level: "ERROR", Kind: FlushFailed, Task: "1_3", Store: "KSTREAM-REDUCE-STATE-STORE-0000000011"},
		{Line: 7, Level: "ERROR", Kind: TaskCorrupted, Task: "1_3"},
	}
	if len(l.Events) != len(want) || l.Lines != 7 {
		t.Fatalf("%d lines, events %+v", l.Lines, l.Events)
	}
	for i, w := range want {
		g := l.Events[i]
		if w.TP.Topic == "" {
			w.TP.Partition = -1
		}
		if g.Line != w.Line || g.Level != w.Level || g.Kind != w.Kind || g.Task != w.Task || g.TP != w.TP || g.Count != w.Count || g.Store != w.Store || !g.Time.IsZero() {
			t.Errorf("event %d: %+v\nwant %+v", i, g, w)
		}
		if g.File != l.File || g.Raw != lines[g.Line-1] {
			t.Errorf("event %d: file %q raw %q, want line %d of %s", i, g.File, g.Raw, g.Line, l.File)
		}
	}
}

// TestTimestampLayouts: each common log4j and logback layout gives its
// entry's time and level: a point where the line carries its zone or
// Options.Location gives it; an interval of ±UnknownZone where neither
// does; a time of day on Options.Day, or no time without one.
func TestTimestampLayouts(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	noon := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	unknown := Stamp{Earliest: noon.Add(-UnknownZone), Latest: noon.Add(UnknownZone)}
	const reset = "Resetting offset for partition orders-v1-2 to position FetchPosition{offset=196, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[127.0.0.1:19192 (id: 1 rack: null)], epoch=0}}."
	for _, tc := range []struct {
		name  string
		line  string
		o     Options
		want  Stamp
		level string
	}{
		{"kafka broker [%d] %p, zone not known", "[2026-11-30 12:00:00,123] INFO [Consumer clientId=c, groupId=app] " + reset + " (org.apache.kafka.clients.consumer.internals.SubscriptionState)",
			Options{}, unknown, "INFO"},
		{"kafka broker, UTC given", "[2026-11-30 12:00:00,123] INFO " + reset, Options{Location: time.UTC}, At(noon), "INFO"},
		{"kafka broker, local zone", "[2026-11-30 12:00:00,123] INFO " + reset, Options{Location: paris}, At(noon.Add(-time.Hour)), "INFO"},
		{"ISO-8601 with offset", "2026-11-30T12:00:00.123+01:00 INFO [app-StreamThread-1] o.a.k.c.c.i.SubscriptionState - " + reset,
			Options{}, At(noon.Add(-time.Hour)), "INFO"},
		{"ISO-8601 with offset, another zone given", "2026-11-30T12:00:00.123+01:00 INFO " + reset, Options{Location: time.UTC}, At(noon.Add(-time.Hour)), "INFO"},
		{"ISO-8601 Z, microseconds", "2026-11-30T12:00:00.123456Z [INFO] " + reset, Options{}, At(time.Date(2026, 11, 30, 12, 0, 0, 123456e3, time.UTC)), "INFO"},
		{"ISO-8601 +0100", "2026-11-30T12:00:00,5+0100 WARNING " + reset, Options{}, At(time.Date(2026, 11, 30, 11, 0, 0, 5e8, time.UTC)), "WARN"},
		{"log4j2 / Spring Boot", "2026-11-30 12:00:00.123  INFO 4242 --- [StreamThread-1] o.a.k.c.c.i.SubscriptionState : " + reset,
			Options{Location: paris}, At(noon.Add(-time.Hour)), "INFO"},
		{"logback default, dated", "12:00:00.123 [app-StreamThread-1] INFO  o.a.k.c.c.i.SubscriptionState - " + reset,
			Options{Day: day, Location: time.UTC}, At(noon), "INFO"},
		{"logback default, dated, zone not known", "12:00:00.123 [app-StreamThread-1] INFO  o.a.k.c.c.i.SubscriptionState - " + reset,
			Options{Day: day}, unknown, "INFO"},
		{"logback default, no day", "12:00:00.123 [app-StreamThread-1] INFO  o.a.k.c.c.i.SubscriptionState - " + reset, Options{}, Stamp{}, "INFO"},
		{"thread with spaces", "12:00:00.123 [kafka-producer-network-thread | app-producer] WARN  o.a.k.c.p.i.Sender - " + reset, Options{Day: day, Location: time.UTC},
			At(noon), "WARN"},
		{"slf4j-simple without time", "[main] INFO org.apache.kafka.clients.consumer.internals.SubscriptionState - " + reset, Options{Day: day}, Stamp{}, "INFO"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := parse(t, tc.line, tc.o)
			if len(es) != 1 || es[0].Kind != OffsetReset || es[0].To != 196 || es[0].TP != (audit.TopicPartition{Topic: "orders-v1", Partition: 2}) {
				t.Fatalf("events %+v", es)
			}
			if !sameStamp(es[0].Time, tc.want) || es[0].Level != tc.level {
				t.Errorf("time %v level %q, want %v %q", es[0].Time, es[0].Level, tc.want, tc.level)
			}
		})
	}
	t.Run("a time of day past midnight is the next day", func(t *testing.T) {
		es := parse(t, "23:59:59.900 [t] INFO x - State transition from RUNNING to REBALANCING\n00:00:00.100 [t] INFO x - State transition from REBALANCING to RUNNING\n", Options{Day: day, Location: time.UTC})
		if len(es) != 2 || !sameStamp(es[1].Time, At(time.Date(2026, 12, 1, 0, 0, 0, 1e8, time.UTC))) || es[0].Time.Earliest.Day() != 30 {
			t.Fatalf("events %+v", es)
		}
	})
}

func sameStamp(a, b Stamp) bool { return a.Earliest.Equal(b.Earliest) && a.Latest.Equal(b.Latest) }

// TestKinds: every line kaudit reads gives its kind and fields, as Kafka
// 3.6 writes it (the exact texts of the Kafka classes named in
// patterns.go).
func TestKinds(t *testing.T) {
	tp := func(s string, p int32) audit.TopicPartition { return audit.TopicPartition{Topic: s, Partition: p} }
	none := audit.TopicPartition{Partition: -1}
	const ts = "[2026-11-30 12:00:00,123] "
	for _, tc := range []struct {
		line string
		want Event
	}{
		{ts + "INFO [Consumer clientId=app-c6e1-StreamThread-1-consumer, groupId=app] Fetch position FetchPosition{offset=166, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[127.0.0.1:19192 (id: 1 rack: null)], epoch=0}} is out of range for partition orders-v1-2, resetting offset (org.apache.kafka.clients.consumer.internals.AbstractFetch)",
			Event{Kind: OutOfRange, TP: tp("orders-v1", 2), Offset: 166, To: -1}},
		{ts + "INFO Fetch position FetchPosition{offset=3, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional.empty, epoch=absent}} is out of range for partition t-0, raising error to the application since no reset policy is configured",
			Event{Kind: OutOfRange, TP: tp("t", 0), Offset: 3, To: -1, Reason: "no reset policy"}},
		{ts + "INFO [Consumer clientId=c, groupId=app] Seeking to EARLIEST offset of partition app-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition-1",
			Event{Kind: SeekReset, TP: tp("app-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition", 1), Offset: -1, To: -1, Reason: "EARLIEST"}},
		{ts + "INFO stream-thread [app-StreamThread-1] Setting topic 'orders-v1' to consume from earliest offset",
			Event{Kind: SeekReset, TP: tp("orders-v1", -1), Offset: -1, To: -1, Reason: "EARLIEST"}},
		{ts + "INFO [Consumer clientId=c, groupId=app] Setting offset for partition orders-v1-0 to the committed offset FetchPosition{offset=12, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[b:9092 (id: 1 rack: null)], epoch=0}}",
			Event{Kind: SeekCommitted, TP: tp("orders-v1", 0), Offset: 12, To: -1}},
		{ts + "INFO [Consumer clientId=c, groupId=app] Found no committed offset for partition orders-v1-1",
			Event{Kind: NoCommitted, TP: tp("orders-v1", 1), Offset: -1, To: -1}},
		{ts + "INFO [Consumer clientId=c, groupId=app] Truncation detected for partition out-0 at offset FetchPosition{offset=9, offsetEpoch=Optional[2], currentLeader=x}, resetting offset to the first offset known to diverge FetchPosition{offset=7}",
			Event{Kind: TruncationDetected, TP: tp("out", 0), Offset: 9, To: -1}},
		{ts + "WARN stream-thread [app-StreamThread-1] Detected the states of tasks [0_1, 1_3] are corrupted. Will close the task as dirty and re-create and bootstrap from scratch.",
			Event{Kind: TaskCorrupted, Task: "0_1, 1_3", TP: none, Offset: -1, To: -1}},
		{ts + "WARN stream-thread [app-StreamThread-1] task [0_2] Failed to flush state store counts: ",
			Event{Kind: FlushFailed, Task: "0_2", Store: "counts", TP: none, Offset: -1, To: -1}},
		{ts + "WARN stream-thread [app-StreamThread-1] Detected that the thread is being fenced. This implies that this thread missed a rebalance and dropped out of the consumer group. Will close out all assigned tasks and rejoin the consumer group.",
			Event{Kind: Fenced, TP: none, Offset: -1, To: -1, Reason: "Detected that the thread is being fenced"}},
		{ts + "INFO stream-thread [app-StreamThread-1] Failed to process stream task 1_0 since it got migrated to another thread already. Will trigger a new rebalance and close all tasks as zombies together.",
			Event{Kind: TaskMigrated, TP: none, Offset: -1, To: -1, Reason: "got migrated to another thread already"}},
		{ts + "INFO stream-thread [app-StreamThread-1] Finished restoring changelog app-counts-changelog-1 to store counts with a total number of 4096 records",
			Event{Kind: Restored, TP: tp("app-counts-changelog", 1), Store: "counts", Count: 4096, Offset: -1, To: -1}},
		{ts + "INFO stream-client [app-c6e1] State transition from REBALANCING to RUNNING",
			Event{Kind: StateTransition, TP: none, Offset: -1, To: -1, Reason: "REBALANCING -> RUNNING"}},
		{ts + "INFO [UnifiedLog partition=orders-v1-2, dir=/var/lib/kafka/data] Incremented log start offset to 196 due to segment deletion (kafka.log.UnifiedLog)",
			Event{Kind: LogStartIncremented, TP: tp("orders-v1", 2), Offset: 196, To: -1, Reason: "segment deletion"}},
		{ts + "INFO [UnifiedLog partition=app-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition-1, dir=/d] Incremented log start offset to 190 due to client delete records request (kafka.log.UnifiedLog)",
			Event{Kind: LogStartIncremented, TP: tp("app-KSTREAM-REDUCE-STATE-STORE-0000000003-repartition", 1), Offset: 190, To: -1, Reason: "client delete records request"}},
		{ts + "INFO [UnifiedLog partition=orders-v1-2, dir=/d] Deleting segment LogSegment(baseOffset=166, size=2490, lastModifiedTime=1796117898000, largestRecordTimestamp=Some(1796117897000)) due to log retention time 1000ms breach based on the largest record timestamp in the segment (kafka.log.UnifiedLog)",
			Event{Kind: SegmentDeleted, TP: tp("orders-v1", 2), Offset: 166, To: -1, Reason: "log retention time 1000ms breach based on the largest record timestamp in the segment"}},
		{ts + "INFO [UnifiedLog partition=r-0, dir=/d] Deleting segments due to log start offset 190 breach: LogSegment(baseOffset=0, size=1, lastModifiedTime=1, largestRecordTimestamp=Some(1)) (kafka.log.UnifiedLog)",
			Event{Kind: SegmentDeleted, TP: tp("r", 0), Offset: 190, To: -1, Reason: "log start offset 190 breach"}},
		{ts + "INFO [ReplicaFetcher replicaId=2, leaderId=1, fetcherId=0] Truncating partition u.orders-0 with TruncationState(offset=5, completed=true) due to leader epoch and offset EpochEndOffset(errorCode=0, partition=0, leaderEpoch=3, endOffset=5) (kafka.server.ReplicaFetcherThread)",
			Event{Kind: Truncated, TP: tp("u.orders", 0), Offset: 5, To: -1}},
		{ts + "INFO [UnifiedLog partition=u.orders-0, dir=/d] Truncating to offset 5 (kafka.log.UnifiedLog)",
			Event{Kind: Truncated, TP: tp("u.orders", 0), Offset: 5, To: -1}},
		{ts + "INFO Cleaner 0: Cleaning log __consumer_offsets-14 (cleaning prior to Mon Nov 30 12:00:00 UTC 2026, discarding tombstones prior to upper bound deletion horizon Sun Nov 29 12:00:00 UTC 2026)... (kafka.log.LogCleaner)",
			Event{Kind: Cleaned, TP: tp("__consumer_offsets", 14), Offset: -1, To: -1}},
		{"\tLog cleaner thread 0 cleaned log __consumer_offsets-14 (dirty section = [0, 91234])",
			Event{Kind: Cleaned, TP: tp("__consumer_offsets", 14), Offset: 0, To: 91234}},
		{ts + "INFO [TransactionCoordinator id=1] Completed rollback of ongoing transaction for transactionalId app-0_1 due to timeout (kafka.coordinator.transaction.TransactionCoordinator)",
			Event{Kind: TxnRolledBack, TP: none, Offset: -1, To: -1, Reason: "app-0_1"}},
		{ts + "INFO [QuorumController id=100] Setting new leader for topicId AbCd, partition 0 to 2 using an unclean election (org.apache.kafka.controller.PartitionChangeBuilder)",
			Event{Kind: UncleanElection, TP: none, Offset: -1, To: -1, Reason: "partition 0 to 2"}},
		// the drill's windows app (Kafka Streams 3.6.2, logback): a 5 s grace
		{"19:46:09.253 [kaudit-steps-windows-449e7725-StreamThread-1] WARN org.apache.kafka.streams.kstream.internals.KStreamWindowAggregate - Skipping record for expired window. topic=[sc-clicks] partition=[0] offset=[206] timestamp=[1796239810000] window=[1796239800000,1796239860000) expiration=[1796240509902] streamTime=[1796240514902]",
			Event{Kind: ExpiredWindow, TP: tp("sc-clicks", 0), Offset: 206, To: 1796240514902, Count: 5000, Reason: "[1796239800000,1796239860000)"}},
	} {
		es := parse(t, tc.line, Options{})
		if len(es) != 1 {
			t.Errorf("%s: events %+v, want one %s", tc.line, es, tc.want.Kind)
			continue
		}
		g := es[0]
		g.File, g.Line, g.Time, g.Level, g.Raw, g.Group, g.Clients = "", 0, Stamp{}, "", "", "", nil
		if !reflect.DeepEqual(g, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.line, g, tc.want)
		}
	}
	covered := map[Kind]bool{OffsetReset: true, SendError: true, BufferExhausted: true}
	for _, p := range patterns {
		if !covered[p.kind] {
			found := false
			for _, k := range Kinds {
				found = found || k == p.kind
			}
			if !found {
				t.Errorf("kind %s is not in Kinds", p.kind)
			}
		}
	}
}

// TestReadFileBounds: gzip is read by its magic bytes; a device is
// refused; a file past the bound is read no further than it, a line past
// its bound is cut, not fatal, and a last line without its newline (a file
// copied while it was written) gives no event: its numbers may be cut.
func TestReadFileBounds(t *testing.T) {
	dir := t.TempDir()
	text := "[2026-11-30 12:00:00,123] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 7 due to segment deletion (kafka.log.UnifiedLog)\n"
	p := filepath.Join(dir, "server.log.1") // no .gz: the bytes say it
	if err := os.WriteFile(p, gzipped(t, strings.Repeat(text, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadFile(p, Options{})
	if err != nil || len(l.Events) != 3 || l.Events[2].Line != 3 || l.Events[2].Offset != 7 || l.Cut != "" {
		t.Fatalf("gzip: %+v, %v", l, err)
	}
	if _, err := ReadFile("/dev/zero", Options{}); err == nil {
		t.Fatal("/dev/zero was read as a log")
	}
	defer func(lb int) { maxLineBytes = lb }(maxLineBytes)
	maxLineBytes = 40
	l, err = Parse(strings.NewReader(strings.Repeat(text, 5)), "x", Options{MaxBytes: int64(len(text) * 2)})
	if err != nil || l.Cut == "" || l.Damaged || l.LongLines != 2 || l.Lines != 2 {
		t.Fatalf("bounded: %+v, %v", l, err)
	}
	maxLineBytes = MaxLineBytes
	l, err = Parse(strings.NewReader(text+strings.TrimSuffix(text, "\n")), "x", Options{})
	if err != nil || len(l.Events) != 1 || !l.Unended || l.Lines != 2 {
		t.Fatalf("a last line without its newline: %+v, %v", l, err)
	}
}

func gzipped(t testing.TB, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRealBrokerLog: lines a real Apache Kafka 3.6.2 broker wrote (INFO
// for kafka.log, its default layout "[%d] %p %m (%c)%n"): the log cleaner
// compacting the group's __consumer_offsets partition (its stats block's
// continuation line names the dirty section) and DeleteRecords moving a
// partition's log start.
func TestRealBrokerLog(t *testing.T) {
	// the drill's brokers log in UTC
	l, err := ReadFile(filepath.Join("testdata", "kafka-3.6.2-server.log"), Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	co := audit.TopicPartition{Topic: "__consumer_offsets", Partition: 0}
	in := audit.TopicPartition{Topic: "m.in", Partition: 0}
	at := func(s string) Stamp {
		tt, err := time.Parse("2006-01-02 15:04:05.000", s)
		if err != nil {
			t.Fatal(err)
		}
		return At(tt)
	}
	want := []Event{
		{Line: 6, Kind: Cleaned, TP: co, Offset: -1, To: -1, Time: at("2026-12-02 07:54:40.158")},
		{Line: 10, Kind: Cleaned, TP: co, Offset: 0, To: 2514, Time: at("2026-12-02 07:54:40.225")},
		{Line: 22, Kind: LogStartIncremented, TP: in, Offset: 4266, To: -1, Reason: "client delete records request", Time: at("2026-12-02 07:55:52.790")},
		{Line: 25, Kind: LogStartIncremented, TP: in, Offset: 5303, To: -1, Reason: "client delete records request", Time: at("2026-12-02 07:56:27.972")},
	}
	if len(l.Events) != len(want) {
		t.Fatalf("events %+v", l.Events)
	}
	for i, w := range want {
		g := l.Events[i]
		if g.Line != w.Line || g.Kind != w.Kind || g.TP != w.TP || g.Offset != w.Offset || g.To != w.To || g.Reason != w.Reason || !sameStamp(g.Time, w.Time) || g.Level != "INFO" {
			t.Errorf("event %d: %+v\nwant %+v", i, g, w)
		}
	}
}

// TestGzipDamage: a gzip log cut short or corrupted is read as far as
// its members' checksums vouch for it: the events of a member whose
// checksum matched are kept, those of a member that ends early, fails its
// checksum or does not inflate are not (a damaged deflate stream can
// inflate into plausible lines with wrong numbers before the damage shows),
// and the log says it is damaged, never an error that stops the audit.
func TestGzipDamage(t *testing.T) {
	line := func(n int) string {
		return fmt.Sprintf("[2026-11-30 12:00:00,123] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to %d due to segment deletion (kafka.log.UnifiedLog)\n", n)
	}
	var a, b strings.Builder
	for i := range 200 {
		a.WriteString(line(i))
		b.WriteString(line(1000 + i))
	}
	one, two := gzipped(t, a.String()), gzipped(t, b.String())
	flip := func(z []byte, at int) []byte {
		z = bytes.Clone(z)
		z[at] ^= 0x55
		return z
	}
	for _, tc := range []struct {
		name    string
		file    []byte
		events  int
		damaged string
	}{
		{"whole, two members", append(bytes.Clone(one), two...), 400, ""},
		{"one member cut short", one[:len(one)/2], 0, "ends early"},
		{"the second member cut short", append(bytes.Clone(one), two[:len(two)/2]...), 200, "ends early"},
		{"a checksum that does not match", flip(one, len(one)-6), 0, "corrupt"},
		{"a flipped byte in the data", flip(one, len(one)/2), 0, "corrupt"},
		{"garbage after a whole member", append(bytes.Clone(one), "not gzip"...), 200, "do not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "server.log.gz")
			if err := os.WriteFile(p, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := ReadFile(p, Options{})
			if err != nil {
				t.Fatalf("an error: %v; want the damage in the log", err)
			}
			if len(l.Events) != tc.events || l.Damaged != (tc.damaged != "") || !strings.Contains(l.Cut, tc.damaged) {
				t.Errorf("%d events, damaged %v, cut %q; want %d events and %q", len(l.Events), l.Damaged, l.Cut, tc.events, tc.damaged)
			}
			for i, e := range l.Events {
				if want := int64(i%200 + 1000*(i/200)); e.Offset != want {
					t.Fatalf("event %d: offset %d, want %d", i, e.Offset, want)
				}
			}
		})
	}
}

// TestGzipBomb: a gzip file of newlines (deflate's best ratio, about
// 1,030 to 1) is read no further than MaxInflate times its size, and its
// empty lines are counted, not parsed one by one (a 4.7 MB one took 143 s
// of CPU to read whole).
func TestGzipBomb(t *testing.T) {
	defer func(lb int) { maxLineBytes = lb }(maxLineBytes)
	maxLineBytes = 4 << 10
	z := gzipped(t, strings.Repeat("\n", 64<<20))
	p := filepath.Join(t.TempDir(), "bomb.log.gz")
	if err := os.WriteFile(p, z, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadFile(p, Options{})
	bound := int64(max(len(z), maxLineBytes)) * MaxInflate
	if err != nil || l.Bytes > bound || int64(l.Lines) != l.Bytes || l.Damaged || !strings.Contains(l.Cut, "bound") {
		t.Fatalf("%d lines, %d bytes read (bound %d), cut %q, damaged %v, %v", l.Lines, l.Bytes, bound, l.Cut, l.Damaged, err)
	}
}

// TestKeep: Options.Keep chooses the events kept (the others are only
// counted), and Options.MaxKept bounds the memory they take: past it the
// file is read no further, and the log says where it stopped.
func TestKeep(t *testing.T) {
	var text strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&text, "[2026-11-30 12:00:00,123] INFO [UnifiedLog partition=t-%d, dir=/d] Incremented log start offset to 7 due to segment deletion (kafka.log.UnifiedLog)\n", i%2)
	}
	odd := func(e *Event) bool { return e.TP.Partition == 1 }
	l, err := Parse(strings.NewReader(text.String()), "server.log", Options{Keep: odd})
	if err != nil || len(l.Events) != 500 || l.Dropped != 500 || l.Cut != "" {
		t.Fatalf("kept %d, dropped %d, cut %q, %v", len(l.Events), l.Dropped, l.Cut, err)
	}
	const bound = 20 << 10
	l, err = Parse(strings.NewReader(text.String()), "server.log", Options{Keep: odd, MaxKept: bound})
	var size int64
	for i := range l.Events {
		size += l.Events[i].Size()
	}
	if err != nil || size > bound || len(l.Events) == 0 || len(l.Events) >= 500 || !strings.Contains(l.Cut, "memory budget") {
		t.Fatalf("kept %d events of %d bytes (bound %d), cut %q, %v", len(l.Events), size, bound, l.Cut, err)
	}
}
