package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/html"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

var bg = context.Background()

// clock is a settable time for the dashboard (rate limits, sessions).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// ticking gives ingest a distinct millisecond per write, so "most recent
// first" is deterministic.
type ticking struct{ ms atomic.Int64 }

func (c *ticking) Now() time.Time {
	return time.UnixMilli(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + c.ms.Add(1000))
}

// fixture is a real dashboard over a real store, index and search engine,
// behind the router as cmd/hindsight wires it, on a loopback test server.
type fixture struct {
	t      *testing.T
	store  *kv.Store
	acct   *accounts.Accounts
	web    *accounts.Web
	ingest *ingest.Service
	pipe   *ingest.Pipeline
	clock  *clock
	srv    *httptest.Server
	dash   *Server
}

// newFixture serves cfg's dashboard over a fresh store (cfg.Store when
// set: tests that break the store).
func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	st := cfg.Store
	if st == nil {
		st = kvtest.Open(t)
	}
	idx, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	f := &fixture{t: t, store: st, clock: &clock{t: time.Date(2026, 3, 20, 12, 0, 0, 0, time.UTC)}}
	tick := &ticking{}
	f.acct = accounts.New(st, nil)
	f.web = accounts.NewWeb(st, accounts.WebOptions{BcryptCost: bcrypt.MinCost, Now: f.clock.Now})
	f.ingest = ingest.NewService(st, tick.Now)
	f.pipe = ingest.NewPipeline(st, idx, ingest.PipelineOptions{})
	cfg.Store, cfg.Accounts, cfg.Web, cfg.Now, cfg.Deleter = st, f.acct, f.web, f.clock.Now, f.ingest
	if cfg.Search == nil {
		cfg.Search = ranking.New(idx, nil, nil, ranking.Options{})
	}
	f.dash, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter()
	f.dash.Install(r)
	// What httpd's middleware does for the dashboard: a request id and a
	// request-scoped logger.
	var n atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("X-Request-Id", "req"+strconv.FormatInt(n.Add(1), 10))
		if a := req.Header.Get(testClientHeader); a != "" {
			req.RemoteAddr = a // the test server has one address; browsers may pose as others
		}
		l := zerolog.Nop()
		r.ServeHTTP(w, req.WithContext(l.WithContext(req.Context())))
	})
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}

// user creates a user with a password and returns its id.
func (f *fixture) user(name string) string {
	f.t.Helper()
	u, err := f.web.CreateUserWithPassword(bg, name, name+"-password")
	if err != nil {
		f.t.Fatal(err)
	}
	return u.ID
}

// sync applies a /sync/batch body for the user and indexes it.
func (f *fixture) sync(userID, body string) {
	f.t.Helper()
	b, err := ingest.DecodeBatch([]byte(body), ingest.Limits{})
	if err != nil || len(b.Errors) > 0 {
		f.t.Fatalf("decode batch: %v %v", err, b.Errors)
	}
	if _, err := f.ingest.Batch(bg, userID, b); err != nil {
		f.t.Fatal(err)
	}
	f.index()
}

// session applies a /sync/session body (createdAt honoured) and indexes it.
func (f *fixture) session(userID, body string) string {
	f.t.Helper()
	in, err := ingest.DecodeSession([]byte(body), ingest.Limits{})
	if err != nil {
		f.t.Fatal(err)
	}
	res, err := f.ingest.Session(bg, userID, in)
	if err != nil {
		f.t.Fatal(err)
	}
	f.index()
	return res.ID
}

func (f *fixture) index() {
	f.t.Helper()
	for {
		n, err := f.pipe.DrainOnce(bg)
		if err != nil {
			f.t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
}

// sessionID maps an externalId to the service id.
func (f *fixture) sessionID(userID, ext string) string {
	f.t.Helper()
	var id string
	f.store.View(bg, func(tx *kv.Tx) error {
		id, _ = tx.SessionIDByExternal(userID, ext)
		return nil
	})
	if id == "" {
		f.t.Fatalf("no session %q", ext)
	}
	return id
}

func (f *fixture) stored(userID, id string) kv.Session {
	f.t.Helper()
	var s kv.Session
	err := f.store.View(bg, func(tx *kv.Tx) error {
		var err error
		s, err = tx.Session(userID, id)
		return err
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// testClientHeader carries the client address a test browser poses as
// (browser.addr); only the fixture's wrapper reads it.
const testClientHeader = "X-Test-Remote-Addr"

// browser is a cookie-keeping client that does not follow redirects.
type browser struct {
	t    *testing.T
	f    *fixture
	c    *http.Client
	csrf string // the CSRF field of the last page that had a form
	addr string // the client address (host:port) the server sees; "" is the real one
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	// No timeout: a hang is caught by go test's -timeout; a slow machine is not a failure.
	return &browser{t: f.t, f: f, c: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// page is one response, parsed when it is HTML.
type page struct {
	status int
	header http.Header
	body   string
	doc    *html.Node
}

func (p *page) location() string { return p.header.Get("Location") }

func (b *browser) do(req *http.Request) *page {
	b.t.Helper()
	if b.addr != "" {
		req.Header.Set(testClientHeader, b.addr)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	p := &page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		p.doc = parseHTML(b.t, p.body)
		if ns := findAll(b.t, p.doc, "input[name=csrf]"); len(ns) > 0 {
			b.csrf, _ = attr(ns[0], "value")
		}
	}
	return p
}

func (b *browser) get(path string, hdr ...string) *page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.f.srv.URL+path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.do(req)
}

// post sends a form. It adds the last seen CSRF token unless the form has
// a "csrf" entry (an empty one sends none).
func (b *browser) post(path string, form url.Values, hdr ...string) *page {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", b.csrf)
	} else if form.Get("csrf") == "" {
		form.Del("csrf")
	}
	req, _ := http.NewRequest(http.MethodPost, b.f.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return b.do(req)
}

func (b *browser) cookie(name string) string {
	u, _ := url.Parse(b.f.srv.URL)
	for _, c := range b.c.Jar.Cookies(u) {
		if c.Name == name {
			return c.Value
		}
	}
	return ""
}

func (b *browser) setCookie(name, value string) {
	u, _ := url.Parse(b.f.srv.URL)
	b.c.Jar.SetCookies(u, []*http.Cookie{{Name: name, Value: value, Path: "/"}})
}

// signIn signs the browser in as name (password name+"-password").
func (b *browser) signIn(name string) {
	b.t.Helper()
	b.get("/login")
	p := b.post("/login", url.Values{"name": {name}, "password": {name + "-password"}})
	if p.status != http.StatusSeeOther || p.location() != "/sessions" {
		b.t.Fatalf("sign in as %s: %d %s\n%s", name, p.status, p.location(), p.body)
	}
	b.get("/sessions") // pick up the session's CSRF token
}

// want checks status and returns the page for more checks.
func (p *page) want(t *testing.T, status int) *page {
	t.Helper()
	if p.status != status {
		t.Fatalf("status %d, want %d\n%s", p.status, status, p.body)
	}
	return p
}
