package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SourcePi is the source pi-opensync-plugin reports.
const SourcePi = "pi"

// Pi lists the sessions of pi, the coding agent (pi-mono's
// @mariozechner/pi-coding-agent): one JSONL file per session under
// $PI_CODING_AGENT_DIR/sessions (~/.pi/agent/sessions), in a directory per
// working directory: --home-u-project--/<time>_<session id>.jsonl. root is
// that sessions directory, the directory holding it, one project's
// directory, or one file.
//
// Line 1 is the header {"type":"session", "version", "id", "timestamp",
// "cwd"}; then entries, which from version 2 form a tree by id and parentId
// (branches stay in the file). Entries of type "message" hold the
// conversation: role user, assistant (content blocks text, thinking,
// toolCall; provider, model, usage with tokens and cost), toolResult (the
// output of a call, by toolCallId) and bashExecution (a command the user
// ran); session_info names the session, model_change switches models. Every
// message of every branch is imported, in file order.
//
// The ids are pi-opensync-plugin's: the session's id, and for each user and
// assistant message "<session>-<role>-<n>", n counting the user and
// assistant messages from 1, as the plugin counts them while pi runs; tool
// results are parts of their assistant message, as the plugin sends them. A
// session the plugin followed from its start gets the same ids, so importing
// it completes it instead of duplicating it (after pi resumed a session the
// plugin recounts from the messages on the current branch, which the file
// does not record).
func Pi(root string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("pi history: %w", err)
	}
	if !fi.IsDir() {
		return []Item{piItem(root, opts)}, nil
	}
	if isDir(filepath.Join(root, "sessions")) {
		root = filepath.Join(root, "sessions")
	}
	var paths []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if d.IsDir() {
			// Session files sit in root or one project directory below it;
			// deeper are extensions' artifacts.
			if p != root && filepath.Dir(p) != root {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".jsonl") && d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pi history: %w", err)
	}
	sort.Strings(paths)
	items := make([]Item, len(paths))
	for i, p := range paths {
		items[i] = piItem(p, opts)
	}
	return items, nil
}

func piItem(path string, opts ReadOptions) Item {
	return Item{Path: path, read: func() (Session, []Problem, error) { return readPi(path, opts.maxPart()) },
		follow: piFollow(path, opts.maxPart())}
}

type piEntry struct {
	Type      string     `json:"type"`
	ID        string     `json:"id"`
	Timestamp string     `json:"timestamp"`
	Cwd       string     `json:"cwd"`      // session header
	Name      string     `json:"name"`     // session_info
	Provider  string     `json:"provider"` // model_change
	ModelID   string     `json:"modelId"`  // model_change
	Message   *piMessage `json:"message"`  // message
}

type piMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Provider   string          `json:"provider"`
	Model      string          `json:"model"`
	Timestamp  float64         `json:"timestamp"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	IsError    bool            `json:"isError"`
	Command    string          `json:"command"`  // bashExecution
	Output     string          `json:"output"`   // bashExecution
	ExitCode   *int            `json:"exitCode"` // bashExecution
	Usage      *struct {
		Input  float64 `json:"input"`
		Output float64 `json:"output"`
		Cost   struct {
			Total float64 `json:"total"`
		} `json:"cost"`
	} `json:"usage"`
}

type piBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// piBlocks decodes content: a string is one text block.
func piBlocks(raw json.RawMessage) ([]piBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []piBlock{{Type: "text", Text: s}}, nil
	}
	var bs []piBlock
	err := json.Unmarshal(raw, &bs)
	return bs, err
}

type piReader struct {
	path    string
	maxPart int
	s       Session
	probs   []Problem
	n       int            // user and assistant messages so far, the plugin's counter
	calls   map[string]int // toolCallId -> index in s.Messages of its assistant message
	name    string
	model   string
	prov    string
	last    time.Time
}

func newPiReader(path string, maxPart int) *piReader {
	r := &piReader{path: path, maxPart: maxPart, calls: map[string]int{}}
	// Files are named <time>_<session id>.jsonl; the header has the id too.
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if _, id, ok := strings.Cut(base, "_"); ok {
		base = id
	}
	r.s = Session{ExternalID: base, Source: SourcePi}
	return r
}

func readPi(path string, maxPart int) (Session, []Problem, error) {
	r := newPiReader(path, maxPart)
	if err := readLines(path, r.line); err != nil {
		return Session{}, r.probs, err
	}
	return r.finish(), r.probs, nil
}

func (r *piReader) problem(n int, format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Line: n, Err: fmt.Sprintf(format, args...)})
}

func (r *piReader) line(n int, raw []byte) {
	var e piEntry
	if err := json.Unmarshal(raw, &e); err != nil {
		r.problem(n, "skipped: not a session entry: %s", jsonError(err))
		return
	}
	at, err := time.Parse(time.RFC3339Nano, e.Timestamp)
	if err == nil {
		r.last = at
	} else {
		at = r.last
	}
	switch e.Type {
	case "session":
		if e.ID != "" {
			r.s.ExternalID = e.ID
		}
		r.s.ProjectPath, r.s.CreatedAt = e.Cwd, at
	case "session_info":
		r.name = e.Name
	case "model_change":
		r.model, r.prov = e.ModelID, e.Provider
	case "message":
		if e.Message == nil {
			r.problem(n, "skipped: a message entry without a message")
			return
		}
		if e.Message.Timestamp > 0 {
			at = time.UnixMilli(int64(e.Message.Timestamp))
		}
		r.message(n, e, at)
	}
}

func (r *piReader) message(n int, e piEntry, at time.Time) {
	m := e.Message
	switch m.Role {
	case "user", "assistant":
	case "toolResult":
		r.toolResult(n, m, at)
		return
	case "bashExecution":
		out := m.Output
		if m.ExitCode != nil && *m.ExitCode != 0 {
			out += "\n[exit code " + strconv.Itoa(*m.ExitCode) + "]"
		}
		args, _ := json.Marshal(map[string]string{"command": m.Command})
		r.s.Messages = append(r.s.Messages, Message{
			ExternalID: r.s.ExternalID + "-bash-" + cmpOr(e.ID, "L"+strconv.Itoa(n)), Role: "tool", CreatedAt: at,
			Parts: []Part{{Type: PartToolCall, ToolName: "bash", Args: jsonArgs(args, r.maxPart)},
				{Type: PartToolResult, ToolName: "bash", Content: truncate(out, r.maxPart)}},
		})
		return
	default:
		return // extensions' messages, branch and compaction summaries
	}
	bs, err := piBlocks(m.Content)
	if err != nil {
		r.problem(n, "skipped: content is neither text nor blocks: %s", jsonError(err))
		return
	}
	r.n++ // the plugin counts every user and assistant message
	msg := Message{ExternalID: r.s.ExternalID + "-" + m.Role + "-" + strconv.Itoa(r.n), Role: m.Role, CreatedAt: at}
	var thinking []Part
	for _, b := range bs {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				msg.Parts = append(msg.Parts, Part{Type: PartText, Content: truncate(b.Text, r.maxPart)})
			}
		case "image":
			msg.Parts = append(msg.Parts, Part{Type: PartText, Content: "[image]"})
		case "thinking":
			if strings.TrimSpace(b.Thinking) != "" {
				thinking = append(thinking, Part{Type: PartThinking, Text: truncate(b.Thinking, r.maxPart)})
			}
		case "toolCall":
			r.calls[b.ID] = len(r.s.Messages)
			msg.Parts = append(msg.Parts, Part{Type: PartToolCall, ToolName: b.Name, Args: jsonArgs(b.Arguments, r.maxPart)})
		}
	}
	// The plugin sends thinking after the calls and their results; they
	// arrive later, so thinking goes first and the rest keeps its order.
	msg.Parts = append(thinking, msg.Parts...)
	if m.Role == "assistant" {
		msg.Model = m.Model
		if m.Model != "" {
			r.model, r.prov = m.Model, m.Provider
		}
		if u := m.Usage; u != nil {
			msg.PromptTokens, msg.CompletionTokens = ptr(round(u.Input)), ptr(round(u.Output))
			r.s.PromptTokens += round(u.Input)
			r.s.CompletionTokens += round(u.Output)
			r.s.Cost += u.Cost.Total
		}
	}
	if len(msg.Parts) == 0 {
		return // counted, as the plugin counts it, but empty
	}
	r.s.Messages = append(r.s.Messages, msg)
}

// toolResult adds a result after its call in the assistant message that
// made it.
func (r *piReader) toolResult(n int, m *piMessage, at time.Time) {
	bs, err := piBlocks(m.Content)
	if err != nil {
		r.problem(n, "skipped: tool result content is neither text nor blocks: %s", jsonError(err))
		return
	}
	var texts []string
	for _, b := range bs {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	out := strings.Join(texts, "\n")
	if m.IsError {
		out = "Error: " + out
	}
	res := Part{Type: PartToolResult, ToolName: m.ToolName, Content: truncate(out, r.maxPart)}
	i, ok := r.calls[m.ToolCallID]
	if !ok || i >= len(r.s.Messages) {
		r.s.Messages = append(r.s.Messages, Message{
			ExternalID: r.s.ExternalID + "-result-" + cmpOr(m.ToolCallID, "L"+strconv.Itoa(n)), Role: "tool", CreatedAt: at, Parts: []Part{res},
		})
		return
	}
	parts := r.s.Messages[i].Parts
	for j, p := range parts {
		if p.Type == PartToolCall && p.ToolName == m.ToolName && (j+1 == len(parts) || parts[j+1].Type != PartToolResult) {
			r.s.Messages[i].Parts = append(parts[:j+1:j+1], append([]Part{res}, parts[j+1:]...)...)
			return
		}
	}
	r.s.Messages[i].Parts = append(parts, res)
}

func (r *piReader) finish() Session {
	s := r.s
	s.Model, s.Provider = r.model, r.prov
	s.ProjectName = projectName(s.ProjectPath)
	s.Title = r.name
	if s.Title == "" {
		for _, m := range s.Messages {
			if m.Role == "user" && strings.TrimSpace(m.Text()) != "" {
				s.Title = Title(m.Text())
				break
			}
		}
	}
	if s.CreatedAt.IsZero() && len(s.Messages) > 0 {
		s.CreatedAt = s.Messages[0].CreatedAt
	}
	if !s.CreatedAt.IsZero() && r.last.After(s.CreatedAt) {
		s.DurationMs = r.last.Sub(s.CreatedAt).Milliseconds()
	}
	return s
}

// piRoots: pi keeps $PI_CODING_AGENT_DIR/sessions, ~/.pi/agent/sessions by
// default, on every system (%USERPROFILE%\.pi\agent\sessions on Windows).
func piRoots(home, _ string, getenv func(string) string) []string {
	if d := getenv("PI_CODING_AGENT_DIR"); d != "" {
		return []string{filepath.Join(d, "sessions"), filepath.Join(home, ".pi", "agent", "sessions")}
	}
	return []string{filepath.Join(home, ".pi", "agent", "sessions")}
}
