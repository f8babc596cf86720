package history

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/audit/applog"
	"github.com/kaudit/kaudit/audit/segment"
	"github.com/kaudit/kaudit/internal/fakeapp"
)

// TestGather: the history comes from any source that reads it (here a
// real Kafka 3.6.2 broker's log dir) and the events from the log files
// named; a source that cannot give a history leaves a note, never missing
// evidence, and the audit is what it was without this package; a log file
// that cannot be read is an error.
func TestGather(t *testing.T) {
	d, err := segment.OpenDirs(filepath.Join("..", "segment", "testdata", "real", "kafka-3.6.2-logdir"))
	if err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(logf, []byte(brokerLine(audit.TopicPartition{Topic: "gen.orders", Partition: 1}, 2, "client delete records request", at(1))+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := Gather(t.Context(), d, "gen-app", Logs{Broker: []string{logf}})
	if err != nil {
		t.Fatal(err)
	}
	if ev.History == nil || ev.Unknown != "" || len(ev.Events) != 1 || ev.Events[0].Kind != applog.LogStartIncremented || len(ev.Notes) != 2 {
		t.Fatalf("evidence %+v", ev)
	}
	res := ev.Analyze(Partition{TP: audit.TopicPartition{Topic: "gen.orders", Partition: 1}, LogStart: 2, Now: time.Now()})
	if len(res.Skips) != 0 || len(res.Unknown) != 0 || res.Judged != 1 {
		t.Errorf("gen.orders/1 (3, then 7 in a transaction; purged below 2): %+v", res)
	}

	m := fakeapp.NewMemory(t0)
	ev, err = Gather(t.Context(), m, "app", Logs{})
	if err != nil || ev.History != nil || !strings.Contains(ev.Unknown, "no commit history") {
		t.Fatalf("memory source: %+v, %v", ev, err)
	}
	res = ev.Analyze(Partition{TP: src, LogStart: 10, Now: t0})
	if len(res.Missing()) != 0 || len(res.Findings()) != 0 || len(res.Notes) != 1 {
		t.Errorf("without a history: %+v", res)
	}
	if _, err := Gather(t.Context(), m, "app", Logs{App: []string{filepath.Join(t.TempDir(), "nope.log")}}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing log file: %v", err)
	}
}

// failingHistory is a source whose commit history read fails midway (a
// broker lost while kaudit fetched its partition of __consumer_offsets).
type failingHistory struct{ *fakeapp.Memory }

func (failingHistory) CommitHistory(context.Context, string) (audit.CommitHistory, error) {
	return audit.CommitHistory{}, errors.New("fetch from broker 3: broker closed the connection")
}

// TestGatherFailed: a history read that fails is no error that stops the
// audit: the evidence says why (Failed), for the audit to name the check
// as not run, where a source that keeps no history is only a note.
func TestGatherFailed(t *testing.T) {
	ev, err := Gather(t.Context(), failingHistory{fakeapp.NewMemory(t0)}, "app", Logs{})
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	if ev.History != nil || !ev.Failed || !strings.Contains(ev.Unknown, "could not be read") || !strings.Contains(ev.Unknown, "broker 3") {
		t.Errorf("evidence %+v", ev)
	}
}

// TestGatherBounds: the logs cost what --memory-budget allows: the events
// kept take at most its KeptShare, the logs are read up to ReadFactor
// times it; a log not read whole, for a bound or for damage (a gzip log
// cut short), is missing evidence naming it, never an error that stops
// the audit.
func TestGatherBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tp := audit.TopicPartition{Topic: "orders", Partition: 0}
	var many strings.Builder
	for i := range 20000 {
		many.WriteString(brokerLine(tp, int64(i), "segment deletion", at(float64(i))) + "\n")
	}
	matched := write("server.log", []byte(many.String()))
	const budget = 1 << 20
	ev, err := Gather(t.Context(), fakeapp.NewMemory(t0), "app", Logs{Broker: []string{matched}, Budget: budget})
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	for i := range ev.Events {
		size += ev.Events[i].Size()
	}
	if size > budget/KeptShare || len(ev.Events) == 0 || len(ev.Missing) != 1 || !strings.Contains(ev.Missing[0], matched) || !strings.Contains(ev.Missing[0], "memory budget") {
		t.Errorf("%d events of %d bytes kept (bound %d), missing %q", len(ev.Events), size, budget/KeptShare, ev.Missing)
	}

	noise := write("noise.log", []byte(strings.Repeat("[2026-11-30 12:00:00,123] INFO nothing to see here (kafka.server.KafkaServer)\n", 40000)))
	ev, err = Gather(t.Context(), fakeapp.NewMemory(t0), "app", Logs{Broker: []string{noise, matched}, Budget: budget / 4})
	if err != nil || len(ev.Missing) != 2 || !strings.Contains(ev.Missing[0], noise) || !strings.Contains(ev.Missing[0], "bound") ||
		!strings.Contains(ev.Missing[1], matched) || !strings.Contains(ev.Missing[1], "was not read") {
		t.Errorf("past the read bound: missing %q, %v", ev.Missing, err)
	}

	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte(many.String()))
	w.Close()
	cut := write("server.log.1.gz", z.Bytes()[:z.Len()/2])
	ev, err = Gather(t.Context(), fakeapp.NewMemory(t0), "app", Logs{Broker: []string{cut}})
	if err != nil || len(ev.Missing) != 1 || !strings.Contains(ev.Missing[0], cut) || !strings.Contains(ev.Missing[0], "ends early") || len(ev.Events) != 0 {
		t.Errorf("a gzip log cut short: %d events, missing %q, %v", len(ev.Events), ev.Missing, err)
	}
}

