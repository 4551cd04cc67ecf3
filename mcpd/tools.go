package mcpd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// Bounds of the tools' inputs; every output is bounded by them.
const (
	defaultSearchLimit  = 10
	maxSearchLimit      = 50
	filterDepth         = 100 // hits fetched when source or project narrows them
	defaultContextChars = 8000
	maxContextChars     = 50_000
	defaultContextLimit = 5
	maxContextLimit     = 20
	defaultPageChars    = 12_000
	minPageChars        = 1000
	maxPageChars        = 100_000
	defaultListLimit    = 20
	maxListLimit        = 100
	maxTitleBytes       = 200
	maxSnippetBytes     = 300
)

type searchIn struct {
	Query   string `json:"query" jsonschema:"What to look for: words from the problem, an error message, a file or function name, or a natural-language question."`
	Mode    string `json:"mode,omitempty" jsonschema:"fulltext (exact words, fastest), semantic (meaning, needs an embedder) or hybrid (both fused). Default: hybrid when the server has an embedder, else fulltext."`
	Limit   int    `json:"limit,omitempty" jsonschema:"How many sessions to return (default 10, at most 50)."`
	Source  string `json:"source,omitempty" jsonschema:"Only sessions from this assistant, e.g. claude-code or opencode."`
	Project string `json:"project,omitempty" jsonschema:"Only sessions whose project name or path contains this text (case-insensitive)."`
}

// hitOut is one search result as the tool returns it.
type hitOut struct {
	ID      string  `json:"id"`
	Title   string  `json:"title"`
	Source  string  `json:"source"`
	Project string  `json:"project,omitempty"`
	Updated string  `json:"updated"` // RFC 3339, UTC
	Score   float64 `json:"score"`
	Snippet string  `json:"snippet,omitempty"`
}

type searchOut struct {
	Mode     string   `json:"mode"`
	Degraded string   `json:"degraded,omitempty"`
	Partial  bool     `json:"partial,omitempty"`
	Results  []hitOut `json:"results"`
}

type contextIn struct {
	Query    string `json:"query" jsonschema:"The question or task to find past context for, in natural language."`
	MaxChars int    `json:"maxChars,omitempty" jsonschema:"Budget for the excerpts' message text in characters (default 8000, at most 50000)."`
	Limit    int    `json:"limit,omitempty" jsonschema:"How many sessions to draw from (default 5, at most 20)."`
}

type sessionIn struct {
	ID          string `json:"id" jsonschema:"The session id, as search_sessions or list_sessions return it."`
	FromMessage int    `json:"fromMessage,omitempty" jsonschema:"The first message to show, counting from 1 (default 1). The end of each page says what to pass to read on."`
	MaxChars    int    `json:"maxChars,omitempty" jsonschema:"Page size in characters (default 12000, 1000 to 100000). Pages end between messages."`
}

type listIn struct {
	Source  string `json:"source,omitempty" jsonschema:"Only sessions from this assistant, e.g. claude-code or opencode."`
	Project string `json:"project,omitempty" jsonschema:"Only sessions whose project name or path contains this text (case-insensitive)."`
	Limit   int    `json:"limit,omitempty" jsonschema:"How many sessions to return (default 20, at most 100)."`
}

// sessionOut is one listed session.
type sessionOut struct {
	ID       string `json:"id"`
	Title    string `json:"title"`
	Source   string `json:"source"`
	Project  string `json:"project,omitempty"`
	Model    string `json:"model,omitempty"`
	Updated  string `json:"updated"`
	Messages int64  `json:"messages"`
}

type listOut struct {
	Sessions []sessionOut `json:"sessions"`
}

// BackendFor returns the backend of the user making a tool call.
type BackendFor func(req *mcp.CallToolRequest) (Backend, error)

