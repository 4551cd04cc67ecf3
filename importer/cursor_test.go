package importer

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cursorSchema is state.vscdb's: two key-value tables.
var cursorSchema = []string{
	"CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
	"CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)",
}

func kvRow(t *testing.T, table, key string, value any) string {
	t.Helper()
	v, ok := value.(string)
	if !ok {
		v = strings.Trim(sqlJSON(t, value), "'")
		v = strings.ReplaceAll(v, "''", "'")
	}
	return "INSERT INTO " + table + " VALUES (" + sqlString(key) + ", " + sqlString(v) + ")"
}

// cursorFixture writes a Cursor user directory under home (the Linux place)
// with every shape of conversation the reader knows, and returns the User
// directory.
func cursorFixture(t *testing.T, home string) string {
	t.Helper()
	user := filepath.Join(home, ".config", "Cursor", "User")
	at := time.Date(2025, 12, 26, 10, 0, 0, 0, time.UTC).UnixMilli()
	global := append([]string{}, cursorSchema...)
	global = append(global,
		// The login Cursor keeps beside the chats: never imported.
		kvRow(t, "ItemTable", "cursorAuth/accessToken", "eyJ-secret-jwt"),
		// Split storage (_v 10): headers give the order, bubbles are rows.
		kvRow(t, "cursorDiskKV", "composerData:c-split", map[string]any{
			"_v": 10, "composerId": "c-split", "name": "Fix login", "createdAt": at, "lastUpdatedAt": at + 90_000,
			"modelConfig": map[string]any{"modelName": "claude-4.5-sonnet", "maxMode": false}, "createdOnBranch": "main",
			"fullConversationHeadersOnly": []map[string]any{{"bubbleId": "b1", "type": 1}, {"bubbleId": "b2", "type": 2},
				{"bubbleId": "a3", "type": 2}, {"bubbleId": "b-missing", "type": 2}, {"bubbleId": "b4", "type": 2}},
		}),
		kvRow(t, "cursorDiskKV", "bubbleId:c-split:b1", map[string]any{"_v": 3, "type": 1, "bubbleId": "b1", "text": "why does login fail?", "createdAt": "2025-12-26T10:00:05.000Z"}),
		kvRow(t, "cursorDiskKV", "bubbleId:c-split:b2", map[string]any{"_v": 3, "type": 2, "bubbleId": "b2", "text": "The cookie is not secure.",
			"thinking": map[string]any{"text": "Check the cookie flags."}, "tokenCount": map[string]any{"inputTokens": 1200, "outputTokens": 80},
			"modelInfo": map[string]any{"modelName": "claude-4.5-sonnet"}, "createdAt": "2025-12-26T10:00:20.000Z"}),
		kvRow(t, "cursorDiskKV", "bubbleId:c-split:a3", map[string]any{"_v": 3, "type": 2, "bubbleId": "a3", "text": "", "capabilityType": 15,
			"toolFormerData": map[string]any{"tool": 15, "name": "run_terminal_cmd", "rawArgs": `{"command":"npm test"}`, "result": `{"output":"1 failing"}`, "status": "completed"},
			"timingInfo":     map[string]any{"clientStartTime": 4745281.3, "clientRpcSendTime": float64(at + 30_000), "clientEndTime": float64(at + 31_000)}}),
		kvRow(t, "cursorDiskKV", "bubbleId:c-split:b4", `{"type":2,"text":`),
		kvRow(t, "cursorDiskKV", "bubbleId:c-other:b1", map[string]any{"type": 1, "text": "another composer's"}),
		// Opened and closed without a message.
		kvRow(t, "cursorDiskKV", "composerData:c-empty", map[string]any{"_v": 10, "composerId": "c-empty", "fullConversationHeadersOnly": []any{}, "conversationMap": map[string]any{}}),
		// Format 2: bubbles in conversationMap, tool data in a capability's bubbleDataMap (a JSON string).
		kvRow(t, "cursorDiskKV", "composerData:c-map", map[string]any{
			"_v": 2, "composerId": "c-map", "createdAt": at, "fullConversationHeadersOnly": []map[string]any{{"bubbleId": "x1"}, {"bubbleId": "x2"}},
			"conversationMap": map[string]any{"x2": map[string]any{"type": 2, "bubbleId": "x2", "text": "Reading it."}, "x1": map[string]any{"type": 1, "bubbleId": "x1", "text": "read main.go"}},
			"capabilities":    []map[string]any{{"type": 15, "data": map[string]any{"bubbleDataMap": `{"x2":{"tool":5,"name":"read_file","params":"{\"path\":\"main.go\"}","result":"package main","status":"completed"}}`}}},
		}),
		// Format 1: bubbles inline in conversation[]; Cursor 3.12 names the project itself.
		kvRow(t, "cursorDiskKV", "composerData:c-inline", map[string]any{
			"_v": 1, "composerId": "c-inline", "createdAt": at, "workspaceIdentifier": map[string]any{"id": "abc", "uri": map[string]any{"fsPath": "/home/dev/inline"}},
			"conversation": []map[string]any{{"type": 1, "bubbleId": "i1", "text": "hello"}, {"type": 2, "bubbleId": "i2", "text": "hi", "toolFormerData": map[string]any{"name": "edit_file", "rawArgs": "not json", "status": "error", "error": "file is read-only"}}},
		}),
		kvRow(t, "cursorDiskKV", "composerData:c-bad", `{"composerId":"c-bad","fullConversationHeadersOnly":[`),
		// The oldest chat, in ItemTable.
		kvRow(t, "ItemTable", cursorChatKey, map[string]any{"tabs": []map[string]any{
			{"tabId": "tab-1", "chatTitle": "Regex help", "lastSendTime": at, "bubbles": []map[string]any{
				{"type": "user", "id": "u1", "text": "", "delegate": map[string]any{"a": "a regex for dates"}},
				{"type": "ai", "id": "a1", "rawText": "\\d{4}-\\d{2}-\\d{2}", "modelType": "gpt-4"}}},
			{"tabId": "tab-empty", "bubbles": []any{}},
		}}),
	)
	execSQLite(t, filepath.Join(user, "globalStorage", "state.vscdb"), "WAL", global...)

	ws := filepath.Join(user, "workspaceStorage")
	writeFiles(t, ws, map[string]string{
		"h1/workspace.json": `{"folder":"file:///home/dev/shop"}`,
		"h2/workspace.json": `{"folder":"file:///c%3A/Users/dev/app"}`,
	})
	execSQLite(t, filepath.Join(ws, "h1", "state.vscdb"), "DELETE", append(append([]string{}, cursorSchema...),
		kvRow(t, "ItemTable", cursorComposerKey, map[string]any{"allComposers": []map[string]any{
			{"composerId": "c-split"},
			// The oldest composers: conversation inline in the workspace's list.
			{"composerId": "c-old", "createdAt": at, "conversation": []map[string]any{{"type": 1, "bubbleId": "o1", "text": "old question"}}},
		}}))...)
	execSQLite(t, filepath.Join(ws, "h2", "state.vscdb"), "DELETE", append(append([]string{}, cursorSchema...),
		kvRow(t, "ItemTable", cursorChatKey, map[string]any{"tabs": []map[string]any{
			{"tabId": "tab-2", "bubbles": []map[string]any{{"type": "user", "text": "windows question"}}}}}))...)
	return user
}

