package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SourceCodex is the source codex-sync, the Codex CLI plugin, reports.
const SourceCodex = "codex-cli"

// Codex lists Codex CLI's sessions under dir: $CODEX_HOME (~/.codex), whose
// sessions/YYYY/MM/DD/ and archived_sessions/ hold one rollout per session,
// or any directory or single rollout file. Rollouts are
// rollout-<time>-<uuid>.jsonl (one {"timestamp","type","payload"} record a
// line; before mid-2025 the records were the payloads themselves, after a
// first line of session metadata) or, from the first versions,
// rollout-<time>-<uuid>.json ({"session": {...}, "items": [...]}).
func Codex(dir string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("codex history: %w", err)
	}
	var paths []string
	if !fi.IsDir() {
		paths = []string{dir}
	} else {
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir {
					return err
				}
				return nil
			}
			name := d.Name()
			if d.IsDir() {
				if p != dir && strings.HasPrefix(name, ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasPrefix(name, "rollout-") && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json")) && d.Type().IsRegular() {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("codex history: %w", err)
		}
	}
	sort.Strings(paths)
	items := make([]Item, len(paths))
	for i, p := range paths {
		items[i] = Item{Path: p, read: func() (Session, []Problem, error) { return readCodex(p, opts.maxPart()) },
			follow: codexFollow(p, opts.maxPart())}
	}
	return items, nil
}

var rolloutUUID = regexp.MustCompile(`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func readCodex(path string, maxPart int) (Session, []Problem, error) {
	r := newCodexReader(path, maxPart)
	if strings.HasSuffix(path, ".json") {
		return r.legacy()
	}
	if err := readLines(path, r.line); err != nil {
		return Session{}, r.probs, err
	}
	return r.finish(), r.probs, nil
}

// cxLine is one rollout line: a record, or (before the wrapper) a payload.
type cxLine struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	// Pre-wrapper rollouts: the first line is the session's metadata, later
	// lines are response items or {"record_type": "state"}.
	ID         string          `json:"id"`
	RecordType string          `json:"record_type"`
	Git        json.RawMessage `json:"git"`
}

type cxMeta struct {
	ID            string `json:"id"`
	Timestamp     string `json:"timestamp"`
	Cwd           string `json:"cwd"`
	ModelProvider string `json:"model_provider"`
	Git           *struct {
		Branch string `json:"branch"`
	} `json:"git"`
}

// cxItem is a response item (payload of response_item, or a legacy item).
type cxItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   []cxContent     `json:"content"`
	Summary   []cxContent     `json:"summary"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"` // function_call: a JSON string holding the arguments
	Input     json.RawMessage `json:"input"`     // custom_tool_call: free text (a patch)
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Timestamp string          `json:"timestamp"` // legacy items
}

type cxContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type cxEvent struct {
	Type string `json:"type"`
	Info *struct {
		Total *cxUsage `json:"total_token_usage"`
		Last  *cxUsage `json:"last_token_usage"`
	} `json:"info"`
}

type cxUsage struct {
	Input  float64 `json:"input_tokens"`
	Output float64 `json:"output_tokens"`
}

// codexReader accumulates one rollout, a line at a time.
type codexReader struct {
	path    string
	maxPart int
	s       Session
	probs   []Problem
	metaSet bool
	first   time.Time
	last    time.Time
	model   string         // the current turn's model
	prompt  string         // first real prompt
	lastMsg string         // the text of the last user prompt, for the re-send after an abort
	aborted bool           // a turn was aborted since that prompt
	calls   map[string]int // call_id -> index in s.Messages
	answer  int            // index of the last assistant message, -1 before any: token counts go to it
	total   *cxUsage
}

func newCodexReader(path string, maxPart int) *codexReader {
	r := &codexReader{path: path, maxPart: maxPart, calls: map[string]int{}, answer: -1}
	r.s = Session{Source: SourceCodex}
	if m := rolloutUUID.FindString(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".jsonl"), ".json")); m != "" {
		r.s.ExternalID = m // until the metadata says otherwise
	}
	return r
}

func (r *codexReader) problem(n int, format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Line: n, Err: fmt.Sprintf(format, args...)})
}

func (r *codexReader) time(n int, s string) time.Time {
	if s == "" {
		return r.last
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		r.problem(n, "timestamp %q is not an ISO time; the line takes the previous one", s)
		return r.last
	}
	if r.first.IsZero() {
		r.first = t
	}
	r.last = t
	return t
}

