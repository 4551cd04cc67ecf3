package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// SourceClaudeCode is the source the Claude Code plugin reports.
const SourceClaudeCode = "claude-code"

// ReadOptions bound what a reader keeps. The zero value takes defaults.
type ReadOptions struct {
	MaxPartBytes int // longest part content; longer is cut with a note. 0 = DefaultMaxPartBytes
}

func (o ReadOptions) maxPart() int {
	if o.MaxPartBytes <= 0 {
		return DefaultMaxPartBytes
	}
	return o.MaxPartBytes
}

// ClaudeCode lists the sessions under dir: Claude Code keeps one JSONL
// transcript per session, ~/.claude/projects/<project-dir>/<session-id>.jsonl.
// dir may also be one project directory or one transcript file. Subagent
// transcripts (agent-*.jsonl, subagents/) carry their parent's session id and
// are not separate sessions; they are left out.
func ClaudeCode(dir string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("claude code history: %w", err)
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
				return nil // an unreadable subdirectory is not worth failing the import
			}
			name := d.Name()
			if d.IsDir() {
				if p != dir && (name == "subagents" || strings.HasPrefix(name, ".")) {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(name, ".jsonl") && !strings.HasPrefix(name, "agent-") && d.Type().IsRegular() {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("claude code history: %w", err)
		}
	}
	sort.Strings(paths)
	items := make([]Item, len(paths))
	for i, p := range paths {
		items[i] = Item{Path: p, read: func() (Session, []Problem, error) { return readClaudeCode(p, opts.maxPart()) }}
	}
	return items, nil
}

// ccLine is one transcript line; only the fields the import uses.
type ccLine struct {
	Type      string     `json:"type"`
	UUID      string     `json:"uuid"`
	Timestamp string     `json:"timestamp"`
	Cwd       string     `json:"cwd"`
	Slug      string     `json:"slug"`
	Summary   string     `json:"summary"`
	IsMeta    bool       `json:"isMeta"`
	Message   *ccMessage `json:"message"`
}

type ccMessage struct {
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *ccUsage        `json:"usage"`
}

type ccUsage struct {
	Input         float64 `json:"input_tokens"`
	CacheCreation float64 `json:"cache_creation_input_tokens"`
	CacheRead     float64 `json:"cache_read_input_tokens"`
	Output        float64 `json:"output_tokens"`
}

type ccBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// ccReader accumulates one transcript.
type ccReader struct {
	path    string
	maxPart int
	s       Session
	probs   []Problem
	u       usage
	first   time.Time // first and last timestamps (the plugin's duration)
	last    time.Time
	prompt  string // first real user prompt
	summary string
	slug    string
	seen    map[string]bool // assistant uuids, the plugin skips repeats
	tools   map[string]int  // tool_use id -> index in s.Messages
	lastAt  time.Time
}

func readClaudeCode(path string, maxPart int) (Session, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, nil, err
	}
	defer f.Close()
	r := &ccReader{path: path, maxPart: maxPart, seen: map[string]bool{}, tools: map[string]int{}}
	r.s = Session{ExternalID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Source: SourceClaudeCode}
	br := bufio.NewReaderSize(f, 1<<20)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			r.line(n, line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Session{}, r.probs, fmt.Errorf("read %s: %w", path, err)
		}
	}
	return r.finish(), r.probs, nil
}

func (r *ccReader) problem(n int, format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Line: n, Err: fmt.Sprintf(format, args...)})
}

func (r *ccReader) line(n int, raw []byte) {
	var l ccLine
	if err := json.Unmarshal(raw, &l); err != nil {
		r.problem(n, "skipped: not a transcript line: %s", jsonError(err))
		return
	}
	var at time.Time
	if l.Timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Timestamp)
		if err != nil {
			r.problem(n, "timestamp %q is not an ISO time; the line takes the previous one", l.Timestamp)
		} else {
			if r.first.IsZero() {
				r.first = t
			}
			r.last, r.lastAt, at = t, t, t
		}
	}
	if at.IsZero() {
		at = r.lastAt
	}
	if r.s.ProjectPath == "" && l.Cwd != "" {
		r.s.ProjectPath = l.Cwd
	}
	if r.slug == "" && l.Slug != "" {
		r.slug = l.Slug
	}
	switch l.Type {
	case "summary":
		if r.summary == "" {
			r.summary = l.Summary
		}
	case "user":
		if l.Message != nil {
			r.user(n, l, at)
		}
	case "assistant":
		if l.Message != nil {
			r.assistant(n, l, at)
		}
	}
}

// blocks decodes message.content: a string is one text block.
func blocks(raw json.RawMessage) ([]ccBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []ccBlock{{Type: "text", Text: s}}, nil
	}
	var bs []ccBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, err
	}
	return bs, nil
}

// isPrompt says whether user text is something the user typed, for the
// title: slash-command wrappers, command output and interruption notes are not.
func isPrompt(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<command-", "<local-command-", "<bash-", "[Request interrupted"} {
		if strings.HasPrefix(t, p) {
			return false
		}
	}
	return t != ""
}

// id names a message. Assistant messages use the transcript uuid, as the
// plugin does; user prompts get "<session>-user-<uuid>" (the plugin's ids for
// them hold the time of sync and cannot be reproduced). Lines without a uuid
// are named by line number, stable while the transcript only grows.
func (r *ccReader) id(uuid, kind string, n int, prefixed bool) string {
	if uuid == "" {
		return r.s.ExternalID + "-" + kind + "-L" + strconv.Itoa(n)
	}
	if prefixed {
		return r.s.ExternalID + "-" + kind + "-" + uuid
	}
	return uuid
}

