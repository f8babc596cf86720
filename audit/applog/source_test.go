package applog

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTieTwoApps: a real log of two Kafka Streams 3.6.2 apps and a plain
// consumer in one JVM, their lines interleaved in one file (slf4j-simple,
// its thread names shown): each state transition is its own app's, by its
// "stream-client [<app>-<uuid>]" or "stream-thread [<app>-<uuid>-StreamThread-1]";
// the app orders-app never takes orders-app-v2's lines, though its name
// starts with orders-app's.
func TestTieTwoApps(t *testing.T) {
	l, err := ReadFile(filepath.Join("testdata", "streams-3.6.2-two-apps.log"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]map[Tie]int{"orders-app": {}, "orders-app-v2": {}, "audit-tool": {}}
	for i := range l.Events {
		e := &l.Events[i]
		if e.Kind != StateTransition {
			t.Fatalf("event %+v", e)
		}
		v2 := strings.Contains(e.Raw, "orders-app-v2-")
		for app, c := range count {
			tie := e.Tie(app)
			c[tie]++
			if want := app == "orders-app-v2" == v2 && app != "audit-tool"; (tie == Tied) != want || tie == Untied {
				t.Errorf("line %d: %s for %s: %s", e.Line, tieName(tie), app, e.Raw)
			}
		}
	}
	if len(l.Events) != 12 || count["orders-app"][Tied] != 6 || count["orders-app-v2"][Tied] != 6 || count["audit-tool"][Other] != 12 {
		t.Errorf("%d events: %v", len(l.Events), count)
	}
}

func tieName(t Tie) string { return [...]string{"untied", "tied", "other"}[t] }

// TestTie: a line is the app's by its consumer's group id or a Streams
// client id of the app's (its client, its threads, their clients); a
// continuation line is its entry's; a line that names another group or
// app is not; a line that names none (a Streams processor's own line in
// Kafka's layout, which shows no thread) is untied.
func TestTie(t *testing.T) {
	const (
		ts    = "[2026-11-30 12:00:00,123] "
		uuid  = "ac6c0587-9be6-4293-a38e-21e59e33d1be"
		uuid2 = "2f74a95b-00e5-4f79-bd94-f06fb8f145fd"
		reset = "Resetting offset for partition orders-0 to position FetchPosition{offset=5, offsetEpoch=Optional.empty, currentLeader=LeaderAndEpoch{leader=Optional[b:9092 (id: 1 rack: null)], epoch=0}}. (org.apache.kafka.clients.consumer.internals.SubscriptionState)"
		win   = "Skipping record for expired window. topic=[sc-clicks] partition=[0] offset=[206] timestamp=[1796239810000] window=[1796239800000,1796239860000) expiration=[1796240509902] streamTime=[1796240514902]"
	)
	for _, tc := range []struct {
		name  string
		lines string
		want  []Tie // of each event, for app orders-app
	}{
		{"its consumer", ts + "INFO [Consumer clientId=orders-app-" + uuid + "-StreamThread-1-consumer, groupId=orders-app] " + reset, []Tie{Tied}},
		{"its group, a client id of the app's own", ts + "INFO [Consumer clientId=my-client-StreamThread-1-consumer, groupId=orders-app] " + reset, []Tie{Tied}},
		{"another group reading the same topic", ts + "INFO [Consumer clientId=consumer-audit-tool-1, groupId=audit-tool] " + reset, []Tie{Other}},
		{"its restore consumer (no group)", ts + "INFO [Consumer clientId=orders-app-" + uuid + "-StreamThread-1-restore-consumer, groupId=null] " + reset, []Tie{Tied}},
		{"another Streams app's consumer", ts + "INFO [Consumer clientId=orders-app-v2-" + uuid + "-StreamThread-1-consumer, groupId=orders-app-v2] " + reset, []Tie{Other}},
		{"its window processor, its thread shown", "19:46:09.253 [orders-app-" + uuid + "-StreamThread-1] WARN org.apache.kafka.streams.kstream.internals.KStreamWindowAggregate - " + win, []Tie{Tied}},
		{"another app's window processor", "19:46:09.253 [orders-app-v2-" + uuid + "-StreamThread-1] WARN org.apache.kafka.streams.kstream.internals.KStreamWindowAggregate - " + win, []Tie{Other}},
		{"a window processor in Kafka's layout (no thread)", ts + "WARN " + win + " (org.apache.kafka.streams.kstream.internals.KStreamWindowAggregate)", []Tie{Untied}},
		{"a consumer member id after the client id", ts + "INFO stream-thread [orders-app-" + uuid + "-StreamThread-1] member orders-app-" + uuid + "-StreamThread-1-consumer-" + uuid2 + " " + reset, []Tie{Tied}},
		{"two apps named", ts + "INFO stream-thread [orders-app-" + uuid + "-StreamThread-1] [Consumer clientId=x, groupId=orders-app-v2] " + reset, []Tie{Other}},
		{"an exception's lines are their entry's", ts + "ERROR stream-thread [orders-app-" + uuid + "-StreamThread-1] task [1_3] Error encountered sending record to topic orders-app-store-changelog for task 1_3 due to:\n" +
			"org.apache.kafka.clients.producer.BufferExhaustedException: Failed to allocate 16384 bytes within the configured max blocking time 60000 ms.\n" +
			ts + "WARN " + win, []Tie{Tied, Tied, Untied}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := parse(t, tc.lines, Options{})
			var got []Tie
			for i := range es {
				got = append(got, es[i].Tie("orders-app"))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ties %v, want %v: %+v", got, tc.want, es)
			}
		})
	}
}
