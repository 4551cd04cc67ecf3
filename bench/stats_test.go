package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(ns ...int) []time.Duration {
	out := make([]time.Duration, len(ns))
	for i, n := range ns {
		out[i] = time.Duration(n) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	oneToTen := ms(7, 3, 10, 1, 9, 2, 8, 4, 6, 5) // 1..10 ms, shuffled
	oneToHundred := make([]time.Duration, 100)
	for i := range oneToHundred {
		oneToHundred[i] = time.Duration(100-i) * time.Millisecond
	}
	tests := []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"single sample", ms(42), 99, 42 * time.Millisecond},
		{"p0 is the minimum", oneToTen, 0, 1 * time.Millisecond},
		{"p10: rank ceil(1.0) = 1", oneToTen, 10, 1 * time.Millisecond},
		{"p11: rank ceil(1.1) = 2", oneToTen, 11, 2 * time.Millisecond},
		{"p50: rank ceil(5.0) = 5", oneToTen, 50, 5 * time.Millisecond},
		{"p90: rank 9", oneToTen, 90, 9 * time.Millisecond},
		{"p95: rank ceil(9.5) = 10", oneToTen, 95, 10 * time.Millisecond},
		{"p99 of 10 samples is the maximum", oneToTen, 99, 10 * time.Millisecond},
		{"p100 is the maximum", oneToTen, 100, 10 * time.Millisecond},
		{"p50 of an even count is the lower median", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 1..100: rank 99 exactly", oneToHundred, 99, 99 * time.Millisecond},
		{"p99.5 of 1..100: rank ceil(99.5) = 100", oneToHundred, 99.5, 100 * time.Millisecond},
		{"p below 0 clamps to the minimum", oneToTen, -5, 1 * time.Millisecond},
		{"p above 100 clamps to the maximum", oneToTen, 150, 10 * time.Millisecond},
		{"NaN counts as 0", oneToTen, math.NaN(), 1 * time.Millisecond},
		{"duplicates", ms(5, 5, 5, 1), 50, 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.samples)
			if got := Percentile(tt.samples, tt.p); got != tt.want {
				t.Errorf("Percentile(p=%v) = %v, want %v", tt.p, got, tt.want)
			}
			if !slices.Equal(before, tt.samples) {
				t.Error("Percentile modified its input")
			}
		})
	}
}

func TestStudentTwoSided(t *testing.T) {
	// Two-sided p values of Student's t, from mpmath at 30 digits; the
	// first two are the classic table values 0.07339 and 0.3632.
	tests := []struct {
		t, df, want float64
	}{
		{2.0, 10, 0.0733880347707404},
		{1.0, 5, 0.363217467649123},
		{-1.0, 5, 0.363217467649123}, // two-sided: symmetric
		{2.5, 3, 0.0877066470080655},
		{0.5, 30, 0.620723004885127},
		{10, 2, 0.00985245702332569},
		{3, 100, 0.00340791534332945},
		{1.5, 1, 0.374334083621998}, // Cauchy: 1 - 2 atan(1.5)/pi
		{0, 4, 1},
		{1.96, 6000, 0.050042008035913273}, // close to the normal's 0.05
		{2, 100000, 0.045502963457506463},  // a = 50000: needs 1-x without cancellation
		{40, 3, 3.4380680789158528e-5},
		{math.Inf(1), 3, 0},
	}
	for _, tt := range tests {
		got := studentTwoSided(tt.t, tt.df)
		if math.Abs(got-tt.want) > 1e-9*tt.want { // relative: gonum's is 8e-11 off at df = 100,000
			t.Errorf("p(|T| >= %v; df=%v) = %.15g, want %.15g", tt.t, tt.df, got, tt.want)
		}
	}
	if got, want := studentTwoSided(1.5, 1), 1-2*math.Atan(1.5)/math.Pi; math.Abs(got-want) > 1e-12 {
		t.Errorf("Cauchy closed form: got %v, want %v", got, want)
	}
}

