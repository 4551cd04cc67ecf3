package importer

import (
	"path/filepath"
	"strings"
	"testing"
)

// Qwen Code 0.14: Claude-Code-like records around Gemini-shaped parts; system
// records (telemetry, slash commands) are not messages; a tool result is a
// tool message; a Windows cwd names the project.
func TestImportQwen(t *testing.T) {
	home := t.TempDir()
	const sid = "1ee2dcce-94ce-47a3-bf6f-d804490ef247"
	rec := func(uuid, typ, ts, rest string) string {
		return `{"uuid":"` + uuid + `","parentUuid":null,"sessionId":"` + sid + `","timestamp":"` + ts + `","type":"` + typ +
			`","cwd":"C:\\Users\\linhl\\Documents\\master","version":"0.14.0","gitBranch":"hai-add-overview-test"` + rest + `}`
	}
	writeFile(t, home, ".qwen/projects/c--users-linhl-documents-master/chats/"+sid+".jsonl", strings.Join([]string{
		rec("s0", "system", "2026-04-07T03:45:59.538Z", `,"subtype":"slash_command","systemPayload":{"phase":"invocation","rawCommand":"/mcp"}`),
		rec("u1", "user", "2026-04-07T03:46:37.739Z", `,"message":{"role":"user","parts":[{"text":"analyse CHR-48347"}]}`),
		rec("t0", "system", "2026-04-07T03:46:42.159Z", `,"subtype":"ui_telemetry","systemPayload":{"uiEvent":{"event.name":"qwen-code.api_response","input_token_count":30751}}`),
		rec("a1", "assistant", "2026-04-07T03:46:42.240Z", `,"model":"coder-model","message":{"role":"model","parts":[{"text":"I need the issue","thought":true},{"text":"Fetching it."},{"functionCall":{"id":"call_1","name":"getJiraIssue","args":{"key":"CHR-48347"}}}]},"usageMetadata":{"promptTokenCount":30751,"candidatesTokenCount":74,"thoughtsTokenCount":24,"totalTokenCount":30825}`),
		rec("r1", "tool_result", "2026-04-07T03:46:43.633Z", `,"message":{"role":"user","parts":[{"functionResponse":{"id":"call_1","name":"getJiraIssue","response":{"output":"{\"key\":\"CHR-48347\"}"}}}]},"toolCallResult":{"callId":"call_1","status":"success","resultDisplay":"shown"}`),
		`not json at all`,
		rec("a2", "assistant", "2026-04-07T03:47:02.867Z", `,"model":"coder-model","message":{"role":"model","parts":[{"text":"## Analysis"}]},"usageMetadata":{"promptTokenCount":38842,"candidatesTokenCount":661,"thoughtsTokenCount":32}`),
	}, "\n")+"\n")
	items, err := Qwen(filepath.Join(home, ".qwen"), ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	s, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	want := `u1 user 03:46:37 [text]
a1 assistant 03:46:42 [thinking,text,tool-call] 30751/98
r1 tool 03:46:43 [tool-result]
a2 assistant 03:47:02 [text] 38842/693
`
	if got := describe(s); got != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
	if got := problems(probs); got != sid+".jsonl:6: skipped: not a session line: invalid character 'o' in literal null (expecting 'u') (byte 2)" {
		t.Errorf("problems: %s", got)
	}
	if got := fmtSession(s); got != sid+`|qwen-code|analyse CHR-48347|C:\Users\linhl\Documents\master|master|hai-add-overview-test|coder-model||69593|791|2026-04-07T03:45:59.538Z|63329` {
		t.Errorf("session: %s", got)
	}
	if r := s.Messages[2].Parts[0]; r.ToolName != "getJiraIssue" || r.Content != `{"key":"CHR-48347"}` {
		t.Errorf("tool result = %+v", r)
	}
}
