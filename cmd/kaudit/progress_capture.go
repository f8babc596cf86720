package main

import (
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// captureBar is kaudit capture's progress on a terminal: one mpb bar of
// the offsets copied, as diff draws its hops.
type captureBar struct {
	mu   sync.Mutex
	p    *mpb.Progress
	bar  *mpb.Bar
	last time.Time
}

func newCaptureBar(w io.Writer) *captureBar {
	p := mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	bar := p.AddBar(0, mpb.BarWidth(24),
		mpb.PrependDecorators(decor.Name("capture", decor.WCSyncSpaceR), decor.CountersNoUnit("%d / %d offsets", decor.WCSyncSpace)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace), decor.EwmaETA(decor.ET_STYLE_MMSS, 30, decor.WCSyncSpace)))
	return &captureBar{p: p, bar: bar, last: time.Now()}
}

// update is snapshot.CaptureOptions.Progress: done of total offsets.
func (c *captureBar) update(done, total int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.bar.SetTotal(total, false)
	c.bar.EwmaSetCurrent(done, now.Sub(c.last))
	c.last = now
}

// done completes the bar and waits for its last frame.
func (c *captureBar) done() {
	c.mu.Lock()
	c.bar.SetTotal(-1, true)
	c.mu.Unlock()
	c.p.Wait()
}
