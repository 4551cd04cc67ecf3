package importer

import (
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

// SourceQwen is the source of Qwen Code sessions.
const SourceQwen = "qwen-code"

// Qwen lists Qwen Code's sessions under dir: ~/.qwen, its projects/, one
// project directory, or one session file. Qwen Code keeps one JSONL file a
// session, projects/<sanitised cwd>/chats/<session id>.jsonl, with records
// shaped like Claude Code's (uuid, parentUuid, sessionId, timestamp, type,
// cwd, gitBranch) around a message in Gemini's shape (role, parts).
func Qwen(dir string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("qwen history: %w", err)
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
			if d.IsDir() {
				if p != dir && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasSuffix(d.Name(), ".jsonl") && filepath.Base(filepath.Dir(p)) == "chats" && d.Type().IsRegular() {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("qwen history: %w", err)
		}
	}
	sort.Strings(paths)
	items := make([]Item, len(paths))
	for i, p := range paths {
		items[i] = Item{Path: p, read: func() (Session, []Problem, error) {
			r := newQwenReader(p, opts.maxPart())
			if err := readLines(p, r.line); err != nil {
				return Session{}, r.probs, err
			}
			return r.finish(), r.probs, nil
		}, follow: qwenFollow(p, opts.maxPart())}
	}
	return items, nil
}

type qwLine struct {
	UUID      string `json:"uuid"`
	SessionID string `json:"sessionId"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	Cwd       string `json:"cwd"`
	GitBranch string `json:"gitBranch"`
	Model     string `json:"model"`
	Message   *struct {
		Parts []qwPart `json:"parts"`
	} `json:"message"`
	Usage *struct {
		Prompt     float64 `json:"promptTokenCount"`
		Candidates float64 `json:"candidatesTokenCount"`
		Thoughts   float64 `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	ToolCallResult *struct {
		ResultDisplay json.RawMessage `json:"resultDisplay"`
	} `json:"toolCallResult"`
}

type qwPart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// qwenReader accumulates one session, a line at a time.
type qwenReader struct {
	path    string
	maxPart int
	s       Session
	probs   []Problem
	prompt  string
	first   time.Time
	last    time.Time
	seen    map[string]bool // record uuids: a repeated record is skipped
	named   bool
}

func newQwenReader(path string, maxPart int) *qwenReader {
	r := &qwenReader{path: path, maxPart: maxPart, seen: map[string]bool{}}
	r.s = Session{ExternalID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Source: SourceQwen}
	return r
}

func (r *qwenReader) line(n int, raw []byte) {
	var l qwLine
	if err := json.Unmarshal(raw, &l); err != nil {
		r.probs = append(r.probs, Problem{Path: r.path, Line: n, Err: "skipped: not a session line: " + jsonError(err)})
		return
	}
	at, err := time.Parse(time.RFC3339Nano, l.Timestamp)
	if err != nil {
		at = r.last
	} else {
		if r.first.IsZero() {
			r.first = at
		}
		r.last = at
	}
	if l.SessionID != "" && !r.named {
		r.s.ExternalID, r.named = l.SessionID, true // the first line that names the session names it
	}
	if r.s.ProjectPath == "" {
		r.s.ProjectPath = l.Cwd
	}
	if r.s.GitBranch == "" {
		r.s.GitBranch = l.GitBranch
	}
	if l.Message == nil || (l.UUID != "" && r.seen[l.UUID]) {
		return // system records: telemetry, slash commands
	}
	r.seen[l.UUID] = true
	id := l.UUID
	if id == "" {
		id = r.s.ExternalID + "-L" + strconv.Itoa(n)
	}
	m := Message{ExternalID: id, CreatedAt: at}
	switch l.Type {
	case "user":
		m.Role = "user"
		var texts []string
		for _, p := range l.Message.Parts {
			if strings.TrimSpace(p.Text) != "" && !p.Thought {
				texts = append(texts, p.Text)
			}
		}
		if len(texts) == 0 {
			return
		}
		text := strings.Join(texts, "\n\n")
		if r.prompt == "" {
			r.prompt = text
		}
		m.Parts = []Part{{Type: PartText, Content: truncate(text, r.maxPart)}}
	case "assistant":
		m.Role, m.Model = "assistant", l.Model
		if r.s.Model == "" {
			r.s.Model = l.Model
		}
		for _, p := range l.Message.Parts {
			switch {
			case p.FunctionCall != nil:
				m.Parts = append(m.Parts, Part{Type: PartToolCall, ToolName: p.FunctionCall.Name, Args: jsonArgs(p.FunctionCall.Args, r.maxPart)})
			case strings.TrimSpace(p.Text) == "":
			case p.Thought:
				m.Parts = append(m.Parts, Part{Type: PartThinking, Text: truncate(p.Text, r.maxPart)})
			default:
				m.Parts = append(m.Parts, Part{Type: PartText, Content: truncate(p.Text, r.maxPart)})
			}
		}
		if u := l.Usage; u != nil {
			in, out := round(u.Prompt), round(u.Candidates)+round(u.Thoughts)
			m.PromptTokens, m.CompletionTokens = ptr(in), ptr(out)
			r.s.PromptTokens += in
			r.s.CompletionTokens += out
		}
	case "tool_result":
		m.Role = "tool"
		for _, p := range l.Message.Parts {
			if p.FunctionResponse == nil {
				continue
			}
			var resp struct {
				Output json.RawMessage `json:"output"`
				Error  json.RawMessage `json:"error"`
			}
			json.Unmarshal(p.FunctionResponse.Response, &resp)
			out := text(resp.Output)
			if out == "" && text(resp.Error) != "" {
				out = "Error: " + text(resp.Error)
			}
			if out == "" && l.ToolCallResult != nil {
				out = text(l.ToolCallResult.ResultDisplay)
			}
			m.Parts = append(m.Parts, Part{Type: PartToolResult, ToolName: p.FunctionResponse.Name, Content: truncate(out, r.maxPart)})
		}
	default:
		return
	}
	if len(m.Parts) > 0 {
		r.s.Messages = append(r.s.Messages, m)
	}
}

func (r *qwenReader) finish() Session {
	s := r.s
	s.Messages = append([]Message(nil), s.Messages...)
	s.ProjectName = projectName(s.ProjectPath)
	if r.prompt != "" {
		s.Title = Title(r.prompt)
	}
	s.CreatedAt = r.first
	if !r.first.IsZero() {
		s.DurationMs = r.last.Sub(r.first).Milliseconds()
	}
	for i := range s.Messages {
		if s.Messages[i].CreatedAt.IsZero() {
			s.Messages[i].CreatedAt = s.CreatedAt
		}
	}
	return s
}