// TestGatherTies: of several apps' lines interleaved in one file (and a
// plain consumer's), only the lines tied to the app are kept: its own
// consumer's reset, not another group's or another Streams app's on the
// same partition, nor a line that names no app; of a broker's, only those
// about the topics the audit reads. The note counts what was ignored.
func TestGatherTies(t *testing.T) {
	const uuid = "ac6c0587-9be6-4293-a38e-21e59e33d1be"
	lines := strings.Join([]string{
		consumerReset("consumer-audit-tool-1", "audit-tool", src, 30, 60, at(120.5)),
		consumerReset("app-"+uuid+"-StreamThread-1-consumer", "app", src, 30, 60, at(120.6)),
		consumerReset("app-v2-"+uuid+"-StreamThread-1-consumer", "app-v2", src, 30, 60, at(120.7)),
		"[2026-11-30 12:00:00,123] WARN Skipping record for expired window. topic=[orders] partition=[0] offset=[7] timestamp=[1] window=[0,60000) expiration=[2] streamTime=[7] (org.apache.kafka.streams.kstream.internals.KStreamWindowAggregate)",
		brokerLine(src, 60, "segment deletion", at(90)),
		brokerLine(audit.TopicPartition{Topic: "payments", Partition: 0}, 60, "segment deletion", at(90)),
	}, "\n") + "\n"
	f := filepath.Join(t.TempDir(), "mixed.log")
	if err := os.WriteFile(f, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	ev, err := Gather(t.Context(), fakeapp.NewMemory(t0), group, Logs{App: []string{f}, Topics: map[string]bool{"orders": true}, Options: applog.Options{Location: time.UTC}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ev.Events {
		got = append(got, fmt.Sprintf("%d %s", e.Line, e.Kind))
	}
	want := []string{"3 offset-out-of-range", "4 offset-reset", "8 log-start-incremented"}
	if !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
	note := ev.Notes[len(ev.Notes)-1]
	for _, w := range []string{"3 events kept", "1 lines of an app that name no group", "4 lines of another consumer group or Streams app", "1 broker lines about topics the audit does not read"} {
		if !strings.Contains(note, w) {
			t.Errorf("note %q lacks %q", note, w)
		}
	}
}
