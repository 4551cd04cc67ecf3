// Package bench is Hindsight's benchmark suite, run by `hindsight bench`:
//
//   - relevance: loads BEIR-layout datasets (beir.go), scores ranked lists
//     with the standard IR metrics (this file: nDCG, recall, MRR, as BEIR
//     computes them through pytrec_eval), compares modes, peers (peer.go,
//     fts5.go), sweeps (sweep.go) and baselines (baseline.go) with paired
//     significance tests (stats.go), and writes reports (report.go, charts.go);
//   - load: grows generated sessions (gen.go) through the API and measures
//     cost as the data grows (load.go, loadreport.go);
//   - ingest: replays plugin traffic and measures throughput against raw
//     bbolt, and index lag (ingest.go).
//
// It drives a running Hindsight only through its HTTP API and the small
// hooks the command wires in (LoadTarget, Indexer); of this module it
// imports only progress, for its bars.
package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"time"
)

// The metrics below share these conventions:
//
//   - rel maps doc id -> graded relevance; a doc is relevant iff its grade
//     is > 0. Grades <= 0 and ids missing from rel earn nothing.
//   - Only the first occurrence of an id in ranked counts. A later
//     duplicate keeps its rank position (the slot is spent, as a reader of
//     the list would see it) but earns nothing, so padding a list with
//     duplicates can never raise a score.
//   - k is the cut-off: only ranks 1..k are scored. k larger than the list
//     scores the whole list; k <= 0 means no cut-off.
//   - With no relevant doc in rel every metric is 0, as in pytrec_eval.

// topK yields the rank (1-based) and id of the first occurrence of each id
// among the first k entries of ranked.
func topK(ranked []string, k int) iter.Seq2[int, string] {
	return func(yield func(int, string) bool) {
		n := cutoff(len(ranked), k)
		seen := make(map[string]struct{}, n)
		for i, id := range ranked[:n] {
			if _, dup := seen[id]; dup {
				continue
			}
			seen[id] = struct{}{}
			if !yield(i+1, id) {
				return
			}
		}
	}
}

func cutoff(n, k int) int {
	if k <= 0 || k > n {
		return n
	}
	return k
}

// NDCG returns nDCG@k of ranked against the graded judgements rel:
//
//	DCG@k  = sum over ranks i = 1..k of gain(i) / log2(i+1)
//	nDCG@k = DCG@k / IDCG@k
//
// where gain(i) is the grade of the doc at rank i (0 if not relevant) and
// IDCG@k is the DCG@k of the ideal ranking, all relevant docs of rel sorted
// by grade, descending. The gain is the grade itself, not 2^grade - 1: that
// is what trec_eval's ndcg_cut, and so pytrec_eval and BEIR, compute. For
// binary judgements the two definitions agree. The result is in [0, 1].
func NDCG(ranked []string, rel map[string]int, k int) float64 {
	ideal := make([]int, 0, len(rel))
	for _, g := range rel {
		if g > 0 {
			ideal = append(ideal, g)
		}
	}
	if len(ideal) == 0 {
		return 0
	}
	slices.SortFunc(ideal, func(a, b int) int { return cmp.Compare(b, a) })
	var idcg float64
	for i, g := range ideal[:cutoff(len(ideal), k)] {
		idcg += float64(g) / math.Log2(float64(i+2))
	}
	var dcg float64
	for rank, id := range topK(ranked, k) {
		if g := rel[id]; g > 0 {
			dcg += float64(g) / math.Log2(float64(rank+1))
		}
	}
	return dcg / idcg
}

// Recall returns the fraction of the relevant docs of rel (grade > 0) that
// appear among the first k entries of ranked. It is in [0, 1].
func Recall(ranked []string, rel map[string]int, k int) float64 {
	total := 0
	for _, g := range rel {
		if g > 0 {
			total++
		}
	}
	if total == 0 {
		return 0
	}
	found := 0
	for _, id := range topK(ranked, k) {
		if rel[id] > 0 {
			found++
		}
	}
	return float64(found) / float64(total)
}

// MRR returns the reciprocal rank of the first relevant doc among the first
// k entries of ranked, or 0 if there is none. Averaged over queries it is
// the mean reciprocal rank.
func MRR(ranked []string, rel map[string]int, k int) float64 {
	for rank, id := range topK(ranked, k) {
		if rel[id] > 0 {
			return 1 / float64(rank)
		}
	}
	return 0
}

// Success returns 1 when a relevant doc is among the first k entries of
// ranked, else 0 (Success@k; averaged over queries, the share of queries
// answered within k).
func Success(ranked []string, rel map[string]int, k int) float64 {
	for _, id := range topK(ranked, k) {
		if rel[id] > 0 {
			return 1
		}
	}
	return 0
}

