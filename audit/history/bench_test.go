package history

import (
	"testing"
	"time"

	"github.com/kaudit/kaudit/audit"
)

// BenchmarkAnalyze judges a partition of 100,000 commits (an exactly-once
// app committing every 100 ms for about three hours, restarted every
// 10,000 commits) against a log start that passed every one of them, with
// a purge observed every 30 s: every commit judged.
func BenchmarkAnalyze(b *testing.B) {
	l := &glog{}
	for i := range 100_000 {
		if i%10_000 == 0 {
			l.gen(int32(i), 1, at(float64(i)/10))
			l.epoch++
		}
		l.txn(7, at(float64(i)/10+0.05), rep, 10*(i+1))
	}
	ev := &Evidence{Group: group, History: l.history(b)}
	var obs []LogStartAt
	for i := range 360 {
		obs = append(obs, LogStartAt{Time: time.UnixMilli(at(float64(30 * i))), Offset: int64(3000 * i), Why: "a purge"})
	}
	ev.LogStarts = map[audit.TopicPartition][]LogStartAt{rep: obs}
	p := Partition{TP: rep, Role: Repartition, LogStart: 10 * 100_000, Now: t0.Add(4 * time.Hour)}
	b.ReportAllocs()
	for b.Loop() {
		res := ev.Analyze(p)
		if res.Judged != 99_999 {
			b.Fatalf("judged %d", res.Judged)
		}
	}
}
