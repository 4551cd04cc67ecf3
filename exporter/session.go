package exporter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hindsight-dev/hindsight/kv"
)

// sessionHeader is the "session" object of the json format: the three fields
// decisions.md names, then the totals a reader of the file wants.
type sessionHeader struct {
	ID               string  `json:"id"`
	Title            string  `json:"title"`
	Model            string  `json:"model"`
	Source           string  `json:"source"`
	ProjectName      string  `json:"projectName,omitempty"`
	ProjectPath      string  `json:"projectPath,omitempty"`
	PromptTokens     int64   `json:"promptTokens"`
	CompletionTokens int64   `json:"completionTokens"`
	TotalTokens      int64   `json:"totalTokens"`
	Cost             float64 `json:"cost"`
	MessageCount     int64   `json:"messageCount"`
	CreatedAt        int64   `json:"createdAt"`
	UpdatedAt        int64   `json:"updatedAt"`
}

// WriteSession writes one session in format f, reading its messages once, in
// order, from msgs. Every message is kept, whatever its role (json and jsonl
// write "" for a message without text; markdown says "(no text)").
//
//   - json: {"session": {"id","title","model",...}, "messages": [{"role","content"}...]},
//     one message per line.
//   - jsonl: one {"role","content"} object per line.
//   - markdown: "# title", a header list (project, model, source, tokens,
//     cost, date, id), then "## User" / "## Assistant" / ... sections; text
//     is escaped literal text, tool calls are fenced json blocks and tool
//     results fenced text blocks (with IncludeTools).
//
// It returns the first error of msgs or of w; on error the output is
// incomplete.
func WriteSession(w io.Writer, f SessionFormat, s kv.Session, msgs Messages, opts Options) error {
	opts = opts.withDefaults()
	out := newWriter(w)
	var err error
	switch f {
	case JSON:
		err = writeSessionJSON(out, s, msgs, opts)
	case JSONL:
		err = msgs(func(m kv.Message) error {
			writeRoleContent(out, m.Role, MessageText(m, opts))
			out.raw("\n")
			return out.err
		})
	case Markdown:
		err = writeSessionMarkdown(out, s, msgs, opts)
	default:
		return fmt.Errorf("%w %q", ErrUnknownFormat, f)
	}
	return out.finish(err)
}

func writeRoleContent(w *writer, role, content string) {
	w.raw(`{"role":`)
	w.str(role)
	w.raw(`,"content":`)
	w.str(content)
	w.raw("}")
}

func writeSessionJSON(w *writer, s kv.Session, msgs Messages, opts Options) error {
	w.raw(`{"session":`)
	w.value(sessionHeader{
		ID: s.ID, Title: anonymize(s.Title, opts), Model: s.Model, Source: s.Source,
		ProjectName: s.ProjectName, ProjectPath: anonymize(s.ProjectPath, opts),
		PromptTokens: s.PromptTokens, CompletionTokens: s.CompletionTokens, TotalTokens: s.TotalTokens,
		Cost: s.Cost, MessageCount: s.MessageCount, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	})
	w.raw(`,"messages":[`)
	sep := "\n"
	err := msgs(func(m kv.Message) error {
		w.raw(sep)
		sep = ",\n"
		writeRoleContent(w, m.Role, MessageText(m, opts))
		return w.err
	})
	w.raw("\n]}\n")
	return err
}

var roleHeadings = map[string]string{
	"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool", "unknown": "Unknown",
}

func roleHeading(role string) string {
	if h, ok := roleHeadings[role]; ok {
		return h
	}
	return escapeInline(role)
}

func writeSessionMarkdown(w *writer, s kv.Session, msgs Messages, opts Options) error {
	s.Title = anonymize(s.Title, opts)
	title := s.DisplayTitle()
	w.raw("# " + escapeInline(title) + "\n\n")
	item := func(label, value string) {
		if value != "" {
			w.raw("- " + label + ": " + escapeInline(value) + "\n")
		}
	}
	project := s.ProjectName
	if p := anonymize(s.ProjectPath, opts); p != "" {
		project = strings.TrimSpace(project + " (" + p + ")")
	}
	item("Project", project)
	item("Model", s.Model)
	item("Source", s.Source)
	item("Tokens", tokens(s))
	item("Cost", cost(s.Cost))
	item("Created", date(s.CreatedAt))
	item("Session", s.ID)
	w.raw("\n")
	err := msgs(func(m kv.Message) error {
		writeMarkdownMessage(w, m, opts)
		return w.err
	})
	return err
}

// writeMarkdownMessage renders one message section, part by part.
func writeMarkdownMessage(w *writer, m kv.Message, opts Options) {
	w.raw("## " + roleHeading(m.Role) + "\n\n")
	wrote := false
	if !hasTextPart(m) && m.TextContent != nil {
		wrote = writeMarkdownText(w, anonymize(*m.TextContent, opts)) || wrote
	}
	for _, p := range m.Parts {
		switch {
		case p.Type == kv.PartText:
			wrote = writeMarkdownText(w, anonymize(p.Content, opts)) || wrote
		case opts.IncludeTools && p.Type == kv.PartToolCall:
			w.raw("**Tool call:** " + escapeInline(toolName(p)) + "\n\n")
			args, info := prettyJSON(p.Args)
			writeFenced(w, info, anonymize(args, opts))
			wrote = true
		case opts.IncludeTools && p.Type == kv.PartToolResult:
			w.raw("**Tool result:** " + escapeInline(toolName(p)) + "\n\n")
			writeFenced(w, "text", anonymize(p.Content, opts))
			wrote = true
		}
	}
	if !wrote {
		w.raw("(no text)\n\n")
	}
}

func toolName(p kv.Part) string {
	if p.ToolName == "" {
		return "unnamed tool"
	}
	return p.ToolName
}

// prettyJSON indents valid JSON ("json" block); anything else stays as it is
// ("text" block).
func prettyJSON(s string) (string, string) {
	if s = strings.TrimSpace(s); s == "" {
		return "", "json"
	}
	var b bytes.Buffer
	if !json.Valid([]byte(s)) || json.Indent(&b, []byte(s), "", "  ") != nil {
		return s, "text"
	}
	return b.String(), "json"
}

func tokens(s kv.Session) string {
	if s.TotalTokens == 0 && s.PromptTokens == 0 && s.CompletionTokens == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (prompt %d, completion %d)", s.TotalTokens, s.PromptTokens, s.CompletionTokens)
}

func cost(c float64) string { return "$" + strconv.FormatFloat(c, 'f', -1, 64) }

func date(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05 UTC")
}
