// Package retry is when to try again: the one backoff schedule of
// Hindsight's clients and queues (on github.com/cenkalti/backoff/v4), and
// the one reading of a server's Retry-After. Callers keep their own loops,
// attempt counts and caps; they take their waits from here.
package retry

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Jittered is the schedule of a client retrying a request: the n-th wait is
// a random duration between half and all of base·2ⁿ⁻¹, which stops growing
// at max. It never ends (the caller counts attempts); Reset starts it over.
// The jitter keeps clients that failed together from retrying together.
func Jittered(base, max time.Duration) backoff.BackOff {
	// backoff draws from interval·(1 ± RandomizationFactor): an interval of
	// ¾·d with a factor of ⅓ is [d/2, d].
	return exponential(base*3/4, max*3/4, 1.0/3)
}

// Doubling is the schedule of a queue retrying its own work: base, 2·base,
// 4·base, ..., at most max, without jitter (one worker, nobody to collide
// with). It never ends; Reset starts it over after a success.
func Doubling(base, max time.Duration) backoff.BackOff {
	return exponential(base, max, 0)
}

func exponential(initial, max time.Duration, jitter float64) backoff.BackOff {
	e := backoff.NewExponentialBackOff()
	e.InitialInterval = initial
	e.RandomizationFactor = jitter
	e.Multiplier = 2
	e.MaxInterval = max
	e.MaxElapsedTime = 0 // never Stop: the caller decides when to give up
	e.Reset()
	return e
}

// After is how long a server asked the client to wait before it retries,
// relative to now: retry-after-ms (OpenAI, Azure) when present, else
// Retry-After in seconds (fractions allowed) or as an HTTP date. Absent,
// malformed, negative, absurdly large or past values give 0 (the caller's
// own schedule applies).
func After(h http.Header, now time.Time) time.Duration {
	if ms, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && ms > 0 && ms < 1e12 {
		return time.Duration(ms * float64(time.Millisecond))
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
