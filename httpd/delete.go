package httpd

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/api"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// Deletions stick: each leaves a tombstone of the session's externalId
// (ingest/delete.go), so later syncs of it are acknowledged and dropped
// until the owner allows it again (POST /api/sessions/deleted/allow).

// deleteSessions: DELETE /api/sessions with exactly one of
//   - id=<session id>: that session ({"ok": true, "deleted": 1});
//   - project=<projectPath>: every session whose projectPath is exactly that;
//   - projectName=<projectName>: every session whose projectName is exactly that
//
// ({"ok": true, "deleted": n}; 404 when no session matches). The sessions
// disappear from every endpoint at once; index documents, vectors and
// messages are removed in the background.
func (s *Server) deleteSessions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	var given []string
	for _, name := range []string{"id", "project", "projectName"} {
		if q.Get(name) != "" {
			given = append(given, name)
		}
	}
	switch len(given) {
	case 0:
		return errBadRequest("id, project or projectName is required: pass a session's id from /api/sessions, or a project's projectPath (project) or projectName")
	case 1:
	default:
		return errBadRequest("pass only one of id, project and projectName (got " + strings.Join(given, ", ") + ")")
	}
	userID := UserID(r.Context())
	if id := q.Get("id"); id != "" {
		if err := s.cfg.Ingest.DeleteSession(r.Context(), userID, id); err != nil {
			if isNotFound(err) {
				return errNotFound("no session with id " + strconv.Quote(id) + " in this account")
			}
			return err
		}
		return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": 1})
	}
	field, value, match := "projectPath", q.Get("project"), ingest.InProject(q.Get("project"))
	if given[0] == "projectName" {
		field, value, match = "projectName", q.Get("projectName"), ingest.NamedProject(q.Get("projectName"))
	}
	log := zerolog.Ctx(r.Context())
	n, _, err := s.cfg.Ingest.DeleteSessions(r.Context(), userID, match, func(done int) {
		log.Info().Int("sessions_deleted", done).Msg("deleting a project's sessions")
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return errNotFound("no session with " + field + " " + strconv.Quote(value) + " in this account (it must match exactly, as /api/sessions shows it)")
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": n})
}

// deleteAccountData: DELETE /api/account/data deletes all of the caller's
// sessions, each leaving its tombstone; the account and its API keys stay.
func (s *Server) deleteAccountData(w http.ResponseWriter, r *http.Request) error {
	log := zerolog.Ctx(r.Context())
	n, m, err := s.cfg.Ingest.DeleteAll(r.Context(), UserID(r.Context()), func(done int) {
		log.Info().Int("sessions_deleted", done).Msg("deleting account data")
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deletedSessions": n, "deletedMessages": m})
}

// listDeleted: GET /api/sessions/deleted?limit=&cursor=, the caller's
// tombstones, newest first: {"deleted": [{"externalId", "source",
// "deletedAt", "reason"}], "nextCursor"}. limit defaults to 100, at most
// 1000.
func (s *Server) listDeleted(w http.ResponseWriter, r *http.Request) error {
	limit, err := intParam(r, "limit", 100, 1000)
	if err != nil {
		return err
	}
	var from ingest.DeletedPosition
	if c := r.URL.Query().Get("cursor"); c != "" {
		if from, err = ingest.ParseDeletedPosition(c); err != nil {
			return errBadRequest("cursor is malformed: pass the nextCursor of a previous response")
		}
	}
	list, next, more, err := s.cfg.Ingest.DeletedSessions(r.Context(), UserID(r.Context()), from, limit)
	if err != nil {
		return err
	}
	out := api.DeletedSessionList{Deleted: make([]api.DeletedSession, len(list))}
	for i, t := range list {
		out.Deleted[i] = viewDeleted(t)
	}
	if more {
		out.NextCursor = next.String()
	}
	return writeJSON(w, http.StatusOK, out)
}

func viewDeleted(t kv.Tombstone) api.DeletedSession {
	return api.DeletedSession{ExternalID: t.ExternalID, Source: t.Source, DeletedAt: t.DeletedAt, Reason: t.Reason}
}

// allowSync: POST /api/sessions/deleted/allow with {"externalIds": [...]}
// removes those tombstones of the caller, so the sessions sync (and import)
// again: {"ok": true, "allowed": n}, n counting the tombstones removed (ids
// the caller has none for are skipped). An id whose project the server
// still excludes is a 400 and nothing changes.
func (s *Server) allowSync(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(body, &f); err != nil || f == nil {
		return errBadRequest(`body must be a JSON object: {"externalIds": ["..."]}`)
	}
	raw, ok := f["externalIds"]
	if !ok || string(raw) == "null" {
		return errBadRequest("externalIds is required: a list of the externalIds from GET /api/sessions/deleted")
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		return errBadRequest("externalIds must be a list of externalId strings")
	}
	n, err := s.cfg.Ingest.AllowSync(r.Context(), UserID(r.Context()), ids)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "allowed": n})
}
