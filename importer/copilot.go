package importer

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// SourceCopilot is the source of GitHub Copilot CLI sessions.
const SourceCopilot = "copilot-cli"

// Copilot lists GitHub Copilot CLI sessions. Copilot keeps one event log per
// session under $COPILOT_HOME/session-state (~/.copilot by default), in one
// of two layouts:
//
//	session-state/<id>.jsonl                         older versions (2025)
//	session-state/<id>/events.jsonl, workspace.yaml  newer versions
//
// root is the session-state directory, the directory holding it, or one
// event log. A session directory without events.jsonl (Copilot prunes old
// logs and keeps the directory) has nothing to import.
//
// Each line of a log is an event {type, data, id, timestamp, parentId}:
// session.start (sessionId, startTime, context{cwd, branch} in newer
// versions), user.message, assistant.message (content, reasoningText, model,
// outputTokens, toolRequests), tool.execution_complete (the result of a
// request, by toolCallId), session.shutdown (the run's token counts per
// model), and bookkeeping the import leaves out (system.message, hooks,
// permissions, turn boundaries, session.info and .error).
func Copilot(root string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("copilot history: %w", err)
	}
	if !fi.IsDir() {
		return []Item{copilotItem(root, opts)}, nil
	}
	if isDir(filepath.Join(root, "session-state")) {
		root = filepath.Join(root, "session-state")
	}
	es, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("copilot history: %w", err)
	}
	byID := map[string]string{}
	for _, e := range es {
		name := e.Name()
		switch {
		case e.IsDir():
			if p := filepath.Join(root, name, "events.jsonl"); isFile(p) {
				byID[name] = p
			}
		case strings.HasSuffix(name, ".jsonl") && e.Type().IsRegular():
			id := strings.TrimSuffix(name, ".jsonl")
			if _, dir := byID[id]; !dir && !isFile(filepath.Join(root, id, "events.jsonl")) {
				byID[id] = filepath.Join(root, name)
			}
		}
	}
	paths := make([]string, 0, len(byID))
	for _, p := range byID {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	items := make([]Item, len(paths))
	for i, p := range paths {
		items[i] = copilotItem(p, opts)
	}
	return items, nil
}

func copilotItem(path string, opts ReadOptions) Item {
	return Item{Path: path, read: func() (Session, []Problem, error) { return readCopilot(path, opts.maxPart()) },
		follow: copilotFollow(path, opts.maxPart())}
}

type cpEvent struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Data      json.RawMessage `json:"data"`
}

