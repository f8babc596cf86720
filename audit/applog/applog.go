package applog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/kaudit/kaudit/audit"
	"github.com/kaudit/kaudit/internal/input"
)

// Bounds of what a log may make kaudit read and keep (the variables
// below are them, lowered by tests).
const (
	// MaxBytes bounds what is read of a log file (inflated, for gzip)
	// when Options.MaxBytes does not: past it the rest is not read
	// (Log.Cut).
	MaxBytes int64 = 8 << 30
	// MaxLineBytes bounds a line: the rest of a longer one is skipped.
	MaxLineBytes = 1 << 20
	// MaxEvents bounds the events kept of one file.
	MaxEvents = 1 << 20
	// MaxInflate bounds what a gzip file may inflate to, in times its own
	// size (at least MaxLineBytes): a real Streams app's log compresses
	// about 14 times (testdata), deflate at most about 1,030 (a file of
	// newlines).
	MaxInflate = 256
	// MaxRaw bounds the text an event keeps of its line (Event.Raw).
	MaxRaw = 4 << 10
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
	// Time is the entry's timestamp: a point, or an interval where its
	// zone is not known (Stamp); zero when the line has none (or only a
	// time of day and Options.Day was not given).
	Time  Stamp  `json:"time,omitzero"`
	Level string `json:"level,omitempty"` // ERROR, WARN, INFO, DEBUG, TRACE, FATAL
	Kind  Kind   `json:"kind"`
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
	// Group and Clients are who wrote the entry, as its head line names
	// them: its consumer's group id, the Streams client ids
	// ("<application.id>-<UUID>") of its client, thread or thread name
	// (see Tie).
	Group   string   `json:"group,omitempty"`
	Clients []string `json:"clients,omitempty"`
	// Raw is the line, its first MaxRaw bytes.
	Raw string `json:"raw"`
}

// Where is "file:line", where the line can be found.
func (e Event) Where() string { return e.File + ":" + strconv.Itoa(e.Line) }

// String is the line and where it is.
func (e Event) String() string { return e.Where() + ": " + strings.TrimSpace(e.Raw) }

// Size is about what the event takes in memory.
func (e *Event) Size() int64 {
	n := int64(unsafe.Sizeof(*e)) + int64(len(e.Raw)+len(e.Reason)+len(e.Store)+len(e.Task)+len(e.TP.Topic)+len(e.Group))
	for _, c := range e.Clients {
		n += int64(len(c)) + 16
	}
	return n
}

// Options say how to read a log and what to keep of it.
type Options struct {
	// Location is the zone of timestamps that carry none (Kafka's own
	// "[2026-11-30 12:00:00,123]": the writer's local time), as
	// --log-timezone gives it. Nil: the UTC offset the file's own start-up
	// lines show (each client and broker logs "Kafka startTimeMs: N" as it
	// starts), else not known, and each such time is an interval of
	// ±UnknownZone (see Stamp). A start-up line that contradicts Location
	// wins over it.
	Location *time.Location
	// Day dates the lines that carry only a time of day (logback's and
	// slf4j-simple's "HH:mm:ss.SSS"): the first such line is on Day, and
	// a time more than 12 hours before the last one starts the next day.
	// Zero: such lines have no time.
	Day time.Time
	// Keep, when set, says which events to keep; the others are counted
	// in Log.Dropped and not kept.
	Keep func(*Event) bool
	// MaxBytes bounds the bytes read (inflated, for gzip); 0: MaxBytes.
	MaxBytes int64
	// MaxKept bounds the memory the events kept take (Event.Size); 0: no
	// bound but MaxEvents.
	MaxKept int64
}

// Log is what one file gave.
type Log struct {
	File   string  `json:"file"`
	Events []Event `json:"events"`
	Lines  int     `json:"lines"`
	// Bytes counts the bytes read (inflated, for gzip).
	Bytes int64 `json:"bytes"`
	// LongLines counts lines cut at MaxLineBytes.
	LongLines int `json:"long_lines,omitempty"`
	// Dropped counts the events Options.Keep did not keep.
	Dropped int `json:"dropped,omitempty"`
	// Unended says the last line has no newline: it may have been cut
	// mid-write (a file copied while it was written), so no event is
	// read from it.
	Unended bool `json:"unended,omitempty"`
	// Cut says why the file was not read to its end ("" when it was):
	// a bound (Options.MaxBytes, MaxInflate, MaxEvents, Options.MaxKept)
	// or damage (Damaged).
	Cut string `json:"cut,omitempty"`
	// Unzoned counts the events kept whose time was written without a
	// zone; Zone says how they were read.
	Unzoned int    `json:"unzoned,omitempty"`
	Zone    string `json:"zone,omitempty"`
	// Damaged says the file is damaged (a gzip stream that ends early, fails
	// its checksum or does not inflate; a read that failed). A gzip
	// stream's lines are kept only from the members whose checksum matched:
	// a damaged deflate stream can inflate into plausible text with wrong
	// numbers before the damage is detected, and a stream cut short cannot
	// be told from one corrupted.
	Damaged bool `json:"damaged,omitempty"`
}

