package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/hindsight-dev/hindsight/accounts"
	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/internal/openaitest"
	"github.com/hindsight-dev/hindsight/kv"
)

// TestAdversarial is the adversarial run of issue 25: an attacker with its
// own API key and dashboard account tries to read, change, label, export,
// search and delete another user's sessions through every route of the
// router, every MCP tool and every dashboard page and form (tenancy);
// every dashboard form is forged into the victim's browser (csrf); stored
// XSS payloads in every field the dashboard renders are loaded in Chromium
// (xss). Slow clients (header and body timeouts, 200 slow-loris
// connections) are server.TestSlowClients. Each sub-suite runs its own
// server, wired as serve wires it (server.New, as every test here) on
// loopback; the tests reach into it only to create accounts (as `hindsight
// users` and `keys` do), to wait for the indexing pipeline, and to walk
// the router (server.Server.Routes).
//
// Files: this one holds the probe that checks and counts every attacker
// request, the victim's canaries, the snapshots and the tenancy run;
// adversarial_routes_test.go the attack per route (a route of the router
// without one fails the run) and per MCP tool; adversarial_csrf_test.go
// and adversarial_xss_test.go the browser-side sub-suites.
//
// The tenancy run has two phases. In phase 1 the attackers make every
// write they legitimately can to their own data, colliding with the
// victim's externalIds, message externalIds, project names and paths, and
// words. In phase 2 they attack the victim's data. The victim's view is
// snapshotted before phase 1 (v0), between the phases (v1) and after (v2).
//
// The oracles:
//
//  1. No leak. No response to an attacker (headers and body, redirects
//     followed, REST, MCP and dashboard alike) contains a victim secret: a
//     canary (a random word planted in every field of the victim's data,
//     its user name and key label), a victim id (sessions, deleted
//     sessions, messages, the user), the victim's API key, key prefix,
//     dashboard cookie or CSRF token, or a canary externalId as a cursor
//     encodes it. The one exception is an echo: a secret that the same
//     request carried (after undoing percent-, form- and JSON-encoding, up
//     to three times) may come back in its response, as the id does in "no
//     session with id ... in this account", or the query in the context
//     text's heading. Responses that list sessions (search in every mode,
//     context, evals, lists, the sync list, MCP results, dashboard pages)
//     are also checked structurally: every session in them is the
//     attacker's.
//  2. Nothing changes. Everything the victim can read (list, every session
//     and its exports, stats, evals and their exports, deleted sessions,
//     the sync list, dashboard pages, MCP tools, search in every mode with
//     explain=true scores, and context) is equal in v0 and v1 (the
//     attackers' writes; search and context aside, see below) and in v1
//     and v2 (the attacks), scores included; afterwards the victim's key,
//     dashboard session and password still work.
//  3. Statuses. Another user's id is a 404 wherever it is put (never a 403,
//     and answered exactly as an id that exists nowhere, so nothing tells
//     the attacker it exists), and no attacker request is answered 5xx.
//
// The tenant-statistics oracle compares the victim's search and context
// answers (ids, order, scores) in v0, when the attackers have no data, and
// v1, after they wrote sessions with the victim's words: one user's data
// must never change what another sees (decisions.md, Tenancy).
//
// The sub-suites run in parallel; at the end the run logs how many
// requests each category made (one line, "adversarial requests: ...").
func TestAdversarial(t *testing.T) {
	t.Parallel()
	tl := &tally{n: map[category]int{}, ran: map[category]bool{}, status: map[category]map[int]int{}}
	t.Cleanup(func() { tl.report(t) })
	t.Run("tenancy", func(t *testing.T) {
		t.Parallel()
		runTenancy(t, tl)
	})
	t.Run("csrf", func(t *testing.T) {
		t.Parallel()
		runCSRF(t, tl)
	})
	t.Run("xss", func(t *testing.T) {
		t.Parallel()
		runXSS(t, tl)
	})
}

// --- counting ---

type category string

const (
	catREST      category = "rest"      // attacker requests to the REST API and public routes
	catMCP       category = "mcp"       // attacker HTTP requests to /mcp
	catDashboard category = "dashboard" // attacker requests to the dashboard
	catXSS       category = "xss-pages" // dashboard pages loaded in Chromium over stored payloads
	catCSRF      category = "csrf"      // forged dashboard form posts
)

