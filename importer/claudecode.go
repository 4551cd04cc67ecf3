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

// ClaudeCode lists the sessions under dir, Claude Code's
// ~/.claude/projects, one project directory of it, or one transcript file.
// A project directory holds:
//
//	<session>.jsonl                          one session's transcript
//	agent-<id>.jsonl                         a sub-agent's transcript (2.0.x); its lines name the session
//	<session>/subagents/agent-<id>.jsonl     a sub-agent's transcript (2.1.x), with agent-<id>.meta.json
//	<session>/tool-results/<tool_use_id>.txt a tool output too large for the transcript (2.1.x)
//
// Sub-agent transcripts and externalised tool results belong to their
// session: they are read into it (sub-agents' messages marked with
// Message.SubAgent), never listed as sessions of their own. A session whose
// own transcript is gone but whose sub-agents remain is listed under its id
// with only their messages.
func ClaudeCode(dir string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("claude code history: %w", err)
	}
	groups := map[string]*ccGroup{} // by project dir + session id
	group := func(project, sid string) *ccGroup {
		k := filepath.Join(project, sid)
		g := groups[k]
		if g == nil {
			g = &ccGroup{id: sid, dir: filepath.Join(project, sid)}
			groups[k] = g
		}
		return g
	}
	add := func(p string) {
		name := filepath.Base(p)
		parent := filepath.Dir(p)
		switch {
		case filepath.Base(parent) == "subagents" && strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl"):
			sdir := filepath.Dir(parent)
			g := group(filepath.Dir(sdir), filepath.Base(sdir))
			g.agents = append(g.agents, p)
		case filepath.Base(parent) == "tool-results":
			sdir := filepath.Dir(parent)
			g := group(filepath.Dir(sdir), filepath.Base(sdir))
			g.results = append(g.results, p)
		case strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".jsonl"):
			// 2.0.x: the sub-agent's lines carry the session's id.
			sid := firstSessionID(p)
			if sid == "" {
				sid = strings.TrimSuffix(name, ".jsonl")
			}
			g := group(parent, sid)
			g.agents = append(g.agents, p)
		case strings.HasSuffix(name, ".jsonl"):
			g := group(parent, strings.TrimSuffix(name, ".jsonl"))
			g.main = p
		}
	}
	if !fi.IsDir() {
		add(dir)
		// A transcript's sub-agents and tool results sit in the directory
		// named after it.
		if g := groups[strings.TrimSuffix(dir, ".jsonl")]; g != nil {
			for _, sub := range []string{"subagents", "tool-results"} {
				es, _ := os.ReadDir(filepath.Join(g.dir, sub))
				for _, e := range es {
					if e.Type().IsRegular() {
						add(filepath.Join(g.dir, sub, e.Name()))
					}
				}
			}
		}
	} else {
		err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == dir {
					return err
				}
				return nil // an unreadable subdirectory is not worth failing the import
			}
			if d.IsDir() {
				if p != dir && strings.HasPrefix(d.Name(), ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				add(p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("claude code history: %w", err)
		}
	}
	var items []Item
	for _, g := range groups {
		if g.main == "" && len(g.agents) == 0 {
			continue // tool results without a transcript to place them in
		}
		sort.Strings(g.agents)
		sort.Strings(g.results)
		path := g.main
		if path == "" {
			path = g.agents[0]
		}
		items = append(items, Item{Path: path, read: func() (Session, []Problem, error) { return readClaudeCode(g, opts.maxPart()) },
			follow: ccFollow(g, opts.maxPart())})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })
	return items, nil
}

// ccGroup is the files of one session.
type ccGroup struct {
	id      string   // the session id (the transcript's name)
	dir     string   // <project>/<session>: where 2.1.x keeps sub-agents and tool results
	main    string   // the transcript; "" when only sub-agents remain
	agents  []string // sub-agent transcripts
	results []string // externalised tool results
}

// firstSessionID returns the sessionId of the first line of a transcript that
// has one, looking at the first 20 lines ("" if none does).
func firstSessionID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for range 20 {
		line, err := br.ReadBytes('\n')
		var l struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(line, &l) == nil && l.SessionID != "" {
			return l.SessionID
		}
		if err != nil {
			return ""
		}
	}
	return ""
}

