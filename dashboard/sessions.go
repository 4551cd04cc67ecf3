package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// maxSearchResults is how deep the Sessions page reads a search (the API's
// limit); pages of it are shown PageSize at a time.
const maxSearchResults = 100

// sessionFilter narrows the Sessions list: every non-empty field must match.
type sessionFilter struct {
	Source, Model, Project string
}

func (f sessionFilter) match(s kv.Session) bool {
	return (f.Source == "" || s.Source == f.Source) && (f.Model == "" || s.Model == f.Model) &&
		(f.Project == "" || s.ProjectLabel() == f.Project)
}

// facets are the filter choices: the distinct values among a user's sessions.
type facets struct {
	Sources, Models, Projects []string
}

func (s *Server) facets(r *http.Request, userID string, keep func(kv.Session) bool) (facets, error) {
	src, mod, proj := map[string]bool{}, map[string]bool{}, map[string]bool{}
	err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		return tx.Sessions(userID, func(ss kv.Session) error {
			if keep != nil && !keep(ss) {
				return nil
			}
			src[ss.Source] = true
			mod[ss.Model] = true
			proj[ss.ProjectLabel()] = true
			return nil
		})
	})
	sorted := func(m map[string]bool) []string {
		delete(m, "")
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	return facets{sorted(src), sorted(mod), sorted(proj)}, err
}

type sessionRow struct {
	kv.Session
	Project string
	Snippet template.HTML
}

type sessionsPage struct {
	basePage
	Q, Mode   string
	Filter    sessionFilter
	Semantic  bool
	Facets    facets
	Rows      []sessionRow
	Searching bool
	// Result counts for a search; Hidden are semantic results too weak to show.
	Total, Hidden int
	From          int // 1-based number of the first row shown
	Degraded      string
	DegradedCause string // the failing dependency, for people ("" when unknown)
	PrevURL       string
	NextURL       string
	FirstURL      string
	Filtered      bool
}

// sessions: GET /sessions?q=&mode=&source=&model=&project=&cursor=&page=
func (s *Server) sessions(w http.ResponseWriter, r *http.Request, v *viewer) error {
	qv := r.URL.Query()
	p := sessionsPage{basePage: s.base(w, v, "Sessions", "sessions"),
		Q: strings.TrimSpace(qv.Get("q")), Mode: qv.Get("mode"), Semantic: s.cfg.Search.Semantic(),
		Filter: sessionFilter{Source: qv.Get("source"), Model: qv.Get("model"), Project: qv.Get("project")}}
	p.Filtered = p.Filter != sessionFilter{}
	if qv.Get("deleted") == "1" {
		p.Flash = "Session deleted. It no longer appears in the list, search, Evals or exports."
	}
	if n, err := strconv.Atoi(qv.Get("deletedProject")); err == nil && n > 0 {
		p.Flash = "Deleted " + plural(n, "session") + " of the project. They no longer appear in the list, search, Evals or exports."
	}
	var err error
	if p.Facets, err = s.facets(r, v.user.ID, nil); err != nil {
		return err
	}
	link := func(extra url.Values) string {
		u := url.Values{}
		for k, val := range map[string]string{"q": p.Q, "mode": p.Mode, "source": p.Filter.Source, "model": p.Filter.Model, "project": p.Filter.Project} {
			if val != "" {
				u.Set(k, val)
			}
		}
		for k, vs := range extra {
			u[k] = vs
		}
		if len(u) == 0 {
			return "/sessions"
		}
		return "/sessions?" + u.Encode()
	}
	status := http.StatusOK
	if p.Q != "" {
		p.Searching = true
		if err := s.searchSessions(r, v, &p, link); err != nil {
			var pe *pageError
			if !errors.As(err, &pe) {
				return err
			}
			p.Error, status = pe.msg, pe.status
		}
	} else if err := s.listSessions(r, v, &p, link); err != nil {
		return err
	}
	if p.Mode == "" {
		p.Mode = string(ranking.FullText)
	}
	return s.render(w, status, "sessions", p)
}

