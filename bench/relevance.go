package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
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
	// Label prefixes the progress bars ("queries" when empty); the mode
	// is appended.
	Label string
	// Warmup is how many of the first queries each mode runs once, untimed
	// and unscored, before the measured pass, so the first timings do not
	// pay for cold caches and lazy loading. 0 = 10; negative = none.
	Warmup int
	// Peers names the modes answered by other systems. A peer's failure
	// does not end the run: its row is marked failed (Summary.Failed) and
	// the other modes go on. A failure of Hindsight's own modes is an error.
	Peers []string
	// QueryTimeout bounds every query: 0 = DefaultQueryTimeout. A peer's
	// query that runs out of time scores 0 (Summary.TimedOut); after
	// MaxTimeouts of them the peer is marked failed.
	QueryTimeout time.Duration
	MaxTimeouts  int // 0 = 5
}

// DefaultQueryTimeout is RelevanceOptions.QueryTimeout's default: a
// thousand times a typical query, so it only stops one that hangs.
const DefaultQueryTimeout = 20 * time.Second

// RelevanceResult is one run over a dataset: the headline metrics of every
// mode (Hindsight's modes and peers alike), the per-query outcomes behind
// them, and, when asked for, a parameter sweep and a comparison with an
// earlier run.
type RelevanceResult struct {
	Dataset string
	Docs    int // documents in the (possibly sliced) corpus
	Queries int
	// Settings records how the run was made (embedder, store, ranking
	// options, commit, command line), for the report and for whoever
	// compares two result files.
	Settings map[string]string
	// Peers names the modes answered by other systems (see Peer); the
	// rest are Hindsight's own modes.
	Peers     []string
	Summaries []Summary
	// PerQuery holds one entry per query, in dataset order. A result read
	// back from JSON has only QueryID, Kind and NDCG10 filled in.
	PerQuery []QueryResult
	// Latencies holds, per mode, the time of every query in dataset order.
	Latencies map[string][]time.Duration
	Sweep     *SweepResult
	// PeerSweeps holds one sweep per tunable peer (TunablePeer), its Mode
	// the peer's name.
	PeerSweeps []*SweepResult
	Baseline   *Comparison
	// Paired compares systems of this run query by query (DefaultPairs),
	// overall and per query kind.
	Paired []PairedComparison
}

// RunRelevance runs every query of ds in every mode through search, one
// query at a time, after a short warm-up (see RelevanceOptions.Warmup), and
// times each query.
func RunRelevance(ctx context.Context, ds *Dataset, search SearchFunc, o RelevanceOptions) (RelevanceResult, error) {
	if o.Depth <= 0 {
		o.Depth = 100
	}
	if o.Label == "" {
		o.Label = "queries"
	}
	if o.Warmup == 0 {
		o.Warmup = 10
	}
	if o.QueryTimeout <= 0 {
		o.QueryTimeout = DefaultQueryTimeout
	}
	if o.MaxTimeouts <= 0 {
		o.MaxTimeouts = 5
	}
	res := RelevanceResult{Dataset: ds.Name, Docs: len(ds.Corpus), Queries: len(ds.Queries), Latencies: map[string][]time.Duration{}}
	returned := make([]map[string][]string, len(ds.Queries))
	for i := range returned {
		returned[i] = map[string][]string{}
	}
	for _, mode := range o.Modes {
		ranked, lat, sum, err := runMode(ctx, ds, search, mode, o)
		if err != nil {
			return res, err
		}
		for i, q := range ds.Queries {
			if ids, ok := ranked[q.ID]; ok {
				returned[i][mode] = ids
			}
		}
		res.Summaries = append(res.Summaries, sum)
		res.Latencies[mode] = lat
	}
	for i, q := range ds.Queries {
		res.PerQuery = append(res.PerQuery, NewQueryResult(q, ds.Qrels[q.ID], returned[i]))
	}
	return res, nil
}

