package applog

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/input"
)

// Bounds of what a log may make kaudit read and keep (the variables
// below are them, lowered by tests).
const (
	// MaxBytes bounds a log file, and what a gzip file inflates to: past
	// it the rest is not read (Log.Truncated).
	MaxBytes int64 = 8 << 30
	// MaxLineBytes bounds a line: the rest of a longer one is skipped.
	MaxLineBytes = 1 << 20
	// MaxEvents bounds the events kept of one file.
	MaxEvents = 1 << 20
)

var (
	maxBytes     = MaxBytes
	maxLineBytes = MaxLineBytes
	maxEvents    = MaxEvents
)

// Event is one log line that is evidence.
type Event struct {
	File string `json:"file"`
	Line int    `json:"line"` // 1-based
	// Time is the entry's timestamp; zero when the line has none (or only
	// a time of day and Options.Day was not given).
	Time  time.Time `json:"time,omitzero"`
	Level string    `json:"level,omitempty"` // ERROR, WARN, INFO, DEBUG, TRACE, FATAL
	Kind  Kind      `json:"kind"`
	// Task is the Streams task ("1_3", or a list "0_1, 1_3") the entry
	// names.
	Task string `json:"task,omitempty"`
	// TP is the partition the line names; Topic "" when none, Partition
	// -1 for a topic alone.
	TP audit.TopicPartition `json:"tp"`
	// Offset and To are the offsets the line names (see each Kind); -1
	// when none.
	Offset int64  `json:"offset"`
	To     int64  `json:"to"`
	Store  string `json:"store,omitempty"`
	Reason string `json:"reason,omitempty"`
	Count  int64  `json:"count,omitempty"`
	Raw    string `json:"raw"`
}

// Where is "file:line", where the line can be found.
func (e Event) Where() string { return e.File + ":" + strconv.Itoa(e.Line) }

// String is the line and where it is.
func (e Event) String() string { return e.Where() + ": " + strings.TrimSpace(e.Raw) }

// Options say how to read timestamps.
type Options struct {
	// Location is the zone of timestamps that carry none (Kafka's own
	// "[2026-11-30 12:00:00,123]"); nil means UTC.
	Location *time.Location
	// Day dates the lines that carry only a time of day (logback's and
	// slf4j-simple's "HH:mm:ss.SSS"): the first such line is on Day, and
	// a time more than 12 hours before the last one starts the next day.
	// Zero: such lines have no time.
	Day time.Time
}

// Log is what one file gave.
type Log struct {
	File   string  `json:"file"`
	Events []Event `json:"events"`
	Lines  int     `json:"lines"`
	// LongLines counts lines cut at MaxLineBytes; Truncated says the file
	// was not read to its end (MaxBytes, MaxEvents).
	LongLines int  `json:"long_lines,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
}

// ReadFile reads a log file, plain or gzip (by its magic bytes), bounded:
// only a regular file of at most MaxBytes, inflated to at most MaxBytes.
func ReadFile(path string, o Options) (Log, error) {
	f, err := input.Open(path, maxBytes)
	if err != nil {
		return Log{File: path}, fmt.Errorf("read log %s: %w", path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return Log{File: path}, fmt.Errorf("read log %s: gzip: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	l, err := Parse(r, path, o)
	if err != nil {
		return l, fmt.Errorf("read log %s: %w", path, err)
	}
	return l, nil
}

// Parse reads a log from r (name is its file, for the events) up to
// MaxBytes.
func Parse(r io.Reader, name string, o Options) (Log, error) {
	l := Log{File: name}
	lr := &io.LimitedReader{R: r, N: maxBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	p := parser{o: o, loc: o.Location}
	if p.loc == nil {
		p.loc = time.UTC
	}
	var line []byte
	long := false
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 || isPrefix || err == nil {
			if len(line)+len(chunk) <= maxLineBytes {
				line = append(line, chunk...)
			} else {
				line = append(line, chunk[:maxLineBytes-len(line)]...)
				long = true
			}
		}
		if isPrefix {
			continue
		}
		if err == nil || (errors.Is(err, io.EOF) && len(line) > 0) {
			l.Lines++
			if long {
				l.LongLines++
			}
			// ReadLine drops "\r\n" but keeps the "\r" of a last line
			// that ends the file without "\n".
			p.line(&l, l.Lines, strings.TrimSuffix(string(line), "\r"))
			line, long = line[:0], false
			if len(l.Events) >= maxEvents {
				l.Truncated = true
				return l, nil
			}
		}
		if errors.Is(err, io.EOF) {
			l.Truncated = l.Truncated || lr.N <= 0
			return l, nil
		}
		if err != nil {
			return l, err
		}
	}
}

// parser holds the entry being read.
type parser struct {
	o   Options
	loc *time.Location
	// the current entry's head
	t      time.Time
	level  string
	task   string
	inside bool // an entry has begun
	// time-of-day stamps
	lastTOD time.Duration
	days    int
	sawTOD  bool
}

var (
	dateTimeRe = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?`)
	timeOnlyRe = regexp.MustCompile(`^(\d{2}):(\d{2}):(\d{2})(?:[.,:](\d{1,9}))?(?:$|[\s\]])`)
)

