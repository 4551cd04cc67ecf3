package runner

import (
	"context"
	"slices"
	"testing"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/vectors"
)

// TestSyntheticEmbedder: the OpenAI client the server would use gets
// 1,536-d unit vectors from the synthetic endpoint, the same for the same
// text and different for another; a run that did not start the endpoint
// cannot choose it.
func TestSyntheticEmbedder(t *testing.T) {
	url, stop, err := startSynthetic(1)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	vec := Vectors{Embedder: "synthetic", Store: "embedded", SyntheticURL: url}
	if err := vec.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if err := vec.apply(&cfg); err != nil {
		t.Fatal(err)
	}
	e := vectors.NewOpenAI(vectors.OpenAIConfig{APIKey: cfg.Semantic.OpenAIKey, BaseURL: cfg.Semantic.OpenAIBaseURL,
		Model: cfg.Semantic.OpenAIModel, Dim: cfg.Semantic.OpenAIDim})
	vs, err := e.Embed(context.Background(), []string{"fix the flaky test", "fix the flaky test", "rename the config flag"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || len(vs[0]) != SyntheticDim {
		t.Fatalf("got %d vectors of %d dimensions, want 3 of %d", len(vs), len(vs[0]), SyntheticDim)
	}
	if !slices.Equal(vs[0], vs[1]) || slices.Equal(vs[0], vs[2]) {
		t.Error("the same text must give the same vector, another text another")
	}
	if err := (Vectors{Embedder: "synthetic", Store: "embedded"}).apply(&cfg); err == nil {
		t.Error("synthetic without its endpoint was accepted")
	}
}
