// Package ranking is the query side: full-text, semantic and hybrid search
// over one user's sessions, and the retrieval behind /api/context. It depends
// only on the small interfaces it declares, so tests hand it real in-memory
// parts.
package ranking

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
)

// Mode selects how a query is matched.
type Mode string

// Modes.
const (
	FullText Mode = "fulltext"
	Semantic Mode = "semantic"
	Hybrid   Mode = "hybrid"
)

// MaxQueryBytes bounds the text of a search or context query in every front
// end (the REST API's q, the MCP tools' query, the dashboard's search box).
// A longer one is refused with a message, never cut, so the caller knows it
// was not run as sent. It is what the index's parser reads of a query, so
// nothing a front end accepts is ignored.
const MaxQueryBytes = index.MaxQueryBytes

// ParseMode maps a request value to a Mode ("" is full-text).
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", FullText:
		return FullText, nil
	case Semantic, Hybrid:
		return Mode(s), nil
	}
	return "", fmt.Errorf("type must be fulltext, semantic or hybrid, got %q", s)
}

// ErrNoEmbedder: semantic or hybrid search was asked for, but no embedding
// provider is configured.
var ErrNoEmbedder = errors.New("semantic search needs an embedder: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or run `make model` for the offline model, then restart; HINDSIGHT_EMBEDDER=openai|local selects one")

// TextSearcher runs a full-text query; *index.Index satisfies it.
type TextSearcher interface {
	Search(ctx context.Context, q index.Query) ([]index.Hit, error)
}

// VectorHit is a session (and chunk) found by vector similarity.
type VectorHit struct {
	SessionID string
	Ordinal   int
	Score     float64 // cosine similarity
}

// VectorSearcher finds the chunks nearest to a query vector. It is declared
// here so ranking does not import the vector stores or their clients.
type VectorSearcher interface {
	Nearest(ctx context.Context, userID string, q []float32, k int) ([]VectorHit, error)
}

// Embedder turns query text into a vector.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Options tune ranking. Zero values take defaults.
type Options struct {
	K              float64       // RRF constant; 0 = 60
	SemanticWeight float64       // weight of the vector leg in hybrid; 0 = 1
	Fusion         Fusion        // how hybrid and context merge the legs; "" = FusionRRF
	Depth          int           // per-leg depth; 0 = max(limit, 50)
	EmbedTimeout   time.Duration // query embedding deadline; 0 = 2s

	// Logger is told when a dependency of semantic search starts failing
	// and when it recovers: once per change, not once per request.
	Logger zerolog.Logger
	// OnDegraded, when set, is called for every answer that fell back to
	// full-text (hybrid, context) with the dependency that failed
	// (DepProvider or DepVectorStore); OnUnavailable for every semantic
	// query that could not be answered. Metrics count them.
	OnDegraded    func(dependency string)
	OnUnavailable func(dependency string)
}

func (o Options) withDefaults() Options {
	o.K = cmp.Or(o.K, 60)
	o.SemanticWeight = cmp.Or(o.SemanticWeight, 1)
	o.EmbedTimeout = cmp.Or(o.EmbedTimeout, 2*time.Second)
	return o
}

func (o Options) depth(limit, floor int) int {
	if o.Depth > 0 {
		return max(o.Depth, limit)
	}
	return max(limit, floor)
}

// Engine answers queries for one deployment.
type Engine struct {
	text TextSearcher
	vec  VectorSearcher // nil without an embedder
	emb  Embedder       // nil without an embedder
	opts Options

	// failing: the dependency's last call failed (for logging changes).
	providerFailing, storeFailing atomic.Bool
}

// New returns an Engine. vec and emb may be nil (semantic search disabled).
func New(text TextSearcher, vec VectorSearcher, emb Embedder, opts Options) *Engine {
	if vec == nil || emb == nil {
		vec, emb = nil, nil
	}
	return &Engine{text: text, vec: vec, emb: emb, opts: opts.withDefaults()}
}

// Semantic reports whether semantic and hybrid search are available.
func (e *Engine) Semantic() bool { return e.emb != nil }

// Query is a parsed search request.
type Query struct {
	UserID  string
	Text    string
	Mode    Mode
	Limit   int
	Explain bool
}

// Leg is one list's contribution to a hybrid result.
type Leg struct {
	Rank  int     `json:"rank"` // from 1; 0 = not in that list
	Score float64 `json:"score"`
}

// Result is one ranked session.
type Result struct {
	SessionID string
	Score     float64
	Snippet   string
	MatchedIn []string
	Text      *Leg // explain: the full-text leg (hybrid)
	Vector    *Leg // explain: the vector leg (semantic, hybrid)
}

// SessionOf returns r's session id (for ingest.HydrateHits).
func SessionOf(r Result) string { return r.SessionID }

