package httpd_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/internal/kvtest"
	"github.com/hindsight-dev/hindsight/internal/pgtest"
	"github.com/hindsight-dev/hindsight/kv"
)

// smallLimits keep over-cap bodies small.
var smallLimits = ingest.Limits{MaxBody: 2048, MaxBatchEntries: 5, MaxPartBytes: 128, MaxFieldBytes: 64}

// checkError asserts a JSON error response {"error", "message"} with the
// status, a message containing want, and the headers every response carries.
func checkError(t *testing.T, r *response, status int, code, want string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	e := r.json(t)
	msg, _ := e["message"].(string)
	if !slices.Equal(keysOf(e), []string{"error", "message"}) || e["error"] != code || msg == "" {
		t.Errorf("body %s, want {error: %q, message}", r.body, code)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("message %q does not contain %q", msg, want)
	}
	if r.header.Get("X-Request-Id") == "" || r.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("error response lacks X-Request-Id or CORS headers: %v", r.header)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}
}

func TestBadInput(t *testing.T) {
	a := newApp(t, options{limits: smallLimits})
	key := a.user("ann")
	// Something to leave untouched.
	a.batch(key, `{"sessions":[{"externalId":"s","title":"keep"}],"messages":[{"sessionExternalId":"s","externalId":"m","role":"user","textContent":"keep"}]}`)
	const msg = `"sessionExternalId":"s","externalId":"m2","role":"user"`
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		path, body string
		status     int
		want       string // in the message
	}{
		// every endpoint: malformed bodies
		{"/sync/session", ``, 400, "empty"},
		{"/sync/message", ``, 400, "empty"},
		{"/sync/batch", ``, 400, "empty"},
		{"/sync/session", `{"externalId":`, 400, "not valid JSON"},
		{"/sync/message", `{"role":"user",}`, 400, "not valid JSON"},
		{"/sync/batch", `{"sessions":[{]}`, 400, "not valid JSON"},
		{"/sync/session", `[{"externalId":"s"}]`, 400, "must be a JSON object"},
		{"/sync/message", `"hello"`, 400, "must be a JSON object"},
		{"/sync/batch", `[]`, 400, "must be a JSON object"},
		{"/sync/batch", `null`, 400, "must be a JSON object"},
		{"/sync/session", `{"externalId":"s"}{"externalId":"t"}`, 400, "not valid JSON"},
		// wrong field types
		{"/sync/session", `{"externalId":"s","title":5}`, 400, "title"},
		{"/sync/session", `{"externalId":"s","promptTokens":"10"}`, 400, "promptTokens"},
		{"/sync/session", `{"externalId":"s","cost":"0.1"}`, 400, "cost"},
		{"/sync/session", `{"externalId":["s"]}`, 400, "externalId"},
		{"/sync/message", `{` + msg + `,"parts":{}}`, 400, "parts"},
		{"/sync/message", `{"sessionExternalId":"s","externalId":"m2","role":3}`, 400, "role"},
		{"/sync/message", `{` + msg + `,"promptTokens":"10"}`, 400, "promptTokens"},
		{"/sync/message", `{` + msg + `,"textContent":{"text":"x"}}`, 400, "textContent"},
		{"/sync/message", `{` + msg + `,"parts":[{"type":"text","content":5}]}`, 400, "parts[0]"},
		{"/sync/batch", `{"sessions":{}}`, 400, "sessions"},
		{"/sync/batch", `{"messages":"m"}`, 400, "messages"},
		// required fields and allowed values
		{"/sync/session", `{"title":"no id"}`, 400, "externalId is required"},
		{"/sync/message", `{"externalId":"m2","role":"user"}`, 400, "sessionExternalId is required"},
		{"/sync/message", `{"sessionExternalId":"s","role":"user"}`, 400, "externalId is required"},
		{"/sync/message", `{"sessionExternalId":"s","externalId":"m2"}`, 400, "role is required"},
		{"/sync/message", `{"sessionExternalId":"s","externalId":"m2","role":"bot"}`, 400, "role must be one of user, assistant, system, tool, unknown"},
		// numbers
		{"/sync/session", `{"externalId":"s","promptTokens":-1}`, 400, "promptTokens must not be negative"},
		{"/sync/session", `{"externalId":"s","cost":-0.01}`, 400, "cost must not be negative"},
		{"/sync/message", `{` + msg + `,"durationMs":-5}`, 400, "durationMs must not be negative"},
		{"/sync/session", `{"externalId":"s","promptTokens":1e999}`, 400, "promptTokens must be a finite number"},
		{"/sync/message", `{` + msg + `,"completionTokens":-1e999}`, 400, "completionTokens"},
		// caps
		{"/sync/session", `{"externalId":"s","title":"` + long(65) + `"}`, 400, "title is 65 bytes; the limit is 64"},
		{"/sync/session", `{"externalId":"` + long(65) + `"}`, 400, "externalId"},
		{"/sync/message", `{` + msg + `,"textContent":"` + long(129) + `"}`, 400, "textContent is 129 bytes; the limit is 128"},
		{"/sync/message", `{` + msg + `,"parts":[{"type":"text","content":"` + long(129) + `"}]}`, 400, "parts[0]: content is 129 bytes"},
		{"/sync/message", `{` + msg + `,"parts":[{"type":"thinking","content":"` + long(120) + `"}]}`, 400, "parts[0]: thinking part"},
		{"/sync/batch", `{"sessions":[{"externalId":"a"},{"externalId":"b"},{"externalId":"c"}],"messages":[{},{},{}]}`, 400, "batch has 6 entries; the limit is 5"},
		// body size
		{"/sync/session", `{"externalId":"s","title":"` + long(3000) + `"}`, 413, "2 KiB"},
		{"/sync/batch", `{"sessions":[],"pad":"` + long(3000) + `"}`, 413, "2 KiB"},
	}
	before := a.snapshot()
	for _, tc := range tests {
		name := tc.path + " " + tc.body
		if len(name) > 80 {
			name = name[:80]
		}
		t.Run(name, func(t *testing.T) {
			r := a.req("POST", tc.path, key, tc.body)
			code := "Bad Request"
			if tc.status == 413 {
				code = "Payload Too Large"
			}
			checkError(t, r, tc.status, code, tc.want)
			if after := a.snapshot(); after != before {
				t.Fatalf("a rejected request changed the store:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// TestTruncatedBodiesNever500 sends every prefix of realistic payloads: each
// is valid (200) or a clean 400, never a server error.
func TestTruncatedBodiesNever500(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	payloads := map[string]string{
		"/sync/session": `{"externalId":"cc-1","source":"claude-code","title":"Fix the login redirect bug","promptTokens":315,"completionTokens":50,"cost":0.00123,"durationMs":10000}`,
		"/sync/message": `{"sessionExternalId":"cc-1","externalId":"toolu_01","role":"assistant","parts":[{"type":"tool-call","content":{"toolName":"Bash","args":{"command":"ls"}}},{"type":"thinking","content":"x"}]}`,
		"/sync/batch":   `{"sessions":[{"externalId":"pi-1","source":"pi"}],"messages":[{"sessionExternalId":"pi-1","externalId":"1","role":"user","createdAt":1768039200000,"parts":[{"type":"text","content":{"text":"hi"}}]}]}`,
	}
	for path, body := range payloads {
		for i := 0; i <= len(body); i++ {
			r := a.req("POST", path, key, body[:i])
			if r.status != 200 && r.status != 400 {
				t.Fatalf("%s with %q: status %d %s", path, body[:i], r.status, r.body)
			}
			if e := r.json(t); r.status == 400 && (e["error"] != "Bad Request" || e["message"] == "") {
				t.Fatalf("%s with %q: body %s", path, body[:i], r.body)
			}
		}
	}
}

func TestBatchPartialFailure(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	b := a.batch(key, `{
	  "sessions": [
	    {"externalId":"good-s","source":"pi","title":"Good"},
	    {"externalId":"bad-s","title":5},
	    {"externalId":"neg-s","promptTokens":-3}
	  ],
	  "messages": [
	    {"sessionExternalId":"good-s","externalId":"m-1","role":"user","textContent":"one"},
	    {"sessionExternalId":"good-s","externalId":"m-2","role":"assistant","parts":[{"type":"text","content":"two"}]},
	    {"sessionExternalId":"good-s","externalId":"m-3","role":"assistant","parts":{}},
	    {"sessionExternalId":"good-s","externalId":"m-17","role":"robot"},
	    {"sessionExternalId":"other-s","externalId":"m-5","role":"user","promptTokens":1e999},
	    "not an object",
	    {"sessionExternalId":"good-s","externalId":"m-7","role":"tool","textContent":"seven"}
	  ]}`)
	wantErrs := []string{
		"sessions[1] (externalId bad-s): title must be a string",
		"sessions[2] (externalId neg-s): promptTokens must not be negative",
		"messages[2] (externalId m-3): parts must be an array",
		"messages[3] (externalId m-17): role must be one of user, assistant, system, tool, unknown",
		"messages[4] (externalId m-5): promptTokens must be a finite number",
		"messages[5]: entry must be a JSON object",
	}
	if !slices.Equal(b.Errors, wantErrs) {
		t.Errorf("errors =\n  %s\nwant\n  %s", strings.Join(b.Errors, "\n  "), strings.Join(wantErrs, "\n  "))
	}
	if b.Sessions.Inserted != 1 || b.Sessions.Updated != 0 || b.Messages.Inserted != 3 || b.Messages.Updated != 0 {
		t.Errorf("counts sessions %+v messages %+v; want 1 and 3 inserted", b.Sessions, b.Messages)
	}
	l := a.list(key, "")
	if got := externalIDs(l.Sessions); !slices.Equal(got, []string{"good-s"}) {
		t.Errorf("sessions %v, want only good-s (no session from a rejected entry)", got)
	}
	g := a.get(key, l.Sessions[0].ID)
	var ids []string
	for _, m := range g.Messages {
		ids = append(ids, m.ExternalID)
	}
	if !slices.Equal(ids, []string{"m-1", "m-2", "m-7"}) || g.Session.MessageCount != 3 || g.Session.Title != "Good" {
		t.Errorf("stored messages %v (count %d), title %q; want m-1 m-2 m-7, 3, Good", ids, g.Session.MessageCount, g.Session.Title)
	}
}

func TestWireConventions(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	a.ok("POST", "/sync/session", key, `{"externalId":"s"}`)
	cors := map[string]string{
		"Access-Control-Allow-Origin":  "*",
		"Access-Control-Allow-Methods": "GET, POST, PATCH, DELETE, OPTIONS",
		"Access-Control-Allow-Headers": "Authorization, Content-Type",
	}
	tests := []struct {
		name, method, path, key, body string
		status                        int
		code                          string // "" = not an error
	}{
		{"health", "GET", "/health", "", "", 200, ""},
		{"list", "GET", "/api/sessions", key, "", 200, ""},
		{"sync", "POST", "/sync/session", key, `{"externalId":"s"}`, 200, ""},
		{"stats", "GET", "/api/stats", key, "", 200, ""},
		{"unauthorized", "GET", "/api/sessions", "", "", 401, "Unauthorized"},
		{"unauthorized sync", "POST", "/sync/batch", "", `{}`, 401, "Unauthorized"},
		{"bad request", "POST", "/sync/session", key, `{}`, 400, "Bad Request"},
		{"unknown id", "GET", "/api/sessions/get?id=0123456789abcdef", key, "", 404, "Not Found"},
		{"unknown path", "GET", "/nope", key, "", 404, "Not Found"},
		{"unknown path without key", "POST", "/api/nope", "", `{}`, 404, "Not Found"},
		{"trailing slash", "GET", "/health/", "", "", 404, "Not Found"},
		{"wrong method", "GET", "/sync/session", key, "", 405, "Method Not Allowed"},
		{"wrong method on health", "POST", "/health", "", `{}`, 405, "Method Not Allowed"},
		{"wrong method on a read", "PUT", "/api/sessions", key, `{}`, 405, "Method Not Allowed"},
		{"preflight", "OPTIONS", "/sync/session", "", "", 204, ""},
		{"preflight, unknown API path", "OPTIONS", "/api/anything/at/all", "", "", 204, ""},
		{"preflight outside the API", "OPTIONS", "/anything/at/all", "", "", 404, "Not Found"},
		{"preflight with a bad key", "OPTIONS", "/api/sessions", "garbage", "", 204, ""},
	}
	// Outside the cross-origin API (/health, /sync/..., /api/..., /mcp) no
	// response carries CORS headers.
	noCORS := map[string]bool{"unknown path": true, "preflight outside the API": true}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			if tc.body != "" {
				body = tc.body
			}
			r := a.req(tc.method, tc.path, tc.key, body, "Origin", "https://dashboard.example")
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			for h, v := range cors {
				if got := r.header.Get(h); noCORS[tc.name] && got != "" || !noCORS[tc.name] && got != v {
					t.Errorf("%s = %q, want %q (CORS %v)", h, got, v, !noCORS[tc.name])
				}
			}
			if id := r.header.Get("X-Request-Id"); id == "" {
				t.Errorf("no X-Request-Id")
			}
			if tc.status == 204 && len(r.body) != 0 {
				t.Errorf("204 with a body: %q", r.body)
			}
			if tc.code != "" && !noCORS[tc.name] { // (checkError requires CORS headers)
				checkError(t, r, tc.status, tc.code, "")
			}
		})
	}

	// Request ids: fresh per request, a caller's sane id is kept, an unsafe one replaced.
	id1 := a.req("GET", "/health", "", nil).header.Get("X-Request-Id")
	id2 := a.req("GET", "/health", "", nil).header.Get("X-Request-Id")
	if id1 == id2 {
		t.Errorf("two requests share X-Request-Id %q", id1)
	}
	if got := a.req("GET", "/health", "", nil, "X-Request-Id", "plugin-req_42").header.Get("X-Request-Id"); got != "plugin-req_42" {
		t.Errorf("caller's X-Request-Id replaced by %q", got)
	}
	for _, bad := range []string{"has space", "new\tline", strings.Repeat("a", 65), "<script>"} {
		got := a.req("GET", "/health", "", nil, "X-Request-Id", bad).header.Get("X-Request-Id")
		if got == bad || got == "" {
			t.Errorf("unsafe X-Request-Id %q echoed as %q", bad, got)
		}
	}
}

// panicAuth is an Authenticator that panics: a fault injected at one boundary.
type panicAuth struct{}

func (panicAuth) Authenticate(context.Context, string) (string, error) { panic("injected fault") }

// TestPanicIs500WithRequestID: a panic becomes a 500 whose body names the
// request id (and nothing internal), and the panic is logged with that id.
func TestPanicIs500WithRequestID(t *testing.T) {
	a := newApp(t, options{auth: panicAuth{}})
	r := a.req("GET", "/api/sessions", "osk_"+strings.Repeat("a", 32), nil)
	checkError(t, r, http.StatusInternalServerError, "Internal Server Error", "request id")
	id := r.header.Get("X-Request-Id")
	e := r.json(t)
	if msg := fmt.Sprint(e["message"]); !strings.Contains(msg, id) || strings.Contains(msg, "injected") {
		t.Errorf("500 message %q: want the request id %q and no internals", msg, id)
	}
	if logs := a.logs.String(); !strings.Contains(logs, "injected fault") || !strings.Contains(logs, id) {
		t.Errorf("the panic was not logged with request id %s; log:\n%s", id, logs)
	}
	// The server survives.
	if r := a.req("GET", "/health", "", nil); r.status != 200 {
		t.Errorf("health after a panic: %d", r.status)
	}
}

// TestStoreFailureIs500 breaks the store under a running server: reads fail
// with a 500 that names the request id and holds no internals.
func TestStoreFailureIs500(t *testing.T) {
	st := kvtest.OpenUnchecked(t)
	a := newApp(t, options{store: st})
	key := a.user("ann")
	a.ok("GET", "/api/sessions", key, nil) // the key is now cached
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/sessions", "/api/stats", "/sync/sessions/list", "/api/sessions/get?id=0123456789abcdef"} {
		r := a.req("GET", path, key, nil)
		checkError(t, r, http.StatusInternalServerError, "Internal Server Error", r.header.Get("X-Request-Id"))
		for _, internal := range []string{"database", "bolt", "postgres", "pgx", "records:", "closed"} {
			if strings.Contains(strings.ToLower(string(r.body)), internal) {
				t.Errorf("%s: 500 body leaks internals (%q): %s", path, internal, r.body)
			}
		}
		if logs := a.logs.String(); !strings.Contains(logs, r.header.Get("X-Request-Id")) || !strings.Contains(logs, "internal error") {
			t.Errorf("%s: the fault was not logged with its request id", path)
		}
	}
	// An uncached key needs the store: that is a server fault too, not a 401.
	other := "osk_" + strings.Repeat("b", 32)
	if r := a.req("GET", "/api/sessions", other, nil); r.status != http.StatusInternalServerError {
		t.Errorf("key lookup with a broken store: %d %s, want 500", r.status, r.body)
	}
}

// TestStoreUnavailableIs503: while the records' PostgreSQL is down every
// read, sync and key lookup answers 503 with Retry-After and the error
// body (not a 500: nothing is wrong with the request), naming no internals;
// once it is back the same requests succeed, and a sync refused meanwhile,
// sent again, is stored once.
func TestStoreUnavailableIs503(t *testing.T) {
	srv := pgtest.Start(t)
	dsn, err := srv.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.OpenPostgres(context.Background(), dsn, kv.PostgresOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, options{store: kvtest.Checked(t, st)})
	key := a.user("ann")
	a.batch(key, `{"sessions":[{"externalId":"before","title":"before"}],"messages":[{"sessionExternalId":"before","externalId":"m","role":"user","textContent":"before the outage"}]}`)
	id := a.byExternal(key, "before").ID
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	retried := `{"sessions":[{"externalId":"during","title":"during"}],"messages":[{"sessionExternalId":"during","externalId":"m","role":"user","textContent":"sent during the outage"}]}`
	requests := []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/sessions", nil},
		{"GET", "/api/stats", nil},
		{"GET", "/sync/sessions/list", nil},
		{"GET", "/api/sessions/get?id=" + id, nil},
		{"POST", "/sync/batch", retried},
		{"POST", "/sync/session", `{"externalId":"single","title":"single"}`},
		{"POST", "/sync/message", `{"sessionExternalId":"before","externalId":"m2","role":"user","textContent":"x"}`},
		{"PATCH", "/api/sessions/eval", `{"ids":["` + id + `"],"evalReady":true}`},
	}
	check := func(r *response, what string) {
		t.Helper()
		checkError(t, r, http.StatusServiceUnavailable, "Service Unavailable", "retry")
		if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
			t.Errorf("%s: Retry-After %q, want whole seconds", what, ra)
		}
		for _, internal := range []string{"postgres", "pgx", "sqlstate", "127.0.0.1", "dial", "records:"} {
			if strings.Contains(strings.ToLower(string(r.body)), internal) {
				t.Errorf("%s: 503 body leaks internals (%q): %s", what, internal, r.body)
			}
		}
	}
	for _, q := range requests {
		check(a.req(q.method, q.path, key, q.body), q.method+" "+q.path)
	}
	// An uncached key needs the store: unavailable too, not a 401 or a 500.
	check(a.req("GET", "/api/sessions", "osk_"+strings.Repeat("b", 32), nil), "an uncached key")
	if logs := a.logs.String(); strings.Contains(logs, "internal error") {
		t.Errorf("the outage was logged as an internal error:\n%s", logs)
	}

	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.batch(key, retried) // the plugin sends it again
	for _, q := range requests {
		if r := a.req(q.method, q.path, key, q.body); r.status/100 != 2 {
			t.Errorf("%s %s with the database back: %d %s", q.method, q.path, r.status, r.body)
		}
	}
	a.batch(key, retried) // twice: still one session, one message
	g := a.get(key, a.byExternal(key, "during").ID)
	if len(g.Messages) != 1 {
		t.Errorf("the sync refused during the outage and sent again twice: %d messages, want 1", len(g.Messages))
	}
}