func (s *Server) listSessions(r *http.Request, v *viewer, p *sessionsPage, link func(url.Values) string) error {
	var from kv.Position
	if c := r.URL.Query().Get("cursor"); c != "" {
		ts, id, ok := strings.Cut(c, ".")
		n, err := strconv.ParseInt(ts, 10, 64)
		if !ok || err != nil || len(id) != kv.IDLen {
			return errBadRequest("The page link is malformed. Start again from the first page.")
		}
		from = kv.Position{UpdatedAt: n, ID: id}
		p.FirstURL = link(nil)
	}
	limit := s.cfg.PageSize
	more := false
	err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		return tx.RecentSessions(v.user.ID, from, func(ss kv.Session) bool {
			if !p.Filter.match(ss) {
				return true
			}
			if len(p.Rows) == limit {
				more = true
				return false
			}
			p.Rows = append(p.Rows, sessionRow{Session: ss, Project: ss.ProjectLabel()})
			return true
		})
	})
	if more {
		last := p.Rows[len(p.Rows)-1]
		p.NextURL = link(url.Values{"cursor": {strconv.FormatInt(last.UpdatedAt, 10) + "." + last.ID}})
	}
	return err
}

func (s *Server) searchSessions(r *http.Request, v *viewer, p *sessionsPage, link func(url.Values) string) error {
	mode, err := ranking.ParseMode(p.Mode)
	if err != nil {
		return errBadRequest("Choose full-text, semantic or hybrid search.")
	}
	if len(p.Q) > ranking.MaxQueryBytes {
		return errBadRequest("The search text is longer than 16 KiB: shorten it.")
	}
	page := 1
	if n, err := strconv.Atoi(r.URL.Query().Get("page")); err == nil && n > 1 {
		page = n
	}
	res, err := s.cfg.Search.Search(r.Context(), ranking.Query{UserID: v.user.ID, Text: p.Q, Mode: mode,
		Limit: maxSearchResults, Explain: true})
	var unavailable *ranking.UnavailableError
	if errors.As(err, &unavailable) {
		// A person asked for semantic results while its dependency is down:
		// full-text results with a notice serve them better than an error
		// page (the API answers 503, for clients that retry).
		mode = ranking.FullText
		res, err = s.cfg.Search.Search(r.Context(), ranking.Query{UserID: v.user.ID, Text: p.Q, Mode: mode,
			Limit: maxSearchResults, Explain: true})
		res.Degraded, res.Cause = "semantic", unavailable.Dependency
	}
	switch {
	case errors.Is(err, ranking.ErrNoEmbedder):
		return errBadRequest("Semantic and hybrid search need an embedder, and none is configured on this server. Use full-text search, or see the README (Search) to set one up.")
	case errors.Is(err, index.ErrBadQuery):
		return errBadRequest("That search could not be run: " + err.Error())
	case errors.Is(err, index.ErrUnavailable):
		return &pageError{http.StatusServiceUnavailable, "Search is unavailable for the moment: the search index server does not answer. Your sessions are safe; try again shortly."}
	case err != nil:
		return err
	}
	p.Degraded = res.Degraded
	if res.Degraded != "" {
		p.DegradedCause = ranking.DependencyName(res.Cause)
	}
	results := res.Results
	if mode == ranking.Semantic {
		results = slices.DeleteFunc(slices.Clone(results), func(hit ranking.Result) bool { return hit.Score < s.cfg.MinSemanticScore })
		p.Hidden = len(res.Results) - len(results)
	}
	var hits []ingest.Hit[ranking.Result]
	err = s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		hits, err = ingest.HydrateHits(tx, v.user.ID, results, ranking.SessionOf)
		return err
	})
	if err != nil {
		return err
	}
	var rows []sessionRow
	for _, hit := range hits {
		if p.Filter.match(hit.Session) {
			rows = append(rows, sessionRow{Session: hit.Session, Project: hit.Session.ProjectLabel(), Snippet: snippetHTML(hit.Result.Snippet)})
		}
	}
	p.Total = len(rows)
	start := min((page-1)*s.cfg.PageSize, len(rows))
	end := min(start+s.cfg.PageSize, len(rows))
	p.Rows, p.From = rows[start:end], start+1
	if page > 1 {
		p.PrevURL = link(url.Values{"page": {strconv.Itoa(page - 1)}})
	}
	if end < len(rows) {
		p.NextURL = link(url.Values{"page": {strconv.Itoa(page + 1)}})
	}
	return nil
}

// --- one session ---

// maxPartShown bounds the text of one tool call or result on the page; the
// export has it whole.
const maxPartShown = 64 << 10