func TestImportReadCursor(t *testing.T) {
	home := t.TempDir()
	user := cursorFixture(t, home)
	for _, root := range []string{filepath.Dir(user), filepath.Join(user, "globalStorage", "state.vscdb")} {
		if _, err := Cursor(root, ReadOptions{}); err != nil {
			t.Errorf("Cursor(%s): %v", root, err)
		}
	}
	readTwice(t, Cursor, user)
	items, err := Cursor(user, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Session{}
	var order []string
	for _, it := range items {
		s, probs, err := it.Read()
		if err != nil {
			order = append(order, "error:"+err.Error())
			continue
		}
		got[s.ExternalID] = s
		order = append(order, s.ExternalID)
		if s.ExternalID == "c-split" && (len(probs) != 2 || !strings.Contains(probs[0].Err, "bubble b-missing is listed but not stored") ||
			!strings.Contains(probs[1].Err, "bubble b4: skipped: unexpected end of JSON input")) {
			t.Errorf("c-split problems = %v", probs)
		}
		b, _ := json.Marshal(s)
		if strings.Contains(string(b), "secret-jwt") || strings.Contains(string(b), "another composer") {
			t.Errorf("%s holds what is not its own", s.ExternalID)
		}
	}
	want := "error:composer c-bad: unexpected end of JSON input (byte 53),c-inline,c-map,c-split,c-old,tab-1,tab-2"
	if strings.Join(order, ",") != want {
		t.Fatalf("sessions = %v\nwant %s", order, want)
	}

	s := got["c-split"]
	at := time.Date(2025, 12, 26, 10, 0, 0, 0, time.UTC)
	if s.Source != "cursor-sync" || s.Title != "Fix login" || s.Model != "claude-4.5-sonnet" || s.ProjectPath != "/home/dev/shop" || s.ProjectName != "shop" ||
		s.GitBranch != "main" || !s.CreatedAt.Equal(at) || s.DurationMs != 90_000 || s.PromptTokens != 1200 || s.CompletionTokens != 80 {
		t.Errorf("c-split = %+v", s)
	}
	parts, _ := json.Marshal([][]Part{s.Messages[0].Parts, s.Messages[1].Parts, s.Messages[2].Parts})
	wantParts := `[[{"type":"text","content":"why does login fail?"}],[{"type":"thinking","text":"Check the cookie flags."},{"type":"text","content":"The cookie is not secure."}],[{"type":"tool-call","toolName":"run_terminal_cmd","args":{"command":"npm test"}},{"type":"tool-result","content":"{\"output\":\"1 failing\"}","toolName":"run_terminal_cmd"}]]`
	if len(s.Messages) != 3 || string(parts) != wantParts {
		t.Errorf("c-split messages = %s\n%s", summary(s), parts)
	}
	if m := s.Messages; m[0].ExternalID != "b1" || m[2].ExternalID != "a3" || !m[0].CreatedAt.Equal(at.Add(5*time.Second)) ||
		!m[2].CreatedAt.Equal(at.Add(30*time.Second)) || *m[1].PromptTokens != 1200 || m[1].Model != "claude-4.5-sonnet" {
		t.Errorf("c-split message details = %+v", m)
	}

	mp := got["c-map"]
	if len(mp.Messages) != 2 || mp.Messages[0].Text() != "read main.go" || mp.Title != "read main.go" ||
		mp.Messages[1].Parts[1].ToolName != "read_file" || string(mp.Messages[1].Parts[1].Args) != `{"path":"main.go"}` || mp.Messages[1].Parts[2].Content != "package main" {
		t.Errorf("c-map = %s %+v", summary(mp), mp.Messages)
	}
	in := got["c-inline"]
	if in.ProjectPath != "/home/dev/inline" || len(in.Messages) != 2 || in.Messages[1].Parts[2].Content != "Error: file is read-only" ||
		string(in.Messages[1].Parts[1].Args) != `{"input":"not json"}` {
		t.Errorf("c-inline = %+v", in.Messages)
	}
	if old := got["c-old"]; old.ProjectPath != "/home/dev/shop" || len(old.Messages) != 1 || old.Messages[0].Text() != "old question" {
		t.Errorf("c-old = %+v", old)
	}
	tab := got["tab-1"]
	if tab.Title != "Regex help" || tab.ProjectPath != "" || len(tab.Messages) != 2 || tab.Messages[0].Text() != "a regex for dates" ||
		tab.Messages[1].Model != "gpt-4" || tab.Messages[1].Text() != `\d{4}-\d{2}-\d{2}` || !tab.CreatedAt.Equal(at) {
		t.Errorf("tab-1 = %+v", tab)
	}
	if w := got["tab-2"]; w.ProjectPath != `C:\Users\dev\app` || w.ProjectName == "" || len(w.Messages) != 1 {
		t.Errorf("tab-2 = %+v", w)
	}
}

// Cursor holds its global database open in WAL mode: a bubble committed only
// to the WAL, while Cursor holds another transaction open, is read; the
// uncommitted one is not; neither file is written.
func TestImportCursorWhileCursorWrites(t *testing.T) {
	home := t.TempDir()
	user := cursorFixture(t, home)
	db := filepath.Join(user, "globalStorage", "state.vscdb")
	composer := func(headers ...string) string {
		var hs []map[string]any
		for _, h := range headers {
			hs = append(hs, map[string]any{"bubbleId": h})
		}
		return kvRow(t, "cursorDiskKV", "composerData:c-live", map[string]any{"_v": 10, "composerId": "c-live", "fullConversationHeadersOnly": hs})
	}
	commit := strings.Join([]string{composer("l1", "l2"),
		kvRow(t, "cursorDiskKV", "bubbleId:c-live:l1", map[string]any{"type": 1, "text": "committed question"}),
		kvRow(t, "cursorDiskKV", "bubbleId:c-live:l2", map[string]any{"type": 2, "text": "committed answer"})}, ";\n")
	pending := strings.Join([]string{composer("l1", "l2", "l3"),
		kvRow(t, "cursorDiskKV", "bubbleId:c-live:l3", map[string]any{"type": 1, "text": "still typing"})}, ";\n")
	startWriter(t, db, "WAL", commit, "IMMEDIATE", pending)
	before := fileSums(t, db, db+"-wal")
	items, err := Cursor(user, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, it := range items {
		s, _, err := it.Read()
		if err != nil || s.ExternalID != "c-live" {
			continue
		}
		found = true
		if len(s.Messages) != 2 || s.Messages[1].Text() != "committed answer" {
			t.Errorf("c-live = %s", summary(s))
		}
	}
	if !found {
		t.Error("the composer committed to the WAL was not found")
	}
	after := fileSums(t, db, db+"-wal")
	for p := range before {
		if before[p] != after[p] {
			t.Errorf("%s was written", p)
		}
	}
}

func TestImportCursorURIs(t *testing.T) {
	for uri, want := range map[string]string{
		"file:///home/u/p%20q":                       "/home/u/p q",
		"file:///c%3A/Users/u/p":                     `C:\Users\u\p`,
		"vscode-remote://ssh-remote%2Bbox/srv/app":   "/srv/app",
		"file://wsl.localhost/Ubuntu/home/u/p":       "/home/u/p",
		"vscode-remote://wsl%2Bubuntu/home/u/remote": "/home/u/remote",
		"not a uri": "",
	} {
		if got := uriPath(uri); got != want {
			t.Errorf("uriPath(%s) = %q, want %q", uri, got, want)
		}
	}
}
