package ranking

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Fusion names how hybrid search (and context) merges the full-text and
// the vector list.
type Fusion string

// Fusions. RRF uses the ranks only; the other two use the scores, each
// list's scaled on its own, so the shape of a leg's scores counts: a
// session the words score far above the rest (an identifier only it
// holds) keeps its place whatever the vectors say, while sessions the
// words score close together are ordered by the vectors.
const (
	FusionRRF    Fusion = "rrf"    // weighted reciprocal rank fusion (Fuse)
	FusionMinMax Fusion = "minmax" // each list's scores min-max scaled to [0, 1], then summed (FuseScores)
	FusionZScore Fusion = "zscore" // each list's scores as z-scores, then summed (FuseScores)
)

// ParseFusion maps a setting to a Fusion ("" is FusionRRF).
func ParseFusion(s string) (Fusion, error) {
	switch Fusion(s) {
	case "", FusionRRF:
		return FusionRRF, nil
	case FusionMinMax, FusionZScore:
		return Fusion(s), nil
	}
	return "", fmt.Errorf("fusion must be rrf, minmax or zscore, got %q", s)
}

// FuseScores merges a text list and a vector list by their scores, each
// list scaled on its own (f: FusionMinMax or FusionZScore): score =
// scaled_text + w·scaled_vec. A session missing from a list gets that
// list's lowest scaled score (0 for min-max), as if it were last. A list
// whose scores are all equal scales every entry to the same value (1 for
// min-max, 0 for z-scores), so it orders nothing. Ties keep the text
// order, then the vector order. Snippets and matchedIn come from the text
// leg when it has the session; with explain, each leg's rank and raw score.
func FuseScores(text, vec []Result, f Fusion, w float64, limit int, explain bool) []Result {
	ts, vs := scale(text, f), scale(vec, f)
	floorT, floorV := lowest(ts), lowest(vs)
	byID := map[string]*fused{}
	var order []*fused
	get := func(id string) *fused {
		if x, ok := byID[id]; ok {
			return x
		}
		x := &fused{r: Result{SessionID: id}, t: floorT, v: floorV}
		byID[id] = x
		order = append(order, x)
		return x
	}
	for i, r := range text {
		x := get(r.SessionID)
		x.t = ts[i]
		x.r.Snippet, x.r.MatchedIn = r.Snippet, r.MatchedIn
		if explain {
			x.r.Text = &Leg{Rank: i + 1, Score: r.Score}
		}
	}
	for i, r := range vec {
		x := get(r.SessionID)
		x.v = vs[i]
		if explain {
			x.r.Vector = &Leg{Rank: i + 1, Score: r.Score}
			if x.r.MatchedIn == nil {
				x.r.MatchedIn = []string{"messages"}
			}
		}
	}
	for _, x := range order {
		x.r.Score = x.t + w*x.v
	}
	slices.SortStableFunc(order, func(a, b *fused) int { return cmp.Compare(b.r.Score, a.r.Score) })
	out := make([]Result, 0, min(limit, len(order)))
	for _, x := range order[:min(limit, len(order))] {
		out = append(out, x.r)
	}
	return out
}

type fused struct {
	r    Result
	t, v float64 // scaled score in each list
}

// scale returns the scores of rs scaled as f says.
func scale(rs []Result, f Fusion) []float64 {
	out := make([]float64, len(rs))
	if len(rs) == 0 {
		return out
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, r := range rs {
		lo, hi, sum = min(lo, r.Score), max(hi, r.Score), sum+r.Score
	}
	switch f {
	case FusionZScore:
		mean := sum / float64(len(rs))
		var ss float64
		for _, r := range rs {
			ss += (r.Score - mean) * (r.Score - mean)
		}
		sd := math.Sqrt(ss / float64(len(rs)))
		for i, r := range rs {
			if sd > 0 {
				out[i] = (r.Score - mean) / sd
			}
		}
	default: // FusionMinMax
		for i, r := range rs {
			out[i] = 1
			if hi > lo {
				out[i] = (r.Score - lo) / (hi - lo)
			}
		}
	}
	return out
}

// lowest is the floor a session missing from a list gets: the list's
// lowest scaled score, 0 for an empty list.
func lowest(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return slices.Min(xs)
}
