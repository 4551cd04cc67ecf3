package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Contract tests: the payloads of the sync plugins that cannot be installed
// here, replayed byte for byte as their sources build them (plugins.md), and
// what Hindsight stores and makes searchable from them. Each plugin gets its
// own user. Words that must (or must not) be searchable are made up so a hit
// can only come from where the test put them.

// contractMessage is a stored message with its parts as the API returns them.
type contractMessage struct {
	ExternalID       string
	Role             string
	Parts            []json.RawMessage
	TextContent      *string
	Model            string
	PromptTokens     *int64
	CompletionTokens *int64
	DurationMs       *int64
	CreatedAt        int64
}

// contractSession returns the stored session with this external id (as a
// generic object) and its messages; it fails the test when there is none.
func contractSession(t *testing.T, ta *testApp, key, externalID string) (map[string]any, []contractMessage) {
	t.Helper()
	var list struct{ Sessions []map[string]any }
	apiGet(t, ta.srv.URL, key, "/api/sessions?limit=500", &list)
	for _, s := range list.Sessions {
		if s["externalId"] == externalID {
			var got struct {
				Session  map[string]any
				Messages []contractMessage
			}
			apiGet(t, ta.srv.URL, key, "/api/sessions/get?id="+s["id"].(string), &got)
			return got.Session, got.Messages
		}
	}
	t.Fatalf("no session %q stored", externalID)
	return nil, nil
}

// post sends body to path and returns the decoded JSON response; any status
// but 200 fails the test.
func (ta *testApp) post(key, path string, body any) map[string]any {
	ta.t.Helper()
	code, b := ta.do(http.MethodPost, key, path, body)
	if code != http.StatusOK {
		ta.t.Fatalf("POST %s: %d %s", path, code, b)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		ta.t.Fatalf("POST %s answered %s: %v", path, b, err)
	}
	return res
}

// searchable asserts which words full-text search finds in exactly one
// session and which it does not find at all.
func (ta *testApp) searchable(key string, found, notFound []string) {
	ta.t.Helper()
	ta.idle()
	for _, q := range found {
		if code, rs := ta.searchStatus(key, q, ""); code != http.StatusOK || len(rs) != 1 {
			ta.t.Errorf("search %q: %d, %d hits; want 1", q, code, len(rs))
		}
	}
	for _, q := range notFound {
		if code, rs := ta.searchStatus(key, q, ""); code != http.StatusOK || len(rs) != 0 {
			ta.t.Errorf("search %q: %d, %d hits; want none (not searchable)", q, code, len(rs))
		}
	}
}

func partsJSON(m contractMessage) string {
	b, _ := json.Marshal(m.Parts)
	return string(b)
}

// opencode-sync-plugin 0.3.6: no source (the server defaults to opencode),
// "Untitled Session" until session.idle brings the title, messages as
// textContent re-sent after the 800 ms debounce with the full text, and the
// CLI importer's textContent "" for a message without text.
func TestContractOpenCode(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("opencode-user")
	ta.post(key, "/sync/session", map[string]any{"externalId": "ses_oc1", "title": "Untitled Session",
		"projectPath": "/home/dev/api", "projectName": "api", "model": "claude-sonnet-4", "provider": "anthropic",
		"promptTokens": 0, "completionTokens": 0, "cost": 0})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "ses_oc1", "externalId": "msg_u1", "role": "user",
		"textContent": "add a gerbilcache to the session store"})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "ses_oc1", "externalId": "msg_a1", "role": "assistant",
		"textContent": "I'll add", "model": "claude-sonnet-4", "promptTokens": 1200, "completionTokens": 300, "durationMs": 8000})
	// The debounce fires again with the whole text: same id, replaced.
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "ses_oc1", "externalId": "msg_a1", "role": "assistant",
		"textContent": "I'll add an LRU in front of the store (lemurlru).", "model": "claude-sonnet-4", "promptTokens": 1200, "completionTokens": 300, "durationMs": 8000})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "ses_oc1", "externalId": "msg_a2", "role": "assistant", "textContent": ""})
	ta.post(key, "/sync/session", map[string]any{"externalId": "ses_oc1", "title": "Session store cache", "slug": "brave-otter",
		"projectPath": "/home/dev/api", "projectName": "api", "model": "claude-sonnet-4", "provider": "anthropic",
		"promptTokens": 1200, "completionTokens": 300, "cost": 0.0123})

	s, msgs := contractSession(t, ta, key, "ses_oc1")
	if s["source"] != "opencode" || s["title"] != "Session store cache" || s["provider"] != "anthropic" ||
		s["promptTokens"] != 1200.0 || s["totalTokens"] != 1500.0 || s["cost"] != 0.0123 || s["messageCount"] != 3.0 {
		t.Errorf("session = %v", s)
	}
	if len(msgs) != 3 || msgs[1].TextContent == nil || *msgs[1].TextContent != "I'll add an LRU in front of the store (lemurlru)." ||
		*msgs[1].DurationMs != 8000 || msgs[1].Model != "claude-sonnet-4" {
		t.Fatalf("messages = %+v", msgs)
	}
	ta.searchable(key, []string{"gerbilcache", "lemurlru", "Session store cache"}, []string{"brave-otter", "Untitled"})
}

