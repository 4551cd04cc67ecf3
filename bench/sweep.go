package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Param is one swept setting: a name such as "rrf.k" and the values to try.
type Param struct {
	Name   string
	Values []float64
	// IndexTime marks a setting that is fixed when documents are indexed
	// (such as the title boost): every distinct value needs its own index.
	// Grid orders such settings first, so points sharing an index are
	// consecutive and the caller builds each index once.
	IndexTime bool
}

// ParseParam parses "name=v1,v2,...": a non-empty name and at least one
// finite number. Repeated values are dropped, the order of first occurrence
// is kept.
func ParseParam(s string) (Param, error) {
	name, list, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(list) == "" {
		return Param{}, fmt.Errorf("sweep %q: want name=v1,v2,... (e.g. rrf.k=10,30,60)", s)
	}
	p := Param{Name: name}
	for _, f := range strings.Split(list, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return Param{}, fmt.Errorf("sweep %s: %q is not a number", name, strings.TrimSpace(f))
		}
		if !slices.Contains(p.Values, v) {
			p.Values = append(p.Values, v)
		}
	}
	return p, nil
}

// Setting is one parameter's value at a grid point.
type Setting struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Point is one combination of settings, one per swept parameter, in grid
// order (see Grid).
type Point []Setting

// Get returns the value of the setting name.
func (p Point) Get(name string) (float64, bool) {
	for _, s := range p {
		if s.Name == name {
			return s.Value, true
		}
	}
	return 0, false
}

// String formats p as "rrf.k=60 depth=50".
func (p Point) String() string {
	parts := make([]string, len(p))
	for i, s := range p {
		parts[i] = s.Name + "=" + strconv.FormatFloat(s.Value, 'g', -1, 64)
	}
	return strings.Join(parts, " ")
}

// Equal reports whether p and q have the same settings in the same order.
func (p Point) Equal(q Point) bool { return slices.Equal(p, q) }

