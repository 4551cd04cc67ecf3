package ingest

import (
	"github.com/hindsight-dev/hindsight/contextanswer"
	"github.com/hindsight-dev/hindsight/kv"
)

// ContextSessions turns the sessions ranking chose for a context answer into
// their material: for each live session, the exchanges that hold its hit
// chunks, most relevant first, each exchange once. It lives here because the
// chunking rule that maps an ordinal back to its exchange is ingest's. Every
// front end (the REST API, the MCP tools) calls it inside its read
// transaction; sessions deleted since they were indexed are left out.
func ContextSessions(tx *kv.Tx, userID string, hits []contextanswer.Hit) ([]contextanswer.Session, error) {
	var out []contextanswer.Session
	for _, h := range hits {
		d, err := LoadDoc(tx, userID, h.SessionID)
		if err != nil {
			return nil, err
		}
		if d.Deleted {
			continue
		}
		project := d.Session.ProjectName
		if project == "" {
			project = d.Session.ProjectPath
		}
		cs := contextanswer.Session{SessionID: d.SessionID, Title: d.Session.Title, Model: d.Session.Model, Project: project}
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
