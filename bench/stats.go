package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Percentile returns the p-th percentile of samples by the nearest-rank
// method: the smallest sample such that at least p% of the samples are
// less than or equal to it, i.e. the sample at 1-based rank ceil(p/100 * n)
// of the sorted samples (rank 1 for p = 0). The result is always one of
// the samples, never an interpolation. So the 50th percentile of an even
// number of samples is the lower median, and the 99th percentile of fewer
// than 100 samples is the maximum.
//
// p is clamped to [0, 100]; NaN is treated as 0. Empty samples give 0.
// samples is not modified.
//
// Not gonum's stat.Quantile(p/100, stat.Empirical, ...): it computes the
// rank from p/100·n, which lands one rank high wherever p/100 is not exact
// in binary (p = 7 of 100 samples gives the 8th), 554 of the (n, p) pairs
// with n <= 1000 and p in steps of 0.1.
func Percentile(samples []time.Duration, p float64) time.Duration {
	n := len(samples)
	if n == 0 {
		return 0
	}
	switch {
	case math.IsNaN(p) || p < 0:
		p = 0
	case p > 100:
		p = 100
	}
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	// p*n before /100 keeps integer percentiles exact (0.99*100 != 99).
	rank := int(math.Ceil(p * float64(n) / 100))
	return sorted[min(max(rank, 1), n)-1]
}

// defaultRounds is the number of random sign flips PairedRandomization uses
// when asked for rounds <= 0. With 10,000 rounds the standard error of a p
// value near 0.05 is about 0.002.
const defaultRounds = 10000

// maxExactPairs bounds the number of pairs for which PairedRandomization
// enumerates every sign assignment (2^20 sums of 20 terms is cheap).
const maxExactPairs = 20

// PairedRandomization runs a two-sided paired randomisation (sign-flip)
// test of the per-query scores a and b (a[i] and b[i] are the same query
// under two systems), as in Smucker, Allan and Carterette, "A comparison of
// statistical significance tests for information retrieval evaluation"
// (CIKM 2007).
//
// meanDiff is the mean of a[i] - b[i]. Under the null hypothesis that the
// systems are exchangeable, each difference is equally likely to have
// either sign; p is the probability, under that null, of a mean difference
// at least as far from 0 as the observed one. It is estimated from rounds
// random sign assignments as (hits+1)/(rounds+1), which is never 0, so the
// smallest reportable p is 1/(rounds+1). If 2^n <= rounds (n = len(a), at
// most 20) all 2^n assignments are enumerated instead and p is exact.
// rounds <= 0 means 10,000.
//
// The result depends only on the inputs, rounds and seed: the random
// assignments come from a math/rand/v2 PCG source seeded with seed.
// Swapping a and b negates meanDiff and leaves p unchanged.
//
// Empty input gives meanDiff 0 and p 1. Inputs of different lengths, or
// containing NaN or an infinity, are an error.
func PairedRandomization(a, b []float64, rounds int, seed uint64) (meanDiff, p float64, err error) {
	d, err := differences(a, b)
	if err != nil {
		return 0, 0, fmt.Errorf("paired randomization test: %w", err)
	}
	n := len(d)
	if n == 0 {
		return 0, 1, nil
	}
	if rounds <= 0 {
		rounds = defaultRounds
	}
	sum, sumAbs := floats.Sum(d), floats.Norm(d, 1)
	meanDiff = stat.Mean(d, nil)
	// A permuted sum counts as extreme if |sum| >= |observed|, with a
	// tolerance for rounding: sums of the same terms in a different order
	// or with different signs may differ in the last bits.
	threshold := math.Abs(sum) - 1e-9*sumAbs

	if n <= maxExactPairs && 1<<n <= rounds {
		hits := 0
		for mask := range uint64(1) << n {
			if math.Abs(signedSum(d, mask)) >= threshold {
				hits++
			}
		}
		return meanDiff, float64(hits) / float64(uint64(1)<<n), nil
	}

	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	hits := 0
	for range rounds {
		var s float64
		var bits uint64
		for i, x := range d {
			if i%64 == 0 {
				bits = rng.Uint64()
			}
			if bits&1 == 1 {
				s -= x
			} else {
				s += x
			}
			bits >>= 1
		}
		if math.Abs(s) >= threshold {
			hits++
		}
	}
	return meanDiff, float64(hits+1) / float64(rounds+1), nil
}

// signedSum returns the sum of d with d[i] negated where bit i of mask is
// set.
func signedSum(d []float64, mask uint64) float64 {
	var s float64
	for i, x := range d {
		if mask>>i&1 == 1 {
			s -= x
		} else {
			s += x
		}
	}
	return s
}

// differences returns a[i] - b[i], or an error if the lengths differ or a
// value is not finite.
func differences(a, b []float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("%d scores in a but %d in b", len(a), len(b))
	}
	d := make([]float64, len(a))
	for i := range a {
		if math.IsNaN(a[i]) || math.IsInf(a[i], 0) || math.IsNaN(b[i]) || math.IsInf(b[i], 0) {
			return nil, fmt.Errorf("pair %d is not finite: a=%v b=%v", i, a[i], b[i])
		}
		d[i] = a[i] - b[i]
	}
	return d, nil
}

// PairedTTest runs a two-sided paired t-test of the per-query scores a and
// b. With d[i] = a[i] - b[i], n pairs, mean m and sample standard deviation
// s (divisor n-1):
//
//	t = m / (s / sqrt(n)),  df = n - 1
//
// and p = P(|T| >= |t|) for T Student-t distributed with df degrees of
// freedom (studentTwoSided).
//
// If every difference is the same (s = 0) t is undefined; PairedTTest then
// returns t = 0, p = 1 when the differences are all 0, and t = ±Inf, p = 0
// otherwise. Fewer than two pairs, different lengths, and NaN or infinite
// scores are errors.
func PairedTTest(a, b []float64) (t, p float64, err error) {
	d, err := differences(a, b)
	if err != nil {
		return 0, 0, fmt.Errorf("paired t-test: %w", err)
	}
	n := float64(len(d))
	if len(d) < 2 {
		return 0, 0, errors.New("paired t-test: need at least 2 pairs")
	}
	// The sample variance (divisor n-1); 0, up to rounding, when every
	// difference is the same.
	mean, variance := stat.MeanVariance(d, nil)
	if variance <= 0 {
		if mean == 0 {
			return 0, 1, nil
		}
		return math.Copysign(math.Inf(1), mean), 0, nil
	}
	t = mean / math.Sqrt(variance/n)
	return t, studentTwoSided(t, n-1), nil
}

// studentTwoSided returns P(|T| >= |t|) for T Student-t distributed with df
// degrees of freedom (gonum's distribution; its regularised incomplete beta
// keeps p to about 1e-10 relative even at df = 100,000, far beyond what a
// table of four decimals needs).
func studentTwoSided(t, df float64) float64 {
	if math.IsInf(t, 0) {
		return 0
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
}
