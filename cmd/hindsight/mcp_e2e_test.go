package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMCPTypeScriptClient runs the official MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk 1.32.2 from npm, testdata/mcp_client.mjs)
// against a `hindsight serve` child process holding two users' sessions,
// over Streamable HTTP at /mcp and over stdio through `hindsight mcp` (this
// test binary run as hindsight). The client lists the tools, calls each as
// each user, and tries every session id of one user with the other's key.
//
// It needs npm and node. Without npm it is skipped with a loud reason, unless
// HINDSIGHT_REQUIRE_NPM=1 (CI), which makes that a failure.
func TestMCPTypeScriptClient(t *testing.T) {
	t.Parallel()
	dir := installMCPSDK(t)
	data := t.TempDir()
	// Full-text only, whatever embedder the environment offers: the client
	// checks exact result sets, which a semantic leg (every session has some
	// cosine similarity) would widen. mcpd's Go tests cover hybrid and
	// degraded answers.
	srv := startServe(t, data, "--embedder", "none")
	keys := map[string]string{"alice": newKey(t, data, "alice"), "bob": newKey(t, data, "bob")}
	post := func(user string, batch map[string]any) {
		t.Helper()
		body, _ := json.Marshal(batch)
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/sync/batch", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keys[user])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("sync for %s: %d", user, resp.StatusCode)
		}
	}
	sess := func(id, title, source, project string) map[string]any {
		return map[string]any{"externalId": id, "title": title, "source": source, "projectName": project}
	}
	post("alice", map[string]any{
		"sessions": []any{sess("a1", "Fix the login redirect loop", "claude-code", "webapp"), sess("a2", "Login callback logging", "opencode", "webapp"), sess("a3", "Tune the connection pool", "opencode", "api")},
		"messages": []any{
			msg("a1", "m1", "user", map[string]any{"textContent": "After SSO sign in the callback sends users back to the login page: fix the login redirect"}),
			msg("a1", "m2", "assistant", map[string]any{"textContent": "Fixed: the callback now redirects to the saved return path"}),
			msg("a2", "m1", "user", map[string]any{"textContent": "Log every login callback and redirect"}),
			msg("a3", "m1", "user", map[string]any{"textContent": "The connection pool is exhausted"}),
		},
	})
	post("bob", map[string]any{
		"sessions": []any{sess("b1", "Bob's redirect token leak", "claude-code", "bobsite")},
		"messages": []any{msg("b1", "m1", "user", map[string]any{"textContent": "login redirect callback leaks token bob-secret-7731"})},
	})
	waitSearchable(t, srv.URL, keys["alice"], 3)
	waitSearchable(t, srv.URL, keys["bob"], 1)

	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	command, _ := json.Marshal([]string{self, "-test.run=^$", "--", "mcp"})
	script := filepath.Join(dir, "mcp_client.mjs")
	src, err := os.ReadFile(filepath.Join("testdata", "mcp_client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	// Beside its node_modules, so that the SDK's imports resolve.
	if err := os.WriteFile(script, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := untilDeadline(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "HINDSIGHT_URL="+srv.URL, "ALICE_KEY="+keys["alice"], "BOB_KEY="+keys["bob"], "HINDSIGHT_MCP_COMMAND="+string(command))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the TypeScript MCP client failed: %v\n%s\nserver log:\n%s", err, stderr.String(), srv.stderr.String())
	}

	type toolResult struct {
		IsError    bool
		Text       string
		Structured map[string]any
	}
	type userReport struct {
		Server struct{ Name, Version string }
		Tools  []struct {
			Name            string
			Required        []string
			HasOutputSchema bool
		}
		Search, SearchFiltered, Context, List toolResult
		Sessions, Foreign                     map[string]toolResult
		IDs                                   []string
		Stderr                                string
	}
	var report map[string]map[string]userReport
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("client report: %v\n%s", err, stdout.String())
	}
	titles := func(r toolResult, list string) []string {
		var out []string
		items, _ := r.Structured[list].([]any)
		for _, it := range items {
			out = append(out, it.(map[string]any)["title"].(string))
		}
		return out
	}
	for _, kind := range []string{"http", "stdio"} {
		alice, bob := report[kind]["alice"], report[kind]["bob"]
		if alice.Server.Name != "hindsight" {
			t.Errorf("%s: server %+v", kind, alice.Server)
		}
		var names []string
		for _, tool := range alice.Tools {
			names = append(names, tool.Name)
			wantReq := map[string][]string{"search_sessions": {"query"}, "get_context": {"query"}, "get_session": {"id"}}[tool.Name]
			wantOut := tool.Name == "search_sessions" || tool.Name == "list_sessions"
			if !slices.Equal(tool.Required, wantReq) && !(len(tool.Required) == 0 && wantReq == nil) || tool.HasOutputSchema != wantOut {
				t.Errorf("%s: tool %+v", kind, tool)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"get_context", "get_session", "list_sessions", "search_sessions"}) {
			t.Errorf("%s: tools %v", kind, names)
		}
		if got := titles(alice.Search, "results"); alice.Search.IsError || len(got) != 2 || !slices.Contains(got, "Fix the login redirect loop") || !slices.Contains(got, "Login callback logging") {
			t.Errorf("%s: alice's search %v\n%s", kind, got, alice.Search.Text)
		}
		if got := titles(alice.SearchFiltered, "results"); !slices.Equal(got, []string{"Login callback logging"}) {
			t.Errorf("%s: alice's search of opencode sessions %v", kind, got)
		}
		if !strings.Contains(alice.Context.Text, "saved return path") || strings.Contains(alice.Context.Text, "bob-secret") {
			t.Errorf("%s: alice's context\n%s", kind, alice.Context.Text)
		}
		if got := titles(alice.List, "sessions"); len(got) != 3 {
			t.Errorf("%s: alice lists %v", kind, got)
		}
		if got := titles(bob.Search, "results"); !slices.Equal(got, []string{"Bob's redirect token leak"}) {
			t.Errorf("%s: bob's search %v", kind, got)
		}
		if got := titles(bob.List, "sessions"); !slices.Equal(got, []string{"Bob's redirect token leak"}) {
			t.Errorf("%s: bob lists %v", kind, got)
		}
		if !strings.Contains(bob.Context.Text, "bob-secret-7731") {
			t.Errorf("%s: bob's context\n%s", kind, bob.Context.Text)
		}
		for user, r := range map[string]userReport{"alice": alice, "bob": bob} {
			for id, s := range r.Sessions {
				if s.IsError || !strings.HasPrefix(s.Text, "# ") || !strings.Contains(s.Text, "End of session") {
					t.Errorf("%s: %s reading own session %s: %+v", kind, user, id, s)
				}
			}
			if len(r.Foreign) == 0 {
				t.Errorf("%s: %s tried no foreign ids", kind, user)
			}
			for id, s := range r.Foreign {
				if !s.IsError || !strings.Contains(s.Text, "not found") {
					t.Errorf("%s: %s reading the other user's session %s: %+v", kind, user, id, s)
				}
			}
		}
		// Nothing of alice's reaches bob through any tool.
		var seen strings.Builder
		for _, r := range []toolResult{bob.Search, bob.SearchFiltered, bob.Context, bob.List} {
			fmt.Fprintln(&seen, r.Text, r.Structured)
		}
		for _, s := range bob.Sessions {
			fmt.Fprintln(&seen, s.Text)
		}
		for _, w := range []string{"saved return path", "SSO", "connection pool", "Fix the login redirect loop", "Login callback logging", "webapp"} {
			if strings.Contains(seen.String(), w) {
				t.Errorf("%s: bob's tool output contains alice's %q", kind, w)
			}
		}
		for _, id := range alice.IDs {
			if strings.Contains(seen.String(), id) {
				t.Errorf("%s: bob's tool output names alice's session %s", kind, id)
			}
		}
	}
}

// waitSearchable waits until key's full-text search sees n sessions.
func waitSearchable(t *testing.T, url, key string, n int) {
	t.Helper()
	deadline := deadline(t)
	for {
		req, _ := http.NewRequest(http.MethodGet, url+"/api/search?q=login+redirect+callback+connection+pool+token&limit=100", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Results []any }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if len(body.Results) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d sessions searchable by the test's deadline", len(body.Results), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// installMCPSDK installs the TypeScript SDK and returns its directory.
func installMCPSDK(t *testing.T) string {
	t.Helper()
	return installNPM(t, "@modelcontextprotocol/sdk", "1.32.2", "the end-to-end test with the official MCP TypeScript SDK client")
}
