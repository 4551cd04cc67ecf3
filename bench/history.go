package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// HistoryFormat writes generated sessions in one assistant's on-disk format,
// the way `hindsight bench import` measures the importer on a large history.
// Adding a format is adding an entry to HistoryFormats.
type HistoryFormat struct {
	Agent string // the importer's agent name (hindsight import <Agent>)
	// Write generates sessions into the assistant's default place under
	// home until about size bytes are written, and says what it wrote.
	Write func(home string, size int64, seed uint64) (HistoryStats, error)
}

// HistoryStats is what a HistoryFormat wrote.
type HistoryStats struct {
	Files    int   `json:"files"`
	Sessions int   `json:"sessions"`
	Messages int   `json:"messages"` // messages the importer makes of them (a tool call and its result are one)
	Bytes    int64 `json:"bytes"`
}

// HistoryFormats returns the formats bench import can generate.
func HistoryFormats() []HistoryFormat {
	return []HistoryFormat{
		{Agent: "claude-code", Write: writeClaudeCodeHistory},
		{Agent: "codex", Write: writeCodexHistory},
	}
}

// historyGen draws the sessions of a generated history: the Generator's
// sessions (prompts, prose, code, traces, tool calls; long-tailed lengths)
// with the tool outputs real transcripts have, mostly a few KB with a tail of
// large file dumps, so sessions average a few hundred KB as real ones do.
type historyGen struct {
	g     *Generator
	rng   *rand.Rand
	start time.Time
	n     int
}

func newHistoryGen(seed uint64) *historyGen {
	return &historyGen{g: NewGenerator(seed), rng: rand.New(rand.NewPCG(seed, 0x5eed)),
		start: time.Date(2025, 6, 2, 8, 0, 0, 0, time.UTC)}
}

// uuid draws a version-4-shaped id.
func (h *historyGen) uuid() string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", h.rng.Uint32(), h.rng.Uint32()&0xffff, h.rng.Uint32()&0xfff,
		h.rng.Uint32()&0xfff, h.rng.Uint64()&0xffffffffffff)
}

// output is a tool's output: a trace, and now and then a file dump of up to
// 320 KB (past the importer's 256 KB cap, which cuts it).
func (h *historyGen) output() string {
	out := h.g.trace()
	switch r := h.rng.IntN(100); {
	case r < 2:
		return out + dump(h.g, 100<<10+h.rng.IntN(220<<10))
	case r < 40:
		return out + dump(h.g, 1<<10+h.rng.IntN(8<<10))
	}
	return out
}

// dump is about n bytes of code-like text.
func dump(g *Generator, n int) string {
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(g.code())
		b.WriteString("\n")
	}
	return b.String()
}

// session is the next generated session, with its start time.
func (h *historyGen) session() (GenSession, time.Time) {
	h.n++
	s := h.g.Session(40)
	return s, h.start.Add(time.Duration(h.n) * 37 * time.Minute)
}

// jsonlFile writes JSON lines to one file, counting bytes.
type jsonlFile struct {
	f     *os.File
	w     *bufio.Writer
	bytes int64
	err   error
}