var categories = []category{catREST, catMCP, catDashboard, catXSS, catCSRF}

// tally counts requests per category, for the log line the note
// quotes, and a few named figures besides.
type tally struct {
	mu      sync.Mutex
	n       map[category]int
	status  map[category]map[int]int
	ran     map[category]bool
	figures []string
}

func (tl *tally) start(cats ...category) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for _, c := range cats {
		tl.ran[c] = true
	}
}

func (tl *tally) add(c category, status int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.n[c]++
	if tl.status[c] == nil {
		tl.status[c] = map[int]int{}
	}
	tl.status[c][status]++
}

func (tl *tally) figure(format string, args ...any) {
	tl.mu.Lock()
	tl.figures = append(tl.figures, fmt.Sprintf(format, args...))
	tl.mu.Unlock()
}

// report logs one stable line (and the figures) and fails a category that
// ran without a single request.
func (tl *tally) report(t *testing.T) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var parts []string
	total := 0
	for _, c := range categories {
		parts = append(parts, fmt.Sprintf("%s=%d", c, tl.n[c]))
		total += tl.n[c]
		if tl.ran[c] && tl.n[c] == 0 {
			t.Errorf("adversarial category %s made no request: its sub-suite is not attacking anything", c)
		}
	}
	t.Logf("adversarial requests: %s total=%d", strings.Join(parts, " "), total)
	for _, c := range categories {
		var codes []int
		for code := range tl.status[c] {
			codes = append(codes, code)
		}
		sort.Ints(codes)
		var s []string
		for _, code := range codes {
			s = append(s, fmt.Sprintf("%d=%d", code, tl.status[c][code]))
		}
		if len(s) > 0 {
			t.Logf("adversarial statuses: %s %s", c, strings.Join(s, " "))
		}
	}
	sort.Strings(tl.figures)
	for _, f := range tl.figures {
		t.Logf("adversarial figure: %s", f)
	}
}

// --- secrets and the leak scan ---

// Canaries are canaryLen lowercase letters beginning with canaryPrefix: one
// word to the analyzers, and found in a body by looking for the prefix.
const (
	canaryPrefix = "vcnry"
	canaryLen    = 16
)

// secrets are the victim's: what an attacker must never receive.
type secrets struct {
	mu    sync.RWMutex
	ids   map[string]string // kv.IDLen characters: what each is
	words map[string]string // canaries (lowercase)
	other map[string]string // keys, tokens and anything of another length
}

func newSecrets() *secrets {
	return &secrets{ids: map[string]string{}, words: map[string]string{}, other: map[string]string{}}
}

func (s *secrets) add(value, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case strings.HasPrefix(value, canaryPrefix) && len(value) == canaryLen:
		s.words[value] = what
	case len(value) == kv.IDLen:
		s.ids[value] = what
	default:
		s.other[value] = what
	}
}

// find returns the secrets in b.
func (s *secrets) find(b []byte) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var found []string
	seen := map[string]bool{}
	note := func(v string) {
		if !seen[v] {
			seen[v] = true
			found = append(found, v)
		}
	}
	lower := bytes.ToLower(b)
	for i := 0; ; {
		j := bytes.Index(lower[i:], []byte(canaryPrefix))
		if j < 0 {
			break
		}
		i += j
		if i+canaryLen <= len(lower) {
			if _, ok := s.words[string(lower[i:i+canaryLen])]; ok {
				note(string(lower[i : i+canaryLen]))
			}
		}
		i++
	}
	for i := 0; i+kv.IDLen <= len(b); i++ {
		if _, ok := s.ids[string(b[i:i+kv.IDLen])]; ok {
			note(string(b[i : i+kv.IDLen]))
		}
	}
	for v := range s.other {
		if bytes.Contains(b, []byte(v)) {
			note(v)
		}
	}
	return found
}

func (s *secrets) what(v string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, m := range []map[string]string{s.words, s.ids, s.other} {
		if w, ok := m[v]; ok {
			return w
		}
	}
	return "?"
}

