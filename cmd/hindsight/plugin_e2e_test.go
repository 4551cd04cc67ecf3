package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/importer"
)

// TestPluginClaudeCodeSync runs the real Claude Code sync plugin,
// claude-code-sync 0.1.15 from npm, against a `hindsight serve` child process
// on loopback, the way Claude Code runs it: its hook subcommands get the JSON
// a Claude Code hook receives on stdin, with a transcript the test writes as
// the conversation goes. Hooks always exit 0, so everything is asserted on
// the server. A transparent recording proxy sits between plugin and server so
// the test can also check (and, with -v, show) what the plugin sent.
//
// It needs npm and node. Without npm it is skipped with a loud reason, unless
// HINDSIGHT_REQUIRE_NPM=1 (CI), which makes that a failure.
func TestPluginClaudeCodeSync(t *testing.T) {
	t.Parallel()
	cli := installClaudeCodeSync(t)

	data := t.TempDir()
	srv := startServe(t, data)
	key := newKey(t, data, "alice")
	probeKey := newKey(t, data, "probe")
	rec := newPluginRecorder(t, srv.URL)

	home := t.TempDir()
	plugin := func(key string, stdin any, args ...string) (string, int) {
		t.Helper()
		return runPlugin(t, cli, home, rec.URL, key, stdin, args...)
	}

	// synctest: GET /health and a test session. Run under its own user so
	// alice ends up with exactly the session of the conversation.
	if out, code := plugin(probeKey, nil, "synctest"); code != 0 || !strings.Contains(out, "Sync test passed") {
		t.Fatalf("synctest exited %d:\n%s", code, out)
	}
	probe := fetchSessions(t, srv.URL, probeKey)
	if len(probe) != 1 {
		t.Fatalf("synctest stored %d sessions, want 1", len(probe))
	}
	for _, s := range probe {
		if s.Source != "claude-code" || s.Title != "Connection Test" || s.ProjectName != "synctest" {
			t.Errorf("synctest session = %+v", s)
		}
	}
	if out, code := plugin("osk_"+strings.Repeat("0", 32), nil, "synctest"); code != 1 || !strings.Contains(out, "401") {
		t.Errorf("synctest with an unknown key exited %d, want 1 with the 401 shown:\n%s", code, out)
	}

	// The conversation. Claude Code appends to the transcript as it goes and
	// names it after the session id.
	const sid = "11111111-2222-4333-8444-555555555555"
	const cwd = "/home/dev/demo-proj"
	prompt := "Fix the login redirect bug: after signing in with SSO the callback sends users back to the login page forever"
	transcript := filepath.Join(home, ".claude", "projects", "-home-dev-demo-proj", sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(transcript), 0o755); err != nil {
		t.Fatal(err)
	}
	appendLines := func(lines ...string) {
		t.Helper()
		f, err := os.OpenFile(transcript, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, l := range lines {
			fmt.Fprintf(f, "%s\n", l)
		}
	}
	line := func(typ, uuid, ts, message string) string {
		return fmt.Sprintf(`{"parentUuid":null,"isSidechain":false,"userType":"external","cwd":%q,"sessionId":%q,"version":"1.0.80","type":%q,"uuid":%q,"timestamp":%q,"message":%s}`,
			cwd, sid, typ, uuid, ts, message)
	}
	hook := func(event string, in map[string]any) {
		t.Helper()
		in["session_id"] = sid
		in["hook_event_name"] = event
		out, code := plugin(key, in, "hook", event)
		if code != 0 || strings.Contains(out, "Error") || strings.Contains(out, "Failed") {
			t.Fatalf("hook %s exited %d:\n%s", event, code, out)
		}
	}

	hook("SessionStart", map[string]any{"transcript_path": transcript, "cwd": cwd, "source": "startup"})
	promptJSON, _ := json.Marshal(prompt)
	appendLines(line("user", "u-1", "2026-01-10T10:00:00.000Z", `{"role":"user","content":`+string(promptJSON)+`}`))
	hook("UserPromptSubmit", map[string]any{"transcript_path": transcript, "cwd": cwd, "prompt": prompt})
	appendLines(line("assistant", "a-1", "2026-01-10T10:00:05.000Z",
		`{"id":"msg_1","type":"message","model":"claude-sonnet-4-20250514","role":"assistant","content":[{"type":"text","text":"I'll look at the auth redirect in the SSO callback."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":50,"output_tokens":20}}`))
	hook("PostToolUse", map[string]any{"transcript_path": transcript, "cwd": cwd, "tool_name": "Bash",
		"tool_input": map[string]any{"command": "ls"}, "tool_use_id": "toolu_01",
		"tool_response": map[string]any{"stdout": "auth.go\ncallback.go", "stderr": "", "interrupted": false}})
	appendLines(
		line("user", "u-2", "2026-01-10T10:00:06.000Z", `{"role":"user","content":[{"tool_use_id":"toolu_01","type":"tool_result","content":"auth.go\ncallback.go"}]}`),
		line("assistant", "a-2", "2026-01-10T10:00:10.000Z",
			`{"id":"msg_2","type":"message","model":"claude-sonnet-4-20250514","role":"assistant","content":[{"type":"text","text":"Fixed: the callback URL pointed at the login page instead of the return path."}],"usage":{"input_tokens":5,"cache_creation_input_tokens":0,"cache_read_input_tokens":150,"output_tokens":30}}`))
	stop := map[string]any{"transcript_path": transcript, "cwd": cwd, "stop_hook_active": false}
	hook("Stop", stop)

	ss := fetchSessions(t, srv.URL, key)
	afterStop := asJSON(ss)
	hook("Stop", stop) // again: the plugin must not send the assistant texts twice
	if got := asJSON(fetchSessions(t, srv.URL, key)); got != afterStop {
		t.Errorf("re-running Stop changed the stored session:\nbefore %s\nafter  %s", afterStop, got)
	}
	hook("SessionEnd", map[string]any{"transcript_path": transcript, "cwd": cwd, "reason": "exit"})

	ss = fetchSessions(t, srv.URL, key)
	if len(ss) != 1 {
		t.Fatalf("alice has %d sessions, want exactly 1: %v", len(ss), ss)
	}
	s := ss[sid]
	want := importedSession{
		ID: s.ID, ExternalID: sid, Source: "claude-code", Title: importer.Title(prompt),
		ProjectPath: cwd, ProjectName: "demo-proj", Model: "claude-sonnet-4-20250514",
		PromptTokens: 315, CompletionTokens: 50, Cost: s.Cost, DurationMs: 10000, MessageCount: 4,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt, Messages: s.Messages,
	}
	if asJSON(s) != asJSON(want) {
		t.Errorf("session\n got %+v\nwant %+v", s, want)
	}
	if s.Title != "Fix the login redirect bug: after signing in with SSO the callback sends users..." {
		t.Errorf("title %q: the plugin's rule changed, or importer.Title no longer matches it", s.Title)
	}
	// 10 input, 100 cache write, 200 cache read, 50 output at Sonnet 4 prices.
	if math.Abs(s.Cost-0.00123) > 1e-12 {
		t.Errorf("cost = %v, want 0.00123", s.Cost)
	}
	type msgWant struct{ id, role, text, parts string }
	wantMsgs := []msgWant{
		{sid + "-user-", "user", prompt, ""},
		{"toolu_01", "assistant", "", "tool-call"},
		{"a-1", "assistant", "I'll look at the auth redirect in the SSO callback.", ""},
		{"a-2", "assistant", "Fixed: the callback URL pointed at the login page instead of the return path.", ""},
	}
	if len(s.Messages) != len(wantMsgs) {
		t.Fatalf("%d messages stored, want %d: %+v", len(s.Messages), len(wantMsgs), s.Messages)
	}
	for i, w := range wantMsgs {
		m := s.Messages[i]
		var text string
		if m.TextContent != nil {
			text = *m.TextContent
		}
		var types []string
		for _, p := range m.Parts {
			types = append(types, p.Type)
		}
		if !strings.HasPrefix(m.ExternalID, w.id) || m.Role != w.role || text != w.text || strings.Join(types, ",") != w.parts {
			t.Errorf("message %d = %s %s %q [%s], want %s… %s %q [%s]", i, m.ExternalID, m.Role, text, strings.Join(types, ","), w.id, w.role, w.text, w.parts)
		}
	}
	if p := s.Messages[1].Parts; len(p) == 1 && (p[0].ToolName != "Bash" || p[0].Args != `{"command":"ls"}`) {
		t.Errorf("tool call stored as %+v", p[0])
	}

	// Searchable: the prompt and the assistant texts; not the tool call.
	for q, want := range map[string]int{"SSO": 1, "callback URL return path": 1, "auth redirect": 1, "toolu_01": 0} {
		waitForSearch(t, srv.URL, key, q, want)
	}

	rec.check(t)

	// Importing the same transcript after live sync finds everything already
	// there (same ids, same numbers: the importer mirrors the plugin) but the
	// tool's output, which the plugin did not send: the call is sent again
	// with it (and its model), and nothing else changes.
	args := []string{"import", "claude-code", filepath.Join(home, ".claude", "projects"), "--server", srv.URL, "--key", key, "--quiet"}
	out, errOut, err := importRun(t, args...)
	if err != nil {
		t.Fatalf("import after live sync: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "import after live sync", out,
		"sessions: 0 imported, 1 updated, 0 unchanged", "messages: 1 imported, 3 unchanged, 0 failed")
	got := fetchSessions(t, srv.URL, key)
	stored := ss[sid]
	stored.UpdatedAt = got[sid].UpdatedAt
	stored.Messages = append([]importedMessage(nil), stored.Messages...)
	stored.Messages[1].Parts = append(append([]importedPart(nil), stored.Messages[1].Parts...),
		importedPart{Type: "tool-result", Content: "auth.go\ncallback.go", ToolName: "Bash"})
	stored.Messages[1].Model = "claude-sonnet-4-20250514" // the transcript's, which the hook does not send
	if asJSON(got) != asJSON(map[string]importedSession{sid: stored}) {
		t.Errorf("import after live sync:\nbefore %s\nafter  %s\nwant   %s", asJSON(ss), asJSON(got), asJSON(stored))
	}
	out, errOut, err = importRun(t, args...)
	if err != nil {
		t.Fatalf("second import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "second import", out, "sessions: 0 imported, 0 updated, 1 unchanged", "messages: 0 imported, 4 unchanged, 0 failed")
}

// installClaudeCodeSync installs the plugin into the git-ignored cache and
// returns the path of its CLI.
func installClaudeCodeSync(t *testing.T) string {
	t.Helper()
	dir := installNPM(t, "claude-code-sync", "0.1.15", "the end-to-end test against the real claude-code-sync plugin")
	cli := filepath.Join(dir, "node_modules", ".bin", "claude-code-sync")
	if fi, err := os.Stat(cli); err != nil || fi.IsDir() {
		t.Fatalf("claude-code-sync has no CLI at %s: %v", cli, err)
	}
	return cli
}

// installNPM installs pkg@version with scripts/npm-pinned.sh into
// .cache/npm/<pkg with "@" dropped and "/" as "-"> and returns that directory. Without npm
// and node the test is skipped with a loud reason naming what (the test)
// needs them, unless HINDSIGHT_REQUIRE_NPM=1 (CI), which makes it a failure.
func installNPM(t *testing.T, pkg, version, what string) string {
	t.Helper()
	for _, tool := range []string{"npm", "node"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("SKIPPING: %s not found on PATH; %s needs npm and node (CI sets HINDSIGHT_REQUIRE_NPM=1 to make this a failure)", tool, what)
			if os.Getenv("HINDSIGHT_REQUIRE_NPM") == "1" {
				t.Fatal(strings.Replace(msg, "SKIPPING", "FAILING (HINDSIGHT_REQUIRE_NPM=1)", 1))
			}
			t.Skip(msg)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, ".cache", "npm", strings.NewReplacer("@", "", "/", "-").Replace(pkg))
	ctx, cancel := untilDeadline(t)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "npm-pinned.sh"), pkg, version, dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("installing %s@%s with npm: %v\n%s", pkg, version, err, stderr.String())
	}
	return dir
}

// runPlugin runs the plugin's CLI with HOME isolated and the env vars that
// point it at base, feeding stdin as JSON. It returns the combined output and
// the exit status.
func runPlugin(t *testing.T, cli, home, base, key string, stdin any, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := untilDeadline(t)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || strings.HasPrefix(name, "CLAUDE_SYNC_") || strings.HasSuffix(strings.ToUpper(name), "_PROXY") {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "HOME="+home, "CLAUDE_SYNC_CONVEX_URL="+base, "CLAUDE_SYNC_API_KEY="+key, "NO_PROXY=127.0.0.1")
	if stdin != nil {
		b, err := json.Marshal(stdin)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = bytes.NewReader(b)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("claude-code-sync %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// waitForSearch polls full-text search until q finds want sessions (indexing is
// asynchronous) or 10 s pass.
func waitForSearch(t *testing.T, base, key, q string, want int) {
	t.Helper()
	var res struct{ Results []searchResult }
	deadline := deadline(t)
	for {
		apiGet(t, base, key, "/api/search?q="+url.QueryEscape(q), &res)
		if len(res.Results) == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(res.Results) != want {
		t.Errorf("search %q found %d sessions, want %d", q, len(res.Results), want)
	}
}

// pluginRecorder is a transparent reverse proxy that records each request the
// plugin makes before passing it on unchanged.
type pluginRecorder struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []pluginRequest
}

type pluginRequest struct {
	Method, Path, Auth, UserAgent string
	Body                          map[string]any
	Status                        int
}

func newPluginRecorder(t *testing.T, target string) *pluginRecorder {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	r := &pluginRecorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(b))
		rr := pluginRequest{Method: req.Method, Path: req.URL.RequestURI(), Auth: req.Header.Get("Authorization"), UserAgent: req.Header.Get("User-Agent")}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &rr.Body); err != nil {
				t.Errorf("the plugin sent a body that is not a JSON object to %s: %s", req.URL.Path, b)
			}
		}
		sw := &pluginStatusWriter{ResponseWriter: w, status: http.StatusOK}
		proxy.ServeHTTP(sw, req)
		rr.Status = sw.status
		r.mu.Lock()
		r.reqs = append(r.reqs, rr)
		r.mu.Unlock()
	}))
	t.Cleanup(r.Close)
	return r
}

