package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/internal/datasetstest"
)

const eps = 1e-12

// log2(3) appears in every ideal DCG with two relevant docs.
var log2of3 = math.Log2(3)

func TestMetrics(t *testing.T) {
	graded := map[string]int{"a": 3, "b": 2, "c": 1, "n": 0}
	binary := map[string]int{"a": 1, "b": 1}
	tests := []struct {
		name   string
		ranked []string
		rel    map[string]int
		k      int
		ndcg   float64
		recall float64
		mrr    float64
	}{
		{
			name: "perfect graded ranking", ranked: []string{"a", "b", "c"}, rel: graded, k: 10,
			ndcg: 1, recall: 1, mrr: 1,
		},
		{
			// DCG@3  = 1/log2(2) + 0/log2(3) + 3/log2(4) = 1 + 0 + 1.5 = 2.5
			// IDCG@3 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.26186 + 0.5 = 4.76186
			// nDCG@3 = 2.5 / 4.76186 = 0.52501
			// Recall@3: a and c of {a, b, c} = 2/3. MRR: c at rank 1.
			name: "graded, cut at 3", ranked: []string{"c", "x", "a", "b"}, rel: graded, k: 3,
			ndcg: 2.5 / (3 + 2/log2of3 + 0.5), recall: 2.0 / 3, mrr: 1,
		},
		{
			// Same list, k = 4 adds b at rank 4: + 2/log2(5).
			// IDCG@4 = IDCG@3 (only three relevant docs).
			name: "graded, cut at 4", ranked: []string{"c", "x", "a", "b"}, rel: graded, k: 4,
			ndcg: (2.5 + 2/math.Log2(5)) / (3 + 2/log2of3 + 0.5), recall: 1, mrr: 1,
		},
		{
			// Gain is the grade, not 2^grade-1: a grade-3 doc at rank 2 gives
			// DCG@2 = 0 + 3/log2(3); IDCG@2 = 3 + 2/log2(3).
			// With 2^rel-1 gains it would be (7/log2(3)) / (7 + 3/log2(3)).
			name: "gain is the grade", ranked: []string{"x", "a"}, rel: graded, k: 2,
			ndcg: (3 / log2of3) / (3 + 2/log2of3), recall: 1.0 / 3, mrr: 0.5,
		},
		{
			// k beyond the list: only b at rank 1 is found.
			// DCG = 1; IDCG@10 = 1 + 1/log2(3) = 1.63093; nDCG = 0.61315.
			name: "k larger than the list", ranked: []string{"b"}, rel: binary, k: 10,
			ndcg: 1 / (1 + 1/log2of3), recall: 0.5, mrr: 1,
		},
		{
			// k <= 0: the whole list. a at rank 3, b at rank 5:
			// DCG = 1/log2(4) + 1/log2(6) = 0.5 + 0.38685; IDCG = 1 + 1/log2(3).
			name: "no cut-off", ranked: []string{"x", "y", "a", "z", "b"}, rel: binary, k: 0,
			ndcg: (0.5 + 1/math.Log2(6)) / (1 + 1/log2of3), recall: 1, mrr: 1.0 / 3,
		},
		{
			name: "relevant docs below the cut-off", ranked: []string{"x", "y", "a"}, rel: binary, k: 2,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			name: "no relevant docs judged", ranked: []string{"a", "b"}, rel: map[string]int{"a": 0, "b": -1}, k: 10,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			name: "nil judgements", ranked: []string{"a"}, rel: nil, k: 10,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			name: "empty list", ranked: nil, rel: binary, k: 10,
			ndcg: 0, recall: 0, mrr: 0,
		},
		{
			// A duplicate of a relevant doc earns nothing but keeps its slot.
			// DCG@3 = 1/log2(2) + 0 + 1/log2(4) = 1.5; IDCG@3 = 1 + 1/log2(3).
			// Counted twice it would be 1 + 1/log2(3) + 0.5 > IDCG, nDCG > 1.
			// Recall@3 = 2/2; Recall@2 (next case) = 1/2, not 2/2.
			name: "duplicate relevant doc", ranked: []string{"a", "a", "b"}, rel: binary, k: 3,
			ndcg: 1.5 / (1 + 1/log2of3), recall: 1, mrr: 1,
		},
		{
			name: "duplicate relevant doc, cut at 2", ranked: []string{"a", "a", "b"}, rel: binary, k: 2,
			ndcg: 1 / (1 + 1/log2of3), recall: 0.5, mrr: 1,
		},
		{
			// Duplicates of a non-relevant doc still take slots 1-2:
			// a at rank 3. DCG = 1/log2(4) = 0.5, IDCG = 1 (one relevant doc).
			name: "duplicates push the relevant doc down", ranked: []string{"x", "x", "a"}, rel: map[string]int{"a": 1}, k: 3,
			ndcg: 0.5, recall: 1, mrr: 1.0 / 3,
		},
		{
			// A negative grade earns nothing, and does not enter the ideal.
			// DCG = 0 + 1/log2(3); IDCG = 1.
			name: "negative grade", ranked: []string{"a", "b"}, rel: map[string]int{"a": -1, "b": 1}, k: 10,
			ndcg: 1 / log2of3, recall: 1, mrr: 0.5,
		},
		{
			// Recall counts relevant docs anywhere in rel, even ones the
			// system could never return: 2 of {a, b, c} found.
			name: "recall denominator is all relevant docs", ranked: []string{"a", "x", "b", "y"}, rel: graded, k: 100,
			ndcg: (3 + 2/math.Log2(4)) / (3 + 2/log2of3 + 0.5), recall: 2.0 / 3, mrr: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NDCG(tt.ranked, tt.rel, tt.k); math.Abs(got-tt.ndcg) > eps {
				t.Errorf("NDCG = %.6f, want %.6f", got, tt.ndcg)
			}
			if got := Recall(tt.ranked, tt.rel, tt.k); math.Abs(got-tt.recall) > eps {
				t.Errorf("Recall = %.6f, want %.6f", got, tt.recall)
			}
			if got := MRR(tt.ranked, tt.rel, tt.k); math.Abs(got-tt.mrr) > eps {
				t.Errorf("MRR = %.6f, want %.6f", got, tt.mrr)
			}
		})
	}
}

