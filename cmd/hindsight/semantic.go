package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/vectors"
)

// semanticConfig selects the embedder and the vector store (environment only:
// these are deployment settings).
type semanticConfig struct {
	Embedder      string // openai, local, none, or "" (automatic)
	OpenAIKey     string
	OpenAIBaseURL string
	OpenAIModel   string
	OpenAIDim     int
	ModelDir      string
	WeaviateURL   string
	WeaviateKey   string
	RRFK          float64 // 0 = the embedder's default
	RRFWeight     float64 // 0 = the embedder's default
}

func semanticFromEnv() semanticConfig {
	dim, _ := strconv.Atoi(env("HINDSIGHT_OPENAI_DIM", "0"))
	k, _ := strconv.ParseFloat(env("HINDSIGHT_RRF_K", "0"), 64)
	w, _ := strconv.ParseFloat(env("HINDSIGHT_RRF_SEMANTIC_WEIGHT", "0"), 64)
	return semanticConfig{
		Embedder:      env("HINDSIGHT_EMBEDDER", ""),
		OpenAIKey:     env("OPENAI_API_KEY", ""),
		OpenAIBaseURL: env("OPENAI_BASE_URL", ""),
		OpenAIModel:   env("HINDSIGHT_OPENAI_MODEL", vectors.OpenAIModel),
		OpenAIDim:     dim,
		ModelDir:      env("HINDSIGHT_MODEL_DIR", filepath.Join(".cache", "models", "use-lite")),
		WeaviateURL:   env("WEAVIATE_URL", ""),
		WeaviateKey:   env("WEAVIATE_API_KEY", ""),
		RRFK:          k,
		RRFWeight:     w,
	}
}

// semantic is the wired vector side: nil fields mean semantic search is off.
type semantic struct {
	embedder vectors.Embedder // metered and retrying; nil = none
	raw      vectors.Embedder // the embedder itself (model, dim)
	store    vectors.Store
	usage    *vectors.Usage
	stage    *ingest.EmbedStage
	options  ranking.Options
	describe string
}

// openSemantic picks the embedder (openai when OPENAI_API_KEY is set, else
// local when its model files are present, else none), opens the vector store
// (Weaviate when WEAVIATE_URL is set, else the embedded store in dataDir) and
// checks that the stored vectors are of the same model and dimension.
func openSemantic(ctx context.Context, cfg semanticConfig, dataDir string) (*semantic, error) {
	return openSemanticWith(ctx, cfg, dataDir, false)
}

// openSemanticWith is openSemantic; with replace, a store holding another
// model's vectors is emptied and relabelled instead of refused (reembed).
func openSemanticWith(ctx context.Context, cfg semanticConfig, dataDir string, replace bool) (*semantic, error) {
	s := &semantic{usage: &vectors.Usage{}}
	var window int
	switch name := cfg.Embedder; {
	case name == "openai" || name == "" && cfg.OpenAIKey != "":
		if cfg.OpenAIKey == "" {
			return nil, errors.New("HINDSIGHT_EMBEDDER=openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server)")
		}
		s.raw = vectors.NewOpenAI(vectors.OpenAIConfig{APIKey: cfg.OpenAIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel, Dim: cfg.OpenAIDim})
		s.options = ranking.Options{K: 60, SemanticWeight: 1}
	case name == "local" || name == "":
		l, err := vectors.LoadLocal(cfg.ModelDir)
		if err != nil {
			if name == "" && errors.Is(err, fs.ErrNotExist) {
				s.describe = "none (set OPENAI_API_KEY, or run `make model` for the offline model)"
				return s, nil
			}
			return nil, fmt.Errorf("offline embedding model in %s: %w", cfg.ModelDir, err)
		}
		s.raw = l
		window = 64 // the model reads 128 tokens: about 60-80 words
		// A weak dense leg fused at full weight drags a strong BM25 leg
		// down; these were chosen on SciFact train (design.md).
		s.options = ranking.Options{K: 5, SemanticWeight: 0.2}
	case name == "none":
		s.describe = "none (HINDSIGHT_EMBEDDER=none)"
		return s, nil
	default:
		return nil, &usageError{fmt.Sprintf("HINDSIGHT_EMBEDDER=%q: use openai, local or none", name)}
	}
	if cfg.RRFK > 0 {
		s.options.K = cfg.RRFK
	}
	if cfg.RRFWeight > 0 {
		s.options.SemanticWeight = cfg.RRFWeight
	}
	s.embedder = vectors.Metered(vectors.Retrying(s.raw, vectors.RetryOptions{}), s.usage)
	store, where, err := openVectorStore(ctx, cfg, dataDir)
	if err != nil {
		return nil, err
	}
	if replace {
		model, dim, err := store.Meta(ctx)
		if err == nil && (model != s.raw.Model() || dim != s.raw.Dim()) && model != "" {
			err = store.Reset(ctx)
		}
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("reset vector store: %w", err)
		}
	}
	if err := vectors.EnsureMeta(ctx, store, s.raw.Model(), s.raw.Dim()); err != nil {
		store.Close()
		return nil, fmt.Errorf("%w\nthe vector store holds vectors of another model: run `hindsight reembed` to replace them, or restore the previous embedder settings", err)
	}
	s.store = store
	s.stage = ingest.NewEmbedStage(store, s.embedder, ingest.EmbedOptions{WindowWords: window})
	s.describe = fmt.Sprintf("%s (%d dimensions), vectors in %s", s.raw.Model(), s.raw.Dim(), where)
	return s, nil
}

func openVectorStore(ctx context.Context, cfg semanticConfig, dataDir string) (vectors.Store, string, error) {
	if cfg.WeaviateURL != "" {
		return openWeaviate(ctx, cfg)
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, "", err
	}
	path := filepath.Join(dataDir, vectors.EmbeddedFileName)
	st, err := vectors.OpenEmbedded(path, vectors.EmbeddedOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("open vector store %s: %w", path, err)
	}
	return st, "the embedded store (" + path + ")", nil
}

// Close releases the vector store.
func (s *semantic) Close() error {
	if s == nil || s.store == nil {
		return nil
	}
	return s.store.Close()
}

// vectorSearcher adapts a vector store to ranking: hits name chunks (a
// vector's ordinal is chunk*WindowsPerChunk + window), and only the best
// window of each chunk counts.
type vectorSearcher struct{ store vectors.Searcher }

func (v vectorSearcher) Nearest(ctx context.Context, userID string, q []float32, k int) ([]ranking.VectorHit, error) {
	// Ask for more than k: several windows of one chunk collapse into one hit.
	hits, err := v.store.Nearest(ctx, userID, q, k*2)
	if err != nil {
		return nil, err
	}
	type key struct {
		sid string
		ord int
	}
	seen := map[key]bool{}
	out := make([]ranking.VectorHit, 0, k)
	for _, h := range hits {
		c := key{h.SessionID, ingest.ChunkOfVector(h.Ordinal)}
		if seen[c] {
			continue
		}
		seen[c] = true
		out = append(out, ranking.VectorHit{SessionID: h.SessionID, Ordinal: c.ord, Score: h.Score})
		if len(out) == k {
			break
		}
	}
	return out, nil
}