// ReadFile reads a log file, plain or gzip (by its magic bytes), bounded:
// only a regular file, read up to Options.MaxBytes (inflated), a gzip
// file up to MaxInflate times its size. A file that cannot be opened is
// an error; damage met while reading it is Log.Cut and Log.Damaged, with
// what could soundly be read before it.
func ReadFile(path string, o Options) (Log, error) {
	f, err := input.Open(path, math.MaxInt64)
	if err != nil {
		return Log{File: path}, fmt.Errorf("read log %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Log{File: path}, fmt.Errorf("read log %s: %w", path, err)
	}
	return readFrom(f, info.Size(), path, o), nil
}

// readFrom reads a log of size bytes from r, plain or gzip.
func readFrom(r io.Reader, size int64, name string, o Options) Log {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return read(br, name, o, "")
	}
	why := ""
	if bound := max(size, int64(maxLineBytes)) * MaxInflate; o.MaxBytes <= 0 || o.MaxBytes > bound {
		o.MaxBytes, why = bound, fmt.Sprintf(" (%d times its size: no log inflates so far)", MaxInflate)
	}
	z, err := gzip.NewReader(br)
	if err != nil {
		return Log{File: name, Cut: fmt.Sprintf("damaged: its gzip header does not read (%v)", err), Damaged: true}
	}
	z.Multistream(false)
	return read(&gzipStream{br: br, z: z}, name, o, why)
}

// Parse reads a plain log from r (name is its file, for the events) up to
// Options.MaxBytes.
func Parse(r io.Reader, name string, o Options) (Log, error) {
	return read(r, name, o, ""), nil
}

// gzipStream inflates a gzip file member by member; verified counts the
// inflated bytes of the members whose checksum matched.
type gzipStream struct {
	br       *bufio.Reader
	z        *gzip.Reader
	n        int64
	verified int64
	done     bool
}

func (g *gzipStream) Read(p []byte) (int, error) {
	for !g.done {
		n, err := g.z.Read(p)
		g.n += int64(n)
		if err == io.EOF { // the member's checksum and size matched
			g.verified = g.n
			switch rerr := g.z.Reset(g.br); {
			case rerr == io.EOF:
				g.done = true
			case rerr != nil:
				g.done = true
				return n, fmt.Errorf("the bytes after its gzip member ending at inflated byte %d do not read (%w)", g.n, rerr)
			default:
				g.z.Multistream(false)
			}
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			g.done = true
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return n, fmt.Errorf("its gzip stream ends early, at inflated byte %d (%w)", g.n, err)
			}
			return n, fmt.Errorf("its gzip stream is corrupt by inflated byte %d (%w)", g.n, err)
		}
		return n, nil
	}
	return 0, io.EOF
}

