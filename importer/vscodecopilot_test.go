package importer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestImportReadVSCodeCopilot(t *testing.T) {
	home := t.TempDir()
	user := ".config/Code/User/"
	request := func(id, prompt string, at int64, response ...any) map[string]any {
		return map[string]any{"requestId": id, "timestamp": at, "modelId": "copilot/gpt-4.1", "message": map[string]any{"text": prompt, "parts": []any{}}, "response": response}
	}
	running := map[string]any{"kind": "toolInvocationSerialized", "toolId": "copilot_runInTerminal", "toolCallId": "g-1", "invocationMessage": map[string]any{"value": "Running `go test`"},
		"isComplete": false, "toolSpecificData": map[string]any{"kind": "terminal", "command": "go test ./..."}}
	done := map[string]any{"kind": "toolInvocationSerialized", "toolId": "copilot_runInTerminal", "toolCallId": "g-1", "pastTenseMessage": map[string]any{"value": "Ran `go test`"},
		"isComplete": true, "toolSpecificData": map[string]any{"kind": "terminal", "command": "go test ./..."}, "resultDetails": map[string]any{"output": []any{map[string]any{"value": "ok  \tshop\t0.2s"}}}}
	doc := map[string]any{
		"version": 3, "sessionId": "s-json", "creationDate": int64(1750000000000), "lastMessageDate": int64(1750000060000), "customTitle": "Run the tests",
		"requests": []any{request("r1", "run the tests", 1750000001000,
			map[string]any{"value": "Running them in "}, map[string]any{"kind": "inlineReference", "inlineReference": map[string]any{"fsPath": "/home/dev/shop/main_test.go"}},
			map[string]any{"value": "."}, running, map[string]any{"kind": "undoStop"}, done, map[string]any{"value": "All pass."})},
	}
	doc["requests"].([]any)[0].(map[string]any)["result"] = map[string]any{"timings": map[string]any{"totalElapsed": 4200},
		"metadata": map[string]any{"promptTokens": 9000, "outputTokens": 120, "resolvedModel": "gpt-4.1-2025-04-14"}}
	b, _ := json.Marshal(doc)
	snap, _ := json.Marshal(map[string]any{"kind": 0, "v": map[string]any{"version": 3, "sessionId": "s-jsonl", "creationDate": int64(1760000000000),
		"requests": []any{request("q1", "explain main", 1760000001000)}}})
	patchResp, _ := json.Marshal(map[string]any{"kind": 1, "k": []any{"requests", 0, "response"}, "v": []any{map[string]any{"value": "It starts the server."}}})
	appendReq, _ := json.Marshal(map[string]any{"kind": 2, "k": []any{"requests"}, "v": []any{request("q2", "and then?", 1760000050000, map[string]any{"value": "It waits."})}})
	badPath, _ := json.Marshal(map[string]any{"kind": 1, "k": []any{"requests", 7, "response"}, "v": []any{}})
	title, _ := json.Marshal(map[string]any{"kind": 1, "k": []any{"customTitle"}, "v": "Main explained"})
	writeFiles(t, home, map[string]string{
		user + "workspaceStorage/ab12/workspace.json":             `{"folder":"file:///home/dev/shop"}`,
		user + "workspaceStorage/ab12/chatSessions/s-json.json":   string(b),
		user + "workspaceStorage/cd34/workspace.json":             `{"folder":"file:///home/dev/api"}`,
		user + "workspaceStorage/cd34/chatSessions/s-jsonl.jsonl": strings.Join([]string{string(snap), string(patchResp), "{oops", string(appendReq), string(badPath), string(title)}, "\n"),
		// The older copy of a session also saved as JSONL is not read twice.
		user + "workspaceStorage/cd34/chatSessions/s-jsonl.json":           string(b),
		user + "globalStorage/emptyWindowChatSessions/s-empty-window.json": `{"sessionId":"s-empty-window","creationDate":1,"requests":[{"requestId":"e1","message":{"text":"hi"},"response":[{"value":"hello"}]}]}`,
		user + "workspaceStorage/ef56/chatSessions/bad.json":               `{"requests":`,
	})
	readTwice(t, VSCodeCopilot, filepath.Join(home, ".config", "Code"))
	items, err := VSCodeCopilot(filepath.Join(home, ".config", "Code"), ReadOptions{})
	if err != nil || len(items) != 4 {
		t.Fatalf("VSCodeCopilot: %v, %d items", err, len(items))
	}
	got := map[string]Session{}
	for _, it := range items {
		s, probs, err := it.Read()
		if strings.HasSuffix(it.Path, "bad.json") {
			if err == nil || !strings.Contains(err.Error(), "not a chat session") {
				t.Errorf("malformed session: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if s.ExternalID == "s-jsonl" && (len(probs) != 2 || probs[0].Line != 3 || probs[1].Line != 5 || !strings.Contains(probs[1].Err, "not an index")) {
			t.Errorf("JSONL problems = %v", probs)
		}
		got[s.ExternalID] = s
	}
	s := got["s-json"]
	if s.Source != "vscode-copilot" || s.Title != "Run the tests" || s.ProjectPath != "/home/dev/shop" || s.Model != "gpt-4.1-2025-04-14" ||
		s.PromptTokens != 9000 || s.CompletionTokens != 120 || s.DurationMs != 60000 || !s.CreatedAt.Equal(time.UnixMilli(1750000000000)) || len(s.Messages) != 2 {
		t.Errorf("s-json = %+v", s)
	}
	parts, _ := json.Marshal(s.Messages[1].Parts)
	want := `[{"type":"text","content":"Running them in ` + "`main_test.go`" + `."},{"type":"tool-call","toolName":"copilot_runInTerminal","args":{"command":"go test ./..."}},{"type":"tool-result","content":"ok  \tshop\t0.2s","toolName":"copilot_runInTerminal"},{"type":"text","content":"All pass."}]`
	if string(parts) != want {
		t.Errorf("response parts\n%s\nwant\n%s", parts, want)
	}
	if m := s.Messages[1]; m.ExternalID != "r1-response" || *m.DurationMs != 4200 || s.Messages[0].ExternalID != "r1-prompt" {
		t.Errorf("s-json messages = %+v", s.Messages)
	}
	j := got["s-jsonl"]
	var texts []string
	for _, m := range j.Messages {
		texts = append(texts, m.Role+":"+m.Text())
	}
	if j.Title != "Main explained" || j.ProjectPath != "/home/dev/api" || strings.Join(texts, "|") != "user:explain main|assistant:It starts the server.|user:and then?|assistant:It waits." {
		t.Errorf("s-jsonl = %q %v", j.Title, texts)
	}
	if e := got["s-empty-window"]; e.ProjectPath != "" || len(e.Messages) != 2 {
		t.Errorf("empty window session = %+v", e)
	}
}