func TestPairedTTest(t *testing.T) {
	tests := []struct {
		name    string
		a, b    []float64
		t, p    float64
		wantErr string
	}{
		{
			// d = 1,2,3,4,5: mean 3, s^2 = (4+1+0+1+4)/4 = 2.5,
			// t = 3 / sqrt(2.5/5) = 3*sqrt(2) = 4.24264, df = 4.
			name: "constant shift series",
			a:    []float64{2, 4, 6, 8, 10}, b: []float64{1, 2, 3, 4, 5},
			t: 3 * math.Sqrt2, p: 0.01323559956368269,
		},
		{
			// d = 0.1, -0.05, 0.3, 0.1: mean 0.1125,
			// squared deviations 0.00015625 + 0.02640625 + 0.03515625 + 0.00015625 = 0.061875,
			// s^2 = 0.020625, s = 0.1436141, t = 0.1125 / (0.1436141/2) = 1.5667, df = 3.
			name: "mixed signs",
			a:    []float64{0.8, 0.6, 0.9, 0.4}, b: []float64{0.7, 0.65, 0.6, 0.3},
			t: 1.5666989036012805, p: 0.21516994256955015,
		},
		{
			name: "swapped: t negated, same p",
			a:    []float64{0.7, 0.65, 0.6, 0.3}, b: []float64{0.8, 0.6, 0.9, 0.4},
			t: -1.5666989036012805, p: 0.21516994256955015,
		},
		{name: "identical systems", a: []float64{0.1, 0.5, 0.9}, b: []float64{0.1, 0.5, 0.9}, t: 0, p: 1},
		{name: "constant non-zero difference", a: []float64{1, 2, 3}, b: []float64{0, 1, 2}, t: math.Inf(1), p: 0},
		{name: "constant negative difference", a: []float64{0, 1}, b: []float64{1, 2}, t: math.Inf(-1), p: 0},
		{name: "unequal lengths", a: []float64{1, 2}, b: []float64{1}, wantErr: "2 scores in a but 1 in b"},
		{name: "one pair", a: []float64{1}, b: []float64{0}, wantErr: "at least 2 pairs"},
		{name: "empty", wantErr: "at least 2 pairs"},
		{name: "NaN", a: []float64{1, math.NaN()}, b: []float64{0, 0}, wantErr: "pair 1 is not finite"},
		{name: "Inf", a: []float64{1, 2}, b: []float64{math.Inf(-1), 0}, wantErr: "pair 0 is not finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gotT, gotP, err := PairedTTest(tt.a, tt.b)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !closeOrEqual(gotT, tt.t, 1e-12) || !closeOrEqual(gotP, tt.p, 1e-12) {
				t.Errorf("PairedTTest = (t %.15g, p %.15g), want (%.15g, %.15g)", gotT, gotP, tt.t, tt.p)
			}
		})
	}
}

func closeOrEqual(got, want, tol float64) bool {
	return got == want || math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestPairedRandomizationExact(t *testing.T) {
	// With 2^n <= rounds every sign assignment is enumerated.
	tests := []struct {
		name     string
		a, b     []float64
		meanDiff float64
		p        float64
	}{
		{
			// d = 1,2,3, observed |sum| = 6. Of the 8 sums ±1±2±3 =
			// 6,4,2,0,0,-2,-4,-6 two reach |6|: p = 2/8.
			name: "three pairs", a: []float64{1, 2, 3}, b: []float64{0, 0, 0},
			meanDiff: 2, p: 0.25,
		},
		{
			// d = 0.1,-0.05,0.3,0.1, observed |sum| = 0.45. Reaching 0.45:
			// +0.1+0.05+0.3+0.1 = 0.55, +0.1-0.05+0.3+0.1 = 0.45, and their
			// negations: p = 4/16.
			name: "mixed signs", a: []float64{0.8, 0.6, 0.9, 0.4}, b: []float64{0.7, 0.65, 0.6, 0.3},
			meanDiff: 0.1125, p: 0.25,
		},
		{
			// d = -0.5, 0.4, 0.5, 0.3 in exact arithmetic (in floating point
			// -0.49999999999999994 and 0.30000000000000004), observed sum 0.7.
			// With negated sets {} -> 1.7, {0.5} -> 0.7 (twice), {0.4} -> 0.9,
			// {0.3} -> 1.1 and the complements of those five, 10 of the 16
			// assignments reach 0.7: p = 10/16. Two of them reach it only up
			// to rounding, which the comparison must tolerate.
			name: "ties up to rounding", a: []float64{0.2, 0.5, 0.9, 0.4}, b: []float64{0.7, 0.1, 0.4, 0.1},
			meanDiff: 0.175, p: 0.625,
		},
		{
			// d = 1..5: only all-plus and all-minus reach |15|: p = 2/32.
			name: "five pairs", a: []float64{2, 4, 6, 8, 10}, b: []float64{1, 2, 3, 4, 5},
			meanDiff: 3, p: 0.0625,
		},
		{
			// d = 1,-1: observed sum 0, every assignment reaches it.
			name: "no difference on average", a: []float64{1, 0}, b: []float64{0, 1},
			meanDiff: 0, p: 1,
		},
		{name: "identical", a: []float64{0.3, 0.3}, b: []float64{0.3, 0.3}, meanDiff: 0, p: 1},
		{name: "empty", meanDiff: 0, p: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, seed := range []uint64{1, 2} { // exact: the seed is irrelevant
				md, p, err := PairedRandomization(tt.a, tt.b, 10000, seed)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(md-tt.meanDiff) > 1e-12 || p != tt.p {
					t.Errorf("seed %d: (meanDiff %v, p %v), want (%v, %v)", seed, md, p, tt.meanDiff, tt.p)
				}
			}
		})
	}
}

