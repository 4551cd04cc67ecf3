package dashboard

import (
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
)

// viewer is the signed-in user of a request.
type viewer struct {
	user    kv.User
	session kv.WebSession
	token   string
}

// currentViewer returns the request's signed-in user, or nil.
func (s *Server) currentViewer(r *http.Request) (*viewer, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	ws, err := s.cfg.Web.Session(r.Context(), c.Value)
	if errors.Is(err, accounts.ErrNoSession) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var u kv.User
	err = s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		var err error
		u, err = tx.User(ws.UserID)
		return err
	})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &viewer{user: u, session: ws, token: c.Value}, nil
}

// signedIn serves f to signed-in users and sends everyone else to the
// sign-in page (and back afterwards). A POST must carry the session's CSRF
// token and must not come from another origin; the form body is capped.
func (s *Server) signedIn(f func(http.ResponseWriter, *http.Request, *viewer) error) http.Handler {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		v, err := s.currentViewer(r)
		if err != nil {
			return err
		}
		if v == nil {
			if r.Method != http.MethodGet && r.Method != http.MethodHead {
				return redirect(w, r, "/login")
			}
			return redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
		}
		l := zerolog.Ctx(r.Context()).With().Str("user", v.user.ID).Logger()
		r = r.WithContext(l.WithContext(r.Context()))
		if r.Method == http.MethodPost {
			if err := s.checkPost(w, r, v.session.CSRF); err != nil {
				s.serveError(w, r, err, v)
				return nil
			}
		}
		if err := f(w, r, v); err != nil {
			s.serveError(w, r, err, v)
		}
		return nil
	})
}

var errCSRF = &pageError{http.StatusForbidden, "This form has expired or was sent from another site, so it was not accepted. Go back, reload the page and try again."}

// checkPost caps the body, parses the form and checks that the request is
// same-origin and carries the expected CSRF token.
func (s *Server) checkPost(w http.ResponseWriter, r *http.Request, want string) error {
	if err := s.cross.Check(r); err != nil {
		return errCSRF
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &pageError{http.StatusRequestEntityTooLarge, "The form is too large (over 2 MiB)."}
		}
		return errBadRequest("The form could not be read.")
	}
	got := r.PostFormValue("csrf")
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errCSRF
	}
	return nil
}

// anonCSRF returns the double-submit token of the sign-in and setup forms,
// setting its cookie when the browser has none.
func (s *Server) anonCSRF(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 40 && len(c.Value) <= 64 {
		return c.Value
	}
	tok := accounts.RandomToken()
	s.setCookie(w, r, csrfCookie, tok, 0)
	return tok
}

func (s *Server) checkAnonPost(w http.ResponseWriter, r *http.Request) error {
	c, err := r.Cookie(csrfCookie)
	if err != nil {
		if err := s.cross.Check(r); err != nil {
			return errCSRF
		}
		return &pageError{http.StatusForbidden, "Your browser did not send back the form's cookie. Allow cookies for this site, reload the page and try again."}
	}
	return s.checkPost(w, r, c.Value)
}

// setCookie sets an HttpOnly, SameSite=Lax cookie for the whole site,
// Secure when the request came over TLS. maxAge 0 makes a browser-session
// cookie; a negative one deletes the cookie.
func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.cfg.SecureCookies || r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https"),
	})
}

// startSession signs the browser in as u with a new session token. Any
// session the browser brought along is ended first, so a token planted
// before sign-in (session fixation) is worthless after it.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u kv.User) error {
	if c, err := r.Cookie(sessionCookie); err == nil {
		if err := s.cfg.Web.EndSession(r.Context(), c.Value); err != nil {
			return err
		}
	}
	tok, ws, err := s.cfg.Web.StartSession(r.Context(), u.ID)
	if err != nil {
		return err
	}
	s.setCookie(w, r, sessionCookie, tok, int((time.UnixMilli(ws.ExpiresAt).Sub(s.cfg.Now()))/time.Second))
	return nil
}

// --- pages ---