// TestMetricsBounds checks, over every ranking of a small judged set with
// duplicates and strangers, that the metrics stay in [0, 1] and that only
// ideal rankings reach nDCG 1.
func TestMetricsBounds(t *testing.T) {
	rel := map[string]int{"a": 2, "b": 1, "c": 1, "z": 0}
	ids := []string{"a", "b", "c", "z", "x", "a"}
	cases := 0
	var walk func(prefix []string)
	walk = func(prefix []string) {
		if len(prefix) == 4 {
			cases++
			for _, k := range []int{0, 1, 2, 3, 10} {
				n, r, m := NDCG(prefix, rel, k), Recall(prefix, rel, k), MRR(prefix, rel, k)
				for name, v := range map[string]float64{"NDCG": n, "Recall": r, "MRR": m} {
					if v < 0 || v > 1+eps || math.IsNaN(v) {
						t.Fatalf("%s(%q, k=%d) = %v, outside [0, 1]", name, prefix, k, v)
					}
				}
			}
			return
		}
		for _, id := range ids {
			walk(append(prefix[:len(prefix):len(prefix)], id))
		}
	}
	walk(nil)
	if cases != 6*6*6*6 {
		t.Fatalf("walked %d rankings, want %d", cases, 6*6*6*6)
	}
	if got := NDCG([]string{"a", "c", "b"}, rel, 3); math.Abs(got-1) > eps {
		t.Errorf("ideal ranking (ties in either order) has nDCG %v, want 1", got)
	}
}