// read reads a log from r; a *gzipStream's lines past its last verified
// member are dropped on damage. why says what set Options.MaxBytes, if
// not the caller.
func read(r io.Reader, name string, o Options, why string) Log {
	l := Log{File: name}
	limit := o.MaxBytes
	if limit <= 0 {
		limit = maxBytes
	}
	gz, _ := r.(*gzipStream)
	br := bufio.NewReaderSize(r, 64<<10)
	p := parser{o: o, log: &l}
	var line []byte
	long := false
	var ends []int64 // with gz: the inflated byte each kept event's line ends at
	for {
		if l.Bytes >= limit {
			l.Cut = fmt.Sprintf("read up to its bound of %d bytes%s, line %d", limit, why, l.Lines)
			break
		}
		chunk, err := br.ReadSlice('\n')
		l.Bytes += int64(len(chunk))
		if len(line)+len(chunk) <= maxLineBytes {
			line = append(line, chunk...)
		} else if !long {
			line = append(line, chunk[:maxLineBytes-len(line)]...)
			long = true
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(line) > 0 {
				l.Lines++
				l.Unended = true
			}
			if !errors.Is(err, io.EOF) {
				l.Cut, l.Damaged = "damaged: "+err.Error(), true
				if gz == nil {
					l.Cut = fmt.Sprintf("damaged: the read failed at byte %d (%v)", l.Bytes, err)
				}
			}
			break
		}
		l.Lines++
		if long {
			l.LongLines++
		}
		s := line[:len(line)-1] // without its "\n"
		s = bytes.TrimSuffix(s, []byte{'\r'})
		before := len(l.Events)
		p.line(l.Lines, s)
		if gz != nil {
			for range len(l.Events) - before {
				ends = append(ends, l.Bytes)
			}
		}
		line, long = line[:0], false
		if p.full {
			break
		}
		// a run of empty lines (a file of newlines inflates a thousandfold)
		// is counted, not read line by line
		if n := br.Buffered(); n > 0 && len(s) == 0 {
			b, _ := br.Peek(n)
			b = b[:min(int64(len(b)), limit-l.Bytes)]
			i := 0
			for i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:]) == 0x0a0a0a0a0a0a0a0a {
				i += 8
			}
			l.Lines += i
			for i < len(b) {
				if b[i] == '\n' {
					l.Lines++
					i++
				} else if b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n' {
					l.Lines++
					i += 2
				} else {
					break
				}
			}
			br.Discard(i)
			l.Bytes += int64(i)
		}
	}
	p.resolve()
	if gz != nil && l.Damaged {
		// only what verified members hold is sound
		n := 0
		for n < len(l.Events) && ends[n] <= gz.verified {
			n++
		}
		if dropped := len(l.Events) - n; dropped > 0 {
			l.Events = l.Events[:n]
			l.Cut += fmt.Sprintf("; the %d events read after inflated byte %d, the end of its last whole gzip member, are not used", dropped, gz.verified)
		}
	}
	return l
}

// parser holds the entry being read.
type parser struct {
	o   Options
	log *Log
	// the kept events whose time has no zone, and the start-up lines
	// that show the file's UTC offset
	pend     []pending
	readings []reading
	// kept is the memory the kept events take; full says a bound was met
	kept int64
	full bool
	// the current entry's head
	t       headTime
	level   string
	head    []byte // its line
	task    string
	tasked  bool // task, group and clients were read from head
	group   string
	clients []string
	inside  bool // an entry has begun
	// time-of-day stamps
	lastTOD time.Duration
	days    int
	sawTOD  bool
}

var levels = map[string]string{"TRACE": "TRACE", "DEBUG": "DEBUG", "INFO": "INFO", "WARN": "WARN", "WARNING": "WARN",
	"ERROR": "ERROR", "FATAL": "FATAL", "SEVERE": "ERROR"}

// line reads one line: a new entry's head or a continuation of the last.
func (p *parser) line(n int, s []byte) {
	if t, level, ok := p.readHead(s); ok {
		p.t, p.level, p.inside = t, level, true
		p.head = append(p.head[:0], s...)
		p.task, p.tasked = "", false
		if t.unzoned {
			if off, at, ok := startReading(s, t.wall); ok {
				p.readings = append(p.readings, reading{line: n, at: at, off: off})
			}
		}
	} else if !p.inside {
		p.t, p.level, p.task, p.tasked = headTime{}, "", "", true
		p.group, p.clients = "", nil
		p.head = p.head[:0]
	}
	if len(s) < minNeedle {
		return
	}
	var seen uint64 // the kinds found on this line (one event of each)
	var text string // s as a string, made once a needle is found
	for i := range patterns {
		pt := &patterns[i]
		if seen&(1<<bits[i]) != 0 || !bytes.Contains(s, needles[i]) {
			continue
		}
		if text == "" {
			text = string(s)
		}
		m := pt.re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		seen |= 1 << bits[i]
		if !p.tasked {
			if m := taskRe.FindSubmatch(p.head); m != nil {
				p.task = string(m[1])
			}
			p.group, p.clients = identify(p.head)
			p.tasked = true
		}
		e := Event{File: p.log.File, Line: n, Time: p.t.at, Level: p.level, Kind: pt.kind, Task: p.task,
			TP: audit.TopicPartition{Partition: -1}, Offset: -1, To: -1, Group: p.group, Clients: p.clients, Raw: text}
		pt.fill(&e, m)
		if len(text) > MaxRaw {
			// the line's fields are substrings of it: keep none of it but them
			e.Raw = strings.Clone(text[:MaxRaw])
			e.Reason, e.Store, e.TP.Topic = strings.Clone(e.Reason), strings.Clone(e.Store), strings.Clone(e.TP.Topic)
		}
		if p.keep(&e) && p.t.unzoned {
			p.pend = append(p.pend, pending{event: len(p.log.Events) - 1, line: n, wall: p.t.wall})
		}
		if p.full {
			return
		}
	}
}

