package applog

// The time of a line: a point where its zone is known, an interval where
// it is not.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // --log-timezone names an IANA zone on any host (the image has no zoneinfo)
)

// Stamp is when a log entry was written, as far as its line shows: an
// instant in [Earliest, Latest]. A time written with its zone (ISO 8601
// with an offset, or Z) is a point; so is one without a zone read in a
// zone that is known (Options.Location, or its file's start-up lines). A
// time without a zone is an interval otherwise (see Options.Location).
// Zero: the line has no time.
type Stamp struct {
	Earliest time.Time `json:"earliest"`
	Latest   time.Time `json:"latest"`
}

// At is the point t.
func At(t time.Time) Stamp { return Stamp{Earliest: t, Latest: t} }

// IsZero reports whether the line has no time.
func (s Stamp) IsZero() bool { return s.Earliest.IsZero() }

// IsPoint reports whether the time is known to the instant.
func (s Stamp) IsPoint() bool { return !s.IsZero() && s.Earliest.Equal(s.Latest) }

// Before reports whether the entry was surely written before t, After
// whether surely after it; neither when the stamp does not settle it (or
// the line has no time).
func (s Stamp) Before(t time.Time) bool { return !s.IsZero() && s.Latest.Before(t) }
func (s Stamp) After(t time.Time) bool  { return !s.IsZero() && s.Earliest.After(t) }

// String prints the time in UTC: an instant, or the interval it lies in.
func (s Stamp) String() string {
	const layout = "2006-01-02T15:04:05.000Z"
	switch {
	case s.IsZero():
		return "no time"
	case s.IsPoint():
		return s.Earliest.UTC().Format(layout)
	}
	return "between " + s.Earliest.UTC().Format(layout) + " and " + s.Latest.UTC().Format(layout)
}

// The bounds of a time without a zone. The zones in use run from UTC−12
// to UTC+14: a wall-clock time whose zone is not known is an interval of
// UnknownZone either side. A UTC offset read at one moment (a start-up
// line) may change after it by daylight saving time, by DSTShift at most
// (Antarctica/Troll's two hours; an hour or less elsewhere), unless
// another reading less than SameOffsetFor later shows the same offset (no
// zone changes its offset twice within a week).
const (
	UnknownZone   = 14 * time.Hour
	DSTShift      = 2 * time.Hour
	SameOffsetFor = 7 * 24 * time.Hour
)

// startTimeNeedle begins "Kafka startTimeMs: N", which
// org.apache.kafka.common.utils.AppInfoParser logs (INFO) when a broker or
// any client (a Streams app's consumers, producers and admin client)
// starts, N its start in ms since the epoch: the line's own time, written
// without a zone, minus N is the UTC offset its writer logs in.
const startTimeNeedle = "Kafka startTimeMs: "

// reading is the UTC offset a start-up line shows.
type reading struct {
	line int
	at   time.Time // the instant
	off  time.Duration
}

// startReading reads a start-up line's UTC offset: the line's wall-clock
// time (wall, as if UTC) minus the start time it prints, to the quarter
// hour (every zone's offset is one), if within a minute of it.
func startReading(s []byte, wall time.Time) (time.Duration, time.Time, bool) {
	i := strings.Index(string(s), startTimeNeedle)
	if i < 0 {
		return 0, time.Time{}, false
	}
	rest := s[i+len(startTimeNeedle):]
	j := 0
	for j < len(rest) && j < 16 && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	ms, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil || ms <= 0 {
		return 0, time.Time{}, false
	}
	at := time.UnixMilli(ms)
	off := wall.Sub(at)
	q := off.Round(15 * time.Minute)
	if d := off - q; d < -time.Minute || d > time.Minute || q < -UnknownZone || q > UnknownZone {
		return 0, time.Time{}, false
	}
	return q, at, true
}

// pending is a kept event whose time has no zone, resolved once the file
// is read (a start-up line after it bounds it too).
type pending struct {
	event int
	line  int
	wall  time.Time // its wall-clock time, as if UTC
}

