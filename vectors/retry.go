package vectors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/hindsight-dev/hindsight/internal/retry"
)

// RetryOptions configures Retrying. Zero values take defaults.
type RetryOptions struct {
	// MaxAttempts bounds the attempts, the first included; 0 means 5.
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt; it doubles per
	// attempt, and each wait is drawn from [d/2, d] (jitter); 0 means 500ms.
	BaseDelay time.Duration
	// MaxDelay caps one wait; 0 means 30 seconds. A provider asking (by
	// Retry-After) for a longer wait ends the retries at once, so a queue
	// can reschedule the work rather than hold a worker.
	MaxDelay time.Duration
	// Sleep waits d or until ctx ends (returning ctx.Err()); nil means a
	// timer. Tests pass a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o RetryOptions) withDefaults() RetryOptions {
	o.MaxAttempts = max(1, cmp.Or(o.MaxAttempts, 5))
	o.BaseDelay = cmp.Or(o.BaseDelay, 500*time.Millisecond)
	o.MaxDelay = cmp.Or(o.MaxDelay, 30*time.Second)
	if o.Sleep == nil {
		o.Sleep = sleep
	}
	return o
}

// Retrying returns e retrying calls that failed for a reason that may pass:
// a *ProviderError that is Temporary (no answer, 408, 429, 5xx) or a network
// error. It waits the provider's Retry-After when given (plus up to 10%
// jitter), else an exponential backoff with jitter, never beyond ctx's
// deadline: when the next wait would end after it, the last error is
// returned at once. Other errors (400, 401, ErrDimensionMismatch,
// ErrBadResponse) are returned at once, as is ctx.Err() when ctx ends.
//
// A retry repeats the whole call; an embedder that splits a call into
// several requests sends the earlier ones again.
func Retrying(e Embedder, opts RetryOptions) Embedder {
	return &retrying{Embedder: e, opts: opts.withDefaults()}
}

type retrying struct {
	Embedder
	opts RetryOptions
}

func (r *retrying) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	sched := retry.Jittered(r.opts.BaseDelay, r.opts.MaxDelay)
	for attempt := 1; ; attempt++ {
		vs, err := r.Embedder.Embed(ctx, texts)
		if err == nil {
			return vs, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		temporary, after := retryable(err)
		if !temporary {
			return nil, err
		}
		if attempt >= r.opts.MaxAttempts {
			return nil, fmt.Errorf("embed: gave up after %d attempts: %w", attempt, err)
		}
		if after > r.opts.MaxDelay {
			return nil, fmt.Errorf("embed: provider asks to retry in %s, more than the %s allowed: %w", after.Round(time.Second), r.opts.MaxDelay, err)
		}
		wait := sched.NextBackOff()
		if after > 0 {
			wait = max(wait, after+rand.N(after/10+1))
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, fmt.Errorf("embed: not retrying, the next attempt (in %s) would pass the deadline: %w", wait.Round(time.Millisecond), err)
		}
		if err := r.opts.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// retryable reports whether err may pass on a later attempt, and how long
// the provider asked to wait.
func retryable(err error) (bool, time.Duration) {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe.Temporary(), pe.RetryAfter
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true, 0
	}
	return false, 0
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryDelay is the wait the provider asked for (Retry-After), 0 when it
// named none; callers that pass a failure on (a 503 to an API client) read
// it without knowing this type.
func (e *ProviderError) RetryDelay() time.Duration { return e.RetryAfter }