func createJSONL(path string) (*jsonlFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &jsonlFile{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (j *jsonlFile) line(v any) {
	if j.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		j.err = err
		return
	}
	b = append(b, '\n')
	_, j.err = j.w.Write(b)
	j.bytes += int64(len(b))
}

func (j *jsonlFile) close() error {
	if err := j.w.Flush(); err != nil && j.err == nil {
		j.err = err
	}
	if err := j.f.Close(); err != nil && j.err == nil {
		j.err = err
	}
	return j.err
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// writeClaudeCodeHistory writes Claude Code 2.1 transcripts,
// ~/.claude/projects/<encoded cwd>/<session>.jsonl, with the metadata every
// line carries, usage on assistant lines, tool calls and their results, and
// a sub-agent (subagents/agent-<id>.jsonl and its meta) in one session of
// eight.
func writeClaudeCodeHistory(home string, size int64, seed uint64) (HistoryStats, error) {
	h := newHistoryGen(seed)
	var st HistoryStats
	for st.Bytes < size {
		s, at := h.session()
		sid := h.uuid()
		project := filepath.Join(home, ".claude", "projects", strings.ReplaceAll(s.ProjectPath, "/", "-"))
		f, err := createJSONL(filepath.Join(project, sid+".jsonl"))
		if err != nil {
			return st, err
		}
		st.Files++
		st.Sessions++
		line := func(typ, parent string, t time.Time, message map[string]any) string {
			uuid := h.uuid()
			f.line(map[string]any{"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": s.ProjectPath,
				"sessionId": sid, "version": "2.1.97", "gitBranch": "main", "type": typ, "message": message,
				"uuid": uuid, "timestamp": stamp(t)})
			return uuid
		}
		usage := func() map[string]any {
			return map[string]any{"input_tokens": 4 + h.rng.IntN(50), "cache_creation_input_tokens": h.rng.IntN(3000),
				"cache_read_input_tokens": 10000 + h.rng.IntN(60000), "output_tokens": 20 + h.rng.IntN(800)}
		}
		parent := ""
		st.Messages += len(s.Messages)
		for i, m := range s.Messages {
			t := at.Add(time.Duration(i*20) * time.Second)
			switch {
			case m.Role == "user":
				parent = line("user", parent, t, map[string]any{"role": "user", "content": m.TextContent})
			case len(m.Parts) == 2: // a tool call and its result
				id := "toolu_" + strings.ReplaceAll(h.uuid(), "-", "")[:24]
				parent = line("assistant", parent, t, map[string]any{"model": s.Model, "id": "msg_" + id[6:], "type": "message", "role": "assistant",
					"content": []any{map[string]any{"type": "tool_use", "id": id, "name": m.Parts[0]["toolName"],
						"input": map[string]any{"command": m.Parts[0]["args"]}}}, "usage": usage()})
				parent = line("user", parent, t.Add(3*time.Second), map[string]any{"role": "user",
					"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": h.output()}}})
			default:
				parent = line("assistant", parent, t, map[string]any{"model": s.Model, "id": "msg_" + h.uuid(), "type": "message", "role": "assistant",
					"content": []any{map[string]any{"type": "text", "text": m.Parts[0]["content"]}}, "usage": usage()})
			}
		}
		if err := f.close(); err != nil {
			return st, err
		}
		st.Bytes += f.bytes
		if h.n%8 == 0 {
			agent := fmt.Sprintf("a%016x", h.rng.Uint64())
			sub := filepath.Join(project, sid, "subagents")
			af, err := createJSONL(filepath.Join(sub, "agent-"+agent+".jsonl"))
			if err != nil {
				return st, err
			}
			for i := range 6 {
				t := at.Add(time.Duration(30+i) * time.Second)
				msg := map[string]any{"role": "user", "content": "Search the code for " + h.g.pick(genIdents)}
				typ := "user"
				if i%2 == 1 {
					typ, msg = "assistant", map[string]any{"model": "claude-haiku-4-5", "role": "assistant",
						"content": []any{map[string]any{"type": "text", "text": h.g.sentence(10, 40)}}, "usage": usage()}
				}
				af.line(map[string]any{"parentUuid": nil, "isSidechain": true, "agentId": agent, "cwd": s.ProjectPath,
					"sessionId": sid, "version": "2.1.97", "type": typ, "message": msg, "uuid": h.uuid(), "timestamp": stamp(t)})
				st.Messages++
			}
			if err := af.close(); err != nil {
				return st, err
			}
			meta := []byte(`{"agentType":"Explore","description":"Search the code"}`)
			if err := os.WriteFile(filepath.Join(sub, "agent-"+agent+".meta.json"), meta, 0o644); err != nil {
				return st, err
			}
			st.Files += 2
			st.Bytes += af.bytes + int64(len(meta))
		}
	}
	return st, nil
}