func TestPairedRandomizationSampled(t *testing.T) {
	// 16 pairs: 2^16 = 65536 assignments. rounds = 65536 enumerates them
	// (exact p); rounds = 20000 samples.
	a := []float64{0.61, 0.42, 0.88, 0.35, 0.70, 0.52, 0.91, 0.44, 0.63, 0.58, 0.77, 0.29, 0.66, 0.81, 0.47, 0.55}
	b := []float64{0.55, 0.47, 0.80, 0.30, 0.71, 0.41, 0.85, 0.40, 0.66, 0.50, 0.70, 0.33, 0.60, 0.79, 0.38, 0.52}
	_, exact, err := PairedRandomization(a, b, 1<<16, 0)
	if err != nil {
		t.Fatal(err)
	}
	if exact <= 0.001 || exact >= 0.2 {
		t.Fatalf("exact p = %v; pick data with a p the test can resolve", exact)
	}

	const rounds = 20000
	md1, p1, err := PairedRandomization(a, b, rounds, 42)
	if err != nil {
		t.Fatal(err)
	}
	md2, p2, _ := PairedRandomization(a, b, rounds, 42)
	if md1 != md2 || p1 != p2 {
		t.Errorf("same seed gave (%v, %v) then (%v, %v)", md1, p1, md2, p2)
	}
	_, p3, _ := PairedRandomization(a, b, rounds, 43)
	if p3 == p1 {
		t.Logf("seeds 42 and 43 gave the same p %v (possible, but unlikely)", p1)
	}
	// The estimate is a binomial proportion: allow 5 standard errors.
	se := math.Sqrt(exact * (1 - exact) / rounds)
	for _, p := range []float64{p1, p3} {
		if math.Abs(p-exact) > 5*se+1.0/rounds {
			t.Errorf("sampled p = %v, exact %v (se %.4f)", p, exact, se)
		}
	}

	// Swapping the systems flips every difference: same sums up to sign.
	mdSwap, pSwap, _ := PairedRandomization(b, a, rounds, 42)
	if mdSwap != -md1 || pSwap != p1 {
		t.Errorf("swapped: (%v, %v), want (%v, %v)", mdSwap, pSwap, -md1, p1)
	}

	// rounds <= 0 means the default, and p is never 0.
	big := make([]float64, 200)
	for i := range big {
		big[i] = 1
	}
	_, pDefault, _ := PairedRandomization(big, make([]float64, 200), 0, 7)
	if want := 1.0 / (defaultRounds + 1); pDefault != want {
		t.Errorf("all 200 differences +1: p = %v, want the floor 1/(rounds+1) = %v", pDefault, want)
	}
}

func TestPairedRandomizationErrors(t *testing.T) {
	tests := []struct {
		name    string
		a, b    []float64
		wantErr string
	}{
		{"unequal lengths", []float64{1, 2, 3}, []float64{1}, "3 scores in a but 1 in b"},
		{"one empty", nil, []float64{1}, "0 scores in a but 1 in b"},
		{"NaN", []float64{math.NaN()}, []float64{1}, "pair 0 is not finite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := PairedRandomization(tt.a, tt.b, 100, 1)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