func (s *Server) root(w http.ResponseWriter, r *http.Request) error {
	v, err := s.currentViewer(r)
	if err != nil {
		return err
	}
	if v == nil {
		return redirect(w, r, "/login")
	}
	return redirect(w, r, "/sessions")
}

type loginPage struct {
	basePage
	Name      string
	Next      string
	NoUsers   bool
	FormToken string
}

func (s *Server) renderLogin(w http.ResponseWriter, r *http.Request, status int, name, next, msg string) error {
	p := loginPage{basePage: s.base(w, nil, "Sign in", ""), Name: name, Next: localPath(next, ""),
		FormToken: s.anonCSRF(w, r)}
	p.Error = msg
	if r.URL.Query().Get("out") == "1" {
		p.Flash = "You are signed out."
	}
	_ = s.cfg.Store.View(r.Context(), func(tx *kv.Tx) error {
		p.NoUsers = !tx.HasUsers()
		return nil
	})
	return s.render(w, status, "login", p)
}

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) error {
	v, err := s.currentViewer(r)
	if err != nil {
		return err
	}
	next := r.URL.Query().Get("next")
	if v != nil {
		return redirect(w, r, localPath(next, "/sessions"))
	}
	return s.renderLogin(w, r, http.StatusOK, "", next, "")
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkAnonPost(w, r); err != nil {
		return err
	}
	name := strings.TrimSpace(r.PostFormValue("name"))
	password := r.PostFormValue("password")
	next := r.PostFormValue("next")
	ip := clientIP(r)
	if wait := s.limiter.wait(ip, name); wait > 0 {
		secs := int(wait.Seconds() + 0.999)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		zerolog.Ctx(r.Context()).Warn().Str("ip", ip).Msg("dashboard: sign-in rate limited")
		return s.renderLogin(w, r, http.StatusTooManyRequests, name, next,
			"Too many failed sign-in attempts. Wait "+strconv.Itoa(secs)+" seconds, then try again.")
	}
	u, err := s.cfg.Web.SignIn(r.Context(), name, password)
	if errors.Is(err, accounts.ErrBadCredentials) {
		s.limiter.fail(ip, name)
		return s.renderLogin(w, r, http.StatusUnauthorized, name, next, "Wrong user name or password.")
	}
	if err != nil {
		return err
	}
	if err := s.startSession(w, r, u); err != nil {
		return err
	}
	return redirect(w, r, localPath(next, "/sessions"))
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	v, err := s.currentViewer(r)
	if err != nil {
		return err
	}
	if v == nil {
		return redirect(w, r, "/login")
	}
	if err := s.checkPost(w, r, v.session.CSRF); err != nil {
		return err
	}
	if err := s.cfg.Web.EndSession(r.Context(), v.token); err != nil {
		return err
	}
	s.setCookie(w, r, sessionCookie, "", -1)
	return redirect(w, r, "/login?out=1")
}

type setupPage struct {
	basePage
	Token     string
	Name      string
	FormToken string
}

func (s *Server) setupForm(w http.ResponseWriter, r *http.Request) error {
	tok := r.URL.Query().Get("token")
	if !s.cfg.Web.SetupPending(r.Context(), tok) {
		return errNotFound(accounts.ErrSetupUsed.Error() + ". Sign in instead, or ask whoever runs this server for an account.")
	}
	p := setupPage{basePage: s.base(w, nil, "Create the first account", ""), Token: tok, FormToken: s.anonCSRF(w, r)}
	return s.render(w, http.StatusOK, "setup", p)
}

