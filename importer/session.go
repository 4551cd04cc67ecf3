package importer

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Session is one conversation read from local history, in the shape the sync
// API takes.
type Session struct {
	ExternalID       string
	Source           string // the Agent's Source: claude-code, codex-cli, opencode, ...
	Title            string
	ProjectPath      string
	ProjectName      string
	GitBranch        string // the branch checked out when the session started; "" if unknown
	Model            string
	Provider         string
	PromptTokens     int64
	CompletionTokens int64
	Cost             float64
	DurationMs       int64
	CreatedAt        time.Time // when the conversation started; zero if unknown
	Messages         []Message
}

// Message is one message of a Session.
type Message struct {
	ExternalID       string
	Role             string // user, assistant, system, tool
	Parts            []Part
	Model            string
	PromptTokens     *int64
	CompletionTokens *int64
	DurationMs       *int64
	CreatedAt        time.Time // zero if unknown
	// SubAgent marks a message a sub-agent wrote inside the session (Claude
	// Code's Task agents, Gemini's sub-agents); nil for the session's own.
	SubAgent *SubAgent
}

// SubAgent names the sub-agent a message comes from. It travels as a part
// of type "subagent" appended to the message's parts ({"type":"subagent",
// "agentId", "agentType", "description"}): the server stores and returns it
// as sent, and a part of that type is never searchable, so the message's
// text stays searchable exactly as if the session had written it.
type SubAgent struct {
	ID          string `json:"agentId,omitempty"`     // the assistant's id for the agent run
	Type        string `json:"agentType,omitempty"`   // e.g. Explore, general-purpose
	Description string `json:"description,omitempty"` // the task the session gave it
}

// Part is a message part as the sync API takes it. Text and tool-result parts
// use Content; tool-call parts ToolName and Args (JSON); thinking parts Text.
type Part struct {
	Type     string          `json:"type"`
	Content  string          `json:"content,omitempty"`
	Text     string          `json:"text,omitempty"`
	ToolName string          `json:"toolName,omitempty"`
	Args     json.RawMessage `json:"args,omitempty"`
}

// Part types the readers produce.
const (
	PartText       = "text"
	PartToolCall   = "tool-call"
	PartToolResult = "tool-result"
	PartThinking   = "thinking"
	PartSubAgent   = "subagent" // the mark of a sub-agent's message (SubAgent)
)

// Text returns the message's text parts joined by blank lines: what the
// server makes searchable for user and assistant messages.
func (m Message) Text() string {
	var parts []string
	for _, p := range m.Parts {
		if p.Type == PartText {
			parts = append(parts, p.Content)
		}
	}
	return strings.Join(parts, "\n\n")
}

// toolResults counts the message's tool-result parts.
func (m Message) toolResults() int {
	n := 0
	for _, p := range m.Parts {
		if p.Type == PartToolResult {
			n++
		}
	}
	return n
}

// Problem is malformed input that was reported and skipped.
type Problem struct {
	Path string
	Line int // 1-based; 0 when the problem concerns the whole file
	Err  string
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Err)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Err)
}

// Item is one session in local history, read on demand.
type Item struct {
	Path string // the file that defines the session
	read func() (Session, []Problem, error)
	// follow is set for sessions written as JSONL that only grows: the
	// Watcher feeds their reader what is appended (follow.go). Others are
	// re-read whole when they change.
	follow *followSpec
}

// Read parses the session. Problems are parts of the input that were skipped;
// an error means the session as a whole could not be read.
func (it Item) Read() (Session, []Problem, error) { return it.read() }

// DefaultMaxPartBytes bounds one part's content (tool output, file dumps).
// The server's default limit is 1 MiB per part; staying well below keeps
// batches small and leaves room for a server configured lower.
const DefaultMaxPartBytes = 256 << 10

// truncate cuts s to at most max bytes on a UTF-8 boundary and says how much
// was cut, so a huge tool output still imports.
func truncate(s string, max int) string {
	return truncateSized(s, max, int64(len(s)))
}

// Truncate is the cut every reader applies to a part's content: s when it
// fits in max bytes, else its start, cut on a UTF-8 boundary, with a note
// of the original size, max bytes in all. Code that builds sessions
// outside the readers (the relevance bench) cuts with it, so its sessions
// are the ones `hindsight import` would send.
func Truncate(s string, max int) string { return truncate(s, max) }

// truncateSized is truncate for s, the start of a text of size bytes.
func truncateSized(s string, max int, size int64) string {
	if max <= 0 || int64(len(s)) >= size && len(s) <= max {
		return s
	}
	note := fmt.Sprintf("\n[... cut by hindsight import; the original has %d bytes]", size)
	cut := max - len(note)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note
}

// jsonArgs returns a tool call's arguments as JSON, as a JSON string holding
// a truncated text when the arguments are larger than max.
func jsonArgs(raw json.RawMessage, max int) json.RawMessage {
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	if len(raw) <= max {
		return raw
	}
	b, _ := json.Marshal(truncate(string(raw), max))
	return b
}

// Title makes a session title from the first prompt the way the Claude Code
// plugin does: the first 80 characters (UTF-16 units, as JavaScript counts
// them), cut back to the last space when that is past character 40, with
// "..." when the prompt was longer.
func Title(prompt string) string {
	u := utf16.Encode([]rune(prompt))
	head := u
	if len(head) > 80 {
		head = head[:80]
	}
	trimmed := utf16.Encode([]rune(strings.TrimSpace(string(utf16.Decode(head)))))
	if len(u) > 80 {
		last := -1
		for i := len(trimmed) - 1; i >= 0; i-- {
			if trimmed[i] == ' ' {
				last = i
				break
			}
		}
		if last > 40 {
			return string(utf16.Decode(trimmed[:last])) + "..."
		}
		return string(utf16.Decode(trimmed)) + "..."
	}
	return string(utf16.Decode(trimmed))
}

// projectName is the last element of a project path, as the plugins send it
// (path.basename on the system the assistant ran on: a Windows path splits
// at backslashes wherever it is imported).
func projectName(path string) string {
	path = strings.TrimRight(path, `/\`)
	if path == "" {
		return ""
	}
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

func ptr[T any](v T) *T { return &v }
