package httpd

import (
	"net/http"
	"strconv"

	"github.com/rs/zerolog"
)

// deleteSession: DELETE /api/sessions?id=. The session disappears from every
// endpoint at once; index documents, vectors and messages are removed in the
// background.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("id")
	if id == "" {
		return errBadRequest("id is required: pass the session's id from /api/sessions")
	}
	if err := s.cfg.Ingest.DeleteSession(r.Context(), UserID(r.Context()), id); err != nil {
		if isNotFound(err) {
			return errNotFound("no session with id " + strconv.Quote(id) + " in this account")
		}
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"ok": true, "deleted": 1})
}

// deleteAccountData: DELETE /api/account/data deletes all of the caller's
// sessions; the account and its API keys stay.
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