// resolve gives the events read without a zone their stamps, and says
// in Log.Zone how.
func (p *parser) resolve() {
	l := p.log
	if len(p.pend) == 0 {
		return
	}
	l.Unzoned = len(p.pend)
	rs := p.readings
	if len(rs) > 0 {
		lo := slices.MinFunc(rs, func(a, b reading) int { return int(a.off - b.off) }).off
		hi := slices.MaxFunc(rs, func(a, b reading) int { return int(a.off - b.off) }).off
		if hi-lo > DSTShift {
			l.Zone = fmt.Sprintf("not known: its start-up lines show UTC offsets %s and %s (several writers?), so each of its %d times without a zone is an interval of ±%s", offset(lo), offset(hi), len(p.pend), UnknownZone)
			rs = nil
		}
	}
	loc := p.o.Location
	if loc != nil {
		for _, r := range rs {
			if _, off := r.at.In(loc).Zone(); time.Duration(off)*time.Second != r.off {
				l.Zone = fmt.Sprintf("its start-up line %d shows UTC offset %s at %s, where %s has %s: read by its start-up lines instead", r.line, offset(r.off), r.at.UTC().Format(time.RFC3339), loc, offset(time.Duration(off)*time.Second))
				loc = nil
				break
			}
		}
	}
	switch {
	case loc != nil:
		if l.Zone == "" {
			l.Zone = "in " + loc.String() + ", as given"
		}
	case len(rs) > 0:
		if l.Zone == "" {
			l.Zone = fmt.Sprintf("UTC offset %s, from its start-up lines (line %d: Kafka startTimeMs), each time %s either side unless start-up lines less than %s apart show the same offset before and after it", offset(rs[0].off), rs[0].line, DSTShift, SameOffsetFor)
		}
	case l.Zone == "":
		l.Zone = fmt.Sprintf("not known: its %d times without a zone are each an interval of ±%s", len(p.pend), UnknownZone)
	}
	var cache map[time.Time][2]time.Time
	for _, pd := range p.pend {
		if pd.event >= len(l.Events) {
			break
		}
		e := &l.Events[pd.event]
		switch {
		case loc != nil:
			if cache == nil {
				cache = map[time.Time][2]time.Time{}
			}
			iv, ok := cache[pd.wall]
			if !ok {
				iv[0], iv[1] = instants(pd.wall, loc)
				cache[pd.wall] = iv
			}
			e.Time = Stamp{Earliest: iv[0], Latest: iv[1]}
		case len(rs) > 0:
			e.Time = byReadings(pd, rs)
		default:
			e.Time = Stamp{Earliest: pd.wall.Add(-UnknownZone), Latest: pd.wall.Add(UnknownZone)}
		}
	}
}

// byReadings bounds a wall-clock time by the start-up lines around it:
// the offset the readings before and after it show, to the instant when
// both show one offset less than SameOffsetFor apart, else DSTShift more
// either side.
func byReadings(pd pending, rs []reading) Stamp {
	i, _ := slices.BinarySearchFunc(rs, pd.line, func(r reading, line int) int { return r.line - line })
	var around []reading
	if i < len(rs) {
		around = append(around, rs[i]) // at or after its line
	}
	if i > 0 {
		around = append(around, rs[i-1])
	}
	lo, hi := around[0].off, around[0].off
	for _, r := range around[1:] {
		lo, hi = min(lo, r.off), max(hi, r.off)
	}
	slack := DSTShift
	if len(around) == 2 {
		if d := around[0].at.Sub(around[1].at); d >= 0 && d < SameOffsetFor {
			slack = 0 // one offset change at most between them: one of theirs
		}
	}
	return Stamp{Earliest: pd.wall.Add(-hi - slack), Latest: pd.wall.Add(-lo + slack)}
}

