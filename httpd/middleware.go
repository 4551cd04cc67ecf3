package httpd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"net/http"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/hindsight-dev/hindsight/accounts"
)

type middleware func(http.Handler) http.Handler

// chain applies middlewares so that the first one listed is the outermost.
func chain(h http.Handler, ms ...middleware) http.Handler {
	for i := len(ms) - 1; i >= 0; i-- {
		h = ms[i](h)
	}
	return h
}

type ctxKey int

const (
	userKey ctxKey = iota
	requestIDKey
	infoKey
)

// reqInfo is filled in by inner middleware and read by the access log, which
// cannot see the inner request's context.
type reqInfo struct{ user, route string }

// UserID returns the authenticated user of a request ("" when none).
func UserID(ctx context.Context) string {
	id, _ := ctx.Value(userKey).(string)
	return id
}

// WithUserID returns ctx carrying an authenticated user id; the dashboard
// uses it after a cookie sign-in so handlers read the owner the same way.
func WithUserID(ctx context.Context, userID string) context.Context {
	return context.WithValue(ctx, userKey, userID)
}

// RequestID returns the request id of a request.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey).(string)
	return id
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestID keeps a caller's sane X-Request-Id (so a plugin's logs and ours
// can be joined) or makes one, and puts a request-scoped logger in the context.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		l := s.log.With().Str("request_id", id).Logger()
		ctx := context.WithValue(r.Context(), requestIDKey, id)
		ctx = context.WithValue(ctx, infoKey, &reqInfo{})
		next.ServeHTTP(w, r.WithContext(l.WithContext(ctx)))
	})
}

func saneID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// recorder notes a response's status and size for the access log, and
// gives each write its own deadline (see progress).
type recorder struct {
	http.ResponseWriter
	rc     *http.ResponseController
	stall  time.Duration // the server's WriteTimeout; 0: no deadlines
	status int
	bytes  int64
}

func newRecorder(w http.ResponseWriter, r *http.Request) *recorder {
	rec := &recorder{ResponseWriter: w, rc: http.NewResponseController(w)}
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok {
		rec.stall = srv.WriteTimeout
	}
	return rec
}

// progress moves the connection's write deadline to the server's
// WriteTimeout from now, before each write: the timeout then bounds how long
// one write may stall on a client that stopped reading, not how long a
// response may take, so long exports and streams go on as long as the
// client keeps reading (http.Server's own WriteTimeout counts from the
// request's headers).
func (r *recorder) progress() {
	if r.stall > 0 {
		_ = r.rc.SetWriteDeadline(time.Now().Add(r.stall))
	}
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.progress()
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	r.progress()
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Flush lets streaming exports flush through the recorder.
func (r *recorder) Flush() {
	r.progress()
	_ = r.rc.Flush()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// accessLog logs one line per request: method, path (never the query string,
// which can hold search text), status, size, duration, user. Server errors log
// at error level (503 aside), the rest at info. It also marks failures to
// read the request body as the client's (bodyReader), so an upload the
// client abandons is a 499, not a 500.
func (s *Server) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = &bodyReader{r.Body}
		}
		rec := newRecorder(w, r)
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		l := zerolog.Ctx(r.Context())
		ev := l.Info()
		// A 503 is a dependency's outage, logged once when it starts (by
		// ranking), not an error of ours at every request.
		if rec.status >= 500 && rec.status != http.StatusServiceUnavailable {
			ev = l.Error()
		}
		if s.cfg.Observe != nil {
			s.cfg.Observe(info(r.Context()).route, r.Method, rec.status, time.Since(start))
		}
		ev.Str("method", r.Method).Str("path", r.URL.Path).Int("status", rec.status).
			Int64("bytes", rec.bytes).Dur("duration", time.Since(start)).
			Str("user", info(r.Context()).user).Msg("request")
	})
}

// bodyReader is a request body whose read errors are *bodyError: whatever
// goes wrong while the body arrives (the client hangs up, stalls past the
// server's read deadline, or garbles the chunked framing) is the client's
// doing, whichever handler was reading.
type bodyReader struct{ io.ReadCloser }

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = &bodyError{err}
	}
	return n, err
}