// supplied is everything a request carried, decoded every way a server
// might decode it: the secrets it may legitimately get back (an echo).
func supplied(req *http.Request, body []byte) string {
	var b strings.Builder
	add := func(s string) {
		for range 3 {
			b.WriteString(s)
			b.WriteByte('\n')
			d, err := url.PathUnescape(s)
			if err != nil {
				d, err = url.QueryUnescape(s)
			}
			if err != nil || d == s {
				break
			}
			s = d
		}
		if q, err := url.QueryUnescape(s); err == nil {
			b.WriteString(q)
			b.WriteByte('\n')
		}
	}
	add(req.URL.String())
	add(req.URL.Opaque)
	add(req.URL.Path)
	add(req.URL.RawQuery)
	add(string(body))
	var v any
	if json.Unmarshal(body, &v) == nil {
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				add(v)
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for k, e := range v {
					add(k)
					walk(e)
				}
			}
		}
		walk(v)
	}
	for k, vs := range req.Header {
		if k == "Cookie" || k == "Authorization" {
			continue
		}
		for _, v := range vs {
			add(v)
		}
	}
	return b.String()
}

// probe is the transport of every attacker client: it counts each request
// under its category, reads each response whole, and fails the test on a
// leak (oracle 1) or a 5xx (oracle 3), or on a 403 outside the CSRF suite.
type probe struct {
	t        *testing.T
	cat      category
	tally    *tally
	sec      *secrets
	bearer   string // sent as the Authorization header when set
	allow403 bool
}

func (p *probe) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	if body == nil {
		r.Body = nil
	}
	if p.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+p.bearer)
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		p.tally.add(p.cat, 0)
		return nil, err
	}
	p.tally.add(p.cat, resp.StatusCode)
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the response of %s %s: %w", r.Method, r.URL, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	p.check(r, body, resp, rb)
	return resp, nil
}

func (p *probe) check(req *http.Request, body []byte, resp *http.Response, rb []byte) {
	p.t.Helper()
	where := fmt.Sprintf("%s %s (%s)", req.Method, requestTarget(req), p.cat)
	if resp.StatusCode >= 500 {
		p.t.Errorf("%s: status %d, a server fault (oracle 3): %.300s", where, resp.StatusCode, rb)
	}
	if resp.StatusCode == http.StatusForbidden && !p.allow403 {
		p.t.Errorf("%s: 403 (oracle 3: another user's data is a 404, never a 403): %.300s", where, rb)
	}
	var full bytes.Buffer
	for k, vs := range resp.Header {
		fmt.Fprintf(&full, "%s: %s\n", k, strings.Join(vs, ", "))
	}
	full.Write(rb)
	found := p.sec.find(full.Bytes())
	if len(found) == 0 {
		return
	}
	sent := supplied(req, body)
	lowerSent := strings.ToLower(sent)
	for _, v := range found {
		if strings.Contains(sent, v) || strings.HasPrefix(v, canaryPrefix) && strings.Contains(lowerSent, v) {
			continue // an echo of what this request carried
		}
		b := full.Bytes()
		i := max(bytes.Index(bytes.ToLower(b), []byte(strings.ToLower(v))), 0)
		p.t.Errorf("LEAK (oracle 1): %s answered %d with the victim's %s (%s): …%s…", where, resp.StatusCode, p.sec.what(v), v,
			b[max(i-120, 0):min(i+len(v)+120, len(b))])
	}
}

func requestTarget(r *http.Request) string {
	if r.URL.Opaque != "" {
		_, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Opaque, "//"), "/")
		s := "/" + rest
		if r.URL.RawQuery != "" {
			s += "?" + r.URL.RawQuery
		}
		return s
	}
	return r.URL.RequestURI()
}

// --- tenants and requests ---

// tenant is one user of the server, with an API client and a signed-in
// dashboard client.
type tenant struct {
	name, id, key, password string
	api                     *http.Client // sends the key
	web                     *http.Client // holds the dashboard cookie; never follows redirects
	csrf                    string       // the dashboard session's CSRF token
	webToken                string       // the dashboard session cookie
}

// reply is one response, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %.300s", r.status, r.body) }

// count is the number under key in r's JSON object (-1 when there is none).
func (r reply) count(key string) int {
	var v map[string]any
	if json.Unmarshal(r.body, &v) != nil {
		return -1
	}
	n, ok := v[key].(float64)
	if !ok {
		return -1
	}
	return int(n)
}

