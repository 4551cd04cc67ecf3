package httpd

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/usage"
)

// viewSession is s as the read endpoints return it (decisions.md, Reads).
func viewSession(s kv.Session) api.Session {
	v := api.Session{
		ID: s.ID, ExternalID: s.ExternalID, Source: s.Source, Title: s.Title,
		ProjectPath: s.ProjectPath, ProjectName: s.ProjectName, GitBranch: s.GitBranch, Model: s.Model, Provider: s.Provider,
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, TotalTokens: s.TotalTokens,
		Cost: s.Cost, DurationMs: s.DurationMs, MessageCount: s.MessageCount,
		Visibility: "private", IsPublic: s.Public, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		EvalStatus: s.Status, EvalNotes: s.Notes, EvalTags: s.Tags, ExpectedOutput: s.ExpectedOutput,
		ReviewedAt: s.ReviewedAt,
	}
	if s.Public {
		v.Visibility = "public"
	}
	if s.Ready || s.Status != "" {
		ready := s.Ready
		v.EvalReady = &ready
	}
	return v
}

// partView renders a part as the client sent it: known types in the flat
// shape, other types exactly as received.
func partView(p kv.Part) json.RawMessage {
	if len(p.Raw) > 0 {
		return p.Raw
	}
	str := func(s string) json.RawMessage {
		if s == "" {
			return nil
		}
		b, _ := json.Marshal(s)
		return b
	}
	b, _ := json.Marshal(api.Part{Type: p.Type, Content: str(p.Content), ToolName: p.ToolName, Args: str(p.Args)})
	return b
}

func viewMessage(m kv.Message) api.Message {
	v := api.Message{ID: m.ID, ExternalID: m.ExternalID, Role: m.Role, Parts: make(api.Parts, 0, len(m.Parts)),
		TextContent: m.TextContent, Model: m.Model, PromptTokens: m.PromptTokens,
		CompletionTokens: m.CompletionTokens, DurationMs: m.DurationMs, CreatedAt: m.CreatedAt}
	for _, p := range m.Parts {
		v.Parts = append(v.Parts, partView(p))
	}
	return v
}

// intParam parses an optional positive integer query parameter, clamping it to
// max. Absent means def; a non-number or a value below 1 is a 400.
func intParam(r *http.Request, name string, def, max int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil {
		// Too big for an int, or written as a decimal float (1e300, 20.0):
		// still a whole number? Inf, NaN and hex floats are not numbers here.
		f, ferr := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if !decimalNumber.MatchString(strings.TrimSpace(raw)) || ferr != nil && !errors.Is(ferr, strconv.ErrRange) || f != math.Trunc(f) {
			return 0, errBadRequest(fmt.Sprintf("%s must be a whole number, got %q", name, raw))
		}
		switch {
		case f < 1:
			n = 0
		case f > float64(max):
			n = max
		default:
			n = int(f)
		}
	}
	if n < 1 {
		return 0, errBadRequest(fmt.Sprintf("%s must be at least 1, got %d", name, n))
	}
	return min(n, max), nil
}

var decimalNumber = regexp.MustCompile(`^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$`)

// cursor encodes a list position as "<updatedAt>.<id>".
func formatCursor(p kv.Position) string { return strconv.FormatInt(p.UpdatedAt, 10) + "." + p.ID }

func parseCursor(raw string) (kv.Position, error) {
	ts, id, ok := strings.Cut(raw, ".")
	n, err := strconv.ParseInt(ts, 10, 64)
	if !ok || err != nil || len(id) != kv.IDLen {
		return kv.Position{}, errBadRequest("cursor is malformed: pass the nextCursor of a previous response")
	}
	return kv.Position{UpdatedAt: n, ID: id}, nil
}

// listSessions: GET /api/sessions?limit=&source=&cursor=, most recently updated first.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 50, 500)
	if err != nil {
		return err
	}
	var from kv.Position
	if c := r.URL.Query().Get("cursor"); c != "" {
		if from, err = parseCursor(c); err != nil {
			return err
		}
	}
	source := r.URL.Query().Get("source")
	out := make([]api.Session, 0, min(limit, 64))
	var next string
	err = s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		return tx.RecentSessions(UserID(r.Context()), from, func(ss kv.Session) bool {
			if source != "" && ss.Source != source {
				return true
			}
			if len(out) == limit {
				next = formatCursor(kv.Position{UpdatedAt: out[len(out)-1].UpdatedAt, ID: out[len(out)-1].ID})
				return false
			}
			out = append(out, viewSession(ss))
			return true
		})
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, api.SessionList{Sessions: out, NextCursor: next})
}

// getSession: GET /api/sessions/get?id=; another user's id is a 404.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" {
		return errBadRequest("id is required: pass the session's id from /api/sessions")
	}
	var sess kv.Session
	msgs := []api.Message{}
	err := s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		uid := UserID(r.Context())
		if sess, err = tx.Session(uid, id); err != nil {
			return err
		}
		return tx.Messages(uid, id, func(m kv.Message) error {
			msgs = append(msgs, viewMessage(m))
			return nil
		})
	})
	if err != nil {
		if isNotFound(err) {
			return errNotFound("no session with id " + strconv.Quote(id) + " in this account")
		}
		return err
	}
	return writeJSON(w, http.StatusOK, api.SessionDetail{Session: viewSession(sess), Messages: msgs})
}

// stats: GET /api/stats, from usage.Of (the dashboard's Usage page sums the
// same way). modelUsage is keyed by model name ("unknown" when a session
// recorded none).
func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	var rep usage.Report
	err := s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		rep, err = usage.Of(tx, UserID(r.Context()), time.Time{}, 0)
		return err
	})
	if err != nil {
		return err
	}
	st := api.Stats{SessionCount: rep.All.Sessions, MessageCount: rep.All.Messages, TotalTokens: rep.All.Tokens,
		PromptTokens: rep.All.PromptTokens, CompletionTokens: rep.All.CompletionTokens, TotalCost: rep.All.Cost,
		TotalDurationMs: rep.All.DurationMs, ModelUsage: make(map[string]api.ModelUsage, len(rep.Models)),
		Redactions: make(map[string]int64, len(rep.Redactions))}
	for _, m := range rep.Models {
		st.ModelUsage[m.Name] = api.ModelUsage{Tokens: m.Tokens, Cost: m.Cost, Sessions: m.Sessions}
	}
	for _, x := range rep.Redactions {
		st.Redactions[x.Rule] = x.Count
	}
	return writeJSON(w, http.StatusOK, st)
}
