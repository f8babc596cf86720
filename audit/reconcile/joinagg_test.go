package reconcile_test

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/kaudit/kaudit/audit"
)

// TestInnerJoinOfAggregates: SmokeTestClient's dif (max.join(min,
// (v1, v2) -> v1 - v2), Integer) and avg (sum.join(cnt, (v1, v2) ->
// (double) v1 / v2), Double) over EosTestClient's tables: inner joins of
// two aggregates whose output is checked against the tables' final states.
func TestInnerJoinOfAggregates(t *testing.T) {
	values := []int32{5, 9, 2, 7}
	states := cleanStates(values, nil)
	last := func(name string) eosState { s := states[name]; return s[len(s)-1] }
	dif := last("max").v - last("min").v // 9 - 2
	avg := float64(last("sum").v) / float64(last("cnt").v)
	ts := max(last("max").ts, last("min").ts)
	dbl := func(f float64) []byte { return binary.BigEndian.AppendUint64(nil, math.Float64bits(f)) }
	for _, tt := range []struct {
		name string
		dif  []byte // the dif output's last record of key k, nil for none
		avg  []byte
		want []string
	}{
		{"clean", int32Bytes(int32(dif)), dbl(avg), nil},
		{"dif stale", int32Bytes(int32(dif - 1)), dbl(avg), []string{"join/join-stale dif"}},
		{"avg missing", int32Bytes(int32(dif)), nil, []string{"join/join-missing avg"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			every := make([]int, len(values)) // each input's copy on repartition
			for i := range every {
				every[i] = i
			}
			rep, _ := runEOSWith(t, eosEvidence{ins: values, copies: every, states: states}, `joins:
  - {output: dif, left: max, right: min, type: inner, value: "left - r1"}
  - {output: avg, left: sum, right: cnt, type: inner, value: "float(left) / float(r1)", serdes: {value: Double}}
`, map[string][]byte{"dif": tt.dif, "avg": tt.avg}, ts)
			var got []string
			for _, f := range rep.Findings {
				if f.Severity == audit.SeverityLoss || f.Severity == audit.SeverityAnomaly {
					got = append(got, string(f.Stage)+"/"+string(f.Cause)+" "+f.Topic)
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("findings %v, want %v (missing %v)", got, tt.want, rep.Summary.Missing)
			}
			if rep.Summary.Verdict == audit.VerdictIncomplete {
				t.Errorf("incomplete: %v", rep.Summary.Missing)
			}
		})
	}
}
