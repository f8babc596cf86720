package applog

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartUpZone: a real Kafka Streams 3.6.2 app started in New York
// (TZ=America/New_York, Kafka's log4j layout "[%d] %p %m (%c)%n", no zone
// in its times) logs "Kafka startTimeMs: N" as each of its clients starts:
// the line's own time minus N is its UTC offset, -05:00. Its later lines
// are read with that offset, and DSTShift either side (a daylight saving
// change since is not ruled out); given the zone, to the instant; with the
// start-up lines missing, ±14 h; a zone given that the start-up lines
// contradict gives way to them.
func TestStartUpZone(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("testdata", "streams-3.6.2-new-york.log")
	// line 30: "[2026-12-04 13:37:21,321] INFO stream-client [orders-app-…] State transition from CREATED to REBALANCING"
	wall := time.Date(2026, 12, 4, 13, 37, 21, 321e6, time.UTC)
	utc := wall.Add(5 * time.Hour)
	for _, tc := range []struct {
		name string
		o    Options
		want Stamp
		zone string
	}{
		{"its start-up lines", Options{}, Stamp{utc.Add(-DSTShift), utc.Add(DSTShift)}, "UTC offset -05:00, from its start-up lines (line 3"},
		{"its zone given", Options{Location: ny}, At(utc), "in America/New_York, as given"},
		{"a zone its start-up lines contradict", Options{Location: time.UTC}, Stamp{utc.Add(-DSTShift), utc.Add(DSTShift)}, "its start-up line 3 shows UTC offset -05:00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := ReadFile(file, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Events) != 6 || l.Events[0].Line != 30 || l.Events[0].Kind != StateTransition || l.Unzoned != 6 {
				t.Fatalf("events %+v", l.Events)
			}
			if !sameStamp(l.Events[0].Time, tc.want) || !strings.HasPrefix(l.Zone, tc.zone) {
				t.Errorf("line 30 at %v (zone %q), want %v (%q)", l.Events[0].Time, l.Zone, tc.want, tc.zone)
			}
		})
	}
	t.Run("without its start-up lines", func(t *testing.T) {
		es := parse(t, "[2026-12-04 13:37:21,321] INFO stream-client [orders-app-ac6c0587-9be6-4293-a38e-21e59e33d1be] State transition from CREATED to REBALANCING (org.apache.kafka.streams.KafkaStreams)", Options{})
		if len(es) != 1 || !sameStamp(es[0].Time, Stamp{wall.Add(-UnknownZone), wall.Add(UnknownZone)}) {
			t.Errorf("events %+v", es)
		}
	})
}

// TestZoneRules: the rules for a time written without a zone.
func TestZoneRules(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	start := func(wall string, utc time.Time) string {
		return fmt.Sprintf("[%s] INFO Kafka startTimeMs: %d (org.apache.kafka.common.utils.AppInfoParser)", wall, utc.UnixMilli())
	}
	event := func(wall string) string {
		return "[" + wall + "] INFO stream-client [app-ac6c0587-9be6-4293-a38e-21e59e33d1be] State transition from RUNNING to REBALANCING (org.apache.kafka.streams.KafkaStreams)"
	}
	w := func(s string) time.Time {
		tt, err := time.Parse("2006-01-02 15:04:05,000", s)
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	const e = "2026-06-01 12:00:00,000"
	for _, tc := range []struct {
		name  string
		lines []string
		o     Options
		want  Stamp
	}{
		{"between two start-up lines a day apart that show one offset: the instant",
			[]string{start("2026-05-31 12:00:00,000", w("2026-05-31 16:00:00,000")), event(e), start("2026-06-01 13:00:00,000", w("2026-06-01 17:00:00,000"))},
			Options{}, At(w(e).Add(4 * time.Hour))},
		{"between two start-up lines a month apart: a daylight saving change either side is not ruled out",
			[]string{start("2026-05-01 12:00:00,000", w("2026-05-01 16:00:00,000")), event(e), start("2026-06-30 13:00:00,000", w("2026-06-30 17:00:00,000"))},
			Options{}, Stamp{w(e).Add(4*time.Hour - DSTShift), w(e).Add(4*time.Hour + DSTShift)}},
		{"between start-up lines that show two offsets (a daylight saving change between)",
			[]string{start("2026-03-07 12:00:00,000", w("2026-03-07 17:00:00,000")), event("2026-03-09 12:00:00,000"), start("2026-03-10 12:00:00,000", w("2026-03-10 16:00:00,000"))},
			Options{}, Stamp{w("2026-03-09 16:00:00,000"), w("2026-03-09 17:00:00,000")}},
		{"start-up lines of two writers hours apart: not known",
			[]string{start("2026-05-31 12:00:00,000", w("2026-05-31 16:00:00,000")), start("2026-05-31 21:00:00,000", w("2026-05-31 16:00:00,000")), event(e)},
			Options{}, Stamp{w(e).Add(-UnknownZone), w(e).Add(UnknownZone)}},
		{"a start-up line whose time is not its start time's: no reading",
			[]string{start("2026-05-31 12:07:00,000", w("2026-05-31 16:00:00,000")), event(e)},
			Options{}, Stamp{w(e).Add(-UnknownZone), w(e).Add(UnknownZone)}},
		{"the hour New York's clocks set back shows twice: both",
			[]string{event("2026-11-01 01:30:00,000")}, Options{Location: ny}, Stamp{w("2026-11-01 05:30:00,000"), w("2026-11-01 06:30:00,000")}},
		{"the hour New York's clocks set forward skips: around it",
			[]string{event("2026-03-08 02:30:00,000")}, Options{Location: ny}, Stamp{w("2026-03-08 06:30:00,000"), w("2026-03-08 07:30:00,000")}},
		{"an offset given", []string{event(e)}, Options{Location: time.FixedZone("UTC-04:00", -4*3600)}, At(w(e).Add(4 * time.Hour))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			es := parse(t, strings.Join(tc.lines, "\n"), tc.o)
			if len(es) != 1 || !sameStamp(es[0].Time, tc.want) {
				t.Errorf("events %+v, want at %v", es, tc.want)
			}
		})
	}
}