// runMode runs every query of ds in one mode. A peer's failure (an error,
// or more than o.MaxTimeouts queries out of time) gives a summary marked
// Failed and no error; the queries it did not answer score 0.
func runMode(ctx context.Context, ds *Dataset, search SearchFunc, mode string, o RelevanceOptions) (map[string][]string, []time.Duration, Summary, error) {
	peer := slices.Contains(o.Peers, mode)
	ranked := map[string][]string{}
	lat := make([]time.Duration, 0, len(ds.Queries))
	timedOut := 0
	// query runs one query within the time limit; it reports whether the
	// mode must stop (failed set, for a peer) or returns the run's error.
	var failed string
	query := func(q Query) ([]string, time.Duration, bool, error) {
		qctx, cancel := context.WithTimeout(ctx, o.QueryTimeout)
		defer cancel()
		start := time.Now()
		ids, err := search(qctx, mode, q.Text, o.Depth)
		took := time.Since(start)
		switch {
		case err == nil || errors.Is(err, ErrNoTerms):
			return ids, took, false, nil
		case ctx.Err() != nil:
			return nil, took, true, ctx.Err()
		case !peer:
			return nil, took, true, fmt.Errorf("%s query %s: %w", mode, q.ID, err)
		case errors.Is(err, context.DeadlineExceeded) || qctx.Err() != nil:
			timedOut++
			if timedOut > o.MaxTimeouts {
				failed = fmt.Sprintf("more than %d queries took over %v", o.MaxTimeouts, o.QueryTimeout)
				return nil, took, true, nil
			}
			return nil, took, false, nil
		default:
			failed = fmt.Sprintf("query %s: %v", q.ID, err)
			return nil, took, true, nil
		}
	}
	for _, q := range ds.Queries[:min(max(o.Warmup, 0), len(ds.Queries))] {
		if _, _, stop, err := query(q); err != nil || stop {
			if err != nil {
				return nil, nil, Summary{}, err
			}
			break
		}
	}
	if failed == "" {
		timedOut = 0 // the measured pass counts its own
	}
	bar := progress.New(o.Progress, o.Label+" "+mode, len(ds.Queries))
	for i, q := range ds.Queries {
		if failed != "" {
			break
		}
		ids, took, stop, err := query(q)
		if err != nil {
			return nil, nil, Summary{}, err
		}
		if stop {
			break
		}
		lat = append(lat, took)
		if ids == nil {
			ids = []string{}
		}
		ranked[q.ID] = ids
		bar.Set(i + 1)
	}
	bar.Done()
	sum := Summarize(mode, ranked, ds, lat)
	sum.Failed, sum.TimedOut = failed, timedOut
	return ranked, lat, sum, nil
}

// Summary returns the summary of mode and whether the run has it.
func (r *RelevanceResult) Summary(mode string) (Summary, bool) {
	for _, s := range r.Summaries {
		if s.Mode == mode {
			return s, true
		}
	}
	return Summary{}, false
}

// PerQueryNDCG returns nDCG@10 of mode for every query, by query id.
func (r *RelevanceResult) PerQueryNDCG(mode string) map[string]float64 {
	out := make(map[string]float64, len(r.PerQuery))
	for _, q := range r.PerQuery {
		if v, ok := q.NDCG10[mode]; ok {
			out[q.QueryID] = v
		}
	}
	return out
}

type jsonSummary struct {
	Mode      string              `json:"mode"`
	NDCG10    float64             `json:"ndcg@10"`
	Recall100 float64             `json:"recall@100"`
	MRR10     float64             `json:"mrr@10"`
	Success1  float64             `json:"success@1"`
	Success10 float64             `json:"success@10"`
	P50ms     float64             `json:"p50_ms"`
	P99ms     float64             `json:"p99_ms"`
	Missing   int                 `json:"missing,omitempty"`
	TimedOut  int                 `json:"timed_out,omitempty"`
	Failed    string              `json:"failed,omitempty"`
	ByKind    map[string]jsonKind `json:"by_kind,omitempty"`
}

// jsonKind is a mode's metrics over the queries of one kind.
type jsonKind struct {
	Queries   int     `json:"queries"`
	NDCG10    float64 `json:"ndcg@10"`
	Recall100 float64 `json:"recall@100"`
	MRR10     float64 `json:"mrr@10"`
	Success1  float64 `json:"success@1"`
	Success10 float64 `json:"success@10"`
}

