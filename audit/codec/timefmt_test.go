package codec

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestAppendTimestamp compares the fast formatter with the time package
// on edge and random instants.
func TestAppendTimestamp(t *testing.T) {
	ms := []int64{0, -1, 1, 999, -999, -1000, 1700000000123, 253402300799999, -62135596800000, 951782400000, 4107542400000}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ms = append(ms, r.Int64N(2*253402300799999)-253402300799999)
	}
	for _, v := range ms {
		us := v*1000 + r.Int64N(1000)
		for _, unit := range []struct {
			t   time.Time
			sec int64
			ns  int64
		}{
			{time.UnixMilli(v), floorDiv(v, 1000), (v - floorDiv(v, 1000)*1000) * 1e6},
			{time.UnixMicro(us), floorDiv(us, 1e6), (us - floorDiv(us, 1e6)*1e6) * 1e3},
		} {
			want := unit.t.UTC().Format(time.RFC3339Nano)
			if got := string(appendTimestamp(nil, unit.sec, unit.ns, false)); got != want {
				t.Fatalf("appendTimestamp(%d, %d) = %s, want %s", unit.sec, unit.ns, got, want)
			}
			wantLocal := unit.t.UTC().Format("2006-01-02T15:04:05.999999999")
			if got := string(appendTimestamp(nil, unit.sec, unit.ns, true)); got != wantLocal {
				t.Fatalf("local appendTimestamp(%d, %d) = %s, want %s", unit.sec, unit.ns, got, wantLocal)
			}
		}
	}
	// Far outside 0000–9999 the time package answers.
	if got := string(appendTimestamp(nil, math.MaxInt64/1000, 0, false)); got == "" {
		t.Error("empty text for a far instant")
	}
}