type pluginStatusWriter struct {
	http.ResponseWriter
	status int
}

func (w *pluginStatusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// check logs what the plugin sent and asserts the protocol facts the server
// relies on: bearer auth on every sync call, no createdAt, only the
// endpoints plugins.md lists, every request answered 2xx (bar the
// deliberately unknown key).
func (r *pluginRecorder) check(t *testing.T) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := map[string]int{}
	for _, rr := range r.reqs {
		b, _ := json.Marshal(rr.Body)
		t.Logf("plugin sent %s %s (%d) %s", rr.Method, rr.Path, rr.Status, b)
		counts[rr.Method+" "+rr.Path]++
		switch rr.Method + " " + rr.Path {
		case "GET /health":
			if rr.Auth != "" {
				t.Errorf("the plugin sent a key to /health")
			}
		case "POST /sync/session", "POST /sync/message":
			if !strings.HasPrefix(rr.Auth, "Bearer osk_") {
				t.Errorf("%s without a bearer key", rr.Path)
			}
			if _, ok := rr.Body["createdAt"]; ok {
				t.Errorf("the plugin now sends createdAt (%s): update plugins.md", b)
			}
			if rr.Status != http.StatusOK && !strings.HasSuffix(rr.Auth, strings.Repeat("0", 32)) {
				t.Errorf("%s answered %d", rr.Path, rr.Status)
			}
		default:
			t.Errorf("unexpected request %s %s", rr.Method, rr.Path)
		}
	}
	// 2 synctests (a health check and a session each); hooks: SessionStart,
	// first prompt, Stop twice, SessionEnd; messages: prompt, tool call, 2 texts.
	if counts["GET /health"] != 2 || counts["POST /sync/session"] != 7 || counts["POST /sync/message"] != 4 {
		t.Errorf("request counts = %v, want 2 health checks, 7 session and 4 message posts", counts)
	}
}
