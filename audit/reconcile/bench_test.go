package reconcile

import "testing"

// BenchmarkFingerprint: one per input and per repartition copy.
func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = fingerprintOf(`"o-0001234"`, [16]byte{1}, int64(i))
	}
}