func (r *codexReader) line(n int, raw []byte) {
	var l cxLine
	if err := json.Unmarshal(raw, &l); err != nil {
		r.problem(n, "skipped: not a rollout line: %s", jsonError(err))
		return
	}
	at := r.time(n, l.Timestamp)
	if len(l.Payload) == 0 {
		// A pre-wrapper rollout: the metadata, a state record, or an item.
		switch {
		case l.RecordType != "":
		case l.Type == "" && l.ID != "":
			var m cxMeta
			if err := json.Unmarshal(raw, &m); err == nil {
				r.meta(m)
			}
		case l.Type != "":
			var it cxItem
			if err := json.Unmarshal(raw, &it); err != nil {
				r.problem(n, "skipped: not a response item: %s", jsonError(err))
				return
			}
			r.item(n, it, at)
		}
		return
	}
	switch l.Type {
	case "session_meta":
		var m cxMeta
		if err := json.Unmarshal(l.Payload, &m); err != nil {
			r.problem(n, "skipped: session_meta: %s", jsonError(err))
			return
		}
		r.meta(m)
	case "turn_context":
		var tc struct {
			Model string `json:"model"`
			Cwd   string `json:"cwd"`
		}
		if json.Unmarshal(l.Payload, &tc) == nil {
			if tc.Model != "" {
				r.model = tc.Model
				if r.s.Model == "" {
					r.s.Model = tc.Model
				}
			}
			if r.s.ProjectPath == "" {
				r.s.ProjectPath = tc.Cwd
			}
		}
	case "response_item":
		var it cxItem
		if err := json.Unmarshal(l.Payload, &it); err != nil {
			r.problem(n, "skipped: response_item: %s", jsonError(err))
			return
		}
		r.item(n, it, at)
	case "event_msg":
		var ev cxEvent
		if err := json.Unmarshal(l.Payload, &ev); err != nil {
			r.problem(n, "skipped: event_msg: %s", jsonError(err))
			return
		}
		r.event(ev)
	}
	// compacted and other records carry nothing the import keeps.
}

// meta takes the session's metadata. The first wins: a resumed or forked
// rollout repeats another session's metadata after (or before) its own.
func (r *codexReader) meta(m cxMeta) {
	if r.metaSet {
		return
	}
	r.metaSet = true
	if m.ID != "" {
		r.s.ExternalID = m.ID
	}
	if t, err := time.Parse(time.RFC3339Nano, m.Timestamp); err == nil {
		r.s.CreatedAt = t
	}
	if m.Cwd != "" {
		r.s.ProjectPath = m.Cwd
	}
	r.s.Provider = m.ModelProvider
	if m.Git != nil {
		r.s.GitBranch = m.Git.Branch
	}
}

