// Command hindsight bench: how a bench run gets its embedder and vector
// store. A bench run wires them exactly as serve does (openSemantic), so it
// measures the same embedding stage, store and fusion defaults the server
// runs; the flags only choose which ones.
package main

import (
	"cmp"
	"fmt"

	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/vectors"
)

// benchVectorConfig is --embedder and --store.
type benchVectorConfig struct {
	Embedder string // auto (as serve chooses), none, local, openai
	Store    string // embedded, weaviate
}

func (c benchVectorConfig) validate() error {
	switch c.Embedder {
	case "auto", "none", "local", "openai":
	default:
		return &usageError{fmt.Sprintf("--embedder must be auto, none, local or openai, got %q", c.Embedder)}
	}
	switch c.Store {
	case "embedded", "weaviate":
	default:
		return &usageError{fmt.Sprintf("--store must be embedded or weaviate, got %q", c.Store)}
	}
	return nil
}

// applyVectors puts the embedder and store choice into the server
// configuration of a bench run. Everything else (model directory, OpenAI
// key and model, RRF settings) comes from the environment, as for serve.
func applyVectors(cfg *serveConfig, c benchVectorConfig) error {
	cfg.Semantic = semanticFromEnv()
	cfg.Semantic.Embedder = c.Embedder
	if c.Embedder == "auto" {
		cfg.Semantic.Embedder = "" // serve's automatic choice
	}
	switch c.Store {
	case "weaviate":
		if cfg.Semantic.WeaviateURL == "" {
			return &usageError{"--store weaviate needs WEAVIATE_URL (and WEAVIATE_API_KEY if the server wants one)"}
		}
	default:
		// The embedded store, even when WEAVIATE_URL is set in the
		// environment: the flag, not the environment, picks the store.
		cfg.Semantic.WeaviateURL = ""
	}
	return nil
}

// appVectors returns the parts a sweep needs to build more ranking engines
// over the app's vector store, and peers need to embed with the same model:
// the vector searcher, the embedder as the app's engine calls it (retrying
// and metered), and the raw embedder (for its model and dimension). All are
// nil when the app has no embedder.
func appVectors(a *app) (ranking.VectorSearcher, vectors.Embedder, vectors.Embedder) {
	if a.semantic == nil || a.semantic.stage == nil {
		return nil, nil, nil
	}
	return vectorSearcher{a.semantic.store}, a.semantic.embedder, a.semantic.raw
}

// benchRanking returns the ranking options of the app's engine with the
// defaults filled in as ranking fills them: the RRF constant and semantic
// weight follow the embedder (design.md: k = 5, w = 0.2 for the local
// model; k = 60, w = 1 otherwise) unless HINDSIGHT_RRF_K or
// HINDSIGHT_RRF_SEMANTIC_WEIGHT set them.
func benchRanking(a *app) ranking.Options {
	var o ranking.Options
	if a.semantic != nil {
		o = a.semantic.options
	}
	o.K = cmp.Or(o.K, 60)
	o.SemanticWeight = cmp.Or(o.SemanticWeight, 1)
	return o
}