// ccLine is one transcript line; only the fields the import uses.
type ccLine struct {
	Type        string     `json:"type"`
	UUID        string     `json:"uuid"`
	Timestamp   string     `json:"timestamp"`
	Cwd         string     `json:"cwd"`
	GitBranch   string     `json:"gitBranch"`
	Slug        string     `json:"slug"`
	Summary     string     `json:"summary"`
	AITitle     string     `json:"aiTitle"`
	IsMeta      bool       `json:"isMeta"`
	IsSidechain bool       `json:"isSidechain"`
	AgentID     string     `json:"agentId"`
	Message     *ccMessage `json:"message"`
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

// ccReader accumulates one session from its transcript and its sub-agents'.
// It is a state machine fed one line at a time (line), so a follower can feed
// it lines appended since the last read.
type ccReader struct {
	maxPart int
	s       Session
	probs   []Problem
	u       usage
	first   time.Time // first and last timestamps of the transcript (the plugin's duration)
	last    time.Time
	prompt  string // first real user prompt
	summary string
	aiTitle string
	slug    string
	seen    map[string]bool   // line uuids: a repeated line (a sub-agent's copy of the session) is skipped
	tools   map[string]int    // tool_use id -> index in s.Messages
	results map[string]string // tool_use id -> externalised output file
	used    map[string]bool   // externalised outputs read into a result

	// The file being read.
	path    string
	agent   *SubAgent // the file's sub-agent; nil for the session's transcript
	lastAt  time.Time
	starts  []int                // index in s.Messages where each run of one file's messages starts
	files   []string             // the file of each run
	lastAts map[string]time.Time // the last time of each file left for another
	// follow: the reader follows files still being written (a Watcher's
	// tail): externalised outputs no line has claimed yet may still be
	// claimed by a line to come, so finish leaves them out.
	follow bool
}

func newCCReader(id string, maxPart int) *ccReader {
	return &ccReader{
		maxPart: maxPart, s: Session{ExternalID: id, Source: SourceClaudeCode},
		seen: map[string]bool{}, tools: map[string]int{}, results: map[string]string{}, used: map[string]bool{},
		lastAts: map[string]time.Time{},
	}
}

// file starts the lines of a file of the session (another, or one read
// before that has grown); agent is its sub-agent, nil for the session's own
// transcript.
func (r *ccReader) file(path string, agent *SubAgent) {
	if r.path != "" {
		r.lastAts[r.path] = r.lastAt
	}
	r.path, r.agent, r.lastAt = path, agent, r.lastAts[path]
	r.starts = append(r.starts, len(r.s.Messages))
	r.files = append(r.files, path)
}

func readClaudeCode(g *ccGroup, maxPart int) (Session, []Problem, error) {
	r := newCCReader(g.id, maxPart)
	for _, p := range g.results {
		r.results[strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))] = p
	}
	if g.main != "" {
		r.file(g.main, nil)
		if err := readLines(g.main, r.line); err != nil {
			return Session{}, r.probs, err
		}
	}
	for _, p := range g.agents {
		r.file(p, subAgentOf(p))
		if err := readLines(p, r.line); err != nil {
			// A sub-agent that cannot be read costs its own messages only.
			r.probs = append(r.probs, Problem{Path: p, Err: "skipped sub-agent: " + err.Error()})
		}
	}
	return r.finish(), r.probs, nil
}

