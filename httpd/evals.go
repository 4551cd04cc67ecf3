package httpd

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/evals"
	"github.com/hindsight-dev/hindsight/kv"
)

// decodeEvalPatch reads a PATCH /api/sessions/eval body: the JSON types
// here, the values in evals (the rules the dashboard applies too).
func decodeEvalPatch(body []byte) ([]string, evals.Patch, error) {
	var p evals.Patch
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return nil, p, errBadRequest("body must be a JSON object: {\"ids\": [...], \"evalStatus\": ...}")
	}
	has := func(name string) bool {
		raw, ok := f[name]
		return ok && string(raw) != "null"
	}
	if !has("ids") {
		return nil, p, errBadRequest("ids is required: a list of session ids from /api/sessions or /api/evals")
	}
	var ids []string
	if err := json.Unmarshal(f["ids"], &ids); err != nil {
		return nil, p, errBadRequest("ids must be a list of session id strings")
	}
	if has("evalReady") {
		p.Ready = new(bool)
		if json.Unmarshal(f["evalReady"], p.Ready) != nil {
			return nil, p, errBadRequest("evalReady must be true or false")
		}
	}
	if has("evalStatus") {
		p.Status = new(string)
		if json.Unmarshal(f["evalStatus"], p.Status) != nil {
			return nil, p, errBadRequest("evalStatus must be one of " + strings.Join(evals.Statuses, ", "))
		}
	}
	for _, t := range []struct {
		name string
		dst  **string
	}{{"evalNotes", &p.Notes}, {"expectedOutput", &p.ExpectedOutput}} {
		if has(t.name) {
			*t.dst = new(string)
			if json.Unmarshal(f[t.name], *t.dst) != nil {
				return nil, p, errBadRequest(t.name + " must be a string")
			}
		}
	}
	if has("evalTags") {
		p.Tags = new([]string)
		if json.Unmarshal(f["evalTags"], p.Tags) != nil {
			return nil, p, errBadRequest("evalTags must be a list of strings")
		}
	}
	ids, err := evals.CheckIDs(ids)
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return nil, p, errBadRequest(err.Error())
	}
	return ids, p, nil
}

// labelSessions: PATCH /api/sessions/eval. Every id must be the caller's, or
// the whole request is a 404 and nothing changes (one transaction). Labels do
// not change a session's updatedAt, so labelling never reorders
// /api/sessions. Response {"ok": true, "updated": n, "sessions": [...]}, where
// n counts the sessions whose eval metadata actually changed and sessions are
// the read objects of all requested ids, in request order.
func (s *Server) labelSessions(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	ids, p, err := decodeEvalPatch(body)
	if err != nil {
		return err
	}
	uid, now := UserID(r.Context()), s.cfg.Now().UnixMilli()
	var updated int
	var labelled []kv.Session
	err = s.cfg.Records.Commit(r.Context(), func(tx *kv.Tx) error {
		var err error
		labelled, updated, err = evals.Label(tx, uid, ids, p, now, s.cfg.Redactor)
		return err
	})
	var nf *evals.NotFoundError
	if errors.As(err, &nf) {
		return errNotFound(nf.Error())
	} else if err != nil {
		return err
	}
	out := make([]api.Session, 0, len(labelled))
	for _, ss := range labelled {
		out = append(out, viewSession(ss))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "updated": updated, "sessions": out})
}

// splitList splits a comma-separated parameter, dropping blanks.
func splitList(raw string) []string {
	var out []string
	for v := range strings.SplitSeq(raw, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return evals.Dedupe(out)
}

// parseEvalFilter reads status, tag/tags (both comma-separated; the session
// must carry all), source, model, date_from and date_to.
func parseEvalFilter(q url.Values) (evals.Filter, error) {
	f := evals.Filter{
		Statuses: splitList(q.Get("status")),
		Tags:     splitList(q.Get("tags") + "," + q.Get("tag")),
		Source:   strings.TrimSpace(q.Get("source")),
		Model:    strings.TrimSpace(q.Get("model")),
	}
	var err error
	if f.From, err = parseDate(q, "date_from", false); err != nil {
		return f, err
	}
	if f.To, err = parseDate(q, "date_to", true); err != nil {
		return f, err
	}
	if err := f.Check(); err != nil {
		return f, errBadRequest(err.Error())
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
		var err error
		found, err = evals.List(tx, UserID(r.Context()), f)
		return err
	})
	if err != nil {
		return err
	}
	out := make([]api.Session, 0, min(len(found), limit))
	for _, ss := range found[:min(len(found), limit)] {
		out = append(out, viewSession(ss))
	}
	return writeJSON(w, http.StatusOK, map[string]any{"sessions": out, "total": len(found)})
}
