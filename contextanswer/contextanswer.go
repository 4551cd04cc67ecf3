// Package contextanswer is the answer of a context request (/api/context
// and the MCP context tool) from the sessions ranking chose ([Hit]) to the
// text and messages returned: ingest hydrates each hit from the records
// into a [Session] (its relevant exchanges), and [Assemble] fits them into
// the budget. It depends on the standard library only, so ranking (the
// read side) and ingest (the records) both use it without importing each
// other.
package contextanswer

import (
	"fmt"
	"slices"
	"strings"
)

// Hit is a session chosen for context, with its chunks (ordinals) best
// first.
type Hit struct {
	SessionID string
	Ordinals  []int
}

// Turn is one message of an exchange.
type Turn struct {
	Role    string // "user" or "assistant"
	Content string
}

// Exchange is one exchange of a session with its position in the
// conversation.
type Exchange struct {
	Position int
	Turns    []Turn
}

// Session is a session's material for the context answer: metadata as it
// is shown (Title is the display title, Project the project label:
// ingest.HydrateContext fills them by kv.Session's rules) and its relevant
// exchanges, most relevant first.
type Session struct {
	SessionID, Title, Project, Model string
	Exchanges                        []Exchange
}

// Message is one entry of the messages format.
type Message struct {
	Role     string   `json:"role"`
	Content  string   `json:"content"`
	Metadata Metadata `json:"metadata"`
}

// Metadata names the session a context message came from.
type Metadata struct {
	SessionID    string `json:"sessionId"`
	SessionTitle string `json:"sessionTitle"`
	Project      string `json:"project,omitempty"`
	Model        string `json:"model,omitempty"`
}

// Assemble builds the context answer within maxChars of message content.
// Every session first gets its most relevant exchange, then its second, and
// so on, until the budget is spent; a session's exchanges are then shown in
// conversation order. An exchange that does not fit whole is cut only when it
// would otherwise be the session's only one. It returns the text format, the
// messages format and how many sessions contributed.
func Assemble(query string, sessions []Session, maxChars int) (string, []Message, int) {
	chosen := make([][]Exchange, len(sessions))
	budget := maxChars
	for round := 0; budget > 0; round++ {
		progressed := false
		for i, s := range sessions {
			if round >= len(s.Exchanges) || budget <= 0 {
				continue
			}
			progressed = true
			ex := s.Exchanges[round]
			size := 0
			for _, t := range ex.Turns {
				size += len(t.Content)
			}
			switch {
			case size <= budget:
			case len(chosen[i]) == 0:
				ex = truncate(ex, budget)
				size = budget
			default:
				continue
			}
			chosen[i] = append(chosen[i], ex)
			budget -= size
		}
		if !progressed {
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Relevant coding sessions for: %q\n", query)
	msgs := []Message{}
	count := 0
	for i, s := range sessions {
		if len(chosen[i]) == 0 {
			continue
		}
		count++
		slices.SortFunc(chosen[i], func(a, b Exchange) int { return a.Position - b.Position })
		fmt.Fprintf(&b, "\n--- Session: %s ---\n", s.Title)
		if s.Project != "" {
			fmt.Fprintf(&b, "Project: %s\n", s.Project)
		}
		if s.Model != "" {
			fmt.Fprintf(&b, "Model: %s\n", s.Model)
		}
		meta := Metadata{SessionID: s.SessionID, SessionTitle: s.Title, Project: s.Project, Model: s.Model}
		for _, ex := range chosen[i] {
			for _, t := range ex.Turns {
				fmt.Fprintf(&b, "\n[%s]\n%s\n", strings.ToUpper(t.Role), t.Content)
				msgs = append(msgs, Message{Role: t.Role, Content: t.Content, Metadata: meta})
			}
		}
	}
	return b.String(), msgs, count
}

// truncate cuts an exchange to max characters of content, at a rune boundary.
func truncate(ex Exchange, max int) Exchange {
	out := Exchange{Position: ex.Position}
	for _, t := range ex.Turns {
		if max <= 0 {
			break
		}
		if len(t.Content) > max {
			cut := max
			for cut > 0 && t.Content[cut]&0xC0 == 0x80 {
				cut--
			}
			t.Content = t.Content[:cut] + "…"
		}
		max -= len(t.Content)
		out.Turns = append(out.Turns, t)
	}
	return out
}
