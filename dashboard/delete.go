package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

// Deleter deletes a user's sessions and lets deleted ones sync again: the
// same calls the API's DELETE /api/sessions, DELETE /api/account/data,
// GET /api/sessions/deleted and POST /api/sessions/deleted/allow make, so
// a deletion from the dashboard is the same as one through the API (each
// leaves a tombstone, so the session stays deleted). *ingest.Service
// satisfies it.
type Deleter interface {
	DeleteSession(ctx context.Context, userID, sessionID string) error
	DeleteAll(ctx context.Context, userID string, progress func(done int)) (sessions, messages int64, err error)
	DeleteSessions(ctx context.Context, userID string, match func(kv.Session) bool, progress func(done int)) (sessions, messages int64, err error)
	DeletedSessions(ctx context.Context, userID string, from ingest.DeletedPosition, limit int) ([]kv.Tombstone, ingest.DeletedPosition, bool, error)
	AllowSync(ctx context.Context, userID string, externalIDs []string) (int, error)
	// Excluded reports whether t's project is still excluded, so it cannot
	// be allowed.
	Excluded(t kv.Tombstone) bool
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
	p := deletePage{basePage: s.base(w, v, "Delete session", "sessions"), S: ss, Name: ss.DisplayTitle()}
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

// --- deleting a project ---

type deleteProjectPage struct {
	basePage
	Project string
	Totals  sessionTotals
}

// projectTotals counts the sessions the Sessions page lists under project
// (its Project filter) and their messages.
func (s *Server) projectTotals(ctx context.Context, userID, project string) (sessionTotals, error) {
	var t sessionTotals
	match := sessionFilter{Project: project}.match
	err := s.cfg.Store.View(ctx, func(tx *kv.Tx) error {
		return tx.Sessions(userID, func(ss kv.Session) error {
			if match(ss) {
				t.Sessions++
				t.Messages += ss.MessageCount
			}
			return nil
		})
	})
	return t, err
}

// confirmDeleteProject: GET /sessions/delete-project?project= asks before
// deleting every session the Sessions page lists under that project.
func (s *Server) confirmDeleteProject(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return s.renderConfirmDeleteProject(w, r, v, r.URL.Query().Get("project"), http.StatusOK, "")
}

func (s *Server) renderConfirmDeleteProject(w http.ResponseWriter, r *http.Request, v *viewer, project string, status int, msg string) error {
	if project == "" {
		return errBadRequest("Choose a project in the Sessions page's Project filter first.")
	}
	t, err := s.projectTotals(r.Context(), v.user.ID, project)
	if err != nil {
		return err
	}
	if t.Sessions == 0 {
		return errNotFound("There is no project with that name or path in your account.")
	}
	p := deleteProjectPage{basePage: s.base(w, v, "Delete project", "sessions"), Project: project, Totals: t}
	p.Error = msg
	return s.render(w, status, "deleteproject", p)
}

// deleteProject: POST /sessions/delete-project with project and
// confirm=yes: the sessions the Project filter shows for it are deleted,
// each leaving its tombstone.
func (s *Server) deleteProject(w http.ResponseWriter, r *http.Request, v *viewer) error {
	project := r.PostFormValue("project")
	if r.PostFormValue("confirm") != "yes" {
		return s.renderConfirmDeleteProject(w, r, v, project, http.StatusBadRequest, "Nothing was deleted: confirm with the button below.")
	}
	if project == "" {
		return errBadRequest("Choose a project in the Sessions page's Project filter first.")
	}
	log := zerolog.Ctx(r.Context())
	n, _, err := s.cfg.Deleter.DeleteSessions(r.Context(), v.user.ID, sessionFilter{Project: project}.match, func(done int) {
		log.Info().Int("sessions_deleted", done).Msg("dashboard: deleting a project's sessions")
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return errNotFound("There is no project with that name or path in your account.")
	}
	return redirect(w, r, "/sessions?deletedProject="+strconv.FormatInt(n, 10))
}

// --- deleted sessions ---

// deletedPageSize is the number of deleted sessions per page.
const deletedPageSize = 50

type deletedRow struct {
	kv.Tombstone
	Excluded bool // its project is still excluded: sync cannot be allowed
}

type deletedPage struct {
	basePage
	Rows     []deletedRow
	NextURL  string
	FirstURL string
}

// deletedSessions: GET /sessions/deleted?cursor= lists the user's deleted
// sessions, newest first, each with "Allow sync again".
func (s *Server) deletedSessions(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return s.renderDeleted(w, r, v, http.StatusOK, "")
}

func (s *Server) renderDeleted(w http.ResponseWriter, r *http.Request, v *viewer, status int, msg string) error {
	p := deletedPage{basePage: s.base(w, v, "Deleted sessions", "sessions")}
	p.Error = msg
	if n, err := strconv.Atoi(r.URL.Query().Get("allowed")); err == nil && n >= 0 {
		p.Flash = "Sync allowed again for " + plural(n, "session") + ". The next sync or import of it stores it as a new session."
	}
	var from ingest.DeletedPosition
	if c := r.URL.Query().Get("cursor"); c != "" {
		var err error
		if from, err = ingest.ParseDeletedPosition(c); err != nil {
			return errBadRequest("The page link is malformed. Start again from the first page.")
		}
		p.FirstURL = "/sessions/deleted"
	}
	list, next, more, err := s.cfg.Deleter.DeletedSessions(r.Context(), v.user.ID, from, deletedPageSize)
	if err != nil {
		return err
	}
	for _, t := range list {
		p.Rows = append(p.Rows, deletedRow{Tombstone: t, Excluded: s.cfg.Deleter.Excluded(t)})
	}
	if more {
		p.NextURL = "/sessions/deleted?" + url.Values{"cursor": {next.String()}}.Encode()
	}
	return s.render(w, status, "deleted", p)
}

// allowSync: POST /sessions/deleted/allow with externalId. Another user's
// external id, or one never deleted, changes nothing.
func (s *Server) allowSync(w http.ResponseWriter, r *http.Request, v *viewer) error {
	id := r.PostFormValue("externalId")
	if id == "" {
		return s.renderDeleted(w, r, v, http.StatusBadRequest, "Nothing was changed: choose a session in the list below.")
	}
	n, err := s.cfg.Deleter.AllowSync(r.Context(), v.user.ID, []string{id})
	if errors.Is(err, ingest.ErrInvalid) {
		return s.renderDeleted(w, r, v, http.StatusBadRequest,
			"Nothing was changed: this session's project is excluded on this server (HINDSIGHT_EXCLUDE_PROJECTS), so it cannot sync again.")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/sessions/deleted?allowed="+strconv.Itoa(n))
}
