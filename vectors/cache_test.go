package vectors_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hindsight-dev/hindsight/vectors"
)

// recordingEmbedder returns (len(text), i, 1) for each text and records
// every text it was asked to embed.
type recordingEmbedder struct {
	mu    sync.Mutex
	model string
	dim   int // 0 = 3
	asked []string
	fail  bool
}

func (e *recordingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fail {
		return nil, errors.New("provider down")
	}
	e.asked = append(e.asked, texts...)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = make([]float32, e.Dim())
		out[i][0], out[i][1] = float32(len(t)), float32(len(e.asked))
		for j := 2; j < e.Dim(); j++ {
			out[i][j] = 1
		}
	}
	return out, nil
}
func (e *recordingEmbedder) Model() string { return e.model }
func (e *recordingEmbedder) Dim() int {
	if e.dim == 0 {
		return 3
	}
	return e.dim
}

func TestCache(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "sub", "embeddings.db")
	c, err := vectors.OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	inner := &recordingEmbedder{model: "m1"}
	e := c.Wrap(inner)
	if e.Model() != "m1" || e.Dim() != 3 {
		t.Errorf("Model, Dim = %q, %d; want the wrapped embedder's", e.Model(), e.Dim())
	}
	first, err := e.Embed(ctx, []string{"a", "bb", "a"})
	if err != nil {
		t.Fatal(err)
	}
	// Every text the cache lacked went to the embedder (a repeat too: one call).
	if !slices.Equal(inner.asked, []string{"a", "bb", "a"}) {
		t.Errorf("asked %q", inner.asked)
	}
	second, err := e.Embed(ctx, []string{"bb", "ccc", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inner.asked[3:], []string{"ccc"}) {
		t.Errorf("second call asked %q, want only the new text", inner.asked[3:])
	}
	if !slices.Equal(second[0], first[1]) || second[1][0] != 3 {
		t.Errorf("second = %v, want bb's cached vector %v and ccc's new one", second, first[1])
	}
	if h, m := c.Counts(); h != 2 || m != 4 {
		t.Errorf("Counts = %d hits, %d misses; want 2, 4", h, m)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened: the vectors persist, for the same model only.
	c, err = vectors.OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	down := &recordingEmbedder{model: "m1", fail: true}
	got, err := c.Wrap(down).Embed(ctx, []string{"ccc", "bb"})
	if err != nil {
		t.Fatalf("all cached, yet: %v", err)
	}
	if !slices.Equal(got[0], second[1]) || !slices.Equal(got[1], first[1]) {
		t.Errorf("after reopening: %v, want %v and %v", got, second[1], first[1])
	}
	if _, err := c.Wrap(down).Embed(ctx, []string{"new"}); err == nil || !strings.Contains(err.Error(), "provider down") {
		t.Errorf("a miss with a failing embedder: err = %v, want the embedder's", err)
	}
	other := &recordingEmbedder{model: "m2"}
	if _, err := c.Wrap(other).Embed(ctx, []string{"bb"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(other.asked, []string{"bb"}) {
		t.Errorf("another model reused m1's vector: asked %q", other.asked)
	}
	// The same model at another dimension (OpenAI's models take one) is
	// another model: m1's 3-dimensional vectors are not its.
	wider := &recordingEmbedder{model: "m1", dim: 4}
	got, err = c.Wrap(wider).Embed(ctx, []string{"bb", "ccc"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(wider.asked, []string{"bb", "ccc"}) || len(got[0]) != 4 || len(got[1]) != 4 {
		t.Errorf("m1 at 4 dimensions: asked %q, got %v; want both embedded anew, 4 dimensions each", wider.asked, got)
	}
	// ... and it did not overwrite m1's 3-dimensional ones.
	got, err = c.Wrap(down).Embed(ctx, []string{"bb"})
	if err != nil || !slices.Equal(got[0], first[1]) {
		t.Errorf("m1 at 3 dimensions after m1 at 4: %v, %v; want the first vector %v", got, err, first[1])
	}

	// One process at a time.
	if _, err := vectors.OpenCache(path); !errors.Is(err, vectors.ErrCacheInUse) || !strings.Contains(err.Error(), path) {
		t.Errorf("second open: err = %v, want ErrCacheInUse naming the file", err)
	}
}

// TestReadCached checks that ReadCached returns every vector a cache file
// holds, of every model and dimension, as the cache returns them.
func TestReadCached(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "embeddings.db")
	c, err := vectors.OpenCache(path)
	if err != nil {
		t.Fatal(err)
	}
	var want [][]float32
	for _, inner := range []*recordingEmbedder{{model: "m1"}, {model: "m2", dim: 5}} {
		vs, err := c.Wrap(inner).Embed(ctx, []string{"a", "bb", "ccc"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, vs...)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := vectors.ReadCached(path)
	if err != nil {
		t.Fatal(err)
	}
	key := func(v []float32) string { return fmt.Sprint(v) }
	gotKeys, wantKeys := make([]string, len(got)), make([]string, len(want))
	for i := range got {
		gotKeys[i] = key(got[i])
	}
	for i := range want {
		wantKeys[i] = key(want[i])
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("ReadCached = %v, want %v", gotKeys, wantKeys)
	}
	if _, err := vectors.ReadCached(filepath.Join(t.TempDir(), "none.db")); err == nil {
		t.Error("a missing file read without an error")
	}
}
