package httpd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

var bg = context.Background()

// epoch is the ingest clock's first reading (2026-03-01 UTC).
var epoch = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// tickingClock advances one millisecond per reading, so every write gets its
// own timestamp and "most recently updated" is deterministic.
type tickingClock struct{ ms atomic.Int64 }

func (c *tickingClock) Now() time.Time { return time.UnixMilli(epoch.UnixMilli() + c.ms.Add(1)) }

// options adjust the app a test builds; the zero value is buildApp's wiring
// with default limits and no rate limiting.
type options struct {
	limits ingest.Limits
	rate   float64
	burst  int
	now    func() time.Time    // httpd's clock (health, rate limiter); nil = time.Now
	auth   httpd.Authenticator // replaces the real accounts (fault injection)
	store  *kv.Store           // replaces kvtest.Open (tests that break the store)
	// ingestNow replaces ingest's clock, which runs inside the write
	// transaction (fault injection: a panic inside a write).
	ingestNow func() time.Time
	// exclude: projects whose sessions are dropped (HINDSIGHT_EXCLUDE_PROJECTS).
	exclude string
	// search answers /api/search and /api/context (nil: none).
	search *ranking.Engine
}

// app is a real Hindsight wired as cmd/hindsight's buildApp does, served by
// httptest on loopback.
type app struct {
	t       *testing.T
	store   *kv.Store
	acct    *accounts.Accounts
	clock   *tickingClock
	srv     *httptest.Server
	client  *http.Client
	logs    *syncBuffer
	userIDs map[string]string // user name -> id
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newApp(t *testing.T, o options) *app {
	t.Helper()
	st := o.store
	if st == nil {
		st = kvtest.Open(t)
	}
	a := &app{t: t, store: st, clock: &tickingClock{}, logs: &syncBuffer{}, userIDs: map[string]string{}}
	a.acct = accounts.New(st, a.clock.Now)
	now := a.clock.Now
	if o.ingestNow != nil {
		now = o.ingestNow
	}
	svc := ingest.NewService(st, now)
	globs, err := ingest.ParseProjectGlobs(o.exclude)
	if err != nil {
		t.Fatal(err)
	}
	svc.ExcludeProjects(globs)
	var auth httpd.Authenticator = a.acct
	if o.auth != nil {
		auth = o.auth
	}
	api := httpd.New(httpd.Config{
		Auth: auth, Ingest: svc, Records: st, Limits: o.limits, Search: o.search,
		RatePerSecond: o.rate, RateBurst: o.burst,
		Logger: zerolog.New(a.logs).Level(zerolog.InfoLevel), Now: o.now,
	})
	r := mux.NewRouter()
	api.Install(r)
	a.srv = httptest.NewServer(api.Handler(r))
	// No client timeout: a loaded machine may take long over a large request,
	// and a hung one is caught by go test's -timeout, with every stack.
	a.client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	// Registered after kvtest.Open: runs before the store's invariant check.
	t.Cleanup(func() {
		a.client.CloseIdleConnections()
		a.srv.Close()
		if t.Failed() {
			lines := strings.Split(strings.TrimSpace(a.logs.String()), "\n")
			if len(lines) > 20 {
				lines = lines[len(lines)-20:]
			}
			t.Logf("server log (last %d lines):\n%s", len(lines), strings.Join(lines, "\n"))
		}
	})
	return a
}

// user creates a user and returns a fresh API key for it.
func (a *app) user(name string) string {
	a.t.Helper()
	u, err := a.acct.CreateUser(bg, name)
	if err != nil {
		a.t.Fatalf("CreateUser(%q): %v", name, err)
	}
	a.userIDs[name] = u.ID
	key, _, err := a.acct.CreateKey(bg, name, "test")
	if err != nil {
		a.t.Fatalf("CreateKey(%q): %v", name, err)
	}
	return key
}

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body as a JSON object.
func (r *response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d: body is not a JSON object: %v\n%s", r.status, err, r.body)
	}
	return m
}

// into decodes the body into v.
func (r *response) into(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("status %d: decode body into %T: %v\n%s", r.status, v, err, r.body)
	}
}

// req sends one request. body may be nil, a string, []byte or any value to
// marshal as JSON. key "" sends no Authorization header; hdr holds extra
// header name, value pairs. A transport failure fails the test, so req must
// be called from the test's goroutine; other goroutines use do.
func (a *app) req(method, path, key string, body any, hdr ...string) *response {
	a.t.Helper()
	r, err := a.do(method, path, key, body, hdr...)
	if err != nil {
		a.t.Fatal(err)
	}
	return r
}

// do is req returning transport errors instead of failing the test.
func (a *app) do(method, path, key string, body any, hdr ...string) (*response, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: raw}, nil
}

