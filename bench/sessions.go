package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Session is a corpus document as the coding assistant's session it was
// made from: what a plugin syncs (sessions.jsonl of the coding-session set).
// The document's Title is the session's title; its Text holds every
// message's text and tool output joined, for peers that index one text.
type Session struct {
	Source, Project string
	Messages        []Message
}

// Message is one message of a Session. ToolOutput is what the assistant's
// tools returned while it wrote the message ("" for none): a plugin sends
// it as a tool-result part beside the text.
type Message struct {
	Role       string `json:"role"` // user or assistant
	Text       string `json:"text"`
	ToolOutput string `json:"tool_output,omitempty"`
}

// MessageText is the session's message text without tool output, joined
// as the corpus joins it: what Hindsight makes searchable, and what the
// text-only peers index.
func (s *Session) MessageText() string {
	var parts []string
	for _, m := range s.Messages {
		if m.Text != "" {
			parts = append(parts, m.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// sessionRecord is one line of sessions.jsonl.
type sessionRecord struct {
	ID       json.RawMessage `json:"id"`
	Source   string          `json:"source"`
	Title    string          `json:"title"`
	Project  string          `json:"project"`
	Messages []Message       `json:"messages"`
}

// attachSessions reads dir's sessions.jsonl(.gz), when there is one, and
// gives every document of ds its Session. A document without a session, a
// session without messages or a message of another role than user or
// assistant is an error: the file is there to be synced as a plugin would.
// Sessions of documents outside ds (a slice) are skipped unread.
func attachSessions(ctx context.Context, dir string, ds *Dataset) error {
	path, err := findJSONL(dir, "sessions")
	if errors.Is(err, os.ErrNotExist) {
		return nil // a plain BEIR dataset
	}
	if err != nil {
		return err
	}
	byID := make(map[string]*Doc, len(ds.Corpus))
	for i := range ds.Corpus {
		byID[ds.Corpus[i].ID] = &ds.Corpus[i]
	}
	err = eachLineNumbered(ctx, path, func(_ int, line []byte) error {
		var rec sessionRecord
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
		id, err := decodeID(rec.ID)
		if err != nil {
			return errors.New(strings.ReplaceAll(err.Error(), `"_id"`, `"id"`))
		}
		d, ok := byID[id]
		if !ok {
			return nil
		}
		if d.Session != nil {
			return fmt.Errorf("duplicate session id %q", id)
		}
		if len(rec.Messages) == 0 {
			return fmt.Errorf("session %q has no messages", id)
		}
		for i, m := range rec.Messages {
			if m.Role != "user" && m.Role != "assistant" {
				return fmt.Errorf("session %q message %d: role %q (want user or assistant)", id, i, m.Role)
			}
		}
		d.Session = &Session{Source: rec.Source, Project: rec.Project, Messages: rec.Messages}
		return nil
	})
	if err != nil {
		return err
	}
	for _, d := range ds.Corpus {
		if d.Session == nil {
			return fmt.Errorf("%s: no session for document %q", path, d.ID)
		}
	}
	return nil
}
