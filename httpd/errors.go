package httpd

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// httpError is an error with the status and body the client should see.
type httpError struct {
	status int
	code   string // the short "error" string
	msg    string // the "message": what to do about it
}

func (e *httpError) Error() string { return e.msg }

func errBadRequest(msg string) error { return &httpError{http.StatusBadRequest, "Bad Request", msg} }
func errNotFound(msg string) error   { return &httpError{http.StatusNotFound, "Not Found", msg} }
func errUnauthorized(msg string) error {
	return &httpError{http.StatusUnauthorized, "Unauthorized", msg}
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
	switch {
	case errors.As(err, &he):
	case errors.As(err, &tooBig):
		he = &httpError{http.StatusRequestEntityTooLarge, "Payload Too Large",
			"request body exceeds the limit of " + humanBytes(tooBig.Limit) + ": split it into smaller requests"}
	case errors.As(err, &inv):
		he = &httpError{http.StatusBadRequest, "Bad Request", inv.Msg}
	case errors.Is(err, kv.ErrNotFound):
		he = &httpError{http.StatusNotFound, "Not Found", "no such resource for this account"}
	case errors.Is(err, index.ErrUnavailable):
		// The text index lives in another service (Weaviate) that does not
		// answer now; the records are fine and syncs keep being accepted.
		w.Header().Set("Retry-After", "5")
		he = &httpError{http.StatusServiceUnavailable, "Service Unavailable",
			"full-text search is unavailable for the moment (its index server does not answer); retry shortly"}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads this response.
		he = &httpError{499, "Client Closed Request", "request cancelled"}
	default:
		zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg("internal error")
		he = &httpError{http.StatusInternalServerError, "Internal Server Error",
			"the server failed to handle this request; request id " + RequestID(r.Context())}
	}
	_ = writeJSON(w, he.status, map[string]string{"error": he.code, "message": he.msg})
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
