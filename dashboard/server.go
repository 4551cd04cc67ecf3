// Package dashboard is Hindsight's web UI: server-rendered html/template
// pages with go:embed assets and a little plain JavaScript, served by the
// same binary and router as the REST API, using the same package calls
// (kv reads, ranking, accounts, exporter).
//
// # Pages
//
// Sessions (list, filters, search), Session (messages, export, eval
// labelling), Evals (eval-ready sessions: label, select, download datasets),
// Settings (API keys, password, deleting all sessions) and Usage (server-side SVG charts). Sign-in
// is by password; first-run setup is by a one-time link that serve prints.
//
// # Security
//
// Every page is scoped to the signed-in user: records are read with that
// user's id, so another user's session id is a 404. Sessions are server-side
// (accounts.Web); the cookie holds a random token and is HttpOnly,
// SameSite=Lax, and Secure when the request came over TLS. Every form
// carries a CSRF token (bound to the web session, or a double-submit cookie
// before sign-in), and cross-origin POSTs are refused besides. Templates
// escape everything; the only HTML built in Go is the Markdown renderer
// (goldmark, restricted: see markdown.go), the snippet sanitiser and the SVG
// charts, which escape all text they are given.
// A Content-Security-Policy forbids inline scripts and styles.
package dashboard

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
	"github.com/hindsight-dev/hindsight/redact"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/*
var staticFS embed.FS

// Searcher runs searches for the Sessions page; *ranking.Engine satisfies it.
type Searcher interface {
	Search(ctx context.Context, q ranking.Query) (ranking.Response, error)
	Semantic() bool
}

// Config holds what the dashboard needs. Zero values take documented defaults.
type Config struct {
	Store    *kv.Store          // records: every read names the signed-in user
	Accounts *accounts.Accounts // API keys
	Web      *accounts.Web      // passwords, web sessions, setup token
	Search   Searcher
	Deleter  Deleter // deletes sessions (the Session page's Delete, a project's, Settings' "Delete all") and lists deleted ones
	// Logger is used for requests that arrive without a request-scoped
	// logger (httpd's middleware provides one, with the request id).
	Logger zerolog.Logger
	Now    func() time.Time
	// SecureCookies marks cookies Secure even on plain HTTP requests (a TLS
	// proxy in front that does not send X-Forwarded-Proto). Requests over
	// TLS, or with X-Forwarded-Proto: https, always get Secure cookies.
	SecureCookies bool
	// LoginFailures is how many failed sign-ins one client may make on one
	// user name per minute (0 means 5); a client may make four times as
	// many over all names. A name failed ten times as often, from all
	// clients together, is under attack: clients that failed on it wait out
	// the minute, others may still sign in (see loginLimiter).
	LoginFailures int
	// PageSize is the number of sessions per page; 0 means 25.
	PageSize int
	// MinSemanticScore hides semantic results with a lower cosine
	// similarity; 0 means 0.25.
	MinSemanticScore float64
	// Redactor redacts eval labels before they are stored (nil: none).
	Redactor *redact.Redactor
}

// Server is the dashboard. Install registers its routes on a router that
// main owns.
type Server struct {
	cfg     Config
	pages   map[string]*template.Template
	static  fs.FS
	assets  map[string]string // file name -> versioned URL
	limiter *loginLimiter
	cross   *http.CrossOriginProtection
}

// Cookie names.
const (
	sessionCookie = "hindsight_session"
	csrfCookie    = "hindsight_csrf" // double-submit token of the sign-in and setup forms
)

// maxFormBytes caps dashboard form bodies (an expected output can be long).
const maxFormBytes = 2 << 20

// New parses every page template once and returns the Server.
func New(cfg Config) (*Server, error) {
	if cfg.Deleter == nil {
		return nil, errors.New("dashboard: Config.Deleter is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.LoginFailures <= 0 {
		cfg.LoginFailures = 5
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = 25
	}
	if cfg.MinSemanticScore == 0 {
		cfg.MinSemanticScore = 0.25
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, static: static, assets: map[string]string{},
		limiter: newLoginLimiter(cfg.LoginFailures, 4*cfg.LoginFailures, 10*cfg.LoginFailures, time.Minute, cfg.Now),
		cross:   http.NewCrossOriginProtection()}
	// Versioned asset URLs: a changed file gets a new URL, so assets can be
	// cached for long.
	err = fs.WalkDir(static, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(static, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		s.assets[p] = "/static/" + p + "?v=" + hex.EncodeToString(sum[:6])
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.pages, err = s.parsePages(); err != nil {
		return nil, err
	}
	return s, nil
}

// pageNames are the page templates; each is parsed with the shared
// _layout.html into its own set.
var pageNames = []string{"login", "setup", "sessions", "session", "delete", "deleteproject", "deleted", "evals", "settings", "usage", "error"}

func (s *Server) parsePages() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"static":      s.assetURL,
		"int":         formatInt,
		"deref":       func(p *int64) int64 { return *p },
		"money":       formatMoney,
		"duration":    formatDuration,
		"time":        formatTime,
		"isotime":     isoTime,
		"status":      statusLabel,
		"markdown":    renderMarkdown,
		"redacted":    redactedText,
		"join":        strings.Join,
		"statusClass": func(st string) string { return "st-" + strings.ReplaceAll(st, "_", "-") },
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/_layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

func (s *Server) assetURL(name string) string {
	if u, ok := s.assets[name]; ok {
		return u
	}
	return "/static/" + name
}

// Install registers the dashboard's routes on r. The REST API owns /health,
// /ready, /metrics, /sync/* and /api/*; these never overlap with them, and
// neither API-key auth nor this package's cookie auth applies to the other's
// routes.
func (s *Server) Install(r *mux.Router) {
	get := func(p string, h http.Handler) { r.Handle(p, h).Methods(http.MethodGet, http.MethodHead) }
	post := func(p string, h http.Handler) { r.Handle(p, h).Methods(http.MethodPost) }

	get("/", s.handle(s.root))
	get("/login", s.handle(s.loginForm))
	post("/login", s.handle(s.login))
	post("/logout", s.handle(s.logout))
	get("/setup", s.handle(s.setupForm))
	post("/setup", s.handle(s.setup))

	get("/sessions", s.signedIn(s.sessions))
	// Before /sessions/{id}, which would match these paths too.
	get("/sessions/deleted", s.signedIn(s.deletedSessions))
	post("/sessions/deleted/allow", s.signedIn(s.allowSync))
	get("/sessions/delete-project", s.signedIn(s.confirmDeleteProject))
	post("/sessions/delete-project", s.signedIn(s.deleteProject))
	get("/sessions/{id}", s.signedIn(s.session))
	get("/sessions/{id}/export", s.signedIn(s.exportSession))
	post("/sessions/{id}/eval", s.signedIn(s.sessionEval))
	get("/sessions/{id}/delete", s.signedIn(s.confirmDelete))
	post("/sessions/{id}/delete", s.signedIn(s.deleteSession))
	get("/evals", s.signedIn(s.evals))
	post("/evals/label", s.signedIn(s.labelEvals))
	post("/evals/export", s.signedIn(s.exportEvals))
	get("/settings", s.signedIn(s.settings))
	post("/settings/keys", s.signedIn(s.createKey))
	post("/settings/keys/revoke", s.signedIn(s.revokeKey))
	post("/settings/password", s.signedIn(s.changePassword))
	post("/settings/delete-all", s.signedIn(s.deleteAll))
	get("/usage", s.signedIn(s.usage))

	files := http.StripPrefix("/static/", http.FileServerFS(s.static))
	r.PathPrefix("/static/").Methods(http.MethodGet, http.MethodHead).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("v") != "" {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "public, max-age=300")
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	}))
}

// SetupLink returns the path of the first-run setup page with a fresh
// one-time token ("/setup?token=..."), or "" once any user exists. serve
// prints it at startup.
func (s *Server) SetupLink(ctx context.Context) (string, error) {
	tok, err := s.cfg.Web.SetupToken(ctx)
	if err != nil || tok == "" {
		return "", err
	}
	return "/setup?token=" + tok, nil
}

// --- pages, errors and rendering ---

// basePage is what the layout needs; every page struct embeds it.
type basePage struct {
	Title     string
	Nav       string // the current section: sessions, evals, usage, settings
	User      string // signed-in user name; "" when signed out
	CSRF      string
	RequestID string
	Flash     string
	Error     string
}

// pageError is an error with the status and message the user should see.
type pageError struct {
	status int
	msg    string
}

func (e *pageError) Error() string { return e.msg }

func errNotFound(msg string) error   { return &pageError{http.StatusNotFound, msg} }
func errBadRequest(msg string) error { return &pageError{http.StatusBadRequest, msg} }

// handle adapts a handler that returns an error; serveError is the one
// place errors become statuses and pages.
func (s *Server) handle(f func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if zerolog.Ctx(r.Context()).GetLevel() == zerolog.Disabled {
			// No request-scoped logger from the API's middleware: use ours.
			r = r.WithContext(s.cfg.Logger.WithContext(r.Context()))
		}
		tw := &trackingWriter{ResponseWriter: w}
		if err := f(tw, r); err != nil {
			s.serveError(tw, r, err, nil)
		}
	})
}

// trackingWriter remembers whether a response has started, so an error in
// the middle of a download is logged instead of appended to the file.
type trackingWriter struct {
	http.ResponseWriter
	started bool
}

func (t *trackingWriter) WriteHeader(code int) {
	t.started = true
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.started = true
	return t.ResponseWriter.Write(b)
}

func (t *trackingWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		t.started = true
		f.Flush()
	}
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "+
		"object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer") // the setup link carries its token in the URL
	h.Set("Cache-Control", "no-store")
}

// serveError renders err as an error page: *pageError with its status,
// kv.ErrNotFound as 404, anything else as a logged 500 that names only the
// request id. v, when known, keeps the page's navigation.
func (s *Server) serveError(w http.ResponseWriter, r *http.Request, err error, v *viewer) {
	var pe *pageError
	switch {
	case errors.As(err, &pe):
	case errors.Is(err, kv.ErrNotFound):
		pe = &pageError{http.StatusNotFound, "There is nothing here, or it belongs to another account."}
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		return // the client went away
	case errors.Is(err, kv.ErrUnavailable):
		// The records' database (PostgreSQL) cannot be reached now.
		zerolog.Ctx(r.Context()).Warn().Err(err).Str("path", r.URL.Path).Msg("dashboard: records database unavailable")
		w.Header().Set("Retry-After", "5")
		pe = &pageError{http.StatusServiceUnavailable, "The server's database is unavailable for the moment. Your sessions are safe; try again shortly."}
	default:
		zerolog.Ctx(r.Context()).Error().Err(err).Str("path", r.URL.Path).Msg("dashboard: internal error")
		pe = &pageError{http.StatusInternalServerError, "Something went wrong on the server. If it keeps happening, report request id " + requestID(w) + "."}
	}
	if tw, ok := w.(*trackingWriter); ok && tw.started {
		zerolog.Ctx(r.Context()).Warn().Err(err).Str("path", r.URL.Path).Msg("dashboard: error after the response started")
		return
	}
	page := struct {
		basePage
		Status int
		Text   string
	}{basePage: s.base(w, v, http.StatusText(pe.status), ""), Status: pe.status, Text: pe.msg}
	if rerr := s.render(w, pe.status, "error", page); rerr != nil {
		http.Error(w, pe.msg, pe.status)
	}
}

// requestID is the id the API's middleware put on the response.
func requestID(w http.ResponseWriter) string { return w.Header().Get("X-Request-Id") }

// base fills the layout fields for a page.
func (s *Server) base(w http.ResponseWriter, v *viewer, title, nav string) basePage {
	b := basePage{Title: title, Nav: nav, RequestID: requestID(w)}
	if v != nil {
		b.User, b.CSRF = v.user.Name, v.session.CSRF
	}
	return b
}

// render executes a page into a buffer first, so a template error is a clean
// 500 and never half a page.
func (s *Server) render(w http.ResponseWriter, status int, page string, data any) error {
	t, ok := s.pages[page]
	if !ok {
		return fmt.Errorf("no page template %q", page)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", data); err != nil {
		return fmt.Errorf("render %s: %w", page, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// redirect answers a form POST (or a GET that needs another page) with 303.
func redirect(w http.ResponseWriter, r *http.Request, to string) error {
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// localPath returns p as a path on this site, or def when a browser could
// read it as anything else: redirects after sign-in never leave the site.
//
// p is first read as a browser reads a Location: tabs and newlines are
// removed wherever they are, and a backslash is a slash. What is left must
// be printable ASCII, begin with exactly one slash, parse as a bare path
// (no scheme, host or user), have no dot segments, and decode (once, as a
// proxy or a later hop might) to a path that still begins with exactly one
// slash. The sign-in pages themselves are refused too. Anything in doubt
// takes def; what is returned is the normalised, re-encoded path.
func localPath(p, def string) string {
	p = strings.NewReplacer("\t", "", "\n", "", "\r", "", `\`, "/").Replace(p)
	for i := 0; i < len(p); i++ {
		if p[i] <= ' ' || p[i] >= 0x7f {
			return def
		}
	}
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return def
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return def
	}
	decoded := strings.ReplaceAll(u.Path, `\`, "/")
	if !strings.HasPrefix(decoded, "/") || strings.HasPrefix(decoded, "//") {
		return def
	}
	for _, seg := range strings.Split(decoded, "/") {
		if seg == "." || seg == ".." {
			return def
		}
		for i := 0; i < len(seg); i++ {
			if seg[i] < ' ' || seg[i] == 0x7f {
				return def
			}
		}
	}
	switch strings.ToLower(path.Clean(decoded)) {
	case "/login", "/logout", "/setup":
		return def
	}
	out := (&url.URL{Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery, Fragment: u.Fragment, RawFragment: u.RawFragment}).String()
	if !strings.HasPrefix(out, "/") || strings.HasPrefix(out, "//") {
		return def
	}
	return out
}
