package audit

import "testing"

func TestMurmur2(t *testing.T) {
	// Values from Kafka's UtilsTest#testMurmur2.
	for _, tt := range []struct {
		in   string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := Murmur2([]byte(tt.in)); got != tt.want {
			t.Errorf("Murmur2(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
