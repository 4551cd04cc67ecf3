package importer

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestImportReadCopilot(t *testing.T) {
	home := t.TempDir()
	st := ".copilot/session-state/"
	writeFiles(t, home, map[string]string{
		// Older layout: one flat log, no context, the time appended to prompts.
		st + "11111111-aaaa.jsonl": strings.Join([]string{
			`{"type":"session.start","data":{"sessionId":"11111111-aaaa","version":1,"producer":"copilot-agent","copilotVersion":"unknown","startTime":"2025-12-02T08:26:25.611Z"},"id":"e1","timestamp":"2025-12-02T08:26:25.611Z","parentId":null}`,
			`{"type":"user.message","data":{"content":"list the files\n\n<current_datetime>2025-12-02T08:26:25.627Z</current_datetime>","attachments":[]},"id":"e2","timestamp":"2025-12-02T08:26:25.627Z","parentId":"e1"}`,
			`{"type":"system.message","data":{"content":"You are the GitHub Copilot CLI"},"id":"e3","timestamp":"2025-12-02T08:26:25.700Z","parentId":"e2"}`,
			`{"type":"assistant.message","data":{"messageId":"m1","content":"Listing them.","toolRequests":[{"toolCallId":"call_1","name":"bash","arguments":{"command":"ls"}},{"toolCallId":"call_2","name":"apply_patch","arguments":"*** Begin Patch"}]},"id":"e4","timestamp":"2025-12-02T08:26:30.000Z","parentId":"e3"}`,
			`not json`,
			`{"type":"tool.execution_complete","data":{"toolCallId":"call_1","success":true,"result":{"content":"a.go\nb.go"}},"id":"e5","timestamp":"2025-12-02T08:26:31.000Z","parentId":"e4"}`,
			`{"type":"tool.execution_complete","data":{"toolCallId":"call_2","success":false,"error":{"message":"Path already exists","code":"failure"}},"id":"e6","timestamp":"2025-12-02T08:26:32.000Z","parentId":"e5"}`,
			`{"type":"tool.execution_complete","data":{"toolCallId":"call_gone","success":true,"result":{"content":"orphan"}},"id":"e7","timestamp":"2025-12-02T08:26:33.000Z","parentId":"e6"}`,
			`{"type":"session.error","data":{"message":"rate limited"},"id":"e8","timestamp":"2025-12-02T08:26:34.000Z","parentId":"e7"}`,
		}, "\n") + "\n",
		// Newer layout: a directory with events.jsonl and workspace.yaml.
		st + "22222222-bbbb/events.jsonl": strings.Join([]string{
			`{"type":"session.start","data":{"sessionId":"22222222-bbbb","version":1,"producer":"copilot-agent","copilotVersion":"1.0.60","startTime":"2026-06-08T02:38:04.535Z","context":{"cwd":"/home/dev/dotfiles","gitRoot":"/home/dev/dotfiles","branch":"main"}},"id":"f1","timestamp":"2026-06-08T02:38:05.157Z","parentId":null}`,
			`{"type":"session.model_change","data":{"newModel":"claude-sonnet-4.6"},"id":"f2","timestamp":"2026-06-08T02:38:07.526Z","parentId":"f1"}`,
			`{"type":"user.message","data":{"content":"/init","transformedContent":"<current_datetime>...</current_datetime>\n\nAnalyze this codebase"},"id":"f3","timestamp":"2026-06-08T02:38:18.556Z","parentId":"f2"}`,
			`{"type":"user.message","data":{"content":"<system_notification>agent finished</system_notification>"},"id":"f4","timestamp":"2026-06-08T02:38:19Z","parentId":"f3"}`,
			`{"type":"user.message","data":{"content":"Explore the repo","source":"agent-explore-1"},"id":"f5","timestamp":"2026-06-08T02:38:20Z","parentId":"f4"}`,
			`{"type":"assistant.message","data":{"messageId":"m2","model":"claude-sonnet-4.6","content":"","reasoningText":"Look first.","outputTokens":302,"toolRequests":[{"toolCallId":"toolu_1","name":"view","arguments":{"path":"/home/dev/dotfiles"}}]},"id":"f6","timestamp":"2026-06-08T02:38:25Z","parentId":"f5"}`,
			`{"type":"tool.execution_complete","data":{"toolCallId":"toolu_1","success":true,"result":{"content":"README.md","detailedContent":"..."}},"id":"f7","timestamp":"2026-06-08T02:38:26Z","parentId":"f6"}`,
			`{"type":"assistant.message","data":{"messageId":"m3","model":"claude-sonnet-4.6","content":"Created .github/copilot-instructions.md","outputTokens":12,"toolRequests":[]},"id":"f8","timestamp":"2026-06-08T02:40:26Z","parentId":"f7"}`,
			`{"type":"session.shutdown","data":{"shutdownType":"routine","modelMetrics":{"claude-sonnet-4.6":{"usage":{"inputTokens":19771,"outputTokens":314}}}},"id":"f9","timestamp":"2026-06-08T02:40:27Z","parentId":"f8"}`,
		}, "\n") + "\n",
		st + "22222222-bbbb/workspace.yaml": "id: 22222222-bbbb\ncwd: /home/dev/dotfiles\nbranch: main\nname: Initialize Project Setup\nclient_name: github/cli\n",
		// A directory whose log Copilot pruned.
		st + "33333333-cccc/workspace.yaml": "id: 33333333-cccc\nname: Old\n",
	})
	items, err := Copilot(filepath.Join(home, ".copilot"), ReadOptions{})
	if err != nil || len(items) != 2 {
		t.Fatalf("Copilot: %v, %d items", err, len(items))
	}
	old, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) != 1 || probs[0].Line != 5 || !strings.Contains(probs[0].Err, "not an event") {
		t.Errorf("problems = %v", probs)
	}
	if old.ExternalID != "11111111-aaaa" || old.Source != "copilot-cli" || old.Title != "list the files" || old.DurationMs != 8389 ||
		old.CreatedAt.Format("15:04:05.000") != "08:26:25.611" || old.ProjectPath != "" {
		t.Errorf("older session = %+v", old)
	}
	got, _ := json.Marshal(old.Messages)
	for _, want := range []string{`"content":"list the files"`, `"ExternalID":"call_1","Role":"assistant","Parts":[{"type":"tool-call","toolName":"bash","args":{"command":"ls"}},{"type":"tool-result","content":"a.go\nb.go","toolName":"bash"}]`,
		`"args":{"input":"*** Begin Patch"}},{"type":"tool-result","content":"Error: Path already exists","toolName":"apply_patch"}`,
		`"ExternalID":"11111111-aaaa-result-call_gone","Role":"tool"`} {
		if !strings.Contains(string(got), want) {
			t.Errorf("messages lack %s:\n%s", want, got)
		}
	}
	if len(old.Messages) != 5 {
		t.Errorf("older session: %s", summary(old))
	}

	s, probs, err := items[1].Read()
	if err != nil || len(probs) != 0 {
		t.Fatal(err, probs)
	}
	if s.ExternalID != "22222222-bbbb" || s.Title != "Initialize Project Setup" || s.ProjectPath != "/home/dev/dotfiles" || s.ProjectName != "dotfiles" ||
		s.GitBranch != "main" || s.Model != "claude-sonnet-4.6" || s.PromptTokens != 19771 || s.CompletionTokens != 314 {
		t.Errorf("newer session = %+v", s)
	}
	var roles []string
	for _, m := range s.Messages {
		roles = append(roles, m.Role+":"+m.ExternalID)
	}
	// Notices and a sub-agent's brief are not the user's prompts; a reasoning-only message keeps its thinking.
	if strings.Join(roles, " ") != "user:f3 assistant:f6 assistant:toolu_1 assistant:f8" {
		t.Errorf("messages = %v", roles)
	}
	if m := s.Messages[1]; m.Parts[0].Type != PartThinking || *m.CompletionTokens != 302 {
		t.Errorf("reasoning message = %+v", m)
	}

	// One log named directly.
	if one, err := Copilot(filepath.Join(home, st, "22222222-bbbb", "events.jsonl"), ReadOptions{}); err != nil || len(one) != 1 {
		t.Errorf("one log: %v, %d", err, len(one))
	}
}

