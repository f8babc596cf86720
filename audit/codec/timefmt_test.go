package codec

import (
	"math"
	"math/rand/v2"
	"strconv"
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

// TestDate compares the decoder's date text with the time package's on
// edge and random day counts of the whole int range.
func TestDate(t *testing.T) {
	days := []int64{0, -1, 1, 59, 60, -719528, -719529, 2932896, 2932897, math.MinInt32, math.MaxInt32}
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		days = append(days, r.Int64N(6000000)-3000000, int64(int32(r.Uint32())))
	}
	var d avroDecoder
	d.setPayload(nil, 4)
	for _, n := range days {
		want := time.Unix(n*86400, 0).UTC().Format(time.DateOnly)
		if got := d.date(n); got != want {
			t.Fatalf("date(%d) = %v, want %s", n, got, want)
		}
	}
}

// TestAppendInt compares appendInt with strconv on edges and random
// values of every length.
func TestAppendInt(t *testing.T) {
	vs := []int64{0, 1, -1, 9, 10, 99, 100, 101, 999, 1000, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	r := rand.New(rand.NewPCG(3, 9))
	for range 10000 {
		vs = append(vs, int64(r.Uint64())>>r.IntN(64))
	}
	for _, v := range vs {
		for _, v := range []int64{v, -v} {
			if got, want := string(appendInt(nil, v)), strconv.FormatInt(v, 10); got != want {
				t.Fatalf("appendInt(%d) = %s", v, got)
			}
		}
	}
}
