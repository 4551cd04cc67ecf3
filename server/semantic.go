package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/vectors"
	"github.com/hindsight-dev/hindsight/vectors/weaviate"
)

// Semantic is the wired vector side: with no embedder configured, Stage,
// Store and the embedders are nil and semantic search is off.
type Semantic struct {
	Embedder vectors.Embedder // metered and retrying; nil = none
	// Cache keeps the embedding stage's vectors across runs
	// (config.Semantic.EmbedCache); nil = none. Queries do not use it.
	Cache    *vectors.Cache
	Raw      vectors.Embedder // the embedder itself (model, dim)
	Store    vectors.Store
	Usage    *vectors.Usage
	Stage    *ingest.EmbedStage
	Options  ranking.Options
	Describe string // for people: the model and where its vectors are, or why there are none
}

// OpenSemantic picks the embedder (openai when OPENAI_API_KEY is set, else
// local when its model files are present, else none), opens the vector store
// (Weaviate when WEAVIATE_URL is set, else the embedded store in dataDir) and
// checks that the stored vectors are of the same model and dimension. With
// replace, a store holding another model's vectors is emptied and
// relabelled instead of refused (reembed).
func OpenSemantic(ctx context.Context, cfg config.Semantic, dataDir string, replace bool) (*Semantic, error) {
	return openSemantic(ctx, cfg, dataDir, replace, nil)
}

// openSemantic is OpenSemantic; with wait set, a Weaviate that does not
// answer yet is waited for in the background (logged to *wait) instead of
// failing: the server starts, its full-text side works, and the embedding
// queue holds its work until Weaviate answers (see weaviate.Deferred).
func openSemantic(ctx context.Context, cfg config.Semantic, dataDir string, replace bool, wait *zerolog.Logger) (*Semantic, error) {
	s := &Semantic{Usage: &vectors.Usage{}}
	var window int
	switch name := cfg.Embedder; {
	case name == "openai" || name == "" && cfg.OpenAIKey != "":
		if cfg.OpenAIKey == "" {
			return nil, errors.New("HINDSIGHT_EMBEDDER=openai needs OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server)")
		}
		s.Raw = vectors.NewOpenAI(vectors.OpenAIConfig{APIKey: cfg.OpenAIKey, BaseURL: cfg.OpenAIBaseURL, Model: cfg.OpenAIModel, Dim: cfg.OpenAIDim,
			Timeout: time.Duration(cfg.OpenAITimeout * float64(time.Second))})
		s.Options = ranking.Options{K: 60, SemanticWeight: 1}
	case name == "local" || name == "":
		l, err := vectors.LoadLocal(cfg.ModelDir)
		if err != nil {
			if name == "" && errors.Is(err, fs.ErrNotExist) {
				s.Describe = "none (set OPENAI_API_KEY, or run `make model` for the offline model)"
				return s, nil
			}
			return nil, fmt.Errorf("offline embedding model in %s: %w", cfg.ModelDir, err)
		}
		s.Raw = l
		window = 64 // the model reads 128 tokens: about 60-80 words
		// A weak dense leg fused at full weight drags a strong BM25 leg
		// down; these were chosen on SciFact train (docs/architecture.md, Search).
		s.Options = ranking.Options{K: 5, SemanticWeight: 0.2}
	case name == "none":
		s.Describe = "none (HINDSIGHT_EMBEDDER=none)"
		return s, nil
	default:
		return nil, &config.Error{Name: "HINDSIGHT_EMBEDDER", Value: name, Want: "one of openai, local, none"}
	}
	if cfg.RRFK > 0 {
		s.Options.K = cfg.RRFK
	}
	if cfg.RRFWeight > 0 {
		s.Options.SemanticWeight = cfg.RRFWeight
	}
	s.Embedder = vectors.Metered(vectors.Retrying(s.Raw, vectors.RetryOptions{}), s.Usage)
	stageEmb := s.Embedder
	if cfg.EmbedCache != "" {
		c, err := vectors.OpenCache(cfg.EmbedCache)
		if err != nil {
			return nil, err
		}
		s.Cache, stageEmb = c, c.Wrap(s.Embedder)
	}
	// fail closes what was opened when the rest cannot be.
	fail := func(err error) (*Semantic, error) {
		if s.Cache != nil {
			s.Cache.Close()
		}
		return nil, err
	}
	if cfg.WeaviateURL != "" && wait != nil && !replace {
		st, err := weaviate.OpenDeferred(ctx, weaviateConfig(cfg), weaviate.DeferredOptions{
			Prepare: func(ctx context.Context, st vectors.Store) error { return ensureMeta(ctx, st, s.Raw) },
			Logger:  *wait,
		})
		if err != nil {
			return fail(weaviateError(err))
		}
		s.Store = st
		s.Stage = ingest.NewEmbedStage(st, stageEmb, ingest.EmbedOptions{WindowWords: window, Logger: *wait})
		s.Describe = fmt.Sprintf("%s (%d dimensions), vectors in Weaviate at %s (collection %s)", s.Raw.Model(), s.Raw.Dim(), st.Where(), st.Collection())
		return s, nil
	}
	store, where, err := openVectorStore(ctx, cfg, dataDir)
	if err != nil {
		return fail(err)
	}
	if replace {
		model, dim, err := store.Meta(ctx)
		if err == nil && (model != s.Raw.Model() || dim != s.Raw.Dim()) && model != "" {
			err = store.Reset(ctx)
		}
		if err != nil {
			store.Close()
			return fail(fmt.Errorf("reset vector store: %w", err))
		}
	}
	if err := ensureMeta(ctx, store, s.Raw); err != nil {
		store.Close()
		return fail(err)
	}
	s.Store = store
	s.Stage = ingest.NewEmbedStage(store, stageEmb, ingest.EmbedOptions{WindowWords: window})
	s.Describe = fmt.Sprintf("%s (%d dimensions), vectors in %s", s.Raw.Model(), s.Raw.Dim(), where)
	return s, nil
}

