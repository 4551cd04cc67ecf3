// Package httpd serves Hindsight's REST API: it translates HTTP requests into
// calls on ingest, accounts and the read side, and errors into status codes in
// exactly one place (writeError). It opens no store itself; main hands it the
// parts it uses.
package httpd

import (
	"context"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/redact"
)

// Authenticator maps a presented API key to its user id.
type Authenticator interface {
	Authenticate(ctx context.Context, key string) (userID string, err error)
}

// Records is the store: reads, and the labelling writes (eval metadata is
// not sync data, so it does not go through ingest).
type Records interface {
	View(ctx context.Context, fn func(*kv.Tx) error) error
	Commit(ctx context.Context, fn func(*kv.Tx) error) error
}

// Config holds what the server needs. Zero limits take documented defaults.
type Config struct {
	Auth    Authenticator
	Ingest  *ingest.Service
	Records Records
	Search  *ranking.Engine
	Limits  ingest.Limits
	// RatePerSecond and RateBurst configure the per-key token bucket;
	// RatePerSecond 0 disables rate limiting.
	RatePerSecond float64
	RateBurst     int
	Logger        zerolog.Logger
	Now           func() time.Time
	// Observe, when set, is told about every request (metrics).
	Observe func(route, method string, status int, d time.Duration)
	// Ready, when set, returns the reasons the service is not ready (none = ready).
	Ready func(ctx context.Context) []string
	// Redactor redacts eval labels before they are stored (nil: none); sync
	// writes are redacted by Ingest.
	Redactor *redact.Redactor
}

// Server is the REST API. Install registers its routes on a router that main owns.
type Server struct {
	cfg     Config
	limiter *limiter
	log     zerolog.Logger
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	cfg.Limits = cfg.Limits.WithDefaults()
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, log: cfg.Logger}
	if cfg.RatePerSecond > 0 {
		s.limiter = newLimiter(cfg.RatePerSecond, cfg.RateBurst, cfg.Now)
	}
	return s
}

// Install registers the API routes on r. Every route except /health requires
// an API key.
func (s *Server) Install(r *mux.Router) {
	r.Use(routeName)
	r.Handle("/health", s.handle(s.health)).Methods(http.MethodGet, http.MethodHead)
	r.Handle("/ready", s.handle(s.ready)).Methods(http.MethodGet, http.MethodHead)

	api := func(path string, h func(http.ResponseWriter, *http.Request) error, methods ...string) {
		r.Handle(path, s.authenticated(s.handle(h))).Methods(methods...)
	}
	api("/sync/session", s.syncSession, http.MethodPost)
	api("/sync/message", s.syncMessage, http.MethodPost)
	api("/sync/batch", s.syncBatch, http.MethodPost)
	api("/sync/sessions/list", s.syncSessionsList, http.MethodGet)
	api("/api/sessions", s.listSessions, http.MethodGet)
	api("/api/sessions", s.deleteSessions, http.MethodDelete)
	api("/api/sessions/deleted", s.listDeleted, http.MethodGet)
	api("/api/sessions/deleted/allow", s.allowSync, http.MethodPost)
	api("/api/account/data", s.deleteAccountData, http.MethodDelete)
	api("/api/sessions/get", s.getSession, http.MethodGet)
	api("/api/stats", s.stats, http.MethodGet)
	api("/api/search", s.search, http.MethodGet)
	api("/api/context", s.context, http.MethodGet)
	api("/api/export", s.exportSession, http.MethodGet)
	api("/api/export/evals", s.exportEvals, http.MethodGet)
	api("/api/sessions/eval", s.labelSessions, http.MethodPatch)
	api("/api/evals", s.listEvals, http.MethodGet)
}

// Handler wraps a router in the middleware every response passes through. The
// order matters and is outermost first:
//   - requestID: every response and log line carries X-Request-Id;
//   - accessLog: after requestID so each line has the id; sees final statuses,
//     including the 500 of a recovered panic;
//   - recoverPanics: a panic anywhere becomes a logged 500 with the request id;
//   - cors: CORS headers on every response of the cross-origin API (corsPath),
//     errors and downloads included, and OPTIONS there answered before
//     routing or authentication; none on /metrics and the dashboard.
func (s *Server) Handler(r *mux.Router) http.Handler {
	r.NotFoundHandler = s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return errNotFound("no such endpoint: " + r.URL.Path)
	})
	r.MethodNotAllowedHandler = s.handle(func(w http.ResponseWriter, r *http.Request) error {
		return &httpError{status: http.StatusMethodNotAllowed, code: "Method Not Allowed",
			msg: r.Method + " is not supported on " + r.URL.Path}
	})
	return chain(r, s.requestID, s.accessLog, s.recoverPanics, cors)
}

// ready: 200 when the index and vector store are usable, else 503 with reasons.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	var reasons []string
	if s.cfg.Ready != nil {
		reasons = s.cfg.Ready(r.Context())
	}
	if len(reasons) > 0 {
		return writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not ready", "reasons": reasons})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"status": "ready"})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "timestamp": s.cfg.Now().UnixMilli()})
}