// bodyError is a failure to read the request body from the client.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "read request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// routeName records the matched route's template for metrics (ids in paths
// must never become label values).
func routeName(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt := mux.CurrentRoute(r); rt != nil {
			if tpl, err := rt.GetPathTemplate(); err == nil {
				info(r.Context()).route = tpl
			}
		}
		next.ServeHTTP(w, r)
	})
}

func info(ctx context.Context) *reqInfo {
	if i, ok := ctx.Value(infoKey).(*reqInfo); ok {
		return i
	}
	return &reqInfo{}
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				// The stack finds the bug; the client gets the request id
				// that finds this line, and the server keeps serving.
				zerolog.Ctx(r.Context()).Error().Str("panic", fmt.Sprint(v)).Bytes("stack", debug.Stack()).
					Str("path", r.URL.Path).Msg("handler panicked")
				he := internalError(r)
				_ = writeJSON(w, he.status, map[string]string{"error": he.code, "message": he.msg})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// cors adds the CORS headers decisions.md fixes to every response of the
// API that plugins and browser pages call from other origins (corsPath),
// errors and downloads included, and answers OPTIONS there with 204. Other
// paths (/metrics, /ready, the dashboard's pages and files) get no CORS
// headers, and an OPTIONS there is routed like any other method.
func cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !corsPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "GET, POST, PATCH, DELETE, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, X-Search-Degraded, X-Export-Sessions, X-Export-TestCases, Content-Disposition, Retry-After")
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// corsPath reports whether p is on the cross-origin API: /health, the sync
// and read API (/sync/..., /api/...) and /mcp.
func corsPath(p string) bool {
	p = path.Clean(p)
	return p == "/health" || p == "/mcp" || strings.HasPrefix(p, "/sync/") || strings.HasPrefix(p, "/api/")
}

// Authenticated wraps h in the API's key check, per-key rate limit and body
// cap, for handlers mounted beside the REST routes (the MCP endpoint); h reads
// the user with UserID.
func (s *Server) Authenticated(h http.Handler) http.Handler { return s.authenticated(h) }

// authenticated requires a valid Bearer key, applies the per-key rate limit and
// caps the request body.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		key, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
			if auth == "" {
				s.writeError(w, r, errUnauthorized("missing Authorization header: send Authorization: Bearer osk_..."))
			} else {
				s.writeError(w, r, errUnauthorized("Authorization header must be: Bearer osk_..."))
			}
			return
		}
		key = strings.TrimSpace(key)
		userID, err := s.cfg.Auth.Authenticate(r.Context(), key)
		if err != nil {
			if err == accounts.ErrUnauthorized {
				err = errUnauthorized("the API key is invalid or revoked")
			}
			s.writeError(w, r, err)
			return
		}
		if s.limiter != nil {
			if wait := s.limiter.take(accounts.Hash(key)); wait > 0 {
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				s.writeError(w, r, &httpError{status: http.StatusTooManyRequests, code: "Too Many Requests",
					msg: fmt.Sprintf("rate limit exceeded for this API key; retry after %d s", secs)})
				return
			}
		}
		info(r.Context()).user = userID
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.Limits.MaxBody)
		ctx := WithUserID(r.Context(), userID)
		l := zerolog.Ctx(ctx).With().Str("user", userID).Logger()
		next.ServeHTTP(w, r.WithContext(l.WithContext(ctx)))
	})
}

// limiter keeps a token bucket (rate.Limiter) per API key. Buckets that have
// refilled are dropped, at most once a minute: a full bucket is the same as a
// new one, so memory stays bounded by the keys active recently.
type limiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	swept   time.Time
}

func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	if burst < 1 {
		burst = int(math.Max(1, perSecond))
	}
	return &limiter{limit: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*rate.Limiter{}}
}

// take spends one token for key, or returns how long until one is available
// (and spends nothing).
func (l *limiter) take(key string) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b, ok := l.buckets[key]
	if !ok {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = b
	}
	r := b.ReserveN(now, 1)
	if wait := r.DelayFrom(now); wait > 0 {
		r.CancelAt(now)
		return wait
	}
	return 0
}

// size is how many keys have a bucket.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}
