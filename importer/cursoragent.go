package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// CursorAgent lists the sessions of Cursor's command-line agent
// (cursor-agent), which writes a transcript per chat under
// ~/.cursor/projects/<project>/agent-transcripts/:
//
//	<chat id>.txt or <chat id>.jsonl
//	<chat id>/<chat id>.jsonl
//	<chat id>/subagents/<sub-agent id>.jsonl (or .txt)
//
// <project> is the project's path with its separators and dots turned into
// '-', decoded against the file system (cursorProjectPath). A plain-text
// transcript is blocks under "user:" and "assistant:" lines: the prompt in
// <user_query> tags; in answers, "[Thinking]", "[Tool call] <name>" and
// "[Tool result] <name>" lines, each followed by its indented body. A JSONL
// transcript has one message per line, {"role", "message": {"content":
// [text, thinking, tool_use, tool_result blocks]}}. Sub-agents' transcripts
// belong to their chat and follow its messages. Transcripts hold no times:
// a session takes its file's modification time. The chat id is the one
// Cursor's hooks report, so the cursor-sync plugin's sessions are completed,
// not duplicated.
func CursorAgent(root string, opts ReadOptions) ([]Item, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("cursor-agent history: %w", err)
	}
	if !fi.IsDir() {
		return []Item{cursorAgentItem(root, opts)}, nil
	}
	if isDir(filepath.Join(root, "projects")) {
		root = filepath.Join(root, "projects")
	}
	var dirs []string // agent-transcripts directories
	switch {
	case filepath.Base(root) == "agent-transcripts":
		dirs = []string{root}
	case isDir(filepath.Join(root, "agent-transcripts")):
		dirs = []string{filepath.Join(root, "agent-transcripts")}
	default:
		es, err := os.ReadDir(root)
		if err != nil {
			return nil, fmt.Errorf("cursor-agent history: %w", err)
		}
		for _, e := range es {
			if d := filepath.Join(root, e.Name(), "agent-transcripts"); e.IsDir() && isDir(d) {
				dirs = append(dirs, d)
			}
		}
	}
	var items []Item
	for _, d := range dirs {
		es, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, e := range es {
			name := e.Name()
			p := filepath.Join(d, name)
			if e.IsDir() {
				p = cursorTranscriptFile(p, name)
			} else if !e.Type().IsRegular() || !isCursorTranscript(name) {
				continue
			}
			id := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
			if p == "" || seen[id] {
				continue
			}
			seen[id] = true
			items = append(items, cursorAgentItem(p, opts))
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].Path < items[j].Path })
	return items, nil
}

func isCursorTranscript(name string) bool {
	return strings.HasSuffix(name, ".txt") || strings.HasSuffix(name, ".jsonl")
}

// cursorTranscriptFile is the transcript of a chat directory, "" if none.
func cursorTranscriptFile(dir, id string) string {
	for _, ext := range []string{".jsonl", ".txt"} {
		if p := filepath.Join(dir, id+ext); isFile(p) {
			return p
		}
	}
	return ""
}

func cursorAgentItem(path string, opts ReadOptions) Item {
	return Item{Path: path, read: func() (Session, []Problem, error) {
		return readCursorAgent(path, opts.maxPart())
	}}
}

func readCursorAgent(path string, maxPart int) (Session, []Problem, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Session{}, nil, err
	}
	id := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	s := Session{ExternalID: id, Source: SourceCursor, CreatedAt: fi.ModTime()}
	// The project directory holds agent-transcripts.
	for d := filepath.Dir(path); d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "agent-transcripts" {
			s.ProjectPath = cursorProjectPath(filepath.Base(filepath.Dir(d)))
			s.ProjectName = projectName(s.ProjectPath)
			break
		}
	}
	msgs, probs, err := readCursorTranscript(path, maxPart)
	if err != nil {
		return Session{}, probs, err
	}
	// Sub-agents: <chat>/subagents/ beside a flat transcript or inside the
	// chat's directory.
	chatDir := filepath.Join(filepath.Dir(path), id)
	if filepath.Base(filepath.Dir(path)) == id {
		chatDir = filepath.Dir(path)
	}
	subs, _ := os.ReadDir(filepath.Join(chatDir, "subagents"))
	for _, e := range subs {
		if e.IsDir() || !isCursorTranscript(e.Name()) {
			continue
		}
		sub, pp, err := readCursorTranscript(filepath.Join(chatDir, "subagents", e.Name()), maxPart)
		probs = append(probs, pp...)
		if err != nil {
			probs = append(probs, Problem{Path: filepath.Join(chatDir, "subagents", e.Name()), Err: "skipped sub-agent: " + err.Error()})
			continue
		}
		subID := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		agent := &SubAgent{ID: subID}
		for i := range sub {
			sub[i].ExternalID = "sub-" + subID + "-" + sub[i].ExternalID
			sub[i].SubAgent = agent
		}
		msgs = append(msgs, sub...)
	}
	for i := range msgs {
		msgs[i].ExternalID = id + "-" + msgs[i].ExternalID
		msgs[i].CreatedAt = s.CreatedAt
	}
	s.Messages = msgs
	for _, m := range msgs {
		if m.Role == "user" {
			s.Title = Title(m.Text())
			break
		}
	}
	return s, probs, nil
}

