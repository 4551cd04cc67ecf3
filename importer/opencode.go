package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// SourceOpenCode is the source opencode sessions are stored under.
const SourceOpenCode = "opencode"

// OpenCode lists the sessions in opencode's history under dir, in either of
// its layouts:
//
//   - SQLite, newer versions: opencode.db (tables session, message, part),
//     read with its WAL through readSQLite; see openCodeDBItems.
//   - JSON files, older versions:
//     storage/session/<project>/<session>.json
//     storage/message/<session>/<message>.json
//     storage/part/<message>/<part>.json
//
// dir is opencode's data directory (~/.local/share/opencode), its storage
// directory, or the database file. When both layouts are present (opencode
// migrates the JSON files into the database and leaves them), a session in
// the database is read from there only.
func OpenCode(dir string, opts ReadOptions) ([]Item, error) {
	var items []Item
	inDB := map[string]bool{}
	db := openCodeDBPath(dir)
	if db != "" {
		dbItems, ids, err := openCodeDBItems(context.Background(), db, opts)
		switch {
		case errors.Is(err, errNotOpenCodeDB) && hasOpenCodeJSON(dir):
			db = "" // an empty or foreign opencode.db beside the JSON files
		case err != nil:
			return nil, fmt.Errorf("opencode history: %w", err)
		}
		items = dbItems
		for _, id := range ids {
			inDB[id] = true
		}
	}
	root := dir
	if !isDir(filepath.Join(root, "session")) && isDir(filepath.Join(dir, "storage", "session")) {
		root = filepath.Join(dir, "storage")
	}
	sessDir := filepath.Join(root, "session")
	if !isDir(sessDir) {
		if db != "" {
			return items, nil
		}
		return nil, fmt.Errorf("opencode history: no opencode.db and no session directory under %s (want opencode.db or storage/session/<project>/<id>.json)", dir)
	}
	var paths []string
	err := filepath.WalkDir(sessDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == sessDir {
				return err
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".json") && d.Type().IsRegular() &&
			!inDB[strings.TrimSuffix(d.Name(), ".json")] {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opencode history: %w", err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		items = append(items, Item{Path: p, read: func() (Session, []Problem, error) {
			return readOpenCode(root, p, opts.maxPart())
		}})
	}
	return items, nil
}

func hasOpenCodeJSON(dir string) bool {
	return isDir(filepath.Join(dir, "session")) || isDir(filepath.Join(dir, "storage", "session"))
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

type ocTime struct {
	Created   float64 `json:"created"`
	Updated   float64 `json:"updated"`
	Completed float64 `json:"completed"`
}

type ocSession struct {
	ID        string `json:"id"`
	Slug      string `json:"slug"`
	Title     string `json:"title"`
	Directory string `json:"directory"`
	Time      ocTime `json:"time"`
}

type ocMessage struct {
	ID         string  `json:"id"`
	SessionID  string  `json:"sessionID"`
	Role       string  `json:"role"`
	ModelID    string  `json:"modelID"`
	ProviderID string  `json:"providerID"`
	Cost       float64 `json:"cost"`
	Tokens     *struct {
		Input     float64 `json:"input"`
		Output    float64 `json:"output"`
		Reasoning float64 `json:"reasoning"`
	} `json:"tokens"`
	Time ocTime `json:"time"`
}

type ocPart struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Text    string `json:"text"`
	Tool    string `json:"tool"`
	Ignored bool   `json:"ignored"`
	State   *struct {
		Status string          `json:"status"`
		Input  json.RawMessage `json:"input"`
		Output json.RawMessage `json:"output"`
		Error  json.RawMessage `json:"error"`
	} `json:"state"`
}

func ms(v float64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(v))
}

// readJSON reads one storage file into v.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.New(jsonError(err))
	}
	return nil
}