// ensureMeta records the embedder's model on the store, or refuses a store
// holding another model's vectors.
func ensureMeta(ctx context.Context, store vectors.Store, emb vectors.Embedder) error {
	if err := vectors.EnsureMeta(ctx, store, emb.Model(), emb.Dim()); err != nil {
		if errors.Is(err, vectors.ErrModelMismatch) {
			return fmt.Errorf("%w\nthe vector store holds vectors of another model: run `hindsight reembed` to replace them, or restore the previous embedder settings", err)
		}
		return err
	}
	return nil
}

// Unavailable is why the vector store cannot be used yet (Weaviate not
// answering since the start), or nil.
func (s *Semantic) Unavailable() error {
	if d, ok := s.Store.(*weaviate.Deferred); ok {
		return d.Err()
	}
	return nil
}

func openVectorStore(ctx context.Context, cfg config.Semantic, dataDir string) (vectors.Store, string, error) {
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

// openWeaviate opens the Weaviate vector store at cfg.WeaviateURL, sending
// cfg.WeaviateKey (WEAVIATE_API_KEY) as a bearer token when set, in the
// collection weaviate.DefaultCollection. When the server does not answer the
// error names the URL and what to check.
func openWeaviate(ctx context.Context, cfg config.Semantic) (vectors.Store, string, error) {
	st, err := weaviate.Open(ctx, weaviateConfig(cfg))
	if err != nil {
		return nil, "", weaviateError(err)
	}
	return st, fmt.Sprintf("Weaviate at %s (collection %s)", st.Where(), st.Collection()), nil
}

func weaviateConfig(cfg config.Semantic) weaviate.Config {
	return weaviate.Config{URL: cfg.WeaviateURL, APIKey: cfg.WeaviateKey}
}

func weaviateError(err error) error {
	if errors.Is(err, vectors.ErrModelMismatch) {
		return err
	}
	return fmt.Errorf("WEAVIATE_URL: %w\n"+
		"(Weaviate 1.25 or later is needed; set WEAVIATE_API_KEY if it requires a key, or unset WEAVIATE_URL to keep the vectors in the embedded store)", err)
}

// Close releases the vector store.
func (s *Semantic) Close() error {
	if s == nil {
		return nil
	}
	var err error
	if s.Store != nil {
		err = s.Store.Close()
	}
	if s.Cache != nil {
		err = errors.Join(err, s.Cache.Close())
	}
	return err
}

// Vectors returns what a caller needs to build more ranking engines over
// the same vectors and to embed with the same model: the vector searcher,
// the embedder as the engine calls it (retrying and metered), and the raw
// embedder (for its model and dimension). All are nil without an embedder.
func (s *Semantic) Vectors() (ranking.VectorSearcher, vectors.Embedder, vectors.Embedder) {
	if s == nil || s.Stage == nil {
		return nil, nil, nil
	}
	return vectorSearcher{s.Store}, s.Embedder, s.Raw
}

// RankingOptions returns the ranking options of the engine with the
// defaults filled in as ranking fills them: the RRF constant and semantic
// weight follow the embedder (docs/architecture.md: k = 5, w = 0.2 for the local
// model; k = 60, w = 1 otherwise) unless HINDSIGHT_RRF_K or
// HINDSIGHT_RRF_SEMANTIC_WEIGHT set them.
func (s *Semantic) RankingOptions() ranking.Options {
	var o ranking.Options
	if s != nil {
		o = s.Options
	}
	o.K = cmp.Or(o.K, 60)
	o.SemanticWeight = cmp.Or(o.SemanticWeight, 1)
	return o
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