// keep keeps e unless Options.Keep refuses it, or a bound is met, and
// says whether it did.
func (p *parser) keep(e *Event) bool {
	l := p.log
	if p.o.Keep != nil && !p.o.Keep(e) {
		l.Dropped++
		return false
	}
	sz := e.Size()
	if p.o.MaxKept > 0 && p.kept+sz > p.o.MaxKept {
		p.full = true
		l.Cut = fmt.Sprintf("read up to line %d: the events kept of the logs reached their share of the memory budget (%d bytes)", e.Line, p.o.MaxKept)
		return false
	}
	p.kept += sz
	l.Events = append(l.Events, *e)
	if len(l.Events) >= maxEvents {
		p.full = true
		l.Cut = fmt.Sprintf("read up to line %d: %d events kept, the bound of one file", e.Line, maxEvents)
	}
	return true
}

// headTime is an entry's time: a point or none (at), or a wall-clock
// time without a zone (unzoned), its stamp resolved once the file is
// read.
type headTime struct {
	at      Stamp
	wall    time.Time
	unzoned bool
}

// readHead reads the timestamp and level that begin an entry's first
// line. ok is false for a continuation line (an exception's message, a
// stack frame): one that begins with neither.
func (p *parser) readHead(s []byte) (t headTime, level string, ok bool) {
	rest := s
	bracketed := len(rest) > 0 && rest[0] == '['
	if bracketed {
		rest = rest[1:]
	}
	if st, n, isStamp := scanDateTime(rest); isStamp {
		t, ok = p.dateTime(st), true
		rest = rest[n:]
	} else if st, n, isTOD := scanTimeOfDay(rest); isTOD {
		t, ok = p.timeOfDay(st), true
		rest = rest[n:]
	}
	if ok && bracketed && len(rest) > 0 && rest[0] == ']' {
		rest = rest[1:]
	}
	if !ok {
		// no timestamp: a level first ("[ERROR] [thread] …", "WARN …"),
		// or after a bracketed thread ("[main] INFO …"), begins an entry
		if lv, isLevel := levelOf(firstWord(s)); isLevel {
			return t, lv, true
		}
		if j := bytes.IndexByte(s, ']'); bracketed && j > 0 {
			if lv, isLevel := levelOf(firstWord(s[j+1:])); isLevel {
				return t, lv, true
			}
		}
		return t, "", false
	}
	// the level is one of the next few words: "[thread] INFO", "INFO  logger"
	for i := 0; i < 6; i++ {
		var w []byte
		if w, rest = nextWord(rest); w == nil {
			break
		}
		if lv, isLevel := levelOf(w); isLevel {
			return t, lv, true
		}
	}
	return t, "", true
}

func levelOf(w []byte) (string, bool) {
	lv, ok := levels[string(bytes.Trim(w, "[]:"))]
	return lv, ok
}

func firstWord(s []byte) []byte {
	w, _ := nextWord(s)
	return w
}

// nextWord returns the first space-separated word of s and what follows
// it; nil when there is none.
func nextWord(s []byte) (w, rest []byte) {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	j := i
	for j < len(s) && !isSpace(s[j]) {
		j++
	}
	if i == j {
		return nil, nil
	}
	return s[i:j], s[j:]
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == '\n'
}

// stamp is a timestamp as a line writes it.
type stamp struct {
	y, mo, d, h, mi, s, ns int
	zoned                  bool
	zone                   int // seconds east of UTC, when zoned
}

