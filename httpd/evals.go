package httpd

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/kv"
)

// Labelling limits (PATCH /api/sessions/eval).
const (
	maxEvalIDs       = 500     // sessions per request, the /api/sessions page maximum
	maxEvalTags      = 50      // tags per session
	maxEvalTagChars  = 100     // characters per tag
	maxEvalTextBytes = 1 << 20 // evalNotes and expectedOutput
)

var evalStatuses = []string{kv.EvalGolden, kv.EvalCorrect, kv.EvalIncorrect, kv.EvalNeedsReview}

// evalPatch is a decoded PATCH /api/sessions/eval body. A nil field was
// absent (or null) and leaves the stored value alone.
type evalPatch struct {
	ids      []string
	ready    *bool
	status   *string
	notes    *string
	tags     *[]string
	expected *string
}

func decodeEvalPatch(body []byte) (evalPatch, error) {
	var p evalPatch
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return p, errBadRequest("body must be a JSON object: {\"ids\": [...], \"evalStatus\": ...}")
	}
	has := func(name string) bool {
		raw, ok := f[name]
		return ok && string(raw) != "null"
	}
	if !has("ids") {
		return p, errBadRequest("ids is required: a list of session ids from /api/sessions or /api/evals")
	}
	if err := json.Unmarshal(f["ids"], &p.ids); err != nil {
		return p, errBadRequest("ids must be a list of session id strings")
	}
	p.ids = dedupe(p.ids)
	switch {
	case len(p.ids) == 0:
		return p, errBadRequest("ids is empty: name at least one session")
	case len(p.ids) > maxEvalIDs:
		return p, errBadRequest(fmt.Sprintf("at most %d ids per request, got %d: split the request", maxEvalIDs, len(p.ids)))
	case slices.Contains(p.ids, ""):
		return p, errBadRequest("ids holds an empty string")
	}
	if has("evalReady") {
		p.ready = new(bool)
		if json.Unmarshal(f["evalReady"], p.ready) != nil {
			return p, errBadRequest("evalReady must be true or false")
		}
	}
	if has("evalStatus") {
		p.status = new(string)
		if json.Unmarshal(f["evalStatus"], p.status) != nil || !slices.Contains(evalStatuses, *p.status) {
			return p, errBadRequest("evalStatus must be one of " + strings.Join(evalStatuses, ", "))
		}
	}
	text := func(name string) (*string, error) {
		if !has(name) {
			return nil, nil
		}
		var s string
		if json.Unmarshal(f[name], &s) != nil {
			return nil, errBadRequest(name + " must be a string")
		}
		if len(s) > maxEvalTextBytes {
			return nil, errBadRequest(fmt.Sprintf("%s is %d bytes; the limit is %s", name, len(s), humanBytes(maxEvalTextBytes)))
		}
		return &s, nil
	}
	var err error
	if p.notes, err = text("evalNotes"); err != nil {
		return p, err
	}
	if p.expected, err = text("expectedOutput"); err != nil {
		return p, err
	}
	if has("evalTags") {
		var tags []string
		if json.Unmarshal(f["evalTags"], &tags) != nil {
			return p, errBadRequest("evalTags must be a list of strings")
		}
		clean := make([]string, 0, len(tags))
		for i, t := range tags {
			t = strings.TrimSpace(t)
			switch {
			case t == "":
				return p, errBadRequest(fmt.Sprintf("evalTags[%d] is empty", i))
			case utf8.RuneCountInString(t) > maxEvalTagChars:
				return p, errBadRequest(fmt.Sprintf("evalTags[%d] is longer than %d characters", i, maxEvalTagChars))
			case strings.Contains(t, ","):
				return p, errBadRequest(fmt.Sprintf("evalTags[%d] holds a comma, which the tags filter uses as a separator", i))
			}
			clean = append(clean, t)
		}
		clean = dedupe(clean)
		if len(clean) > maxEvalTags {
			return p, errBadRequest(fmt.Sprintf("at most %d evalTags, got %d", maxEvalTags, len(clean)))
		}
		p.tags = &clean
	}
	if p.ready == nil && p.status == nil && p.notes == nil && p.tags == nil && p.expected == nil {
		return p, errBadRequest("nothing to change: send at least one of evalReady, evalStatus, evalNotes, evalTags, expectedOutput")
	}
	return p, nil
}