// subAgentOf names the sub-agent of a transcript agent-<id>.jsonl from its
// file name and, in 2.1.x, the agent-<id>.meta.json beside it.
func subAgentOf(path string) *SubAgent {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	a := &SubAgent{ID: strings.TrimPrefix(base, "agent-")}
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(path), base+".meta.json")); err == nil {
		var meta struct {
			AgentType   string `json:"agentType"`
			Description string `json:"description"`
		}
		if json.Unmarshal(b, &meta) == nil {
			a.Type, a.Description = meta.AgentType, meta.Description
		}
	}
	return a
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
	if l.UUID != "" {
		if r.seen[l.UUID] {
			return // the plugin counts each uuid once; a sub-agent's copy of the session is the session's
		}
		r.seen[l.UUID] = true
	}
	own := r.agent == nil
	var at time.Time
	if l.Timestamp != "" {
		t, err := time.Parse(time.RFC3339Nano, l.Timestamp)
		if err != nil {
			r.problem(n, "timestamp %q is not an ISO time; the line takes the previous one", l.Timestamp)
		} else {
			if own {
				if r.first.IsZero() {
					r.first = t
				}
				r.last = t
			}
			r.lastAt, at = t, t
		}
	}
	if at.IsZero() {
		at = r.lastAt
	}
	if r.s.ProjectPath == "" && l.Cwd != "" && (own || len(r.starts) == 1) {
		r.s.ProjectPath = l.Cwd
	}
	if r.s.GitBranch == "" && l.GitBranch != "" && (own || len(r.starts) == 1) {
		r.s.GitBranch = l.GitBranch
	}
	if r.slug == "" && l.Slug != "" && own {
		r.slug = l.Slug
	}
	switch l.Type {
	case "summary":
		if r.summary == "" && own {
			r.summary = l.Summary
		}
	case "ai-title":
		if own && strings.TrimSpace(l.AITitle) != "" {
			r.aiTitle = strings.TrimSpace(l.AITitle) // the latest title Claude Code gave the session
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

// mark is the sub-agent of a line: the file's, or for a sidechain line in
// the session's own transcript (Claude Code before 2.0), its agentId.
func (r *ccReader) mark(l ccLine) *SubAgent {
	if r.agent != nil {
		if r.agent.ID == "" && l.AgentID != "" {
			r.agent.ID = l.AgentID
		}
		return r.agent
	}
	if l.IsSidechain {
		return &SubAgent{ID: l.AgentID}
	}
	return nil
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

// ideContext says whether a text block is context an editor integration
// added to the prompt (the open file, the selection), not what the user typed.
func ideContext(text string) bool {
	t := strings.TrimSpace(text)
	return strings.HasPrefix(t, "<ide_") || strings.HasPrefix(t, "<system-reminder>")
}

// id names a message. Assistant messages use the transcript uuid, as the
// plugin does; user prompts get "<session>-user-<uuid>" (the plugin's ids for
// them hold the time of sync and cannot be reproduced). Lines without a uuid
// are named by file and line number, stable while the transcript only grows.
func (r *ccReader) id(uuid, kind string, n int, prefixed bool) string {
	if uuid == "" {
		id := r.s.ExternalID + "-" + kind + "-L" + strconv.Itoa(n)
		if r.agent != nil {
			id = r.s.ExternalID + "-" + r.agent.ID + "-" + kind + "-L" + strconv.Itoa(n)
		}
		return id
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
	var texts, typed []string
	for _, b := range bs {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				texts = append(texts, b.Text)
				if !ideContext(b.Text) {
					typed = append(typed, b.Text)
				}
			}
		case "image":
			texts, typed = append(texts, "[image]"), append(typed, "[image]")
		case "tool_result":
			r.toolResult(n, l, b, at)
		}
	}
	if len(texts) == 0 || l.IsMeta {
		return // only tool results, or a note Claude Code added (isMeta)
	}
	text := strings.Join(texts, "\n\n")
	mark := r.mark(l)
	if prompt := strings.Join(typed, "\n\n"); r.prompt == "" && mark == nil && isPrompt(prompt) {
		r.prompt = prompt
	}
	r.s.Messages = append(r.s.Messages, Message{
		ExternalID: r.id(l.UUID, "user", n, true),
		Role:       "user",
		Parts:      []Part{{Type: PartText, Content: truncate(text, r.maxPart)}},
		CreatedAt:  at,
		SubAgent:   mark,
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

// externalised returns the whole output of a tool result Claude Code saved
// beside the transcript (tool-results/<tool_use_id>.txt) in place of the
// preview the transcript holds.
func (r *ccReader) externalised(id string) (string, bool) {
	p, ok := r.results[id]
	if !ok {
		return "", false
	}
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	// Read a little past the cap: truncate says how long the original was.
	b, err := io.ReadAll(io.LimitReader(f, int64(r.maxPart)+1))
	if err != nil {
		return "", false
	}
	r.used[id] = true
	s := string(b)
	if len(b) > r.maxPart {
		if fi, err := f.Stat(); err == nil {
			s = truncateSized(s, r.maxPart, fi.Size())
		}
	}
	return s, true
}

func (r *ccReader) toolResult(n int, l ccLine, b ccBlock, at time.Time) {
	content, ok := r.externalised(b.ToolUseID)
	if !ok {
		content = truncate(resultText(b.Content), r.maxPart)
	}
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
		if r.agent != nil {
			id = r.agent.ID + "-" + id
		}
	}
	r.s.Messages = append(r.s.Messages, Message{
		ExternalID: r.s.ExternalID + "-result-" + id,
		Role:       "tool",
		Parts:      []Part{{Type: PartToolResult, Content: content}},
		CreatedAt:  at,
		SubAgent:   r.mark(l),
	})
}

func (r *ccReader) assistant(n int, l ccLine, at time.Time) {
	msg := l.Message
	mark := r.mark(l)
	if r.s.Model == "" && msg.Model != "" && msg.Model != "<synthetic>" && mark == nil {
		r.s.Model = msg.Model
	}
	// The session's totals are the plugin's: the transcript's own usage.
	// A sub-agent's usage stays on its messages.
	var prompt, completion *int64
	if u := msg.Usage; u != nil {
		in, cw, cr, out := round(u.Input), round(u.CacheCreation), round(u.CacheRead), round(u.Output)
		if r.agent == nil {
			r.u.input += in
			r.u.cacheCreation += cw
			r.u.cacheRead += cr
			r.u.output += out
		}
		prompt, completion = ptr(in+cw+cr), ptr(out)
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
				id = r.id("", "tool", n, false) + "-" + strconv.Itoa(i)
			}
			calls = append(calls, Message{
				ExternalID: id,
				Role:       "assistant",
				Parts:      []Part{{Type: PartToolCall, ToolName: b.Name, Args: jsonArgs(b.Input, r.maxPart)}},
				Model:      msg.Model,
				CreatedAt:  at,
				SubAgent:   mark,
			})
		}
	}
	if len(parts) > 0 {
		r.s.Messages = append(r.s.Messages, Message{
			ExternalID:       r.id(l.UUID, "assistant", n, false),
			Role:             "assistant",
			Parts:            parts,
			Model:            msg.Model,
			PromptTokens:     prompt,
			CompletionTokens: completion,
			CreatedAt:        at,
			SubAgent:         mark,
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

// finish returns the session read so far. The reader can go on taking lines.
func (r *ccReader) finish() Session {
	s := r.s
	s.ProjectName = projectName(s.ProjectPath)
	switch {
	case r.aiTitle != "":
		s.Title = r.aiTitle
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
	first, last := r.first, r.last
	if first.IsZero() { // only sub-agents remain: their times
		for _, m := range s.Messages {
			if !m.CreatedAt.IsZero() {
				if first.IsZero() || m.CreatedAt.Before(first) {
					first = m.CreatedAt
				}
				if m.CreatedAt.After(last) {
					last = m.CreatedAt
				}
			}
		}
	}
	if s.Title == "" {
		for _, m := range s.Messages {
			if m.Role == "user" && isPrompt(m.Text()) {
				s.Title = Title(m.Text()) // a sub-agent's task, when nothing else names the session
				break
			}
		}
	}
	if !first.IsZero() {
		s.CreatedAt = first
		s.DurationMs = max(0, last.Sub(first).Milliseconds())
	}
	msgs := make([]Message, 0, len(s.Messages)+len(r.results))
	for _, m := range s.Messages {
		if m.CreatedAt.IsZero() { // a message before the first timestamped line takes the session's start
			m.CreatedAt = s.CreatedAt
		}
		msgs = append(msgs, m)
	}
	msgs = mergeFiles(msgs, r.starts, r.files)
	// Outputs no result in the transcripts points to still belong to the
	// session (the line that named them may have been compacted away).
	var orphans []string
	for id := range r.results {
		if !r.used[id] && !r.follow {
			orphans = append(orphans, id)
		}
	}
	sort.Strings(orphans)
	for _, id := range orphans {
		content, ok := r.externalised(id)
		if !ok {
			continue
		}
		msgs = append(msgs, Message{
			ExternalID: s.ExternalID + "-result-" + id, Role: "tool",
			Parts: []Part{{Type: PartToolResult, Content: content}}, CreatedAt: last,
		})
	}
	s.Messages = msgs
	return s
}

// mergeFiles interleaves the messages of several files by time (each file
// its runs of msgs: runs starting at starts, of files) keeping each file's
// own order; on equal times the file read first goes first. A sub-agent's
// messages land where it ran, between the session's call of it and its
// result. A file read in several runs (a followed file that grew) is one
// sequence.
func mergeFiles(msgs []Message, starts []int, files []string) []Message {
	if len(starts) < 2 {
		return msgs
	}
	var order []string
	byFile := map[string][]Message{}
	for i, st := range starts {
		end := len(msgs)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		f := files[i]
		if _, ok := byFile[f]; !ok {
			order = append(order, f)
		}
		byFile[f] = append(byFile[f], msgs[st:end]...)
	}
	runs := make([][]Message, len(order))
	for i, f := range order {
		runs[i] = byFile[f]
	}
	return mergeRuns(runs)
}

// mergeRuns interleaves runs of messages by time, keeping each run's order;
// on equal times the earlier run goes first.
func mergeRuns(runs [][]Message) []Message {
	if len(runs) == 1 {
		return runs[0]
	}
	n := 0
	for _, r := range runs {
		n += len(r)
	}
	out := make([]Message, 0, n)
	at := make([]int, len(runs))
	for {
		best := -1
		for i, r := range runs {
			if at[i] == len(r) {
				continue
			}
			if best < 0 || r[at[i]].CreatedAt.Before(runs[best][at[best]].CreatedAt) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, runs[best][at[best]])
		at[best]++
	}
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
