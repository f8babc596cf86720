package draft

import (
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit/infer"
)

// TestMissingStates: a table's output found without a topology carries no
// filter only when it holds every state of the changelog, both read whole;
// a state it lacks (toStream().filter(…).to(…)) leaves the output's filter
// a TODO, so the output is unjudged, never a false join-missing.
func TestMissingStates(t *testing.T) {
	topic := func(name string, whole bool, kvs ...string) *infer.Topic {
		tp := &infer.Topic{Name: name, Partitions: 1, Parts: map[int32][]infer.Rec{}, Whole: map[int32]bool{0: whole}, Full: map[int32]bool{0: true}}
		for i := 0; i < len(kvs); i += 2 {
			tp.Parts[0] = append(tp.Parts[0], infer.Rec{Offset: int64(i / 2), RawKey: []byte(kvs[i]), RawValue: []byte(kvs[i+1])})
		}
		return tp
	}
	cl := topic("cl", true, "a", "1", "a", "2", "b", "1")
	for _, tc := range []struct {
		name string
		out  *infer.Topic
		want string // a word of the reason, "" for none
	}{
		{"every state on the output", topic("out", true, "a", "1", "a", "2", "b", "1"), ""},
		{"a state filtered out", topic("out", true, "a", "1", "a", "2"), "1 states"},
		{"the output read in part", topic("out", false, "a", "1", "a", "2", "b", "1"), "read in part"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := missingStates(cl, tc.out)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("missingStates = %q, want %q", got, tc.want)
			}
		})
	}
}