// apply returns e with the patch applied at time now (ms). Marking a session
// eval-ready when it has no status gives it needs_review (a status it already
// had, from an earlier review, is kept). reviewedAt becomes now when the
// status or the notes change.
func (p evalPatch) apply(e kv.Eval, now int64) kv.Eval {
	old := e
	if p.ready != nil {
		e.Ready = *p.ready
	}
	switch {
	case p.status != nil:
		e.Status = *p.status
	case e.Ready && !old.Ready && e.Status == "":
		e.Status = kv.EvalNeedsReview
	}
	if p.notes != nil {
		e.Notes = *p.notes
	}
	if p.tags != nil {
		e.Tags = nil
		if len(*p.tags) > 0 {
			e.Tags = slices.Clone(*p.tags)
		}
	}
	if p.expected != nil {
		e.ExpectedOutput = *p.expected
	}
	if e.Status != old.Status || e.Notes != old.Notes {
		e.ReviewedAt = now
	}
	return e
}

func sameEval(a, b kv.Eval) bool {
	return a.Ready == b.Ready && a.Status == b.Status && a.Notes == b.Notes && slices.Equal(a.Tags, b.Tags) &&
		a.ExpectedOutput == b.ExpectedOutput && a.ReviewedAt == b.ReviewedAt
}