// codex-sync (source codex-cli; shape from its docs, built like the Claude
// Code plugin's): tool calls as parts with the call inside content, args as
// an object, the result as a tool-result part.
func TestContractCodex(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("codex-user")
	ta.post(key, "/sync/session", map[string]any{"externalId": "codex-0198", "source": "codex-cli", "title": "Flaky test in the parser",
		"projectPath": "/home/dev/parser", "projectName": "parser", "model": "gpt-5-codex", "provider": "openai",
		"promptTokens": 5000, "completionTokens": 700, "cost": 0.02, "durationMs": 61000})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "codex-0198", "externalId": "codex-0198-user-1", "role": "user",
		"source": "codex-cli", "textContent": "the tokenizer test flakes under -race (narwhalflake)"})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "codex-0198", "externalId": "codex-0198-turn-1", "role": "assistant",
		"source": "codex-cli", "model": "gpt-5-codex", "parts": []any{
			map[string]any{"type": "text", "content": "The test shares a global buffer (ibexbuffer)."},
			map[string]any{"type": "tool-call", "content": map[string]any{"toolName": "shell", "args": map[string]any{"command": []any{"go", "test", "-race", "-run=slothargs", "./tokenizer/"}}}},
			map[string]any{"type": "tool-result", "content": "ok tokenizer 1.2s yakresult"},
		}})

	s, msgs := contractSession(t, ta, key, "codex-0198")
	if s["source"] != "codex-cli" || s["durationMs"] != 61000.0 || s["totalTokens"] != 5700.0 {
		t.Errorf("session = %v", s)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	want := `[{"type":"text","content":"The test shares a global buffer (ibexbuffer)."},{"type":"tool-call","toolName":"shell","args":"{\"command\":[\"go\",\"test\",\"-race\",\"-run=slothargs\",\"./tokenizer/\"]}"},{"type":"tool-result","content":"ok tokenizer 1.2s yakresult"}]`
	if got := partsJSON(msgs[1]); got != want {
		t.Errorf("parts stored as\n%s\nwant\n%s", got, want)
	}
	ta.searchable(key, []string{"narwhalflake", "ibexbuffer"}, []string{"yakresult", "slothargs"})
}

