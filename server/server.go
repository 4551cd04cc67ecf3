// Package server builds a whole Hindsight from a [config.Config]: the
// records store, the full-text index, accounts, the ingest service and its
// indexing pipeline, the embedder and vector store, the ranking engine, the
// REST API, the dashboard and the metrics, all on one router. The command
// serves it ([Server.Run]); tests and the benchmarks drive the same wiring
// through [Server.Handler] and [Server.Background].
package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/admin"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/dashboard"
	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/mcpd"
	"github.com/hindsight-dev/hindsight/metrics"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/redact"
	"github.com/hindsight-dev/hindsight/vectors"
)

// Version is the release this build reports (hindsight version, the MCP
// server's implementation info).
const Version = "0.1.0-dev"

// Server is a wired Hindsight. New sets its exported parts; callers use
// them and do not replace them.
type Server struct {
	Store     *kv.Store
	Index     TextIndex
	Accounts  *accounts.Accounts
	Ingest    *ingest.Service
	Pipeline  *ingest.Pipeline
	Search    *ranking.Engine
	Semantic  *Semantic
	API       *httpd.Server
	Dashboard *dashboard.Server
	Metrics   *metrics.Metrics
	// Redactor redacts every write (nil when HINDSIGHT_REDACT=off).
	Redactor *redact.Redactor

	cfg      config.Config
	handler  http.Handler
	router   *mux.Router
	log      zerolog.Logger
	timeouts httpTimeouts
	// needsRebuild: the index is new or incomplete and Background must
	// rebuild it.
	needsRebuild bool
	rebuilding   atomic.Bool
	// rebuildFailed: the index is incomplete until the next start or reindex.
	rebuildFailed atomic.Bool
}

// httpTimeouts bound what a slow or stalled client can hold on to (a
// connection, a goroutine, a request's buffers): each is a limit of
// http.Server.
type httpTimeouts struct {
	header  time.Duration // to send the request's headers (slow-loris)
	request time.Duration // to send the whole request, body included
	idle    time.Duration // between requests on a kept-alive connection
	// write is how long one write of a response may stall on a client
	// that stopped reading. The API's middleware moves the deadline before
	// every write (httpd's recorder), so it does not limit how long a
	// response, an export or an MCP stream, may take.
	write time.Duration
}

func defaultTimeouts() httpTimeouts {
	return httpTimeouts{
		header:  10 * time.Second,
		request: 2 * time.Minute, // a 16 MiB batch over a slow link
		idle:    2 * time.Minute,
		write:   2 * time.Minute,
	}
}

// OpenStore opens the records in dir, failing within a second (with a
// message that says so) when another process holds them.
func OpenStore(dir string) (*kv.Store, error) {
	st, err := kv.Open(dir, kv.Options{LockTimeout: time.Second})
	if errors.Is(err, kv.ErrLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another hindsight process (is `hindsight serve` running on it?): %w", dir, err)
	}
	return st, err
}

// OpenRecords opens the records cfg names: the PostgreSQL database of
// cfg.Records (schema migrations applied, each logged), or, when it is
// unset, the bbolt file in cfg.Data (OpenStore).
func OpenRecords(ctx context.Context, cfg config.Config, log zerolog.Logger) (*kv.Store, error) {
	pg, err := kv.RecordsInPostgres(cfg.Records)
	if err != nil {
		return nil, err
	}
	if !pg {
		return OpenStore(cfg.Data)
	}
	st, err := kv.OpenPostgres(ctx, cfg.Records, kv.PostgresOptions{
		Logf: func(format string, args ...any) { log.Info().Msgf(format, args...) },
	})
	if err != nil {
		return nil, err
	}
	// The id this node's claims on outbox entries carry (kv/claims.go): a
	// session stuck behind a node that died names it.
	log.Info().Str("node", st.Node()).Dur("claim_lease", st.ClaimLease()).Msg("records in PostgreSQL: this node's id among those sharing them")
	return st, nil
}

