package mcpd_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// rest sends a REST request with user's key and returns status and body.
func (s *stack) rest(user, method, path, body string) (int, string) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = bytes.NewReader([]byte(body))
	}
	req, _ := http.NewRequest(method, s.srv.URL+path, rd)
	req.Header.Set("Authorization", "Bearer "+s.keys[user])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A deleted session stays out of every tool, also after the plugin sent
// more of it (dropped: the deletion left a tombstone), in every mode.
func TestToolsShowNothingOfDeletedSessions(t *testing.T) {
	s := newStack(t, stackOptions{embedder: true})
	s.seed()
	id := s.sessionID("alice", "Fix the login redirect loop")
	if code, body := s.rest("alice", http.MethodDelete, "/api/sessions?id="+id, ""); code != http.StatusOK {
		t.Fatalf("delete: %d %s", code, body)
	}
	// The plugin goes on syncing the session, with new text.
	code, body := s.rest("alice", http.MethodPost, "/sync/message",
		`{"sessionExternalId":"a1","externalId":"m5","role":"user","textContent":"one more SSO callback question about the login redirect"}`)
	if code != http.StatusOK || !strings.Contains(body, `"ignored":"deleted"`) {
		t.Fatalf("plugin's next message: %d %s", code, body)
	}
	s.sync("alice", map[string]any{"sessions": []any{session("a1", "Fix the login redirect loop", "claude-code", "webapp")}})

	gone := func(what, txt string) {
		t.Helper()
		for _, trace := range []string{id, "Fix the login redirect loop", "saved return path", "one more SSO callback question"} {
			if strings.Contains(txt, trace) {
				t.Errorf("%s shows the deleted session (%q): %s", what, trace, txt)
			}
		}
	}
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			alice := s.connect("alice", tr)
			for _, mode := range []string{"fulltext", "semantic", "hybrid"} {
				res := call(t, alice, "search_sessions", map[string]any{"query": "login redirect SSO callback", "mode": mode})
				if res.IsError {
					t.Errorf("search %s: %s", mode, textOf(res))
				}
				gone("search_sessions "+mode, textOf(res))
			}
			res := call(t, alice, "get_context", map[string]any{"query": "login redirect SSO callback"})
			gone("get_context", textOf(res))
			res = call(t, alice, "list_sessions", map[string]any{})
			if !strings.Contains(textOf(res), "Login page styling") {
				t.Errorf("list_sessions lost the other sessions: %s", textOf(res))
			}
			gone("list_sessions", textOf(res))
			res = call(t, alice, "get_session", map[string]any{"id": id})
			if !res.IsError {
				t.Errorf("get_session of the deleted session: %s", textOf(res))
			}
			gone("get_session", strings.ReplaceAll(textOf(res), id, ""))
		})
	}
}
