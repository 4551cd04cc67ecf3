package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/config"
	"github.com/hindsight-dev/hindsight/server"
)

// testApp is a fully wired Hindsight (store, index, pipeline, API) on a
// loopback httptest server.
type testApp struct {
	t    *testing.T
	app  *server.Server
	srv  *httptest.Server
	dir  string
	stop func()
}

func newTestApp(t *testing.T, dir string) *testApp {
	t.Helper()
	return newTestAppWith(t, dir, config.Semantic{Embedder: "none"})
}

// newTestAppWith wires an app with the given embedder and vector store settings.
func newTestAppWith(t *testing.T, dir string, sem config.Semantic) *testApp {
	t.Helper()
	return newTestAppConfig(t, config.Config{Data: dir, Semantic: sem})
}

// newTestAppConfig wires an app for cfg, runs its background work, serves it
// on loopback and stops it all at cleanup.
func newTestAppConfig(t *testing.T, cfg config.Config) *testApp {
	t.Helper()
	ctx := context.Background()
	dir := cfg.Data
	a, err := server.New(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	bg, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.Background(bg)
	}()
	srv := httptest.NewServer(a.Handler())
	ta := &testApp{t: t, app: a, srv: srv, dir: dir}
	ta.stop = func() {
		srv.Close()
		cancel()
		<-done
		if err := a.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(func() {
		if ta.stop != nil {
			ta.stop()
		}
	})
	return ta
}

func (ta *testApp) close() {
	ta.stop()
	ta.stop = nil
}

func (ta *testApp) key(user string) string {
	ta.t.Helper()
	ctx := context.Background()
	if _, err := ta.app.Accounts.CreateUser(ctx, user); err != nil {
		ta.t.Fatal(err)
	}
	k, _, err := ta.app.Accounts.CreateKey(ctx, user, "test")
	if err != nil {
		ta.t.Fatal(err)
	}
	return k
}

func (ta *testApp) do(method, key, path string, body any) (int, []byte) {
	ta.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, ta.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ta.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (ta *testApp) batch(key string, body map[string]any) {
	ta.t.Helper()
	code, b := ta.do(http.MethodPost, key, "/sync/batch", body)
	if code != http.StatusOK || !strings.Contains(string(b), `"errors":[]`) {
		ta.t.Fatalf("batch: %d %s", code, b)
	}
}

type searchResult struct {
	ID        string   `json:"id"`
	AltID     string   `json:"_id"`
	Title     string   `json:"title"`
	Snippet   *string  `json:"snippet"`
	Score     *float64 `json:"score"`
	MatchedIn []string `json:"matchedIn"`
}

// search runs a query that must succeed: any status but 200 fails the test,
// so "finds nothing" can never be a 500 in disguise.
func (ta *testApp) search(key, q, extra string) []searchResult {
	ta.t.Helper()
	code, rs := ta.searchStatus(key, q, extra)
	if code != http.StatusOK {
		ta.t.Fatalf("search %.60q%s: status %d, want 200", q, extra, code)
	}
	return rs
}

// searchStatus runs a query whose status the caller checks (a 400 for bad
// query syntax is a valid answer); results are decoded only from a 200.
func (ta *testApp) searchStatus(key, q, extra string) (int, []searchResult) {
	ta.t.Helper()
	code, b := ta.do(http.MethodGet, key, "/api/search?q="+url.QueryEscape(q)+extra, nil)
	var res struct{ Results []searchResult }
	if code == http.StatusOK {
		if err := json.Unmarshal(b, &res); err != nil {
			ta.t.Fatalf("search response %s: %v", b, err)
		}
	}
	return code, res.Results
}

func titles(rs []searchResult) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Title)
	}
	return out
}