// ok sends a request that must succeed with 200 and a JSON object body.
func (a *app) ok(method, path, key string, body any) map[string]any {
	a.t.Helper()
	r := a.req(method, path, key, body)
	if r.status != http.StatusOK {
		a.t.Fatalf("%s %s: status %d, want 200\n%s", method, path, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		a.t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	return r.json(a.t)
}

// Typed views of the read responses.
type sessionJSON struct {
	ID               string  `json:"id"`
	ExternalID       string  `json:"externalId"`
	Source           string  `json:"source"`
	Title            string  `json:"title"`
	ProjectPath      string  `json:"projectPath"`
	ProjectName      string  `json:"projectName"`
	Model            string  `json:"model"`
	Provider         string  `json:"provider"`
	PromptTokens     int64   `json:"promptTokens"`
	CompletionTokens int64   `json:"completionTokens"`
	TotalTokens      int64   `json:"totalTokens"`
	Cost             float64 `json:"cost"`
	DurationMs       int64   `json:"durationMs"`
	MessageCount     int64   `json:"messageCount"`
	Visibility       string  `json:"visibility"`
	IsPublic         bool    `json:"isPublic"`
	CreatedAt        int64   `json:"createdAt"`
	UpdatedAt        int64   `json:"updatedAt"`
}

type messageJSON struct {
	ID               string            `json:"id"`
	ExternalID       string            `json:"externalId"`
	Role             string            `json:"role"`
	Parts            []json.RawMessage `json:"parts"`
	TextContent      *string           `json:"textContent"`
	Model            string            `json:"model"`
	PromptTokens     *int64            `json:"promptTokens"`
	CompletionTokens *int64            `json:"completionTokens"`
	DurationMs       *int64            `json:"durationMs"`
	CreatedAt        int64             `json:"createdAt"`
}

type listJSON struct {
	Sessions   []sessionJSON `json:"sessions"`
	NextCursor string        `json:"nextCursor"`
}

type getJSON struct {
	Session  sessionJSON   `json:"session"`
	Messages []messageJSON `json:"messages"`
}

type batchJSON struct {
	OK       bool          `json:"ok"`
	Sessions ingest.Counts `json:"sessions"`
	Messages ingest.Counts `json:"messages"`
	Errors   []string      `json:"errors"`
}

func (a *app) list(key, query string) listJSON {
	a.t.Helper()
	r := a.req("GET", "/api/sessions"+query, key, nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /api/sessions%s: %d %s", query, r.status, r.body)
	}
	var l listJSON
	r.into(a.t, &l)
	return l
}

func (a *app) get(key, id string) getJSON {
	a.t.Helper()
	r := a.req("GET", "/api/sessions/get?id="+id, key, nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("GET /api/sessions/get?id=%s: %d %s", id, r.status, r.body)
	}
	var g getJSON
	r.into(a.t, &g)
	return g
}

func (a *app) batch(key string, body any) batchJSON {
	a.t.Helper()
	r := a.req("POST", "/sync/batch", key, body)
	if r.status != http.StatusOK {
		a.t.Fatalf("POST /sync/batch: %d %s", r.status, r.body)
	}
	var b batchJSON
	r.into(a.t, &b)
	if !b.OK || b.Errors == nil {
		a.t.Fatalf("batch response %s: want ok true and an errors array", r.body)
	}
	return b
}

// byExternal finds the caller's session with this externalId.
func (a *app) byExternal(key, externalID string) sessionJSON {
	a.t.Helper()
	for _, s := range a.list(key, "?limit=500").Sessions {
		if s.ExternalID == externalID {
			return s
		}
	}
	a.t.Fatalf("no session with externalId %q", externalID)
	return sessionJSON{}
}

// snapshot renders everything the store holds for every user (sessions,
// messages, outbox), so a test can assert a rejected request wrote nothing.
func (a *app) snapshot() string {
	a.t.Helper()
	var b strings.Builder
	err := a.store.View(bg, func(tx *kv.Tx) error {
		users, err := tx.Users()
		if err != nil {
			return err
		}
		for _, u := range users {
			var ss []kv.Session
			if err := tx.Sessions(u.ID, func(s kv.Session) error { ss = append(ss, s); return nil }); err != nil {
				return err
			}
			sort.Slice(ss, func(i, j int) bool { return ss[i].ID < ss[j].ID })
			for _, s := range ss {
				raw, _ := json.Marshal(s)
				fmt.Fprintf(&b, "%s\n", raw)
				if err := tx.Messages(u.ID, s.ID, func(m kv.Message) error {
					raw, _ := json.Marshal(m)
					fmt.Fprintf(&b, "  %s\n", raw)
					return nil
				}); err != nil {
					return err
				}
			}
			if err := tx.Tombstones(u.ID, func(ts kv.Tombstone) error {
				fmt.Fprintf(&b, "tombstone %s %+v\n", u.ID, ts)
				return nil
			}); err != nil {
				return err
			}
		}
		fmt.Fprintf(&b, "outbox %d\n", tx.OutboxLen())
		return nil
	})
	if err != nil {
		a.t.Fatal(err)
	}
	return b.String()
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("invalid JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}
