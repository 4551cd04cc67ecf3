package ingest

import (
	"strings"

	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/redact"
)

// Redact makes the service redact every text a sync writes (titles,
// project paths and names, message text, tool calls and their arguments,
// tool output, parts kept as sent) before it reaches a transaction, so no
// secret is stored, indexed, embedded or exported. nil redacts nothing.
// Call it before serving.
func (s *Service) Redact(r *redact.Redactor) { s.redactor = r }

// redactSession redacts in's texts in place and returns what it removed.
func (s *Service) redactSession(in *SessionIn) redact.Counts {
	if s.redactor == nil {
		return nil
	}
	var c redact.Counts
	for _, p := range []**string{&in.Title, &in.ProjectPath, &in.ProjectName} {
		c.Add(s.redactPtr(p))
	}
	return c
}

// redactMessage redacts in's texts in place and returns what it removed.
func (s *Service) redactMessage(in *MessageIn) redact.Counts {
	if s.redactor == nil {
		return nil
	}
	c := s.redactPtr(&in.TextContent)
	for i := range in.Parts {
		c.Add(RedactPart(s.redactor, &in.Parts[i]))
	}
	return c
}

// redactBatch redacts every entry of b in place and returns, by entry, what
// it removed.
func (s *Service) redactBatch(b *Batch) (sessions, messages []redact.Counts) {
	if s.redactor == nil {
		return nil, nil
	}
	return RedactBatch(s.redactor, b)
}

// RedactBatch redacts every entry of b in place with r, as a sync does, and
// returns, by entry, what it removed (bench redact times it).
func RedactBatch(r *redact.Redactor, b *Batch) (sessions, messages []redact.Counts) {
	s := &Service{redactor: r}
	sessions = make([]redact.Counts, len(b.Sessions))
	for i := range b.Sessions {
		sessions[i] = s.redactSession(&b.Sessions[i])
	}
	messages = make([]redact.Counts, len(b.Messages))
	for i := range b.Messages {
		messages[i] = s.redactMessage(&b.Messages[i])
	}
	return sessions, messages
}

func (s *Service) redactPtr(p **string) redact.Counts {
	if *p == nil {
		return nil
	}
	out, c := s.redactor.String(**p)
	if c != nil {
		*p = &out
	}
	return c
}

// RedactPart redacts a stored part's texts in place: a text part's
// content, a tool call's arguments, a tool result's output, and the
// strings of a part kept as sent (its JSON stays valid). The tool's name
// is an identifier and is kept. hindsight redact rewrites stored parts
// with it.
func RedactPart(r *redact.Redactor, p *kv.Part) redact.Counts {
	var c redact.Counts
	switch p.Type {
	case kv.PartText:
		p.Content, c = r.String(p.Content)
	case kv.PartToolCall:
		p.Args, c = redactJSONText(r, p.Args)
	case kv.PartToolResult:
		p.Content, c = redactJSONText(r, p.Content)
	default:
		p.Raw, c = r.JSON(p.Raw)
	}
	return c
}

// redactJSONText redacts tool arguments and output: JSON (kept valid) when
// they are, text otherwise.
func redactJSONText(r *redact.Redactor, s string) (string, redact.Counts) {
	if t := strings.TrimSpace(s); t == "" || (t[0] != '{' && t[0] != '[') {
		return r.String(s)
	}
	out, c := r.JSON([]byte(s))
	if c == nil {
		return s, nil
	}
	return string(out), c
}

// redactions tallies what redaction removed from the entries a write
// stored. An entry re-sent unchanged adds nothing: its secrets were counted
// when it was first stored; nor does one dropped for a tombstone.
type redactions redact.Counts

func (t *redactions) stored(o outcome, c redact.Counts) {
	if o == inserted || o == updated {
		(*redact.Counts)(t).Add(c)
	}
}

// save adds the tally to the user's totals, in the write's transaction.
func (t redactions) save(tx *kv.Tx, userID string) error {
	if len(t) == 0 {
		return nil
	}
	return tx.AddRedactions(userID, t)
}

// at returns the i-th of list, or nil.
func at(list []redact.Counts, i int) redact.Counts {
	if i < len(list) {
		return list[i]
	}
	return nil
}
