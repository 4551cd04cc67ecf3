package bench

import (
	"context"
	"io"
	"time"

	"github.com/hindsight-dev/hindsight/progress"
)

// WaitIdle calls wait (which returns once background work such as indexing
// and embedding is done) and meanwhile draws a progress bar labelled label
// on progressOut, counting down pending (the number of units still queued,
// e.g. the outbox depth). With a nil pending or a quiet progressOut it only
// waits.
func WaitIdle(ctx context.Context, label string, wait func(context.Context) error, pending func() int, progressOut io.Writer) error {
	if pending == nil {
		return wait(ctx)
	}
	total := pending()
	bar := progress.New(progressOut, label, total)
	if bar == nil {
		return wait(ctx)
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bar.Set(total - min(pending(), total))
			}
		}
	}()
	err := wait(ctx)
	close(done)
	<-stopped
	if err == nil {
		bar.Set(total)
	}
	bar.Done()
	return err
}
