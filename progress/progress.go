// Package progress draws a progress bar for long operations (reindex, bench
// phases, imports). On a terminal it redraws one line; elsewhere (CI logs,
// pipes) it prints a line every 10% so logs stay short.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Bar is safe for concurrent use. A nil *Bar does nothing, so callers can
// pass nil for "quiet".
type Bar struct {
	w       io.Writer
	label   string
	total   int
	tty     bool
	start   time.Time
	mu      sync.Mutex
	n       int
	drawn   time.Time
	decile  int
	stopped bool
}

// New returns a bar counting to total on w. w == nil or io.Discard gives a
// nil (silent) bar.
func New(w io.Writer, label string, total int) *Bar {
	if w == nil || w == io.Discard {
		return nil
	}
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &Bar{w: w, label: label, total: total, tty: tty, start: time.Now()}
}

// Set records that n units are done.
func (b *Bar) Set(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.n {
		b.n = n
	}
	b.draw(false)
}

// Add records delta more units done.
func (b *Bar) Add(delta int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	b.n += delta
	b.draw(false)
	b.mu.Unlock()
}

// Done draws the final state with the elapsed time and rate.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.draw(true)
		b.stopped = true
	}
}

func (b *Bar) draw(final bool) {
	if b.stopped {
		return
	}
	now := time.Now()
	elapsed := now.Sub(b.start)
	rate := float64(b.n) / max(elapsed.Seconds(), 1e-9)
	frac := 1.0
	if b.total > 0 {
		frac = min(1, float64(b.n)/float64(b.total))
	}
	if b.tty {
		if !final && now.Sub(b.drawn) < 100*time.Millisecond {
			return
		}
		b.drawn = now
		const width = 30
		filled := int(frac * width)
		fmt.Fprintf(b.w, "\r%-10s [%s%s] %3.0f%% %d/%d %.0f/s %s", b.label,
			strings.Repeat("=", filled), strings.Repeat(" ", width-filled), frac*100, b.n, b.total, rate, elapsed.Round(time.Second/10))
		if final {
			fmt.Fprintln(b.w)
		}
		return
	}
	d := int(frac * 10)
	if final && b.decile == 10 {
		return // the 100% line is already printed
	}
	if final || d > b.decile {
		b.decile = d
		fmt.Fprintf(b.w, "%s: %3.0f%% %d/%d (%.0f/s, %s)\n", b.label, frac*100, b.n, b.total, rate, elapsed.Round(time.Millisecond))
	}
}
