package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The import tests run `hindsight import` in-process against a wired app on
// loopback (newTestApp), over copies of testdata/ plus two generated
// sessions: one with a 3 MiB tool output and one with 2,000 messages.

// importRun runs a hindsight command in-process and returns stdout and stderr.
func importRun(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := untilDeadline(t)
	defer cancel()
	err := run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

// importFixture copies testdata/<name> into a fresh temporary directory.
func importFixture(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("testdata", name)
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// importWriteJSONL writes one JSON value per line.
func importWriteJSONL(t *testing.T, path string, lines []any) {
	t.Helper()
	var buf bytes.Buffer
	for _, l := range lines {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func importCCLine(sid, typ, uuid string, at time.Time, message map[string]any) map[string]any {
	return map[string]any{"type": typ, "uuid": uuid, "sessionId": sid, "cwd": "/home/dev/big",
		"timestamp": at.UTC().Format("2006-01-02T15:04:05.000Z"), "message": message}
}

const (
	hugeSID = "7a7a7a7a-0000-4000-8000-000000000001"
	longSID = "2d2d2d2d-0000-4000-8000-000000002000"
)

var (
	hugeStart = time.Date(2025, 1, 20, 8, 0, 0, 0, time.UTC)
	longStart = time.Date(2025, 2, 3, 14, 0, 0, 0, time.UTC)
)

// addGeneratedSessions writes the huge-output and 2,000-message transcripts.
func addGeneratedSessions(t *testing.T, projects string) {
	t.Helper()
	huge := "hugeoutputmarker\n" + strings.Repeat("compile step ok: package github.com/example/big/internal/x\n", 3<<20/58)
	importWriteJSONL(t, filepath.Join(projects, "-home-dev-big", hugeSID+".jsonl"), []any{
		importCCLine(hugeSID, "user", "h-u1", hugeStart, map[string]any{"role": "user", "content": "Show me the whole build log"}),
		importCCLine(hugeSID, "assistant", "h-a1", hugeStart.Add(time.Second), map[string]any{"role": "assistant", "model": "claude-opus-4-20250514",
			"content": []any{map[string]any{"type": "tool_use", "id": "toolu_huge", "name": "Bash", "input": map[string]any{"command": "make build"}}},
			"usage":   map[string]any{"input_tokens": 10, "output_tokens": 5}}),
		importCCLine(hugeSID, "user", "h-u2", hugeStart.Add(90*time.Second), map[string]any{"role": "user",
			"content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_huge", "content": huge}}}),
		importCCLine(hugeSID, "assistant", "h-a2", hugeStart.Add(95*time.Second), map[string]any{"role": "assistant", "model": "claude-opus-4-20250514",
			"content": []any{map[string]any{"type": "text", "text": "The build log is clean (wombatbuild)."}},
			"usage":   map[string]any{"input_tokens": 20, "output_tokens": 7}}),
	})
	var lines []any
	for i := range 1000 {
		at := longStart.Add(time.Duration(2*i) * 30 * time.Second)
		lines = append(lines,
			importCCLine(longSID, "user", fmt.Sprintf("l-u%04d", i), at, map[string]any{"role": "user", "content": fmt.Sprintf("question %d about the ferret module", i)}),
			importCCLine(longSID, "assistant", fmt.Sprintf("l-a%04d", i), at.Add(30*time.Second), map[string]any{"role": "assistant", "model": "claude-sonnet-4-20250514",
				"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("answer %d about the ferret module", i)}},
				"usage":   map[string]any{"input_tokens": 1, "cache_read_input_tokens": 10, "output_tokens": 2}}))
	}
	importWriteJSONL(t, filepath.Join(projects, "-home-dev-big", longSID+".jsonl"), lines)
}

// importedSession is a session read object with its messages.
type importedSession struct {
	ID               string
	ExternalID       string
	Source           string
	Title            string
	ProjectPath      string
	ProjectName      string
	Model            string
	Provider         string
	PromptTokens     int64
	CompletionTokens int64
	Cost             float64
	DurationMs       int64
	MessageCount     int
	CreatedAt        int64
	UpdatedAt        int64
	Messages         []importedMessage
}

type importedMessage struct {
	ExternalID       string
	Role             string
	Parts            []importedPart
	TextContent      *string
	Model            string
	PromptTokens     *int64
	CompletionTokens *int64
	DurationMs       *int64
	CreatedAt        int64
}

// asJSON renders v for comparisons and failure messages (pointers as values).
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v (%v)", v, err)
	}
	return string(b)
}

