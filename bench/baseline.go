package bench

import (
	"fmt"
	"io"
	"math"
)

// Comparison sets a run against an earlier one (a baseline result.json),
// mode by mode, with paired significance over the queries both runs
// answered.
type Comparison struct {
	// Baseline names the baseline: its file and, when recorded, its commit.
	Baseline string
	// Warnings lists what makes the two runs less comparable (another
	// dataset, another slice, queries only one side has).
	Warnings []string
	Modes    []ModeDelta
}

// ModeDelta compares one mode present in both runs.
type ModeDelta struct {
	Mode      string
	Base, Cur Summary
	// Test compares per-query nDCG@10, current minus baseline, over the
	// queries both runs have; nil when the baseline has no per-query
	// scores for the mode or no query in common.
	Test *PairedTest
}

// CompareRuns compares cur with base for every mode both have, in cur's
// order. Per-query nDCG@10 are paired by query id.
func CompareRuns(cur, base *RelevanceResult, baseName string, seed uint64) (*Comparison, error) {
	c := &Comparison{Baseline: baseName}
	if base.Dataset != cur.Dataset {
		c.Warnings = append(c.Warnings, fmt.Sprintf("different datasets: %s now, %s in the baseline", cur.Dataset, base.Dataset))
	}
	if base.Docs != 0 && base.Docs != cur.Docs {
		c.Warnings = append(c.Warnings, fmt.Sprintf("different corpus sizes: %d documents now, %d in the baseline", cur.Docs, base.Docs))
	}
	if base.Queries != cur.Queries {
		c.Warnings = append(c.Warnings, fmt.Sprintf("different query sets: %d queries now, %d in the baseline; tests use the queries both have", cur.Queries, base.Queries))
	}
	for _, s := range cur.Summaries {
		b, ok := base.Summary(s.Mode)
		if !ok {
			c.Warnings = append(c.Warnings, fmt.Sprintf("mode %s is not in the baseline", s.Mode))
			continue
		}
		d := ModeDelta{Mode: s.Mode, Base: b, Cur: s}
		baseQ := base.PerQueryNDCG(s.Mode)
		if len(baseQ) > 0 {
			var a, bb []float64
			for _, q := range cur.PerQuery {
				if v, ok := baseQ[q.QueryID]; ok {
					a = append(a, q.NDCG10[s.Mode])
					bb = append(bb, v)
				}
			}
			if len(a) == 0 {
				c.Warnings = append(c.Warnings, fmt.Sprintf("mode %s: no query in common with the baseline", s.Mode))
			} else {
				t, err := Compare(a, bb, seed)
				if err != nil {
					return nil, fmt.Errorf("compare %s with the baseline: %w", s.Mode, err)
				}
				d.Test = &t
			}
		}
		c.Modes = append(c.Modes, d)
	}
	return c, nil
}

// PrintComparison writes the deltas, one line per mode.
func PrintComparison(w io.Writer, c *Comparison) {
	fmt.Fprintf(w, "compared with baseline %s (now - baseline)\n", c.Baseline)
	for _, warn := range c.Warnings {
		fmt.Fprintln(w, "  warning:", warn)
	}
	fmt.Fprintf(w, "%-26s %17s %10s %10s %11s %9s %9s\n", "mode", "nDCG@10", "ΔRecall@100", "ΔMRR@10", "Δp50 ms", "p (rand)", "p (t)")
	for _, d := range c.Modes {
		pr, pt := d.pValues("-")
		fmt.Fprintf(w, "%-26s %.4f → %.4f %10s %10s %+11.2f %9s %9s %s\n", d.Mode, d.Base.NDCG10, d.Cur.NDCG10,
			delta4(d.Cur.Recall100-d.Base.Recall100), delta4(d.Cur.MRR10-d.Base.MRR10), millis(d.Cur.P50-d.Base.P50), pr, pt, d.verdict())
	}
}

// pValues formats the randomisation and t-test p-values of the delta, or
// none where there is no test.
func (d ModeDelta) pValues(none string) (pr, pt string) {
	pr, pt = none, none
	if d.Test != nil {
		pr = fmt.Sprintf("%.4f", d.Test.P)
		if !math.IsNaN(d.Test.PT) {
			pt = fmt.Sprintf("%.4f", d.Test.PT)
		}
	}
	return pr, pt
}

// delta4 formats a difference of two metrics with a sign and 4 decimals.
// A baseline read from result.json holds metrics rounded to 4 decimals, so
// differences below the last digit are shown as +0.0000, not -0.0000.
func delta4(d float64) string {
	if math.Abs(d) < 5e-5 {
		d = 0
	}
	return fmt.Sprintf("%+.4f", d)
}

// verdict is a short reading of the delta for humans.
func (d ModeDelta) verdict() string {
	if d.Test == nil {
		return "(no per-query scores to pair)"
	}
	if d.Test.P >= 0.05 {
		return "no significant change"
	}
	if d.Test.MeanDiff > 0 {
		return "better"
	}
	return "worse"
}

type jsonModeDelta struct {
	Mode         string    `json:"mode"`
	BaseNDCG10   float64   `json:"baseline_ndcg@10"`
	NDCG10       float64   `json:"ndcg@10"`
	DRecall100   float64   `json:"delta_recall@100"`
	DMRR10       float64   `json:"delta_mrr@10"`
	DP50ms       float64   `json:"delta_p50_ms"`
	DP99ms       float64   `json:"delta_p99_ms"`
	NDCG10Paired *jsonTest `json:"ndcg@10_paired,omitempty"`
}

type jsonComparison struct {
	Baseline string          `json:"baseline"`
	Warnings []string        `json:"warnings,omitempty"`
	Modes    []jsonModeDelta `json:"modes"`
}

func (c *Comparison) toJSON() *jsonComparison {
	if c == nil {
		return nil
	}
	j := &jsonComparison{Baseline: c.Baseline, Warnings: c.Warnings, Modes: []jsonModeDelta{}}
	for _, d := range c.Modes {
		j.Modes = append(j.Modes, jsonModeDelta{
			Mode: d.Mode, BaseNDCG10: round4(d.Base.NDCG10), NDCG10: round4(d.Cur.NDCG10),
			DRecall100: round4(d.Cur.Recall100 - d.Base.Recall100), DMRR10: round4(d.Cur.MRR10 - d.Base.MRR10),
			DP50ms: millis(d.Cur.P50 - d.Base.P50), DP99ms: millis(d.Cur.P99 - d.Base.P99),
			NDCG10Paired: toJSONTest(d.Test),
		})
	}
	return j
}
