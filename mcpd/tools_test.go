package mcpd_test

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hindsight-dev/hindsight/internal/openaitest"
)

type hit struct {
	ID, Title, Source, Project, Updated, Snippet string
	Score                                        float64
}

type searchOut struct {
	Mode, Degraded string
	Results        []hit
}

type listOut struct {
	Sessions []struct {
		ID, Title, Source, Project, Updated string
		Messages                            int64
	}
}

func TestListTools(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.seed()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			res, err := s.connect("alice", tr).ListTools(bg, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if len(tool.Description) < 100 || tool.InputSchema == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
					t.Errorf("%s: description %q, schema %v, annotations %+v", tool.Name, tool.Description, tool.InputSchema, tool.Annotations)
				}
			}
			slices.Sort(names)
			if want := []string{"get_context", "get_session", "list_sessions", "search_sessions"}; !slices.Equal(names, want) {
				t.Errorf("tools %v, want %v", names, want)
			}
			for _, tool := range res.Tools {
				schema := tool.InputSchema.(map[string]any)
				req, _ := schema["required"].([]any)
				want := map[string][]any{"search_sessions": {"query"}, "get_context": {"query"}, "get_session": {"id"}, "list_sessions": nil}[tool.Name]
				if fmt.Sprint(req) != fmt.Sprint(want) {
					t.Errorf("%s requires %v, want %v", tool.Name, req, want)
				}
			}
		})
	}
}

// Every tool, called with bob's key, sees only bob's sessions: alice's ids
// are "not found" and her text never appears.
func TestIsolation(t *testing.T) {
	s := newStack(t, stackOptions{embedder: true})
	s.seed()
	aliceIDs := []string{s.sessionID("alice", "Fix the login redirect loop"), s.sessionID("alice", "Tune the connection pool"), s.sessionID("alice", "Login page styling")}
	bobID := s.sessionID("bob", "Bob's login redirect secret")
	// What only alice's sessions hold (the queries bob sends are echoed).
	aliceWords := []string{"return path", "button blue", "max open connections", "Fix the login redirect loop", "Tune the connection pool", "Login page styling", "webapp"}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			bob := s.connect("bob", tr)
			var outputs []string
			for _, mode := range []string{"fulltext", "semantic", "hybrid"} {
				res := call(t, bob, "search_sessions", map[string]any{"query": "login redirect SSO callback connection pool", "mode": mode, "limit": 50})
				var out searchOut
				structured(t, res, &out)
				if res.IsError || len(out.Results) != 1 || out.Results[0].ID != bobID {
					t.Errorf("%s search as bob: %s", mode, textOf(res))
				}
				outputs = append(outputs, textOf(res))
			}
			res := call(t, bob, "get_context", map[string]any{"query": "how did we fix the SSO callback login redirect", "maxChars": 50000})
			if !strings.Contains(textOf(res), "bob-secret-7731") {
				t.Errorf("bob's context lacks his own session: %s", textOf(res))
			}
			outputs = append(outputs, textOf(res))
			res = call(t, bob, "list_sessions", map[string]any{"limit": 100})
			var list listOut
			structured(t, res, &list)
			if len(list.Sessions) != 1 || list.Sessions[0].ID != bobID {
				t.Errorf("bob lists %+v", list)
			}
			outputs = append(outputs, textOf(res))
			for _, id := range aliceIDs {
				res := call(t, bob, "get_session", map[string]any{"id": id})
				if !res.IsError || !strings.Contains(textOf(res), "not found") {
					t.Errorf("get_session(alice's %s) as bob: error=%v %s", id, res.IsError, textOf(res))
				}
				outputs = append(outputs, textOf(res))
			}
			res = call(t, bob, "get_session", map[string]any{"id": bobID})
			if res.IsError || !strings.Contains(textOf(res), "bob-secret-7731") {
				t.Errorf("bob cannot read his own session: %s", textOf(res))
			}
			all := strings.Join(outputs, "\n")
			for _, w := range aliceWords {
				if strings.Contains(all, w) {
					t.Errorf("bob's tool output contains alice's %q", w)
				}
			}
			// And the other way round.
			alice := s.connect("alice", tr)
			for _, mode := range []string{"fulltext", "semantic", "hybrid"} {
				res = call(t, alice, "search_sessions", map[string]any{"query": "bob-secret-7731 token leaks", "mode": mode})
				if strings.Contains(textOf(res), bobID) || strings.Contains(textOf(res), "Bob's") {
					t.Errorf("alice's %s search shows bob's session: %s", mode, textOf(res))
				}
			}
		})
	}
}