// adv is one server under attack and its users.
type adv struct {
	t     *testing.T
	ta    *testApp
	base  string
	sec   *secrets
	tally *tally
	rng   *rand.Rand

	victim, attacker, attacker2 *tenant
	// The victim's ids, read from the victim's own responses.
	victimSessions []victimSession
	victimDeleted  []string // ids of sessions the victim deleted
	victimMessages []string
	victimProject  victimProjectNames
	// The attacker's own sessions after its writes (id -> externalId).
	attackerOwn map[string]string
}

type victimSession struct{ id, ext string }

type victimProjectNames struct{ path, name, source, model, tag, evalNote string }

func newAdv(t *testing.T, tl *tally, cfg config.Config) *adv {
	t.Helper()
	cfg.Data = t.TempDir()
	cfg.BcryptCost = bcrypt.MinCost
	ta := newTestAppConfig(t, cfg)
	return &adv{t: t, ta: ta, base: ta.srv.URL, sec: newSecrets(), tally: tl,
		rng: rand.New(rand.NewPCG(25, 4)), attackerOwn: map[string]string{}}
}

// canary returns a new random word and records it as a victim secret.
func (a *adv) canary(what string) string {
	w := a.word(canaryPrefix)
	a.sec.add(w, what)
	return w
}

// word returns prefix and random letters, canaryLen long.
func (a *adv) word(prefix string) string {
	b := []byte(prefix)
	for len(b) < canaryLen {
		b = append(b, byte('a'+a.rng.IntN(26)))
	}
	return string(b)
}

// guessID returns an id of the service's format that exists nowhere.
func (a *adv) guessID() string { return kv.NewID() }

// newTenant creates a user with a dashboard password and an API key, and
// signs its dashboard client in. An attacker's clients go through the
// probe (cat for the API; the dashboard's count as catDashboard).
func (a *adv) newTenant(name, keyLabel string, attacker bool) *tenant {
	a.t.Helper()
	ctx := context.Background()
	u, err := a.ta.app.Accounts.CreateUser(ctx, name)
	if err != nil {
		a.t.Fatal(err)
	}
	tn := &tenant{name: name, id: u.ID, password: "pw-" + a.word("p")}
	web := accounts.NewWeb(a.ta.app.Store, accounts.WebOptions{BcryptCost: bcrypt.MinCost})
	if err := web.SetPassword(ctx, name, tn.password); err != nil {
		a.t.Fatal(err)
	}
	if tn.key, _, err = a.ta.app.Accounts.CreateKey(ctx, name, keyLabel); err != nil {
		a.t.Fatal(err)
	}
	tn.api = &http.Client{Transport: bearerTransport{tn.key}, CheckRedirect: noFollow}
	webTr := http.RoundTripper(http.DefaultTransport)
	if attacker {
		tn.api = &http.Client{Transport: &probe{t: a.t, cat: catREST, tally: a.tally, sec: a.sec, bearer: tn.key}, CheckRedirect: noFollow}
		webTr = &probe{t: a.t, cat: catDashboard, tally: a.tally, sec: a.sec}
	}
	a.signIn(tn, webTr)
	return tn
}