func (s importedSession) String() string { return asJSON(s) }
func (m importedMessage) String() string { return asJSON(m) }

type importedPart struct {
	Type     string
	Content  string
	Text     string
	ToolName string
	Args     string
	AgentID  string // a sub-agent mark's
}

// importedSessions returns every session of the key's user, with messages, by
// external id.
func (ta *testApp) importedSessions(key string) map[string]importedSession {
	ta.t.Helper()
	return fetchSessions(ta.t, ta.srv.URL, key)
}

// apiGet GETs path from the server at base and decodes the JSON response.
func apiGet(t *testing.T, base, key, path string, out any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, b)
	}
}

// fetchSessions returns every session of the key's user on the server at
// base, with messages, by external id.
func fetchSessions(t *testing.T, base, key string) map[string]importedSession {
	t.Helper()
	var list struct{ Sessions []importedSession }
	apiGet(t, base, key, "/api/sessions?limit=500", &list)
	out := map[string]importedSession{}
	for _, s := range list.Sessions {
		var got struct {
			Session  importedSession
			Messages []importedMessage
		}
		apiGet(t, base, key, "/api/sessions/get?id="+s.ID, &got)
		got.Session.Messages = got.Messages
		out[s.ExternalID] = got.Session
	}
	return out
}

func isoMillis(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UnixMilli()
}

func importMustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

