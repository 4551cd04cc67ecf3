package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/hindsight-dev/hindsight/kv"
)

// Remote answers through a Hindsight server's REST API with one API key:
// what `hindsight mcp` runs for assistants that start a stdio server. The
// server decides whose sessions are seen, exactly as for any API client.
type Remote struct {
	base string
	key  string
	http *http.Client
	// noEmbedder is set once the server said it has no embedder, so the
	// default mode stops asking for hybrid first.
	noEmbedder atomic.Bool
}

// NewRemote returns a backend on the server at baseURL (http or https).
func NewRemote(baseURL, key string, client *http.Client) *Remote {
	return &Remote{base: strings.TrimRight(baseURL, "/"), key: key, http: client}
}

// get sends GET path?query and returns the response of a 2xx; other
// statuses become errors carrying the server's message.
func (r *Remote) get(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path+"?"+query.Encode(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.key)
	req.Header.Set("User-Agent", "hindsight-mcp")
	resp, err := r.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, inputErr(fmt.Sprintf("cannot reach the Hindsight server at %s: %v", r.base, err))
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var e struct{ Error, Message string }
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		msg = e.Message
	}
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil, ErrNotFound
	case http.StatusUnauthorized:
		return nil, inputErr("the Hindsight server refused the API key (401): check HINDSIGHT_API_KEY (" + msg + ")")
	case http.StatusTooManyRequests:
		return nil, inputErr("the Hindsight server is rate limiting this API key: retry after " + resp.Header.Get("Retry-After") + " s")
	case http.StatusServiceUnavailable:
		return nil, inputErr("the Hindsight server is unavailable for the moment (" + msg + "): retry after " + resp.Header.Get("Retry-After") + " s")
	}
	return nil, inputErr(fmt.Sprintf("the Hindsight server answered %d: %s", resp.StatusCode, msg))
}

// getJSON is get, decoding the body into out.
func (r *Remote) getJSON(ctx context.Context, path string, query url.Values, out any) (http.Header, error) {
	resp, err := r.get(ctx, path, query)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, inputErr(fmt.Sprintf("GET %s: the server's answer is not the JSON expected: %v", path, err))
	}
	return resp.Header, nil
}

// restSession is the session read object of the REST API, the fields used.
type restSession struct {
	ID           string  `json:"id"`
	Source       string  `json:"source"`
	Title        string  `json:"title"`
	ProjectPath  string  `json:"projectPath"`
	ProjectName  string  `json:"projectName"`
	Model        string  `json:"model"`
	MessageCount int64   `json:"messageCount"`
	UpdatedAt    int64   `json:"updatedAt"`
	Score        float64 `json:"score"`
	Snippet      string  `json:"snippet"`
}

func (s restSession) view() Session {
	return viewSession(kv.Session{ID: s.ID, Title: s.Title, Source: s.Source, ProjectPath: s.ProjectPath, ProjectName: s.ProjectName,
		Model: s.Model, UpdatedAt: s.UpdatedAt, MessageCount: s.MessageCount})
}

// Search implements Backend with GET /api/search (explain=true for scores
// and snippets).
func (r *Remote) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	mode := q.Mode
	if mode == "" {
		mode = "hybrid"
		if r.noEmbedder.Load() {
			mode = "fulltext"
		}
	}
	res, err := r.search(ctx, q, mode)
	if q.Mode == "" && mode == "hybrid" && isNoEmbedder(err) {
		r.noEmbedder.Store(true)
		res, err = r.search(ctx, q, "fulltext")
	}
	return res, err
}

// isNoEmbedder recognises the REST API's answer to a semantic or hybrid
// search on a server without an embedder (ranking.ErrNoEmbedder's message).
func isNoEmbedder(err error) bool {
	var ie *InputError
	return errors.As(err, &ie) && strings.Contains(ie.Msg, "semantic search needs an embedder")
}

func (r *Remote) search(ctx context.Context, q SearchQuery, mode string) (SearchResult, error) {
	var body struct {
		Results []restSession
		Partial bool
	}
	h, err := r.getJSON(ctx, "/api/search", url.Values{"q": {q.Text}, "type": {mode},
		"limit": {strconv.Itoa(q.Limit)}, "explain": {"true"}}, &body)
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Mode: mode, Degraded: h.Get("X-Search-Degraded"), Partial: body.Partial}
	for _, s := range body.Results {
		out.Hits = append(out.Hits, Hit{Session: s.view(), Score: s.Score, Snippet: plainSnippet(s.Snippet)})
	}
	return out, nil
}

// Context implements Backend with GET /api/context?format=text.
func (r *Remote) Context(ctx context.Context, q ContextQuery) (ContextResult, error) {
	var body struct {
		Text         string
		SessionCount int
		Partial      bool
	}
	h, err := r.getJSON(ctx, "/api/context", url.Values{"q": {q.Text}, "format": {"text"},
		"limit": {strconv.Itoa(q.Limit)}, "maxChars": {strconv.Itoa(q.MaxChars)}}, &body)
	if err != nil {
		return ContextResult{}, err
	}
	return ContextResult{Text: body.Text, Sessions: body.SessionCount, Degraded: h.Get("X-Search-Degraded"), Partial: body.Partial}, nil
}

// SessionMarkdown implements Backend with GET /api/export?format=markdown.
func (r *Remote) SessionMarkdown(ctx context.Context, id string) (io.ReadCloser, error) {
	resp, err := r.get(ctx, "/api/export", url.Values{"id": {id}, "format": {"markdown"}})
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// listPage is how many sessions one GET /api/sessions asks for.
const listPage = 200

// Sessions implements Backend with GET /api/sessions, following nextCursor.
func (r *Remote) Sessions(ctx context.Context, source string, fn func(Session) bool) error {
	q := url.Values{"limit": {strconv.Itoa(listPage)}}
	if source != "" {
		q.Set("source", source)
	}
	for {
		var body struct {
			Sessions   []restSession
			NextCursor string
		}
		if _, err := r.getJSON(ctx, "/api/sessions", q, &body); err != nil {
			return err
		}
		for _, s := range body.Sessions {
			if !fn(s.view()) {
				return nil
			}
		}
		if body.NextCursor == "" {
			return nil
		}
		q.Set("cursor", body.NextCursor)
	}
}
