package httpd

import (
	"errors"
	"net/http"
	"strings"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/contextanswer"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// parseSearch turns the request into a ranking.Query; nothing after it reads
// the URL again.
func parseSearch(r *http.Request) (ranking.Query, error) {
	v := r.URL.Query()
	q := ranking.Query{UserID: UserID(r.Context()), Text: strings.TrimSpace(v.Get("q"))}
	if q.Text == "" {
		return q, errBadRequest("q is required: pass the search text as ?q=")
	}
	if len(q.Text) > ranking.MaxQueryBytes {
		return q, errBadRequest("q is longer than 16 KiB: shorten the query")
	}
	mode := v.Get("type")
	if mode == "" {
		mode = v.Get("mode")
	}
	m, err := ranking.ParseMode(mode)
	if err != nil {
		return q, errBadRequest(err.Error())
	}
	q.Mode = m
	if q.Limit, err = intParam(r, "limit", 20, 100); err != nil {
		return q, err
	}
	switch e := v.Get("explain"); e {
	case "", "false", "0":
	case "true", "1":
		q.Explain = true
	default:
		return q, errBadRequest("explain must be true or false")
	}
	return q, nil
}

type searchItem struct {
	api.Session
	Score     *float64     `json:"score,omitempty"`
	Snippet   *string      `json:"snippet,omitempty"`
	MatchedIn []string     `json:"matchedIn,omitempty"`
	Legs      *explainLegs `json:"legs,omitempty"`
}

type explainLegs struct {
	Text   *ranking.Leg `json:"text,omitempty"`
	Vector *ranking.Leg `json:"vector,omitempty"`
}

// searchError maps ranking and index errors to client errors. A failing
// dependency (*ranking.UnavailableError) is a 503, in writeError.
func searchError(err error) error {
	switch {
	case errors.Is(err, ranking.ErrNoEmbedder):
		return errBadRequest(err.Error())
	case errors.Is(err, index.ErrBadQuery):
		return errBadRequest(err.Error())
	}
	return err
}

// search: GET /api/search?q=&type=fulltext|semantic|hybrid&limit=&explain=.
func (s *Server) search(w http.ResponseWriter, r *http.Request) error {
	q, err := parseSearch(r)
	if err != nil {
		return err
	}
	res, err := s.cfg.Search.Search(r.Context(), q)
	if err != nil {
		return searchError(err)
	}
	var hits []ingest.Hit[ranking.Result]
	err = s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		hits, err = ingest.HydrateHits(tx, q.UserID, res.Results, ranking.SessionOf)
		return err
	})
	if err != nil {
		return err
	}
	items := make([]searchItem, 0, len(hits))
	for _, hit := range hits {
		it := searchItem{Session: viewSession(hit.Session)}
		if q.Mode != ranking.FullText {
			it.AltID = hit.Session.ID
		}
		if q.Explain {
			r := hit.Result
			score, snippet := r.Score, r.Snippet
			it.Score, it.Snippet, it.MatchedIn = &score, &snippet, r.MatchedIn
			if it.MatchedIn == nil {
				it.MatchedIn = []string{}
			}
			if r.Text != nil || r.Vector != nil {
				it.Legs = &explainLegs{Text: r.Text, Vector: r.Vector}
			}
		}
		items = append(items, it)
	}
	if res.Degraded != "" {
		w.Header().Set("X-Search-Degraded", res.Degraded)
	}
	out := map[string]any{"results": items}
	if res.Partial {
		markPartial(w, out)
	}
	return writeJSON(w, http.StatusOK, out)
}

// context: GET /api/context?q=&limit=&format=text|messages&maxChars=.
func (s *Server) context(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	text := strings.TrimSpace(v.Get("q"))
	if text == "" {
		return errBadRequest("q is required: pass the natural-language query as ?q=")
	}
	if len(text) > ranking.MaxQueryBytes {
		return errBadRequest("q is longer than 16 KiB: shorten the query")
	}
	limit, err := intParam(r, "limit", 5, 50)
	if err != nil {
		return err
	}
	maxChars, err := intParam(r, "maxChars", 12000, 200_000)
	if err != nil {
		return err
	}
	format := v.Get("format")
	if format == "" {
		format = "text"
	}
	if format != "text" && format != "messages" {
		return errBadRequest("format must be text or messages")
	}
	uid := UserID(r.Context())
	hits, degraded, partial, err := s.cfg.Search.ContextHits(r.Context(), uid, text, limit)
	if err != nil {
		return searchError(err)
	}
	var sessions []contextanswer.Session
	err = s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		sessions, err = ingest.HydrateContext(tx, uid, hits)
		return err
	})
	if err != nil {
		return err
	}
	body, msgs, n := contextanswer.Assemble(text, sessions, maxChars)
	if degraded != "" {
		w.Header().Set("X-Search-Degraded", degraded)
	}
	out := map[string]any{"text": body, "sessionCount": n}
	if format == "messages" {
		out = map[string]any{"messages": msgs, "sessionCount": n}
	}
	if partial {
		markPartial(w, out)
	}
	return writeJSON(w, http.StatusOK, out)
}

// PartialHeader is set (to "true") on a search or context answer whose
// full-text search stopped at its budget before it could check every
// candidate of a quoted phrase (index.ErrPartial); the JSON body then has
// "partial": true. The results are right as far as they go, but more or
// better sessions may hold the phrase.
const PartialHeader = "X-Search-Partial"

// markPartial says that the answer out is partial, in a header and in the
// body.
func markPartial(w http.ResponseWriter, out map[string]any) {
	w.Header().Set(PartialHeader, "true")
	out["partial"] = true
}
