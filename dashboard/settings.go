package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
)

// shownPrefix is what a key listing shows of a key (the revoke flash repeats it).
var shownPrefix = regexp.MustCompile(`^osk_[A-Za-z0-9]{1,32}$`)

type settingsPage struct {
	basePage
	Keys    []kv.APIKey
	NewKey  string // shown once, right after creation
	NewRec  kv.APIKey
	Welcome bool
	MCP     mcpSetup
	Totals  sessionTotals // what "Delete all my sessions" would delete
}

// mcpSetup is the Settings page's "Use your history from your assistant"
// block: the MCP endpoint and, right after a key is created, a ready-to-copy
// Claude Code command with that key.
type mcpSetup struct {
	URL    string
	Claude string // only with a new key
}

// newMCPSetup addresses /mcp as the browser reached this server (behind a TLS
// proxy that sends X-Forwarded-Proto, over https).
func newMCPSetup(r *http.Request, key string) mcpSetup {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	m := mcpSetup{URL: scheme + "://" + r.Host + "/mcp"}
	if key != "" {
		m.Claude = "claude mcp add --transport http hindsight " + m.URL + ` --header "Authorization: Bearer ` + key + `"`
	}
	return m
}

func (s *Server) renderSettings(w http.ResponseWriter, r *http.Request, v *viewer, status int, p settingsPage) error {
	msg := p.Error
	p.basePage = s.base(w, v, "Settings", "settings")
	p.Error = msg
	keys, err := s.cfg.Accounts.Keys(r.Context(), v.user.ID)
	if err != nil {
		return err
	}
	// Active keys first, newest first within each group.
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i].Revoked == 0 {
			p.Keys = append(p.Keys, keys[i])
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i].Revoked != 0 {
			p.Keys = append(p.Keys, keys[i])
		}
	}
	if p.Totals, err = s.sessionTotals(r.Context(), v.user.ID); err != nil {
		return err
	}
	q := r.URL.Query()
	p.Welcome = q.Get("welcome") == "1"
	p.MCP = newMCPSetup(r, p.NewKey)
	n, errN := strconv.ParseInt(q.Get("deleted"), 10, 64)
	m, errM := strconv.ParseInt(q.Get("messages"), 10, 64)
	switch {
	case errN == nil && errM == nil && n >= 0 && m >= 0:
		p.Flash = "Deleted " + count(n, "session") + " (" + count(m, "message") + "). Your account and API keys are unchanged."
	case shownPrefix.MatchString(q.Get("revoked")):
		p.Flash = "Revoked key " + q.Get("revoked") + "…: requests with it now get 401."
	case q.Get("password") == "1":
		p.Flash = "Password changed. Other browsers signed in as you were signed out."
	}
	return s.render(w, status, "settings", p)
}

// settings: GET /settings
func (s *Server) settings(w http.ResponseWriter, r *http.Request, v *viewer) error {
	return s.renderSettings(w, r, v, http.StatusOK, settingsPage{})
}

// createKey: POST /settings/keys — issues a key and shows it once. The
// response is not cached (Cache-Control: no-store on every page).
func (s *Server) createKey(w http.ResponseWriter, r *http.Request, v *viewer) error {
	label := strings.TrimSpace(r.PostFormValue("label"))
	if len(label) > 200 {
		return s.renderSettings(w, r, v, http.StatusBadRequest, settingsPage{}.withError("A label is limited to 200 characters."))
	}
	key, rec, err := s.cfg.Accounts.CreateKeyForUser(r.Context(), v.user.ID, label)
	if err != nil {
		return err
	}
	return s.renderSettings(w, r, v, http.StatusOK, settingsPage{NewKey: key, NewRec: rec})
}

func (p settingsPage) withError(msg string) settingsPage {
	p.Error = msg
	return p
}

// revokeKey: POST /settings/keys/revoke — only the signed-in user's keys
// are considered.
func (s *Server) revokeKey(w http.ResponseWriter, r *http.Request, v *viewer) error {
	prefix := r.PostFormValue("prefix")
	rec, err := s.cfg.Accounts.Revoke(r.Context(), v.user.ID, prefix)
	if errors.Is(err, kv.ErrNotFound) {
		return errNotFound("There is no active key " + prefix + " in your account.")
	}
	if errors.Is(err, accounts.ErrBadPrefix) {
		return errBadRequest("Nothing was revoked: choose the key to revoke in the list below.")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/settings?revoked="+url.QueryEscape(rec.Prefix))
}

// changePassword: POST /settings/password. Setting a password ends every
// session of the user; this browser gets a new one.
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request, v *viewer) error {
	current, pw, pw2 := r.PostFormValue("current"), r.PostFormValue("password"), r.PostFormValue("password2")
	fail := func(status int, msg string) error {
		return s.renderSettings(w, r, v, status, settingsPage{}.withError(msg))
	}
	ip := clientIP(r)
	if s.limiter.wait(ip, v.user.Name) > 0 {
		return fail(http.StatusTooManyRequests, "Too many wrong passwords. Wait a minute, then try again.")
	}
	if _, err := s.cfg.Web.SignIn(r.Context(), v.user.Name, current); err != nil {
		if errors.Is(err, accounts.ErrBadCredentials) {
			s.limiter.fail(ip, v.user.Name)
			return fail(http.StatusBadRequest, "The current password is wrong.")
		}
		return err
	}
	if pw != pw2 {
		return fail(http.StatusBadRequest, "The two new passwords differ.")
	}
	if err := accounts.ValidPassword(pw); err != nil {
		return fail(http.StatusBadRequest, capitalize(err.Error())+".")
	}
	if err := s.cfg.Web.SetPassword(r.Context(), v.user.Name, pw); err != nil {
		return err
	}
	if err := s.startSession(w, r, v.user); err != nil {
		return err
	}
	return redirect(w, r, "/settings?password=1")
}

// count is "1 session", "2 sessions".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return formatInt(n) + " " + noun + "s"
}