func (ta *testApp) idle() {
	ta.t.Helper()
	// A liveness bound, not a timing: -race on a loaded 2-core machine
	// embeds a thousand sessions many times slower than idle.
	ctx, cancel := untilDeadline(ta.t)
	defer cancel()
	if err := ta.app.Pipeline.WaitIdle(ctx); err != nil {
		ta.t.Fatalf("pipeline did not drain: %v", err)
	}
}

func msg(session, id, role string, extra map[string]any) map[string]any {
	m := map[string]any{"sessionExternalId": session, "externalId": id, "role": role}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestSearchableTextRules(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "Refactor the billing module"}},
		"messages": []any{
			msg("s1", "m1", "user", map[string]any{"textContent": "why does quuxcompile fail"}),
			msg("s1", "m2", "assistant", map[string]any{"parts": []any{
				map[string]any{"type": "text", "content": "because zorblat is missing"},
				map[string]any{"type": "tool-call", "toolName": "Bash", "args": `{"command":"toolargword"}`},
				map[string]any{"type": "tool-result", "toolName": "Bash", "content": "toolresultword appears only here"},
				map[string]any{"type": "thinking", "text": "thinkingword"},
			}}),
			msg("s1", "m3", "system", map[string]any{"textContent": "systemword"}),
			msg("s1", "m4", "tool", map[string]any{"textContent": "toolroleword"}),
			// A text part wins over textContent; the textContent is not searchable then.
			msg("s1", "m5", "assistant", map[string]any{"textContent": "shadowedword", "parts": []any{map[string]any{"type": "text", "content": "visibleword"}}}),
		},
	})
	ta.idle()
	for _, tc := range []struct {
		q     string
		found bool
	}{
		{"quuxcompile", true}, {"zorblat", true}, {"billing", true}, {"visibleword", true},
		{"toolargword", false}, {"toolresultword", false}, {"thinkingword", false},
		{"systemword", false}, {"toolroleword", false}, {"shadowedword", false},
	} {
		code, rs := ta.searchStatus(key, tc.q, "")
		if code != http.StatusOK || (len(rs) == 1) != tc.found {
			t.Errorf("search %q: status %d, %d results; want found=%v", tc.q, code, len(rs), tc.found)
		}
	}
}

func TestSearchIsolationAndFreshness(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	alice, bob := ta.key("alice"), ta.key("bob")
	ta.batch(alice, map[string]any{
		"sessions": []any{map[string]any{"externalId": "same", "title": "alice secret kubernetes rollout"}},
		"messages": []any{msg("same", "m1", "user", map[string]any{"textContent": "kubernetes rollout stuck"})},
	})
	// A new session becomes searchable after its 200 (how soon is the
	// load bench's index lag, not a test's clock).
	code, b := ta.do(http.MethodPost, bob, "/sync/message", msg("same", "m1", "user", map[string]any{"textContent": "bob asks about kubernetes probes"}))
	if code != http.StatusOK {
		t.Fatalf("sync: %d %s", code, b)
	}
	waitUntil(t, "a new session searchable after its 200", func() bool { return len(ta.search(bob, "probes", "")) == 1 })
	ta.idle()
	for _, extra := range []string{"", "&explain=true"} {
		rs := ta.search(bob, "kubernetes rollout secret", extra)
		if len(rs) != 1 || strings.Contains(strings.Join(titles(rs), ","), "alice") {
			t.Errorf("bob's search%s returned %v", extra, titles(rs))
		}
		for _, r := range rs {
			if r.Snippet != nil && strings.Contains(*r.Snippet, "secret") {
				t.Errorf("bob's snippet leaks alice's text: %q", *r.Snippet)
			}
		}
		rs = ta.search(alice, "probes", extra)
		if len(rs) != 0 {
			t.Errorf("alice sees bob's session%s: %v", extra, titles(rs))
		}
	}
	// The leak check is only worth something on a 200 that can show a
	// session: bob's own context for "probes" must find his session, and
	// his context for alice's words must find none of hers.
	for _, format := range []string{"text", "messages"} {
		for _, tc := range []struct {
			q        string
			sessions int
		}{{"probes", 1}, {"secret rollout", 0}} {
			code, b := ta.do(http.MethodGet, bob, "/api/context?q="+url.QueryEscape(tc.q)+"&format="+format, nil)
			var res struct{ SessionCount *int }
			if code != http.StatusOK || json.Unmarshal(b, &res) != nil || res.SessionCount == nil || *res.SessionCount != tc.sessions {
				t.Errorf("bob's context (%s) for %q: status %d, want 200 with sessionCount %d: %.300s", format, tc.q, code, tc.sessions, b)
			}
			if strings.Contains(string(b), "alice") || strings.Contains(string(b), "stuck") {
				t.Errorf("bob's context (%s) leaks alice's session: %s", format, b)
			}
		}
	}
}

