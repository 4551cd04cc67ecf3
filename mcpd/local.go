package mcpd

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/hindsight-dev/hindsight/contextanswer"
	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// Records is the read side of the store; *kv.Store satisfies it.
type Records interface {
	View(ctx context.Context, fn func(*kv.Tx) error) error
}

// Local answers in the server's process, over the store and the ranking
// engine, for the user it is made for: every read is keyed by that user, so
// another user's session id is simply not found.
type Local struct {
	records Records
	search  *ranking.Engine
	userID  string
}

// NewLocal returns the backend of userID.
func NewLocal(records Records, search *ranking.Engine, userID string) *Local {
	return &Local{records: records, search: search, userID: userID}
}

// viewSession is s as the tools show it, whether it was read from the store
// or through the REST API (restSession.view).
func viewSession(s kv.Session) Session {
	return Session{ID: s.ID, Title: s.DisplayTitle(), Source: s.Source, Project: s.ProjectLabel(), Path: s.ProjectPath,
		Model: s.Model, Updated: s.UpdatedAt, Messages: s.MessageCount}
}

// engineError maps ranking and index errors the caller can act on. A
// failing dependency is a tool error naming it, as the REST API's 503 does.
func engineError(err error) error {
	var ue *ranking.UnavailableError
	switch {
	case errors.Is(err, ranking.ErrNoEmbedder), errors.Is(err, index.ErrBadQuery):
		return inputErr(err.Error())
	case errors.As(err, &ue):
		return inputErr(fmt.Sprintf("semantic search is unavailable right now: %s is failing (retry in about %d s). Use mode hybrid, which falls back to full-text meanwhile, or fulltext.",
			ranking.DependencyName(ue.Dependency), int(math.Ceil(ue.RetryAfter.Seconds()))))
	}
	return err
}

// Search implements Backend.
func (l *Local) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	mode := ranking.Mode(q.Mode)
	if mode == "" {
		mode = ranking.FullText
		if l.search.Semantic() {
			mode = ranking.Hybrid
		}
	}
	res, err := l.search.Search(ctx, ranking.Query{UserID: l.userID, Text: q.Text, Mode: mode, Limit: q.Limit, Explain: true})
	if err != nil {
		return SearchResult{}, engineError(err)
	}
	out := SearchResult{Mode: string(mode), Degraded: res.Degraded, Partial: res.Partial}
	var hits []ingest.Hit[ranking.Result]
	err = l.records.View(ctx, func(tx *kv.Tx) error {
		var err error
		hits, err = ingest.HydrateHits(tx, l.userID, res.Results, ranking.SessionOf)
		return err
	})
	for _, h := range hits {
		out.Hits = append(out.Hits, Hit{Session: viewSession(h.Session), Score: h.Result.Score, Snippet: plainSnippet(h.Result.Snippet)})
	}
	return out, err
}

var unmark = strings.NewReplacer("<mark>", "", "</mark>", "")

// plainSnippet turns the index's HTML snippet into plain text.
func plainSnippet(s string) string { return html.UnescapeString(unmark.Replace(s)) }

// Context implements Backend: the retrieval and assembly of GET /api/context.
func (l *Local) Context(ctx context.Context, q ContextQuery) (ContextResult, error) {
	hits, degraded, partial, err := l.search.ContextHits(ctx, l.userID, q.Text, q.Limit)
	if err != nil {
		return ContextResult{}, engineError(err)
	}
	var sessions []contextanswer.Session
	err = l.records.View(ctx, func(tx *kv.Tx) error {
		var err error
		sessions, err = ingest.HydrateContext(tx, l.userID, hits)
		return err
	})
	if err != nil {
		return ContextResult{}, err
	}
	text, _, n := contextanswer.Assemble(q.Text, sessions, q.MaxChars)
	return ContextResult{Text: text, Sessions: n, Degraded: degraded, Partial: partial}, nil
}

// SessionMarkdown implements Backend: the export's markdown with its
// defaults for one session (home directories anonymised, tool calls and
// results included), written as it is read.
func (l *Local) SessionMarkdown(ctx context.Context, id string) (io.ReadCloser, error) {
	var s kv.Session
	err := l.records.View(ctx, func(tx *kv.Tx) error {
		var err error
		s, err = tx.Session(l.userID, id)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	pr, pw := io.Pipe()
	go func() {
		msgs := exporter.StoredMessages(ctx, l.records, l.userID, id, s.NextSeq)
		pw.CloseWithError(exporter.WriteSession(pw, exporter.Markdown, s, msgs, exporter.Options{IncludeTools: true}))
	}()
	return pr, nil
}

// Sessions implements Backend.
func (l *Local) Sessions(ctx context.Context, source string, fn func(Session) bool) error {
	return l.records.View(ctx, func(tx *kv.Tx) error {
		return tx.RecentSessions(l.userID, kv.Position{}, func(s kv.Session) bool {
			if source != "" && s.Source != source {
				return true
			}
			return fn(viewSession(s))
		})
	})
}