// TestParseZone: --log-timezone takes an IANA name or an offset from UTC,
// never the host's own zone.
func TestParseZone(t *testing.T) {
	for _, tc := range []struct {
		in   string
		name string // "" : an error
		off  int    // seconds east of UTC on 2026-01-15
	}{
		{"America/New_York", "America/New_York", -5 * 3600},
		{"Asia/Kathmandu", "Asia/Kathmandu", 5*3600 + 45*60},
		{"UTC", "UTC", 0}, {"z", "UTC", 0}, {"GMT", "UTC", 0}, {"+00:00", "UTC", 0},
		{"-05:00", "UTC-05:00", -5 * 3600}, {"+0530", "UTC+05:30", 5*3600 + 30*60}, {"UTC+2", "UTC+02:00", 2 * 3600},
		{"GMT-3", "UTC-03:00", -3 * 3600}, {"+5:45", "UTC+05:45", 5*3600 + 45*60}, {"UTC+14", "UTC+14:00", 14 * 3600},
		{"UTC+15", "", 0}, {"+05:60", "", 0}, {"-5:3", "", 0}, {"Local", "", 0}, {"local", "", 0}, {"Mars/Olympus", "", 0},
		{"../../etc/passwd", "", 0}, {"+", "", 0}, {"UTC+", "", 0},
	} {
		loc, err := ParseZone(tc.in)
		if tc.name == "" {
			if err == nil {
				t.Errorf("%q: %v, want an error", tc.in, loc)
			}
			continue
		}
		if err != nil || loc.String() != tc.name {
			t.Errorf("%q: %v, %v; want %s", tc.in, loc, err, tc.name)
			continue
		}
		if _, off := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC).In(loc).Zone(); off != tc.off {
			t.Errorf("%q: offset %d, want %d", tc.in, off, tc.off)
		}
	}
	if loc, err := ParseZone(""); loc != nil || err != nil {
		t.Errorf("no zone: %v, %v", loc, err)
	}
}

// TestParseDay: --log-day is a date; "" leaves time-of-day lines undated.
func TestParseDay(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{in: ""},
		{in: "2026-12-04", want: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)},
		{in: " 2026-02-28 ", want: time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)},
		{in: "2026-02-30", bad: true},
		{in: "04/12/2026", bad: true},
		{in: "2026-12-04T10:00:00Z", bad: true},
	} {
		got, err := ParseDay(c.in)
		if (err != nil) != c.bad || !got.Equal(c.want) {
			t.Errorf("ParseDay(%q) = %v, %v; want %v (error: %v)", c.in, got, err, c.want, c.bad)
		}
	}
}
