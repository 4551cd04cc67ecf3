package bench

import (
	"math"
	"testing"
)

// TestStatsKnownValues: the t-test and the confidence interval, now on
// gonum's stat, against values computed independently at 40 digits (mpmath:
// the sample variance with divisor n-1, and p = I_{df/(df+t²)}(df/2, 1/2)),
// within 1e-9 relative.
func TestStatsKnownValues(t *testing.T) {
	within := func(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }
	tTests := []struct {
		name string
		a, b []float64
		t, p float64
	}{
		{
			name: "nDCG of two systems over 12 queries",
			a:    []float64{0.61, 0.42, 0.88, 0.35, 0.70, 0.55, 0.91, 0.12, 0.48, 0.66, 0.73, 0.29},
			b:    []float64{0.58, 0.40, 0.80, 0.41, 0.62, 0.50, 0.85, 0.15, 0.40, 0.61, 0.70, 0.30},
			t:    2.4218966651005997, p: 0.033892825604827667,
		},
		{
			name: "success@1 (0 or 1) over 10 queries",
			a:    []float64{1, 0, 1, 1, 0, 1, 1, 1, 0, 1},
			b:    []float64{0, 0, 1, 0, 0, 1, 0, 1, 0, 0},
			t:    2.4494897427831781, p: 0.036787497879786162,
		},
	}
	for _, tt := range tTests {
		gotT, gotP, err := PairedTTest(tt.a, tt.b)
		if err != nil || !within(gotT, tt.t) || !within(gotP, tt.p) {
			t.Errorf("%s: PairedTTest = (%.17g, %.17g, %v), want (%.17g, %.17g)", tt.name, gotT, gotP, err, tt.t, tt.p)
		}
	}
	ciTests := []struct {
		xs         []float64
		mean, half float64
	}{
		{[]float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, 1.4816207341961707},
		{[]float64{0.61, 0.42, 0.88, 0.35, 0.70, 0.55, 0.91, 0.12, 0.48, 0.66, 0.73, 0.29}, 0.55833333333333333, 0.13460526202811154},
	}
	for _, tt := range ciTests {
		if m, h := meanCI95(tt.xs); !within(m, tt.mean) || !within(h, tt.half) {
			t.Errorf("meanCI95(%v) = %.17g ± %.17g, want %.17g ± %.17g", tt.xs, m, h, tt.mean, tt.half)
		}
	}
}
