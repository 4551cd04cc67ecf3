package exporter_test

import (
	"encoding/json"
	"time"

	"github.com/hindsight-dev/hindsight/exporter"
	"github.com/hindsight-dev/hindsight/kv"
)

var t0 = time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC).UnixMilli()

func ptr[T any](v T) *T { return &v }

func text(s string) kv.Part { return kv.Part{Type: kv.PartText, Content: s} }

func call(tool, args string) kv.Part {
	return kv.Part{Type: kv.PartToolCall, ToolName: tool, Args: args}
}

func result(tool, content string) kv.Part {
	return kv.Part{Type: kv.PartToolResult, ToolName: tool, Content: content}
}

// msgs numbers messages in order, as kv stores them.
func msgs(sessionID string, ms ...kv.Message) []kv.Message {
	for i := range ms {
		ms[i].SessionID = sessionID
		ms[i].Seq = uint64(i)
		ms[i].ID = "m" + sessionID[:4] + string(rune('a'+i))
		ms[i].CreatedAt = t0 + int64(i)*1000
	}
	return ms
}

type fixtureSession struct {
	session kv.Session
	msgs    []kv.Message
}

func (f fixtureSession) eval() exporter.Session {
	return exporter.Session{Session: f.session, Messages: exporter.SliceMessages(f.msgs)}
}

// fixture has every role, tool calls and results, unicode, messages without
// text (empty, thinking only, tool call only), markdown that tries to break
// out of its section, home directories to anonymise, an unanswered user
// message, a session with no assistant reply at all, consecutive user and
// assistant messages, and an expectedOutput.
func fixture() []fixtureSession {
	a := kv.Session{
		ID: "sessa00000000001", ExternalID: "ext-a", Source: "claude-code",
		Title: "Fix the login redirect — ünïcødé ✓", Model: "claude-sonnet-4-20250514", Provider: "anthropic",
		ProjectPath: "/home/alice/demo-proj", ProjectName: "demo-proj",
		PromptTokens: 315, CompletionTokens: 50, TotalTokens: 365, Cost: 0.00123, DurationMs: 10000,
		MessageCount: 11, CreatedAt: t0, UpdatedAt: t0 + 60_000,
		Eval: kv.Eval{Ready: true, Status: kv.EvalGolden, Notes: "reviewed by alice", Tags: []string{"auth", "regression"},
			ExpectedOutput: "The redirect must go to /dashboard after login;\nsee /home/alice/demo-proj/auth.go.",
			ReviewedAt:     t0 + 120_000},
	}
	thinking := kv.Part{Type: "thinking", Raw: json.RawMessage(`{"type":"thinking","content":"hmm"}`)}
	aMsgs := msgs(a.ID,
		kv.Message{Role: "system", Parts: []kv.Part{text("You are a careful coding assistant.")}},
		kv.Message{Role: "user", TextContent: ptr("Fix the login redirect in /home/alice/demo-proj/auth.go")},
		kv.Message{Role: "assistant", Parts: []kv.Part{call("Bash", `{"command":"grep -rn redirect /home/alice/demo-proj","timeout":30}`)}},
		kv.Message{Role: "tool", Parts: []kv.Part{result("Bash", "auth.go:12:\tredirect(\"/login\") // ```\n<b>not html</b>")}},
		kv.Message{Role: "assistant", Parts: []kv.Part{text("I'll look at the auth redirect.\n\n## User\n```go\nfunc injected() {}\n")}},
		kv.Message{Role: "assistant"},
		kv.Message{Role: "assistant", Parts: []kv.Part{thinking}},
		kv.Message{Role: "user", Parts: []kv.Part{text("Schön — 日本語のテスト 🎉, and C:\\Users\\Bob\\proj too")}},
		kv.Message{Role: "assistant", TextContent: ptr("ignored: the message has a text part"), Parts: []kv.Part{
			text("Fixed: the callback URL was wrong.\n<script>alert(1)</script> *not bold* [link](http://x) &amp;\n1. not a list\n    indented_code_like\n# not a heading\n---\n\n\n| a | b |"),
			call("Edit", `{"file":"/home/alice/demo-proj/auth.go"}`),
			result("Edit", "ok"),
		}},
		kv.Message{Role: "unknown", Parts: []kv.Part{text("an unknown-role note")}},
		kv.Message{Role: "user", TextContent: ptr("thanks!")},
	)
	b := kv.Session{
		ID: "sessb00000000002", ExternalID: "ext-b", Source: "opencode", Model: "gpt-5",
		PromptTokens: 10, CompletionTokens: 0, TotalTokens: 10, MessageCount: 2,
		CreatedAt: t0 + 3_600_000, UpdatedAt: t0 + 3_700_000,
		Eval: kv.Eval{Ready: true, Status: kv.EvalNeedsReview, ReviewedAt: t0 + 3_800_000},
	}
	bMsgs := msgs(b.ID,
		kv.Message{Role: "user", TextContent: ptr("Can you explain this stack trace?")},
		kv.Message{Role: "user", TextContent: ptr("")},
	)
	c := kv.Session{
		ID: "sessc00000000003", ExternalID: "ext-c", Source: "cursor-sync", Title: "Rename the config loader",
		PromptTokens: 1200, CompletionTokens: 300, TotalTokens: 1500, Cost: 0.5, MessageCount: 5,
		CreatedAt: t0 + 7_200_000, UpdatedAt: t0 + 7_300_000,
		Eval: kv.Eval{Ready: true, Status: kv.EvalIncorrect, Tags: []string{"refactor"}, ReviewedAt: t0 + 7_400_000},
	}
	cMsgs := msgs(c.ID,
		kv.Message{Role: "user", TextContent: ptr("Rename loadCfg to loadConfig.")},
		kv.Message{Role: "user", TextContent: ptr("Everywhere, please.")},
		kv.Message{Role: "assistant", TextContent: ptr("Renamed it in main.go.")},
		kv.Message{Role: "user", TextContent: ptr("You missed config_test.go.")},
		kv.Message{Role: "assistant", TextContent: ptr("Sorry, fixed that too.")},
	)
	return []fixtureSession{{a, aMsgs}, {b, bMsgs}, {c, cMsgs}}
}

func fixtureSessions() exporter.Sessions {
	return func(yield func(exporter.Session) error) error {
		for _, f := range fixture() {
			if err := yield(f.eval()); err != nil {
				return err
			}
		}
		return nil
	}
}