type cpData struct {
	// session.start
	SessionID string `json:"sessionId"`
	StartTime string `json:"startTime"`
	Context   *struct {
		Cwd    string `json:"cwd"`
		Branch string `json:"branch"`
	} `json:"context"`
	// session.model_change
	NewModel string `json:"newModel"`
	// user.message, assistant.message
	Content       string  `json:"content"`
	Source        string  `json:"source"`
	Model         string  `json:"model"`
	ReasoningText string  `json:"reasoningText"`
	OutputTokens  float64 `json:"outputTokens"`
	ToolRequests  []struct {
		ToolCallID string          `json:"toolCallId"`
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
	} `json:"toolRequests"`
	// A sub-agent's events (the task tool's) name the call that started it.
	ParentToolCallID string `json:"parentToolCallId"`
	// tool.execution_complete
	ToolCallID string `json:"toolCallId"`
	Success    *bool  `json:"success"`
	Result     *struct {
		Content string `json:"content"`
	} `json:"result"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
	// session.shutdown
	ModelMetrics map[string]struct {
		Usage struct {
			InputTokens  float64 `json:"inputTokens"`
			OutputTokens float64 `json:"outputTokens"`
		} `json:"usage"`
	} `json:"modelMetrics"`
}

// cpWorkspace is the part of workspace.yaml the import uses.
type cpWorkspace struct {
	ID      string `yaml:"id"`
	Cwd     string `yaml:"cwd"`
	Branch  string `yaml:"branch"`
	Name    string `yaml:"name"`
	Summary string `yaml:"summary"`
}

// The older logs append the time to every prompt.
var cpDatetime = regexp.MustCompile(`\s*<current_datetime>[^<]*</current_datetime>\s*$`)

type cpReader struct {
	path    string
	maxPart int
	s       Session
	probs   []Problem
	model   string
	tools   map[string]int       // toolCallId -> index in s.Messages
	agents  map[string]*SubAgent // parentToolCallId -> the sub-agent it started
	output  int64                // assistant.message outputTokens, summed
	ranOut  bool                 // a session.shutdown gave the run's totals
	first   time.Time
	last    time.Time
}

func newCPReader(path string, maxPart int) *cpReader {
	r := &cpReader{path: path, maxPart: maxPart, tools: map[string]int{}, agents: map[string]*SubAgent{}}
	id := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if id == "events" {
		id = filepath.Base(filepath.Dir(path))
	}
	r.s = Session{ExternalID: id, Source: SourceCopilot}
	return r
}

func readCopilot(path string, maxPart int) (Session, []Problem, error) {
	r := newCPReader(path, maxPart)
	if err := readLines(path, r.line); err != nil {
		return Session{}, r.probs, err
	}
	return r.result(), r.probs, nil
}

// result is the session read so far, with what the newer layout's
// workspace.yaml says of it; the reader can go on.
func (r *cpReader) result() Session {
	if filepath.Base(r.path) == "events.jsonl" {
		r.workspace(filepath.Join(filepath.Dir(r.path), "workspace.yaml"))
	}
	return r.finish()
}

func (r *cpReader) problem(n int, format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Line: n, Err: fmt.Sprintf(format, args...)})
}

func (r *cpReader) line(n int, raw []byte) {
	var ev cpEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		r.problem(n, "skipped: not an event: %s", jsonError(err))
		return
	}
	var d cpData
	if len(ev.Data) > 0 {
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			r.problem(n, "skipped %s event: data: %s", ev.Type, jsonError(err))
			return
		}
	}
	at, err := time.Parse(time.RFC3339Nano, ev.Timestamp)
	if err != nil {
		at = r.last
	} else {
		if r.first.IsZero() {
			r.first = at
		}
		r.last = at
	}
	switch ev.Type {
	case "session.start":
		if d.SessionID != "" {
			r.s.ExternalID = d.SessionID
		}
		if t, err := time.Parse(time.RFC3339Nano, d.StartTime); err == nil {
			r.s.CreatedAt = t
		}
		if d.Context != nil {
			r.s.ProjectPath, r.s.GitBranch = d.Context.Cwd, d.Context.Branch
		}
	case "session.model_change":
		r.model = d.NewModel
	case "user.message":
		r.user(n, ev, d, at)
	case "assistant.message":
		r.assistant(n, ev, d, at)
	case "tool.execution_complete":
		r.toolResult(ev, d, at)

	case "session.shutdown":
		for _, m := range d.ModelMetrics {
			r.s.PromptTokens += round(m.Usage.InputTokens)
			r.s.CompletionTokens += round(m.Usage.OutputTokens)
		}
		r.ranOut = true
	}
}

// subAgent is the sub-agent that the tool call id started (Copilot's task
// tool): named by the call, typed by its tool, described by its
// arguments' description when the call is in the log.
func (r *cpReader) subAgent(id string) *SubAgent {
	if id == "" {
		return nil
	}
	if a := r.agents[id]; a != nil {
		return a
	}
	a := &SubAgent{ID: id}
	if i, ok := r.tools[id]; ok {
		call := r.s.Messages[i].Parts[0]
		a.Type = call.ToolName
		var args struct {
			Description string `json:"description"`
			AgentType   string `json:"agent_type"`
		}
		if json.Unmarshal(call.Args, &args) == nil {
			a.Description = args.Description
			if args.AgentType != "" {
				a.Type = args.AgentType
			}
		}
	}
	r.agents[id] = a
	return a
}

func (r *cpReader) id(ev cpEvent, n int) string {
	if ev.ID != "" {
		return ev.ID
	}
	return fmt.Sprintf("%s-L%d", r.s.ExternalID, n)
}

func (r *cpReader) user(n int, ev cpEvent, d cpData, at time.Time) {
	// Prompts the user typed have no source or "user"; the rest is Copilot's
	// machinery (autopilot and skill injections, sub-agents' briefs) or a
	// runtime notice.
	if (d.Source != "" && d.Source != "user") || strings.HasPrefix(strings.TrimSpace(d.Content), "<system_notification>") {
		return
	}
	text := strings.TrimSpace(cpDatetime.ReplaceAllString(d.Content, ""))
	if text == "" {
		return
	}
	r.s.Messages = append(r.s.Messages, Message{
		ExternalID: r.id(ev, n), Role: "user",
		Parts:     []Part{{Type: PartText, Content: truncate(text, r.maxPart)}},
		CreatedAt: at,
	})
}

func (r *cpReader) assistant(n int, ev cpEvent, d cpData, at time.Time) {
	model := d.Model
	if model == "" {
		model = r.model
	}
	if r.s.Model == "" {
		r.s.Model = model
	}
	out := round(d.OutputTokens)
	r.output += out
	var parts []Part
	if strings.TrimSpace(d.ReasoningText) != "" {
		parts = append(parts, Part{Type: PartThinking, Text: truncate(d.ReasoningText, r.maxPart)})
	}
	if strings.TrimSpace(d.Content) != "" {
		parts = append(parts, Part{Type: PartText, Content: truncate(d.Content, r.maxPart)})
	}
	tokens := func(m *Message) {
		if out > 0 {
			m.CompletionTokens, out = ptr(out), 0
		}
	}
	agent := r.subAgent(d.ParentToolCallID)
	if len(parts) > 0 {
		m := Message{ExternalID: r.id(ev, n), Role: "assistant", Parts: parts, Model: model, CreatedAt: at, SubAgent: agent}
		tokens(&m)
		r.s.Messages = append(r.s.Messages, m)
	}
	for i, tr := range d.ToolRequests {
		id := tr.ToolCallID
		if id == "" {
			id = fmt.Sprintf("%s-tool-%d", r.id(ev, n), i)
		}
		if _, dup := r.tools[id]; dup {
			continue
		}
		args := tr.Arguments
		if len(bytes.TrimSpace(args)) > 0 && args[0] == '"' {
			// apply_patch takes the patch as a string.
			var s string
			json.Unmarshal(args, &s)
			args, _ = json.Marshal(map[string]string{"input": s})
		}
		m := Message{ExternalID: id, Role: "assistant", Model: model, CreatedAt: at, SubAgent: agent,
			Parts: []Part{{Type: PartToolCall, ToolName: tr.Name, Args: jsonArgs(args, r.maxPart)}}}
		tokens(&m)
		r.tools[id] = len(r.s.Messages)
		r.s.Messages = append(r.s.Messages, m)
	}
}

func (r *cpReader) toolResult(ev cpEvent, d cpData, at time.Time) {
	out := ""
	if d.Result != nil {
		out = d.Result.Content
	}
	if d.Success != nil && !*d.Success && d.Error != nil {
		out = "Error: " + d.Error.Message
	}
	i, ok := r.tools[d.ToolCallID]
	if !ok {
		// The request is not in this log (truncated away): the result alone.
		r.s.Messages = append(r.s.Messages, Message{
			ExternalID: r.s.ExternalID + "-result-" + cmp.Or(d.ToolCallID, ev.ID), Role: "tool",
			Parts:     []Part{{Type: PartToolResult, Content: truncate(out, r.maxPart)}},
			CreatedAt: at, SubAgent: r.subAgent(d.ParentToolCallID),
		})
		return
	}
	m := &r.s.Messages[i]
	m.Parts = append(m.Parts, Part{Type: PartToolResult, ToolName: m.Parts[0].ToolName, Content: truncate(out, r.maxPart)})
}

// workspace reads the session directory's workspace.yaml: the title, and the
// project and branch when the log has no context.
func (r *cpReader) workspace(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return // older sessions have none
	}
	var w cpWorkspace
	if err := yaml.Unmarshal(b, &w); err != nil {
		r.probs = append(r.probs, Problem{Path: path, Err: "workspace.yaml skipped: " + err.Error()})
		return
	}
	r.s.Title = w.Name
	if r.s.Title == "" {
		r.s.Title = w.Summary
	}
	if r.s.ProjectPath == "" {
		r.s.ProjectPath = w.Cwd
	}
	if r.s.GitBranch == "" {
		r.s.GitBranch = w.Branch
	}
}

func (r *cpReader) finish() Session {
	s := r.s
	if !r.ranOut {
		s.CompletionTokens = r.output // no shutdown: the run's input is unknown
	}
	s.ProjectName = projectName(s.ProjectPath)
	if s.CreatedAt.IsZero() {
		s.CreatedAt = r.first
	}
	if !s.CreatedAt.IsZero() && r.last.After(s.CreatedAt) {
		s.DurationMs = r.last.Sub(s.CreatedAt).Milliseconds()
	}
	if s.Title == "" {
		for _, m := range s.Messages {
			if m.Role == "user" {
				s.Title = Title(m.Text())
				break
			}
		}
	}
	for i := range s.Messages {
		if s.Messages[i].CreatedAt.IsZero() {
			s.Messages[i].CreatedAt = s.CreatedAt
		}
	}
	return s
}

// copilotRoots: Copilot CLI keeps $COPILOT_HOME/session-state,
// ~/.copilot/session-state by default, on every system
// (%USERPROFILE%\.copilot on Windows).
func copilotRoots(home, _ string, getenv func(string) string) []string {
	if d := getenv("COPILOT_HOME"); d != "" {
		return []string{filepath.Join(d, "session-state"), filepath.Join(home, ".copilot", "session-state")}
	}
	return []string{filepath.Join(home, ".copilot", "session-state")}
}