// labelSessions: PATCH /api/sessions/eval. Every id must be the caller's, or
// the whole request is a 404 and nothing changes (one transaction). Labels do
// not change a session's updatedAt, so labelling never reorders
// /api/sessions. Response {"ok": true, "updated": n, "sessions": [...]}, where
// n counts the sessions whose eval metadata actually changed and sessions are
// the read objects of all requested ids, in request order.
func (s *Server) labelSessions(w http.ResponseWriter, r *http.Request) error {
	store := s.cfg.Records
	body, err := readBody(r)
	if err != nil {
		return err
	}
	p, err := decodeEvalPatch(body)
	if err != nil {
		return err
	}
	uid, now := UserID(r.Context()), s.cfg.Now().UnixMilli()
	var updated int
	var out []sessionView
	err = store.Commit(r.Context(), func(tx *kv.Tx) error {
		updated, out = 0, make([]sessionView, 0, len(p.ids)) // Commit may run this more than once
		sessions := make([]kv.Session, 0, len(p.ids))
		for _, id := range p.ids {
			ss, err := tx.Session(uid, id)
			if isNotFound(err) {
				return errNotFound("no session with id " + strconv.Quote(id) + " in this account; nothing was changed")
			} else if err != nil {
				return err
			}
			sessions = append(sessions, ss)
		}
		for _, ss := range sessions {
			if e := p.apply(ss.Eval, now); !sameEval(e, ss.Eval) {
				var err error
				if ss, err = tx.PutSessionEval(uid, ss.ID, e); err != nil {
					return fmt.Errorf("label session %s: %w", ss.ID, err)
				}
				updated++
			}
			out = append(out, viewSession(ss))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "updated": updated, "sessions": out})
}

// evalFilter selects sessions for /api/evals and /api/export/evals. Every
// condition set must hold: status is any of the listed statuses, tags are
// all present on the session, source and model match exactly, and createdAt
// lies in [from, to].
type evalFilter struct {
	statuses []string
	tags     []string
	source   string
	model    string
	from, to int64 // ms, inclusive; to 0 means no upper bound
}

func (f evalFilter) match(s kv.Session) bool {
	switch {
	case len(f.statuses) > 0 && !slices.Contains(f.statuses, s.Status),
		f.source != "" && s.Source != f.source,
		f.model != "" && s.Model != f.model,
		s.CreatedAt < f.from,
		f.to != 0 && s.CreatedAt > f.to:
		return false
	}
	for _, t := range f.tags {
		if !slices.Contains(s.Tags, t) {
			return false
		}
	}
	return true
}

// splitList splits a comma-separated parameter, dropping blanks.
func splitList(raw string) []string {
	var out []string
	for v := range strings.SplitSeq(raw, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return dedupe(out)
}

func dedupe(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := list[:0]
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// parseEvalFilter reads status, tag/tags (both comma-separated; the session
// must carry all), source, model, date_from and date_to.
func parseEvalFilter(q url.Values) (evalFilter, error) {
	f := evalFilter{
		statuses: splitList(q.Get("status")),
		tags:     splitList(q.Get("tags") + "," + q.Get("tag")),
		source:   strings.TrimSpace(q.Get("source")),
		model:    strings.TrimSpace(q.Get("model")),
	}
	for _, st := range f.statuses {
		if !slices.Contains(evalStatuses, st) {
			return f, errBadRequest(fmt.Sprintf("status %q is not an eval status: use %s (comma-separated for several)",
				st, strings.Join(evalStatuses, ", ")))
		}
	}
	var err error
	if f.from, err = parseDate(q, "date_from", false); err != nil {
		return f, err
	}
	if f.to, err = parseDate(q, "date_to", true); err != nil {
		return f, err
	}
	if f.to != 0 && f.from > f.to {
		return f, errBadRequest("date_from is after date_to")
	}
	return f, nil
}

// parseDate reads a date parameter: YYYY-MM-DD (UTC; as an upper bound it
// includes the whole day) or a millisecond timestamp. Absent is 0.
func parseDate(q url.Values, name string, end bool) (int64, error) {
	raw := strings.TrimSpace(q.Get(name))
	if raw == "" {
		return 0, nil
	}
	if ms, err := strconv.ParseInt(raw, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	d, err := time.Parse(time.DateOnly, raw)
	if err != nil {
		return 0, errBadRequest(fmt.Sprintf("%s must be a date (YYYY-MM-DD, UTC) or a millisecond timestamp, got %q", name, raw))
	}
	if end {
		return d.AddDate(0, 0, 1).UnixMilli() - 1, nil
	}
	return d.UnixMilli(), nil
}

// byReview orders sessions most recently reviewed first (never-reviewed
// last), then most recently updated, then by id.
func byReview(a, b kv.Session) int {
	return cmp.Or(cmp.Compare(b.ReviewedAt, a.ReviewedAt), cmp.Compare(b.UpdatedAt, a.UpdatedAt), strings.Compare(a.ID, b.ID))
}

// listEvals: GET /api/evals?status=&tag=&source=&model=&limit= lists the
// eval-ready sessions (the Evals view), most recently reviewed first, as
// {"sessions": [...], "total": n}; total counts every match, sessions holds
// at most limit (default 1000, maximum 5000) of them.
func (s *Server) listEvals(w http.ResponseWriter, r *http.Request) error {
	f, err := parseEvalFilter(r.URL.Query())
	if err != nil {
		return err
	}
	limit, err := intParam(r, "limit", 1000, 5000)
	if err != nil {
		return err
	}
	var found []kv.Session
	err = s.cfg.Records.View(r.Context(), func(tx *kv.Tx) error {
		found = found[:0]
		return tx.Sessions(UserID(r.Context()), func(ss kv.Session) error {
			if ss.Ready && f.match(ss) {
				found = append(found, ss)
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	slices.SortFunc(found, byReview)
	out := make([]sessionView, 0, min(len(found), limit))
	for _, ss := range found[:min(len(found), limit)] {
		out = append(out, viewSession(ss))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"sessions": out, "total": len(found)})
}