var levels = map[string]string{"TRACE": "TRACE", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARN", "WARNING": "WARN",
	"ERROR": "ERROR", "FATAL": "FATAL", "SEVERE": "ERROR"}

// line reads one line: a new entry's head or a continuation of the last.
func (p *parser) line(l *Log, n int, s string) {
	if t, level, ok := p.head(s); ok {
		p.t, p.level, p.inside = t, level, true
		p.task = ""
		if m := taskRe.FindStringSubmatch(s); m != nil {
			p.task = m[1]
		}
	} else if !p.inside {
		p.t, p.level, p.task = time.Time{}, "", ""
	}
	seen := map[Kind]bool{}
	for i := range patterns {
		pt := &patterns[i]
		if seen[pt.kind] || !strings.Contains(s, pt.needle) {
			continue
		}
		m := pt.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		seen[pt.kind] = true
		e := Event{File: l.File, Line: n, Time: p.t, Level: p.level, Kind: pt.kind, Task: p.task,
			TP: audit.TopicPartition{Partition: -1}, Offset: -1, To: -1, Raw: s}
		pt.fill(&e, m)
		l.Events = append(l.Events, e)
	}
}

// head reads the timestamp and level that begin an entry's first line.
// ok is false for a continuation line (an exception's message, a stack
// frame): one that begins with neither.
func (p *parser) head(s string) (t time.Time, level string, ok bool) {
	rest := s
	bracketed := strings.HasPrefix(rest, "[")
	if bracketed {
		rest = rest[1:]
	}
	if m := dateTimeRe.FindStringSubmatch(rest); m != nil {
		t, ok = p.dateTime(m)
		rest = rest[len(m[0]):]
	} else if m := timeOnlyRe.FindStringSubmatch(rest); m != nil {
		t, ok = p.timeOfDay(m), true
		rest = rest[len(strings.TrimRight(m[0], " \t]")):]
	}
	if ok && bracketed {
		rest = strings.TrimPrefix(rest, "]")
	}
	if !ok {
		// no timestamp: a level first ("[ERROR] [thread] …", "WARN …"),
		// or after a bracketed thread ("[main] INFO …"), begins an entry
		if lv, isLevel := levels[strings.Trim(firstWord(s), "[]:")]; isLevel {
			return t, lv, true
		}
		if j := strings.IndexByte(s, ']'); strings.HasPrefix(s, "[") && j > 0 {
			if lv, isLevel := levels[strings.Trim(firstWord(s[j+1:]), "[]:")]; isLevel {
				return t, lv, true
			}
		}
		return t, "", false
	}
	// the level is one of the next few words: "[thread] INFO", "INFO  logger"
	for i, w := range strings.Fields(rest) {
		if i >= 6 {
			break
		}
		if lv, isLevel := levels[strings.Trim(w, "[]:")]; isLevel {
			return t, lv, true
		}
	}
	return t, "", true
}

func firstWord(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// dateTime reads a date, time, fraction and zone; without a zone the time
// is in the parser's location.
func (p *parser) dateTime(m []string) (time.Time, bool) {
	frac := m[3]
	if frac == "" {
		frac = "0"
	}
	zone := m[4]
	if len(zone) == 5 { // +0100
		zone = zone[:3] + ":" + zone[3:]
	}
	s := m[1] + "T" + m[2] + "." + frac
	if zone != "" {
		t, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s+zone)
		return t, err == nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, p.loc)
	return t, err == nil
}

// timeOfDay dates a time of day with Options.Day, moving to the next day
// when the clock goes back more than 12 hours; zero without a Day.
func (p *parser) timeOfDay(m []string) time.Time {
	if p.o.Day.IsZero() {
		return time.Time{}
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	sec, _ := strconv.Atoi(m[3])
	var ns int
	if f := m[4]; f != "" {
		f = (f + "000000000")[:9]
		ns, _ = strconv.Atoi(f)
	}
	if h > 23 || mi > 59 || sec > 60 {
		return time.Time{}
	}
	d := time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second + time.Duration(ns)
	if p.sawTOD && d < p.lastTOD-12*time.Hour {
		p.days++
	}
	p.sawTOD, p.lastTOD = true, d
	y, mo, day := p.o.Day.In(p.loc).Date()
	return time.Date(y, mo, day+p.days, 0, 0, 0, 0, p.loc).Add(d)
}