// scanDateTime reads "2026-11-30 12:00:00,123", "2026-11-30T12:00:00.5",
// with an optional fraction (1-9 digits) and zone ("Z", "+01:00",
// "+0100") at the start of s; n is its length.
func scanDateTime(s []byte) (st stamp, n int, ok bool) {
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':' {
		return st, 0, false
	}
	var okY, okMo, okD, okH, okMi, okS bool
	st.y, okY = digits(s[0:4])
	st.mo, okMo = digits(s[5:7])
	st.d, okD = digits(s[8:10])
	st.h, okH = digits(s[11:13])
	st.mi, okMi = digits(s[14:16])
	st.s, okS = digits(s[17:19])
	if !okY || !okMo || !okD || !okH || !okMi || !okS {
		return st, 0, false
	}
	n = 19 + fraction(s[19:], &st.ns, ".,")
	switch {
	case n < len(s) && s[n] == 'Z':
		st.zoned = true
		n++
	case n+3 <= len(s) && (s[n] == '+' || s[n] == '-'):
		h, okh := digits(s[n+1 : n+3])
		m, w := 0, 0
		switch {
		case n+6 <= len(s) && s[n+3] == ':':
			m, ok = digits(s[n+4 : n+6])
			w = 6
		case n+5 <= len(s):
			m, ok = digits(s[n+3 : n+5])
			w = 5
		}
		if okh && ok && w > 0 {
			st.zoned, st.zone = true, h*3600+m*60
			if s[n] == '-' {
				st.zone = -st.zone
			}
			n += w
		}
	}
	if st.mo < 1 || st.mo > 12 || st.d < 1 || st.d > daysIn(st.y, st.mo) || st.h > 23 || st.mi > 59 || st.s > 59 ||
		(st.zoned && (st.zone < -24*3600 || st.zone > 24*3600)) {
		return st, 0, false
	}
	return st, n, true
}

// scanTimeOfDay reads "12:00:00", "12:00:00.123" (or "," or ":" before
// the fraction) at the start of s, followed by its end, a space or "]".
func scanTimeOfDay(s []byte) (st stamp, n int, ok bool) {
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return st, 0, false
	}
	var okH, okMi, okS bool
	st.h, okH = digits(s[0:2])
	st.mi, okMi = digits(s[3:5])
	st.s, okS = digits(s[6:8])
	if !okH || !okMi || !okS {
		return st, 0, false
	}
	n = 8 + fraction(s[8:], &st.ns, ".,:")
	if n < len(s) && !isSpace(s[n]) && s[n] != ']' {
		return st, 0, false
	}
	return st, n, true
}

// fraction reads a separator of seps and 1 to 9 digits at the start of s
// into ns; its length, 0 when there is none.
func fraction(s []byte, ns *int, seps string) int {
	if len(s) < 2 || strings.IndexByte(seps, s[0]) < 0 || s[1] < '0' || s[1] > '9' {
		return 0
	}
	i, v := 1, 0
	for i < len(s) && i <= 9 && s[i] >= '0' && s[i] <= '9' {
		v = v*10 + int(s[i]-'0')
		i++
	}
	for k := i; k <= 9; k++ {
		v *= 10
	}
	*ns = v
	return i
}

func digits(s []byte) (int, bool) {
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(y, m int) int {
	return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dateTime is a date and time: a point with its zone, a wall-clock time
// without.
func (p *parser) dateTime(st stamp) headTime {
	if st.zoned {
		return headTime{at: At(time.Date(st.y, time.Month(st.mo), st.d, st.h, st.mi, st.s, st.ns, time.FixedZone("", st.zone)).UTC())}
	}
	return headTime{wall: time.Date(st.y, time.Month(st.mo), st.d, st.h, st.mi, st.s, st.ns, time.UTC), unzoned: true}
}

// timeOfDay dates a time of day with Options.Day, moving to the next day
// when the clock goes back more than 12 hours: a wall-clock time without
// a zone; none without a Day.
func (p *parser) timeOfDay(st stamp) headTime {
	if p.o.Day.IsZero() {
		return headTime{}
	}
	if st.h > 23 || st.mi > 59 || st.s > 60 {
		return headTime{}
	}
	d := time.Duration(st.h)*time.Hour + time.Duration(st.mi)*time.Minute + time.Duration(st.s)*time.Second + time.Duration(st.ns)
	if p.sawTOD && d < p.lastTOD-12*time.Hour {
		p.days++
	}
	p.sawTOD, p.lastTOD = true, d
	y, mo, day := p.o.Day.Date()
	return headTime{wall: time.Date(y, mo, day+p.days, 0, 0, 0, 0, time.UTC).Add(d), unzoned: true}
}