// writeCodexHistory writes Codex CLI rollouts,
// ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl, as 0.118 writes
// them: session metadata, the injected context, a turn context per turn,
// response items (messages, encrypted reasoning, function calls and their
// outputs), and the event copies and token counts.
func writeCodexHistory(home string, size int64, seed uint64) (HistoryStats, error) {
	h := newHistoryGen(seed)
	var st HistoryStats
	for st.Bytes < size {
		s, at := h.session()
		id := h.uuid()
		name := fmt.Sprintf("rollout-%s-%s.jsonl", at.Format("2006-01-02T15-04-05"), id)
		f, err := createJSONL(filepath.Join(home, ".codex", "sessions", at.Format("2006"), at.Format("01"), at.Format("02"), name))
		if err != nil {
			return st, err
		}
		st.Files++
		st.Sessions++
		rec := func(t time.Time, typ string, payload map[string]any) {
			f.line(map[string]any{"timestamp": stamp(t), "type": typ, "payload": payload})
		}
		text := func(kind, s string) []any { return []any{map[string]any{"type": kind, "text": s}} }
		rec(at, "session_meta", map[string]any{"id": id, "timestamp": stamp(at), "cwd": s.ProjectPath, "originator": "codex-tui",
			"cli_version": "0.118.0", "source": "cli", "model_provider": "openai",
			"git": map[string]any{"commit_hash": fmt.Sprintf("%040x", h.rng.Uint64()), "branch": "main"}})
		rec(at, "response_item", map[string]any{"type": "message", "role": "user", "content": text("input_text",
			"<environment_context>\n  <cwd>"+s.ProjectPath+"</cwd>\n  <shell>zsh</shell>\n</environment_context>")})
		total := 0
		for i, m := range s.Messages {
			t := at.Add(time.Duration(i*20) * time.Second)
			switch {
			case m.Role == "user":
				rec(t, "turn_context", map[string]any{"cwd": s.ProjectPath, "model": "gpt-5-codex", "approval_policy": "on-request",
					"sandbox_policy": map[string]any{"type": "workspace-write"}})
				rec(t, "response_item", map[string]any{"type": "message", "role": "user", "content": text("input_text", m.TextContent)})
				rec(t, "event_msg", map[string]any{"type": "user_message", "message": m.TextContent})
				st.Messages++
			case len(m.Parts) == 2:
				call := "call_" + strings.ReplaceAll(h.uuid(), "-", "")[:24]
				rec(t, "response_item", map[string]any{"type": "reasoning", "summary": []any{}, "content": nil,
					"encrypted_content": strings.Repeat("gAAAAB", 40+h.rng.IntN(200))})
				args, _ := json.Marshal(map[string]any{"command": []string{"bash", "-lc", fmt.Sprint(m.Parts[0]["args"])}})
				rec(t, "response_item", map[string]any{"type": "function_call", "name": "shell", "arguments": string(args), "call_id": call})
				rec(t.Add(2*time.Second), "response_item", map[string]any{"type": "function_call_output", "call_id": call, "output": h.output()})
				st.Messages++
			default:
				rec(t, "response_item", map[string]any{"type": "message", "role": "assistant", "content": text("output_text", fmt.Sprint(m.Parts[0]["content"]))})
				rec(t, "event_msg", map[string]any{"type": "agent_message", "message": m.Parts[0]["content"]})
				last := 10000 + h.rng.IntN(50000)
				total += last
				rec(t, "event_msg", map[string]any{"type": "token_count", "info": map[string]any{
					"total_token_usage": map[string]any{"input_tokens": total, "cached_input_tokens": total / 2, "output_tokens": total / 40},
					"last_token_usage":  map[string]any{"input_tokens": last, "cached_input_tokens": last / 2, "output_tokens": last / 40}}})
				st.Messages++
			}
		}
		if err := f.close(); err != nil {
			return st, err
		}
		st.Bytes += f.bytes
	}
	return st, nil
}
