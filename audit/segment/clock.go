package segment

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/kaudit/kaudit/audit"
)

var _ audit.Clock = (*Dir)(nil)

type clockCache struct {
	once sync.Once
	t    time.Time
}

// Now is the time the log dirs describe: when their brokers stopped
// writing. It is the latest batch timestamp of the internal topics' active
// segments (__cluster_metadata, where a KRaft controller appends a no-op
// record every 500 ms, __consumer_offsets and __transaction_state: all
// stamped by the brokers' clocks, unlike user topics whose CreateTime comes
// from the clients); without them (the dirs of the app's topics alone, a
// capture's bundle opened as log dirs) the latest batch timestamp of any
// active segment, the last record written; else the latest modification
// time of a segment file, which a copy of the dirs resets.
// An open transaction is then judged hanging by its age when the cluster
// stopped, not by when the audit runs.
func (d *Dir) Now() time.Time {
	cc := &d.offline.clock
	cc.once.Do(func() { cc.t = d.stopTime() })
	return cc.t
}

func (d *Dir) stopTime() time.Time {
	var latest, latestAny int64
	var mtime time.Time
	for tp, rs := range d.replicas {
		for _, r := range rs {
			if r.err != nil || len(r.segments) == 0 {
				continue
			}
			last := r.segments[len(r.segments)-1]
			if info, err := os.Stat(last.path); err == nil && info.ModTime().After(mtime) {
				mtime = info.ModTime()
			}
			internal := internalTopic(tp.Topic)
			if !internal && latest > 0 {
				continue // a broker's clock is known: the clients' are not read
			}
			r.batches(context.Background(), max(last.base, r.logStart), r.logEnd, false, func(h audit.Batch, _ []audit.Record, err error) bool {
				if err != nil {
					return false
				}
				if internal {
					latest = max(latest, h.MaxTimestamp)
				} else {
					latestAny = max(latestAny, h.MaxTimestamp)
				}
				return true
			})
		}
	}
	if latest > 0 {
		return time.UnixMilli(latest).UTC()
	}
	if latestAny > 0 {
		return time.UnixMilli(latestAny).UTC()
	}
	if mtime.IsZero() {
		return time.Now()
	}
	return mtime.UTC()
}