// Response is a ranked list; Degraded names a leg that failed and was left
// out (hybrid falls back to full-text when the query cannot be embedded or
// the vector store fails), and Cause the dependency that failed.
type Response struct {
	Results  []Result
	Degraded string // "semantic" or ""
	Cause    string // DepProvider or DepVectorStore when Degraded
	// Partial: the full-text search stopped at its budget before it could
	// check every candidate of a quoted phrase (index.ErrPartial), so more
	// or better sessions may hold it. The results are right as far as they
	// go; the caller must tell the user.
	Partial bool
}

// Search runs q.
func (e *Engine) Search(ctx context.Context, q Query) (Response, error) {
	if q.Limit <= 0 {
		q.Limit = 20
	}
	switch q.Mode {
	case "", FullText:
		rs, partial, err := e.fullText(ctx, q, q.Limit, index.Sessions)
		return Response{Results: rs, Partial: partial}, err
	case Semantic:
		if e.emb == nil {
			return Response{}, ErrNoEmbedder
		}
		rs, err := e.semantic(ctx, q, q.Limit)
		var ue *UnavailableError
		if errors.As(err, &ue) && e.opts.OnUnavailable != nil {
			e.opts.OnUnavailable(ue.Dependency)
		}
		return Response{Results: rs}, err
	case Hybrid:
		if e.emb == nil {
			return Response{}, ErrNoEmbedder
		}
		return e.hybrid(ctx, q)
	}
	return Response{}, fmt.Errorf("unknown mode %q", q.Mode)
}

// fullText runs q on the text index; partial when the index stopped at
// its budget (index.ErrPartial: the hits it found are kept).
func (e *Engine) fullText(ctx context.Context, q Query, k int, kind index.Kind) ([]Result, bool, error) {
	hits, err := e.text.Search(ctx, index.Query{UserID: q.UserID, Text: q.Text, Kind: kind, Limit: k, Explain: q.Explain})
	partial := errors.Is(err, index.ErrPartial)
	if err != nil && !partial {
		return nil, false, err
	}
	out := make([]Result, len(hits))
	for i, h := range hits {
		out[i] = Result{SessionID: h.SessionID, Score: h.Score, Snippet: h.Snippet, MatchedIn: h.MatchedIn}
	}
	return out, partial, nil
}

// semantic ranks sessions by their best chunk's cosine similarity.
func (e *Engine) semantic(ctx context.Context, q Query, k int) ([]Result, error) {
	vhits, err := e.vectorHits(ctx, q, k)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(vhits))
	for i, h := range vhits {
		r := Result{SessionID: h.SessionID, Score: h.Score}
		if q.Explain {
			r.Vector = &Leg{Rank: i + 1, Score: h.Score}
			r.MatchedIn = []string{"messages"}
		}
		out = append(out, r)
	}
	return out, nil
}

// vectorHits embeds the query (under its own deadline) and returns the best
// chunk per session, best first, at most k sessions. A failing dependency
// is an *UnavailableError.
func (e *Engine) vectorHits(ctx context.Context, q Query, k int) ([]VectorHit, error) {
	vec, err := e.embedQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	// Fetch more chunks than sessions: several chunks of one session collapse.
	hits, err := e.nearest(ctx, q.UserID, vec, k*4)
	if err != nil {
		return nil, err
	}
	return bestPerSession(hits, k), nil
}

// nearest asks the vector store, turning its failure into an
// *UnavailableError (the caller's own cancellation stays itself).
func (e *Engine) nearest(ctx context.Context, userID string, vec []float32, k int) ([]VectorHit, error) {
	hits, err := e.vec.Nearest(ctx, userID, vec, k)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.failed(DepVectorStore, fmt.Errorf("vector search: %w", err))
	}
	e.recovered(DepVectorStore)
	return hits, nil
}

// Dependencies of semantic search, as UnavailableError, the metrics and the
// logs name them.
const (
	DepProvider    = "embedding_provider"
	DepVectorStore = "vector_store"
)

// DefaultRetryAfter is the wait suggested to a client when the failing
// dependency gave none.
const DefaultRetryAfter = 5 * time.Second

// UnavailableError: semantic search could not run because a dependency
// failed (the embedding provider: down, rate-limited, timing out, answering
// nonsense; or the vector store: unreachable). It is not a fault of the
// server: hybrid and context fall back to full-text, semantic answers 503.
type UnavailableError struct {
	Dependency string        // DepProvider or DepVectorStore
	RetryAfter time.Duration // the dependency's own hint, else DefaultRetryAfter
	Err        error
}

