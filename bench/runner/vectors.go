package runner

import (
	"errors"
	"fmt"

	"github.com/hindsight-dev/hindsight/config"
)

// Vectors is a bench run's choice of embedder and vector store (--embedder
// and --store). A run wires them exactly as serve does (server.New), so it
// measures the same embedding stage, store and fusion defaults the server
// runs; the flags only choose which ones.
type Vectors struct {
	Embedder string // auto (as serve chooses), none, local, openai, synthetic (bench load only)
	Store    string // embedded, weaviate
	// SyntheticURL is the synthetic embedder's endpoint (startSynthetic),
	// set by the run that started it.
	SyntheticURL string
}

// Validate checks the choice (before any work starts).
func (c Vectors) Validate() error {
	switch c.Embedder {
	case "auto", "none", "local", "openai", "synthetic":
	default:
		return fmt.Errorf("--embedder must be auto, none, local, openai or synthetic, got %q", c.Embedder)
	}
	switch c.Store {
	case "embedded", "weaviate":
	default:
		return fmt.Errorf("--store must be embedded or weaviate, got %q", c.Store)
	}
	return nil
}

// apply puts the embedder and store choice into the server configuration
// of a bench run. Everything else (model directory, OpenAI key and model,
// RRF settings) stays as cfg has it: the environment, as for serve.
func (c Vectors) apply(cfg *config.Config) error {
	cfg.Semantic.Embedder = c.Embedder
	switch c.Embedder {
	case "auto":
		cfg.Semantic.Embedder = "" // serve's automatic choice
	case "synthetic":
		// The OpenAI client, talking to the run's synthetic endpoint.
		if c.SyntheticURL == "" {
			return errors.New("--embedder synthetic is for bench load (its vectors mean nothing to a relevance run)")
		}
		cfg.Semantic.Embedder, cfg.Semantic.OpenAIKey, cfg.Semantic.OpenAIBaseURL = "openai", "synthetic", c.SyntheticURL
		cfg.Semantic.OpenAIModel, cfg.Semantic.OpenAIDim = syntheticModel, SyntheticDim
	}
	switch c.Store {
	case "weaviate":
		if cfg.Semantic.WeaviateURL == "" {
			return errors.New("--store weaviate needs WEAVIATE_URL (and WEAVIATE_API_KEY if the server wants one)")
		}
	default:
		if cfg.TextIndex == "weaviate" {
			// The server keeps vectors wherever WEAVIATE_URL points, so
			// the text index's Weaviate would take them too.
			if c.Embedder != "none" {
				return errors.New("--text-index weaviate keeps the vectors in Weaviate as well (WEAVIATE_URL): pass --store weaviate, or --embedder none")
			}
			break
		}
		// The embedded store, even when WEAVIATE_URL is set in the
		// environment: the flag, not the environment, picks the store.
		cfg.Semantic.WeaviateURL = ""
	}
	return nil
}
