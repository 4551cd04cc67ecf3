package runner

import (
	"context"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
)

// countingEmbedder is a working embedder: the vector of a text is its
// length; it counts the texts it was asked for.
type countingEmbedder struct{ texts int }

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

func TestCachedEmbedder(t *testing.T) {
	inner := &countingEmbedder{}
	c := &cachedEmbedder{e: inner, m: map[string][]float32{}}
	ds := &bench.Dataset{Queries: []bench.Query{{ID: "1", Text: "a"}, {ID: "2", Text: "bb"}, {ID: "3", Text: "a"}}}
	if err := c.warm(context.Background(), ds, nil); err != nil {
		t.Fatal(err)
	}
	if inner.texts != 2 {
		t.Errorf("warm embedded %d texts, want 2 (a repeated query once)", inner.texts)
	}
	got, err := c.Embed(context.Background(), []string{"bb", "ccc", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if inner.texts != 3 {
		t.Errorf("%d texts embedded in all, want 3: only ccc is new", inner.texts)
	}
	for i, want := range []float32{2, 3, 1} {
		if got[i][0] != want {
			t.Errorf("vector %d = %v, want length %v", i, got[i], want)
		}
	}
}

func TestCommandLine(t *testing.T) {
	got := CommandLine([]string{"hindsight", "bench", "--dataset", "my data", "--sweep", "rrf.k=1,2", "it's", ""})
	want := `hindsight bench --dataset 'my data' --sweep rrf.k=1,2 'it'\''s' ''`
	if got != want {
		t.Errorf("CommandLine = %s, want %s", got, want)
	}
}