// injected says whether a user text is context Codex adds to the
// conversation rather than something the user typed.
func injected(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "<INSTRUCTIONS>", "# AGENTS.md instructions for ", "<turn_aborted>", "<permissions instructions>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// msgID names a message by its line: rollouts give messages no ids, and a
// rollout only grows, so a line number names the same message on every read.
func (r *codexReader) msgID(n int) string { return r.s.ExternalID + "-L" + strconv.Itoa(n) }

func (r *codexReader) add(m Message) {
	if m.Role == "assistant" {
		r.answer = len(r.s.Messages)
	}
	r.s.Messages = append(r.s.Messages, m)
}

func (r *codexReader) item(n int, it cxItem, at time.Time) {
	if at.IsZero() && it.Timestamp != "" {
		at = r.time(n, it.Timestamp)
	}
	switch it.Type {
	case "message":
		var texts []string
		for _, c := range it.Content {
			if strings.TrimSpace(c.Text) == "" || (it.Role == "user" && injected(c.Text)) {
				continue
			}
			texts = append(texts, c.Text)
		}
		if len(texts) == 0 {
			return
		}
		text := strings.Join(texts, "\n\n")
		switch it.Role {
		case "user":
			if r.aborted && text == r.lastMsg {
				return // Codex sent the prompt of the aborted turn again
			}
			r.lastMsg, r.aborted = text, false
			if r.prompt == "" {
				r.prompt = text
			}
			r.add(Message{ExternalID: r.msgID(n), Role: "user", Parts: []Part{{Type: PartText, Content: truncate(text, r.maxPart)}}, CreatedAt: at})
		case "assistant":
			r.add(Message{ExternalID: r.msgID(n), Role: "assistant", Parts: []Part{{Type: PartText, Content: truncate(text, r.maxPart)}},
				Model: r.model, CreatedAt: at})
		}
		// developer and system messages are Codex's instructions to the model.
	case "reasoning":
		var texts []string
		for _, c := range it.Summary {
			if strings.TrimSpace(c.Text) != "" {
				texts = append(texts, c.Text)
			}
		}
		if len(texts) > 0 { // most reasoning is encrypted, with no summary
			r.add(Message{ExternalID: r.msgID(n), Role: "assistant", Parts: []Part{{Type: PartThinking, Text: truncate(strings.Join(texts, "\n\n"), r.maxPart)}},
				Model: r.model, CreatedAt: at})
		}
	case "function_call", "custom_tool_call", "local_shell_call":
		id := it.CallID
		if id == "" {
			id = r.msgID(n)
		}
		if _, dup := r.calls[id]; dup {
			return
		}
		r.calls[id] = len(r.s.Messages)
		r.add(Message{ExternalID: id, Role: "assistant", Parts: []Part{{Type: PartToolCall, ToolName: it.Name, Args: codexArgs(it, r.maxPart)}},
			Model: r.model, CreatedAt: at})
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		out := truncate(text(it.Output), r.maxPart)
		if i, ok := r.calls[it.CallID]; ok {
			m := &r.s.Messages[i]
			m.Parts = append(m.Parts, Part{Type: PartToolResult, ToolName: m.Parts[0].ToolName, Content: out})
			return
		}
		id := it.CallID
		if id == "" {
			id = "L" + strconv.Itoa(n)
		}
		r.add(Message{ExternalID: r.s.ExternalID + "-result-" + id, Role: "tool", Parts: []Part{{Type: PartToolResult, Content: out}}, CreatedAt: at})
	}
}

// codexArgs is a tool call's arguments as JSON: function_call's arguments
// are a JSON string holding JSON; a custom tool's input is free text.
func codexArgs(it cxItem, max int) json.RawMessage {
	raw := it.Arguments
	if len(raw) == 0 {
		raw = it.Input
	}
	if s := text(raw); s != "" && json.Valid([]byte(s)) && bytes.HasPrefix(bytes.TrimSpace([]byte(s)), []byte("{")) {
		return jsonArgs(json.RawMessage(s), max)
	}
	return jsonArgs(raw, max)
}

func (r *codexReader) event(ev cxEvent) {
	switch ev.Type {
	case "turn_aborted":
		r.aborted = true
	case "token_count":
		if ev.Info == nil {
			return
		}
		if ev.Info.Total != nil {
			r.total = ev.Info.Total
		}
		// The counts of the model call that ended with the last answer.
		if u := ev.Info.Last; u != nil && r.answer >= 0 {
			m := &r.s.Messages[r.answer]
			m.PromptTokens, m.CompletionTokens = ptr(round(u.Input)), ptr(round(u.Output))
		}
	}
}

// finish returns the session read so far; the reader can go on.
func (r *codexReader) finish() Session {
	s := r.s
	s.ProjectName = projectName(s.ProjectPath)
	if r.prompt != "" {
		s.Title = Title(r.prompt)
	}
	if r.total != nil {
		s.PromptTokens, s.CompletionTokens = round(r.total.Input), round(r.total.Output)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = r.first
	}
	if !s.CreatedAt.IsZero() && r.last.After(s.CreatedAt) {
		s.DurationMs = r.last.Sub(s.CreatedAt).Milliseconds()
	}
	s.Messages = append([]Message(nil), s.Messages...)
	for i := range s.Messages {
		if s.Messages[i].CreatedAt.IsZero() {
			s.Messages[i].CreatedAt = s.CreatedAt
		}
	}
	return s
}

// legacy reads a rollout-*.json of Codex's first versions:
// {"session": {"id", "timestamp", ...}, "items": [response items]}. Items
// are named by their index.
func (r *codexReader) legacy() (Session, []Problem, error) {
	b, err := os.ReadFile(r.path)
	if err != nil {
		return Session{}, nil, err
	}
	var doc struct {
		Session cxMeta            `json:"session"`
		Items   []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Session{}, nil, fmt.Errorf("not a Codex rollout: %s", jsonError(err))
	}
	r.meta(doc.Session)
	for i, raw := range doc.Items {
		var it cxItem
		if err := json.Unmarshal(raw, &it); err != nil {
			r.probs = append(r.probs, Problem{Path: r.path, Err: fmt.Sprintf("skipped items[%d]: %s", i, jsonError(err))})
			continue
		}
		// Item i takes the id of a line: the numbering of a JSONL rollout.
		r.item(i+1, it, time.Time{})
	}
	return r.finish(), r.probs, nil
}