// Grid returns every combination of the values of params (the cartesian
// product). Index-time parameters come first and vary slowest, then the
// others in the order given; within a parameter the values keep their
// order. No parameters give no points.
func Grid(params []Param) []Point {
	if len(params) == 0 {
		return nil
	}
	ordered := slices.Clone(params)
	slices.SortStableFunc(ordered, func(a, b Param) int {
		return -cmp.Compare(boolInt(a.IndexTime), boolInt(b.IndexTime))
	})
	points := []Point{{}}
	for _, prm := range ordered {
		next := make([]Point, 0, len(points)*len(prm.Values))
		for _, pt := range points {
			for _, v := range prm.Values {
				next = append(next, append(slices.Clip(pt), Setting{prm.Name, v}))
			}
		}
		points = next
	}
	return points
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// SweepOptions configures RunSweep.
type SweepOptions struct {
	// Mode is the ranking mode every point is measured in (e.g. "hybrid").
	Mode string
	// Limit is the number of results asked per query; 0 = 20, the API's
	// default page. nDCG@10 and MRR@10 need only 10; a per-leg depth below
	// the limit has no effect, so a depth sweep needs a small limit.
	Limit int
	// Params are the swept settings.
	Params []Param
	// Default holds the value of every swept parameter that the product
	// uses when nothing is configured. Its row is marked; if the grid does
	// not contain it, it is measured as an extra point.
	Default Point
	// Seed seeds the randomisation test.
	Seed     uint64
	Progress io.Writer
	// Note is printed with the table, e.g. how latency was measured.
	Note string
	// QueryTimeout bounds every query (RelevanceOptions.QueryTimeout).
	QueryTimeout time.Duration
	// peer: the mode is a peer's (its queries are bounded and its
	// failures are errors, not a lost run: see RelevanceOptions.Peers).
	peer bool
}

// SweepRow is one measured grid point.
type SweepRow struct {
	Point   Point
	Default bool
	NDCG10  float64 // mean nDCG@10
	MRR10   float64 // mean MRR@10
	Recall  float64 // mean recall at SweepResult.Limit
	P50     time.Duration
	P99     time.Duration
	// PerQuery holds nDCG@10 of every query, in dataset order.
	PerQuery []float64
	// ByKind holds the metrics per query kind, when the queries have kinds
	// (Recall100 is then recall at the sweep's limit).
	ByKind map[string]Metrics
}

// SweepResult is a measured grid, best first.
type SweepResult struct {
	Mode  string
	Limit int
	Note  string
	// Rows are sorted by nDCG@10, descending; among equal scores the
	// default comes first, the others keep grid order.
	Rows []SweepRow
	// Best and Default index Rows (Best is 0).
	Best, Default int
	// Test compares the best point with the default on per-query nDCG@10;
	// nil when the default is the best.
	Test *PairedTest
}

// PairedTest is the outcome of comparing two systems query by query.
type PairedTest struct {
	N        int     `json:"queries"`   // pairs compared
	MeanDiff float64 `json:"mean_diff"` // mean of a - b
	// P is the two-sided p value of the paired randomisation test
	// (PairedRandomization, Rounds sign flips).
	P      float64 `json:"p_randomization"`
	Rounds int     `json:"rounds"`
	// T and PT are the paired t statistic and its two-sided p value
	// (PairedTTest); NaN when there are fewer than two pairs.
	T  float64 `json:"t"`
	PT float64 `json:"p_t"`
}

// testRounds is the number of sign flips of the randomisation tests the
// bench reports.
const testRounds = 10000

// Compare runs both paired tests on per-query scores a and b (same queries,
// same order).
func Compare(a, b []float64, seed uint64) (PairedTest, error) {
	diff, p, err := PairedRandomization(a, b, testRounds, seed)
	if err != nil {
		return PairedTest{}, err
	}
	pt := PairedTest{N: len(a), MeanDiff: diff, P: p, Rounds: testRounds, T: math.NaN(), PT: math.NaN()}
	if len(a) >= 2 {
		if pt.T, pt.PT, err = PairedTTest(a, b); err != nil {
			return PairedTest{}, err
		}
	}
	return pt, nil
}

// PointSearch returns the SearchFunc that answers queries at a grid point.
// RunSweep calls it once per point, in grid order, so points sharing
// index-time settings arrive together: an implementation can keep the
// index of the current index-time settings and rebuild it only when they
// change.
type PointSearch func(ctx context.Context, p Point) (SearchFunc, error)

// RunSweep measures o.Mode at every point of the grid of o.Params (plus the
// default point when the grid lacks it) over the queries of ds, sorts the
// points by nDCG@10 and tests the best against the default.
func RunSweep(ctx context.Context, ds *Dataset, at PointSearch, o SweepOptions) (*SweepResult, error) {
	if o.Limit <= 0 {
		o.Limit = 20
	}
	points := Grid(o.Params)
	if len(points) == 0 {
		return nil, fmt.Errorf("sweep: no parameters")
	}
	def, err := sweepDefault(points[0], o.Default)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(points, def.Equal) {
		points = append(points, def)
		// Keep points that share index-time settings together.
		indexTime := map[string]bool{}
		for _, p := range o.Params {
			indexTime[p.Name] = p.IndexTime
		}
		key := func(p Point) string {
			var b strings.Builder
			for _, s := range p {
				if indexTime[s.Name] {
					fmt.Fprintf(&b, "%s=%v;", s.Name, s.Value)
				}
			}
			return b.String()
		}
		first := map[string]int{}
		for i, p := range points {
			if _, ok := first[key(p)]; !ok {
				first[key(p)] = i
			}
		}
		slices.SortStableFunc(points, func(a, b Point) int { return cmp.Compare(first[key(a)], first[key(b)]) })
	}

	res := &SweepResult{Mode: o.Mode, Limit: o.Limit, Note: o.Note}
	for i, p := range points {
		search, err := at(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", p, err)
		}
		label := fmt.Sprintf("sweep %d/%d %s", i+1, len(points), p)
		row, err := measurePoint(ctx, ds, search, o, label)
		if err != nil {
			return nil, fmt.Errorf("sweep %s: %w", p, err)
		}
		row.Point = p
		row.Default = p.Equal(def)
		res.Rows = append(res.Rows, row)
	}
	// Best first; among equal scores the default first, so a tie is no
	// reason to move off the default.
	slices.SortStableFunc(res.Rows, func(a, b SweepRow) int {
		if c := cmp.Compare(b.NDCG10, a.NDCG10); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(b.Default), boolInt(a.Default))
	})
	for i, r := range res.Rows {
		if r.Default {
			res.Default = i
		}
	}
	if res.Default != res.Best {
		t, err := Compare(res.Rows[res.Best].PerQuery, res.Rows[res.Default].PerQuery, o.Seed)
		if err != nil {
			return nil, err
		}
		res.Test = &t
	}
	return res, nil
}

// sweepDefault orders the default's settings like a grid point, so Equal
// can find it, and checks that it names every swept parameter.
func sweepDefault(like Point, def Point) (Point, error) {
	out := make(Point, len(like))
	for i, s := range like {
		v, ok := def.Get(s.Name)
		if !ok {
			return nil, fmt.Errorf("sweep: no default value for %s", s.Name)
		}
		out[i] = Setting{s.Name, v}
	}
	return out, nil
}

func measurePoint(ctx context.Context, ds *Dataset, search SearchFunc, so SweepOptions, label string) (SweepRow, error) {
	o := RelevanceOptions{Modes: []string{so.Mode}, Depth: so.Limit, Progress: so.Progress, Label: label, QueryTimeout: so.QueryTimeout}
	if so.peer {
		o.Peers = o.Modes
	}
	res, err := RunRelevance(ctx, ds, search, o)
	if err != nil {
		return SweepRow{}, err
	}
	s := res.Summaries[0]
	if s.Failed != "" {
		return SweepRow{}, errors.New(s.Failed)
	}
	row := SweepRow{NDCG10: s.NDCG10, MRR10: s.MRR10, P50: s.P50, P99: s.P99, PerQuery: make([]float64, len(ds.Queries)), ByKind: s.ByKind}
	for i, q := range ds.Queries {
		row.PerQuery[i] = res.PerQuery[i].NDCG10[so.Mode]
		row.Recall += Recall(res.PerQuery[i].Returned[so.Mode], ds.Qrels[q.ID], so.Limit)
	}
	if n := len(ds.Queries); n > 0 {
		row.Recall /= float64(n)
	}
	return row, nil
}
