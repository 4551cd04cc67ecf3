package bench

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseParam(t *testing.T) {
	tests := []struct {
		in      string
		want    Param
		wantErr string
	}{
		{in: "rrf.k=10,30,60", want: Param{Name: "rrf.k", Values: []float64{10, 30, 60}}},
		{in: " depth = 20 , 50,20 ", want: Param{Name: "depth", Values: []float64{20, 50}}},
		{in: "rrf.w=0.2", want: Param{Name: "rrf.w", Values: []float64{0.2}}},
		{in: "rrf.k", wantErr: "want name=v1,v2"},
		{in: "=1,2", wantErr: "want name=v1,v2"},
		{in: "rrf.k=", wantErr: "want name=v1,v2"},
		{in: "rrf.k=1,x", wantErr: `"x" is not a number`},
		{in: "rrf.k=1,,2", wantErr: `"" is not a number`},
		{in: "rrf.k=NaN", wantErr: "is not a number"},
		{in: "rrf.k=Inf", wantErr: "is not a number"},
	}
	for _, tt := range tests {
		got, err := ParseParam(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseParam(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got.Name != tt.want.Name || !slices.Equal(got.Values, tt.want.Values) {
			t.Errorf("ParseParam(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestGrid(t *testing.T) {
	if g := Grid(nil); g != nil {
		t.Errorf("Grid(nil) = %v, want nil", g)
	}
	g := Grid([]Param{
		{Name: "k", Values: []float64{1, 2}},
		{Name: "boost", Values: []float64{1, 4}, IndexTime: true},
		{Name: "d", Values: []float64{20, 50, 100}},
	})
	var got []string
	for _, p := range g {
		got = append(got, p.String())
	}
	// Index-time first (slowest), then the others in the order given.
	want := []string{
		"boost=1 k=1 d=20", "boost=1 k=1 d=50", "boost=1 k=1 d=100",
		"boost=1 k=2 d=20", "boost=1 k=2 d=50", "boost=1 k=2 d=100",
		"boost=4 k=1 d=20", "boost=4 k=1 d=50", "boost=4 k=1 d=100",
		"boost=4 k=2 d=20", "boost=4 k=2 d=50", "boost=4 k=2 d=100",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Grid =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Points do not share backing arrays.
	g[0][0].Value = 99
	if g[1][0].Value != 1 {
		t.Error("grid points share storage")
	}
	if v, ok := g[5].Get("d"); !ok || v != 100 {
		t.Errorf("Get(d) = %v, %v", v, ok)
	}
	if _, ok := g[5].Get("nope"); ok {
		t.Error("Get of an unknown name succeeded")
	}
}

// sweepDataset has four queries, each with one relevant document "r<i>".
func sweepDataset() *Dataset {
	ds := &Dataset{Name: "sweep", Qrels: map[string]map[string]int{}}
	for i := range 4 {
		id := string(rune('a' + i))
		ds.Queries = append(ds.Queries, Query{ID: id, Text: "q" + id})
		ds.Qrels[id] = map[string]int{"r" + id: 1}
	}
	return ds
}

func TestRunSweep(t *testing.T) {
	ds := sweepDataset()
	// Point k=v puts the relevant doc of the first v queries at rank 1 and
	// of the others at rank 2 (nDCG@10 = 1/log2(3) = 0.63093); with
	// boost=2 every query ranks it first.
	var calls []string
	at := func(_ context.Context, p Point) (SearchFunc, error) {
		calls = append(calls, p.String())
		k, _ := p.Get("k")
		boost, _ := p.Get("boost")
		return func(_ context.Context, mode, q string, limit int) ([]string, error) {
			if mode != "hybrid" {
				t.Errorf("mode %q, want hybrid", mode)
			}
			if limit != 20 {
				t.Errorf("limit %d, want the default 20", limit)
			}
			i := int(q[1] - 'a')
			rel := "r" + string(q[1])
			if boost == 2 || float64(i) < k {
				return []string{rel, "x"}, nil
			}
			return []string{"x", rel}, nil
		}, nil
	}
	res, err := RunSweep(context.Background(), ds, at, SweepOptions{
		Mode:   "hybrid",
		Params: []Param{{Name: "k", Values: []float64{1, 3}}, {Name: "boost", Values: []float64{1, 2}, IndexTime: true}},
		// The default k=2 is not in the grid: it is added, next to the
		// other boost=1 points.
		Default: Point{{Name: "k", Value: 2}, {Name: "boost", Value: 1}},
		Seed:    1,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantCalls := []string{"boost=1 k=1", "boost=1 k=3", "boost=1 k=2", "boost=2 k=1", "boost=2 k=3"}
	if !slices.Equal(calls, wantCalls) {
		t.Errorf("points asked in order %v, want %v", calls, wantCalls)
	}
	second := 1 / math.Log2(3)
	type row struct {
		point string
		def   bool
		ndcg  float64
	}
	want := []row{
		{"boost=2 k=1", false, 1}, // ties keep grid order
		{"boost=2 k=3", false, 1},
		{"boost=1 k=3", false, (3 + second) / 4},
		{"boost=1 k=2", true, (2 + 2*second) / 4},
		{"boost=1 k=1", false, (1 + 3*second) / 4},
	}
	if len(res.Rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(res.Rows), len(want))
	}
	for i, w := range want {
		r := res.Rows[i]
		if r.Point.String() != w.point || r.Default != w.def || math.Abs(r.NDCG10-w.ndcg) > 1e-12 {
			t.Errorf("row %d = %s default=%v nDCG %.5f, want %s default=%v nDCG %.5f", i, r.Point, r.Default, r.NDCG10, w.point, w.def, w.ndcg)
		}
		if r.Recall != 1 {
			t.Errorf("row %d recall@20 = %v, want 1", i, r.Recall)
		}
		if len(r.PerQuery) != 4 {
			t.Errorf("row %d has %d per-query scores", i, len(r.PerQuery))
		}
	}
	if res.Best != 0 || res.Default != 3 {
		t.Errorf("Best, Default = %d, %d; want 0, 3", res.Best, res.Default)
	}
	// Best vs default: differences x = 1-second on queries c and d, 0 on
	// a and b. Mean = x/2. All 16 sign assignments are enumerated; |sum|
	// reaches 2x exactly when c and d keep the same sign, in half of
	// them: p = 0.5.
	tt := res.Test
	if tt == nil {
		t.Fatal("no test between best and default")
	}
	if tt.N != 4 || math.Abs(tt.MeanDiff-(1-second)/2) > 1e-12 || math.Abs(tt.P-0.5) > 1e-12 {
		t.Errorf("test = %+v, want N 4, mean diff %.5f, p 0.5", *tt, (1-second)/2)
	}
	// t-test: d = (0, 0, x, x); mean x/2, sd x/sqrt(3), t = (x/2)/(x/sqrt(3)/2) = sqrt(3).
	if math.Abs(tt.T-math.Sqrt(3)) > 1e-9 {
		t.Errorf("t = %v, want sqrt(3)", tt.T)
	}
}

func TestRunSweepDefaultBest(t *testing.T) {
	ds := sweepDataset()
	at := func(_ context.Context, p Point) (SearchFunc, error) {
		k, _ := p.Get("k")
		return func(_ context.Context, _, q string, _ int) ([]string, error) {
			if k == 60 {
				return []string{"r" + string(q[1])}, nil
			}
			return nil, nil
		}, nil
	}
	res, err := RunSweep(context.Background(), ds, at, SweepOptions{
		Mode: "fulltext", Limit: 10, Params: []Param{{Name: "k", Values: []float64{10, 60}}},
		Default: Point{{Name: "k", Value: 60}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != 10 || len(res.Rows) != 2 || !res.Rows[0].Default || res.Test != nil {
		t.Errorf("got limit %d, %d rows, first default %v, test %v; want 10, 2, true, nil", res.Limit, len(res.Rows), res.Rows[0].Default, res.Test)
	}
	if _, err := RunSweep(context.Background(), ds, at, SweepOptions{Mode: "fulltext", Params: []Param{{Name: "k", Values: []float64{1}}}}); err == nil {
		t.Error("RunSweep without a default value for k succeeded")
	}
}