// instants are the first and last instants whose wall-clock time in loc
// is wall (as if UTC): the same one, but for the hour a clock set back
// shows twice; for a time a clock set forward skipped, the instants
// around the gap.
func instants(wall time.Time, loc *time.Location) (time.Time, time.Time) {
	var lo, hi, clo, chi time.Time
	seen := map[int]bool{}
	for d := -UnknownZone - 2*time.Hour; d <= UnknownZone+2*time.Hour; d += 30 * time.Minute {
		_, off := wall.Add(d).In(loc).Zone()
		if seen[off] {
			continue
		}
		seen[off] = true
		t := wall.Add(-time.Duration(off) * time.Second)
		if clo.IsZero() || t.Before(clo) {
			clo = t
		}
		if chi.IsZero() || t.After(chi) {
			chi = t
		}
		y, mo, dd := t.In(loc).Date()
		h, mi, s := t.In(loc).Clock()
		wy, wmo, wd := wall.Date()
		wh, wmi, ws := wall.Clock()
		if y != wy || mo != wmo || dd != wd || h != wh || mi != wmi || s != ws {
			continue
		}
		if lo.IsZero() || t.Before(lo) {
			lo = t
		}
		if hi.IsZero() || t.After(hi) {
			hi = t
		}
	}
	if lo.IsZero() {
		return clo, chi
	}
	return lo, hi
}

// offset prints a UTC offset: "-05:00".
func offset(d time.Duration) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return fmt.Sprintf("%s%02d:%02d", sign, int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// ParseZone reads a time zone as --log-timezone takes it: an IANA name
// ("America/New_York", read with its daylight saving time), an offset
// from UTC ("-05:00", "+0530", "UTC+2", "GMT-3"), or "UTC" ("Z", "GMT").
// "" is no zone (nil). "Local" is refused: the zone kaudit runs in is not
// the one the logs were written in.
func ParseZone(s string) (*time.Location, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return nil, nil
	}
	switch u := strings.ToUpper(t); {
	case u == "LOCAL":
		return nil, fmt.Errorf("parse time zone %q: Local is the zone of the host kaudit runs on, not necessarily the logs': name the zone they were written in", s)
	case u == "Z" || u == "UTC" || u == "GMT":
		return time.UTC, nil
	case strings.HasPrefix(u, "UTC") || strings.HasPrefix(u, "GMT") || strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-"):
		rest := t
		if len(u) >= 3 && (u[:3] == "UTC" || u[:3] == "GMT") {
			rest = t[3:]
		}
		d, ok := parseOffset(rest)
		if !ok {
			return nil, fmt.Errorf("parse time zone %q: want an offset from UTC of at most 14 hours (-05:00, +0530, UTC+2) or an IANA name (America/New_York)", s)
		}
		if d == 0 {
			return time.UTC, nil
		}
		return time.FixedZone("UTC"+offset(d), int(d/time.Second)), nil
	}
	loc, err := time.LoadLocation(t)
	if err != nil || loc == time.Local {
		return nil, fmt.Errorf("parse time zone %q: want an IANA name (America/New_York) or an offset from UTC (-05:00, UTC): %v", s, err)
	}
	return loc, nil
}

// parseOffset reads "+H", "-HH", "+HH:MM", "-HHMM": at most 14 hours.
func parseOffset(s string) (time.Duration, bool) {
	if len(s) < 2 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	neg, b := s[0] == '-', []byte(s[1:])
	var hs, ms []byte
	switch {
	case len(b) <= 2:
		hs = b
	case len(b) == 4 && b[1] == ':':
		hs, ms = b[:1], b[2:]
	case len(b) == 4:
		hs, ms = b[:2], b[2:]
	case len(b) == 5 && b[2] == ':':
		hs, ms = b[:2], b[3:]
	default:
		return 0, false
	}
	h, ok := digits(hs)
	if !ok || len(hs) == 0 {
		return 0, false
	}
	m := 0
	if ms != nil {
		if m, ok = digits(ms); !ok || m > 59 {
			return 0, false
		}
	}
	d := time.Duration(h)*time.Hour + time.Duration(m)*time.Minute
	if d > UnknownZone {
		return 0, false
	}
	if neg {
		d = -d
	}
	return d, true
}

// ParseDay parses the date the first of a log's lines that carry only a
// time of day was written on (Options.Day, --log-day): YYYY-MM-DD; ""
// gives the zero time (such lines have no time).
func ParseDay(s string) (time.Time, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return time.Time{}, nil
	}
	d, err := time.Parse(time.DateOnly, t)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse day %q: want a date as YYYY-MM-DD", s)
	}
	return d, nil
}