func TestSearchSessions(t *testing.T) {
	s := newStack(t, stackOptions{embedder: true})
	s.seed()
	fix := s.sessionID("alice", "Fix the login redirect loop")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			alice := s.connect("alice", tr)
			res := call(t, alice, "search_sessions", map[string]any{"query": "login redirect callback"})
			var out searchOut
			structured(t, res, &out)
			if res.IsError || out.Mode != "hybrid" || out.Degraded != "" || len(out.Results) == 0 {
				t.Fatalf("default search: %s", textOf(res))
			}
			top := out.Results[0]
			if top.ID != fix || top.Title != "Fix the login redirect loop" || top.Source != "claude-code" || top.Project != "webapp" ||
				top.Score <= 0 || !strings.Contains(top.Snippet, "redirect") || strings.Contains(top.Snippet, "<mark>") || !strings.HasPrefix(top.Updated, "20") {
				t.Errorf("top hit %+v", top)
			}
			if txt := textOf(res); !strings.Contains(txt, fix) || !strings.Contains(txt, "Fix the login redirect loop") || !strings.Contains(txt, "get_session") {
				t.Errorf("text content: %s", txt)
			}
			cases := []struct {
				name string
				args map[string]any
				want []string // titles, in order when len > 1 is not asserted
			}{
				{"source", map[string]any{"query": "login", "source": "opencode", "mode": "fulltext"}, []string{"Login page styling"}},
				{"project", map[string]any{"query": "login redirect pool", "project": "API", "mode": "fulltext"}, []string{"Tune the connection pool"}},
				{"project path", map[string]any{"query": "login connection", "project": "DEV/WEB", "mode": "fulltext"}, []string{"Fix the login redirect loop", "Login page styling"}},
				{"nothing", map[string]any{"query": "kubernetes", "mode": "fulltext"}, nil},
			}
			for _, c := range cases {
				res := call(t, alice, "search_sessions", c.args)
				var out searchOut
				structured(t, res, &out)
				var titles []string
				for _, h := range out.Results {
					titles = append(titles, h.Title)
				}
				slices.Sort(titles) // which matches, not their order
				if res.IsError || !slices.Equal(titles, c.want) {
					t.Errorf("%s: %v, want %v (%s)", c.name, titles, c.want, textOf(res))
				}
			}
		})
	}
}

// Bad input is a tool error the model can read, never a protocol failure or
// a server error.
func TestBadInput(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.seed()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			alice := s.connect("alice", tr)
			cases := []struct {
				tool string
				args map[string]any
				want string
			}{
				{"search_sessions", map[string]any{}, "query"},
				{"search_sessions", map[string]any{"query": "   "}, "query is required"},
				{"search_sessions", map[string]any{"query": "x", "mode": "fuzzy"}, "mode"},
				{"search_sessions", map[string]any{"query": "x", "limit": 51}, "limit"},
				{"search_sessions", map[string]any{"query": "x", "limit": 0}, "limit"},
				{"search_sessions", map[string]any{"query": "x", "limit": "ten"}, "limit"},
				{"search_sessions", map[string]any{"query": strings.Repeat("word ", 4000)}, "query"},
				{"search_sessions", map[string]any{"query": "x", "colour": "red"}, "colour"},
				{"search_sessions", map[string]any{"query": "login", "mode": "semantic"}, "semantic search needs an embedder"},
				{"search_sessions", map[string]any{"query": "-login"}, "only excludes words"},
				{"get_context", map[string]any{"query": "x", "maxChars": 50001}, "maxChars"},
				{"get_context", map[string]any{"query": "x", "limit": 21}, "limit"},
				{"get_session", map[string]any{}, "id"},
				{"get_session", map[string]any{"id": "nope"}, "not found"},
				{"get_session", map[string]any{"id": "../../etc/passwd"}, "not found"},
				{"get_session", map[string]any{"id": s.sessionID("alice", "Tune the connection pool"), "fromMessage": 3}, "past the end: the session has 2 messages"},
				{"get_session", map[string]any{"id": "x", "maxChars": 999}, "maxChars"},
				{"get_session", map[string]any{"id": "x", "fromMessage": -1}, "fromMessage"},
				{"list_sessions", map[string]any{"limit": 101}, "limit"},
			}
			for _, c := range cases {
				res, err := alice.CallTool(bg, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
				if err != nil {
					t.Errorf("%s(%v): protocol error %v, want a tool error", c.tool, c.args, err)
					continue
				}
				if !res.IsError || !strings.Contains(textOf(res), c.want) {
					t.Errorf("%s(%v): error=%v %q, want an error mentioning %q", c.tool, c.args, res.IsError, textOf(res), c.want)
				}
			}
		})
	}
}