func (s *Server) setup(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkAnonPost(w, r); err != nil {
		return err
	}
	tok := r.PostFormValue("token")
	name := strings.TrimSpace(r.PostFormValue("name"))
	pw, pw2 := r.PostFormValue("password"), r.PostFormValue("password2")
	again := func(msg string) error {
		p := setupPage{basePage: s.base(w, nil, "Create the first account", ""), Token: tok, Name: name, FormToken: s.anonCSRF(w, r)}
		p.Error = msg
		return s.render(w, http.StatusBadRequest, "setup", p)
	}
	if !s.cfg.Web.SetupPending(r.Context(), tok) {
		return errNotFound(accounts.ErrSetupUsed.Error() + ".")
	}
	if err := accounts.ValidUserName(name); err != nil {
		return again(capitalize(err.Error()) + ".")
	}
	if pw != pw2 {
		return again("The two passwords differ.")
	}
	if err := accounts.ValidPassword(pw); err != nil {
		return again(capitalize(err.Error()) + ".")
	}
	u, err := s.cfg.Web.CompleteSetup(r.Context(), tok, name, pw)
	if errors.Is(err, accounts.ErrSetupUsed) {
		return errNotFound(err.Error() + ".")
	}
	if err != nil {
		return err
	}
	if err := s.startSession(w, r, u); err != nil {
		return err
	}
	return redirect(w, r, "/settings?welcome=1")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// clientIP is the connection's address. X-Forwarded-For is not trusted: any
// client could send it to escape the per-address limit.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientKey is the client a failure is counted against: the address, or
// for IPv6 its /64, which one host usually holds whole.
func clientKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// loginLimiter counts failed sign-ins in a sliding window, so that guessing
// is slow and yet nobody can lock a user out by failing on their name:
//
//   - a client may fail perPair times on one name, and perClient times over
//     all names;
//   - a name that has failed perName times, from any clients, is under
//     attack: then a client that has failed on it at all in the window must
//     wait, while a client that has not (the real user, elsewhere) may still
//     try.
//
// A refused sign-in is refused without checking the password, so a blocked
// attacker costs no bcrypt time; a client waits until the failures that
// block it leave the window.
type loginLimiter struct {
	perPair, perClient, perName int
	window                      time.Duration
	now                         func() time.Time

	mu       sync.Mutex
	failures map[string][]time.Time // limitKeys -> recent failures
	swept    time.Time
}

func newLoginLimiter(perPair, perClient, perName int, window time.Duration, now func() time.Time) *loginLimiter {
	return &loginLimiter{perPair: perPair, perClient: perClient, perName: perName, window: window, now: now,
		failures: map[string][]time.Time{}}
}

// limitKeys are the counters a failure of ip on name adds to.
type limitKeys struct{ pair, client, name string }

func (l *loginLimiter) keys(ip, name string) limitKeys {
	c, n := clientKey(ip), strings.ToLower(name)
	return limitKeys{pair: "p:" + c + "\x00" + n, client: "a:" + c, name: "n:" + n}
}

// wait returns how long until ip may try name again (0: now).
func (l *loginLimiter) wait(ip, name string) time.Duration {
	now := l.now()
	k := l.keys(ip, name)
	l.mu.Lock()
	defer l.mu.Unlock()
	// until is how long until fewer than limit of fs are in the window.
	until := func(fs []time.Time, limit int) time.Duration {
		if len(fs) < limit {
			return 0
		}
		return fs[len(fs)-limit].Add(l.window).Sub(now)
	}
	pair := l.recent(k.pair, now)
	wait := max(until(pair, l.perPair), until(l.recent(k.client, now), l.perClient))
	if len(pair) > 0 && len(l.recent(k.name, now)) >= l.perName {
		wait = max(wait, until(pair, 1))
	}
	return wait
}

// fail records a failed sign-in.
func (l *loginLimiter) fail(ip, name string) {
	now := l.now()
	k := l.keys(ip, name)
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > l.window {
		for k := range l.failures {
			l.recent(k, now)
		}
		l.swept = now
	}
	for _, k := range []string{k.pair, k.client, k.name} {
		l.failures[k] = append(l.recent(k, now), now)
	}
}

// recent drops k's failures older than the window and returns the rest.
func (l *loginLimiter) recent(k string, now time.Time) []time.Time {
	fs := l.failures[k]
	i := 0
	for i < len(fs) && now.Sub(fs[i]) >= l.window {
		i++
	}
	fs = fs[i:]
	if len(fs) == 0 {
		delete(l.failures, k)
		return nil
	}
	l.failures[k] = fs
	return fs
}
