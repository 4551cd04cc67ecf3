package httpd

import (
	"strconv"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(2, 3, func() time.Time { return now })
	for i := range 3 {
		if w := l.take("a"); w != 0 {
			t.Fatalf("take %d within the burst waited %v", i+1, w)
		}
	}
	// Over the burst: half a second until the next token at 2/s, and asking
	// again (a refused request) does not push that further out.
	for range 3 {
		if w := l.take("a"); w != 500*time.Millisecond {
			t.Fatalf("over the burst: wait %v, want 500ms", w)
		}
	}
	if w := l.take("b"); w != 0 {
		t.Fatalf("another key waits %v", w)
	}
	now = now.Add(500 * time.Millisecond)
	if w := l.take("a"); w != 0 {
		t.Fatalf("after the wait: %v", w)
	}
	if w := l.take("a"); w <= 0 {
		t.Fatalf("the refilled token was spent twice")
	}

	// Buckets of idle keys go once they have refilled; busy ones stay.
	for i := range 1000 {
		l.take("k" + strconv.Itoa(i))
	}
	if n := l.size(); n != 1002 {
		t.Fatalf("%d buckets, want 1002", n)
	}
	now = now.Add(2 * time.Minute)
	for range 4 {
		l.take("busy")
	}
	if n := l.size(); n != 1 {
		t.Errorf("%d buckets after the idle keys refilled, want 1", n)
	}
	if w := l.take("busy"); w <= 0 {
		t.Errorf("the sweep reset a busy key's bucket")
	}
}

func TestLimiterDefaultBurst(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		rate  float64
		burst int
	}{{0.5, 1}, {1, 1}, {10, 10}} {
		l := newLimiter(tc.rate, 0, func() time.Time { return now })
		for i := range tc.burst {
			if l.take("k") != 0 {
				t.Fatalf("rate %v: take %d refused, want a burst of %d", tc.rate, i+1, tc.burst)
			}
		}
		if l.take("k") == 0 {
			t.Errorf("rate %v: burst larger than %d", tc.rate, tc.burst)
		}
	}
}
