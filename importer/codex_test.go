package importer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// writeFile writes content at root/rel, creating directories.
func writeFile(t *testing.T, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// describe renders messages one a line: id, role, time, part types, tokens.
func describe(s Session) string {
	var b strings.Builder
	for _, m := range s.Messages {
		b.WriteString(m.ExternalID + " " + m.Role + " " + m.CreatedAt.UTC().Format("15:04:05") + " [")
		for i, p := range m.Parts {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(p.Type)
		}
		b.WriteString("]")
		if m.PromptTokens != nil {
			b.WriteString(" " + itoa(*m.PromptTokens) + "/" + itoa(*m.CompletionTokens))
		}
		if m.SubAgent != nil {
			b.WriteString(" @" + m.SubAgent.ID)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func problems(probs []Problem) string {
	var out []string
	for _, p := range probs {
		out = append(out, filepath.Base(p.Path)+strings.TrimPrefix(p.String(), p.Path))
	}
	return strings.Join(out, "\n")
}

// A rollout of a current Codex (0.63 to 0.118): the wrapper records, injected
// context dropped, a prompt re-sent after an abort kept once, tool calls with
// their outputs, reasoning summaries, token counts on the answer before
// them, a resumed session's second metadata ignored, a malformed line
// reported.
func TestImportCodexRollout(t *testing.T) {
	root := t.TempDir()
	const sid = "019ab760-3d78-7fd0-9ea1-4c39e889b87b"
	rel := "sessions/2025/11/24/rollout-2025-11-24T13-38-49-" + sid + ".jsonl"
	writeFile(t, root, rel, strings.Join([]string{
		`{"timestamp":"2025-11-24T19:38:49.100Z","type":"session_meta","payload":{"id":"` + sid + `","timestamp":"2025-11-24T19:38:49.080Z","cwd":"/Users/ed/code_butler","originator":"codex_cli_rs","cli_version":"0.63.0","source":"cli","model_provider":"openai","git":{"commit_hash":"5d19","branch":"refactor/ai-clean","repository_url":"https://github.com/x/y"}}}`,
		`{"timestamp":"2025-11-24T19:38:49.200Z","type":"session_meta","payload":{"id":"9cd28a74-da7e-4458-a91a-fffec2be9d7a","timestamp":"2025-11-24T18:00:00.000Z","cwd":"/elsewhere","git":{"branch":"other"}}}`,
		`{"timestamp":"2025-11-24T19:38:49.300Z","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"<permissions instructions> sandboxing"}]}}`,
		`{"timestamp":"2025-11-24T19:38:49.400Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"# AGENTS.md instructions for /Users/ed/code_butler\n\n<INSTRUCTIONS>be brief</INSTRUCTIONS>"},{"type":"input_text","text":"<environment_context>\n  <cwd>/Users/ed/code_butler</cwd>\n</environment_context>"}]}}`,
		`{"timestamp":"2025-11-24T19:38:50.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"why does the build fail?"}]}}`,
		`{"timestamp":"2025-11-24T19:38:50.001Z","type":"event_msg","payload":{"type":"user_message","message":"why does the build fail?"}}`,
		`{"timestamp":"2025-11-24T19:38:50.100Z","type":"turn_context","payload":{"cwd":"/Users/ed/code_butler","model":"gpt-5-codex","approval_policy":"on-request"}}`,
		`{"timestamp":"2025-11-24T19:38:51.000Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}`,
		`{"timestamp":"2025-11-24T19:38:52.000Z","type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}`,
		`{"timestamp":"2025-11-24T19:38:53.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<turn_aborted>\nThe user interrupted the previous turn on purpose.\n</turn_aborted>"}]}}`,
		`{"timestamp":"2025-11-24T19:38:54.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"why does the build fail?"}]}}`,
		`{"timestamp":"2025-11-24T19:38:55.000Z","type":"response_item","payload":{"type":"ghost_snapshot","ghost_commit":{"id":"abc"}}}`,
		`{"timestamp":"2025-11-24T19:38:56.000Z","type":"response_item","payload":{"type":"reasoning","summary":[{"type":"summary_text","text":"**Checking the build**"}],"content":null,"encrypted_content":"gAAA"}}`,
		`{"timestamp":"2025-11-24T19:38:56.500Z","type":"response_item","payload":{"type":"reasoning","summary":[],"content":null,"encrypted_content":"gAAA"}}`,
		`{"timestamp":"2025-11-24T19:38:57.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"make\"]}","call_id":"call_1"}}`,
		`{not json`,
		`{"timestamp":"2025-11-24T19:38:58.000Z","type":"event_msg","payload":{"type":"exec_command_end","call_id":"call_1","stdout":"main.go:3: undefined: foo"}}`,
		`{"timestamp":"2025-11-24T19:38:58.100Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"main.go:3: undefined: foo"}}`,
		`{"timestamp":"2025-11-24T19:38:59.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":40,"reasoning_output_tokens":10,"total_tokens":1040},"last_token_usage":{"input_tokens":1000,"output_tokens":40}}}}`,
		`{"timestamp":"2025-11-24T19:39:00.000Z","type":"response_item","payload":{"type":"custom_tool_call","status":"completed","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch\n*** Update File: main.go\n-foo()\n+bar()\n*** End Patch"}}`,
		`{"timestamp":"2025-11-24T19:39:01.000Z","type":"response_item","payload":{"type":"custom_tool_call_output","call_id":"call_2","output":"{\"output\":\"Success. Updated main.go\"}"}}`,
		`{"timestamp":"2025-11-24T19:39:02.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"foo was renamed to bar."}]}}`,
		`{"timestamp":"2025-11-24T19:39:02.100Z","type":"event_msg","payload":{"type":"agent_message","message":"foo was renamed to bar."}}`,
		`{"timestamp":"2025-11-24T19:39:03.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2300,"output_tokens":95},"last_token_usage":{"input_tokens":1300,"output_tokens":55}}}}`,
		`{"timestamp":"2025-11-24T19:39:03.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":2300,"output_tokens":95},"last_token_usage":{"input_tokens":1300,"output_tokens":55}}}}`,
		`{"timestamp":"2025-11-24T19:39:04.000Z","type":"event_msg","payload":{"type":"task_complete"}}`,
	}, "\n")+"\n")
	items, err := Codex(root, ReadOptions{})
	if err != nil || len(items) != 1 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	s, probs, err := items[0].Read()
	if err != nil {
		t.Fatal(err)
	}
	want := sid + `-L5 user 19:38:50 [text]
` + sid + `-L13 assistant 19:38:56 [thinking]
call_1 assistant 19:38:57 [tool-call,tool-result] 1000/40
call_2 assistant 19:39:00 [tool-call,tool-result]
` + sid + `-L22 assistant 19:39:02 [text] 1300/55
`
	if got := describe(s); got != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
	if got := problems(probs); got != filepath.Base(rel)+":16: skipped: not a rollout line: invalid character 'n' looking for beginning of object key string (byte 2)" {
		t.Errorf("problems: %s", got)
	}
	wantS := Session{ExternalID: sid, Source: "codex-cli", Title: "why does the build fail?", ProjectPath: "/Users/ed/code_butler",
		ProjectName: "code_butler", GitBranch: "refactor/ai-clean", Model: "gpt-5-codex", Provider: "openai",
		PromptTokens: 2300, CompletionTokens: 95, CreatedAt: time.Date(2025, 11, 24, 19, 38, 49, 80e6, time.UTC), DurationMs: 14920}
	got := s
	got.Messages = nil
	if fmtSession(got) != fmtSession(wantS) {
		t.Errorf("session\n got %+v\nwant %+v", got, wantS)
	}
	call := s.Messages[2].Parts
	if string(call[0].Args) != `{"command":["make"]}` || call[0].ToolName != "shell" || call[1].Content != "main.go:3: undefined: foo" {
		t.Errorf("function call = %+v", call)
	}
	patch := s.Messages[3].Parts
	if string(patch[0].Args) != `"*** Begin Patch\n*** Update File: main.go\n-foo()\n+bar()\n*** End Patch"` || !strings.Contains(patch[1].Content, "Success") {
		t.Errorf("custom tool call = %s / %+v", patch[0].Args, patch[1])
	}
}

func fmtSession(s Session) string {
	return s.ExternalID + "|" + s.Source + "|" + s.Title + "|" + s.ProjectPath + "|" + s.ProjectName + "|" + s.GitBranch + "|" +
		s.Model + "|" + s.Provider + "|" + itoa(s.PromptTokens) + "|" + itoa(s.CompletionTokens) + "|" +
		s.CreatedAt.UTC().Format(time.RFC3339Nano) + "|" + itoa(s.DurationMs)
}

// Older layouts: 0.34 (no turn_context, no source), the pre-wrapper JSONL
// of mid-2025 (metadata first, then bare items and state records), and the
// first versions' single JSON document.
func TestImportCodexOlderLayouts(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "sessions/2025/10/31/rollout-2025-10-31T19-02-58-c61729d4-da6d-46a4-9a29-ec2c614e5e23.jsonl", strings.Join([]string{
		`{"timestamp":"2025-11-01T02:02:58.000Z","type":"session_meta","payload":{"id":"c61729d4-da6d-46a4-9a29-ec2c614e5e23","timestamp":"2025-11-01T02:02:58.000Z","cwd":"/home/randy/opk","originator":"codex_cli_rs","cli_version":"0.34.0","instructions":null,"git":{"branch":"main"}}}`,
		`{"timestamp":"2025-11-01T02:03:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"add a GUI"}]}}`,
		`{"timestamp":"2025-11-01T02:03:05.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Added."}]}}`,
		`{"timestamp":"2025-11-01T02:03:06.000Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":50,"output_tokens":5},"last_token_usage":{"input_tokens":50,"output_tokens":5}}}}`,
	}, "\n")+"\n")
	writeFile(t, root, "sessions/2025/06/01/rollout-2025-06-01T10-00-00-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl", strings.Join([]string{
		`{"id":"5973b6c0-94b8-487b-a530-2aeb6098ae0e","timestamp":"2025-06-01T10:00:00.000Z","instructions":"","git":{"branch":"dev"}}`,
		`{"record_type":"state"}`,
		`{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"<user_instructions>\n\nbe nice\n\n</user_instructions>"}]}`,
		`{"type":"message","id":null,"role":"user","content":[{"type":"input_text","text":"list the files"}]}`,
		`{"record_type":"state"}`,
		`{"type":"function_call","id":"fc_1","name":"shell","arguments":"{\"command\":[\"ls\"]}","call_id":"call_a"}`,
		`{"type":"function_call_output","call_id":"call_a","output":"{\"output\":\"a.go\\n\",\"metadata\":{\"exit_code\":0}}"}`,
		`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"One file: a.go"}]}`,
	}, "\n")+"\n")
	writeFile(t, root, "sessions/rollout-2025-04-20-2b2b2b2b-0000-4000-8000-000000000001.json", `{
  "session": {"timestamp": "2025-04-20T08:00:00.000Z", "id": "2b2b2b2b-0000-4000-8000-000000000001", "instructions": ""},
  "items": [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "explain main.go"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "It starts the server."}]},
    "not an item",
    {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"cat\",\"main.go\"]}", "call_id": "call_z"}
  ]
}`)
	items, err := Codex(root, ReadOptions{})
	if err != nil || len(items) != 3 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	var got []string
	for _, it := range items {
		s, probs, err := it.Read()
		if err != nil {
			t.Fatalf("%s: %v", it.Path, err)
		}
		got = append(got, fmtSession(s)+"\n"+describe(s)+problems(probs))
	}
	want := []string{
		`5973b6c0-94b8-487b-a530-2aeb6098ae0e|codex-cli|list the files|||dev|||0|0|2025-06-01T10:00:00Z|0
5973b6c0-94b8-487b-a530-2aeb6098ae0e-L4 user 10:00:00 [text]
call_a assistant 10:00:00 [tool-call,tool-result]
5973b6c0-94b8-487b-a530-2aeb6098ae0e-L8 assistant 10:00:00 [text]
`,
		`c61729d4-da6d-46a4-9a29-ec2c614e5e23|codex-cli|add a GUI|/home/randy/opk|opk|main|||50|5|2025-11-01T02:02:58Z|8000
c61729d4-da6d-46a4-9a29-ec2c614e5e23-L2 user 02:03:00 [text]
c61729d4-da6d-46a4-9a29-ec2c614e5e23-L3 assistant 02:03:05 [text] 50/5
`,
		`2b2b2b2b-0000-4000-8000-000000000001|codex-cli|explain main.go||||||0|0|2025-04-20T08:00:00Z|0
2b2b2b2b-0000-4000-8000-000000000001-L1 user 08:00:00 [text]
2b2b2b2b-0000-4000-8000-000000000001-L2 assistant 08:00:00 [text]
call_z assistant 08:00:00 [tool-call]
rollout-2025-04-20-2b2b2b2b-0000-4000-8000-000000000001.json: skipped items[2]: a JSON string, want importer.cxItem`,
	}
	if strings.Join(got, "\n--\n") != strings.Join(want, "\n--\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n--\n"), strings.Join(want, "\n--\n"))
	}
}