// NewServer returns an MCP server offering the four tools over the backend
// backendFor picks for each call. Errors that are not the caller's to fix
// are logged on log and reported without detail.
func NewServer(backendFor BackendFor, log zerolog.Logger, version string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hindsight", Title: "Hindsight", Version: version}, &mcp.ServerOptions{
		Instructions: "Hindsight keeps the user's past coding-assistant sessions. Search them (search_sessions, get_context) when the user refers to earlier work or a problem may have been solved before; read one with get_session.",
		// Tools only: no logging capability to advertise.
		Capabilities: &mcp.ServerCapabilities{},
	})
	t := &tools{backendFor: backendFor, log: log}
	mcp.AddTool(s, &mcp.Tool{
		Name:  "search_sessions",
		Title: "Search past sessions",
		Description: "Search the user's past coding-assistant sessions (Claude Code, opencode, Cursor and others, kept by Hindsight) for a topic, error message, file, command or decision. " +
			"Use it when the user refers to earlier work (\"how did we fix the login redirect last month?\", \"what did we decide about caching?\") or when the current problem looks like one solved before. " +
			"Returns the best-matching sessions, best first: id, title, source, project, last update, score and a short snippet. Then read one with get_session, or call get_context for the relevant excerpts directly.",
		InputSchema: schema[searchIn](func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength, p["query"].MaxLength = ptr(1), ptr(ranking.MaxQueryBytes)
			p["mode"].Enum = []any{"fulltext", "semantic", "hybrid"}
			bound(p["limit"], 1, maxSearchLimit, defaultSearchLimit)
		}),
		Annotations: readOnly,
	}, t.search)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "get_context",
		Title: "Get context from past sessions",
		Description: "Get the excerpts of the user's past sessions that are most relevant to a question, ready to read: the best-matching user/assistant exchanges, grouped by session with title, project and model, within a size budget. " +
			"Use it when you want the substance of how something was done before (the fix, the commands, the explanation) without opening whole sessions. Returns plain text.",
		InputSchema: schema[contextIn](func(p map[string]*jsonschema.Schema) {
			p["query"].MinLength, p["query"].MaxLength = ptr(1), ptr(ranking.MaxQueryBytes)
			bound(p["maxChars"], 1, maxContextChars, defaultContextChars)
			bound(p["limit"], 1, maxContextLimit, defaultContextLimit)
		}),
		Annotations: readOnly,
	}, t.context)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "get_session",
		Title: "Read a past session",
		Description: "Read one of the user's past sessions as Markdown: title, project, model, then every message in order with its tool calls and results, a page at a time. " +
			"Pages end between messages; the end of a page says which fromMessage to pass to read on. Use it after search_sessions or list_sessions gave you a session id.",
		InputSchema: schema[sessionIn](func(p map[string]*jsonschema.Schema) {
			p["id"].MinLength, p["id"].MaxLength = ptr(1), ptr(200)
			p["fromMessage"].Minimum = ptr(0.0)
			bound(p["maxChars"], minPageChars, maxPageChars, defaultPageChars)
		}),
		Annotations: readOnly,
	}, t.session)
	mcp.AddTool(s, &mcp.Tool{
		Name:  "list_sessions",
		Title: "List recent sessions",
		Description: "List the user's most recently updated sessions, newest first, optionally only those of one assistant (source) or project. " +
			"Use it for questions about recency (\"what was I working on yesterday?\", \"my last session in this project\") rather than content; search_sessions finds by content.",
		InputSchema: schema[listIn](func(p map[string]*jsonschema.Schema) {
			bound(p["limit"], 1, maxListLimit, defaultListLimit)
		}),
		Annotations: readOnly,
	}, t.list)
	return s
}

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}

func ptr[T any](v T) *T { return &v }

// schema infers In's input schema and lets adjust add what Go types cannot
// say (bounds, enums, defaults).
func schema[In any](adjust func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpd: input schema of %T: %v", *new(In), err)) // a programming error
	}
	adjust(s.Properties)
	return s
}

func bound(s *jsonschema.Schema, lo, hi, def int) {
	s.Minimum, s.Maximum = ptr(float64(lo)), ptr(float64(hi))
	s.Default, _ = json.Marshal(def)
}

type tools struct {
	backendFor BackendFor
	log        zerolog.Logger
}

// fail turns a backend error into the tool error the model sees.
func (t *tools) fail(tool string, err error) error {
	var ie *InputError
	switch {
	case errors.As(err, &ie):
		return ie
	case errors.Is(err, ErrNotFound):
		return err
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errors.New("the request was cancelled or timed out")
	case errors.Is(err, kv.ErrUnavailable):
		t.log.Warn().Err(err).Str("tool", tool).Msg("mcp tool failed: records database unavailable")
		return errors.New("the Hindsight server's records database is unavailable for the moment: retry shortly")
	}
	t.log.Error().Err(err).Str("tool", tool).Msg("mcp tool failed")
	return errors.New("internal error: the Hindsight server failed to answer (see its log)")
}

func checkQuery(q string) (string, error) {
	q = strings.TrimSpace(q)
	switch {
	case q == "":
		return "", inputErr("query is required: pass the words or question to search for")
	case len(q) > ranking.MaxQueryBytes:
		return "", inputErr("query is longer than 16 KiB: shorten it")
	}
	return q, nil
}

