package ranking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hindsight-dev/hindsight/index"
)

// ContextHit is a session chosen for context, with its chunks best first.
type ContextHit struct {
	SessionID string
	Ordinals  []int
}

// contextDepth is how many chunks each leg fetches for context.
const contextDepth = 100

// ContextHits ranks the user's sessions for a context request: chunks are
// retrieved by full-text and, with an embedder, by vector (fused with RRF);
// sessions are ordered by their best chunk. degraded is "semantic" when the
// vector leg was wanted but failed (the embedding provider or the vector
// store): the answer is then from full-text alone. partial is true when the
// full-text leg stopped at its budget (see Response.Partial).
func (e *Engine) ContextHits(ctx context.Context, userID, text string, limit int) (hits []ContextHit, degraded string, partial bool, err error) {
	depth := e.opts.depth(limit, contextDepth)
	q := Query{UserID: userID, Text: text}
	th, textErr := e.text.Search(ctx, index.Query{UserID: userID, Text: text, Kind: index.Chunks, Limit: depth})
	if errors.Is(textErr, index.ErrPartial) {
		partial, textErr = true, nil
	}
	if textErr != nil && !(errors.Is(textErr, index.ErrBadQuery) && e.emb != nil) {
		return nil, "", false, textErr
	}
	textList := make([]Result, len(th))
	for i, h := range th {
		textList[i] = Result{SessionID: chunkKey(h.SessionID, h.Ordinal), Score: h.Score}
	}
	fused := textList
	if e.emb != nil {
		vh, verr := e.contextVectors(ctx, q, depth)
		var ue *UnavailableError
		switch {
		case errors.As(verr, &ue):
			if textErr != nil {
				return nil, "", false, textErr // neither leg can answer
			}
			e.degrade(ue)
			degraded = "semantic"
		case verr != nil:
			return nil, "", false, verr
		default:
			vecList := make([]Result, len(vh))
			for i, h := range vh {
				vecList[i] = Result{SessionID: chunkKey(h.SessionID, h.Ordinal), Score: h.Score}
			}
			fused = e.fuse(textList, vecList, 2*depth, false)
		}
	}
	bySession := map[string]int{}
	for _, r := range fused {
		sid, ord := splitChunkKey(r.SessionID)
		i, ok := bySession[sid]
		if !ok {
			if len(hits) == limit {
				continue
			}
			i = len(hits)
			bySession[sid] = i
			hits = append(hits, ContextHit{SessionID: sid})
		}
		hits[i].Ordinals = append(hits[i].Ordinals, ord)
	}
	return hits, degraded, partial, nil
}

func (e *Engine) contextVectors(ctx context.Context, q Query, depth int) ([]VectorHit, error) {
	vec, err := e.embedQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	return e.nearest(ctx, q.UserID, vec, depth)
}

// embedQuery embeds the query text under its own deadline, so a slow
// provider costs a bounded delay; failures are *UnavailableError (the
// caller's own cancellation stays itself).
func (e *Engine) embedQuery(ctx context.Context, q Query) ([]float32, error) {
	ectx, cancel := context.WithTimeout(ctx, e.opts.EmbedTimeout)
	defer cancel()
	v, err := e.emb.Embed(ectx, []string{q.Text})
	if err == nil && len(v) != 1 {
		err = fmt.Errorf("embedder returned %d vectors for 1 query", len(v))
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, e.failed(DepProvider, fmt.Errorf("embed query: %w", err))
	}
	e.recovered(DepProvider)
	return v[0], nil
}

func chunkKey(sid string, ord int) string { return fmt.Sprintf("%s#%d", sid, ord) }

func splitChunkKey(k string) (string, int) {
	i := strings.LastIndexByte(k, '#')
	var ord int
	fmt.Sscanf(k[i+1:], "%d", &ord)
	return k[:i], ord
}

// Turn is one message of an exchange.
type Turn struct {
	Role    string // "user" or "assistant"
	Content string
}

// ContextExchange is one exchange of a session with its position in the
// conversation.
type ContextExchange struct {
	Position int
	Turns    []Turn
}

// ContextSession is a session's material for the context answer: metadata
// as it is shown (Title is the display title, Project the project label:
// ingest.HydrateContext fills them by kv.Session's rules) and its relevant
// exchanges, most relevant first.
type ContextSession struct {
	SessionID, Title, Project, Model string
	Exchanges                        []ContextExchange
}

// ContextMessage is one entry of the messages format.
type ContextMessage struct {
	Role     string          `json:"role"`
	Content  string          `json:"content"`
	Metadata ContextMetadata `json:"metadata"`
}

// ContextMetadata names the session a context message came from.
type ContextMetadata struct {
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
func Assemble(query string, sessions []ContextSession, maxChars int) (string, []ContextMessage, int) {
	chosen := make([][]ContextExchange, len(sessions))
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
	msgs := []ContextMessage{}
	count := 0
	for i, s := range sessions {
		if len(chosen[i]) == 0 {
			continue
		}
		count++
		slices.SortFunc(chosen[i], func(a, b ContextExchange) int { return a.Position - b.Position })
		title := s.Title
		fmt.Fprintf(&b, "\n--- Session: %s ---\n", title)
		if s.Project != "" {
			fmt.Fprintf(&b, "Project: %s\n", s.Project)
		}
		if s.Model != "" {
			fmt.Fprintf(&b, "Model: %s\n", s.Model)
		}
		meta := ContextMetadata{SessionID: s.SessionID, SessionTitle: title, Project: s.Project, Model: s.Model}
		for _, ex := range chosen[i] {
			for _, t := range ex.Turns {
				fmt.Fprintf(&b, "\n[%s]\n%s\n", strings.ToUpper(t.Role), t.Content)
				msgs = append(msgs, ContextMessage{Role: t.Role, Content: t.Content, Metadata: meta})
			}
		}
	}
	return b.String(), msgs, count
}

// truncate cuts an exchange to max characters of content, at a rune boundary.
func truncate(ex ContextExchange, max int) ContextExchange {
	out := ContextExchange{Position: ex.Position}
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