// The Cursor plugin (source cursor, stored as cursor-sync): flat tool-call
// parts with args as a JSON string, from its afterFileEdit and
// beforeShellExecution hooks.
func TestContractCursor(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("cursor-user")
	ta.post(key, "/sync/session", map[string]any{"externalId": "cur-77", "source": "cursor", "title": "Rename the config loader",
		"projectPath": "/home/dev/web", "model": "claude-4-sonnet", "promptTokens": 0, "completionTokens": 0, "cost": 0})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "cur-77", "externalId": "cur-77-p1", "role": "user",
		"source": "cursor", "textContent": "rename loadCfg to loadConfig everywhere (quetzalrename)"})
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "cur-77", "externalId": "cur-77-e1", "role": "assistant",
		"source": "cursor", "parts": []any{
			map[string]any{"type": "tool-call", "toolName": "edit_file", "args": `{"path":"src/capuchin.ts","edits":1}`},
			map[string]any{"type": "tool-call", "toolName": "shell", "args": `{"command":"npm test"}`},
		}})
	// A message whose session is unknown creates it, with the message's source.
	ta.post(key, "/sync/message", map[string]any{"sessionExternalId": "cur-78", "externalId": "cur-78-p1", "role": "user",
		"source": "cursor", "textContent": "second chat about tapirwidget"})

	s, msgs := contractSession(t, ta, key, "cur-77")
	if s["source"] != "cursor-sync" || len(msgs) != 2 {
		t.Fatalf("session = %v, %d messages", s, len(msgs))
	}
	want := `[{"type":"tool-call","toolName":"edit_file","args":"{\"path\":\"src/capuchin.ts\",\"edits\":1}"},{"type":"tool-call","toolName":"shell","args":"{\"command\":\"npm test\"}"}]`
	if got := partsJSON(msgs[1]); got != want {
		t.Errorf("parts stored as\n%s\nwant\n%s", got, want)
	}
	if s2, _ := contractSession(t, ta, key, "cur-78"); s2["source"] != "cursor-sync" {
		t.Errorf("session created by a message: %v", s2)
	}
	var list struct{ Sessions []map[string]any }
	apiGet(t, ta.srv.URL, key, "/api/sessions?source=cursor-sync", &list)
	if len(list.Sessions) != 2 {
		t.Errorf("?source=cursor-sync lists %d sessions, want 2", len(list.Sessions))
	}
	ta.searchable(key, []string{"quetzalrename", "tapirwidget"}, []string{"edit_file", "capuchin"})
}

// pi-opensync-plugin 0.2.0 (source pi): /sync/session with totalTokens and
// messageCount, then /sync/batch {sessions: [], messages: [...]} with
// createdAt on every message (ignored in batches: server time), text,
// tool-call (inside content), tool-result and thinking parts.
func TestContractPi(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("pi-user")
	before := time.Now().UnixMilli()
	old := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	ta.post(key, "/sync/session", map[string]any{"externalId": "pi-3f2a", "source": "pi", "projectPath": "/home/dev/pi",
		"projectName": "pi", "title": "[Fork::a1b2c3d4] Untitled", "model": "claude-opus-4-5", "provider": "anthropic",
		"promptTokens": 900, "completionTokens": 100, "totalTokens": 1000, "cost": 0.05, "messageCount": 2})
	res := ta.post(key, "/sync/batch", map[string]any{"sessions": []any{}, "messages": []any{
		map[string]any{"sessionExternalId": "pi-3f2a", "externalId": "pi-3f2a-u0", "role": "user",
			"textContent": "why is the jackalope build slow", "createdAt": old},
		map[string]any{"sessionExternalId": "pi-3f2a", "externalId": "pi-3f2a-a0", "role": "assistant",
			"textContent": "Caching is off (okapicache).", "model": "claude-opus-4-5", "createdAt": old + 1000,
			"promptTokens": 900, "completionTokens": 100,
			"parts": []any{
				map[string]any{"type": "text", "content": "Caching is off (okapicache)."},
				map[string]any{"type": "tool-call", "content": map[string]any{"toolName": "bash", "args": map[string]any{"command": "make wallabyargs"}}},
				map[string]any{"type": "tool-result", "content": "built in 3m (dingoresult)"},
				map[string]any{"type": "thinking", "content": "maybe the cache dir is wrong (koalathink)"},
			}},
		map[string]any{"sessionExternalId": "pi-3f2a", "externalId": "pi-3f2a-bad", "role": "bot", "textContent": "x"},
	}})
	if asJSON(res["messages"]) != `{"inserted":2,"updated":0}` || asJSON(res["sessions"]) != `{"inserted":0,"updated":0}` ||
		asJSON(res["errors"]) != `["messages[2] (externalId pi-3f2a-bad): role must be one of user, assistant, system, tool, unknown"]` {
		t.Errorf("batch response = %s", asJSON(res))
	}
	s, msgs := contractSession(t, ta, key, "pi-3f2a")
	if s["source"] != "pi" || s["totalTokens"] != 1000.0 || s["messageCount"] != 2.0 || s["title"] != "[Fork::a1b2c3d4] Untitled" {
		t.Errorf("session = %v", s)
	}
	if len(msgs) != 2 {
		t.Fatalf("%d messages", len(msgs))
	}
	for _, m := range msgs {
		if m.CreatedAt < before {
			t.Errorf("message %s kept the batch's createdAt %d: batches use server time", m.ExternalID, m.CreatedAt)
		}
	}
	want := `[{"type":"text","content":"Caching is off (okapicache)."},{"type":"tool-call","toolName":"bash","args":"{\"command\":\"make wallabyargs\"}"},{"type":"tool-result","content":"built in 3m (dingoresult)"},{"content":"maybe the cache dir is wrong (koalathink)","type":"thinking"}]`
	if got := partsJSON(msgs[1]); got != want {
		t.Errorf("parts stored as\n%s\nwant\n%s", got, want)
	}
	// Re-sent unchanged (pi re-syncs on resume): neither inserted nor updated.
	res = ta.post(key, "/sync/batch", map[string]any{"sessions": []any{}, "messages": []any{
		map[string]any{"sessionExternalId": "pi-3f2a", "externalId": "pi-3f2a-u0", "role": "user",
			"textContent": "why is the jackalope build slow", "createdAt": old},
	}})
	if asJSON(res["messages"]) != `{"inserted":0,"updated":0}` {
		t.Errorf("re-sent batch = %s", asJSON(res))
	}
	ta.searchable(key, []string{"jackalope", "okapicache"}, []string{"dingoresult", "koalathink", "wallabyargs"})
}