func TestSearchReflectsUpdates(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "first title"}},
		"messages": []any{msg("s1", "m1", "user", map[string]any{"textContent": "oldword in the message"})},
	})
	ta.idle()
	// Re-synced message replaces its text; a title change keeps the message text.
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "second heading"}},
		"messages": []any{msg("s1", "m1", "user", map[string]any{"textContent": "newword in the message"})},
	})
	ta.idle()
	for _, tc := range []struct {
		q    string
		want int
	}{{"oldword", 0}, {"newword", 1}, {"heading", 1}, {"first", 0}} {
		if rs := ta.search(key, tc.q, ""); len(rs) != tc.want {
			t.Errorf("search %q: %d results, want %d", tc.q, len(rs), tc.want)
		}
	}
	code, b := ta.do(http.MethodPost, key, "/sync/session", map[string]any{"externalId": "s1", "title": "third caption"})
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, b)
	}
	ta.idle()
	if rs := ta.search(key, "newword", ""); len(rs) != 1 {
		t.Errorf("message text lost after a title-only update")
	}
}

func TestHostileQueries(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	ta.batch(key, map[string]any{
		"sessions": []any{map[string]any{"externalId": "s1", "title": "Unicode café 日本語 test"}},
		"messages": []any{msg("s1", "m1", "user", map[string]any{"textContent": "the quick brown fox"})},
	})
	ta.idle()
	for _, q := range []string{
		`"unbalanced quote`, `fox"`, `"""`, `!!!???`, `*:*`, `title:fox`, `+fox -`, `fox~2 ^3 (a OR b) *`,
		`café`, `日本語`, `🦊🦊`, `\`, `-fox`, `-"quick brown"`, `"quick brown"`, strings.Repeat("fox ", 2500),
		"\x00\x01", `{{}}[]`, `AND OR NOT`, `/regex.*/`,
	} {
		for _, mode := range []string{"", "&explain=true"} {
			code, _ := ta.searchStatus(key, q, mode)
			if code != http.StatusOK && code != http.StatusBadRequest {
				t.Errorf("query %.40q: status %d, want 200 or 400", q, code)
			}
		}
	}
	if code, rs := ta.searchStatus(key, `"quick brown"`, ""); code != 200 || len(rs) != 1 {
		t.Errorf("phrase search: %d %v", code, rs)
	}
	if code, rs := ta.searchStatus(key, `fox -quick`, ""); code != 200 || len(rs) != 0 {
		t.Errorf("exclusion: %d %v", code, rs)
	}
	if code, rs := ta.searchStatus(key, `日本語`, ""); code != 200 || len(rs) != 1 {
		t.Errorf("CJK search: %d %v", code, rs)
	}
	// Bad parameters are clear 400s.
	for _, p := range []string{"", "?q=", "?q=fox&type=fuzzy", "?q=fox&limit=x", "?q=fox&limit=0", "?q=fox&explain=maybe",
		"?q=fox&type=semantic", "?q=fox&mode=hybrid", "?q=" + strings.Repeat("a", 17<<10)} {
		code, b := ta.do(http.MethodGet, key, "/api/search"+p, nil)
		if code != http.StatusBadRequest || !strings.Contains(string(b), `"message"`) {
			t.Errorf("GET /api/search%.40s: %d %s, want a 400 with a message", p, code, b)
		}
	}
	_, b := ta.do(http.MethodGet, key, "/api/search?q=fox&type=semantic", nil)
	if !strings.Contains(string(b), "OPENAI_API_KEY") {
		t.Errorf("semantic without an embedder should name the settings: %s", b)
	}
}

func TestExplainAndShapes(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	ta.batch(key, map[string]any{
		"sessions": []any{
			map[string]any{"externalId": "s1", "title": "Fix <b>login</b> redirect", "projectName": "web", "model": "m1"},
			map[string]any{"externalId": "s2", "title": "Unrelated"},
		},
		"messages": []any{
			msg("s1", "m1", "user", map[string]any{"textContent": "the login redirect loops <script>alert(1)</script>"}),
			msg("s1", "m2", "assistant", map[string]any{"textContent": "fixed the callback URL"}),
			msg("s2", "m1", "user", map[string]any{"textContent": "nothing about it"}),
		},
	})
	ta.idle()
	rs := ta.search(key, "login", "")
	if len(rs) != 1 || rs[0].ID == "" || rs[0].Score != nil || rs[0].Snippet != nil || rs[0].AltID != "" {
		t.Fatalf("default results must carry id and no score/snippet: %+v", rs)
	}
	rs = ta.search(key, "login", "&explain=true")
	if len(rs) != 1 || rs[0].Score == nil || rs[0].Snippet == nil {
		t.Fatalf("explain results: %+v", rs)
	}
	sn := *rs[0].Snippet
	if !strings.Contains(sn, "<mark>") || strings.Contains(sn, "<script>") || strings.Contains(sn, "<b>") {
		t.Errorf("snippet must mark terms and escape the rest: %q", sn)
	}
	if !slices.Contains(rs[0].MatchedIn, "title") || !slices.Contains(rs[0].MatchedIn, "messages") {
		t.Errorf("matchedIn = %v", rs[0].MatchedIn)
	}
	code, b := ta.do(http.MethodGet, key, "/api/context?q=login+redirect", nil)
	var text struct {
		Text         string
		SessionCount int
	}
	_ = json.Unmarshal(b, &text)
	if code != 200 || text.SessionCount != 1 || !strings.HasPrefix(text.Text, `Relevant coding sessions for: "login redirect"`) ||
		!strings.Contains(text.Text, "--- Session: Fix <b>login</b> redirect ---") || !strings.Contains(text.Text, "Project: web") ||
		!strings.Contains(text.Text, "Model: m1") || !strings.Contains(text.Text, "[USER]") || !strings.Contains(text.Text, "[ASSISTANT]") {
		t.Errorf("context text: %d %s", code, b)
	}
	code, b = ta.do(http.MethodGet, key, "/api/context?q=login+redirect&format=messages&limit=3", nil)
	var msgs struct {
		Messages []struct {
			Role, Content string
			Metadata      struct{ SessionID, SessionTitle string }
		}
		SessionCount int
	}
	_ = json.Unmarshal(b, &msgs)
	if code != 200 || msgs.SessionCount != 1 || len(msgs.Messages) != 2 || msgs.Messages[0].Role != "user" ||
		msgs.Messages[1].Content != "fixed the callback URL" || msgs.Messages[0].Metadata.SessionID == "" {
		t.Errorf("context messages: %d %s", code, b)
	}
	for _, p := range []string{"", "?q=x&format=xml", "?q=x&limit=abc", "?q=x&maxChars=-5"} {
		if code, b := ta.do(http.MethodGet, key, "/api/context"+p, nil); code != http.StatusBadRequest {
			t.Errorf("GET /api/context%s: %d %s", p, code, b)
		}
	}
}

// Deleting the index directory makes the next start rebuild it from the
// records, with identical results.
func TestIndexRebuildGivesIdenticalResults(t *testing.T) {
	dir := t.TempDir()
	ta := newTestApp(t, dir)
	key := ta.key("alice")
	var sessions, messages []any
	for i := range 60 {
		sid := fmt.Sprintf("s%d", i)
		sessions = append(sessions, map[string]any{"externalId": sid, "title": fmt.Sprintf("session %d about topic%d", i, i%7)})
		for j := range 4 {
			messages = append(messages, msg(sid, fmt.Sprintf("m%d", j), []string{"user", "assistant"}[j%2],
				map[string]any{"textContent": fmt.Sprintf("message %d mentions topic%d and word%d", j, (i+j)%7, i%5)}))
		}
	}
	ta.batch(key, map[string]any{"sessions": sessions, "messages": messages})
	ta.idle()
	queries := []string{"topic3", "word2 topic1", "session mentions", "topic6 -word4", `"mentions topic2"`}
	before := map[string][]searchResult{}
	for _, q := range queries {
		before[q] = ta.search(key, q, "&limit=100&explain=true")
		if len(before[q]) == 0 {
			t.Fatalf("query %q found nothing before the rebuild", q)
		}
	}
	ta.close()
	if err := os.RemoveAll(filepath.Join(dir, "index")); err != nil {
		t.Fatal(err)
	}
	ta2 := newTestApp(t, dir)
	deadline := deadline(t)
	for _, q := range queries {
		for {
			after := ta2.search(key, q, "&limit=100&explain=true")
			if len(after) == len(before[q]) || time.Now().After(deadline) {
				for i := range after {
					if i >= len(before[q]) || after[i].ID != before[q][i].ID || *after[i].Snippet != *before[q][i].Snippet {
						t.Errorf("query %q: result %d differs after rebuild", q, i)
						break
					}
				}
				if len(after) != len(before[q]) {
					t.Errorf("query %q: %d results after rebuild, %d before", q, len(after), len(before[q]))
				}
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func nopLogger() zerolog.Logger { return zerolog.Nop() }

// TestReindexCommand: `hindsight reindex` (server stopped) rebuilds the
// index from the records, in several batches, and a server started on it
// answers at once as before, without rebuilding.
func TestReindexCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ta := newTestApp(t, dir)
	key := ta.key("alice")
	const n = 1050 // more than two of Rebuild's batches of 500
	var sessions, messages []any
	for i := range n {
		sid := fmt.Sprintf("s%d", i)
		sessions = append(sessions, map[string]any{"externalId": sid, "title": fmt.Sprintf("session %d", i)})
		messages = append(messages,
			msg(sid, "q", "user", map[string]any{"textContent": fmt.Sprintf("question about marker%d", i%50)}),
			msg(sid, "a", "assistant", map[string]any{"textContent": "an answer"}))
	}
	ta.batch(key, map[string]any{"sessions": sessions, "messages": messages})
	ta.idle()
	before := ta.search(key, "marker7", "&limit=100")
	if len(before) != n/50 {
		t.Fatalf("before reindex: %d results for marker7, want %d", len(before), n/50)
	}
	ta.close()

	out, err := runCmd(t, "reindex", "--data", dir)
	if err != nil {
		t.Fatalf("reindex: %v", err)
	}
	if want := fmt.Sprintf("reindexed: %d sessions, %d chunks", n, n); !strings.Contains(out, want) {
		t.Errorf("reindex printed %q, want %q", out, want)
	}
	ta2 := newTestApp(t, dir)
	after := ta2.search(key, "marker7", "&limit=100")
	if len(after) != len(before) {
		t.Fatalf("after reindex: %d results, want %d", len(after), len(before))
	}
	for i := range after {
		if after[i].ID != before[i].ID {
			t.Errorf("result %d: %s after reindex, %s before", i, after[i].ID, before[i].ID)
		}
	}
}
