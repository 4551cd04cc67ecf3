package mcpd

import (
	"context"
	"errors"
	"io"
)

// Backend is what the tools need from Hindsight, for one user. Local answers
// in the server's process; Remote through a server's REST API.
type Backend interface {
	// Search ranks the user's sessions. An empty Mode is the default: hybrid
	// when the deployment has an embedder, else full-text.
	Search(ctx context.Context, q SearchQuery) (SearchResult, error)
	// Context assembles past-session context for a query (the text format
	// of GET /api/context).
	Context(ctx context.Context, q ContextQuery) (ContextResult, error)
	// SessionMarkdown streams a session as the markdown export renders it
	// (GET /api/export?format=markdown with its defaults). An id that is not
	// the user's is ErrNotFound.
	SessionMarkdown(ctx context.Context, id string) (io.ReadCloser, error)
	// Sessions calls fn with the user's sessions, most recently updated
	// first, only those of source when it is set, until fn returns false.
	Sessions(ctx context.Context, source string, fn func(Session) bool) error
}

// SearchQuery is one search.
type SearchQuery struct {
	Text  string
	Mode  string // fulltext, semantic, hybrid; "" = the deployment's default
	Limit int
}

// SearchResult is a ranked list. Degraded names a leg that failed and was
// left out ("semantic": hybrid ran on full-text alone), as X-Search-Degraded
// does in the REST API.
type SearchResult struct {
	Mode     string
	Hits     []Hit
	Degraded string
	// Partial: the full-text search stopped at its budget before it could
	// check every candidate of a quoted phrase ("partial": true in the
	// REST API); more sessions may hold it.
	Partial bool
}

// Hit is one ranked session.
type Hit struct {
	Session
	Score   float64
	Snippet string // plain text; empty when only the semantic leg found it
}

// Session is what the tools show of a session.
type Session struct {
	ID       string
	Title    string
	Source   string
	Project  string // project name, else path
	Path     string // project path
	Model    string
	Updated  int64 // ms since the epoch
	Messages int64
}

// ContextQuery is one context request.
type ContextQuery struct {
	Text     string
	Limit    int
	MaxChars int
}

// ContextResult is the assembled context.
type ContextResult struct {
	Text     string
	Sessions int
	Degraded string
	Partial  bool // as SearchResult.Partial
}

// ErrNotFound: no such session in the caller's account (whether it does not
// exist or is someone else's is not told apart).
var ErrNotFound = errors.New("not found")

// InputError is a failure the caller can act on (a bad query, semantic search
// without an embedder, the server refusing the key); its message is shown to
// the model as is. Other errors are logged and reported without detail.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

func inputErr(msg string) error { return &InputError{Msg: msg} }