// orDefault is v when it is set, else def; then at most hi.
func orDefault(v, def, hi int) int {
	if v <= 0 {
		v = def
	}
	return min(v, hi)
}

func (t *tools) search(ctx context.Context, req *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
	text, err := checkQuery(in.Query)
	if err != nil {
		return nil, searchOut{}, err
	}
	switch in.Mode {
	case "", "fulltext", "semantic", "hybrid":
	default:
		return nil, searchOut{}, inputErr(fmt.Sprintf("mode must be fulltext, semantic or hybrid, got %q", in.Mode))
	}
	b, err := t.backendFor(req)
	if err != nil {
		return nil, searchOut{}, t.fail("search_sessions", err)
	}
	limit := orDefault(in.Limit, defaultSearchLimit, maxSearchLimit)
	depth := limit
	if in.Source != "" || in.Project != "" {
		depth = filterDepth
	}
	res, err := b.Search(ctx, SearchQuery{Text: text, Mode: in.Mode, Limit: depth})
	if err != nil {
		return nil, searchOut{}, t.fail("search_sessions", err)
	}
	out := searchOut{Mode: res.Mode, Degraded: res.Degraded, Partial: res.Partial, Results: []hitOut{}}
	for _, h := range res.Hits {
		if len(out.Results) == limit {
			break
		}
		if !matches(h.Session, in.Source, in.Project) {
			continue
		}
		out.Results = append(out.Results, hitOut{
			ID: h.ID, Title: title(h.Title), Source: h.Source, Project: clip(h.Project, maxTitleBytes),
			Updated: stamp(h.Updated), Score: h.Score, Snippet: clip(h.Snippet, maxSnippetBytes),
		})
	}
	var b2 strings.Builder
	switch n := len(out.Results); n {
	case 0:
		fmt.Fprintf(&b2, "No sessions match %q (%s search%s).", clip(text, 200), out.Mode, filters(in.Source, in.Project))
	default:
		fmt.Fprintf(&b2, "%d session%s for %q (%s search%s), best first:\n", n, plural(n), clip(text, 200), out.Mode, filters(in.Source, in.Project))
	}
	for i, h := range out.Results {
		fmt.Fprintf(&b2, "\n%d. %s\n   id: %s · source: %s", i+1, h.Title, h.ID, h.Source)
		if h.Project != "" {
			fmt.Fprintf(&b2, " · project: %s", h.Project)
		}
		fmt.Fprintf(&b2, " · updated: %s · score: %.4g\n", h.Updated[:10], h.Score)
		if h.Snippet != "" {
			fmt.Fprintf(&b2, "   %s\n", h.Snippet)
		}
	}
	if out.Degraded != "" {
		fmt.Fprintf(&b2, "\n%s\n", degradedNote(out.Degraded))
	}
	if out.Partial {
		fmt.Fprintf(&b2, "\n%s\n", partialNote)
	}
	if len(out.Results) > 0 {
		b2.WriteString("\nRead a session with get_session(id), or get the relevant excerpts with get_context(query).")
	}
	return textResult(b2.String()), out, nil
}

func (t *tools) context(ctx context.Context, req *mcp.CallToolRequest, in contextIn) (*mcp.CallToolResult, any, error) {
	text, err := checkQuery(in.Query)
	if err != nil {
		return nil, nil, err
	}
	b, err := t.backendFor(req)
	if err != nil {
		return nil, nil, t.fail("get_context", err)
	}
	res, err := b.Context(ctx, ContextQuery{Text: text,
		Limit:    orDefault(in.Limit, defaultContextLimit, maxContextLimit),
		MaxChars: orDefault(in.MaxChars, defaultContextChars, maxContextChars)})
	if err != nil {
		return nil, nil, t.fail("get_context", err)
	}
	body := res.Text
	if res.Sessions == 0 {
		body += "\nNo past session matched."
	}
	if res.Degraded != "" {
		body += "\n" + degradedNote(res.Degraded) + "\n"
	}
	if res.Partial {
		body += "\n" + partialNote + "\n"
	}
	return textResult(body), nil, nil
}