// The real Copilot CLI logs, laid out as in ~/.copilot/session-state (both
// layouts): every session is found, with the user's prompts and the
// assistant's messages and tool calls the log holds.
func TestImportRealCopilot(t *testing.T) {
	src := needTranscripts(t, "copilot")
	home := t.TempDir()
	files := map[string]string{}
	for _, row := range manifestRows(t, src, "copilot") {
		b, err := os.ReadFile(filepath.Join(src, row.file))
		if err != nil {
			t.Fatal(err)
		}
		files[row.path] = string(b)
	}
	writeFiles(t, home, files)
	read, problems := readTwice(t, Copilot, filepath.Join(home, ".copilot"))
	logs := 0
	for p := range files {
		if strings.HasSuffix(p, ".jsonl") {
			logs++
		}
	}
	if len(read) != logs || logs != 5 {
		t.Fatalf("found %d sessions, the manifest has %d logs", len(read), logs)
	}
	for path, sessions := range read {
		// Independently: prompts (user.message with no source or "user"),
		// assistant messages with text or reasoning, and tool requests.
		var prompts, answers, calls int
		f, _ := os.Open(path)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			var ev struct {
				Type string
				Data struct {
					Content, Source, ReasoningText string
					ToolRequests                   []json.RawMessage
				}
			}
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			switch ev.Type {
			case "user.message":
				if ev.Data.Source == "" || ev.Data.Source == "user" {
					prompts++
				}
			case "assistant.message":
				if strings.TrimSpace(ev.Data.Content+ev.Data.ReasoningText) != "" {
					answers++
				}
				calls += len(ev.Data.ToolRequests)
			}
		}
		f.Close()
		if len(sessions) != 1 || len(problems[path]) > 0 {
			t.Errorf("%s: %d sessions, problems %v", path, len(sessions), problems[path])
			continue
		}
		s := sessions[0]
		got := map[string]int{}
		for _, m := range s.Messages {
			got[m.Role]++
		}
		want := map[string]int{"user": prompts, "assistant": answers + calls}
		if !sameCounts(got, want) || s.CreatedAt.IsZero() || s.Title == "" {
			t.Errorf("%s: messages %v, the log holds %v; created %v, title %q", filepath.Base(filepath.Dir(path)), got, want, s.CreatedAt, s.Title)
		}
	}
}

