package ingest

import (
	"testing"
	"time"
)

// TestSpeedBudget: a bulk step takes what the measured speed indexes in
// StepTime, within the full budget and no less than an eighth of it, and
// the whole budget before any step was measured; the speed is a moving
// average of the steps.
func TestSpeedBudget(t *testing.T) {
	full := stepBudget{256, 2 << 20}
	var s speed
	if got := s.budget(time.Second, full); got != full {
		t.Errorf("unmeasured: budget %v, want the full %v", got, full)
	}
	s.observe(100, 1<<20, time.Second) // 100 sessions, 1 MiB a second
	tests := []struct {
		step time.Duration
		want stepBudget
	}{
		{time.Second, stepBudget{100, 1 << 20}},
		{500 * time.Millisecond, stepBudget{50, 1 << 19}},
		{time.Hour, full}, // capped
		{time.Millisecond, stepBudget{32, (2 << 20) / 8}}, // floored at an eighth
	}
	for _, tc := range tests {
		if got := s.budget(tc.step, full); got != tc.want {
			t.Errorf("StepTime %v: budget %v, want %v", tc.step, got, tc.want)
		}
	}
	s.observe(200, 2<<20, time.Second)
	if s.sessions <= 100 || s.sessions >= 200 {
		t.Errorf("after a faster step: %.1f sessions/s, want between the two steps' speeds", s.sessions)
	}
	s.observe(0, 0, time.Second) // an empty step says nothing
	s.observe(5, 5, 0)
	if s.sessions <= 100 || s.sessions >= 200 {
		t.Errorf("empty or untimed steps changed the speed to %.1f", s.sessions)
	}
}
