package ranking

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
)

func ids(rs []Result) string {
	var out []string
	for _, r := range rs {
		out = append(out, r.SessionID)
	}
	return strings.Join(out, ",")
}

func list(ids ...string) []Result {
	out := make([]Result, len(ids))
	for i, id := range ids {
		out[i] = Result{SessionID: id, Score: float64(len(ids) - i)}
	}
	return out
}

func TestFuse(t *testing.T) {
	tests := []struct {
		name       string
		text, vec  []Result
		k, w       float64
		limit      int
		want       string
		wantScores map[string]float64
	}{
		{
			// a: 1/(60+1) + 1/(60+2) = 0.016393 + 0.016129 = 0.032522
			// b: 1/(60+2) + 1/(60+1) = 0.032522 (tie: text order keeps a first)
			// c: 1/(60+3)            = 0.015873
			name: "classic RRF, ties keep text order", text: list("a", "b", "c"), vec: list("b", "a"), k: 60, w: 1, limit: 10,
			want: "a,b,c", wantScores: map[string]float64{"a": 1.0/61 + 1.0/62, "c": 1.0 / 63},
		},
		{
			// Weighted: x only in text at rank 1: 1/(5+1) = 0.1667;
			// y text rank 2 + vector rank 1 at w=0.2: 1/7 + 0.2/6 = 0.1429 + 0.0333 = 0.1762.
			name: "weighted fusion lets a strong second leg promote", text: list("x", "y"), vec: list("y"), k: 5, w: 0.2, limit: 10,
			want: "y,x", wantScores: map[string]float64{"x": 1.0 / 6, "y": 1.0/7 + 0.2/6},
		},
		{
			// z only in the vector list at rank 1: 0.2/6 = 0.0333, below x at rank 3: 1/8 = 0.125.
			name: "a weak leg alone does not outrank text hits", text: list("v", "w", "x"), vec: list("z"), k: 5, w: 0.2, limit: 10,
			want: "v,w,x,z",
		},
		{name: "limit cuts", text: list("a", "b", "c"), vec: list("d"), k: 60, w: 1, limit: 2, want: "a,d"},
		{name: "empty lists", k: 60, w: 1, limit: 5, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Fuse(tt.text, tt.vec, tt.k, tt.w, tt.limit, true)
			if ids(got) != tt.want {
				t.Fatalf("order %q, want %q", ids(got), tt.want)
			}
			for _, r := range got {
				if want, ok := tt.wantScores[r.SessionID]; ok && math.Abs(r.Score-want) > 1e-12 {
					t.Errorf("score of %s = %v, want %v", r.SessionID, r.Score, want)
				}
			}
		})
	}
	// Explain carries each leg's rank and raw score.
	got := Fuse(list("a", "b"), []Result{{SessionID: "b", Score: 0.9}}, 60, 1, 10, true)
	if got[0].SessionID != "b" || got[0].Text == nil || got[0].Text.Rank != 2 || got[0].Vector == nil || got[0].Vector.Rank != 1 || got[0].Vector.Score != 0.9 {
		t.Errorf("explain legs: %+v %+v", got[0].Text, got[0].Vector)
	}
	if got[1].Vector != nil {
		t.Errorf("a session missing from the vector list has a vector leg: %+v", got[1].Vector)
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": FullText, "fulltext": FullText, "semantic": Semantic, "hybrid": Hybrid} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"FULLTEXT", "vector", "bm25", " hybrid"} {
		if _, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) accepted", bad)
		}
	}
}

// fakeText is a one-fault wrapper style fake: fixed hits per query text.
type fakeText struct{ hits map[string][]index.Hit }

func (f fakeText) Search(_ context.Context, q index.Query) ([]index.Hit, error) {
	if q.UserID == "" {
		return nil, errors.New("no user")
	}
	h := f.hits[q.Text]
	if len(h) > q.Limit {
		h = h[:q.Limit]
	}
	return h, nil
}

