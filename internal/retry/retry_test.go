package retry

import (
	"net/http"
	"testing"
	"time"
)

// TestJittered: wait n lies in [d/2, d] for d = base·2ⁿ⁻¹ capped at max,
// over many draws, and Reset starts over.
func TestJittered(t *testing.T) {
	const base, max = 500 * time.Millisecond, 30 * time.Second
	for round := range 50 {
		s := Jittered(base, max)
		for n := 1; n < 40; n++ {
			d := s.NextBackOff()
			hi := min(base<<min(n-1, 20), max)
			if d < hi/2 || d > hi {
				t.Fatalf("round %d: wait %d = %v, want in [%v, %v]", round, n, d, hi/2, hi)
			}
		}
		s.Reset()
		if d := s.NextBackOff(); d < base/2 || d > base {
			t.Fatalf("after Reset: %v, want in [%v, %v]", d, base/2, base)
		}
	}
}

// TestDoubling: base, doubling, capped at max, exactly; Reset starts over.
func TestDoubling(t *testing.T) {
	s := Doubling(500*time.Millisecond, 3*time.Second)
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second}
	for i, w := range want {
		if d := s.NextBackOff(); d != w {
			t.Fatalf("wait %d = %v, want %v", i+1, d, w)
		}
	}
	s.Reset()
	if d := s.NextBackOff(); d != 500*time.Millisecond {
		t.Errorf("after Reset: %v", d)
	}
}

func TestAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{http.Header{"Retry-After": {"0"}}, 0},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {"-3"}}, 0},
		{http.Header{"Retry-After": {"1e12"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"x"}, "Retry-After": {"9"}}, 9 * time.Second},
	}
	for _, c := range cases {
		if got := After(c.header, now); got != c.want {
			t.Errorf("After(%v) = %v, want %v", c.header, got, c.want)
		}
	}
}
