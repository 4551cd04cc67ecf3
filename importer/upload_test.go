package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/api"
)

func textMsg(id, role, text string) Message {
	return Message{ExternalID: id, Role: role, Parts: []Part{{Type: PartText, Content: text}}}
}

func stored(id, role, textContent string, parts ...string) api.Message {
	m := api.Message{ExternalID: id, Role: role}
	if textContent != "" {
		m.TextContent = &textContent
	}
	for _, p := range parts {
		m.Parts = append(m.Parts, json.RawMessage(p))
	}
	return m
}

func TestImportMissing(t *testing.T) {
	local := []Message{
		textMsg("s-user-u1", "user", "continue"),
		textMsg("a1", "assistant", "ok"),
		textMsg("s-user-u2", "user", "continue"),
		textMsg("s-user-u3", "user", "continue"),
		textMsg("s-user-u4", "user", "ship it"),
		textMsg("t1", "assistant", ""),
		{ExternalID: "toolu_1", Role: "assistant", Parts: []Part{{Type: PartToolCall, ToolName: "Bash"}, {Type: PartToolResult, Content: "ok"}}},
	}
	for _, tc := range []struct {
		name   string
		stored []api.Message
		want   string
	}{
		{"nothing stored", nil, "s-user-u1 a1 s-user-u2 s-user-u3 s-user-u4 t1 toolu_1"},
		{"everything stored by a previous import", []api.Message{
			stored("s-user-u1", "user", "", `{"type":"text","content":"continue"}`), stored("a1", "assistant", "ok"),
			stored("s-user-u2", "user", "", `{"type":"text","content":"continue"}`), stored("s-user-u3", "user", "", `{"type":"text","content":"continue"}`),
			stored("s-user-u4", "user", "", `{"type":"text","content":"ship it"}`), stored("t1", "assistant", ""),
			stored("toolu_1", "assistant", "", `{"type":"tool-call","toolName":"Bash"}`, `{"type":"tool-result","content":"ok"}`, `{"type":"subagent","agentId":"a"}`),
		}, ""},
		// The tool call was stored before its result was written: sent again.
		{"tool call stored without its result", []api.Message{
			stored("s-user-u1", "user", "", `{"type":"text","content":"continue"}`), stored("a1", "assistant", "ok"),
			stored("s-user-u2", "user", "", `{"type":"text","content":"continue"}`), stored("s-user-u3", "user", "", `{"type":"text","content":"continue"}`),
			stored("s-user-u4", "user", "", `{"type":"text","content":"ship it"}`), stored("t1", "assistant", ""),
			stored("toolu_1", "assistant", "", `{"type":"tool-call","toolName":"Bash"}`),
		}, "toolu_1"},
		// The live plugin named user prompts by time: matched by text, each
		// stored prompt claiming one local prompt.
		{"live sync of the first turns", []api.Message{
			stored("s-user-1736500000000", "user", "continue"), stored("a1", "assistant", "ok"),
			stored("s-user-1736500009000", "user", "continue"),
		}, "s-user-u3 s-user-u4 t1 toolu_1"},
		// A prompt stored under the import's own id does not also claim a
		// local prompt with the same text.
		{"ids first", []api.Message{
			stored("s-user-u1", "user", "", `{"type":"text","content":"continue"}`),
			stored("s-user-1736500009000", "user", "  continue "),
		}, "a1 s-user-u3 s-user-u4 t1 toolu_1"},
	} {
		var got []string
		for _, m := range missing(local, tc.stored) {
			got = append(got, m.ExternalID)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("%s: missing = %q, want %q", tc.name, strings.Join(got, " "), tc.want)
		}
	}
}

func TestImportSessionChanged(t *testing.T) {
	s := &Session{ExternalID: "x", Source: "claude-code", Title: "T", ProjectPath: "/p", ProjectName: "p", GitBranch: "main",
		Model: "m", PromptTokens: 10, CompletionTokens: 2, Cost: 0.1 + 0.2, DurationMs: 5}
	r := api.Session{Source: "claude-code", Title: "T", ProjectPath: "/p", ProjectName: "p", GitBranch: "main", Model: "m",
		Provider: "set by someone else", PromptTokens: 10, CompletionTokens: 2, Cost: 0.3, DurationMs: 5}
	if sessionChanged(r, s) {
		t.Error("equal sessions (a float sum off by an ulp, a field the import does not send) differ")
	}
	for name, mut := range map[string]func(*api.Session){
		"title":  func(r *api.Session) { r.Title = "Untitled" },
		"tokens": func(r *api.Session) { r.PromptTokens = 0 },
		"cost":   func(r *api.Session) { r.Cost = 0 },
		"source": func(r *api.Session) { r.Source = "opencode" },
		"branch": func(r *api.Session) { r.GitBranch = "" },
	} {
		r2 := r
		mut(&r2)
		if !sessionChanged(r2, s) {
			t.Errorf("a different %s is not a change", name)
		}
	}
}

// An unreachable server stops the import after the first session's retries
// instead of retrying every session in turn.
func TestImportStopsWhenServerUnreachable(t *testing.T) {
	var waits []time.Duration
	// The listing answers, then every write finds the connection dropped.
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.Write([]byte(`{"sessions":[]}`))
			return
		}
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer live.Close()
	dir := t.TempDir()
	var items []Item
	for i := range 5 {
		p := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		os.WriteFile(p, []byte(`{"type":"user","uuid":"u","timestamp":"2025-01-01T00:00:00Z","message":{"content":"hi"}}`+"\n"), 0o644)
		items = append(items, Item{Path: p, read: func() (Session, []Problem, error) { return readClaudeCodeFile(p, 1000) }})
	}
	c := testClient(live.URL, &waits)
	sum, err := Upload(context.Background(), c, items, Options{Concurrency: 1, Singles: true})
	if err == nil || !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Fatalf("err = %v", err)
	}
	if sum.Sessions.Failed != 1 || len(waits) != 3 {
		t.Errorf("%d sessions failed after %d waits; want the import to stop after the first", sum.Sessions.Failed, len(waits))
	}
}

// A sub-agent's message carries its mark as a last part of type subagent;
// the session carries its branch.
func TestImportPayloads(t *testing.T) {
	s := &Session{ExternalID: "s", Source: "claude-code", GitBranch: "feat/x"}
	if p := newSessionPayload(s); p.GitBranch == nil || *p.GitBranch != "feat/x" {
		t.Errorf("session payload branch = %v", p.GitBranch)
	}
	if p := newSessionPayload(&Session{ExternalID: "s"}); p.GitBranch != nil {
		t.Errorf("an unknown branch is sent as %q", *p.GitBranch)
	}
	m := textMsg("a1", "assistant", "found it")
	m.SubAgent = &SubAgent{ID: "a17", Type: "Explore", Description: "find the handler"}
	p, err := newMessagePayload(s, &m)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, raw := range p.Parts {
		parts = append(parts, string(raw))
	}
	want := `{"type":"text","content":"found it"} {"type":"subagent","agentId":"a17","agentType":"Explore","description":"find the handler"}`
	if strings.Join(parts, " ") != want {
		t.Errorf("parts = %s\nwant %s", strings.Join(parts, " "), want)
	}
}