type block struct {
	Kind      string // text, tool-call, tool-result, other
	HTML      template.HTML
	Name      string // tool name, or the part type of "other"
	Body      string
	Truncated bool
}

type messageView struct {
	Role             string
	Model            string
	CreatedAt        int64
	PromptTokens     *int64
	CompletionTokens *int64
	DurationMs       *int64
	Blocks           []block
}

type sessionPage struct {
	basePage
	S        kv.Session
	Project  string
	Messages []messageView
	Statuses []string
	Tags     string
	Formats  []string
}

func viewMessage(m kv.Message) messageView {
	mv := messageView{Role: m.Role, Model: m.Model, CreatedAt: m.CreatedAt, PromptTokens: m.PromptTokens,
		CompletionTokens: m.CompletionTokens, DurationMs: m.DurationMs}
	hasText := slices.ContainsFunc(m.Parts, func(p kv.Part) bool { return p.Type == kv.PartText })
	if !hasText && m.TextContent != nil && strings.TrimSpace(*m.TextContent) != "" {
		mv.Blocks = append(mv.Blocks, block{Kind: "text", HTML: markRedactions(renderMarkdown(*m.TextContent))})
	}
	for _, p := range m.Parts {
		switch p.Type {
		case kv.PartText:
			if strings.TrimSpace(p.Content) != "" {
				mv.Blocks = append(mv.Blocks, block{Kind: "text", HTML: markRedactions(renderMarkdown(p.Content))})
			}
		case kv.PartToolCall:
			body, cut := truncateText(prettyJSON(p.Args), maxPartShown)
			mv.Blocks = append(mv.Blocks, block{Kind: "tool-call", Name: cmpOr(p.ToolName, "tool"), Body: body, Truncated: cut})
		case kv.PartToolResult:
			body, cut := truncateText(p.Content, maxPartShown)
			mv.Blocks = append(mv.Blocks, block{Kind: "tool-result", Name: cmpOr(p.ToolName, "tool"), Body: body, Truncated: cut})
		default:
			raw := string(p.Raw)
			if raw == "" {
				raw = p.Content
			}
			body, cut := truncateText(prettyJSON(raw), maxPartShown)
			mv.Blocks = append(mv.Blocks, block{Kind: "other", Name: cmpOr(p.Type, "part"), Body: body, Truncated: cut})
		}
	}
	return mv
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// prettyJSON indents valid JSON and returns anything else as it is.
func prettyJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

// loadSession reads one of the viewer's sessions; another user's id (or a
// deleted session) is ErrNotFound, which becomes the same 404 as a
// session that never existed.
func (s *Server) loadSession(r *http.Request, v *viewer, withMessages bool) (kv.Session, []kv.Message, error) {
	id := mux.Vars(r)["id"]
	var ss kv.Session
	var msgs []kv.Message
	err := s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		if ss, err = tx.Session(v.user.ID, id); err != nil {
			return err
		}
		if !withMessages {
			return nil
		}
		return tx.Messages(v.user.ID, id, func(m kv.Message) error {
			msgs = append(msgs, m)
			return nil
		})
	})
	if errors.Is(err, kv.ErrNotFound) {
		return ss, nil, errNotFound("There is no such session in your account.")
	}
	return ss, msgs, err
}

// session: GET /sessions/{id}
func (s *Server) session(w http.ResponseWriter, r *http.Request, v *viewer) error {
	ss, msgs, err := s.loadSession(r, v, true)
	if err != nil {
		return err
	}
	p := sessionPage{basePage: s.base(w, v, ss.DisplayTitle(), "sessions"), S: ss, Project: ss.ProjectLabel(),
		Statuses: evalStatuses, Tags: strings.Join(ss.Tags, ", "),
		Formats: []string{string(exporter.JSON), string(exporter.Markdown), string(exporter.JSONL)}}
	switch r.URL.Query().Get("saved") {
	case "ready":
		p.Flash = "Marked as eval ready: it is listed on the Evals page."
	case "unready":
		p.Flash = "Removed from Evals."
	case "label":
		p.Flash = "Labels saved."
	}
	for _, m := range msgs {
		p.Messages = append(p.Messages, viewMessage(m))
	}
	return s.render(w, http.StatusOK, "session", p)
}