// droid-sync 0.1.0 (source factory-droid): /sync/session with extra fields,
// then one /sync/batch {sessions: [], messages: [all new]} on Stop, with
// system messages and "tool_use" parts holding toolName, args and result in
// content (stored as sent, not searchable).
func TestContractFactoryDroid(t *testing.T) {
	ta := newTestApp(t, t.TempDir())
	key := ta.key("droid-user")
	ta.post(key, "/sync/session", map[string]any{"externalId": "droid-9c1e", "source": "factory-droid", "projectPath": "/home/dev/infra",
		"projectName": "infra", "cwd": "/home/dev/infra", "gitBranch": "main", "permissionMode": "auto", "startedAt": 1767000000000,
		"promptTokens": 3000, "completionTokens": 400, "totalTokens": 3400, "messageCount": 3, "toolCallCount": 1, "durationMs": 45000})
	toolUse := map[string]any{"type": "tool_use", "content": map[string]any{"toolName": "Read", "args": map[string]any{"file_path": "pumafile.tf"},
		"result": "resource \"aws_s3_bucket\" \"vicunabucket\""}}
	res := ta.post(key, "/sync/batch", map[string]any{"sessions": []any{}, "messages": []any{
		map[string]any{"sessionExternalId": "droid-9c1e", "externalId": "droid-9c1e-0", "role": "system", "textContent": "You are Droid (ocelotsystem)", "createdAt": 1767000000000},
		map[string]any{"sessionExternalId": "droid-9c1e", "externalId": "droid-9c1e-1", "role": "user", "textContent": "tighten the bucket policy (margaypolicy)", "createdAt": 1767000001000},
		map[string]any{"sessionExternalId": "droid-9c1e", "externalId": "droid-9c1e-2", "role": "assistant", "parts": []any{toolUse}, "createdAt": 1767000002000},
		map[string]any{"sessionExternalId": "droid-9c1e", "externalId": "droid-9c1e-3", "role": "assistant", "textContent": "Done: public access is blocked (servalblock).", "promptTokens": 3000, "completionTokens": 400, "createdAt": 1767000044000},
	}})
	if asJSON(res["messages"]) != `{"inserted":4,"updated":0}` || asJSON(res["errors"]) != `[]` {
		t.Errorf("batch response = %s", asJSON(res))
	}
	s, msgs := contractSession(t, ta, key, "droid-9c1e")
	if s["source"] != "factory-droid" || s["totalTokens"] != 3400.0 || s["messageCount"] != 4.0 || s["durationMs"] != 45000.0 {
		t.Errorf("session = %v", s)
	}
	if len(msgs) != 4 || msgs[0].Role != "system" {
		t.Fatalf("messages = %+v", msgs)
	}
	if got, want := partsJSON(msgs[2]), asJSON([]any{toolUse}); got != want {
		t.Errorf("tool_use part stored as\n%s\nwant it as sent\n%s", got, want)
	}
	ta.searchable(key, []string{"margaypolicy", "servalblock"}, []string{"ocelotsystem", "vicunabucket", "pumafile"})
	if !strings.Contains(asJSON(s), `"projectName":"infra"`) {
		t.Errorf("session = %v", s)
	}
}