func TestImportClaudeCode(t *testing.T) {
	t.Parallel()
	projects := filepath.Join(importFixture(t, "claude-code"), "projects")
	addGeneratedSessions(t, projects)
	ta := newTestApp(t, t.TempDir())
	key := ta.key("alice")
	args := []string{"import", "claude-code", projects, "--server", ta.srv.URL, "--key", key}

	start := time.Now()
	out, errOut, err := importRun(t, args...)
	if err != nil {
		t.Fatalf("import: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("first import took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	importMustContain(t, "summary", out,
		"Found 5 claude-code sessions", // the agent-*.jsonl sub-agent transcript belongs to the shop session
		"sessions: 4 imported, 0 updated, 0 unchanged, 1 skipped (nothing to import), 0 failed",
		"messages: 2012 imported, 0 unchanged, 0 failed",
		"skipped malformed input (1):",
		"5f0c3a9e-1111-4222-8333-444455556666.jsonl:6: skipped: not a transcript line",
	)
	importMustContain(t, "progress", errOut, "sessions: 100%")

	ss := ta.importedSessions(key)
	if len(ss) != 4 {
		t.Fatalf("%d sessions stored, want 4", len(ss))
	}
	shop := ss["5f0c3a9e-1111-4222-8333-444455556666"]
	wantShop := importedSession{
		ID: shop.ID, ExternalID: "5f0c3a9e-1111-4222-8333-444455556666", Source: "claude-code",
		Title:       "The checkout page redirects to /login in a loop after the session cookie...",
		ProjectPath: "/home/dev/shop", ProjectName: "shop", Model: "claude-sonnet-4-20250514",
		PromptTokens: 27 + 2150 + 6100, CompletionTokens: 205, Cost: shop.Cost, DurationMs: 256661,
		MessageCount: 7, CreatedAt: isoMillis("2025-03-14T09:26:53.589Z"), UpdatedAt: isoMillis("2025-03-14T09:31:10.250Z"),
		Messages: shop.Messages,
	}
	if asJSON(shop) != asJSON(wantShop) {
		t.Errorf("shop session\n got %+v\nwant %+v", shop, wantShop)
	}
	// The plugin's price table: 27 input, 2150 cache write, 6100 cache read, 205 output on Sonnet 4.
	if want := (27*3.00 + 2150*3.75 + 6100*0.30 + 205*15.00) / 1e6; math.Abs(shop.Cost-want) > 1e-12 {
		t.Errorf("cost = %v, want %v", shop.Cost, want)
	}
	type msgWant struct {
		id, role, at string
		parts        string // part types
	}
	wantMsgs := []msgWant{
		{"5f0c3a9e-1111-4222-8333-444455556666-user-u-1", "user", "2025-03-14T09:26:53.589Z", "text"},
		{"a-1", "assistant", "2025-03-14T09:26:58.000Z", "thinking,text"},
		{"toolu_01A", "assistant", "2025-03-14T09:27:01.000Z", "tool-call,tool-result"},
		{"a-3", "assistant", "2025-03-14T09:27:30.000Z", "text"},
		// The sub-agent's prompt, from agent-0a1b2c3d.jsonl, marked as its.
		{"5f0c3a9e-1111-4222-8333-444455556666-user-sa-u", "user", "2025-03-14T09:28:00.000Z", "text,subagent"},
		{"5f0c3a9e-1111-4222-8333-444455556666-user-u-4", "user", "2025-03-14T09:30:00.000Z", "text"},
		{"a-4", "assistant", "2025-03-14T09:31:10.250Z", "text"},
	}
	if len(shop.Messages) != len(wantMsgs) {
		t.Fatalf("shop has %d messages, want %d: %+v", len(shop.Messages), len(wantMsgs), shop.Messages)
	}
	for i, w := range wantMsgs {
		m := shop.Messages[i]
		var types []string
		for _, p := range m.Parts {
			types = append(types, p.Type)
		}
		if m.ExternalID != w.id || m.Role != w.role || m.CreatedAt != isoMillis(w.at) || strings.Join(types, ",") != w.parts {
			t.Errorf("message %d = %s %s %d [%s], want %s %s %d [%s]", i, m.ExternalID, m.Role, m.CreatedAt,
				strings.Join(types, ","), w.id, w.role, isoMillis(w.at), w.parts)
		}
	}
	if sub := shop.Messages[4].Parts; len(sub) != 2 || sub[1].Type != "subagent" || sub[1].AgentID != "0a1b2c3d" {
		t.Errorf("sub-agent mark = %+v", sub)
	}
	if call := shop.Messages[2].Parts; len(call) == 2 && (call[0].ToolName != "Grep" || call[0].Args != `{"pattern":"redirect\\(","path":"src/middleware"}` ||
		!strings.Contains(call[1].Content, "auth.ts:41")) {
		t.Errorf("tool call parts = %+v", call)
	}

	notes := ss["0b7e6d5c-2222-4333-8444-555566667777"]
	if notes.CreatedAt != isoMillis("2024-11-02T18:04:05.000Z") || notes.Cost != 0 || notes.PromptTokens != 100 || notes.Title != "Summarise my meeting notes from Tuesday" {
		t.Errorf("notes session = %+v (an unpriced model costs 0)", notes)
	}

	huge := ss[hugeSID]
	if len(huge.Messages) != 3 {
		t.Fatalf("huge session has %d messages, want 3", len(huge.Messages))
	}
	res := huge.Messages[1].Parts
	if len(res) != 2 || len(res[1].Content) > 256<<10 || !strings.HasPrefix(res[1].Content, "hugeoutputmarker") ||
		!strings.Contains(res[1].Content, "cut by hindsight import; the original has") {
		t.Errorf("huge tool output stored as %d parts, result %d bytes", len(res), len(res[len(res)-1].Content))
	}

	long := ss[longSID]
	if long.MessageCount != 2000 || len(long.Messages) != 2000 {
		t.Fatalf("long session has %d messages (count %d), want 2000", len(long.Messages), long.MessageCount)
	}
	for i, m := range long.Messages {
		if want := longStart.Add(time.Duration(i) * 30 * time.Second).UnixMilli(); m.CreatedAt != want {
			t.Fatalf("long message %d (%s) createdAt %d, want %d: order or dates lost", i, m.ExternalID, m.CreatedAt, want)
		}
	}
	if long.CreatedAt != longStart.UnixMilli() || long.UpdatedAt != long.Messages[1999].CreatedAt {
		t.Errorf("long session created %d updated %d, want %d and %d", long.CreatedAt, long.UpdatedAt, longStart.UnixMilli(), long.Messages[1999].CreatedAt)
	}

	ta.idle()
	for _, tc := range []struct {
		q    string
		want string
	}{
		{"quokkaloop", "The checkout page"}, {"regression test expired cookie", "The checkout page"},
		{"wombatbuild", "Show me the whole build log"}, {"okapi", "Summarise my meeting notes"},
		{"pangolinthought", ""}, {"toolresultonly", ""}, {"hugeoutputmarker", ""},
	} {
		code, rs := ta.searchStatus(key, tc.q, "")
		if code != http.StatusOK {
			t.Fatalf("search %q: %d", tc.q, code)
		}
		if tc.want == "" && len(rs) != 0 || tc.want != "" && (len(rs) != 1 || !strings.HasPrefix(rs[0].Title, tc.want)) {
			t.Errorf("search %q = %q, want %q", tc.q, titles(rs), tc.want)
		}
	}

	// A second run sends nothing new and changes nothing.
	out, errOut, err = importRun(t, args...)
	if err != nil {
		t.Fatalf("re-import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "re-import summary", out,
		"sessions: 0 imported, 0 updated, 4 unchanged, 1 skipped (nothing to import), 0 failed",
		"messages: 0 imported, 2012 unchanged, 0 failed")
	again := ta.importedSessions(key)
	for id, s := range ss {
		if asJSON(again[id]) != asJSON(s) {
			t.Errorf("re-import changed session %s", id)
		}
	}
}

func TestImportOpenCode(t *testing.T) {
	dir := importFixture(t, "opencode")
	ta := newTestApp(t, t.TempDir())
	key := ta.key("bob")
	args := []string{"import", "opencode", dir, "--server", ta.srv.URL, "--key", key, "--quiet"}
	out, errOut, err := importRun(t, args...)
	if err != nil {
		t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "summary", out,
		"Found 2 opencode sessions",
		"sessions: 2 imported, 0 updated, 0 unchanged, 0 skipped (nothing to import), 0 failed",
		"messages: 4 imported, 0 unchanged, 0 failed",
		"skipped malformed input (2):",
		filepath.Join("message", "ses_01", "msg_04.json")+": skipped message:",
		filepath.Join("part", "msg_03", "prt_08.json")+": skipped part:",
	)
	if errOut != "" {
		t.Errorf("--quiet still wrote %q", errOut)
	}
	ss := ta.importedSessions(key)
	s1 := ss["ses_01"]
	want := importedSession{
		ID: s1.ID, ExternalID: "ses_01", Source: "opencode", Title: "Rate limiter for the public API",
		ProjectPath: "/home/dev/api", ProjectName: "api", Model: "claude-sonnet-4", Provider: "anthropic",
		PromptTokens: 2700, CompletionTokens: 420, Cost: s1.Cost, DurationMs: 30000, MessageCount: 3,
		CreatedAt: 1718000000000, UpdatedAt: 1718000020000, Messages: s1.Messages,
	}
	if asJSON(s1) != asJSON(want) || math.Abs(s1.Cost-0.0168) > 1e-12 {
		t.Errorf("ses_01\n got %+v\nwant %+v (cost 0.0168)", s1, want)
	}
	if len(s1.Messages) != 3 {
		t.Fatalf("ses_01 has %d messages", len(s1.Messages))
	}
	m := s1.Messages[1]
	if m.ExternalID != "msg_02" || m.CreatedAt != 1718000002000 || m.Model != "claude-sonnet-4" ||
		m.PromptTokens == nil || *m.PromptTokens != 1200 || m.DurationMs == nil || *m.DurationMs != 8000 {
		t.Errorf("msg_02 = %+v", m)
	}
	var types []string
	for _, p := range m.Parts {
		types = append(types, p.Type)
	}
	if strings.Join(types, ",") != "thinking,text,tool-call,tool-result" || m.Parts[2].ToolName != "bash" ||
		m.Parts[2].Args != `{"command":"go test ./httpd/"}` || !strings.Contains(m.Parts[3].Content, "ok  httpd") {
		t.Errorf("msg_02 parts = %+v", m.Parts)
	}
	s2 := ss["ses_02"]
	if s2.Title != "Write a short post about the capybara migration" || s2.CreatedAt != 1709251200000 || s2.ProjectName != "blog" {
		t.Errorf("ses_02 = %+v", s2)
	}
	ta.idle()
	for q, want := range map[string]int{"zebrafinch": 1, "capybara": 1, "marmosetreason": 0, "toolresultonly": 0, "Retry-After": 1} {
		if code, rs := ta.searchStatus(key, q, ""); code != http.StatusOK || len(rs) != want {
			t.Errorf("search %q: %d, %q; want %d hits", q, code, titles(rs), want)
		}
	}

	out, _, err = importRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	importMustContain(t, "re-import summary", out,
		"sessions: 0 imported, 0 updated, 2 unchanged", "messages: 0 imported, 4 unchanged, 0 failed")
}

// The import finds what a previous, interrupted import or the live plugin
// already stored and sends only the rest, in order, with its dates.
func TestImportResumesAndFillsGaps(t *testing.T) {
	// Both transports: what the server offers (batches once it keeps dates in
	// them) and one request per message.
	for _, mode := range []string{"--concurrency=4", "--singles"} {
		t.Run(mode, func(t *testing.T) { testImportResumes(t, mode) })
	}
}

func testImportResumes(t *testing.T, mode string) {
	projects := filepath.Join(importFixture(t, "claude-code"), "projects")
	ta := newTestApp(t, t.TempDir())
	key := ta.key("carol")
	sid := "5f0c3a9e-1111-4222-8333-444455556666"
	// What the live plugin sent for the first turn: the session, the user
	// prompt under a time-based id, and the first assistant text.
	ta.batch(key, map[string]any{"sessions": []any{map[string]any{"externalId": sid, "source": "claude-code", "title": "Fix the checkout"}}})
	for _, m := range []map[string]any{
		msg(sid, sid+"-user-1741944413589", "user", map[string]any{"textContent": "The checkout page redirects to /login in a loop after the session cookie expires. Can you find out why and fix it?"}),
		msg(sid, "a-1", "assistant", map[string]any{"textContent": "I'll look at the auth middleware first."}),
	} {
		if code, b := ta.do(http.MethodPost, key, "/sync/message", m); code != http.StatusOK {
			t.Fatalf("sync message: %d %s", code, b)
		}
	}
	out, errOut, err := importRun(t, "import", "claude-code", projects, "--server", ta.srv.URL, "--key", key, "--quiet", mode)
	if err != nil {
		t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "summary", out,
		"sessions: 1 imported, 1 updated, 0 unchanged, 1 skipped (nothing to import), 0 failed",
		"messages: 7 imported, 2 unchanged, 0 failed")
	s := ta.importedSessions(key)[sid]
	var ids []string
	for _, m := range s.Messages {
		ids = append(ids, m.ExternalID)
	}
	if got := strings.Join(ids, " "); got != sid+"-user-1741944413589 a-1 toolu_01A a-3 "+sid+"-user-sa-u "+sid+"-user-u-4 a-4" {
		t.Errorf("messages after import: %s", got)
	}
	if s.Title != "The checkout page redirects to /login in a loop after the session cookie..." || s.PromptTokens != 8277 {
		t.Errorf("session not updated from the transcript: %+v", s)
	}
}

func TestImportUsageAndFailures(t *testing.T) {
	t.Setenv("HINDSIGHT_API_KEY", "")
	for _, args := range [][]string{
		{"import"}, {"import", "vscode"}, {"import", "claude-code", "--key", "osk_x", "a", "b"},
		{"import", "claude-code", "somewhere"}, // no key
		{"import", "opencode", ".", "--key", "osk_x", "--server", "127.0.0.1:1"},
		{"import", "opencode", ".", "--key", "osk_x", "--concurrency", "0"},
	} {
		if _, _, err := importRun(t, args...); err == nil || exitCode(err) != 2 {
			t.Errorf("hindsight %q: err = %v, want a usage error", args, err)
		}
	}
	if _, _, err := importRun(t, "import", "--help"); err != nil {
		t.Errorf("import --help: %v", err)
	}

	ta := newTestApp(t, t.TempDir())
	key := ta.key("dave")
	empty := t.TempDir()
	if _, _, err := importRun(t, "import", "opencode", empty, "--server", ta.srv.URL, "--key", key); err == nil ||
		!strings.Contains(err.Error(), "no session directory") {
		t.Errorf("opencode import of an empty dir: %v", err)
	}
	if err := os.WriteFile(filepath.Join(empty, "opencode.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := importRun(t, "import", "opencode", empty, "--server", ta.srv.URL, "--key", key); err == nil ||
		!strings.Contains(err.Error(), "SQLite") {
		t.Errorf("opencode import next to opencode.db: %v", err)
	}
	projects := filepath.Join(importFixture(t, "claude-code"), "projects")
	_, _, err := importRun(t, "import", "claude-code", projects, "--server", ta.srv.URL, "--key", "osk_"+strings.Repeat("x", 32), "--quiet")
	if err == nil || !strings.Contains(err.Error(), "refused the API key") {
		t.Errorf("import with an unknown key: %v", err)
	}
	if n := len(ta.importedSessions(key)); n != 0 {
		t.Errorf("%d sessions stored by failed imports", n)
	}
}

// faulty wraps a handler with scripted faults on /sync/message: the server
// refuses any message whose body contains refuse (400), and answers the first
// flaky requests for a message containing retry with 503.
type faulty struct {
	next          http.Handler
	refuse, retry string
	flaky         int
	mu            sync.Mutex
	retried       int
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/sync/message" {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(f.refuse)) {
			http.Error(w, `{"error":"Bad Request","message":"this test refuses it"}`, http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		flaky := bytes.Contains(b, []byte(f.retry)) && f.retried < f.flaky
		if flaky {
			f.retried++
		}
		f.mu.Unlock()
		if flaky {
			http.Error(w, `{"error":"Service Unavailable"}`, http.StatusServiceUnavailable)
			return
		}
	}
	f.next.ServeHTTP(w, r)
}

// A refused message is reported and the rest of its session still imports;
// 5xx answers are retried; the next run sends only what is missing.
func TestImportRetriesAndReportsFailures(t *testing.T) {
	projects := filepath.Join(importFixture(t, "claude-code"), "projects")
	ta := newTestApp(t, t.TempDir())
	key := ta.key("erin")
	f := &faulty{next: ta.app.Handler(), refuse: `"externalId":"a-3"`, retry: `"externalId":"a-1"`, flaky: 2}
	flakySrv := httptest.NewServer(f)
	defer flakySrv.Close()

	out, errOut, err := importRun(t, "import", "claude-code", projects, "--server", flakySrv.URL, "--key", key, "--singles", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "1 sessions did not import completely") {
		t.Fatalf("import with a refused message: err = %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "summary", out,
		"(one request per message)",
		"sessions: 1 imported, 0 updated, 0 unchanged, 1 skipped (nothing to import), 1 failed",
		"messages: 8 imported, 0 unchanged, 1 failed",
		"failed (1):",
		"5f0c3a9e-1111-4222-8333-444455556666 (", "message a-3 refused: 400 Bad Request: this test refuses it")
	if f.retried != 2 {
		t.Errorf("%d 503s served, want 2 (retried)", f.retried)
	}
	s := ta.importedSessions(key)["5f0c3a9e-1111-4222-8333-444455556666"]
	if len(s.Messages) != 6 || s.Messages[1].ExternalID != "a-1" {
		t.Errorf("after the failed run: %d messages %v", len(s.Messages), s.Messages)
	}

	out, errOut, err = importRun(t, "import", "claude-code", projects, "--server", ta.srv.URL, "--key", key, "--quiet")
	if err != nil {
		t.Fatalf("second run: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "second run", out,
		"sessions: 0 imported, 1 updated, 1 unchanged", "messages: 1 imported, 8 unchanged, 0 failed")
	s = ta.importedSessions(key)["5f0c3a9e-1111-4222-8333-444455556666"]
	if len(s.Messages) != 7 || s.Messages[6].ExternalID != "a-3" || s.Messages[6].CreatedAt != isoMillis("2025-03-14T09:27:30.000Z") {
		t.Errorf("after the second run: %v", s.Messages)
	}
}

// appendLines appends lines to a file.
func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
}

// writeLines writes lines as a new file, creating its directory.
func writeLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A session file an assistant keeps appending to: each run uploads only the
// new messages, and a tool call stored before its result was written is
// sent again with it.
func TestImportIncremental(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	ta := newTestApp(t, t.TempDir())
	key := ta.key("ivy")
	const sid = "3c3c3c3c-0000-4000-8000-000000000001"
	cc := filepath.Join(home, ".claude", "projects", "-home-ivy-app", sid+".jsonl")
	writeLines(t, cc,
		`{"type":"user","uuid":"u1","sessionId":"`+sid+`","cwd":"/home/ivy/app","gitBranch":"main","timestamp":"2026-01-10T10:00:00.000Z","message":{"role":"user","content":"run the tests"}}`,
		`{"type":"assistant","uuid":"a1","sessionId":"`+sid+`","timestamp":"2026-01-10T10:00:05.000Z","message":{"model":"claude-sonnet-4-20250514","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./..."}}],"usage":{"input_tokens":10,"output_tokens":5}}}`)
	const rid = "019c0000-0000-7000-8000-000000000001"
	cx := filepath.Join(home, ".codex", "sessions", "2026", "01", "10", "rollout-2026-01-10T10-00-00-"+rid+".jsonl")
	writeLines(t, cx,
		`{"timestamp":"2026-01-10T11:00:00.000Z","type":"session_meta","payload":{"id":"`+rid+`","timestamp":"2026-01-10T11:00:00.000Z","cwd":"/home/ivy/api","cli_version":"0.118.0","git":{"branch":"feat/x"}}}`,
		`{"timestamp":"2026-01-10T11:00:01.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"add a health check"}]}}`,
		`{"timestamp":"2026-01-10T11:00:02.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Adding /health."}]}}`)

	args := []string{"import", "--server", ta.srv.URL, "--key", key, "--quiet"}
	out, errOut, err := importRun(t, args...)
	if err != nil {
		t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "first run", out, "sessions: 2 imported", "messages: 4 imported, 0 unchanged, 0 failed")

	appendLines(t, cc,
		`{"type":"user","uuid":"u2","sessionId":"`+sid+`","timestamp":"2026-01-10T10:00:09.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok  app 0.4s (gnuresult)"}]}}`,
		`{"type":"assistant","uuid":"a2","sessionId":"`+sid+`","timestamp":"2026-01-10T10:00:12.000Z","message":{"model":"claude-sonnet-4-20250514","content":[{"type":"text","text":"All tests pass."}],"usage":{"input_tokens":20,"output_tokens":6}}}`)
	appendLines(t, cx,
		`{"timestamp":"2026-01-10T11:00:03.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"make\"]}","call_id":"call_9"}}`,
		`{"timestamp":"2026-01-10T11:00:04.000Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_9","output":"built"}}`,
		`{"timestamp":"2026-01-10T11:00:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}}`)
	out, errOut, err = importRun(t, args...)
	if err != nil {
		t.Fatalf("second run: %v\n%s\n%s", err, out, errOut)
	}
	// Claude Code: the tool call again (now with its result) and the answer;
	// Codex: the call and the answer. The four stored messages stay as they are.
	importMustContain(t, "second run", out, "sessions: 0 imported, 2 updated, 0 unchanged", "messages: 4 imported, 3 unchanged, 0 failed")
	ss := ta.importedSessions(key)
	c := ss[sid]
	if len(c.Messages) != 3 || len(c.Messages[1].Parts) != 2 || c.Messages[1].Parts[1].Content != "ok  app 0.4s (gnuresult)" ||
		c.PromptTokens != 30 || c.Messages[2].CreatedAt != isoMillis("2026-01-10T10:00:12.000Z") {
		t.Errorf("claude code session after the append: %v", c)
	}
	x := ss[rid]
	if len(x.Messages) != 4 || x.Source != "codex-cli" || x.Messages[3].ExternalID != rid+"-L6" || x.ProjectPath != "/home/ivy/api" {
		t.Errorf("codex session after the append: %v", x)
	}
	var branches struct {
		Sessions []struct{ ExternalID, GitBranch string }
	}
	apiGet(t, ta.srv.URL, key, "/api/sessions", &branches)
	for _, s := range branches.Sessions {
		if want := map[string]string{sid: "main", rid: "feat/x"}[s.ExternalID]; s.GitBranch != want {
			t.Errorf("%s: gitBranch %q, want %q", s.ExternalID, s.GitBranch, want)
		}
	}
	out, _, err = importRun(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	importMustContain(t, "third run", out, "sessions: 0 imported, 0 updated, 2 unchanged", "messages: 0 imported, 7 unchanged, 0 failed")
}

// Without an agent, import finds each assistant's history at its default
// place under $HOME (or where its variable points), lists it, and
// --dry-run uploads nothing and needs no key.
func TestImportDiscovery(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("HINDSIGHT_API_KEY", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("XDG_DATA_HOME", "")
	codexHome := filepath.Join(t.TempDir(), "codex-elsewhere")
	t.Setenv("CODEX_HOME", codexHome)
	writeLines(t, filepath.Join(home, ".claude", "projects", "-p", "s1.jsonl"),
		`{"type":"user","uuid":"u","timestamp":"2026-01-01T00:00:00Z","message":{"content":"hello claude"}}`)
	writeLines(t, filepath.Join(codexHome, "sessions", "2026", "01", "01", "rollout-2026-01-01T00-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"),
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e"}}`,
		`{"timestamp":"2026-01-01T00:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hello codex"}]}}`)
	writeLines(t, filepath.Join(home, ".codex", "sessions", "rollout-2026-01-01T00-00-00-6973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl"),
		`{"timestamp":"2026-01-01T00:00:00Z","type":"session_meta","payload":{"id":"6973b6c0-94b8-487b-a530-2aeb6098ae0e"}}`) // not read: CODEX_HOME is set
	writeLines(t, filepath.Join(home, ".gemini", "tmp", "proj", "chats", "session-2026-01-01T00-00-aaaaaaaa.jsonl"),
		`{"sessionId":"aaaaaaaa-0000-4000-8000-000000000000","startTime":"2026-01-01T00:00:00Z"}`,
		`{"id":"m1","timestamp":"2026-01-01T00:00:01Z","type":"user","content":[{"text":"hello gemini"}]}`)
	writeLines(t, filepath.Join(home, ".qwen", "projects", "p", "chats", "q1.jsonl"),
		`{"uuid":"u","sessionId":"q1","timestamp":"2026-01-01T00:00:00Z","type":"user","message":{"role":"user","parts":[{"text":"hello qwen"}]}}`)
	opencode := filepath.Join(home, ".local", "share", "opencode")
	if err := os.MkdirAll(filepath.Dir(opencode), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(importFixture(t, "opencode"), opencode); err != nil {
		t.Fatal(err)
	}

	out, errOut, err := importRun(t, "import", "--dry-run")
	if err != nil {
		t.Fatalf("dry run: %v\n%s\n%s", err, out, errOut)
	}
	for _, row := range []string{
		"claude-code  1         " + filepath.Join(home, ".claude", "projects"),
		"codex        1         " + codexHome,
		"gemini       1         " + filepath.Join(home, ".gemini"),
		"qwen         1         " + filepath.Join(home, ".qwen"),
		"opencode     2         " + opencode,
		"Found 6 sessions of 5 assistants; not uploading (--dry-run)",
	} {
		importMustContain(t, "dry run", out, row)
	}
	if strings.Contains(out, "Done in") {
		t.Errorf("--dry-run uploaded:\n%s", out)
	}

	ta := newTestApp(t, t.TempDir())
	key := ta.key("jo")
	out, errOut, err = importRun(t, "import", "--server", ta.srv.URL, "--key", key)
	if err != nil {
		t.Fatalf("import: %v\n%s\n%s", err, out, errOut)
	}
	importMustContain(t, "import", out, "sessions: 6 imported, 0 updated, 0 unchanged, 0 skipped")
	importMustContain(t, "progress", errOut, "sessions: 100%")
	sources := map[string]int{}
	for _, s := range ta.importedSessions(key) {
		sources[s.Source]++
	}
	if asJSON(sources) != `{"claude-code":1,"codex-cli":1,"gemini-cli":1,"opencode":2,"qwen-code":1}` {
		t.Errorf("sources = %v", sources)
	}

	// Nothing found is said, not an error.
	t.Setenv("HOME", t.TempDir())
	t.Setenv("CODEX_HOME", "")
	out, _, err = importRun(t, "import", "--dry-run")
	if err != nil || !strings.Contains(out, "No assistant's history found") {
		t.Errorf("empty home: %v\n%s", err, out)
	}
	// One agent with nothing at its default place: a clear error.
	if _, _, err := importRun(t, "import", "qwen", "--dry-run"); err == nil || !strings.Contains(err.Error(), "no qwen history found") {
		t.Errorf("import qwen with no history: %v", err)
	}
}

// --help names every agent and where it looks on each system.
func TestImportHelp(t *testing.T) {
	_, errOut, err := importRun(t, "import", "--help")
	if err != nil {
		t.Fatal(err)
	}
	importMustContain(t, "help", errOut, "--dry-run", "~/.claude/projects (Linux, macOS)", `%USERPROFILE%\.codex (Windows)`,
		"$CODEX_HOME (when set)", "~/.gemini", "~/.qwen", "opencode")
	for _, a := range agentNames() {
		importMustContain(t, "help", errOut, "  "+a+" ")
	}
}