type fakeVec struct{ hits []VectorHit }

func (f fakeVec) Nearest(_ context.Context, _ string, _ []float32, k int) ([]VectorHit, error) {
	return f.hits[:min(k, len(f.hits))], nil
}

type fakeEmb struct{ err error }

func (f fakeEmb) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.err != nil {
		return nil, f.err
	}
	return [][]float32{{1, 0}}, nil
}

func TestSearchModes(t *testing.T) {
	text := fakeText{hits: map[string][]index.Hit{"q": {{SessionID: "t1", Score: 3}, {SessionID: "both", Score: 2}}}}
	vec := fakeVec{hits: []VectorHit{{SessionID: "both", Ordinal: 0, Score: 0.9}, {SessionID: "both", Ordinal: 3, Score: 0.8}, {SessionID: "v1", Score: 0.5}}}
	ctx := context.Background()

	noEmb := New(text, nil, nil, Options{})
	if _, err := noEmb.Search(ctx, Query{UserID: "u", Text: "q", Mode: Semantic}); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("semantic without an embedder: %v", err)
	}
	if _, err := noEmb.Search(ctx, Query{UserID: "u", Text: "q", Mode: Hybrid}); !errors.Is(err, ErrNoEmbedder) {
		t.Errorf("hybrid without an embedder: %v", err)
	}
	res, err := noEmb.Search(ctx, Query{UserID: "u", Text: "q"})
	if err != nil || ids(res.Results) != "t1,both" {
		t.Errorf("fulltext: %q %v", ids(res.Results), err)
	}

	e := New(text, vec, fakeEmb{}, Options{K: 60, SemanticWeight: 1})
	res, err = e.Search(ctx, Query{UserID: "u", Text: "q", Mode: Semantic, Limit: 5})
	// Best chunk per session: "both" once, with its best score.
	if err != nil || ids(res.Results) != "both,v1" || res.Results[0].Score != 0.9 {
		t.Errorf("semantic: %q %v %+v", ids(res.Results), err, res.Results)
	}
	res, err = e.Search(ctx, Query{UserID: "u", Text: "q", Mode: Hybrid, Limit: 5})
	if err != nil || ids(res.Results) != "both,t1,v1" || res.Degraded != "" {
		t.Errorf("hybrid: %q %v degraded=%q", ids(res.Results), err, res.Degraded)
	}
	down := New(text, vec, fakeEmb{err: errors.New("provider down")}, Options{})
	res, err = down.Search(ctx, Query{UserID: "u", Text: "q", Mode: Hybrid, Limit: 1})
	if err != nil || res.Degraded != "semantic" || ids(res.Results) != "t1" {
		t.Errorf("hybrid with the embedder failing: %q %v degraded=%q", ids(res.Results), err, res.Degraded)
	}
	if _, err := down.Search(ctx, Query{UserID: "u", Text: "q", Mode: Semantic}); err == nil {
		t.Error("semantic with the embedder failing succeeded")
	}
}

func TestContextHits(t *testing.T) {
	text := fakeText{hits: map[string][]index.Hit{"q": {
		{SessionID: "a", Ordinal: 2, Score: 5}, {SessionID: "b", Ordinal: 0, Score: 4}, {SessionID: "a", Ordinal: 0, Score: 3}, {SessionID: "c", Ordinal: 1, Score: 2},
	}}}
	e := New(text, nil, nil, Options{})
	hits, degraded, _, err := e.ContextHits(context.Background(), "u", "q", 2)
	if err != nil || degraded != "" || len(hits) != 2 || hits[0].SessionID != "a" || hits[1].SessionID != "b" {
		t.Fatalf("sessions: %+v %q %v", hits, degraded, err)
	}
	if got := hits[0].Ordinals; len(got) != 2 || got[0] != 2 || got[1] != 0 {
		t.Errorf("a's chunks best first: %v", got)
	}
}