func (r *ccReader) user(n int, l ccLine, at time.Time) {
	bs, err := blocks(l.Message.Content)
	if err != nil {
		r.problem(n, "skipped: message.content is neither text nor blocks: %s", jsonError(err))
		return
	}
	var texts []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				texts = append(texts, b.Text)
			}
		case "image":
			texts = append(texts, "[image]")
		case "tool_result":
			r.toolResult(n, b, at)
		}
	}
	if len(texts) == 0 || l.IsMeta {
		return // only tool results, or a note Claude Code added (isMeta)
	}
	text := strings.Join(texts, "\n\n")
	if r.prompt == "" && isPrompt(text) {
		r.prompt = text
	}
	r.s.Messages = append(r.s.Messages, Message{
		ExternalID: r.id(l.UUID, "user", n, true),
		Role:       "user",
		Parts:      []Part{{Type: PartText, Content: truncate(text, r.maxPart)}},
		CreatedAt:  at,
	})
}

// resultText flattens a tool_result's content: a string, or blocks of text
// (images become a placeholder).
func resultText(raw json.RawMessage) string {
	bs, err := blocks(raw)
	if err != nil {
		return string(raw) // an unexpected shape is kept as its JSON
	}
	var out []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			out = append(out, b.Text)
		case "image":
			out = append(out, "[image]")
		}
	}
	return strings.Join(out, "\n")
}

func (r *ccReader) toolResult(n int, b ccBlock, at time.Time) {
	content := truncate(resultText(b.Content), r.maxPart)
	if i, ok := r.tools[b.ToolUseID]; ok {
		m := &r.s.Messages[i]
		m.Parts = append(m.Parts, Part{Type: PartToolResult, ToolName: m.Parts[0].ToolName, Content: content})
		return
	}
	// The call is not in this file (a compacted or resumed session): keep the
	// result as a tool message of its own.
	id := b.ToolUseID
	if id == "" {
		id = "L" + strconv.Itoa(n)
	}
	r.s.Messages = append(r.s.Messages, Message{
		ExternalID: r.s.ExternalID + "-result-" + id,
		Role:       "tool",
		Parts:      []Part{{Type: PartToolResult, Content: content}},
		CreatedAt:  at,
	})
}

func (r *ccReader) assistant(n int, l ccLine, at time.Time) {
	msg := l.Message
	if r.s.Model == "" && msg.Model != "" && msg.Model != "<synthetic>" {
		r.s.Model = msg.Model
	}
	// The plugin counts each uuid once, usage included.
	if l.UUID != "" {
		if r.seen[l.UUID] {
			return
		}
		r.seen[l.UUID] = true
	}
	if u := msg.Usage; u != nil {
		r.u.input += round(u.Input)
		r.u.cacheCreation += round(u.CacheCreation)
		r.u.cacheRead += round(u.CacheRead)
		r.u.output += round(u.Output)
	}
	bs, err := blocks(msg.Content)
	if err != nil {
		r.problem(n, "message.content is neither text nor blocks, kept the token counts only: %s", jsonError(err))
		return
	}
	var parts []Part
	var calls []Message
	for i, b := range bs {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				parts = append(parts, Part{Type: PartText, Content: truncate(b.Text, r.maxPart)})
			}
		case "thinking":
			if strings.TrimSpace(b.Thinking) != "" {
				parts = append(parts, Part{Type: PartThinking, Text: truncate(b.Thinking, r.maxPart)})
			}
		case "tool_use":
			id := b.ID
			if id == "" {
				id = r.s.ExternalID + "-tool-L" + strconv.Itoa(n) + "-" + strconv.Itoa(i)
			}
			calls = append(calls, Message{
				ExternalID: id,
				Role:       "assistant",
				Parts:      []Part{{Type: PartToolCall, ToolName: b.Name, Args: jsonArgs(b.Input, r.maxPart)}},
				Model:      msg.Model,
				CreatedAt:  at,
			})
		}
	}
	if len(parts) > 0 {
		r.s.Messages = append(r.s.Messages, Message{
			ExternalID: r.id(l.UUID, "assistant", n, false),
			Role:       "assistant",
			Parts:      parts,
			Model:      msg.Model,
			CreatedAt:  at,
		})
	}
	for _, c := range calls {
		if _, dup := r.tools[c.ExternalID]; dup {
			continue
		}
		r.tools[c.ExternalID] = len(r.s.Messages)
		r.s.Messages = append(r.s.Messages, c)
	}
}

func round(v float64) int64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return int64(math.Round(v))
}

func (r *ccReader) finish() Session {
	s := r.s
	s.ProjectName = projectName(s.ProjectPath)
	switch {
	case r.prompt != "":
		s.Title = Title(r.prompt)
	case r.summary != "":
		s.Title = r.summary
	case r.slug != "":
		s.Title = r.slug
	}
	s.PromptTokens = r.u.input + r.u.cacheCreation + r.u.cacheRead
	s.CompletionTokens = r.u.output
	s.Cost = claudeCost(s.Model, r.u)
	if !r.first.IsZero() {
		s.CreatedAt = r.first
		s.DurationMs = max(0, r.last.Sub(r.first).Milliseconds())
	}
	// A message before the first timestamped line takes the session's start.
	for i := range s.Messages {
		if s.Messages[i].CreatedAt.IsZero() {
			s.Messages[i].CreatedAt = s.CreatedAt
		}
	}
	return s
}

// jsonError shortens encoding/json's messages for reports.
func jsonError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s (byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s is %s, want %s", te.Field, te.Value, te.Type)
		}
		return fmt.Sprintf("a JSON %s, want %s", te.Value, te.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
