package importer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestImportReadPi(t *testing.T) {
	home := t.TempDir()
	dir := ".pi/agent/sessions/--home-dev-shop--/"
	writeFiles(t, home, map[string]string{
		dir + "2026-02-20T20-17-15-095Z_7c1d.jsonl": strings.Join([]string{
			`{"type":"session","version":3,"id":"7c1d","timestamp":"2026-02-20T20:17:15.095Z","cwd":"/home/dev/shop"}`,
			`{"type":"model_change","id":"a0","parentId":null,"timestamp":"2026-02-20T20:17:16.000Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}`,
			`{"type":"message","id":"a1","parentId":"a0","timestamp":"2026-02-20T20:17:20.000Z","message":{"role":"user","content":"why is checkout slow?","timestamp":1771618640000}}`,
			`{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-02-20T20:17:25.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Profile first."},{"type":"text","text":"Let me look."},{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"grep -r sleep src"}},{"type":"toolCall","id":"call_2","name":"read","arguments":{"path":"src/cart.ts"}}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1000,"output":50,"cacheRead":0,"cacheWrite":0,"totalTokens":1050,"cost":{"input":0.003,"output":0.00075,"cacheRead":0,"cacheWrite":0,"total":0.00375}},"stopReason":"toolUse","timestamp":1771618645000}}`,
			`{"type":"message","id":"a3","parentId":"a2","timestamp":"2026-02-20T20:17:26.000Z","message":{"role":"toolResult","toolCallId":"call_1","toolName":"bash","content":[{"type":"text","text":"src/cart.ts: await sleep(2000)"}],"isError":false,"timestamp":1771618646000}}`,
			`{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-02-20T20:17:27.000Z","message":{"role":"toolResult","toolCallId":"call_2","toolName":"read","content":[{"type":"text","text":"no such file"}],"isError":true,"timestamp":1771618647000}}`,
			`{"type":"message","id":"a5","parentId":"a4","timestamp":"2026-02-20T20:17:30.000Z","message":{"role":"assistant","content":[{"type":"text","text":"A sleep(2000) in the cart."}],"provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1200,"output":20,"cost":{"total":0.004}},"timestamp":1771618650000}}`,
			`{"type":"message","id":"a6","parentId":"a5","timestamp":"2026-02-20T20:18:00.000Z","message":{"role":"bashExecution","command":"npm test","output":"1 failing","exitCode":1,"cancelled":false,"truncated":false,"timestamp":1771618680000}}`,
			`{"type":"custom_message","id":"a7","parentId":"a6","timestamp":"2026-02-20T20:18:01.000Z","customType":"ext","content":"injected","display":false}`,
			`{"type":"session_info","id":"a8","parentId":"a7","timestamp":"2026-02-20T20:18:02.000Z","name":"Checkout latency"}`,
			`{"type":"message","id":"b1","parentId":"a1","timestamp":"2026-02-20T20:19:00.000Z","message":{"role":"user","content":[{"type":"text","text":"try another branch"}],"timestamp":1771618740000}}`,
			`{"type":"message","id":`,
		}, "\n") + "\n",
		// Version 1: a linear list without ids.
		dir + "2025-12-01T10-00-00-000Z_v1s.jsonl": `{"type":"session","id":"v1s","timestamp":"2025-12-01T10:00:00.000Z","cwd":"/home/dev/shop"}
{"type":"message","timestamp":"2025-12-01T10:00:01.000Z","message":{"role":"user","content":"hello","timestamp":1764583201000}}
{"type":"message","timestamp":"2025-12-01T10:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"provider":"openai","model":"gpt-5","usage":{"input":10,"output":2,"cost":{"total":0.0001}},"timestamp":1764583202000}}
`,
		dir + "subagent-artifacts/x_worker.jsonl": `{"type":"session","id":"w"}`,
	})
	readTwice(t, Pi, filepath.Join(home, ".pi", "agent"))
	items, err := Pi(filepath.Join(home, ".pi", "agent"), ReadOptions{})
	if err != nil || len(items) != 2 {
		t.Fatalf("Pi: %v, %d items", err, len(items))
	}
	old, _, err := items[0].Read()
	if err != nil || old.ExternalID != "v1s" || old.Model != "gpt-5" || old.Provider != "openai" || len(old.Messages) != 2 ||
		old.Messages[1].ExternalID != "v1s-assistant-2" {
		t.Errorf("version 1 session = %+v %v", old, err)
	}
	s, probs, err := items[1].Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].Line != 12 {
		t.Errorf("problems = %v", probs)
	}
	if s.ExternalID != "7c1d" || s.Source != "pi" || s.Title != "Checkout latency" || s.ProjectPath != "/home/dev/shop" || s.ProjectName != "shop" ||
		s.Model != "claude-sonnet-4-5" || s.Provider != "anthropic" || s.PromptTokens != 2200 || s.CompletionTokens != 70 || s.Cost != 0.00775 ||
		!s.CreatedAt.Equal(time.Date(2026, 2, 20, 20, 17, 15, 95e6, time.UTC)) || s.DurationMs != 104905 {
		t.Errorf("session = %+v", s)
	}
	var ids []string
	for _, m := range s.Messages {
		ids = append(ids, m.ExternalID)
	}
	// The plugin's ids: user and assistant messages counted from 1; tool results inside their call's message.
	if strings.Join(ids, " ") != "7c1d-user-1 7c1d-assistant-2 7c1d-assistant-3 7c1d-bash-a6 7c1d-user-4" {
		t.Errorf("ids = %v", ids)
	}
	parts, _ := json.Marshal(s.Messages[1].Parts)
	want := `[{"type":"thinking","text":"Profile first."},{"type":"text","content":"Let me look."},{"type":"tool-call","toolName":"bash","args":{"command":"grep -r sleep src"}},{"type":"tool-result","content":"src/cart.ts: await sleep(2000)","toolName":"bash"},{"type":"tool-call","toolName":"read","args":{"path":"src/cart.ts"}},{"type":"tool-result","content":"Error: no such file","toolName":"read"}]`
	if string(parts) != want {
		t.Errorf("assistant parts\n%s\nwant\n%s", parts, want)
	}
	if m := s.Messages[1]; *m.PromptTokens != 1000 || *m.CompletionTokens != 50 || m.Model != "claude-sonnet-4-5" || !m.CreatedAt.Equal(time.UnixMilli(1771618645000)) {
		t.Errorf("assistant message = %+v", m)
	}
	if bash := s.Messages[3]; bash.Role != "tool" || bash.Parts[1].Content != "1 failing\n[exit code 1]" {
		t.Errorf("bash execution = %+v", bash)
	}
}
