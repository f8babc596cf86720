package applog

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestContinuation: the lines after an entry's head that begin with no
// timestamp or level (an exception's message, its stack) are the entry's:
// their events carry its time, level and task; the next head starts anew.
func TestContinuation(t *testing.T) {
	es := parse(t, strings.Join([]string{
		"2026-11-30T12:00:00.123Z ERROR [app-StreamThread-1] o.a.k.s.p.i.RecordCollectorImpl - stream-thread [app-StreamThread-1] stream-task [1_3] Error encountered sending record to topic app-store-changelog for task 1_3 due to:",
		"org.apache.kafka.common.errors.ProducerFencedException: There is a newer producer with the same transactionalId which fences the current one.",
		"Written offsets would not be recorded and no more records would be sent since the producer is fenced, indicating the task may be migrated out",
		"\tat org.apache.kafka.streams.processor.internals.RecordCollectorImpl.recordSendError(RecordCollectorImpl.java:322)",
		"2026-11-30T12:00:01Z WARN [app-StreamThread-1] o.a.k.s.p.i.StreamThread - stream-thread [app-StreamThread-1] Detected that the thread is being fenced.",
	}, "\n"), Options{})
	at := time.Date(2026, 11, 30, 12, 0, 0, 123e6, time.UTC)
	if len(es) != 4 {
		t.Fatalf("events %+v", es)
	}
	for i, want := range []struct {
		kind  Kind
		line  int
		level string
		task  string
		at    time.Time
	}{
		{SendError, 1, "ERROR", "1_3", at}, {Fenced, 2, "ERROR", "1_3", at}, {Fenced, 3, "ERROR", "1_3", at},
		{Fenced, 5, "WARN", "", at.Add(877 * time.Millisecond)},
	} {
		e := es[i]
		if e.Kind != want.kind || e.Line != want.line || e.Level != want.level || e.Task != want.task || !sameStamp(e.Time, At(want.at)) {
			t.Errorf("event %d: %+v, want %+v", i, e, want)
		}
	}
}

// FuzzParse: any bytes parse without panic, each event names a line of
// the input (its raw text, cut at the line bound) and a partition number
// that is -1 or more.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"streams-3.6-send-error.txt", "kafka-3.6.2-server.log", "streams-3.6.2-new-york.log", "streams-3.6.2-two-apps.log"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("[2026-11-30 12:00:00,123] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 7 due to segment deletion (kafka.log.UnifiedLog)\n"))
	f.Add([]byte("12:00:00.123 [t] INFO x - Resetting offset for partition a-b-1 to position FetchPosition{offset=9, offsetEpoch=Optional.empty}.\n23:00:00 WARN y\r\n00:00:01.5 [t] ERROR z - Failed to flush cache of store s: "))
	f.Add([]byte("2026-11-30T12:00:00.123+0100 Fetch position FetchPosition{offset=-1} is out of range for partition --1, resetting offset"))
	f.Add([]byte("19:46:09.253 [t] WARN x - Skipping record for expired window. topic=[sc-clicks] partition=[99999999999] offset=[206] timestamp=[1] window=[0,60000) expiration=[2] streamTime=[7]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(strings.NewReader(string(data)), "f", Options{Day: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(data), "\n")
		for _, e := range l.Events {
			if e.Line < 1 || e.Line > len(lines) || e.Line > l.Lines {
				t.Fatalf("event on line %d of %d: %+v", e.Line, l.Lines, e)
			}
			if raw := strings.TrimSuffix(lines[e.Line-1], "\r"); !strings.HasPrefix(raw, e.Raw) {
				t.Fatalf("event raw %q is not line %d %q", e.Raw, e.Line, raw)
			}
			if e.TP.Partition < -1 || e.Kind == "" || e.Time.Latest.Before(e.Time.Earliest) {
				t.Fatalf("event %+v", e)
			}
			for _, c := range e.Clients {
				if len(c) <= uuidLen+1 || !isUUID([]byte(c[len(c)-uuidLen:])) || c[len(c)-uuidLen-1] != '-' || !strings.Contains(string(data), c) {
					t.Fatalf("client %q of %+v", c, e)
				}
			}
			if strings.ContainsAny(e.Group, ", ]") || e.Group == "null" {
				t.Fatalf("group %q of %+v", e.Group, e)
			}
			if tie := e.Tie("app"); tie == Tied && e.Group != "app" && !slices.ContainsFunc(e.Clients, func(c string) bool { return strings.HasPrefix(c, "app-") }) {
				t.Fatalf("%+v tied to app", e)
			}
		}
	})
}

// FuzzReadGzip: any bytes, gzip or not, read without panic or error
// within their bounds: what is damaged says so, and the events kept of a
// gzip stream are those of the members whose checksum matched.
func FuzzReadGzip(f *testing.F) {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write([]byte("[2026-11-30 12:00:00,123] INFO [UnifiedLog partition=t-0, dir=/d] Incremented log start offset to 7 due to segment deletion (kafka.log.UnifiedLog)\n"))
	w.Close()
	f.Add(z.Bytes())
	f.Add(append(bytes.Clone(z.Bytes()), z.Bytes()[:z.Len()/2]...))
	f.Add(z.Bytes()[:10])
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, data []byte) {
		defer func(lb int) { maxLineBytes = lb }(maxLineBytes)
		maxLineBytes = 1 << 10
		l := readFrom(bytes.NewReader(data), int64(len(data)), "f", Options{})
		if l.Damaged && l.Cut == "" {
			t.Fatalf("damaged without saying why: %+v", l)
		}
		if bound := int64(max(len(data), maxLineBytes)) * MaxInflate; l.Bytes > bound+int64(maxLineBytes)+64<<10 {
			t.Fatalf("%d bytes read of %d (bound %d)", l.Bytes, len(data), bound)
		}
		for _, e := range l.Events {
			if e.Line < 1 || e.Line > l.Lines || e.Kind == "" {
				t.Fatalf("event %+v of %d lines", e, l.Lines)
			}
		}
	})
}

// FuzzParseZone: any text gives a zone or an error, never a panic; an
// offset is within ±UnknownZone, and a zone's name reads back as itself.
func FuzzParseZone(f *testing.F) {
	for _, s := range []string{"America/New_York", "-05:00", "+0530", "UTC+14", "GMT-3", "Local", "", "+5:45", "Etc/GMT+12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		loc, err := ParseZone(s)
		if err != nil || loc == nil {
			return
		}
		if loc == time.Local {
			t.Fatalf("%q: the host's zone", s)
		}
		for _, at := range []time.Time{time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC), time.Date(2026, 7, 15, 0, 0, 0, 0, time.UTC)} {
			if _, off := at.In(loc).Zone(); time.Duration(off)*time.Second > UnknownZone || time.Duration(-off)*time.Second > UnknownZone {
				t.Fatalf("%q: offset %d s", s, off)
			}
		}
		again, err := ParseZone(loc.String())
		if err != nil || again.String() != loc.String() {
			t.Fatalf("%q: %s reads back as %v, %v", s, loc, again, err)
		}
	})
}
