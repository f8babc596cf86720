package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/kaudit/kaudit/audit"
)

// progressRoles are the bars, in the order an audit reads the hops.
var progressRoles = []string{"source", "repartition", "changelog", "output"}

// progressBars draws one bar per role on a terminal: records read of
// those expected, records/s while the role is being read, and the ETA.
type progressBars struct {
	p      *mpb.Progress
	mu     sync.Mutex
	bars   map[string]*mpb.Bar
	totals map[string]int64
	last   time.Time // of the last count, of any role: roles are read one after the other
}

// newProgress returns progress bars on w when it is a terminal and quiet
// is not set, else nil; stop removes them.
func newProgress(w io.Writer, quiet bool) (audit.Progress, func()) {
	f, ok := w.(*os.File)
	if quiet || !ok || !isatty.IsTerminal(f.Fd()) {
		return nil, func() {}
	}
	b := newProgressBars(w)
	return b, b.stop
}

func newProgressBars(w io.Writer) *progressBars {
	b := &progressBars{p: mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh()),
		bars: map[string]*mpb.Bar{}, totals: map[string]int64{}, last: time.Now()}
	for _, role := range progressRoles {
		b.bars[role] = b.p.AddBar(0, mpb.BarWidth(24),
			mpb.PrependDecorators(decor.Name(role, decor.WCSyncSpaceR), decor.CountersNoUnit("%d / %d", decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.EwmaSpeed(nil, "%.0f rec/s", 30, decor.WCSyncSpace), decor.EwmaETA(decor.ET_STYLE_MMSS, 30, decor.WCSyncSpace)))
	}
	return b
}

func (b *progressBars) Expect(role string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bar := b.bars[role]; bar != nil {
		b.totals[role] += n
		bar.SetTotal(b.totals[role], false)
	}
}

func (b *progressBars) Read(role string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if bar := b.bars[role]; bar != nil {
		bar.EwmaIncrInt64(n, now.Sub(b.last))
	}
	b.last = now
}

// logTo returns a logger that writes "kaudit: msg" lines to w, or above
// the progress bars when p draws them.
func logTo(w io.Writer, p audit.Progress) func(string) {
	if b, ok := p.(*progressBars); ok {
		w = b.p
	}
	return func(msg string) { fmt.Fprintf(w, "kaudit: %s\n", msg) }
}

// stop completes every bar and waits for the last frame.
func (b *progressBars) stop() {
	b.mu.Lock()
	for _, bar := range b.bars {
		bar.SetTotal(-1, true)
	}
	b.mu.Unlock()
	b.p.Wait()
}

// newSpinner draws, on a terminal and unless quiet, a spinner with what
// is being done and the time it has taken, for a step that counts
// nothing (the demo writing its incident); stop removes it.
func newSpinner(w io.Writer, quiet bool, what string) (stop func()) {
	f, ok := w.(*os.File)
	if quiet || !ok || !isatty.IsTerminal(f.Fd()) {
		return func() {}
	}
	p := mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(200*time.Millisecond), mpb.WithAutoRefresh())
	bar := p.New(0, mpb.SpinnerStyle(), mpb.PrependDecorators(decor.Name(what, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_MMSS, decor.WCSyncSpace)), mpb.BarRemoveOnComplete())
	return func() {
		bar.SetTotal(-1, true)
		p.Wait()
	}
}
