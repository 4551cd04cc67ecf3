package importer

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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

// SourceGemini is the source of Gemini CLI sessions.
const SourceGemini = "gemini-cli"

// Gemini lists Gemini CLI's sessions under dir: ~/.gemini, its tmp/, one
// project directory of it, or one session file. A project directory,
// tmp/<project>/ (<project> the SHA-256 of the project's root in older
// versions, a short name in newer ones, ~/.gemini/projects.json mapping
// roots to names), keeps chats/session-<time>-<id8>.jsonl (or .json, one
// JSON document, before April 2026), and a sub-agent's session in
// chats/<parent session id>/<id>.jsonl.
//
// Files are grouped by session id: a resumed session split over two files
// and the copies the hash-to-name migration left in both project
// directories are one session (messages deduplicated by id). A sub-agent's
// messages go into its parent session, marked with Message.SubAgent.
func Gemini(dir string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("gemini history: %w", err)
	}
	home := dir // where projects.json may be
	if fi.IsDir() && isDir(filepath.Join(dir, "tmp")) {
		dir = filepath.Join(dir, "tmp")
	} else {
		home = filepath.Dir(dir)
		for h := dir; filepath.Dir(h) != h; h = filepath.Dir(h) {
			if filepath.Base(h) == "tmp" {
				home = filepath.Dir(h)
				break
			}
		}
	}
	roots := projectRoots(filepath.Join(home, "projects.json"))
	groups := map[string]*gmGroup{}
	group := func(id string) *gmGroup {
		g := groups[id]
		if g == nil {
			g = &gmGroup{id: id, roots: roots}
			groups[id] = g
		}
		return g
	}
	add := func(p string) {
		name := filepath.Base(p)
		if !strings.HasSuffix(name, ".jsonl") && !strings.HasSuffix(name, ".json") {
			return
		}
		parent := filepath.Dir(p)
		if strings.HasPrefix(name, "session-") {
			id := peekSessionID(p)
			if id == "" {
				id = strings.TrimSuffix(strings.TrimSuffix(name, ".jsonl"), ".json")
			}
			g := group(id)
			g.files = append(g.files, p)
			return
		}
		// chats/<parent>/<id>.jsonl: a sub-agent of session <parent>.
		if filepath.Base(filepath.Dir(parent)) == "chats" && strings.HasSuffix(name, ".jsonl") {
			g := group(filepath.Base(parent))
			g.agents = append(g.agents, p)
		}
	}
	if !fi.IsDir() {
		add(dir)
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
			if d.Type().IsRegular() && strings.Contains(p, string(filepath.Separator)+"chats"+string(filepath.Separator)) {
				add(p)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("gemini history: %w", err)
		}
	}
	var items []Item
	for _, g := range groups {
		sort.Strings(g.files)
		sort.Strings(g.agents)
		path := ""
		switch {
		case len(g.files) > 0:
			path = g.files[0]
		case len(g.agents) > 0:
			path = g.agents[0]
		default:
			continue
		}
		items = append(items, Item{Path: path, read: func() (Session, []Problem, error) { return readGemini(g, opts.maxPart()) },
			follow: gmFollow(g, opts.maxPart())})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })
	return items, nil
}

// gmGroup is the files of one session.
type gmGroup struct {
	id     string
	files  []string          // the session's own files, by name (so by start time)
	agents []string          // sub-agents' sessions
	roots  map[string]string // project directory name -> the project's root
}