// jsonFiles lists the .json files of dir by name (opencode ids sort by time).
// A missing directory is empty.
func jsonFiles(dir string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range es {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// text flattens a tool output: a JSON string as is, anything else as JSON.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// readOpenCode reads one session of the JSON layout.
func readOpenCode(root, path string, maxPart int) (Session, []Problem, error) {
	var sess ocSession
	if err := readJSON(path, &sess); err != nil {
		return Session{}, nil, fmt.Errorf("session file: %v", err)
	}
	if sess.ID == "" {
		sess.ID = strings.TrimSuffix(filepath.Base(path), ".json")
	}
	var probs []Problem
	var msgs []ocMessage
	for _, p := range jsonFiles(filepath.Join(root, "message", sess.ID)) {
		var m ocMessage
		if err := readJSON(p, &m); err != nil {
			probs = append(probs, Problem{Path: p, Err: "skipped message: " + err.Error()})
			continue
		}
		if m.ID == "" || (m.SessionID != "" && m.SessionID != sess.ID) {
			probs = append(probs, Problem{Path: p, Err: "skipped message: no id, or it belongs to another session"})
			continue
		}
		msgs = append(msgs, m)
	}
	s := openCodeSession(sess, msgs, func(m ocMessage) []Part {
		var ops []ocPart
		for _, p := range jsonFiles(filepath.Join(root, "part", m.ID)) {
			var op ocPart
			if err := readJSON(p, &op); err != nil {
				probs = append(probs, Problem{Path: p, Err: "skipped part: " + err.Error()})
				continue
			}
			ops = append(ops, op)
		}
		return ocParts(ops, maxPart)
	})
	return s, probs, nil
}

// openCodeSession assembles a session, whichever layout it was read from,
// the way opencode-sync's importer does: session totals are sums over the
// messages (promptTokens = input tokens, completionTokens = output tokens,
// cost), the model and provider are the first a message names. Messages go
// in order of creation; parts(m) gives a message's parts, and a message
// without any is left out.
func openCodeSession(sess ocSession, msgs []ocMessage, parts func(ocMessage) []Part) Session {
	s := Session{
		ExternalID: sess.ID, Source: SourceOpenCode, Title: sess.Title,
		ProjectPath: sess.Directory, ProjectName: projectName(sess.Directory), CreatedAt: ms(sess.Time.Created),
	}
	if s.Title == "" {
		s.Title = sess.Slug
	}
	sort.SliceStable(msgs, func(i, j int) bool {
		if msgs[i].Time.Created != msgs[j].Time.Created {
			return msgs[i].Time.Created < msgs[j].Time.Created
		}
		return msgs[i].ID < msgs[j].ID
	})
	var end time.Time
	for _, m := range msgs {
		if m.Tokens != nil {
			s.PromptTokens += round(m.Tokens.Input)
			s.CompletionTokens += round(m.Tokens.Output)
		}
		s.Cost += m.Cost
		if s.Model == "" {
			s.Model = m.ModelID
		}
		if s.Provider == "" {
			s.Provider = m.ProviderID
		}
		at := ms(m.Time.Created)
		if at.IsZero() {
			at = s.CreatedAt
		}
		for _, t := range []time.Time{at, ms(m.Time.Completed)} {
			if t.After(end) {
				end = t
			}
		}
		ps := parts(m)
		if len(ps) == 0 {
			continue
		}
		msg := Message{ExternalID: m.ID, Role: role(m.Role), Parts: ps, Model: m.ModelID, CreatedAt: at}
		if m.Tokens != nil {
			msg.PromptTokens, msg.CompletionTokens = ptr(round(m.Tokens.Input)), ptr(round(m.Tokens.Output))
		}
		if m.Time.Completed > 0 && m.Time.Created > 0 && m.Time.Completed >= m.Time.Created {
			msg.DurationMs = ptr(int64(m.Time.Completed - m.Time.Created))
		}
		s.Messages = append(s.Messages, msg)
	}
	if s.Title == "" {
		for _, m := range s.Messages {
			if m.Role == "user" && strings.TrimSpace(m.Text()) != "" {
				s.Title = Title(m.Text())
				break
			}
		}
	}
	if !s.CreatedAt.IsZero() && end.After(s.CreatedAt) {
		s.DurationMs = end.Sub(s.CreatedAt).Milliseconds()
	}
	return s
}

func role(r string) string {
	switch r {
	case "user", "assistant", "system", "tool":
		return r
	}
	return "unknown"
}

// ocParts converts a message's parts, in order: text becomes text, tool a
// tool-call and, when there is output, a tool-result, reasoning a thinking
// part; the rest (step markers, files, patches) is left out.
func ocParts(ops []ocPart, maxPart int) []Part {
	var parts []Part
	for _, op := range ops {
		switch op.Type {
		case "text":
			if strings.TrimSpace(op.Text) != "" && !op.Ignored {
				parts = append(parts, Part{Type: PartText, Content: truncate(op.Text, maxPart)})
			}
		case "reasoning":
			if strings.TrimSpace(op.Text) != "" {
				parts = append(parts, Part{Type: PartThinking, Text: truncate(op.Text, maxPart)})
			}
		case "tool":
			call := Part{Type: PartToolCall, ToolName: op.Tool, Args: json.RawMessage(`{}`)}
			if op.State == nil {
				parts = append(parts, call)
				continue
			}
			call.Args = jsonArgs(op.State.Input, maxPart)
			parts = append(parts, call)
			out := text(op.State.Output)
			if out == "" && text(op.State.Error) != "" {
				out = "Error: " + text(op.State.Error)
			}
			if out != "" {
				parts = append(parts, Part{Type: PartToolResult, ToolName: op.Tool, Content: truncate(out, maxPart)})
			}
		}
	}
	return parts
}