// readCursorTranscript reads one transcript's messages, named by their
// position ("1", "2", ...; a tool call by its id when it has one).
func readCursorTranscript(path string, maxPart int) ([]Message, []Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	head, _ := br.Peek(4096)
	if first := bytes.TrimSpace(head); len(first) > 0 && first[0] == '{' {
		return readCursorJSONL(path, br, maxPart)
	}
	t := &cursorText{maxPart: maxPart, pending: map[string][]int{}}
	for n := 1; ; n++ {
		raw, err := br.ReadString('\n')
		if raw != "" || err == nil {
			t.line(strings.TrimRight(raw, "\r\n"))
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, nil, err
		}
	}
	t.flush()
	return t.msgs, nil, nil
}

// cursorText reads a plain-text transcript.
type cursorText struct {
	maxPart int
	msgs    []Message
	role    string
	lines   []string
	pending map[string][]int // tool name -> indexes of calls waiting for a result
}

func (t *cursorText) line(l string) {
	switch strings.TrimSpace(l) {
	case "user:", "assistant:":
		t.flush()
		t.role = strings.TrimSuffix(strings.TrimSpace(l), ":")
		return
	}
	if t.role != "" {
		t.lines = append(t.lines, l)
	}
}

// flush turns the block read so far into messages.
func (t *cursorText) flush() {
	role, lines := t.role, t.lines
	t.lines = nil
	if role == "" {
		return
	}
	if role == "user" {
		text := strings.Join(lines, "\n")
		if a := strings.Index(text, "<user_query>"); a >= 0 {
			if b := strings.Index(text[a:], "</user_query>"); b >= 0 {
				text = text[a+len("<user_query>") : a+b]
			}
		}
		if text = strings.TrimSpace(text); text != "" {
			t.add(Message{Role: "user", Parts: []Part{{Type: PartText, Content: truncate(text, t.maxPart)}}})
		}
		return
	}
	var parts []Part
	var text []string
	flushText := func() {
		if s := strings.TrimSpace(strings.Join(text, "\n")); s != "" {
			parts = append(parts, Part{Type: PartText, Content: truncate(s, t.maxPart)})
		}
		text = nil
	}
	endAnswer := func() {
		flushText()
		if len(parts) > 0 {
			t.add(Message{Role: "assistant", Parts: parts})
		}
		parts = nil
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		marker, rest, ok := cursorMarker(l)
		if !ok {
			text = append(text, lines[i])
			continue
		}
		// The marker's body: the indented (or blank) lines after it.
		j := i + 1
		for j < len(lines) && (strings.TrimSpace(lines[j]) == "" || lines[j][0] == ' ' || lines[j][0] == '\t') {
			if _, _, m := cursorMarker(strings.TrimSpace(lines[j])); m {
				break
			}
			j++
		}
		body := dedent(lines[i+1 : j])
		if marker == "[Thinking]" && rest != "" {
			body = strings.TrimSpace(rest + "\n" + body)
		}
		i = j - 1
		switch marker {
		case "[Thinking]":
			flushText()
			if body != "" {
				parts = append(parts, Part{Type: PartThinking, Text: truncate(body, t.maxPart)})
			}
		case "[Tool call]":
			endAnswer()
			t.pending[rest] = append(t.pending[rest], len(t.msgs))
			t.add(Message{Role: "assistant", Parts: []Part{{Type: PartToolCall, ToolName: rest, Args: jsonArgs(cursorToolArgs(body), t.maxPart)}}})
		case "[Tool result]":
			endAnswer()
			t.result(rest, body)
		}
	}
	endAnswer()
}

// cursorMarker splits an answer line that starts a block.
func cursorMarker(l string) (marker, rest string, ok bool) {
	for _, m := range []string{"[Thinking]", "[Tool call]", "[Tool result]"} {
		if r, found := strings.CutPrefix(l, m); found {
			return m, strings.TrimSpace(r), true
		}
	}
	return "", "", false
}

func (t *cursorText) result(name, body string) {
	q := t.pending[name]
	if len(q) == 0 {
		t.add(Message{Role: "tool", Parts: []Part{{Type: PartToolResult, ToolName: name, Content: truncate(body, t.maxPart)}}})
		return
	}
	i := q[0]
	t.pending[name] = q[1:]
	t.msgs[i].Parts = append(t.msgs[i].Parts, Part{Type: PartToolResult, ToolName: name, Content: truncate(body, t.maxPart)})
}

func (t *cursorText) add(m Message) {
	m.ExternalID = strconv.Itoa(len(t.msgs) + 1)
	t.msgs = append(t.msgs, m)
}