func toJSONKinds(by map[string]Metrics) map[string]jsonKind {
	if by == nil {
		return nil
	}
	out := make(map[string]jsonKind, len(by))
	for k, m := range by {
		out[k] = jsonKind{m.Queries, round4(m.NDCG10), round4(m.Recall100), round4(m.MRR10), round4(m.Success1), round4(m.Success10)}
	}
	return out
}

func fromJSONKinds(by map[string]jsonKind) map[string]Metrics {
	if by == nil {
		return nil
	}
	out := make(map[string]Metrics, len(by))
	for k, m := range by {
		out[k] = Metrics{NDCG10: m.NDCG10, Recall100: m.Recall100, MRR10: m.MRR10, Success1: m.Success1, Success10: m.Success10, Queries: m.Queries}
	}
	return out
}

// jsonPerQuery stores per-query scores column-wise: one array per mode,
// aligned with QueryIDs. nDCG@10 is kept at full precision so a later run
// can test its difference against this one query by query (--baseline).
type jsonPerQuery struct {
	QueryIDs  []string             `json:"query_ids"`
	Kinds     []string             `json:"kinds,omitempty"` // aligned with QueryIDs, when the queries have kinds
	NDCG10    map[string][]float64 `json:"ndcg@10"`
	LatencyMs map[string][]float64 `json:"latency_ms,omitempty"`
}

type jsonSweepRow struct {
	Label   string  `json:"label"`
	Point   Point   `json:"point"`
	Default bool    `json:"default,omitempty"`
	NDCG10  float64 `json:"ndcg@10"`
	MRR10   float64 `json:"mrr@10"`
	Recall  float64 `json:"recall@limit"`
	P50ms   float64 `json:"p50_ms"`
	P99ms   float64 `json:"p99_ms"`
	// ByKind: per query kind; recall@100 there is recall at the limit.
	ByKind map[string]jsonKind `json:"by_kind,omitempty"`
}

type jsonSweep struct {
	Mode          string         `json:"mode"`
	Limit         int            `json:"limit"`
	Note          string         `json:"note,omitempty"`
	Rows          []jsonSweepRow `json:"rows"`
	BestVsDefault *jsonTest      `json:"best_vs_default,omitempty"`
}

// jsonTest is a PairedTest with NaN (no t-test) written as null.
type jsonTest struct {
	N        int      `json:"queries"`
	MeanDiff float64  `json:"mean_diff"`
	P        float64  `json:"p_randomization"`
	Rounds   int      `json:"rounds"`
	T        *float64 `json:"t"`
	PT       *float64 `json:"p_t"`
}

func toJSONTest(t *PairedTest) *jsonTest {
	if t == nil {
		return nil
	}
	j := &jsonTest{N: t.N, MeanDiff: round6(t.MeanDiff), P: round6(t.P), Rounds: t.Rounds}
	if !math.IsNaN(t.T) && !math.IsInf(t.T, 0) {
		v := round6(t.T)
		j.T = &v
	}
	if !math.IsNaN(t.PT) {
		v := round6(t.PT)
		j.PT = &v
	}
	return j
}

type jsonResult struct {
	Dataset  string            `json:"dataset"`
	Docs     int               `json:"docs,omitempty"`
	Queries  int               `json:"queries"`
	Settings map[string]string `json:"settings,omitempty"`
	Peers    []string          `json:"peers,omitempty"`
	Results  []jsonSummary     `json:"results"`
	PerQuery *jsonPerQuery     `json:"per_query,omitempty"`
	Sweep    *jsonSweep        `json:"sweep,omitempty"`
	// PeerSweeps: one per tunable peer.
	PeerSweeps []*jsonSweep    `json:"peer_sweeps,omitempty"`
	Baseline   *jsonComparison `json:"baseline,omitempty"`
	Paired     []jsonPaired    `json:"paired,omitempty"`
}

// jsonPaired is a PairedComparison; kind "" (all queries) is omitted.
type jsonPaired struct {
	A    string    `json:"a"`
	B    string    `json:"b"`
	Kind string    `json:"kind,omitempty"`
	Test *jsonTest `json:"test"`
}