// Without an embedder the default mode is full-text; with one whose provider
// fails, hybrid degrades to full-text and says so (as X-Search-Degraded does),
// and semantic alone is an error.
func TestDegradedModes(t *testing.T) {
	plain := newStack(t, stackOptions{})
	plain.seed()
	sem := newStack(t, stackOptions{embedder: true})
	sem.seed()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			res := call(t, plain.connect("alice", tr), "search_sessions", map[string]any{"query": "login redirect"})
			var out searchOut
			structured(t, res, &out)
			if res.IsError || out.Mode != "fulltext" || out.Degraded != "" || len(out.Results) == 0 {
				t.Errorf("default mode without an embedder: %s", textOf(res))
			}

			alice := sem.connect("alice", tr)
			fail := make([]openaitest.Fault, 3)
			for i := range fail {
				fail[i] = openaitest.ServerError()
			}
			sem.embed.Script(fail...)
			res = call(t, alice, "search_sessions", map[string]any{"query": "login redirect callback"})
			out = searchOut{}
			structured(t, res, &out)
			if res.IsError || out.Mode != "hybrid" || out.Degraded != "semantic" || len(out.Results) == 0 || !strings.Contains(textOf(res), "full-text search alone") {
				t.Errorf("hybrid with the provider down: %+v %s", out, textOf(res))
			}
			res = call(t, alice, "get_context", map[string]any{"query": "login redirect callback"})
			if res.IsError || !strings.Contains(textOf(res), "SSO") || !strings.Contains(textOf(res), "full-text search alone") {
				t.Errorf("context with the provider down: %s", textOf(res))
			}
			res = call(t, alice, "search_sessions", map[string]any{"query": "login redirect callback", "mode": "semantic"})
			if !res.IsError || !strings.Contains(textOf(res), "embedding provider") || !strings.Contains(textOf(res), "hybrid") {
				t.Errorf("semantic with the provider down: %s; want a tool error naming the embedding provider and hybrid", textOf(res))
			}
			// The provider is back.
			res = call(t, alice, "search_sessions", map[string]any{"query": "login redirect callback", "mode": "semantic"})
			out = searchOut{}
			structured(t, res, &out)
			if res.IsError || out.Degraded != "" || len(out.Results) == 0 {
				t.Errorf("semantic after recovery: %s", textOf(res))
			}
		})
	}
}

func TestGetContext(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.seed()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			alice := s.connect("alice", tr)
			res := call(t, alice, "get_context", map[string]any{"query": "login redirect SSO callback"})
			txt := textOf(res)
			if res.IsError || !strings.HasPrefix(txt, `Relevant coding sessions for: "login redirect SSO callback"`) ||
				!strings.Contains(txt, "--- Session: Fix the login redirect loop ---") || !strings.Contains(txt, "[ASSISTANT]") {
				t.Errorf("context: %s", txt)
			}
			// The budget bounds the message text.
			res = call(t, alice, "get_context", map[string]any{"query": "login redirect SSO callback", "maxChars": 40, "limit": 1})
			if txt := textOf(res); res.IsError || len(txt) > 400 || strings.Count(txt, "--- Session:") != 1 {
				t.Errorf("context with maxChars 40, limit 1 (%d bytes): %s", len(txt), txt)
			}
			res = call(t, alice, "get_context", map[string]any{"query": "kubernetes"})
			if res.IsError || !strings.Contains(textOf(res), "No past session matched") {
				t.Errorf("context without a match: %s", textOf(res))
			}
		})
	}
}

func TestListSessions(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.seed()
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			alice := s.connect("alice", tr)
			cases := []struct {
				args map[string]any
				want []string
				more bool
			}{
				{map[string]any{}, []string{"Login page styling", "Tune the connection pool", "Fix the login redirect loop"}, false},
				{map[string]any{"limit": 2}, []string{"Login page styling", "Tune the connection pool"}, true},
				{map[string]any{"source": "opencode"}, []string{"Login page styling", "Tune the connection pool"}, false},
				{map[string]any{"project": "webapp"}, []string{"Login page styling", "Fix the login redirect loop"}, false},
				{map[string]any{"project": "webapp", "source": "claude-code"}, []string{"Fix the login redirect loop"}, false},
				{map[string]any{"source": "cursor"}, nil, false},
			}
			for _, c := range cases {
				res := call(t, alice, "list_sessions", c.args)
				var out listOut
				structured(t, res, &out)
				var titles []string
				for _, s := range out.Sessions {
					titles = append(titles, s.Title)
				}
				if res.IsError || !slices.Equal(titles, c.want) || strings.Contains(textOf(res), "larger limit") != c.more {
					t.Errorf("list_sessions(%v): %v, want %v\n%s", c.args, titles, c.want, textOf(res))
				}
			}
		})
	}
}

