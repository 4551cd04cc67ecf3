package ingest

import (
	"errors"

	"github.com/hindsight-dev/hindsight/contextanswer"
	"github.com/hindsight-dev/hindsight/kv"
)

// Hydration turns what ranking chose (session ids, chunk ordinals) into the
// records the front ends show, inside the caller's read transaction, for the
// caller's user only. Sessions deleted since they were indexed are left out:
// the index and the vectors are a step behind the records, and a deletion
// must never show again.

// Hit is a search result (a ranking.Result) with its session's record.
type Hit[R any] struct {
	Result  R
	Session kv.Session
}

// HydrateHits reads the sessions of a search's results (sessionOf gives a
// result's session id), keeping their order. The REST API, the MCP tools
// and the dashboard show search results through it. It is generic so that
// ingest need not import ranking (ranking.SessionOf is the accessor).
func HydrateHits[R any](tx *kv.Tx, userID string, results []R, sessionOf func(R) string) ([]Hit[R], error) {
	out := make([]Hit[R], 0, len(results))
	for _, r := range results {
		s, err := tx.Session(userID, sessionOf(r))
		if errors.Is(err, kv.ErrNotFound) {
			continue // deleted after it was indexed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Hit[R]{Result: r, Session: s})
	}
	return out, nil
}

// HydrateContext turns the sessions ranking chose for a context answer
// (ranking.Engine.ContextHits) into their material: for each live session,
// its display title and project label and the exchanges that hold its hit
// chunks, most relevant first, each exchange once. It lives here because the
// chunking rule that maps an ordinal back to its exchange is ingest's. The
// REST API and the MCP tools call it.
func HydrateContext(tx *kv.Tx, userID string, hits []contextanswer.Hit) ([]contextanswer.Session, error) {
	var out []contextanswer.Session
	for _, h := range hits {
		d, err := LoadDoc(tx, userID, h.SessionID)
		if err != nil {
			return nil, err
		}
		if d.Deleted {
			continue
		}
		cs := contextanswer.Session{SessionID: d.SessionID, Title: d.Session.DisplayTitle(), Model: d.Session.Model, Project: d.Session.ProjectLabel()}
		seen := map[int]bool{}
		for _, ord := range h.Ordinals {
			if ord < 0 || ord >= len(d.Chunks) {
				continue // the index is a step behind the records
			}
			ex := d.Chunks[ord].Exchange
			if seen[ex] {
				continue
			}
			seen[ex] = true
			e := d.Exchanges[ex]
			ce := contextanswer.Exchange{Position: ex}
			if e.User != "" {
				ce.Turns = append(ce.Turns, contextanswer.Turn{Role: "user", Content: e.User})
			}
			if e.Assistant != "" {
				ce.Turns = append(ce.Turns, contextanswer.Turn{Role: "assistant", Content: e.Assistant})
			}
			cs.Exchanges = append(cs.Exchanges, ce)
		}
		out = append(out, cs)
	}
	return out, nil
}
