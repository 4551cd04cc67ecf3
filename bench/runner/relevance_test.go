package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/hindsight-dev/hindsight/bench"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/vectors"
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

// The Weaviate peers take Hindsight's stored vectors only when every window's
// text hash matches, in ordinal order; anything else is embedded again.
func TestStoredVectorsLookup(t *testing.T) {
	ctx := context.Background()
	st, err := vectors.OpenEmbedded(filepath.Join(t.TempDir(), "v.db"), vectors.EmbeddedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.SetMeta(ctx, "m", 2); err != nil {
		t.Fatal(err)
	}
	texts := []string{"first window", "second window"}
	// Ordinals out of order on purpose: lookup returns them sorted.
	if err := st.Upsert(ctx, "u", map[string][]vectors.Vector{"s1": {
		{Ordinal: 1, TextHash: ingest.TextHash(texts[1]), Values: []float32{0, 1}},
		{Ordinal: 0, TextHash: ingest.TextHash(texts[0]), Values: []float32{1, 0}},
	}}); err != nil {
		t.Fatal(err)
	}
	sv := &storedVectors{userID: "u", store: st, sessionOf: map[string]string{"doc1": "s1"}}
	got, ok := sv.lookup(ctx, "doc1", texts)
	if !ok || len(got) != 2 || got[0][0] != 1 || got[1][1] != 1 {
		t.Fatalf("lookup = %v, %v; want the two stored vectors in ordinal order", got, ok)
	}
	for name, c := range map[string]struct {
		doc   string
		texts []string
	}{
		"changed text": {"doc1", []string{"first window", "other"}},
		"more windows": {"doc1", append(texts, "third")},
		"unknown doc":  {"doc2", texts},
		"no texts":     {"doc1", nil},
	} {
		if _, ok := sv.lookup(ctx, c.doc, c.texts); ok {
			t.Errorf("%s: lookup reused stored vectors", name)
		}
	}
	var none *storedVectors
	if _, ok := none.lookup(ctx, "doc1", texts); ok {
		t.Error("a nil lookup found vectors")
	}
}
