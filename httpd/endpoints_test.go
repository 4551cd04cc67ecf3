package httpd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
)

func keysOf(m map[string]any) []string {
	ks := slices.Collect(maps.Keys(m))
	sort.Strings(ks)
	return ks
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// isID reports whether v is a service id (16 characters of [a-z0-9]).
func isID(v any) bool {
	s, ok := v.(string)
	if !ok || len(s) != kv.IDLen {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func TestHealth(t *testing.T) {
	a := newApp(t, options{})
	before := time.Now().UnixMilli()
	body := a.ok("GET", "/health", "", nil)
	after := time.Now().UnixMilli()
	if !slices.Equal(keysOf(body), []string{"status", "timestamp"}) || body["status"] != "ok" {
		t.Errorf("health = %v, want exactly status ok and timestamp", body)
	}
	ts, _ := body["timestamp"].(float64)
	if int64(ts) < before || int64(ts) > after {
		t.Errorf("timestamp %v not a current millisecond time in [%d, %d]", body["timestamp"], before, after)
	}
	if r := a.req("HEAD", "/health", "", nil); r.status != http.StatusOK {
		t.Errorf("HEAD /health: %d", r.status)
	}
}

func TestSyncResponseShapes(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")

	s := a.ok("POST", "/sync/session", key, `{"externalId":"s1","source":"claude-code"}`)
	if !slices.Equal(keysOf(s), []string{"ok", "sessionId"}) || s["ok"] != true || !isID(s["sessionId"]) {
		t.Errorf("/sync/session = %v, want {ok: true, sessionId: <id>}", s)
	}
	m := a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"hi"}`)
	if !slices.Equal(keysOf(m), []string{"messageId", "ok"}) || m["ok"] != true || !isID(m["messageId"]) {
		t.Errorf("/sync/message = %v, want {ok: true, messageId: <id>}", m)
	}
	// Repeating a call returns the same ids.
	if s2 := a.ok("POST", "/sync/session", key, `{"externalId":"s1","source":"claude-code"}`); s2["sessionId"] != s["sessionId"] {
		t.Errorf("repeated /sync/session returned %v, first %v", s2["sessionId"], s["sessionId"])
	}
	if m2 := a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s1","externalId":"m1","role":"user","textContent":"hi"}`); m2["messageId"] != m["messageId"] {
		t.Errorf("repeated /sync/message returned %v, first %v", m2["messageId"], m["messageId"])
	}

	b := a.ok("POST", "/sync/batch", key, `{"sessions":[{"externalId":"s2"}],"messages":[{"sessionExternalId":"s2","externalId":"m1","role":"user"}]}`)
	want := map[string]any{"ok": true, "sessions": map[string]any{"inserted": 1.0, "updated": 0.0},
		"messages": map[string]any{"inserted": 1.0, "updated": 0.0}, "errors": []any{}, "ignored": []any{}}
	if fmt.Sprint(b) != fmt.Sprint(want) {
		t.Errorf("/sync/batch = %v\nwant %v", b, want)
	}
	// An empty batch is fine too.
	if b := a.batch(key, `{}`); b.Sessions.Inserted+b.Messages.Inserted+len(b.Errors) != 0 {
		t.Errorf("empty batch: %+v", b)
	}

	l := a.ok("GET", "/sync/sessions/list", key, nil)
	ids, _ := l["sessionIds"].([]any)
	var got []string
	for _, id := range ids {
		got = append(got, id.(string))
	}
	if !slices.Equal(keysOf(l), []string{"deletedIds", "sessionIds"}) || !slices.Equal(sorted(got...), []string{"s1", "s2"}) {
		t.Errorf("/sync/sessions/list = %v, want sessionIds [s1 s2] and deletedIds", l)
	}
	// A user with nothing gets an empty array, not null.
	other := a.user("bob")
	if r := a.req("GET", "/sync/sessions/list", other, nil); strings.TrimSpace(string(r.body)) != `{"sessionIds":[],"deletedIds":[]}` {
		t.Errorf("empty /sync/sessions/list = %s", r.body)
	}
	if r := a.req("GET", "/api/sessions", other, nil); strings.TrimSpace(string(r.body)) != `{"sessions":[]}` {
		t.Errorf("empty /api/sessions = %s", r.body)
	}
}

var baseSessionFields = []string{"id", "externalId", "source", "promptTokens", "completionTokens", "totalTokens",
	"cost", "durationMs", "messageCount", "visibility", "isPublic", "createdAt", "updatedAt"}

func TestSessionReadObject(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	full := a.ok("POST", "/sync/session", key, `{"externalId":"full","source":"opencode","title":"Add login","model":"gpt-4.1",
	  "provider":"openai","projectPath":"/home/dev/app","projectName":"app","gitBranch":"feat/login","promptTokens":1200,"completionTokens":340,
	  "cost":0.0123,"durationMs":5000,"messageCount":7,"toolCallCount":2}`)["sessionId"]
	bare := a.ok("POST", "/sync/session", key, `{"externalId":"bare"}`)["sessionId"]

	r := a.req("GET", "/api/sessions", key, nil)
	var raw struct{ Sessions []map[string]any }
	r.into(t, &raw)
	if len(raw.Sessions) != 2 {
		t.Fatalf("got %d sessions, want 2: %s", len(raw.Sessions), r.body)
	}
	byID := map[any]map[string]any{}
	for _, s := range raw.Sessions {
		byID[s["id"]] = s
	}
	f, b := byID[full], byID[bare]
	if f == nil || b == nil {
		t.Fatalf("listing %s lacks a session", r.body)
	}
	wantFull := sorted(append(slices.Clone(baseSessionFields), "title", "model", "provider", "projectPath", "projectName", "gitBranch")...)
	if !slices.Equal(keysOf(f), wantFull) {
		t.Errorf("full session fields = %v\nwant %v", keysOf(f), wantFull)
	}
	if !slices.Equal(keysOf(b), sorted(baseSessionFields...)) {
		t.Errorf("bare session fields = %v, want %v (optional strings omitted)", keysOf(b), sorted(baseSessionFields...))
	}
	checks := map[string]any{"externalId": "full", "source": "opencode", "title": "Add login", "model": "gpt-4.1",
		"provider": "openai", "projectPath": "/home/dev/app", "projectName": "app", "gitBranch": "feat/login", "promptTokens": 1200.0,
		"completionTokens": 340.0, "totalTokens": 1540.0, "cost": 0.0123, "durationMs": 5000.0,
		"messageCount": 0.0, "visibility": "private", "isPublic": false}
	for k, v := range checks {
		if f[k] != v {
			t.Errorf("full.%s = %v (%T), want %v", k, f[k], f[k], v)
		}
	}
	if b["source"] != "opencode" || b["visibility"] != "private" || b["isPublic"] != false || b["totalTokens"] != 0.0 {
		t.Errorf("bare session = %v", b)
	}
	for _, s := range []map[string]any{f, b} {
		c, u := s["createdAt"].(float64), s["updatedAt"].(float64)
		if c < float64(epoch.UnixMilli()) || u < c {
			t.Errorf("timestamps createdAt %v updatedAt %v: want ms times, updatedAt >= createdAt", c, u)
		}
	}
	// /api/sessions/get returns the same object.
	g := a.req("GET", "/api/sessions/get?id="+full.(string), key, nil)
	var got struct{ Session map[string]any }
	g.into(t, &got)
	if fmt.Sprint(got.Session) != fmt.Sprint(f) {
		t.Errorf("get session = %v\nlist item   = %v", got.Session, f)
	}
}

func TestGetSessionMessages(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	sid := a.ok("POST", "/sync/session", key, `{"externalId":"s","source":"opencode"}`)["sessionId"].(string)
	bodies := []string{
		`{"sessionExternalId":"s","externalId":"m1","role":"user","textContent":"Add a login page"}`,
		`{"sessionExternalId":"s","externalId":"m2","role":"assistant","model":"gpt-4.1","promptTokens":1200,"completionTokens":340,"durationMs":5321,
		  "parts":[{"type":"text","content":"Done."}]}`,
		`{"sessionExternalId":"s","externalId":"m3","role":"tool"}`,
		`{"sessionExternalId":"s","externalId":"m0","role":"system","textContent":"You are helpful."}`,
	}
	var ids []string
	for _, b := range bodies {
		ids = append(ids, a.ok("POST", "/sync/message", key, b)["messageId"].(string))
	}
	// Re-sending m1 later does not move it.
	a.ok("POST", "/sync/message", key, `{"sessionExternalId":"s","externalId":"m1","role":"user","textContent":"Add a login page, please"}`)

	r := a.req("GET", "/api/sessions/get?id="+sid, key, nil)
	var raw struct {
		Session  map[string]any
		Messages []map[string]any
	}
	r.into(t, &raw)
	if top := r.json(t); !slices.Equal(keysOf(top), []string{"messages", "session"}) || len(raw.Messages) != 4 {
		t.Fatalf("get = %s, want 4 messages", r.body)
	}
	var order []string
	for i, m := range raw.Messages {
		order = append(order, m["externalId"].(string))
		if m["id"] != ids[i] {
			t.Errorf("message %d id %v, want %v (the id /sync/message returned)", i, m["id"], ids[i])
		}
	}
	if !slices.Equal(order, []string{"m1", "m2", "m3", "m0"}) {
		t.Errorf("message order %v, want creation order m1 m2 m3 m0", order)
	}
	want := []struct {
		fields []string
		check  map[string]any
	}{
		{[]string{"id", "externalId", "role", "parts", "textContent", "createdAt"},
			map[string]any{"role": "user", "textContent": "Add a login page, please"}},
		{[]string{"id", "externalId", "role", "parts", "model", "promptTokens", "completionTokens", "durationMs", "createdAt"},
			map[string]any{"role": "assistant", "model": "gpt-4.1", "promptTokens": 1200.0, "completionTokens": 340.0, "durationMs": 5321.0}},
		{[]string{"id", "externalId", "role", "parts", "createdAt"}, map[string]any{"role": "tool"}},
		{[]string{"id", "externalId", "role", "parts", "textContent", "createdAt"}, map[string]any{"role": "system"}},
	}
	for i, w := range want {
		m := raw.Messages[i]
		if !slices.Equal(keysOf(m), sorted(w.fields...)) {
			t.Errorf("message %d fields %v, want %v", i, keysOf(m), sorted(w.fields...))
		}
		for k, v := range w.check {
			if m[k] != v {
				t.Errorf("message %d %s = %v, want %v", i, k, m[k], v)
			}
		}
		if _, ok := m["parts"].([]any); !ok {
			t.Errorf("message %d parts = %v, want an array (empty when none)", i, m["parts"])
		}
		if c, _ := m["createdAt"].(float64); c < float64(epoch.UnixMilli()) {
			t.Errorf("message %d createdAt %v", i, m["createdAt"])
		}
	}
	if raw.Session["messageCount"] != 4.0 {
		t.Errorf("messageCount %v, want 4", raw.Session["messageCount"])
	}
}

func TestStats(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	empty := a.ok("GET", "/api/stats", key, nil)
	for _, k := range []string{"sessionCount", "messageCount", "totalTokens", "totalCost", "totalDurationMs"} {
		if empty[k] != 0.0 {
			t.Errorf("empty stats %s = %v, want 0", k, empty[k])
		}
	}
	if mu, ok := empty["modelUsage"].(map[string]any); !ok || len(mu) != 0 {
		t.Errorf("empty stats modelUsage = %v, want {}", empty["modelUsage"])
	}
	a.batch(key, `{"sessions":[
	  {"externalId":"a","model":"m1","promptTokens":100,"completionTokens":50,"cost":1.25,"durationMs":1000},
	  {"externalId":"b","model":"m1","promptTokens":1,"completionTokens":1,"totalTokens":500,"cost":0.5,"durationMs":250},
	  {"externalId":"c","model":"m2","promptTokens":10,"cost":0.25}],
	  "messages":[
	  {"sessionExternalId":"a","externalId":"1","role":"user","promptTokens":99999},
	  {"sessionExternalId":"a","externalId":"2","role":"assistant","completionTokens":99999},
	  {"sessionExternalId":"c","externalId":"1","role":"user"},
	  {"sessionExternalId":"d","externalId":"1","role":"user"}]}`)
	st := a.ok("GET", "/api/stats", key, nil)
	want := map[string]float64{"sessionCount": 4, "messageCount": 4, "totalTokens": 150 + 500 + 10, "totalCost": 2, "totalDurationMs": 1250}
	for k, v := range want {
		if got, _ := st[k].(float64); math.Abs(got-v) > 1e-9 {
			t.Errorf("stats %s = %v, want %v", k, st[k], v)
		}
	}
	mu, _ := st["modelUsage"].(map[string]any)
	wantMU := map[string][3]float64{"m1": {650, 1.75, 2}, "m2": {10, 0.25, 1}, "unknown": {0, 0, 1}}
	if len(mu) != len(wantMU) {
		t.Errorf("modelUsage = %v, want models %v", mu, slices.Collect(maps.Keys(wantMU)))
	}
	for model, w := range wantMU {
		e, _ := mu[model].(map[string]any)
		if e == nil || !slices.Equal(keysOf(e), []string{"cost", "sessions", "tokens"}) ||
			e["tokens"] != w[0] || math.Abs(e["cost"].(float64)-w[1]) > 1e-9 || e["sessions"] != w[2] {
			t.Errorf("modelUsage[%s] = %v, want tokens %v cost %v sessions %v", model, mu[model], w[0], w[1], w[2])
		}
	}
}

func TestUpsertIdempotency(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	batch := `{"sessions":[{"externalId":"pi-1","source":"pi","title":"Tests","promptTokens":10,"completionTokens":5,"cost":0.01},
	  {"externalId":"pi-2","source":"pi"}],
	  "messages":[{"sessionExternalId":"pi-1","externalId":"u1","role":"user","parts":[{"type":"text","content":"add tests"}]},
	  {"sessionExternalId":"pi-1","externalId":"a1","role":"assistant","parts":[{"type":"thinking","content":"hmm"},{"type":"tool-call","toolName":"read","args":{"path":"x.go"}}]},
	  {"sessionExternalId":"pi-3","externalId":"u1","role":"user","textContent":"auto-created"}]}`
	first := a.batch(key, batch)
	if first.Sessions.Inserted != 2 || first.Sessions.Updated != 0 || first.Messages.Inserted != 3 || first.Messages.Updated != 0 || len(first.Errors) != 0 {
		t.Fatalf("first batch = %+v", first)
	}
	snap := a.snapshot()
	second := a.batch(key, batch)
	if second.Sessions.Inserted+second.Sessions.Updated+second.Messages.Inserted+second.Messages.Updated != 0 {
		t.Errorf("identical batch again = %+v, want 0 inserted and 0 updated everywhere", second)
	}
	if after := a.snapshot(); after != snap {
		t.Errorf("an identical batch changed the store:\nbefore %s\nafter  %s", snap, after)
	}

	// A re-sent message with different parts is updated and its parts replaced.
	third := a.batch(key, `{"messages":[{"sessionExternalId":"pi-1","externalId":"a1","role":"assistant","parts":[{"type":"text","content":"Added 3 tests."}]}]}`)
	if third.Messages != (ingest.Counts{Updated: 1}) || third.Sessions != (ingest.Counts{}) {
		t.Errorf("changed parts: %+v, want messages updated 1", third)
	}
	pi1 := a.byExternal(key, "pi-1")
	g := a.get(key, pi1.ID)
	if len(g.Messages) != 2 || len(g.Messages[1].Parts) != 1 || !jsonEqual(t, g.Messages[1].Parts[0], []byte(`{"type":"text","content":"Added 3 tests."}`)) {
		t.Errorf("after re-send: messages %+v, want a1 with exactly the new text part", g.Messages)
	}
	if pi1.MessageCount != 2 {
		t.Errorf("messageCount %d after re-sending, want 2", pi1.MessageCount)
	}
	// The same through /sync/message.
	a.ok("POST", "/sync/message", key, `{"sessionExternalId":"pi-1","externalId":"a1","role":"assistant","parts":[{"type":"text","content":"v3"}]}`)
	if g := a.get(key, pi1.ID); string(g.Messages[1].Parts[0]) != `{"type":"text","content":"v3"}` || len(g.Messages[1].Parts) != 1 {
		t.Errorf("after /sync/message re-send: %s", g.Messages[1].Parts)
	}

	// A later session POST with only tokens keeps everything else.
	a.ok("POST", "/sync/session", key, `{"externalId":"pi-1","promptTokens":300,"completionTokens":70}`)
	s := a.byExternal(key, "pi-1")
	if s.Title != "Tests" || s.Source != "pi" || s.Cost != 0.01 || s.PromptTokens != 300 || s.CompletionTokens != 70 || s.TotalTokens != 370 {
		t.Errorf("after a tokens-only update: %+v; want title Tests, source pi, cost 0.01 kept, tokens 300/70/370", s)
	}
	// And a title-only update keeps the tokens.
	a.ok("POST", "/sync/session", key, `{"externalId":"pi-1","title":"Tests, renamed"}`)
	if s := a.byExternal(key, "pi-1"); s.Title != "Tests, renamed" || s.TotalTokens != 370 || s.Cost != 0.01 {
		t.Errorf("after a title-only update: %+v", s)
	}
}

func TestPartShapesRoundTrip(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	tests := []struct {
		name, sent, want string // want "" = returned exactly as sent
	}{
		{"flat tool-call, args string", `{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls -la\"}"}`, ""},
		{"flat tool-call, args object", `{"type":"tool-call","toolName":"Bash","args":{"command":"ls -la"}}`,
			`{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls -la\"}"}`},
		{"nested tool-call, args object", `{"type":"tool-call","content":{"toolName":"Bash","args":{"command":"ls -la"}}}`,
			`{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls -la\"}"}`},
		{"nested tool-call, args string", `{"type":"tool-call","content":{"toolName":"Bash","args":"{\"command\":\"ls -la\"}"}}`,
			`{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls -la\"}"}`},
		{"text string", `{"type":"text","content":"I'll look at the auth redirect."}`, ""},
		{"text object", `{"type":"text","content":{"text":"I'll look at the auth redirect."}}`,
			`{"type":"text","content":"I'll look at the auth redirect."}`},
		{"tool-result flat", `{"type":"tool-result","toolName":"Bash","content":"README.md\nmain.go"}`, ""},
		{"tool-result nested", `{"type":"tool-result","content":{"toolName":"Bash","result":"ok"}}`,
			`{"type":"tool-result","toolName":"Bash","content":"ok"}`},
		{"thinking", `{"type":"thinking","content":"Let me check the callback URL.","signature":"sig=="}`, ""},
		{"droid tool_use", `{"type":"tool_use","content":{"toolName":"Execute","args":{"command":"go test ./..."},"result":"PASS"}}`, ""},
		{"file", `{"type":"file","mediaType":"image/png","filename":"shot.png","url":"data:image/png;base64,iVBORw0KGgo="}`, ""},
		{"unknown type with nested data", `{"type":"step-start","meta":{"n":[1,2.5,null,true],"s":"\u00e9"}}`, ""},
	}
	var parts []string
	for _, tc := range tests {
		parts = append(parts, tc.sent)
	}
	body := `{"sessionExternalId":"s","externalId":"m","role":"assistant","parts":[` + strings.Join(parts, ",") + `]}`
	a.ok("POST", "/sync/message", key, body)
	// The same parts through a batch (the droid and pi path).
	a.batch(key, `{"messages":[`+strings.Replace(body, `"externalId":"m"`, `"externalId":"b"`, 1)+`]}`)
	g := a.get(key, a.byExternal(key, "s").ID)
	if len(g.Messages) != 2 {
		t.Fatalf("%d messages, want 2", len(g.Messages))
	}
	for _, m := range g.Messages {
		if len(m.Parts) != len(tests) {
			t.Fatalf("message %s: %d parts back, want %d", m.ExternalID, len(m.Parts), len(tests))
		}
		for i, tc := range tests {
			want := tc.want
			if want == "" {
				want = tc.sent
			}
			if !jsonEqual(t, m.Parts[i], []byte(want)) {
				t.Errorf("%s (message %s): got %s\nwant %s", tc.name, m.ExternalID, m.Parts[i], want)
			}
			// Tool arguments are always stored as a JSON string.
			var p map[string]any
			_ = json.Unmarshal(m.Parts[i], &p)
			if args, ok := p["args"]; ok {
				s, isStr := args.(string)
				if !isStr || !json.Valid([]byte(s)) {
					t.Errorf("%s: args %v is not a string holding JSON", tc.name, args)
				}
			}
		}
	}
}

func TestSyncConveniences(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	const old = int64(1_700_000_000_000)

	t.Run("sessionId is an alias of externalId", func(t *testing.T) {
		id := a.ok("POST", "/sync/session", key, `{"sessionId":"cc-alias","source":"claude-code","title":"Alias"}`)["sessionId"]
		s := a.byExternal(key, "cc-alias")
		if s.ID != id || s.Title != "Alias" || s.Source != "claude-code" {
			t.Errorf("session %+v, want id %v", s, id)
		}
	})
	t.Run("textContent-only messages", func(t *testing.T) {
		a.ok("POST", "/sync/message", key, `{"sessionExternalId":"cc-alias","externalId":"u1","role":"user","source":"claude-code","textContent":"Fix the bug"}`)
		g := a.get(key, a.byExternal(key, "cc-alias").ID)
		if len(g.Messages) != 1 || g.Messages[0].TextContent == nil || *g.Messages[0].TextContent != "Fix the bug" || len(g.Messages[0].Parts) != 0 {
			t.Errorf("messages %+v", g.Messages)
		}
	})
	t.Run("a message auto-creates its session", func(t *testing.T) {
		tests := []struct{ session, body, source, model string }{
			{"auto-1", `{"sessionExternalId":"auto-1","externalId":"m","role":"assistant","source":"claude-code","model":"claude-sonnet-4-20250514","textContent":"x"}`, "claude-code", "claude-sonnet-4-20250514"},
			{"auto-2", `{"sessionExternalId":"auto-2","externalId":"m","role":"user","textContent":"x"}`, "opencode", ""},
			{"auto-3", `{"sessionExternalId":"auto-3","externalId":"m","role":"user","source":"cursor"}`, "cursor-sync", ""},
		}
		for _, tc := range tests {
			a.ok("POST", "/sync/message", key, tc.body)
			s := a.byExternal(key, tc.session)
			if s.Source != tc.source || s.Model != tc.model || s.MessageCount != 1 {
				t.Errorf("%s: source %q model %q messageCount %d; want %q %q 1", tc.session, s.Source, s.Model, s.MessageCount, tc.source, tc.model)
			}
		}
		a.ok("POST", "/sync/session", key, `{"externalId":"cur","source":"cursor"}`)
		if s := a.byExternal(key, "cur"); s.Source != "cursor-sync" {
			t.Errorf("/sync/session source cursor stored as %q, want cursor-sync", s.Source)
		}
	})
	t.Run("totals are never double-counted", func(t *testing.T) {
		a.ok("POST", "/sync/session", key, `{"externalId":"tot","promptTokens":315,"completionTokens":50,"cost":0.00123,"messageCount":99}`)
		for i := range 3 {
			a.ok("POST", "/sync/message", key, fmt.Sprintf(`{"sessionExternalId":"tot","externalId":"m%d","role":"assistant","promptTokens":1000,"completionTokens":1000}`, i))
		}
		a.ok("POST", "/sync/session", key, `{"externalId":"tot","promptTokens":315,"completionTokens":50,"cost":0.00123,"messageCount":2}`)
		s := a.byExternal(key, "tot")
		if s.PromptTokens != 315 || s.CompletionTokens != 50 || s.TotalTokens != 365 || s.Cost != 0.00123 || s.MessageCount != 3 {
			t.Errorf("session %+v; want 315/50/365, cost 0.00123, messageCount 3 (stored messages)", s)
		}
		a.ok("POST", "/sync/session", key, `{"externalId":"tot2","promptTokens":10,"completionTokens":5,"totalTokens":999}`)
		if s := a.byExternal(key, "tot2"); s.TotalTokens != 999 {
			t.Errorf("given totalTokens stored as %d, want 999", s.TotalTokens)
		}
	})
	t.Run("createdAt honoured on first insert of /sync/session and /sync/message", func(t *testing.T) {
		a.ok("POST", "/sync/session", key, fmt.Sprintf(`{"externalId":"imp","createdAt":%d}`, old))
		a.ok("POST", "/sync/session", key, fmt.Sprintf(`{"externalId":"imp","title":"again","createdAt":%d}`, old+1000))
		s := a.byExternal(key, "imp")
		if s.CreatedAt != old {
			t.Errorf("session createdAt %d, want %d", s.CreatedAt, old)
		}
		a.ok("POST", "/sync/message", key, fmt.Sprintf(`{"sessionExternalId":"imp","externalId":"m","role":"user","textContent":"a","createdAt":%d}`, old+5))
		a.ok("POST", "/sync/message", key, fmt.Sprintf(`{"sessionExternalId":"imp","externalId":"m","role":"user","textContent":"b","createdAt":%d}`, old+6))
		if g := a.get(key, s.ID); len(g.Messages) != 1 || g.Messages[0].CreatedAt != old+5 {
			t.Errorf("message %+v, want createdAt %d", g.Messages, old+5)
		}
	})
	t.Run("createdAt ignored in /sync/batch without failing the entry", func(t *testing.T) {
		before := epoch.UnixMilli()
		b := a.batch(key, fmt.Sprintf(`{"sessions":[{"externalId":"bimp","source":"pi","createdAt":%d}],
		  "messages":[{"sessionExternalId":"bimp","externalId":"m","role":"user","createdAt":%d,"parts":[{"type":"text","content":"x"}]}]}`, old, old))
		if len(b.Errors) != 0 || b.Sessions.Inserted != 1 || b.Messages.Inserted != 1 {
			t.Fatalf("batch = %+v", b)
		}
		s := a.byExternal(key, "bimp")
		g := a.get(key, s.ID)
		if s.CreatedAt <= before || g.Messages[0].CreatedAt <= before {
			t.Errorf("batch createdAt used: session %d message %d; want server time (> %d)", s.CreatedAt, g.Messages[0].CreatedAt, before)
		}
	})
}

// TestClaudeCodeReplay replays, in order, the requests claude-code-sync
// 0.1.15 sent in an observed run (testdata), twice, and asserts what
// plugins.md says an end-to-end test should see.
func TestClaudeCodeReplay(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	f, err := os.Open("testdata/claude-code-0.1.15.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type request struct{ method, path, body string }
	var reqs []request
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		method, rest, _ := strings.Cut(line, " ")
		path, body, _ := strings.Cut(rest, " ")
		reqs = append(reqs, request{method, path, body})
	}
	if len(reqs) != 10 {
		t.Fatalf("read %d requests from testdata, want 10", len(reqs))
	}
	for round := range 2 { // the second round is a re-run of every hook
		for _, r := range reqs {
			var body any
			k := key
			if r.body != "" {
				body = r.body
			}
			if r.path == "/health" {
				k = ""
			}
			resp := a.req(r.method, r.path, k, body)
			if resp.status/100 != 2 {
				t.Fatalf("round %d: %s %s: %d %s", round, r.method, r.path, resp.status, resp.body)
			}
			resp.json(t) // the plugin calls response.json() on every 2xx
		}
	}
	l := a.list(key, "")
	if len(l.Sessions) != 2 {
		t.Fatalf("%d sessions, want 2 (synctest and the real session)", len(l.Sessions))
	}
	s := a.byExternal(key, "11111111-2222-3333-4444-555555555555")
	if s.Source != "claude-code" || s.Title != "Fix the login redirect bug" || s.PromptTokens != 315 || s.CompletionTokens != 50 ||
		s.TotalTokens != 365 || math.Abs(s.Cost-0.00123) > 1e-12 || s.DurationMs != 10000 || s.MessageCount != 4 ||
		s.ProjectPath != "/home/dev/demo-proj" || s.ProjectName != "demo-proj" || s.Model != "claude-sonnet-4-20250514" {
		t.Errorf("session %+v", s)
	}
	g := a.get(key, s.ID)
	type summary struct {
		role, text string
		parts      int
	}
	var got []summary
	for _, m := range g.Messages {
		text := ""
		if m.TextContent != nil {
			text = *m.TextContent
		}
		got = append(got, summary{m.Role, text, len(m.Parts)})
	}
	want := []summary{{"user", "Fix the login redirect bug", 0}, {"assistant", "", 1},
		{"assistant", "I'll look at the auth redirect.", 0}, {"assistant", "Fixed: the callback URL was wrong.", 0}}
	if !slices.Equal(got, want) {
		t.Errorf("messages %+v\nwant %+v", got, want)
	}
	if len(g.Messages) == 4 && string(g.Messages[1].Parts[0]) != `{"type":"tool-call","toolName":"Bash","args":"{\"command\":\"ls\"}"}` {
		t.Errorf("tool call part %s", g.Messages[1].Parts[0])
	}
}

// TestResponsesAreValidUTF8: bytes that are not UTF-8 inside a payload's
// strings never come back out as invalid UTF-8 (JSON must be UTF-8; the
// plugins and the dashboard parse it with response.json()).
func TestResponsesAreValidUTF8(t *testing.T) {
	a := newApp(t, options{})
	key := a.user("ann")
	const bad = "\xab\xff"
	body := `{"sessionExternalId":"s","externalId":"m","role":"assistant","textContent":"t` + bad + `",
	  "parts":[{"type":"text","content":"x` + bad + `"},
	           {"type":"tool-call","toolName":"Bash","args":{"command":"echo ` + bad + `"}},
	           {"type":"tool-result","content":{"stdout":"` + bad + `"}},
	           {"type":"thinking","content":"` + bad + `"}]}`
	r := a.req("POST", "/sync/message", key, body)
	if r.status == http.StatusBadRequest {
		return // rejecting it is acceptable
	}
	if r.status != http.StatusOK {
		t.Fatalf("status %d %s", r.status, r.body)
	}
	g := a.req("GET", "/api/sessions/get?id="+a.byExternal(key, "s").ID, key, nil)
	if !utf8.Valid(g.body) {
		t.Errorf("/api/sessions/get returned invalid UTF-8:\n%q", g.body)
	}
}
