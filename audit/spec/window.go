package spec

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Window is a table's TimeWindows (windowedBy(TimeWindows…)): size,
// advance (the hop; the size for tumbling windows) and grace, in
// milliseconds. The spec writes them as Go durations (1m, 30s, 1h30m) or
// as milliseconds (60000).
type Window struct {
	Size    int64
	Advance int64
	Grace   int64
	// GraceUnknown is `grace: unknown` (a spec kaudit inferred: the
	// evidence shows the size and advance, not the grace). Grace is then
	// 0, a lower bound: an input missing from a window that had closed
	// under it is missing evidence, neither late nor a loss.
	GraceUnknown bool
	// raw holds the fields as written, parsed by validate (which knows
	// the line); bad is a shape error.
	raw  map[string]string
	bad  string
	todo string // a draft's TODO in place of the window
}

// UnmarshalYAML reads {size: 1m, advance: 30s, grace: 10s}.
func (w *Window) UnmarshalYAML(unmarshal func(any) error) error {
	var m map[string]any
	if err := unmarshal(&m); err != nil {
		var text string
		if unmarshal(&text) == nil && isTODO(text) {
			w.todo = text // a draft's: settle takes it out of the way
		}
		w.bad = "want {size: DURATION, advance: DURATION, grace: DURATION}"
		return nil
	}
	w.raw = map[string]string{}
	for k, v := range m {
		switch x := v.(type) {
		case string:
			w.raw[k] = x
		case map[string]any, []any, nil:
			w.bad = fmt.Sprintf("%s: want a duration (1m, 30s) or milliseconds", k)
			return nil
		default:
			w.raw[k] = fmt.Sprint(x)
		}
	}
	return nil
}

// MarshalYAML writes the window back in milliseconds.
func (w Window) MarshalYAML() (any, error) {
	if w.GraceUnknown {
		return map[string]any{"size": w.Size, "advance": w.Advance, "grace": GraceUnknown}, nil
	}
	return map[string]int64{"size": w.Size, "advance": w.Advance, "grace": w.Grace}, nil
}

// GraceUnknown is the grace of a window whose grace is not known.
const GraceUnknown = "unknown"

// parse checks the fields: size required and positive, advance in
// (0, size] (TimeWindows.advanceBy), grace ≥ 0; advance defaults to
// size (tumbling), grace to 0 (TimeWindows.ofSizeWithNoGrace).
func (w *Window) parse() (field string, err error) {
	if w.bad != "" {
		return "", fmt.Errorf("%s", w.bad)
	}
	ms := map[string]int64{}
	for k, v := range w.raw {
		switch k {
		case "size", "advance", "grace":
		default:
			return k, fmt.Errorf("unknown key %q: want size, advance, grace", k)
		}
		if k == "grace" && strings.TrimSpace(v) == GraceUnknown {
			continue
		}
		d, err := parseMillis(v)
		if err != nil {
			return k, err
		}
		ms[k] = d
	}
	size, ok := ms["size"]
	switch {
	case !ok:
		return "size", fmt.Errorf("required: the window size (TimeWindows.ofSizeWithNoGrace(size))")
	case size <= 0:
		return "size", fmt.Errorf("want a positive size, not %d ms", size)
	}
	adv, ok := ms["advance"]
	if !ok {
		adv = size
	}
	if adv <= 0 || adv > size {
		return "advance", fmt.Errorf("want an advance in (0, size=%d ms], as TimeWindows.advanceBy, not %d ms", size, adv)
	}
	grace := ms["grace"]
	if grace < 0 {
		return "grace", fmt.Errorf("want a grace of 0 or more, not %d ms", grace)
	}
	w.Size, w.Advance, w.Grace = size, adv, grace
	w.GraceUnknown = strings.TrimSpace(w.raw["grace"]) == GraceUnknown
	return "", nil
}

// parseMillis reads a Go duration (1m30s) or a whole number of
// milliseconds.
func parseMillis(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q: want a Go duration (1m, 30s, 1h30m) or milliseconds", s)
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("bad duration %q: Streams counts whole milliseconds", s)
	}
	return d.Milliseconds(), nil
}

// Starts returns the starts of the windows a record at ts falls in, in
// ascending order, as TimeWindows.windowsFor does: s = k*advance with
// s <= ts < s+size (and s ≥ 0).
func (w *Window) Starts(ts int64) []int64 {
	start := max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance
	var out []int64
	for ; start <= ts; start += w.Advance {
		out = append(out, start)
	}
	return out
}

// Suppress names a table's suppress(); the one form modelled is
// until-window-closes (Suppressed.untilWindowCloses): each window's final
// result, once stream time reaches its end plus grace.
type Suppress string

// SuppressUntilWindowCloses is suppress(Suppressed.untilWindowCloses(…)).
const SuppressUntilWindowCloses Suppress = "until-window-closes"

func (s *Spec) validateWindow(l *errList, path, field string, t *TableSpec) {
	if t.Window != nil {
		if f, err := t.Window.parse(); err != nil {
			p, fl := path+".window", field+".window"
			if f != "" {
				p, fl = p+"."+f, fl+"."+f
			}
			l.add(p, fl, "%v", err)
		}
	}
	switch t.Suppress {
	case "":
	case SuppressUntilWindowCloses:
		switch {
		case t.Window == nil:
			l.add(path+".suppress", field+".suppress", "suppress: until-window-closes needs a window")
		case t.Output == "":
			l.add(path+".suppress", field+".suppress", "suppress needs output: the topic the final results are written to")
		case t.Window.GraceUnknown:
			l.add(path+".window.grace", field+".window.grace", "suppress: until-window-closes needs the window's grace (it emits a window once stream time passes its end plus the grace), not unknown")
		}
	default:
		l.add(path+".suppress", field+".suppress", "unknown suppress %q (want until-window-closes)", t.Suppress)
	}
}