func TestNewQueryResult(t *testing.T) {
	rel := map[string]int{"d2": 1, "d1": 1, "d9": 2, "d0": 0}
	returned := map[string][]string{
		"text":     {"d9", "d1", "d2"},
		"semantic": {"x", "d9"},
	}
	got := NewQueryResult(Query{ID: "q1", Text: "flaky auth"}, rel, returned)
	want := QueryResult{
		QueryID:  "q1",
		Query:    "flaky auth",
		Relevant: []string{"d9", "d1", "d2"}, // grade desc, then id; d0 is not relevant
		Returned: returned,
		NDCG10: map[string]float64{
			"text": 1,
			// DCG = 2/log2(3); IDCG = 2 + 1/log2(3) + 1/log2(4)
			"semantic": (2 / log2of3) / (2 + 1/log2of3 + 0.5),
		},
	}
	if got.QueryID != want.QueryID || got.Query != want.Query ||
		!reflect.DeepEqual(got.Relevant, want.Relevant) || !reflect.DeepEqual(got.Returned, want.Returned) {
		t.Errorf("NewQueryResult = %+v, want %+v", got, want)
	}
	for mode, w := range want.NDCG10 {
		if math.Abs(got.NDCG10[mode]-w) > eps {
			t.Errorf("NDCG10[%s] = %v, want %v", mode, got.NDCG10[mode], w)
		}
	}
	if len(got.NDCG10) != len(want.NDCG10) {
		t.Errorf("NDCG10 = %v, want modes %v", got.NDCG10, want.NDCG10)
	}

	// No relevant docs: Relevant is an empty list, not null, in JSON.
	empty := NewQueryResult(Query{ID: "q2"}, nil, nil)
	var buf bytes.Buffer
	if err := WritePerQuery(&buf, []QueryResult{empty}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"relevant":[]`) {
		t.Errorf("got %s, want an empty relevant list", buf.String())
	}
}

func TestWritePerQuery(t *testing.T) {
	rs := []QueryResult{
		{
			QueryID:  "q1",
			Query:    "a < b && c",
			Relevant: []string{"d1"},
			Returned: map[string][]string{"text": {"d1", "d2"}, "hybrid": {"d2", "d1"}},
			NDCG10:   map[string]float64{"text": 1, "hybrid": 0.5},
		},
		{QueryID: "q2", Query: "second", Relevant: []string{}},
	}
	var buf bytes.Buffer
	if err := WritePerQuery(&buf, rs); err != nil {
		t.Fatal(err)
	}
	// Map keys sorted, HTML not escaped, one object per line.
	want := `{"query_id":"q1","query":"a < b && c","relevant":["d1"],"returned":{"hybrid":["d2","d1"],"text":["d1","d2"]},"ndcg10":{"hybrid":0.5,"text":1}}` + "\n" +
		`{"query_id":"q2","query":"second","relevant":[],"returned":null,"ndcg10":null}` + "\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}

	// Round trip.
	dec := json.NewDecoder(&buf)
	for i := range rs {
		var got QueryResult
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(got, rs[i]) {
			t.Errorf("line %d decodes to %+v, want %+v", i+1, got, rs[i])
		}
	}

	var empty bytes.Buffer
	if err := WritePerQuery(&empty, nil); err != nil || empty.Len() != 0 {
		t.Errorf("WritePerQuery(nil) wrote %q, err %v; want nothing", empty.String(), err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

func TestWritePerQueryErrors(t *testing.T) {
	errDisk := errors.New("disk full")
	err := WritePerQuery(failingWriter{errDisk}, []QueryResult{{QueryID: "q7"}})
	if !errors.Is(err, errDisk) || !strings.Contains(err.Error(), `"q7"`) {
		t.Errorf("err = %v, want it to wrap %v and name q7", err, errDisk)
	}
	// NaN is not JSON: the error names the query.
	err = WritePerQuery(&bytes.Buffer{}, []QueryResult{{QueryID: "q8", NDCG10: map[string]float64{"x": math.NaN()}}})
	if err == nil || !strings.Contains(err.Error(), `"q8"`) {
		t.Errorf("err = %v, want an error naming q8", err)
	}
}

func TestSummarize(t *testing.T) {
	ds := &Dataset{
		Queries: []Query{{ID: "q1", Kind: "topic"}, {ID: "q2", Kind: "recall"}, {ID: "q3", Kind: "topic"}},
		Qrels: map[string]map[string]int{
			"q1": {"a": 1},
			"q2": {"b": 1, "c": 1},
			"q3": {"d": 1},
		},
	}
	ranked := map[string][]string{
		"q1":    {"a"},      // nDCG 1, recall 1, MRR 1, success@1 1
		"q2":    {"x", "c"}, // nDCG (1/log2(3)) / (1 + 1/log2(3)), recall 1/2, MRR 1/2, success@1 0, success@10 1
		"other": {"a"},      // not a query of ds: ignored
		// q3 missing: scores 0 and counts in Missing
	}
	q2NDCG := (1 / log2of3) / (1 + 1/log2of3)
	lat := []time.Duration{3 * time.Millisecond, 1 * time.Millisecond, 2 * time.Millisecond, 10 * time.Millisecond}
	got := Summarize("hybrid", ranked, ds, lat)
	want := Summary{
		Mode: "hybrid",
		Metrics: Metrics{
			NDCG10:    (1 + q2NDCG) / 3,
			Recall100: (1 + 0.5) / 3,
			MRR10:     (1 + 0.5) / 3,
			Success1:  1.0 / 3,
			Success10: 2.0 / 3,
			Queries:   3,
		},
		P50:     2 * time.Millisecond,  // nearest rank ceil(0.50*4) = 2 of 1,2,3,10
		P99:     10 * time.Millisecond, // nearest rank ceil(0.99*4) = 4
		Queries: 3,
		Missing: 1,
		ByKind: map[string]Metrics{
			"topic":  {NDCG10: 0.5, Recall100: 0.5, MRR10: 0.5, Success1: 0.5, Success10: 0.5, Queries: 2},
			"recall": {NDCG10: q2NDCG, Recall100: 0.5, MRR10: 0.5, Success1: 0, Success10: 1, Queries: 1},
		},
	}
	near := func(a, b Metrics) bool {
		return a.Queries == b.Queries && math.Abs(a.NDCG10-b.NDCG10) < eps && math.Abs(a.Recall100-b.Recall100) < eps &&
			math.Abs(a.MRR10-b.MRR10) < eps && math.Abs(a.Success1-b.Success1) < eps && math.Abs(a.Success10-b.Success10) < eps
	}
	if !near(got.Metrics, want.Metrics) {
		t.Errorf("means = %+v, want %+v", got.Metrics, want.Metrics)
	}
	if len(got.ByKind) != len(want.ByKind) {
		t.Errorf("ByKind = %+v, want %+v", got.ByKind, want.ByKind)
	}
	for k, w := range want.ByKind {
		if !near(got.ByKind[k], w) {
			t.Errorf("ByKind[%s] = %+v, want %+v", k, got.ByKind[k], w)
		}
	}
	got.Metrics, got.ByKind, want.ByKind = want.Metrics, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Summarize = %+v, want %+v", got, want)
	}

	// Queries without kinds: no ByKind.
	plain := &Dataset{Queries: []Query{{ID: "q1"}}, Qrels: ds.Qrels}
	if got := Summarize("text", ranked, plain, nil); got.ByKind != nil || got.NDCG10 != 1 {
		t.Errorf("without kinds: Summarize = %+v, want nDCG@10 1 and no ByKind", got)
	}
	for name, ds := range map[string]*Dataset{"nil dataset": nil, "no queries": {}} {
		if got, want := Summarize("text", ranked, ds, nil), (Summary{Mode: "text"}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Summarize = %+v, want %+v", name, got, want)
		}
	}
}

func TestSuccess(t *testing.T) {
	rel := map[string]int{"a": 2, "b": 0}
	for _, tt := range []struct {
		ranked []string
		k      int
		want   float64
	}{
		{[]string{"a"}, 1, 1},
		{[]string{"b", "a"}, 1, 0}, // grade 0 is not relevant
		{[]string{"b", "a"}, 2, 1},
		{[]string{"x", "x", "a"}, 2, 0},
		{nil, 10, 0},
	} {
		if got := Success(tt.ranked, rel, tt.k); got != tt.want {
			t.Errorf("Success(%v, @%d) = %v, want %v", tt.ranked, tt.k, got, tt.want)
		}
	}
}

// TestSummarizeSciFactOracle scores a perfect run and a reversed run on
// the real SciFact train qrels, end to end from LoadBEIR.
func TestSummarizeSciFactOracle(t *testing.T) {
	ds, err := LoadBEIR(t.Context(), datasetstest.Path(t, "scifact-train"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	perfect := make(map[string][]string, len(ds.Queries))
	for _, q := range ds.Queries {
		perfect[q.ID] = NewQueryResult(q, ds.Qrels[q.ID], nil).Relevant
	}
	s := Summarize("oracle", perfect, ds, nil)
	if s.NDCG10 != 1 || s.Recall100 != 1 || s.MRR10 != 1 || s.Queries != 809 || s.Missing != 0 {
		t.Errorf("oracle summary = %+v, want all 1 over 809 queries", s)
	}
	if s := Summarize("none", nil, ds, nil); s.NDCG10 != 0 || s.Missing != 809 {
		t.Errorf("empty run summary = %+v, want 0 with 809 missing", s)
	}
}
