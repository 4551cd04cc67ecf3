package bench

import (
	"fmt"
	"io"
	"slices"
)

// KindCount is a query kind and how many of a run's queries have it.
type KindCount struct {
	Name    string
	Queries int
}

// Kinds returns the query kinds of the run, sorted by name, or nil when
// its queries have none.
func (r *RelevanceResult) Kinds() []KindCount {
	for _, s := range r.Summaries {
		if s.ByKind == nil {
			continue
		}
		var out []KindCount
		for _, k := range sortedModes(s.ByKind) {
			out = append(out, KindCount{k, s.ByKind[k].Queries})
		}
		return out
	}
	return nil
}

// PairedComparison is system A against system B on the per-query nDCG@10
// of the same run, over all queries (Kind "") or the queries of one kind.
type PairedComparison struct {
	A, B string
	Kind string
	Test PairedTest // MeanDiff is A - B
}

// DefaultPairs are the comparisons a run reports: each of Hindsight's
// modes against full-text, and full-text against each peer (when the run
// has full-text).
func DefaultPairs(modes, peers []string) [][2]string {
	const base = "fulltext"
	if !slices.Contains(modes, base) {
		return nil
	}
	var out [][2]string
	for _, m := range modes {
		if m != base {
			out = append(out, [2]string{m, base})
		}
	}
	for _, p := range peers {
		out = append(out, [2]string{base, p})
	}
	return out
}

// ComparePairs tests every pair on per-query nDCG@10, over all queries and
// over each kind's. Pairs naming a system the run lacks or marked failed
// are skipped.
func ComparePairs(r *RelevanceResult, pairs [][2]string, seed uint64) ([]PairedComparison, error) {
	ok := func(mode string) bool {
		s, found := r.Summary(mode)
		return found && s.Failed == ""
	}
	kinds := []string{""}
	for _, k := range r.Kinds() {
		kinds = append(kinds, k.Name)
	}
	var out []PairedComparison
	for _, p := range pairs {
		if !ok(p[0]) || !ok(p[1]) {
			continue
		}
		for _, kind := range kinds {
			var a, b []float64
			for _, q := range r.PerQuery {
				if kind == "" || q.Kind == kind {
					a, b = append(a, q.NDCG10[p[0]]), append(b, q.NDCG10[p[1]])
				}
			}
			if len(a) == 0 {
				continue
			}
			t, err := Compare(a, b, seed)
			if err != nil {
				return nil, fmt.Errorf("compare %s with %s: %w", p[0], p[1], err)
			}
			out = append(out, PairedComparison{A: p[0], B: p[1], Kind: kind, Test: t})
		}
	}
	return out, nil
}

// PrintPaired writes the comparisons, one line each.
func PrintPaired(w io.Writer, cs []PairedComparison) {
	fmt.Fprintln(w, "paired tests on per-query nDCG@10 (A - B)")
	for _, c := range cs {
		kind := c.Kind
		if kind == "" {
			kind = "all"
		}
		fmt.Fprintf(w, "  %s vs %s, %s: %s\n", c.A, c.B, kind, c.Test)
	}
}
