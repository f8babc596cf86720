package history

import (
	"fmt"
	"strings"

	"github.com/kaudit/kaudit/audit"
)

// maxLinesCited bounds the log lines a finding's detail quotes.
const maxLinesCited = 3

// Findings are the result's skips as findings: one per range, at its
// first offset with Count offsets (the records themselves are gone, or,
// moved past by hand, still readable there), the time and producer of the
// commit that moved past it, and the evidence in the detail.
func (r Result) Findings() []audit.Finding {
	var out []audit.Finding
	for _, s := range r.Skips {
		f := audit.NewFinding(s.Stage, s.Cause, r.TP, s.From)
		f.Count = s.To - s.From
		f.Timestamp = s.Commit.Time
		if s.Commit.Transactional {
			f.ProducerID, f.ProducerEpoch = s.Commit.ProducerID, s.Commit.ProducerEpoch
		}
		var b strings.Builder
		fmt.Fprintf(&b, "offsets %d-%d were never consumed: the group's committed offset moved from %d (committed %s by %s) to %d (committed %s by %s) past them: %s",
			s.From, s.To-1, s.Before.Offset, ms(s.Before.LastTime), s.Before.By(), s.Commit.Offset, ms(s.Commit.Time), s.Commit.By(), s.Why)
		for i, l := range s.Lines {
			if i == maxLinesCited {
				fmt.Fprintf(&b, "; and %d more lines", len(s.Lines)-i)
				break
			}
			fmt.Fprintf(&b, "; log %s", l)
		}
		f.Detail = b.String()
		out = append(out, f)
	}
	return out
}

// Missing says, for each range whose fate the evidence cannot settle,
// what is missing: the audit is incomplete, never clean, for it.
func (r Result) Missing() []string {
	var out []string
	for _, g := range r.Unknown {
		rng := fmt.Sprintf("offsets %d-%d", g.From, g.To-1)
		if g.From < 0 {
			rng = fmt.Sprintf("offsets below %d", g.To)
		}
		out = append(out, fmt.Sprintf("%s %s (%s): whether the app consumed them before its committed offset moved past them: %s", r.TP, rng, r.Role, g.Why))
	}
	return out
}

// mergeGaps joins adjacent ranges left unknown for the same reason by one
// commit after another (a running consumer's every commit).
func mergeGaps(gs []Gap) []Gap {
	var out []Gap
	runs := 0
	for _, g := range gs {
		if n := len(out); n > 0 && out[n-1].To == g.From && g.From >= 0 && sameReason(out[n-1].Why, g.Why) {
			out[n-1].To, out[n-1].Commit = g.To, g.Commit
			runs++
			continue
		}
		if runs > 0 {
			out[len(out)-1].Why += fmt.Sprintf(" (the same for the %d commits after it, up to %d at %s)", runs, out[len(out)-1].Commit.Offset, ms(out[len(out)-1].Commit.Time))
		}
		runs = 0
		out = append(out, g)
	}
	if runs > 0 {
		out[len(out)-1].Why += fmt.Sprintf(" (the same for the %d commits after it, up to %d at %s)", runs, out[len(out)-1].Commit.Offset, ms(out[len(out)-1].Commit.Time))
	}
	return out
}

// sameReason compares two reasons up to their first number.
func sameReason(a, b string) bool {
	cut := func(s string) string {
		if i := strings.IndexAny(s, "0123456789"); i >= 0 {
			return s[:i]
		}
		return s
	}
	return cut(a) == cut(b)
}
