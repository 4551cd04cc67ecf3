package bench

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
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
	var sum, sumAbs float64
	for _, x := range d {
		sum += x
		sumAbs += math.Abs(x)
	}
	meanDiff = sum / float64(n)
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
// freedom, computed as the regularized incomplete beta function
// I_{df/(df+t^2)}(df/2, 1/2).
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
	var sum float64
	for _, x := range d {
		sum += x
	}
	mean := sum / n
	var ss float64
	for _, x := range d {
		ss += (x - mean) * (x - mean)
	}
	if ss == 0 {
		if mean == 0 {
			return 0, 1, nil
		}
		return math.Copysign(math.Inf(1), mean), 0, nil
	}
	t = mean / math.Sqrt(ss/(n-1)/n)
	return t, studentTwoSided(t, n-1), nil
}

// studentTwoSided returns P(|T| >= |t|) for T Student-t distributed with df
// degrees of freedom.
func studentTwoSided(t, df float64) float64 {
	if math.IsInf(t, 0) {
		return 0
	}
	// x = df/(df+t^2) and 1-x = t^2/(df+t^2), each to full precision: for
	// large df, x is close to 1 and 1-x computed by subtraction would lose
	// digits that a = df/2 then amplifies.
	t2 := t * t
	return incBeta(df/2, 0.5, df/(df+t2), t2/(df+t2))
}

// regIncBeta returns the regularized incomplete beta function
//
//	I_x(a, b) = B(x; a, b) / B(a, b)
//
// for a, b > 0 and x in [0, 1] (x is clamped).
func regIncBeta(a, b, x float64) float64 {
	return incBeta(a, b, x, 1-x)
}

// incBeta returns I_x(a, b) given both x and y = 1 - x, so callers that
// know 1 - x more precisely than the subtraction can pass it. It evaluates
// the continued fraction of Numerical Recipes (3rd ed., §6.4) with the
// modified Lentz method. The fraction converges fast for
// x < (a+1)/(a+b+2); above that the symmetry I_x(a, b) = 1 - I_y(b, a) is
// used.
func incBeta(a, b, x, y float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	}
	// log x and log y, each from whichever of x, y is further from 1.
	lx, ly := math.Log(x), math.Log(y)
	if x > 0.5 {
		lx = math.Log1p(-y)
	} else {
		ly = math.Log1p(-x)
	}
	// front = x^a y^b / B(a, b)
	front := math.Exp(a*lx + b*ly - logBeta(a, b))
	if x < (a+1)/(a+b+2) {
		return front * betaContinuedFraction(a, b, x) / a
	}
	return 1 - front*betaContinuedFraction(b, a, y)/b
}

// logBeta returns log B(a, b) = lgamma(a) + lgamma(b) - lgamma(a+b) for
// a, b > 0. Summing math.Lgamma values would cancel: for a t-test with
// df = 100,000, lgamma(50000) is about 5e5 and its rounding error alone
// is 1e-10 of the result. For a large argument the Stirling terms are
// therefore combined analytically first, as in R's lbeta.
func logBeta(a, b float64) float64 {
	p, q := min(a, b), max(a, b)
	const logSqrt2Pi = 0.918938533204672741780329736406 // log(sqrt(2 pi))
	switch {
	case p >= 10:
		corr := stirlingCorrection(p) + stirlingCorrection(q) - stirlingCorrection(p+q)
		return -0.5*math.Log(q) + logSqrt2Pi + corr + (p-0.5)*math.Log(p/(p+q)) + q*math.Log1p(-p/(p+q))
	case q >= 10:
		lp, _ := math.Lgamma(p)
		corr := stirlingCorrection(q) - stirlingCorrection(p+q)
		return lp + corr + p - p*math.Log(p+q) + (q-0.5)*math.Log1p(-p/(p+q))
	default:
		lp, _ := math.Lgamma(p)
		lq, _ := math.Lgamma(q)
		lpq, _ := math.Lgamma(p + q)
		return lp + lq - lpq
	}
}

// stirlingCorrection returns lgamma(x) - ((x-0.5) log x - x + log sqrt(2 pi))
// for x >= 10, from the Stirling series sum B_2k / (2k (2k-1) x^(2k-1)).
// At x = 10 the first omitted term is below 1e-18.
func stirlingCorrection(x float64) float64 {
	coef := [...]float64{
		1.0 / 12, -1.0 / 360, 1.0 / 1260, -1.0 / 1680, 1.0 / 1188,
		-691.0 / 360360, 1.0 / 156, -3617.0 / 122400,
	}
	x2 := 1 / (x * x)
	var s float64
	for i := len(coef) - 1; i >= 0; i-- {
		s = s*x2 + coef[i]
	}
	return s / x
}

// betaContinuedFraction evaluates the continued fraction for I_x(a, b)
// (Numerical Recipes betacf). It needs O(sqrt(max(a, b))) iterations; the
// cap is far above what any df of a retrieval test set needs.
func betaContinuedFraction(a, b, x float64) float64 {
	const (
		maxIter = 100000
		eps     = 1e-15
		tiny    = 1e-300
	)
	qab, qap, qam := a+b, a+1, a-1
	c := 1.0
	d := 1 - qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= maxIter; m++ {
		fm := float64(m)
		m2 := 2 * fm
		// Even step.
		aa := fm * (b - fm) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		// Odd step.
		aa = -(a + fm) * (qab + fm) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < eps {
			break
		}
	}
	return h
}
