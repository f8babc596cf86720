package reconcile_test

import (
	"strings"
	"testing"
)

// TestUncachedHistories: without a cache every application writes a
// changelog state, so where the hop and the changelog are whole, an input
// whose state is missing is lost even when a later state hides it; the
// same evidence with a cache (or a hop purged) is clean, and a spec that
// says caching: false of a store whose changelog folds updates is judged
// as cached, with a note.
func TestUncachedHistories(t *testing.T) {
	a, b, c := judgeIn{0, "a", 5, 100}, judgeIn{0, "b", 7, 200}, judgeIn{0, "c", 9, 300}
	all := []judgeCopy{{"a", "c"}, {"b", "c"}, {"c", "c"}}
	mins := []judgeState{sumState("a", 5, 100), sumState("a", 5, 200), sumState("a", 5, 300)}
	skipped := []judgeState{mins[0], mins[2]} // b's state is missing; c's hides it
	for _, tt := range []struct {
		name     string
		reduce   string
		copies   []judgeCopy
		purged   bool
		states   []judgeState
		uncached bool
		oneTxn   bool
		want     []string
		note     string
	}{
		{"min, every state: clean", "min(amount)", all, false, mins, true, true, nil, ""},
		{"min, a state missing, uncached: state-diverged", "min(amount)", all, false, skipped, true, true, []string{"store/state-diverged src/0@1"}, ""},
		{"min, a state missing, cached: clean", "min(amount)", all, false, skipped, false, false, nil, ""},
		{"min, a state missing, uncached, copies purged: unapplied", "min(amount)", nil, true, skipped, true, true, []string{"repartition/unapplied src/0@1"}, ""},
		{"min, every state, uncached, copies purged: clean", "min(amount)", nil, true, mins, true, true, nil, ""},
		{"sum, every state: clean", "sum(amount)", all, false, []judgeState{sumState("a", 5, 100), sumState("a", 12, 200), sumState("a", 21, 300)}, true, true, nil, ""},
		{"caching: false, no key twice in a transaction: judged as cached: clean, with a note", "min(amount)", all, false, skipped, true, false, nil, "the spec says caching: false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := runJudgeOut(t, tt.reduce, []judgeIn{a, b, c}, tt.copies, tt.purged, tt.states, nil, judgeOpts{uncached: tt.uncached, oneTxn: tt.oneTxn})
			if got := judged(rep); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings %v, want %v (missing %v)", got, tt.want, rep.Summary.Missing)
			}
			notes := strings.Join(rep.Summary.Notes, "\n")
			if strings.Contains(notes, "caching: false") != (tt.note != "") {
				t.Errorf("notes %q, want one containing %q", notes, tt.note)
			}
		})
	}
}