// New opens cfg.Data and wires every part. Nothing runs until Background
// or Run; Close releases it all.
func New(ctx context.Context, cfg config.Config, log zerolog.Logger) (*Server, error) {
	red, err := NewRedactor(cfg.Redact)
	if err != nil {
		return nil, err
	}
	excluded, err := ingest.ParseProjectGlobs(cfg.ExcludeProjects)
	if err != nil {
		return nil, &config.Error{Name: "HINDSIGHT_EXCLUDE_PROJECTS (--exclude-projects)", Value: cfg.ExcludeProjects, Want: "glob patterns: " + err.Error()}
	}
	st, err := OpenRecords(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	idx, rebuild, err := openTextIndex(ctx, cfg, st, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	sem, err := openSemantic(ctx, cfg.Semantic, cfg.Data, false, &log)
	if err != nil {
		idx.Close()
		st.Close()
		return nil, err
	}
	s := &Server{Store: st, Index: idx, Semantic: sem, cfg: cfg, log: log, needsRebuild: rebuild, timeouts: defaultTimeouts(), Redactor: red}
	s.rebuilding.Store(rebuild)
	s.Accounts = accounts.New(st, nil)
	s.Ingest = ingest.NewService(st, nil)
	s.Ingest.ExcludeProjects(excluded)
	s.Ingest.Redact(red)
	s.Metrics = metrics.New(s.metricSources())
	var stages []ingest.Stage
	var vs ranking.VectorSearcher
	var emb ranking.Embedder
	if sem.Stage != nil {
		stages = append(stages, sem.Stage)
		vs, emb = vectorSearcher{sem.Store}, sem.Embedder
	}
	s.Pipeline = ingest.NewPipeline(st, idx, ingest.PipelineOptions{Logger: log, OnLag: s.Metrics.ObserveLag}, stages...)
	s.Ingest.OnWrite(s.Pipeline.Notify)
	s.Ingest.Throttle(s.Pipeline.Admit) // bulk writes wait while the indexer is behind
	ropts := sem.Options
	ropts.Logger = log
	ropts.OnDegraded, ropts.OnUnavailable = s.Metrics.ObserveDegraded, s.Metrics.ObserveUnavailable
	s.Search = ranking.New(idx, vs, emb, ropts)
	s.API = httpd.New(httpd.Config{
		Auth: s.Accounts, Ingest: s.Ingest, Records: st, Search: s.Search, Limits: ingest.Limits(cfg.Limits),
		RatePerSecond: cfg.Rate, RateBurst: cfg.Burst, Logger: log,
		Observe: s.Metrics.ObserveRequest, Ready: s.readiness, Redactor: red,
	})
	s.Dashboard, err = dashboard.New(dashboard.Config{Store: st, Accounts: s.Accounts, Search: s.Search, Deleter: s.Ingest, Logger: log,
		Web: accounts.NewWeb(st, accounts.WebOptions{BcryptCost: cfg.BcryptCost}), Redactor: red})
	if err != nil {
		s.Close(ctx)
		return nil, err
	}
	// The router is ours; the API and the dashboard each register their
	// routes on it without knowing of the other.
	r := mux.NewRouter()
	s.API.Install(r)
	s.Dashboard.Install(r)
	r.Handle("/metrics", s.Metrics.Handler()).Methods(http.MethodGet)
	// MCP clients authenticate with the same keys and share the per-key
	// rate limit; a bad key is a 401 before any MCP exchange.
	r.Handle("/mcp", s.API.Authenticated(mcpd.Handler(st, s.Search, httpd.UserID, log, Version)))
	s.handler, s.router = s.API.Handler(r), r
	return s, nil
}

// NewRedactor builds the redactor c asks for: nil when redaction is off,
// else the default rules and c.Rules' (an error names the variable).
func NewRedactor(c config.Redact) (*redact.Redactor, error) {
	if c.Off {
		return nil, nil
	}
	var o redact.Options
	if c.Rules != "" {
		data, err := os.ReadFile(c.Rules)
		if err != nil {
			return nil, fmt.Errorf("HINDSIGHT_REDACT_RULES: %w", err)
		}
		o.ExtraRules, o.ExtraRulesName = data, c.Rules
	}
	r, err := redact.New(o)
	if err != nil {
		return nil, fmt.Errorf("HINDSIGHT_REDACT_RULES: %w", err)
	}
	return r, nil
}

// Handler answers the API, the dashboard and /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// Route is one route of the router: its path template (a prefix route's
// template is its prefix) and its methods, none meaning any method.
type Route struct {
	Path    string
	Methods []string
}

// Routes lists every route Handler serves, in registration order. The
// adversarial suite (cmd/hindsight) walks it so that a route added without
// an attack case fails it.
func (s *Server) Routes() ([]Route, error) {
	var out []Route
	err := s.router.Walk(func(r *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		p, err := r.GetPathTemplate()
		if err != nil {
			return fmt.Errorf("route without a path: %w", err)
		}
		m, err := r.GetMethods()
		if err != nil && len(m) == 0 {
			m = nil // no method matcher: any method
		}
		out = append(out, Route{Path: p, Methods: m})
		return nil
	})
	return out, err
}

func (s *Server) metricSources() metrics.Sources {
	sem := s.Semantic
	usage := func(f func(vectors.UsageSnapshot) float64) func() float64 {
		if sem.Stage == nil {
			return nil
		}
		return func() float64 { return f(sem.Usage.Snapshot()) }
	}
	var skipped func() float64
	if sem.Stage != nil {
		skipped = func() float64 { _, n := sem.Stage.Counts(); return float64(n) }
	}
	return metrics.Sources{
		EmbedRequests: usage(func(u vectors.UsageSnapshot) float64 { return float64(u.Requests) }),
		EmbedTokens:   usage(func(u vectors.UsageSnapshot) float64 { return float64(u.Tokens + u.EstimatedTokens) }),
		EmbedCostUSD:  usage(func(u vectors.UsageSnapshot) float64 { return u.CostUSD }),
		EmbedErrors:   usage(func(u vectors.UsageSnapshot) float64 { return float64(u.Errors) }),
		EmbedSkipped:  skipped,
		OutboxDepth:   func() float64 { return float64(OutboxDepth(s.Store)()) },
		RecordsBytes: func() float64 {
			fi, err := os.Stat(s.Store.Path())
			if err != nil {
				return 0
			}
			return float64(fi.Size())
		},
		IndexedTotal: func() float64 { return float64(s.Pipeline.Status().Indexed) },
	}
}

// OutboxDepth returns a counter of the sessions waiting for the indexing
// pipeline.
func OutboxDepth(st *kv.Store) func() int {
	return func() int {
		n := 0
		st.View(context.Background(), func(tx *kv.Tx) error {
			n = tx.OutboxLen()
			return nil
		})
		return n
	}
}

// readiness lists why the service cannot fully answer yet (none = ready).
func (s *Server) readiness(ctx context.Context) []string {
	var reasons []string
	if err := s.Store.Ping(ctx); err != nil {
		// Not the error's text: /ready is public, and it names the
		// database's address and user.
		reasons = append(reasons, "records database (PostgreSQL) unavailable: syncs and reads answer 503 until it is back")
	}
	if s.rebuilding.Load() {
		reasons = append(reasons, "full-text index is being rebuilt from the records")
	}
	if s.rebuildFailed.Load() {
		reasons = append(reasons, "full-text index rebuild failed: restart or run hindsight reindex")
	}
	if err := s.Semantic.Unavailable(); err != nil {
		reasons = append(reasons, "vector store unavailable (semantic search is off, embeddings wait): "+err.Error())
	}
	st := s.Pipeline.Status()
	if st.LastErr != nil {
		reasons = append(reasons, "indexing is failing: "+st.LastErr.Error())
	}
	if st.ChunkErr != nil && s.Semantic.Unavailable() == nil {
		reasons = append(reasons, "context and semantic indexing is failing (the work stays queued and is retried): "+st.ChunkErr.Error())
	}
	return append(reasons, s.textReadiness(ctx)...)
}

// Background runs the background work: the index rebuild when needed, then
// the outbox drain. The API answers meanwhile. It returns when ctx ends.
func (s *Server) Background(ctx context.Context) {
	if s.needsRebuild {
		s.rebuildInBackground(ctx)
		if ctx.Err() != nil {
			return
		}
	}
	s.Pipeline.Run(ctx)
}

// Run serves on ln, with the background work and the admin socket, until
// ctx ends; then it finishes in-flight requests (up to 20 seconds) and
// stops the background work. The caller closes the server afterwards.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	s.log.Info().Object("config", loggedConfig(s.cfg)).Msg("effective configuration")
	bgCtx, stopBg := context.WithCancel(context.Background())
	bgDone := make(chan struct{})
	go func() {
		defer close(bgDone)
		s.Background(bgCtx)
	}()
	// Writes are done when this runs: the indexer finishes its step, then
	// stops. What is still on the outbox is indexed at the next start.
	defer func() {
		stopBg()
		<-bgDone
	}()
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.timeouts.header,
		ReadTimeout:       s.timeouts.request,
		IdleTimeout:       s.timeouts.idle,
		WriteTimeout:      s.timeouts.write,
	}
	var red admin.Redacter
	if s.Redactor != nil {
		red = s.Ingest.RedactStored
	}
	stopAdmin, err := admin.Serve(s.cfg.Data, s.Store, s.Accounts, s.cfg.BcryptCost, red, s.log)
	if err != nil {
		// The API does not depend on it.
		s.log.Warn().Err(err).Msg("admin socket unavailable: users/keys commands need the server stopped")
		stopAdmin = func(context.Context) {}
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	flush := time.NewTicker(30 * time.Second)
	defer flush.Stop()
	for {
		select {
		case err := <-errc:
			stopAdmin(context.Background())
			return fmt.Errorf("serve: %w", err)
		case <-flush.C:
			if err := s.Accounts.Flush(ctx); err != nil {
				s.log.Warn().Err(err).Msg("write key last-used times")
			}
			continue
		case <-ctx.Done():
		}
		break
	}
	s.log.Info().Msg("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn().Err(err).Msg("in-flight requests did not finish in time")
	}
	stopAdmin(sctx)
	return nil
}

// Close writes what is buffered (keys' last-used times) and releases the
// index, the vector store and the records.
func (s *Server) Close(ctx context.Context) error {
	var flush error
	if s.Accounts != nil {
		flush = s.Accounts.Flush(ctx)
	}
	return errors.Join(flush, s.Index.Close(), s.Semantic.Close(), s.Store.Close())
}
