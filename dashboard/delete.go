package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/kv"
)

// Deleter deletes a user's sessions: the same calls the API's DELETE
// /api/sessions and DELETE /api/account/data make, so a deletion from the
// dashboard is the same as one through the API. *ingest.Service satisfies it.
type Deleter interface {
	DeleteSession(ctx context.Context, userID, sessionID string) error
	DeleteAll(ctx context.Context, userID string, progress func(done int)) (sessions, messages int64, err error)
}

// deleteAllWord is what Settings asks the user to type before deleting
// every session: a click alone is not enough for that.
const deleteAllWord = "delete all"

type deletePage struct {
	basePage
	S    kv.Session
	Name string
}

// confirmDelete: GET /sessions/{id}/delete — asks before deleting. It is a
// page of its own, so deleting works the same without JavaScript.
func (s *Server) confirmDelete(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return s.renderConfirmDelete(w, r, v, http.StatusOK, "")
}

func (s *Server) renderConfirmDelete(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) error {
	ss, _, err := s.loadSession(r, v, false)
	if err != nil {
		return err
	}
	p := deletePage{basePage: s.base(w, v, "Delete session", "sessions"), S: ss, Name: cmpOr(ss.Title, "Untitled session")}
	p.Error = msg
	return s.render(w, status, "delete", p)
}

// deleteSession: POST /sessions/{id}/delete with confirm=yes, from the
// confirmation page. Another user's session id is the same 404 as one that
// does not exist.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if r.PostFormValue("confirm") != "yes" {
		return s.renderConfirmDelete(w, r, v, http.StatusBadRequest, "Nothing was deleted: confirm with the button below.")
	}
	err := s.cfg.Deleter.DeleteSession(r.Context(), v.user.ID, mux.Vars(r)["id"])
	if errors.Is(err, kv.ErrNotFound) {
		return errNotFound("There is no such session in your account.")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/sessions?deleted=1")
}

// deleteAll: POST /settings/delete-all with the typed confirmation. The
// account, its password and its API keys stay.
func (s *Server) deleteAll(w http.ResponseWriter, r *http.Request, v *viewer) error {
	if strings.ToLower(strings.Join(strings.Fields(r.PostFormValue("confirm")), " ")) != deleteAllWord {
		return s.renderSettings(w, r, v, http.StatusBadRequest,
			settingsPage{}.withError("Nothing was deleted: type “"+deleteAllWord+"” in the box to confirm."))
	}
	log := zerolog.Ctx(r.Context())
	n, m, err := s.cfg.Deleter.DeleteAll(r.Context(), v.user.ID, func(done int) {
		log.Info().Int("sessions_deleted", done).Msg("dashboard: deleting all sessions")
	})
	if err != nil {
		return err
	}
	return redirect(w, r, "/settings?deleted="+strconv.FormatInt(n, 10)+"&messages="+strconv.FormatInt(m, 10))
}

// sessionTotals counts what "Delete all my sessions" would delete.
type sessionTotals struct{ Sessions, Messages int64 }

func (s *Server) sessionTotals(ctx context.Context, userID string) (sessionTotals, error) {
	var t sessionTotals
	err := s.cfg.Store.View(ctx, func(tx *kv.Tx) error {
		return tx.Sessions(userID, func(ss kv.Session) error {
			t.Sessions++
			t.Messages += ss.MessageCount
			return nil
		})
	})
	return t, err
}
