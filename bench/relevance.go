package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/hindsight-dev/hindsight/progress"
)

// SearchFunc runs one query in one mode and returns ranked corpus doc ids.
type SearchFunc func(ctx context.Context, mode, query string, k int) ([]string, error)

// ErrNoTerms is what a SearchFunc returns for a query with no searchable
// terms; it counts as an empty result, not a failure.
var ErrNoTerms = errors.New("query has no searchable terms")

// RelevanceOptions configures RunRelevance.
type RelevanceOptions struct {
	Modes    []string // e.g. fulltext, semantic, hybrid, or peer names
	Depth    int      // results fetched per query; 0 = 100
	Progress io.Writer
}

// RelevanceResult is one run over a dataset.
type RelevanceResult struct {
	Dataset   string
	Queries   int
	Summaries []Summary
	PerQuery  []QueryResult
}

// RunRelevance runs every query of ds in every mode through search.
func RunRelevance(ctx context.Context, ds *Dataset, search SearchFunc, o RelevanceOptions) (RelevanceResult, error) {
	if o.Depth <= 0 {
		o.Depth = 100
	}
	res := RelevanceResult{Dataset: ds.Name, Queries: len(ds.Queries)}
	returned := make([]map[string][]string, len(ds.Queries))
	for i := range returned {
		returned[i] = map[string][]string{}
	}
	for _, mode := range o.Modes {
		ranked := map[string][]string{}
		lat := make([]time.Duration, 0, len(ds.Queries))
		bar := progress.New(o.Progress, "queries "+mode, len(ds.Queries))
		for i, q := range ds.Queries {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			start := time.Now()
			ids, err := search(ctx, mode, q.Text, o.Depth)
			lat = append(lat, time.Since(start))
			if err != nil && !errors.Is(err, ErrNoTerms) {
				return res, fmt.Errorf("%s query %s: %w", mode, q.ID, err)
			}
			ranked[q.ID] = ids
			returned[i][mode] = ids
			bar.Set(i + 1)
		}
		bar.Done()
		res.Summaries = append(res.Summaries, Summarize(mode, ranked, ds, lat))
	}
	for i, q := range ds.Queries {
		res.PerQuery = append(res.PerQuery, NewQueryResult(q, ds.Qrels[q.ID], returned[i]))
	}
	return res, nil
}

type jsonSummary struct {
	Mode      string  `json:"mode"`
	NDCG10    float64 `json:"ndcg@10"`
	Recall100 float64 `json:"recall@100"`
	MRR10     float64 `json:"mrr@10"`
	P50ms     float64 `json:"p50_ms"`
	P99ms     float64 `json:"p99_ms"`
}

// MarshalJSON gives the machine-readable shape:
// {"dataset", "queries", "results": [{"mode", "ndcg@10", "recall@100", "mrr@10", "p50_ms", "p99_ms"}]}.
func (r RelevanceResult) MarshalJSON() ([]byte, error) {
	out := struct {
		Dataset string        `json:"dataset"`
		Queries int           `json:"queries"`
		Results []jsonSummary `json:"results"`
	}{Dataset: r.Dataset, Queries: r.Queries, Results: []jsonSummary{}}
	for _, s := range r.Summaries {
		out.Results = append(out.Results, jsonSummary{s.Mode, round4(s.NDCG10), round4(s.Recall100), round4(s.MRR10), millis(s.P50), millis(s.P99)})
	}
	return json.Marshal(out)
}

func round4(x float64) float64 { return float64(int64(x*10000+0.5)) / 10000 }

// PrintRelevance writes the table.
func PrintRelevance(w io.Writer, r RelevanceResult) {
	fmt.Fprintf(w, "dataset %s, %d queries\n", r.Dataset, r.Queries)
	fmt.Fprintf(w, "%-22s %8s %10s %8s %9s %9s\n", "mode", "nDCG@10", "Recall@100", "MRR@10", "p50 ms", "p99 ms")
	for _, s := range r.Summaries {
		fmt.Fprintf(w, "%-22s %8.4f %10.4f %8.4f %9.2f %9.2f\n", s.Mode, s.NDCG10, s.Recall100, s.MRR10, millis(s.P50), millis(s.P99))
	}
}