// QueryResult is one query's outcome across ranking modes, for error
// analysis. It is written as one JSON object by [WritePerQuery].
type QueryResult struct {
	QueryID string `json:"query_id"`
	Query   string `json:"query"`
	Kind    string `json:"kind,omitempty"` // the query's kind, if the dataset has kinds
	// Relevant lists the ids judged relevant (grade > 0).
	Relevant []string `json:"relevant"`
	// Returned maps a mode (e.g. "text", "semantic", "hybrid") to the ids it
	// returned, best first.
	Returned map[string][]string `json:"returned"`
	// NDCG10 maps a mode to nDCG@10 of its Returned list.
	NDCG10 map[string]float64 `json:"ndcg10"`
}

// NewQueryResult builds the QueryResult of q from its judgements and the
// lists each mode returned. Relevant is sorted by grade, descending, then
// by id; NDCG10 is computed for every mode in returned. The returned map is
// retained, not copied.
func NewQueryResult(q Query, rel map[string]int, returned map[string][]string) QueryResult {
	r := QueryResult{
		QueryID:  q.ID,
		Query:    q.Text,
		Kind:     q.Kind,
		Relevant: []string{},
		Returned: returned,
		NDCG10:   make(map[string]float64, len(returned)),
	}
	for id, g := range rel {
		if g > 0 {
			r.Relevant = append(r.Relevant, id)
		}
	}
	slices.SortFunc(r.Relevant, func(a, b string) int {
		return cmp.Or(cmp.Compare(rel[b], rel[a]), cmp.Compare(a, b))
	})
	for mode, ids := range returned {
		r.NDCG10[mode] = NDCG(ids, rel, 10)
	}
	return r
}

// WritePerQuery writes rs to w as JSON Lines: one object per result, in
// order, each followed by a newline. Map keys are sorted, so equal input
// gives byte-identical output. HTML characters are not escaped, as code
// queries contain them. It stops at the first write error.
func WritePerQuery(w io.Writer, rs []QueryResult) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range rs {
		if err := enc.Encode(&rs[i]); err != nil {
			return fmt.Errorf("write per-query result for query %q: %w", rs[i].QueryID, err)
		}
	}
	return nil
}

// Summary is the headline of one ranking mode over a dataset.
type Summary struct {
	Mode string
	Metrics
	P50, P99 time.Duration
	Queries  int // queries averaged over: len(ds.Queries)
	Missing  int // queries of ds without an entry in ranked; they score 0
	// TimedOut counts a peer's queries stopped at the query time limit
	// (they are among Missing); Failed says why a peer was given up on,
	// "" when it answered to the end.
	TimedOut int
	Failed   string
	// ByKind holds the same means over the queries of each kind, when the
	// dataset's queries have kinds (Query.Kind); nil otherwise.
	ByKind map[string]Metrics
}

// Metrics are the mean relevance metrics of a mode over a set of queries.
type Metrics struct {
	NDCG10    float64 // mean nDCG@10
	Recall100 float64 // mean Recall@100
	MRR10     float64 // mean MRR@10
	Success1  float64 // share of queries with a relevant doc first
	Success10 float64 // share of queries with a relevant doc in the top 10
	Queries   int     // queries averaged over
}

// add adds one query's scores of ranked to the sums in m.
func (m *Metrics) add(ranked []string, rel map[string]int) {
	m.NDCG10 += NDCG(ranked, rel, 10)
	m.Recall100 += Recall(ranked, rel, 100)
	m.MRR10 += MRR(ranked, rel, 10)
	m.Success1 += Success(ranked, rel, 1)
	m.Success10 += Success(ranked, rel, 10)
}

// mean divides the sums by m.Queries.
func (m *Metrics) mean() {
	if m.Queries == 0 {
		return
	}
	n := float64(m.Queries)
	m.NDCG10 /= n
	m.Recall100 /= n
	m.MRR10 /= n
	m.Success1 /= n
	m.Success10 /= n
}

// Summarize averages nDCG@10, Recall@100, MRR@10 and Success@1/@10 over
// every query of ds (not only those present in ranked: a query the mode did
// not answer scores 0 and is counted in Missing; entries for unknown query
// ids are ignored), overall and per query kind, and takes the nearest-rank
// 50th and 99th percentiles of lat (see [Percentile]). With a nil ds or no
// queries the means are 0.
func Summarize(mode string, ranked map[string][]string, ds *Dataset, lat []time.Duration) Summary {
	s := Summary{Mode: mode, P50: Percentile(lat, 50), P99: Percentile(lat, 99)}
	if ds == nil || len(ds.Queries) == 0 {
		return s
	}
	kinds := map[string]*Metrics{}
	for _, q := range ds.Queries {
		k := kinds[q.Kind]
		if k == nil {
			k = &Metrics{}
			kinds[q.Kind] = k
		}
		k.Queries++
		list, ok := ranked[q.ID]
		if !ok {
			s.Missing++
			continue
		}
		rel := ds.Qrels[q.ID]
		s.Metrics.add(list, rel)
		k.add(list, rel)
	}
	s.Queries = len(ds.Queries)
	s.Metrics.Queries = s.Queries
	s.Metrics.mean()
	if _, none := kinds[""]; !none {
		s.ByKind = make(map[string]Metrics, len(kinds))
		for kind, m := range kinds {
			m.mean()
			s.ByKind[kind] = *m
		}
	}
	return s
}