func noFollow(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

type bearerTransport struct{ key string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// signIn signs tn's dashboard client in through the sign-in form and reads
// its CSRF token.
func (a *adv) signIn(tn *tenant, tr http.RoundTripper) {
	a.t.Helper()
	jar, _ := cookiejar.New(nil)
	tn.web = &http.Client{Jar: jar, Transport: tr, CheckRedirect: noFollow}
	login := a.send(tn.web, http.MethodGet, "/login", nil, "")
	m := csrfField.FindSubmatch(login.body)
	if m == nil {
		a.t.Fatalf("no CSRF field on /login: %s", login)
	}
	r := a.send(tn.web, http.MethodPost, "/login", []byte(url.Values{"csrf": {string(m[1])}, "name": {tn.name}, "password": {tn.password}}.Encode()), formType)
	if r.status != http.StatusSeeOther {
		a.t.Fatalf("sign in as %s: %s", tn.name, r)
	}
	a.refreshCSRF(tn)
	u, _ := url.Parse(a.base)
	for _, c := range jar.Cookies(u) {
		if c.Name == "hindsight_session" {
			tn.webToken = c.Value
		}
	}
}

func (a *adv) refreshCSRF(tn *tenant) {
	a.t.Helper()
	page := a.send(tn.web, http.MethodGet, "/settings", nil, "")
	m := csrfField.FindSubmatch(page.body)
	if page.status != http.StatusOK || m == nil {
		a.t.Fatalf("%s's settings page: %s", tn.name, page)
	}
	tn.csrf = string(m[1])
}

const formType = "application/x-www-form-urlencoded"

// send makes one request to the server. target is the request target as
// it goes on the wire (path and query, already encoded, possibly oddly);
// body is sent as is with contentType.
func (a *adv) send(c *http.Client, method, target string, body []byte, contentType string) reply {
	a.t.Helper()
	host := strings.TrimPrefix(a.base, "http://")
	path, query, _ := strings.Cut(target, "?")
	u := &url.URL{Scheme: "http", Host: host, Opaque: "//" + host + path, RawQuery: query}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.base, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.URL = u
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, target, err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// sendJSON sends v as JSON (a string or []byte is sent as is).
func (a *adv) sendJSON(c *http.Client, method, target string, v any) reply {
	a.t.Helper()
	var b []byte
	switch v := v.(type) {
	case nil:
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			a.t.Fatal(err)
		}
	}
	ct := ""
	if b != nil {
		ct = "application/json"
	}
	return a.send(c, method, target, b, ct)
}

// follow fetches a same-site redirect's target with the same client, so
// the page it leads to is checked too.
func (a *adv) follow(c *http.Client, r reply) reply {
	a.t.Helper()
	loc := r.header.Get("Location")
	if r.status < 300 || r.status > 399 || !strings.HasPrefix(loc, "/") || strings.HasPrefix(loc, "//") {
		return r
	}
	return a.send(c, http.MethodGet, loc, nil, "")
}

// want fails the test unless r's status is one of codes.
func (a *adv) want(what string, r reply, codes ...int) reply {
	a.t.Helper()
	if !slices.Contains(codes, r.status) {
		a.t.Errorf("%s: %s, want status %v", what, r, codes)
	}
	return r
}

// --- the victim's data ---

// plantVictim syncs the victim's sessions with a canary in every field,
// labels some, deletes two (one under a shared externalId, one under a
// canary), and records every id the victim's responses show.
func (a *adv) plantVictim() {
	a.t.Helper()
	v := a.victim
	names := victimProjectNames{path: "/home/victim/" + a.canary("project path"), name: a.canary("project name"),
		source: a.canary("source"), model: a.canary("model"), tag: a.canary("eval tag"), evalNote: a.canary("eval note")}
	a.victimProject = names
	var sessions, messages []any
	for i := range 6 {
		ext := a.canary(fmt.Sprintf("session %d externalId", i))
		if i < 2 {
			ext = fmt.Sprintf("shared-%d", i+1) // the attacker collides with these
		}
		s := map[string]any{"externalId": ext, "source": "claude-code",
			"title":       fmt.Sprintf("%s deployment rollback plan for the kubernetes cluster", a.canary(fmt.Sprintf("session %d title", i))),
			"projectPath": names.path, "projectName": names.name, "model": "claude-sonnet-4",
			"provider": a.canary("provider"), "promptTokens": 1000 + i, "completionTokens": 200 + i, "cost": 0.25, "durationMs": 60000}
		if i < 2 {
			s["projectPath"], s["projectName"] = "/home/dev/shared", "shared-project"
		}
		if i == 3 {
			s["source"], s["model"] = names.source, names.model
		}
		sessions = append(sessions, s)
		c := func(field string) string { return a.canary(fmt.Sprintf("session %d %s", i, field)) }
		messages = append(messages,
			msg(ext, "m1", "user", map[string]any{"textContent": c("user text") + " how do I fix the kubernetes deployment timeout after the migration"}),
			msg(ext, "m2", "assistant", map[string]any{"model": c("message model"), "parts": []any{
				map[string]any{"type": "text", "content": c("assistant text") + " roll back the migration, then clear the cache and redeploy"},
				map[string]any{"type": "tool-call", "toolName": c("tool name"), "args": map[string]any{"command": c("tool args")}},
				map[string]any{"type": "tool-result", "toolName": "Bash", "content": c("tool result") + " deployment rolled back"},
				map[string]any{"type": "thinking", "text": c("thinking")},
			}}),
			msg(ext, "m3", "system", map[string]any{"textContent": c("system text")}),
			msg(ext, "m4", "tool", map[string]any{"textContent": c("tool message")}),
		)
	}
	deleted := []string{"shared-3", a.canary("deleted session externalId")}
	for i, ext := range deleted {
		sessions = append(sessions, map[string]any{"externalId": ext, "source": names.source,
			"title": a.canary(fmt.Sprintf("deleted session %d title", i)) + " deployment rollback", "projectName": "shared-project"})
		messages = append(messages, msg(ext, "m1", "user", map[string]any{"textContent": a.canary("deleted session text") + " kubernetes cache"}))
	}
	r := a.sendJSON(v.api, http.MethodPost, "/sync/batch", map[string]any{"sessions": sessions, "messages": messages})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"errors":[]`) {
		a.t.Fatalf("victim's batch: %s", r)
	}
	list := a.listAll(v)
	for _, s := range list {
		a.sec.add(s.ID, "session id ("+s.ExternalID+")")
		if strings.HasPrefix(s.ExternalID, canaryPrefix) {
			// As the deleted list's cursors carry it.
			a.sec.add(base64.RawURLEncoding.EncodeToString([]byte(s.ExternalID)), "externalId in a cursor")
		}
	}
	// Labels, through the API as the Evals view would set them.
	var ready []string
	for _, s := range list {
		if slices.Contains(deleted, s.ExternalID) {
			continue
		}
		if len(ready) < 4 {
			ready = append(ready, s.ID)
		}
	}
	r = a.sendJSON(v.api, http.MethodPatch, "/api/sessions/eval", map[string]any{"ids": ready, "evalReady": true, "evalStatus": "golden",
		"evalNotes": names.evalNote + " the rollback was right", "evalTags": []string{names.tag, "shared-tag"},
		"expectedOutput": a.canary("expected output") + " roll back first"})
	a.want("victim labels", r, http.StatusOK)
	// Every message id, then the deletions: tombstones, one under a shared
	// externalId.
	for _, s := range list {
		var detail struct{ Messages []struct{ ID string } }
		json.Unmarshal(a.want("victim get", a.send(v.api, http.MethodGet, "/api/sessions/get?id="+s.ID, nil, ""), http.StatusOK).body, &detail)
		for _, m := range detail.Messages {
			a.sec.add(m.ID, "message id")
			a.victimMessages = append(a.victimMessages, m.ID)
		}
		if slices.Contains(deleted, s.ExternalID) {
			a.want("victim deletes", a.send(v.api, http.MethodDelete, "/api/sessions?id="+s.ID, nil, ""), http.StatusOK)
			a.victimDeleted = append(a.victimDeleted, s.ID)
			continue
		}
		a.victimSessions = append(a.victimSessions, victimSession{id: s.ID, ext: s.ExternalID})
	}
	if len(a.victimSessions) != 6 || len(a.victimDeleted) != 2 || len(a.victimMessages) != 26 {
		a.t.Fatalf("victim fixture: %d sessions, %d deleted, %d messages", len(a.victimSessions), len(a.victimDeleted), len(a.victimMessages))
	}
}

type listed struct {
	ID, ExternalID, Title string
}

func (a *adv) listAll(tn *tenant) []listed {
	a.t.Helper()
	var out struct{ Sessions []listed }
	r := a.send(tn.api, http.MethodGet, "/api/sessions?limit=500", nil, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &out) != nil {
		a.t.Fatalf("%s's list: %s", tn.name, r)
	}
	return out.Sessions
}

// registerVictimAccount records the victim's account secrets: the user id,
// name, key, key prefix, cookie and CSRF token.
func (a *adv) registerVictimAccount() {
	v := a.victim
	a.sec.add(v.id, "user id")
	a.sec.add(v.name, "user name")
	a.sec.add(v.key, "API key")
	a.sec.add(v.key[:10], "API key prefix")
	a.sec.add(v.webToken, "dashboard cookie")
	a.sec.add(v.csrf, "CSRF token")
}

// --- snapshots (oracle 2) ---

// snapshot is what the victim can read: data answers, and ranking answers
// (search and context: ids, order, scores), kept apart so that the
// tenant-statistics oracle can be told from oracle 2.
type snapshot struct {
	data, ranking map[string]string
}

// snapshotQueries are searched in every mode: the words both users write,
// and one of the victim's own titles.
func (a *adv) snapshotQueries() []string {
	return []string{"deployment rollback", "kubernetes timeout", "migration cache redeploy", "deployment", a.victimTitleWord()}
}

func (a *adv) victimTitleWord() string {
	for w, what := range a.sec.words {
		if what == "session 2 title" {
			return w
		}
	}
	a.t.Fatal("no title canary")
	return ""
}

var requestIDs = regexp.MustCompile(`request [0-9A-Za-z-]+`)

func (a *adv) snapshot(mcpSnap func(data, ranking map[string]string)) snapshot {
	a.t.Helper()
	s := snapshot{data: map[string]string{}, ranking: map[string]string{}}
	v := a.victim
	keep := func(m map[string]string, c *http.Client, target string) {
		r := a.send(c, http.MethodGet, target, nil, "")
		if r.status != http.StatusOK {
			a.t.Errorf("the victim's own %s: %s", target, r)
		}
		body := r.body
		if id := r.header.Get("X-Request-Id"); id != "" {
			body = bytes.ReplaceAll(body, []byte(id), []byte("<request-id>"))
		}
		body = requestIDs.ReplaceAll(body, []byte("request <id>"))
		m[target] = fmt.Sprintf("%d sessions=%s cases=%s\n%s", r.status, r.header.Get("X-Export-Sessions"), r.header.Get("X-Export-TestCases"), body)
	}
	for _, p := range []string{"/api/sessions?limit=500", "/api/stats", "/api/evals", "/api/sessions/deleted", "/sync/sessions/list"} {
		keep(s.data, v.api, p)
	}
	for _, f := range []string{"deepeval", "chat-jsonl", "text", "openai-evals", "promptfoo"} {
		keep(s.data, v.api, "/api/export/evals?format="+f)
	}
	for _, vs := range a.victimSessions {
		keep(s.data, v.api, "/api/sessions/get?id="+vs.id)
		for _, f := range []string{"json", "markdown", "jsonl"} {
			keep(s.data, v.api, "/api/export?format="+f+"&id="+vs.id)
		}
		keep(s.data, v.web, "/sessions/"+vs.id)
	}
	for _, p := range []string{"/sessions", "/evals", "/sessions/deleted"} {
		keep(s.data, v.web, p)
	}
	for _, q := range a.snapshotQueries() {
		qe := url.QueryEscape(q)
		for _, m := range []string{"fulltext", "semantic", "hybrid"} {
			keep(s.ranking, v.api, "/api/search?explain=true&limit=100&type="+m+"&q="+qe)
			keep(s.ranking, v.web, "/sessions?mode="+m+"&q="+qe)
		}
		for _, f := range []string{"text", "messages"} {
			keep(s.ranking, v.api, "/api/context?format="+f+"&q="+qe)
		}
	}
	keys, err := a.ta.app.Accounts.Keys(context.Background(), v.id)
	if err != nil {
		a.t.Fatal(err)
	}
	var kb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&kb, "%s %q created=%d revoked=%d\n", k.Prefix, k.Label, k.CreatedAt, k.Revoked)
	}
	s.data["keys (Settings)"] = kb.String()
	if mcpSnap != nil {
		mcpSnap(s.data, s.ranking)
	}
	return s
}

// compareSnapshots reports every answer that differs; label says which
// oracle is failing.
func compareSnapshots(t *testing.T, label string, before, after map[string]string) int {
	t.Helper()
	var keys []string
	for k := range before {
		keys = append(keys, k)
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	n := 0
	for _, k := range keys {
		b, a := before[k], after[k]
		if a == b {
			continue
		}
		n++
		if n > 8 {
			continue
		}
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Errorf("%s: the victim's %s changed at byte %d:\n  before …%s…\n  after  …%s…", label, k, i,
			b[max(i-150, 0):min(i+150, len(b))], a[max(i-150, 0):min(i+150, len(a))])
	}
	if n > 8 {
		t.Errorf("%s: %d answers changed in all (8 shown)", label, n)
	}
	return n
}

// --- the tenancy run ---

func runTenancy(t *testing.T, tl *tally) {
	tl.start(catREST, catMCP, catDashboard)
	fake := openaitest.New(t, openaitest.Options{Dim: 64})
	a := newAdv(t, tl, config.Config{Semantic: config.Semantic{Embedder: "openai", OpenAIKey: "sk-test",
		OpenAIBaseURL: fake.URL(), OpenAIModel: "text-embedding-3-small", OpenAIDim: 64}})
	keyLabel := a.word(canaryPrefix)
	a.victim = a.newTenant(a.word(canaryPrefix), keyLabel, false)
	a.sec.add(keyLabel, "API key label")
	a.registerVictimAccount()
	a.plantVictim()
	a.attacker = a.newTenant("mallory", "mallory's laptop", true)
	a.attacker2 = a.newTenant("mallory2", "mallory's other account", true)
	a.ta.idle()

	routes, err := a.ta.app.Routes()
	if err != nil {
		t.Fatal(err)
	}
	cases := checkRouteCoverage(t, routes)

	mcpVictim := a.mcpSession(a.victim, false)
	v0 := a.snapshot(a.mcpSnapshot(mcpVictim))

	// Phase 1: the attacker's own writes, colliding with the victim's
	// externalIds, project names and words.
	for _, c := range cases {
		if c.writes != nil {
			c.writes(a)
		}
	}
	a.ta.idle()
	a.checkAttackerWrites()
	v1 := a.snapshot(a.mcpSnapshot(mcpVictim))
	compareSnapshots(t, "oracle 2 (the attacker's writes)", v0.data, v1.data)
	if n := compareSnapshots(t, "TENANT-STATISTICS ORACLE (the attacker's data changed the victim's ranking or scores)", v0.ranking, v1.ranking); n > 0 {
		tl.figure("tenant-statistics oracle: %d of %d ranking answers changed", n, len(v0.ranking))
	} else {
		tl.figure("tenant-statistics oracle: 0 of %d ranking answers changed", len(v0.ranking))
	}

	// Phase 2: every route, every MCP tool, against the victim's data.
	for _, c := range cases {
		if c.attack != nil {
			c.attack(a)
		}
	}
	a.attackRouteVariants(routes)
	a.ta.idle()
	v2 := a.snapshot(a.mcpSnapshot(mcpVictim))
	compareSnapshots(t, "oracle 2 (the attacks)", v1.data, v2.data)
	compareSnapshots(t, "oracle 2 (the attacks, ranking)", v1.ranking, v2.ranking)
	a.checkVictimAccount()
	tl.figure("victim secrets watched: %d canaries, %d ids, %d keys and tokens", len(a.sec.words), len(a.sec.ids), len(a.sec.other))
}

// checkVictimAccount: the victim's key, dashboard session and password
// still work, and the attacker's tombstones do not touch the victim's
// syncs.
func (a *adv) checkVictimAccount() {
	a.t.Helper()
	v := a.victim
	a.want("victim's key after the attacks", a.send(v.api, http.MethodGet, "/api/stats", nil, ""), http.StatusOK)
	a.want("victim's dashboard session after the attacks", a.send(v.web, http.MethodGet, "/settings", nil, ""), http.StatusOK)
	if status, _ := signInStatus(a.t, a.base, v.name, v.password); status != http.StatusSeeOther {
		a.t.Errorf("the victim cannot sign in after the attacks: %d", status)
	}
	// attacker2 deleted its own shared-1 (it has a tombstone for it): the
	// victim's next sync of shared-1 is stored as usual, not ignored.
	r := a.sendJSON(v.api, http.MethodPost, "/sync/message", map[string]any{"sessionExternalId": "shared-1", "externalId": "m9", "role": "user", "textContent": "one more"})
	if r.status != http.StatusOK || strings.Contains(string(r.body), "ignored") {
		a.t.Errorf("the victim's sync of shared-1 after the attacker deleted its own shared-1: %s", r)
	}
}