// A long session reads page by page: each page ends between messages (or
// cuts an overlong first message, closing its fence), says where to go on,
// and following the notes shows every message exactly once.
func TestGetSessionPages(t *testing.T) {
	s := newStack(t, stackOptions{})
	s.seed()
	var msgs []any
	for i := 1; i <= 40; i++ {
		role := []string{"user", "assistant"}[i%2]
		msgs = append(msgs, text("long", fmt.Sprintf("m%02d", i), role, fmt.Sprintf("marker-%02d %s", i, strings.Repeat("lorem ipsum ", 60))))
	}
	msgs = append(msgs, map[string]any{"sessionExternalId": "long", "externalId": "m41", "role": "tool", "parts": []any{
		map[string]any{"type": "tool-result", "toolName": "cat", "content": "marker-41\n" + strings.Repeat("## x\n```\nline\n", 2000)},
	}})
	s.sync("alice", map[string]any{"sessions": []any{session("long", "A long session", "claude-code", "webapp")}, "messages": msgs})
	id := s.sessionID("alice", "A long session")
	fix := s.sessionID("alice", "Fix the login redirect loop")
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			alice := s.connect("alice", tr)
			// The short session: the export's markdown, tool calls included.
			res := call(t, alice, "get_session", map[string]any{"id": fix})
			txt := textOf(res)
			for _, want := range []string{"# Fix the login redirect loop\n", "- Project: webapp (/home/user/webapp)\n", "## User\n", "**Tool call:** Bash", "## Tool\n",
				"\n## not a heading\n```\nnot a fence end\n````\n", "End of session: messages 1–4 of 4."} {
				if !strings.Contains(txt, want) {
					t.Errorf("get_session lacks %q:\n%s", want, txt)
				}
			}
			seen := map[int]int{}
			from := 1
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatal("paging did not end")
				}
				res := call(t, alice, "get_session", map[string]any{"id": id, "fromMessage": from, "maxChars": 5000})
				txt := textOf(res)
				if res.IsError || len(txt) > 5000+600 {
					t.Fatalf("page from %d: error=%v, %d bytes", from, res.IsError, len(txt))
				}
				if strings.Count(txt, "```")%2 != 0 {
					t.Errorf("page from %d leaves a fence open", from)
				}
				for i := 1; i <= 41; i++ {
					seen[i] += strings.Count(txt, fmt.Sprintf("marker-%02d", i))
				}
				if strings.Contains(txt, "Message 41 of 41 (the last) is longer than maxChars and was cut") {
					break
				}
				var next int
				if _, err := fmt.Sscanf(txt[strings.LastIndex(txt, "fromMessage ")+len("fromMessage "):], "%d", &next); err != nil {
					t.Fatalf("page from %d does not say how to read on:\n%s", from, txt[max(0, len(txt)-400):])
				}
				if next <= from {
					t.Fatalf("page from %d points to fromMessage %d", from, next)
				}
				from = next
			}
			for i := 1; i <= 41; i++ {
				if seen[i] != 1 {
					t.Errorf("message %d shown %d times", i, seen[i])
				}
			}
		})
	}
}

// /mcp sits behind the API's authentication and rate limit: no MCP exchange
// happens without a valid key.
func TestHTTPAuth(t *testing.T) {
	s := newStack(t, stackOptions{rate: 1, burst: 3})
	s.user("alice")
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	post := func(auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.srv.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Basic abc", "Bearer osk_" + strings.Repeat("0", 32)} {
		if code, body := post(auth); code != http.StatusUnauthorized || !strings.Contains(body, `"error":"Unauthorized"`) || strings.Contains(body, "jsonrpc") {
			t.Errorf("Authorization %q: %d %s", auth, code, body)
		}
	}
	code, body := post("Bearer " + s.keys["alice"])
	if code != http.StatusOK || !strings.Contains(body, `"serverInfo"`) || !strings.Contains(body, `"hindsight"`) {
		t.Errorf("initialize with alice's key: %d %s", code, body)
	}
	for range 5 {
		code, body = post("Bearer " + s.keys["alice"])
	}
	if code != http.StatusTooManyRequests {
		t.Errorf("past the burst: %d %s", code, body)
	}
}