func (t *tools) session(ctx context.Context, req *mcp.CallToolRequest, in sessionIn) (*mcp.CallToolResult, any, error) {
	id := strings.TrimSpace(in.ID)
	if id == "" {
		return nil, nil, inputErr("id is required: pass a session id from search_sessions or list_sessions")
	}
	if in.FromMessage < 0 {
		return nil, nil, inputErr("fromMessage counts from 1")
	}
	maxChars := orDefault(in.MaxChars, defaultPageChars, maxPageChars)
	if maxChars < minPageChars {
		return nil, nil, inputErr(fmt.Sprintf("maxChars must be at least %d", minPageChars))
	}
	b, err := t.backendFor(req)
	if err != nil {
		return nil, nil, t.fail("get_session", err)
	}
	md, err := b.SessionMarkdown(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil, fmt.Errorf("not found: no session with id %q in this account", clip(id, 200))
	}
	if err != nil {
		return nil, nil, t.fail("get_session", err)
	}
	defer md.Close()
	p, err := readPage(md, max(in.FromMessage, 1), maxChars)
	if err != nil {
		return nil, nil, t.fail("get_session", err)
	}
	if p.total > 0 && p.from > p.total {
		return nil, nil, inputErr(fmt.Sprintf("fromMessage %d is past the end: the session has %d messages", p.from, p.total))
	}
	return textResult(p.text + "\n" + p.note(id)), nil, nil
}

func (t *tools) list(ctx context.Context, req *mcp.CallToolRequest, in listIn) (*mcp.CallToolResult, listOut, error) {
	b, err := t.backendFor(req)
	if err != nil {
		return nil, listOut{}, t.fail("list_sessions", err)
	}
	limit := orDefault(in.Limit, defaultListLimit, maxListLimit)
	out := listOut{Sessions: []sessionOut{}}
	more := false
	err = b.Sessions(ctx, in.Source, func(s Session) bool {
		if !matches(s, in.Source, in.Project) {
			return true
		}
		if len(out.Sessions) == limit {
			more = true
			return false
		}
		out.Sessions = append(out.Sessions, sessionOut{ID: s.ID, Title: title(s.Title), Source: s.Source,
			Project: clip(s.Project, maxTitleBytes), Model: clip(s.Model, 100), Updated: stamp(s.Updated), Messages: s.Messages})
		return true
	})
	if err != nil {
		return nil, listOut{}, t.fail("list_sessions", err)
	}
	var w strings.Builder
	if len(out.Sessions) == 0 {
		fmt.Fprintf(&w, "No sessions%s.", filters(in.Source, in.Project))
	} else {
		fmt.Fprintf(&w, "%d most recently updated session%s%s, newest first:\n", len(out.Sessions), plural(len(out.Sessions)), filters(in.Source, in.Project))
	}
	for i, s := range out.Sessions {
		fmt.Fprintf(&w, "\n%d. %s\n   id: %s · source: %s", i+1, s.Title, s.ID, s.Source)
		if s.Project != "" {
			fmt.Fprintf(&w, " · project: %s", s.Project)
		}
		fmt.Fprintf(&w, " · updated: %s · %d message%s\n", s.Updated[:16], s.Messages, plural(int(s.Messages)))
	}
	if more {
		fmt.Fprintf(&w, "\nMore sessions are older than these; pass a larger limit (at most %d) to see more.", maxListLimit)
	}
	return textResult(w.String()), out, nil
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// matches reports whether s passes the source and project filters.
func matches(s Session, source, project string) bool {
	if source != "" && s.Source != source {
		return false
	}
	if project == "" {
		return true
	}
	p := strings.ToLower(project)
	return strings.Contains(strings.ToLower(s.Project), p) || strings.Contains(strings.ToLower(s.Path), p)
}

func filters(source, project string) string {
	var f []string
	if source != "" {
		f = append(f, "source "+clip(source, 100))
	}
	if project != "" {
		f = append(f, "project "+clip(project, 100))
	}
	if len(f) == 0 {
		return ""
	}
	return ", " + strings.Join(f, ", ")
}

// partialNote tells the model that a search gave up before it was done.
const partialNote = "Note: this search stopped at its budget before it had checked every session holding the quoted phrase's words, so more (or better) sessions may hold it. Quote a longer or rarer phrase to narrow it."

func degradedNote(leg string) string {
	if leg == "semantic" {
		return "Note: the semantic part of this search failed (the embedding provider did not answer in time), so these results come from full-text search alone."
	}
	return "Note: part of this search failed (" + leg + "); the results are incomplete."
}

// title is a session's display title (kv.Session.DisplayTitle, which the
// backends set) on one line and clipped.
func title(t string) string {
	return clip(strings.Join(strings.Fields(t), " "), maxTitleBytes)
}

// clip shortens s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return cutRunes(s, n-len("…")) + "…"
}

func stamp(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
