package index

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hindsight-dev/hindsight/bench"
)

// The corpus and query mix of `hindsight bench load`, for tests that check
// search on it (TestPruningMatchesExhaustive). How fast Search is on them
// is measured by the bench (hindsight bench load), never by a test.

// loadQuery is one query of the load bench's mix.
type loadQuery struct {
	kind string // ident, topic, error or title
	text string
}

// loadQueries draws n queries the way the load bench's Loader does
// for seed 1: identifiers, topic pairs, error messages and session titles
// (of the first 2000 sessions) in turn.
func loadQueries(titles []string, n int) []loadQuery {
	rng := rand.New(rand.NewPCG(1, 7))
	out := make([]loadQuery, n)
	for i := range out {
		out[i].kind, out[i].text = bench.LoadQuery(rng, i, titles)
	}
	return out
}

// putLoadCorpus writes n sessions of bench.NewGenerator(1) into ix, over
// 4 users in the load bench's batches, and returns the users and the
// first 2000 titles (what bench.LoadQuery draws title queries from).
func putLoadCorpus(t testing.TB, ix *Index, n int) (users, titles []string) {
	idRng := rand.New(rand.NewPCG(1, 2))
	newID := func() string { // like kv.NewID: 16 characters of [a-z0-9]
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, 16)
		for i := range b {
			b[i] = alphabet[idRng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 4 {
		users = append(users, newID())
	}
	gen := bench.NewGenerator(1)
	ctx := context.Background()
	start := time.Now()
	var pending []Session
	batchMsgs, batches := 0, 0 // the load bench's POST batches: >= 500 messages, round-robin over users
	for i := 0; i < n; i++ {
		gs := gen.Session(20)
		if len(titles) < 2000 {
			titles = append(titles, gs.Title)
		}
		pending = append(pending, Session{UserID: users[batches%len(users)], SessionID: newID(),
			Title: gs.Title, Body: loadBody(gs)})
		if batchMsgs += len(gs.Messages); batchMsgs >= 500 {
			batchMsgs, batches = 0, batches+1
		}
		if len(pending) == 256 || i == n-1 { // the ingest pipeline's batch size
			if err := ix.Put(ctx, pending); err != nil {
				t.Fatal(err)
			}
			pending = pending[:0]
		}
		if (i+1)%10000 == 0 {
			t.Logf("built %d sessions in %v", i+1, time.Since(start).Round(time.Second))
		}
	}
	return users, titles
}

// loadBody is the session body the ingest pipeline would index:
// exchanges of a user message and the assistant text answering it.
func loadBody(s bench.GenSession) string {
	var exchanges []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			exchanges = append(exchanges, cur.String())
			cur.Reset()
		}
	}
	for _, m := range s.Messages {
		var text string
		switch m.Role {
		case "user":
			text = strings.TrimSpace(m.TextContent)
		case "assistant":
			var parts []string
			for _, p := range m.Parts {
				if p["type"] == "text" {
					if c, _ := p["content"].(string); strings.TrimSpace(c) != "" {
						parts = append(parts, strings.TrimSpace(c))
					}
				}
			}
			text = strings.Join(parts, "\n\n")
		}
		if text == "" {
			continue
		}
		if m.Role == "user" {
			flush()
		} else if cur.Len() > 0 {
			cur.WriteString("\n\n")
		}
		cur.WriteString(text)
	}
	flush()
	return strings.Join(exchanges, "\n\n")
}