// projectRoots reads ~/.gemini/projects.json ({"projects": {root: name}})
// into a map from each project directory name (the name, and the SHA-256
// of the root older versions used) to the root.
func projectRoots(path string) map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	var doc struct {
		Projects map[string]string `json:"projects"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return out
	}
	for root, name := range doc.Projects {
		sum := sha256.Sum256([]byte(root))
		out[hex.EncodeToString(sum[:])] = root
		if name != "" {
			out[name] = root
		}
	}
	return out
}

// projectOf finds the root of the project whose directory holds the session
// file at p: tmp/<project>/.project_root, else projects.json.
func (g *gmGroup) projectOf(p string) (root, name string) {
	pdir := filepath.Dir(filepath.Dir(p)) // tmp/<project>/chats/<file>
	if filepath.Base(filepath.Dir(p)) != "chats" {
		pdir = filepath.Dir(pdir) // a sub-agent: tmp/<project>/chats/<parent>/<file>
	}
	if b, err := os.ReadFile(filepath.Join(pdir, ".project_root")); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b)), ""
	}
	if r := g.roots[filepath.Base(pdir)]; r != "" {
		return r, ""
	}
	if n := filepath.Base(pdir); !isSHA256(n) && n != "tmp" && n != "." {
		return "", n // a named project directory without its root: the name at least
	}
	return "", ""
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// peekSessionID reads a session file's sessionId: the first line of a
// JSONL session, or the top-level key of a JSON document (read token by
// token, stopping at it, so a large file is not loaded).
func peekSessionID(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if strings.HasSuffix(path, ".jsonl") {
		line, _ := br.ReadBytes('\n')
		var m struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(line, &m) == nil {
			return m.SessionID
		}
		return ""
	}
	dec := json.NewDecoder(br)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		if k == "sessionId" {
			var id string
			if dec.Decode(&id) != nil {
				return ""
			}
			return id
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// gmRecord is a line of a JSONL session, or a message of a JSON one.
type gmRecord struct {
	// Metadata (the first line; the top of a JSON document).
	SessionID   string          `json:"sessionId"`
	StartTime   string          `json:"startTime"`
	LastUpdated string          `json:"lastUpdated"`
	Summary     string          `json:"summary"`
	Set         *gmRecord       `json:"$set"`
	RewindTo    *string         `json:"$rewindTo"`
	Messages    json.RawMessage `json:"messages"`
	// A message.
	ID        string          `json:"id"`
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Content   json.RawMessage `json:"content"`
	Thoughts  []struct {
		Subject     string `json:"subject"`
		Description string `json:"description"`
	} `json:"thoughts"`
	ToolCalls []gmToolCall `json:"toolCalls"`
	Tokens    *struct {
		Input    float64 `json:"input"`
		Output   float64 `json:"output"`
		Thoughts float64 `json:"thoughts"`
	} `json:"tokens"`
	Model string `json:"model"`
}

type gmToolCall struct {
	ID     string          `json:"id"`
	Name   string          `json:"name"`
	Args   json.RawMessage `json:"args"`
	Result []struct {
		FunctionResponse *struct {
			Response json.RawMessage `json:"response"`
		} `json:"functionResponse"`
	} `json:"result"`
	ResultDisplay json.RawMessage `json:"resultDisplay"`
	Status        string          `json:"status"`
}

// gmReader accumulates one session's messages from its files, a line at a
// time for JSONL files (so a follower can feed it what was appended).
type gmReader struct {
	id      string
	maxPart int
	path    string
	agent   *SubAgent
	probs   []Problem
	runs    []*gmRun             // the session's own messages, then each sub-agent's
	cur     *gmRun               // the run of the file being read
	byID    map[string]*gmRecord // the latest record of each id
	summary string
	start   time.Time
	end     time.Time
	sub     map[string]*SubAgent // message id -> its sub-agent
}

// gmRun is the messages of one writer (the session, or one sub-agent), ids
// in order of first appearance: the session's files (a resumed session,
// copies in two project directories) are one run.
type gmRun struct {
	owner string // "" for the session, else the sub-agent's id
	order []string
}

func newGMReader(id string, maxPart int) *gmReader {
	return &gmReader{id: id, maxPart: maxPart, byID: map[string]*gmRecord{}, sub: map[string]*SubAgent{}}
}

// gmBase is the session's fields that come from where its files are.
func gmBase(g *gmGroup) Session {
	s := Session{ExternalID: g.id, Source: SourceGemini}
	for _, p := range append(append([]string(nil), g.files...), g.agents...) {
		if s.ProjectPath == "" && s.ProjectName == "" {
			s.ProjectPath, s.ProjectName = g.projectOf(p)
		}
	}
	if s.ProjectPath != "" {
		s.ProjectName = projectName(s.ProjectPath)
	}
	return s
}

// gmAgent is the sub-agent of a file in chats/<parent>/<id>.jsonl.
func gmAgent(p string) *SubAgent {
	return &SubAgent{ID: strings.TrimSuffix(filepath.Base(p), ".jsonl")}
}

func readGemini(g *gmGroup, maxPart int) (Session, []Problem, error) {
	r := newGMReader(g.id, maxPart)
	for _, p := range g.files {
		if err := r.file(p, nil); err != nil {
			return Session{}, r.probs, err
		}
	}
	for _, p := range g.agents {
		if err := r.file(p, gmAgent(p)); err != nil {
			r.probs = append(r.probs, Problem{Path: p, Err: "skipped sub-agent: " + err.Error()})
		}
	}
	return r.session(gmBase(g)), r.probs, nil
}

// begin starts the lines of a file: the session's own (agent nil) or a
// sub-agent's.
func (r *gmReader) begin(p string, agent *SubAgent) {
	r.path, r.agent = p, agent
	owner := ""
	if agent != nil {
		owner = agent.ID
	}
	for _, run := range r.runs {
		if run.owner == owner {
			r.cur = run
			return
		}
	}
	r.cur = &gmRun{owner: owner}
	if owner == "" { // the session's own run goes first
		r.runs = append([]*gmRun{r.cur}, r.runs...)
	} else {
		r.runs = append(r.runs, r.cur)
	}
}

func (r *gmReader) problem(n int, format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Line: n, Err: fmt.Sprintf(format, args...)})
}

// file reads one session file, JSONL or a JSON document.
func (r *gmReader) file(p string, agent *SubAgent) error {
	r.begin(p, agent)
	if strings.HasSuffix(p, ".jsonl") {
		return readLines(p, r.line)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	var doc gmRecord
	if err := json.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("not a Gemini session: %s", jsonError(err))
	}
	r.meta(&doc)
	var msgs []json.RawMessage
	if err := json.Unmarshal(doc.Messages, &msgs); err != nil && len(doc.Messages) > 0 {
		return fmt.Errorf("messages: %s", jsonError(err))
	}
	for i, raw := range msgs {
		var m gmRecord
		if err := json.Unmarshal(raw, &m); err != nil {
			r.probs = append(r.probs, Problem{Path: p, Err: fmt.Sprintf("skipped messages[%d]: %s", i, jsonError(err))})
			continue
		}
		if m.ID == "" {
			m.ID = r.id + "-" + strings.TrimSuffix(filepath.Base(p), ".json") + "-" + strconv.Itoa(i)
		}
		r.message(&m)
	}
	return nil
}

func (r *gmReader) line(n int, raw []byte) {
	var rec gmRecord
	if err := json.Unmarshal(raw, &rec); err != nil {
		r.problem(n, "skipped: not a session line: %s", jsonError(err))
		return
	}
	switch {
	case rec.Set != nil:
		r.meta(rec.Set)
	case rec.RewindTo != nil:
		r.rewind(*rec.RewindTo)
	case rec.Type != "":
		if rec.ID == "" {
			rec.ID = r.id + "-" + strings.TrimSuffix(filepath.Base(r.path), ".jsonl") + "-L" + strconv.Itoa(n)
		}
		r.message(&rec)
	case rec.SessionID != "":
		r.meta(&rec)
	}
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// meta takes session metadata: the first line, a $set patch, a JSON
// document's top. A sub-agent's metadata is its own, not the session's.
func (r *gmReader) meta(m *gmRecord) {
	if r.agent != nil {
		return
	}
	if m.Summary != "" {
		r.summary = m.Summary
	}
	if t := parseTime(m.StartTime); !t.IsZero() && (r.start.IsZero() || t.Before(r.start)) {
		r.start = t
	}
	if t := parseTime(m.LastUpdated); t.After(r.end) {
		r.end = t
	}
}

func (r *gmReader) message(m *gmRecord) {
	if _, seen := r.byID[m.ID]; !seen {
		r.cur.order = append(r.cur.order, m.ID)
	}
	r.byID[m.ID] = m // a message is rewritten under its id while it streams
	if r.agent != nil {
		r.sub[m.ID] = r.agent
	}
}

// rewind drops the message id and every later one of the current run.
func (r *gmReader) rewind(id string) {
	run := r.cur
	for i, got := range run.order {
		if got != id {
			continue
		}
		for _, gone := range run.order[i:] {
			delete(r.byID, gone)
			delete(r.sub, gone)
		}
		run.order = run.order[:i:i]
		return
	}
}

// session returns the session read so far, with s's fields; the reader can
// go on.
func (r *gmReader) session(s Session) Session {
	var runs [][]Message
	var prompt string
	for _, run := range r.runs {
		var msgs []Message
		for _, id := range run.order {
			rec := r.byID[id]
			m, ok := r.convert(rec)
			if !ok {
				continue
			}
			m.SubAgent = r.sub[id]
			if rec.Tokens != nil {
				in, out := round(rec.Tokens.Input), round(rec.Tokens.Output)+round(rec.Tokens.Thoughts)
				m.PromptTokens, m.CompletionTokens = ptr(in), ptr(out)
				if m.SubAgent == nil {
					s.PromptTokens += in
					s.CompletionTokens += out
				}
			}
			if m.SubAgent == nil {
				if s.Model == "" && rec.Model != "" {
					s.Model = rec.Model
				}
				if prompt == "" && m.Role == "user" {
					prompt = m.Text()
				}
			}
			if !m.CreatedAt.IsZero() {
				if r.start.IsZero() || m.CreatedAt.Before(r.start) {
					r.start = m.CreatedAt
				}
				if m.CreatedAt.After(r.end) {
					r.end = m.CreatedAt
				}
			}
			msgs = append(msgs, m)
		}
		runs = append(runs, msgs)
	}
	for _, msgs := range runs {
		for i := range msgs {
			if msgs[i].CreatedAt.IsZero() {
				msgs[i].CreatedAt = r.start
			}
		}
	}
	s.Messages = mergeRuns(runs)
	s.Title = r.summary
	if s.Title == "" && prompt != "" {
		s.Title = Title(prompt)
	}
	s.CreatedAt = r.start
	if !r.start.IsZero() && r.end.After(r.start) {
		s.DurationMs = r.end.Sub(r.start).Milliseconds()
	}
	return s
}

// gmText flattens content: a string, or parts with text.
func gmText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		json.Unmarshal(raw, &s)
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw)
	}
	var out []string
	for _, p := range parts {
		if strings.TrimSpace(p.Text) != "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n\n")
}

// convert makes a message of a record: user and gemini turns, and Gemini's
// notices (info, warning, error) as system messages. A record with nothing
// in it is left out.
func (r *gmReader) convert(rec *gmRecord) (Message, bool) {
	m := Message{ExternalID: rec.ID, Model: rec.Model, CreatedAt: parseTime(rec.Timestamp)}
	switch rec.Type {
	case "user":
		m.Role = "user"
	case "gemini":
		m.Role = "assistant"
	case "info", "warning", "error":
		m.Role = "system"
	default:
		return m, false
	}
	var thoughts []string
	for _, t := range rec.Thoughts {
		switch {
		case t.Subject != "" && t.Description != "":
			thoughts = append(thoughts, t.Subject+": "+t.Description)
		case t.Description != "" || t.Subject != "":
			thoughts = append(thoughts, t.Subject+t.Description)
		}
	}
	if len(thoughts) > 0 {
		m.Parts = append(m.Parts, Part{Type: PartThinking, Text: truncate(strings.Join(thoughts, "\n\n"), r.maxPart)})
	}
	if t := gmText(rec.Content); strings.TrimSpace(t) != "" {
		m.Parts = append(m.Parts, Part{Type: PartText, Content: truncate(t, r.maxPart)})
	}
	for _, tc := range rec.ToolCalls {
		m.Parts = append(m.Parts, Part{Type: PartToolCall, ToolName: tc.Name, Args: jsonArgs(tc.Args, r.maxPart)})
		var outs []string
		for _, res := range tc.Result {
			if res.FunctionResponse == nil {
				continue
			}
			var resp struct {
				Output json.RawMessage `json:"output"`
				Error  json.RawMessage `json:"error"`
			}
			json.Unmarshal(res.FunctionResponse.Response, &resp)
			switch {
			case text(resp.Output) != "":
				outs = append(outs, text(resp.Output))
			case text(resp.Error) != "":
				outs = append(outs, "Error: "+text(resp.Error))
			default:
				outs = append(outs, text(res.FunctionResponse.Response))
			}
		}
		if len(outs) == 0 && text(tc.ResultDisplay) != "" {
			outs = append(outs, text(tc.ResultDisplay))
		}
		if len(outs) > 0 {
			m.Parts = append(m.Parts, Part{Type: PartToolResult, ToolName: tc.Name, Content: truncate(strings.Join(outs, "\n"), r.maxPart)})
		}
	}
	return m, len(m.Parts) > 0
}