// dedent removes the indentation the lines share.
func dedent(lines []string) string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		out[i] = l
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// cursorToolArgs reads a tool call's body: JSON as is, "key=value" lines as
// an object, anything else as {"input": body}.
func cursorToolArgs(body string) json.RawMessage {
	if body == "" {
		return nil
	}
	if json.Valid([]byte(body)) {
		return json.RawMessage(body)
	}
	args := map[string]string{}
	for _, l := range strings.Split(body, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), "=")
		if !ok || strings.ContainsAny(k, " \t") || k == "" {
			args = map[string]string{"input": body}
			break
		}
		args[k] = strings.TrimSpace(v)
	}
	b, _ := json.Marshal(args)
	return b
}

// readCursorJSONL reads a JSONL transcript.
func readCursorJSONL(path string, br *bufio.Reader, maxPart int) ([]Message, []Problem, error) {
	var msgs []Message
	var probs []Problem
	calls := map[string]int{}
	add := func(m Message) {
		m.ExternalID = strconv.Itoa(len(msgs) + 1)
		msgs = append(msgs, m)
	}
	for n := 1; ; n++ {
		raw, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(raw)) > 0 {
			var l struct {
				Role    string `json:"role"`
				Message struct {
					Content json.RawMessage `json:"content"`
				} `json:"message"`
			}
			bs, berr := []ccBlock(nil), error(nil)
			if jerr := json.Unmarshal(raw, &l); jerr != nil {
				probs = append(probs, Problem{Path: path, Line: n, Err: "skipped: not a transcript line: " + jsonError(jerr)})
			} else if bs, berr = blocks(l.Message.Content); berr != nil {
				probs = append(probs, Problem{Path: path, Line: n, Err: "skipped: message.content is neither text nor blocks: " + jsonError(berr)})
			} else {
				var parts []Part
				for _, b := range bs {
					switch b.Type {
					case "text":
						text := b.Text
						if l.Role == "user" {
							text = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(text), "<user_query>"), "</user_query>")
						}
						if strings.TrimSpace(text) != "" {
							parts = append(parts, Part{Type: PartText, Content: truncate(strings.TrimSpace(text), maxPart)})
						}
					case "thinking":
						if strings.TrimSpace(b.Thinking) != "" {
							parts = append(parts, Part{Type: PartThinking, Text: truncate(b.Thinking, maxPart)})
						}
					case "tool_use":
						if len(parts) > 0 {
							add(Message{Role: "assistant", Parts: parts})
							parts = nil
						}
						calls[b.ID] = len(msgs)
						add(Message{Role: "assistant", Parts: []Part{{Type: PartToolCall, ToolName: b.Name, Args: jsonArgs(b.Input, maxPart)}}})
					case "tool_result":
						out := truncate(resultText(b.Content), maxPart)
						if i, ok := calls[b.ToolUseID]; ok && b.ToolUseID != "" {
							msgs[i].Parts = append(msgs[i].Parts, Part{Type: PartToolResult, ToolName: msgs[i].Parts[0].ToolName, Content: out})
						} else {
							add(Message{Role: "tool", Parts: []Part{{Type: PartToolResult, Content: out}}})
						}
					}
				}
				if len(parts) > 0 {
					role := "assistant"
					if l.Role == "user" {
						role = "user"
					}
					add(Message{Role: role, Parts: parts})
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, probs, err
		}
	}
	return msgs, probs, nil
}

// cursorProjectPath decodes a project directory name of ~/.cursor/projects,
// the project's absolute path with '/' and '.' turned into '-'
// ("home-dev-my-app" for /home/dev/my-app or /home/dev/my.app): the path is
// rebuilt against the file system, one existing directory at a time, longest
// name first. "" when no existing path matches.
func cursorProjectPath(enc string) string {
	toks := strings.Split(enc, "-")
	if len(toks) > 64 {
		return ""
	}
	budget := 4096 // directory look-ups
	var walk func(dir string, i int) string
	walk = func(dir string, i int) string {
		if i == len(toks) {
			return dir
		}
		prefix, k := "", i
		if toks[i] == "" { // "--": a name that starts with a dot
			prefix, k = ".", i+1
		}
		for j := len(toks); j > k; j-- {
			for _, sep := range []string{"-", "."} {
				if budget--; budget < 0 {
					return ""
				}
				p := filepath.Join(dir, prefix+strings.Join(toks[k:j], sep))
				if isDir(p) {
					if got := walk(p, j); got != "" {
						return got
					}
				}
				if j-k == 1 {
					break // one token: no separator to vary
				}
			}
		}
		return ""
	}
	if len(toks) > 1 && len(toks[0]) == 1 && filepath.Separator == '\\' {
		return walk(strings.ToUpper(toks[0])+`:\`, 1)
	}
	return walk(string(filepath.Separator), 0)
}

// cursorAgentRoots: cursor-agent keeps ~/.cursor/projects on every system
// (%USERPROFILE%\.cursor\projects on Windows).
func cursorAgentRoots(home, _ string, _ func(string) string) []string {
	return []string{filepath.Join(home, ".cursor", "projects")}
}