// A sub-agent's events (Copilot's task tool) name the call that started it
// (parentToolCallId): its messages carry the sub-agent's mark, typed and
// described by that call.
func TestImportCopilotSubAgent(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, home, map[string]string{
		".copilot/session-state/44444444-dddd/events.jsonl": strings.Join([]string{
			`{"type":"session.start","data":{"sessionId":"44444444-dddd","startTime":"2026-06-09T10:00:00Z"},"id":"g1","timestamp":"2026-06-09T10:00:00Z"}`,
			`{"type":"user.message","data":{"content":"explore the repo"},"id":"g2","timestamp":"2026-06-09T10:00:01Z"}`,
			`{"type":"assistant.message","data":{"content":"Starting an explorer.","toolRequests":[{"toolCallId":"call_task","name":"task","arguments":{"description":"Map the packages","agent_type":"explore","prompt":"..."}}]},"id":"g3","timestamp":"2026-06-09T10:00:02Z"}`,
			`{"type":"assistant.message","data":{"content":"Looking at go.mod","parentToolCallId":"call_task","toolRequests":[{"toolCallId":"call_sub","name":"view","arguments":{"path":"go.mod"}}]},"id":"g4","timestamp":"2026-06-09T10:00:03Z"}`,
			`{"type":"tool.execution_complete","data":{"toolCallId":"call_sub","parentToolCallId":"call_task","success":true,"result":{"content":"module x"}},"id":"g5","timestamp":"2026-06-09T10:00:04Z"}`,
			`{"type":"tool.execution_complete","data":{"toolCallId":"call_task","success":true,"result":{"content":"two packages"}},"id":"g6","timestamp":"2026-06-09T10:00:05Z"}`,
			`{"type":"assistant.message","data":{"content":"It has two packages."},"id":"g7","timestamp":"2026-06-09T10:00:06Z"}`,
		}, "\n") + "\n",
	})
	items, err := Copilot(filepath.Join(home, ".copilot"), ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("Copilot: %v, %d items", err, len(items))
	}
	s, _, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range s.Messages {
		mark := "-"
		if a := m.SubAgent; a != nil {
			mark = a.ID + "/" + a.Type + "/" + a.Description
		}
		got = append(got, m.ExternalID+":"+mark)
	}
	want := "g2:- g3:- call_task:- g4:call_task/explore/Map the packages call_sub:call_task/explore/Map the packages g7:-"
	if strings.Join(got, " ") != want {
		t.Errorf("messages and marks\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}
