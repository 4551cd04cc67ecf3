package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// httpError is an error with the status and body the client should see.
type httpError struct {
	status     int
	code       string        // the short "error" string
	msg        string        // the "message": what to do about it
	retryAfter time.Duration // sent as Retry-After (whole seconds, at least 1) when set
}

func (e *httpError) Error() string { return e.msg }

func errBadRequest(msg string) error {
	return &httpError{status: http.StatusBadRequest, code: "Bad Request", msg: msg}
}
func errNotFound(msg string) error {
	return &httpError{status: http.StatusNotFound, code: "Not Found", msg: msg}
}
func errUnauthorized(msg string) error {
	return &httpError{status: http.StatusUnauthorized, code: "Unauthorized", msg: msg}
}

// handle adapts a handler that returns an error; writeError is the one place
// errors become statuses.
func (s *Server) handle(f func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			s.writeError(w, r, err)
		}
	})
}

// writeError maps err to a status and a JSON body {"error", "message"}.
// Internals never reach the body: a 500 names only the request id, and is
// logged with the error.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	var inv *ingest.InvalidError
	var tooBig *http.MaxBytesError
	var unavailable *ranking.UnavailableError
	var panicked *kv.PanicError
	var body *bodyError
	switch {
	case errors.As(err, &he):
	case errors.As(err, &body):
		// The client's side of the connection failed mid-body: not ours to
		// log as an error, nor a 500 in the metrics.
		he = bodyErrorStatus(body)
	case errors.As(err, &tooBig):
		he = &httpError{status: http.StatusRequestEntityTooLarge, code: "Payload Too Large",
			msg: "request body exceeds the limit of " + humanBytes(tooBig.Limit) + ": split it into smaller requests"}
	case errors.As(err, &inv):
		he = &httpError{status: http.StatusBadRequest, code: "Bad Request", msg: inv.Msg}
	case errors.Is(err, kv.ErrNotFound):
		he = &httpError{status: http.StatusNotFound, code: "Not Found", msg: "no such resource for this account"}
	case errors.Is(err, index.ErrUnavailable):
		// The text index lives in another service (Weaviate) that does not
		// answer now; the records are fine and syncs keep being accepted.
		he = &httpError{http.StatusServiceUnavailable, "Service Unavailable",
			"full-text search is unavailable for the moment (its index server does not answer); retry shortly", 5 * time.Second}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this response.
		he = &httpError{status: statusClientClosed, code: "Client Closed Request", msg: "request cancelled"}
	case errors.Is(err, kv.ErrBusy):
		// PostgreSQL aborted the write for conflicts with other writers
		// at each of its attempts: nothing of it was stored.
		zerolog.Ctx(r.Context()).Warn().Err(err).Str("path", r.URL.Path).Msg("records database busy: answered 503")
		he = &httpError{http.StatusServiceUnavailable, "Service Unavailable",
			"the records database is too busy with conflicting writes for this one; nothing of it was stored: retry shortly", time.Second}
	case errors.Is(err, kv.ErrUnavailable):
		// The records' database (PostgreSQL) cannot be reached now: not a
		// fault of the request. A write that failed so may still have
		// landed; every sync is an upsert, so sending it again is safe.
		zerolog.Ctx(r.Context()).Warn().Err(err).Str("path", r.URL.Path).Msg("records database unavailable: answered 503")
		he = &httpError{http.StatusServiceUnavailable, "Service Unavailable",
			"the records database is unavailable for the moment; retry shortly (sending a sync again is safe)", recordsRetryAfter}
	case errors.As(err, &unavailable):
		// A dependency's outage, not a fault of ours: the client may retry.
		he = &httpError{http.StatusServiceUnavailable, "semantic_unavailable",
			"semantic search is unavailable: " + ranking.DependencyName(unavailable.Dependency) +
				" is failing; retry later, or use type=hybrid (which answers from full-text meanwhile)", unavailable.RetryAfter}
	case diskFull(err):
		// Nothing of this request was stored; the write may be sent again.
		zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg("disk full: write refused")
		he = &httpError{http.StatusInsufficientStorage, "Insufficient Storage",
			"the server's disk is full: nothing of this request was stored; retry once space is freed", 10 * time.Second}
	case errors.As(err, &panicked):
		zerolog.Ctx(r.Context()).Error().Str("panic", fmt.Sprint(panicked.Value)).Bytes("stack", panicked.Stack).
			Str("path", r.URL.Path).Msg("write panicked; rolled back")
		he = internalError(r)
	default:
		zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg("internal error")
		he = internalError(r)
	}
	if he.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(he.retryAfter.Seconds()))))
	}
	_ = writeJSON(w, he.status, map[string]string{"error": he.code, "message": he.msg})
}

// recordsRetryAfter is the Retry-After of a 503 for the records' database:
// a PostgreSQL restart or failover takes seconds.
const recordsRetryAfter = 5 * time.Second

// bodyErrorStatus is the status of a request body that could not be read:
// 408 when it arrived too slowly for the server's read deadline, 499 (the
// de-facto "client closed request") when the client hung up or the
// connection broke, and 400 for a malformed body framing.
func bodyErrorStatus(e *bodyError) *httpError {
	var ne net.Error
	switch {
	case errors.Is(e, os.ErrDeadlineExceeded) || errors.As(e, &ne) && ne.Timeout():
		return &httpError{status: http.StatusRequestTimeout, code: "Request Timeout",
			msg: "the request body arrived too slowly; send it again"}
	case errors.Is(e, io.ErrUnexpectedEOF) || errors.Is(e, net.ErrClosed) || errors.Is(e, syscall.ECONNRESET) ||
		errors.Is(e, syscall.EPIPE) || errors.As(e, &ne):
		return &httpError{status: statusClientClosed, code: "Client Closed Request", msg: "the request body was cut off"}
	}
	return &httpError{status: http.StatusBadRequest, code: "Bad Request", msg: "the request body could not be read: " + e.err.Error()}
}

// statusClientClosed is the status of a request the client abandoned; no
// client reads it, but the access log and the metrics count it.
const statusClientClosed = 499

// internalError is the 500 a client sees: only the request id, which
// finds the logged error.
func internalError(r *http.Request) *httpError {
	return &httpError{status: http.StatusInternalServerError, code: "Internal Server Error",
		msg: "the server failed to handle this request; request id " + RequestID(r.Context())}
}

// diskFull reports whether err is the filesystem out of space (or quota).
// Some layers format the cause with %s rather than wrap it, hence the text.
func diskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	return strings.Contains(err.Error(), syscall.ENOSPC.Error())
}

// writeJSON encodes v into a buffer first, so an encoding failure is a clean
// error rather than half a body.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func isNotFound(err error) bool { return errors.Is(err, kv.ErrNotFound) }
