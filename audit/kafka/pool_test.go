package kafka

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecordSlices: the slices of one fetch's batches are distinct (their
// records are all alive until the fetch is converted), and handed out
// again only after reuse, each to a batch it is large enough for.
func TestRecordSlices(t *testing.T) {
	var p recordSlices
	first := map[*kgo.Record]bool{}
	for _, n := range []int{3, 100, 7} {
		s := p.GetRecords(n)
		if cap(s) < n {
			t.Fatalf("GetRecords(%d): capacity %d", n, cap(s))
		}
		s = s[:n]
		if first[&s[0]] {
			t.Fatalf("GetRecords(%d) gave a slice already handed out for this fetch", n)
		}
		first[&s[0]] = true
	}
	p.reuse()
	again := 0
	for _, n := range []int{100, 3, 7, 5} {
		s := p.GetRecords(n)[:n]
		if first[&s[0]] {
			again++
			delete(first, &s[0]) // not twice in one fetch
		}
	}
	if again != 3 {
		t.Errorf("%d of the 3 slices handed out again after reuse, want 3", again)
	}
}