func (e *UnavailableError) Error() string {
	return "semantic search unavailable: " + DependencyName(e.Dependency) + " failed: " + e.Err.Error()
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// DependencyName is a dependency's name for people.
func DependencyName(dep string) string {
	switch dep {
	case DepProvider:
		return "the embedding provider"
	case DepVectorStore:
		return "the vector store"
	}
	return dep
}

// retryDelayer is an error carrying the wait a dependency asked for
// (*vectors.ProviderError, from Retry-After).
type retryDelayer interface{ RetryDelay() time.Duration }

// failed records that dep failed with err (logging the change) and returns
// the *UnavailableError for it.
func (e *Engine) failed(dep string, err error) *UnavailableError {
	ue := &UnavailableError{Dependency: dep, RetryAfter: DefaultRetryAfter, Err: err}
	var rd retryDelayer
	if errors.As(err, &rd) && rd.RetryDelay() > 0 {
		ue.RetryAfter = rd.RetryDelay()
	}
	if !e.flag(dep).Swap(true) {
		e.opts.Logger.Warn().Str("dependency", dep).Err(err).
			Msg("semantic search degraded: " + DependencyName(dep) + " is failing; hybrid and context answer from full-text, semantic answers 503")
	}
	return ue
}

// recovered records that dep answered, logging the change.
func (e *Engine) recovered(dep string) {
	if e.flag(dep).Swap(false) {
		e.opts.Logger.Info().Str("dependency", dep).Msg("semantic search recovered: " + DependencyName(dep) + " answers again")
	}
}

func (e *Engine) flag(dep string) *atomic.Bool {
	if dep == DepProvider {
		return &e.providerFailing
	}
	return &e.storeFailing
}

// degrade counts an answer that fell back to full-text because of err.
func (e *Engine) degrade(err *UnavailableError) {
	if e.opts.OnDegraded != nil {
		e.opts.OnDegraded(err.Dependency)
	}
}

func bestPerSession(hits []VectorHit, k int) []VectorHit {
	slices.SortStableFunc(hits, func(a, b VectorHit) int { return cmp.Compare(b.Score, a.Score) })
	seen := map[string]bool{}
	out := make([]VectorHit, 0, k)
	for _, h := range hits {
		if seen[h.SessionID] {
			continue
		}
		seen[h.SessionID] = true
		out = append(out, h)
		if len(out) == k {
			break
		}
	}
	return out
}

func (e *Engine) hybrid(ctx context.Context, q Query) (Response, error) {
	depth := e.opts.depth(q.Limit, 50)
	text, partial, err := e.fullText(ctx, q, depth, index.Sessions)
	if err != nil {
		return Response{}, err
	}
	vhits, err := e.vectorHits(ctx, q, depth)
	var ue *UnavailableError
	if errors.As(err, &ue) {
		// The text leg stands alone; say so rather than fail the request.
		e.degrade(ue)
		if len(text) > q.Limit {
			text = text[:q.Limit]
		}
		return Response{Results: text, Degraded: "semantic", Cause: ue.Dependency, Partial: partial}, nil
	}
	if err != nil {
		return Response{}, err
	}
	vec := make([]Result, len(vhits))
	for i, h := range vhits {
		vec[i] = Result{SessionID: h.SessionID, Score: h.Score}
	}
	return Response{Results: e.fuse(text, vec, q.Limit, q.Explain), Partial: partial}, nil
}

// fuse merges the legs as the options say.
func (e *Engine) fuse(text, vec []Result, limit int, explain bool) []Result {
	switch e.opts.Fusion {
	case FusionMinMax, FusionZScore:
		return FuseScores(text, vec, e.opts.Fusion, e.opts.SemanticWeight, limit, explain)
	}
	return Fuse(text, vec, e.opts.K, e.opts.SemanticWeight, limit, explain)
}

// Fuse merges a text list and a vector list by weighted reciprocal rank
// fusion: score = 1/(k + r_text) + w/(k + r_vec), ranks from 1, a list a
// session is missing from contributing nothing. Ties keep the text order.
// Snippets and matchedIn come from the text leg when it has the session.
func Fuse(text, vec []Result, k, w float64, limit int, explain bool) []Result {
	byID := map[string]*Result{}
	var order []*Result
	get := func(r Result) *Result {
		if f, ok := byID[r.SessionID]; ok {
			return f
		}
		f := &Result{SessionID: r.SessionID}
		byID[r.SessionID] = f
		order = append(order, f)
		return f
	}
	for i, r := range text {
		f := get(r)
		f.Score += 1 / (k + float64(i+1))
		f.Snippet, f.MatchedIn = r.Snippet, r.MatchedIn
		if explain {
			f.Text = &Leg{Rank: i + 1, Score: r.Score}
		}
	}
	for i, r := range vec {
		f := get(r)
		f.Score += w / (k + float64(i+1))
		if explain {
			f.Vector = &Leg{Rank: i + 1, Score: r.Score}
			if f.MatchedIn == nil {
				f.MatchedIn = []string{"messages"}
			}
		}
	}
	slices.SortStableFunc(order, func(a, b *Result) int { return cmp.Compare(b.Score, a.Score) })
	out := make([]Result, 0, min(limit, len(order)))
	for _, f := range order {
		if len(out) == limit {
			break
		}
		out = append(out, *f)
	}
	return out
}