// MarshalJSON gives the machine-readable shape:
//
//	{"dataset", "docs", "queries", "settings": {name: value}, "peers": [...],
//	 "results": [{"mode", "ndcg@10", "recall@100", "mrr@10", "p50_ms", "p99_ms"}],
//	 "per_query": {"query_ids": [...], "ndcg@10": {mode: [...]}, "latency_ms": {mode: [...]}},
//	 "sweep": {...}, "baseline": {...}}
//
// Headline metrics are rounded to 4 decimals; per-query nDCG@10 is exact.
// Map keys are sorted, so equal results give equal bytes.
func (r RelevanceResult) MarshalJSON() ([]byte, error) {
	out := jsonResult{Dataset: r.Dataset, Docs: r.Docs, Queries: r.Queries, Settings: r.Settings, Peers: r.Peers, Results: []jsonSummary{}}
	for _, s := range r.Summaries {
		out.Results = append(out.Results, jsonSummary{s.Mode, round4(s.NDCG10), round4(s.Recall100), round4(s.MRR10), round4(s.Success1), round4(s.Success10),
			millis(s.P50), millis(s.P99), s.Missing, s.TimedOut, s.Failed, toJSONKinds(s.ByKind)})
	}
	if len(r.PerQuery) > 0 {
		pq := &jsonPerQuery{QueryIDs: make([]string, len(r.PerQuery)), NDCG10: map[string][]float64{}}
		for _, s := range r.Summaries {
			col := make([]float64, len(r.PerQuery))
			for i, q := range r.PerQuery {
				col[i] = q.NDCG10[s.Mode]
			}
			pq.NDCG10[s.Mode] = col
			if lat := r.Latencies[s.Mode]; len(lat) == len(r.PerQuery) {
				if pq.LatencyMs == nil {
					pq.LatencyMs = map[string][]float64{}
				}
				ms := make([]float64, len(lat))
				for i, d := range lat {
					ms[i] = millis(d)
				}
				pq.LatencyMs[s.Mode] = ms
			}
		}
		for i, q := range r.PerQuery {
			pq.QueryIDs[i] = q.QueryID
			if q.Kind != "" {
				if pq.Kinds == nil {
					pq.Kinds = make([]string, len(r.PerQuery))
				}
				pq.Kinds[i] = q.Kind
			}
		}
		out.PerQuery = pq
	}
	if r.Sweep != nil {
		out.Sweep = toJSONSweep(r.Sweep)
	}
	for _, sw := range r.PeerSweeps {
		out.PeerSweeps = append(out.PeerSweeps, toJSONSweep(sw))
	}
	out.Baseline = r.Baseline.toJSON()
	for _, c := range r.Paired {
		out.Paired = append(out.Paired, jsonPaired{c.A, c.B, c.Kind, toJSONTest(&c.Test)})
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes, for comparing with an
// earlier run or drawing its report again: dataset, sizes, settings, the
// headline metrics, the per-query nDCG@10 and latencies (PerQuery entries
// carry only QueryID and NDCG10) and the sweep (its rows without per-query
// scores). A baseline section is not read back.
func (r *RelevanceResult) UnmarshalJSON(b []byte) error {
	var in jsonResult
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*r = RelevanceResult{Dataset: in.Dataset, Docs: in.Docs, Queries: in.Queries, Settings: in.Settings, Peers: in.Peers}
	for _, s := range in.Results {
		r.Summaries = append(r.Summaries, Summary{Mode: s.Mode,
			Metrics: Metrics{NDCG10: s.NDCG10, Recall100: s.Recall100, MRR10: s.MRR10, Success1: s.Success1, Success10: s.Success10, Queries: in.Queries},
			P50:     fromMillis(s.P50ms), P99: fromMillis(s.P99ms), Queries: in.Queries, Missing: s.Missing, TimedOut: s.TimedOut, Failed: s.Failed,
			ByKind: fromJSONKinds(s.ByKind)})
	}
	if pq := in.PerQuery; pq != nil {
		if pq.Kinds != nil && len(pq.Kinds) != len(pq.QueryIDs) {
			return fmt.Errorf("per_query: %d kinds, %d query ids", len(pq.Kinds), len(pq.QueryIDs))
		}
		for mode, col := range pq.NDCG10 {
			if len(col) != len(pq.QueryIDs) {
				return fmt.Errorf("per_query: %d nDCG@10 values for %s, %d query ids", len(col), mode, len(pq.QueryIDs))
			}
		}
		r.PerQuery = make([]QueryResult, len(pq.QueryIDs))
		for i, id := range pq.QueryIDs {
			q := QueryResult{QueryID: id, NDCG10: map[string]float64{}}
			if pq.Kinds != nil {
				q.Kind = pq.Kinds[i]
			}
			for mode, col := range pq.NDCG10 {
				q.NDCG10[mode] = col[i]
			}
			r.PerQuery[i] = q
		}
		r.Latencies = map[string][]time.Duration{}
		for mode, col := range pq.LatencyMs {
			lat := make([]time.Duration, len(col))
			for i, ms := range col {
				lat[i] = fromMillis(ms)
			}
			r.Latencies[mode] = lat
		}
	}
	if in.Sweep != nil {
		r.Sweep = fromJSONSweep(in.Sweep)
	}
	for _, js := range in.PeerSweeps {
		r.PeerSweeps = append(r.PeerSweeps, fromJSONSweep(js))
	}
	for _, c := range in.Paired {
		if c.Test != nil {
			r.Paired = append(r.Paired, PairedComparison{A: c.A, B: c.B, Kind: c.Kind, Test: fromJSONTest(c.Test)})
		}
	}
	return nil
}

func toJSONSweep(sw *SweepResult) *jsonSweep {
	js := &jsonSweep{Mode: sw.Mode, Limit: sw.Limit, Note: sw.Note, Rows: []jsonSweepRow{}, BestVsDefault: toJSONTest(sw.Test)}
	for _, row := range sw.Rows {
		js.Rows = append(js.Rows, jsonSweepRow{row.Point.String(), row.Point, row.Default,
			round4(row.NDCG10), round4(row.MRR10), round4(row.Recall), millis(row.P50), millis(row.P99), toJSONKinds(row.ByKind)})
	}
	return js
}

func fromJSONSweep(js *jsonSweep) *SweepResult {
	sw := &SweepResult{Mode: js.Mode, Limit: js.Limit, Note: js.Note}
	for i, row := range js.Rows {
		sw.Rows = append(sw.Rows, SweepRow{Point: row.Point, Default: row.Default, NDCG10: row.NDCG10, MRR10: row.MRR10,
			Recall: row.Recall, P50: fromMillis(row.P50ms), P99: fromMillis(row.P99ms), ByKind: fromJSONKinds(row.ByKind)})
		if row.Default {
			sw.Default = i
		}
	}
	if t := js.BestVsDefault; t != nil {
		pt := fromJSONTest(t)
		sw.Test = &pt
	}
	return sw
}

func fromJSONTest(t *jsonTest) PairedTest {
	pt := PairedTest{N: t.N, MeanDiff: t.MeanDiff, P: t.P, Rounds: t.Rounds, T: math.NaN(), PT: math.NaN()}
	if t.T != nil {
		pt.T = *t.T
	}
	if t.PT != nil {
		pt.PT = *t.PT
	}
	return pt
}

// ReadResult reads a result.json written by an earlier run.
func ReadResult(path string) (*RelevanceResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r RelevanceResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("read result %s: %w", path, err)
	}
	if len(r.Summaries) == 0 {
		return nil, fmt.Errorf("read result %s: no results in it (is it a result.json of bench relevance?)", path)
	}
	return &r, nil
}

// round4 and round6 round to 4 and 6 decimals; adding 0 turns a -0 (a
// tiny negative difference) into 0, so JSON never says -0.
func round4(x float64) float64 { return math.Round(x*1e4)/1e4 + 0 }
func round6(x float64) float64 { return math.Round(x*1e6)/1e6 + 0 }

func fromMillis(ms float64) time.Duration { return time.Duration(math.Round(ms * 1e6)) }

// PrintRelevance writes the table: one row per mode and peer, then the sweep
// and the comparison with a baseline when the run has them.
func PrintRelevance(w io.Writer, r RelevanceResult) {
	fmt.Fprintf(w, "dataset %s, %d documents, %d queries\n", r.Dataset, r.Docs, r.Queries)
	fmt.Fprintf(w, "%-26s %8s %10s %8s %9s %10s %9s %9s\n", "mode", "nDCG@10", "Recall@100", "MRR@10", "Success@1", "Success@10", "p50 ms", "p99 ms")
	for _, s := range r.Summaries {
		fmt.Fprintf(w, "%-26s %8.4f %10.4f %8.4f %9.4f %10.4f %9.2f %9.2f\n", s.Mode, s.NDCG10, s.Recall100, s.MRR10, s.Success1, s.Success10, millis(s.P50), millis(s.P99))
	}
	if kinds := r.Kinds(); len(kinds) > 0 {
		fmt.Fprintf(w, "\nby query kind: nDCG@10 / MRR@10 / Success@1 / Success@10\n%-26s", "mode")
		for _, k := range kinds {
			fmt.Fprintf(w, " %-30s", fmt.Sprintf("%s (%d)", k.Name, k.Queries))
		}
		fmt.Fprintln(w)
		for _, s := range r.Summaries {
			fmt.Fprintf(w, "%-26s", s.Mode)
			for _, k := range kinds {
				m := s.ByKind[k.Name]
				fmt.Fprintf(w, " %-30s", fmt.Sprintf("%.4f %.4f %.4f %.4f", m.NDCG10, m.MRR10, m.Success1, m.Success10))
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.Paired) > 0 {
		fmt.Fprintln(w)
		PrintPaired(w, r.Paired)
	}
	if r.Sweep != nil {
		fmt.Fprintln(w)
		PrintSweep(w, r.Sweep)
	}
	if r.Baseline != nil {
		fmt.Fprintln(w)
		PrintComparison(w, r.Baseline)
	}
}

// PrintSweep writes the sweep table, best first, marking the default.
func PrintSweep(w io.Writer, s *SweepResult) {
	fmt.Fprintf(w, "sweep of %s, %d results per query, sorted by nDCG@10 (* = default)\n", s.Mode, s.Limit)
	if s.Note != "" {
		fmt.Fprintln(w, s.Note)
	}
	width := len("point")
	for _, r := range s.Rows {
		width = max(width, len(r.Point.String()))
	}
	fmt.Fprintf(w, "  %-*s %8s %8s %10s %9s %9s\n", width, "point", "nDCG@10", "MRR@10", fmt.Sprintf("Recall@%d", s.Limit), "p50 ms", "p99 ms")
	for _, r := range s.Rows {
		mark := " "
		if r.Default {
			mark = "*"
		}
		fmt.Fprintf(w, "%s %-*s %8.4f %8.4f %10.4f %9.2f %9.2f\n", mark, width, r.Point, r.NDCG10, r.MRR10, r.Recall, millis(r.P50), millis(r.P99))
	}
	if s.Test == nil {
		fmt.Fprintln(w, "the default is the best point")
		return
	}
	fmt.Fprintf(w, "best (%s) vs default (%s): %s\n", s.Rows[s.Best].Point, s.Rows[s.Default].Point, s.Test)
}

// String summarises the test on one line: the mean difference and both p
// values.
func (t PairedTest) String() string {
	s := fmt.Sprintf("mean nDCG@10 difference %+.4f over %d queries, randomisation p = %.4f", t.MeanDiff, t.N, t.P)
	if !math.IsNaN(t.PT) {
		s += fmt.Sprintf(", paired t-test p = %.4f", t.PT)
	}
	return s + " " + significance(t.P)
}

// significance labels a p value for tables.
func significance(p float64) string {
	switch {
	case p < 0.01:
		return "(significant, p < 0.01)"
	case p < 0.05:
		return "(significant, p < 0.05)"
	}
	return "(not significant)"
}

// sortedModes returns the keys of m, sorted.
func sortedModes[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return slices.Clip(keys)
}
