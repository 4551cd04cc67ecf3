package importer

import (
	"bytes"
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

// OpenCode lists the sessions in opencode's JSON storage:
//
//	storage/session/<project>/<session>.json
//	storage/message/<session>/<message>.json
//	storage/part/<message>/<part>.json
//
// dir is the storage directory or the one holding it (~/.local/share/opencode).
// Newer opencode versions keep sessions in SQLite (opencode.db) instead; the
// error then says so.
func OpenCode(dir string, opts ReadOptions) ([]Item, error) {
	root := dir
	if !isDir(filepath.Join(root, "session")) && isDir(filepath.Join(dir, "storage", "session")) {
		root = filepath.Join(dir, "storage")
	}
	sessDir := filepath.Join(root, "session")
	if !isDir(sessDir) {
		for _, db := range []string{filepath.Join(dir, "opencode.db"), filepath.Join(filepath.Dir(dir), "opencode.db")} {
			if _, err := os.Stat(db); err == nil {
				return nil, fmt.Errorf("opencode history: no JSON storage under %s, but %s exists: this opencode version keeps sessions in SQLite, which the importer does not read", dir, db)
			}
		}
		return nil, fmt.Errorf("opencode history: no session directory under %s (want storage/session/<project>/<id>.json)", dir)
	}
	var paths []string
	err := filepath.WalkDir(sessDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == sessDir {
				return err
			}
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".json") && d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("opencode history: %w", err)
	}
	sort.Strings(paths)
	items := make([]Item, len(paths))
	for i, p := range paths {
		items[i] = Item{Path: p, read: func() (Session, []Problem, error) {
			return readOpenCode(root, p, opts.maxPart())
		}}
	}
	return items, nil
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

// readOpenCode reads one session the way opencode-sync's importer does:
// session totals are sums over the messages (promptTokens = input tokens,
// completionTokens = output tokens, cost), the model and provider are the
// first a message names. Text parts become text, tool parts a tool-call and,
// when there is output, a tool-result, reasoning a thinking part; a message
// with none of these is left out.
func readOpenCode(root, path string, maxPart int) (Session, []Problem, error) {
	var sess ocSession
	if err := readJSON(path, &sess); err != nil {
		return Session{}, nil, fmt.Errorf("session file: %v", err)
	}
	if sess.ID == "" {
		sess.ID = strings.TrimSuffix(filepath.Base(path), ".json")
	}
	s := Session{
		ExternalID: sess.ID, Source: SourceOpenCode, Title: sess.Title,
		ProjectPath: sess.Directory, ProjectName: projectName(sess.Directory), CreatedAt: ms(sess.Time.Created),
	}
	if s.Title == "" {
		s.Title = sess.Slug
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
		parts, pp := readParts(filepath.Join(root, "part", m.ID), maxPart)
		probs = append(probs, pp...)
		if len(parts) == 0 {
			continue
		}
		msg := Message{ExternalID: m.ID, Role: role(m.Role), Parts: parts, Model: m.ModelID, CreatedAt: at}
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
	return s, probs, nil
}

func role(r string) string {
	switch r {
	case "user", "assistant", "system", "tool":
		return r
	}
	return "unknown"
}

func readParts(dir string, maxPart int) ([]Part, []Problem) {
	var parts []Part
	var probs []Problem
	for _, p := range jsonFiles(dir) {
		var op ocPart
		if err := readJSON(p, &op); err != nil {
			probs = append(probs, Problem{Path: p, Err: "skipped part: " + err.Error()})
			continue
		}
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
	return parts, probs
}
