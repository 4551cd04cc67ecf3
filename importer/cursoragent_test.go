package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cursorAgentText = `user:
<user_query>
why does the build fail?
</user_query>

assistant:
[Thinking] The user asks about the build.
  Look at the Makefile first.
I'll check the build.
[Tool call] run_terminal_cmd
  command=make build
  is_background=false
[Tool result] run_terminal_cmd
  main.go:3: undefined: foo

The function foo was renamed.

user:
<user_query>
rename it back
</user_query>

assistant:
[Tool call] ApplyPatch
  *** Begin Patch
  *** Update File: main.go
[Tool result] ApplyPatch
  Done
Renamed.
`

func TestImportReadCursorAgent(t *testing.T) {
	home := t.TempDir()
	project := filepath.Join(home, "work", "my-app", "web.v2")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	enc := strings.NewReplacer("/", "-", ".", "-").Replace(strings.TrimPrefix(filepath.ToSlash(project), "/"))
	tr := ".cursor/projects/" + enc + "/agent-transcripts/"
	writeFiles(t, home, map[string]string{
		tr + "chat-1.txt": cursorAgentText,
		tr + "chat-2/chat-2.jsonl": strings.Join([]string{
			`{"role":"user","message":{"content":[{"type":"text","text":"<user_query>list the tests</user_query>"}]}}`,
			`{"role":"assistant","message":{"content":[{"type":"thinking","thinking":"Use the glob tool."},{"type":"text","text":"Looking."},{"type":"tool_use","id":"t1","name":"Glob","input":{"pattern":"*_test.go"}}]}}`,
			`{"role":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a_test.go"}]}}`,
			`{"role":`,
			`{"role":"assistant","message":{"content":"One test file."}}`,
		}, "\n"),
		tr + "chat-2/subagents/sub-1.jsonl": `{"role":"assistant","message":{"content":[{"type":"text","text":"sub-agent's report"}]}}` + "\n",
		tr + "chat-3.txt":                   "user:\nhello\n\nassistant:\nhi\n",
		tr + "chat-3/subagents/s-9.txt":     "user:\nexplore\n\nassistant:\nexplored\n",
		tr + "notes.md":                     "not a transcript",
		".cursor/projects/gone-project/agent-transcripts/chat-4.txt": "user:\nhey\n",
	})
	readTwice(t, CursorAgent, filepath.Join(home, ".cursor"))
	items, err := CursorAgent(filepath.Join(home, ".cursor"), ReadOptions{})
	if err != nil || len(items) != 4 {
		t.Fatalf("CursorAgent: %v, %d items", err, len(items))
	}
	byID := map[string]Item{}
	for _, it := range items {
		byID[strings.TrimSuffix(filepath.Base(it.Path), filepath.Ext(it.Path))] = it
	}
	read := func(id string) (Session, []Problem) {
		t.Helper()
		s, probs, err := byID[id].Read()
		if err != nil {
			t.Fatal(err)
		}
		return s, probs
	}
	s, _ := read("chat-1")
	if s.ExternalID != "chat-1" || s.Source != "cursor-sync" || s.ProjectPath != project || s.ProjectName != "web.v2" ||
		s.Title != "why does the build fail?" || s.CreatedAt.IsZero() {
		t.Errorf("chat-1 = %+v", s)
	}
	got, _ := json.Marshal(s.Messages)
	for _, want := range []string{
		`"ExternalID":"chat-1-1","Role":"user","Parts":[{"type":"text","content":"why does the build fail?"}]`,
		`"ExternalID":"chat-1-2","Role":"assistant","Parts":[{"type":"thinking","text":"The user asks about the build.\nLook at the Makefile first."},{"type":"text","content":"I'll check the build."}]`,
		`"ExternalID":"chat-1-3","Role":"assistant","Parts":[{"type":"tool-call","toolName":"run_terminal_cmd","args":{"command":"make build","is_background":"false"}},{"type":"tool-result","content":"main.go:3: undefined: foo","toolName":"run_terminal_cmd"}]`,
		`"ExternalID":"chat-1-4","Role":"assistant","Parts":[{"type":"text","content":"The function foo was renamed."}]`,
		`{"type":"tool-call","toolName":"ApplyPatch","args":{"input":"*** Begin Patch\n*** Update File: main.go"}},{"type":"tool-result","content":"Done","toolName":"ApplyPatch"}`,
		`"ExternalID":"chat-1-7","Role":"assistant","Parts":[{"type":"text","content":"Renamed."}]`,
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("chat-1 lacks %s\n%s", want, got)
		}
	}
	if len(s.Messages) != 7 {
		t.Errorf("chat-1 = %s", summary(s))
	}

	j, probs := read("chat-2")
	if len(probs) != 1 || probs[0].Line != 4 {
		t.Errorf("chat-2 problems = %v", probs)
	}
	var roles []string
	for _, m := range j.Messages {
		roles = append(roles, m.Role+":"+m.ExternalID)
	}
	if strings.Join(roles, " ") != "user:chat-2-1 assistant:chat-2-2 assistant:chat-2-3 assistant:chat-2-4 assistant:chat-2-sub-sub-1-1" ||
		j.Messages[2].Parts[1].Content != "a_test.go" || j.Messages[0].Text() != "list the tests" {
		t.Errorf("chat-2 = %v %+v", roles, j.Messages)
	}
	flat, _ := read("chat-3")
	if len(flat.Messages) != 4 || flat.Messages[3].Text() != "explored" || flat.Messages[3].ExternalID != "chat-3-sub-s-9-2" {
		t.Errorf("chat-3 with its sub-agent = %s", summary(flat))
	}
	// The sub-agents' messages are marked as theirs; the chat's own are not.
	for _, s := range []Session{j, flat} {
		for _, m := range s.Messages {
			sub := strings.Contains(m.ExternalID, "-sub-")
			if (m.SubAgent != nil) != sub || sub && !strings.Contains(m.ExternalID, "-sub-"+m.SubAgent.ID+"-") {
				t.Errorf("%s: sub-agent mark %+v", m.ExternalID, m.SubAgent)
			}
		}
	}
	gone, _ := read("chat-4")
	if gone.ProjectPath != "" || len(gone.Messages) != 1 {
		t.Errorf("a project that no longer exists = %+v", gone)
	}
	// One transcript, named directly, still finds its project.
	one, err := CursorAgent(filepath.Join(home, tr, "chat-1.txt"), ReadOptions{})
	if err != nil || len(one) != 1 {
		t.Fatal(err)
	}
	if s, _, _ := one[0].Read(); s.ProjectPath != project {
		t.Errorf("one transcript's project = %q", s.ProjectPath)
	}
}
