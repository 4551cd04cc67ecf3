package index

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	bleveindex "github.com/blevesearch/bleve_index_api"
)

// mapSource is a TextSource over fixed sessions; it records its calls.
// Given a body size it returns no more than asked for, the least a source
// may return.
type mapSource struct {
	sessions  map[string]Session // user + "/" + session id
	calls     [][]string
	bodyBytes []int
	err       error
}

func (m *mapSource) SessionText(_ context.Context, userID string, ids []string, bodyBytes int) (map[string]Session, error) {
	m.calls = append(m.calls, slices.Clone(ids))
	m.bodyBytes = append(m.bodyBytes, bodyBytes)
	if m.err != nil {
		return nil, m.err
	}
	out := map[string]Session{}
	for _, id := range ids {
		if s, ok := m.sessions[userID+"/"+id]; ok {
			if bodyBytes > 0 {
				s = Session{UserID: s.UserID, SessionID: s.SessionID, Title: s.Title, Body: s.Body[:min(bodyBytes, len(s.Body))]}
			}
			out[id] = s
		}
	}
	return out, nil
}

// storedFields names the stored fields of the session document with id.
func storedFields(t *testing.T, ix *Index, id string) []string {
	t.Helper()
	d, err := ix.sessions.Document(id)
	if err != nil || d == nil {
		t.Fatalf("Document(%q) = %v, %v", id, d, err)
	}
	var names []string
	// A document read back from the index holds its stored fields only.
	d.VisitFields(func(f bleveindex.Field) { names = append(names, f.Name()) })
	return names
}

// TestTextSource: an index given a TextSource stores no text, and its
// hits, snippets and matchedIn are those of an index that stores it.
func TestTextSource(t *testing.T) {
	ss := []Session{
		chunked("u", "xss", "Sanitise <b>HTML</b>",
			`The page rendered <script>alert("x")</script> & we must escape parseConfigFile output.`,
			"then the config loader retries the request"),
		chunked("u", "title-only", "Config loader", "nothing relevant here"),
		chunked("u", "race", "", "a race condition in the scheduler", "the race track config"),
		chunked("other", "xss", "Config of another user", "config config config"),
		// A match near the end of what a snippet scans, in a body longer
		// than that.
		chunked("u", "long", "", strings.Repeat("filler words here. ", 1720)+"the needle is here, then "+strings.Repeat("more filler. ", 200)),
	}
	for i := range 30 {
		ss = append(ss, chunked("u", fmt.Sprintf("s%02d", i), fmt.Sprintf("session %d about topic%d", i, i%7),
			fmt.Sprintf("message about config%d and parser%d", i%5, i%3), "another message with auth details"))
	}
	src := &mapSource{sessions: map[string]Session{}}
	for _, s := range ss {
		src.sessions[s.UserID+"/"+s.SessionID] = s
	}
	stored := openTest(t, "")
	ix, err := Open(t.TempDir(), Options{Text: src})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	put(t, stored, ss...)
	put(t, ix, ss...)

	if got := storedFields(t, stored, docKey("u", "xss")); !reflect.DeepEqual(sorted(got), []string{fieldBody, fieldBreaks, fieldChunk, fieldChunk, fieldTitle}) {
		t.Errorf("stored fields without a source = %v, want title, body, breaks and the two chunks", got)
	}
	if got := storedFields(t, ix, docKey("u", "xss")); len(got) != 0 {
		t.Errorf("document stores %v with a text source, want nothing", got)
	}

	for _, q := range []Query{
		{UserID: "u", Text: "config", Limit: 100},
		{UserID: "u", Text: "sanitise escape"},
		{UserID: "u", Text: `"race condition" scheduler`},
		{UserID: "u", Text: "config -race"},
		{UserID: "u", Text: "script config", Kind: Chunks, Limit: 100},
		// Many equal scores: all of them, as the two indexes may break
		// ties at the limit differently (their segments differ); 200
		// reads up to 50 sessions, all that match.
		{UserID: "u", Text: `"another message" topic4`, Kind: Chunks, Limit: 200},
		{UserID: "other", Text: "config", Kind: Chunks},
		{UserID: "u", Text: "needle"},
		{UserID: "u", Text: "needle filler"},
	} {
		q.Explain = true
		want := search(t, stored, q)
		src.calls, src.bodyBytes = nil, nil
		got := search(t, ix, q)
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v with a text source:\n got %+v\nwant %+v", q, got, want)
		}
		if len(src.calls) != 1 {
			t.Errorf("%+v: %d calls to the source, want one for all hits", q, len(src.calls))
			continue
		}
		var sessions []string
		for _, h := range want {
			if !slices.Contains(sessions, h.SessionID) {
				sessions = append(sessions, h.SessionID)
			}
		}
		// Chunks and phrases the pairs do not decide are read whole; a
		// snippet only reads the start of a body.
		pq, err := parseQuery(ix.analyzer, q.Text)
		if err != nil {
			t.Fatal(err)
		}
		whole := q.Kind == Chunks || pq.needsCheck()
		if whole && src.bodyBytes[0] != 0 || !whole && src.bodyBytes[0] <= 0 {
			t.Errorf("%+v: source asked for a body of %d bytes", q, src.bodyBytes[0])
		}
		// Chunks are read from the best sessions, at most chunkSessions
		// without a phrase.
		if q.Kind == Chunks {
			for _, id := range sessions {
				if !slices.Contains(src.calls[0], id) {
					t.Errorf("%+v: source not asked for %s, a hit's session", q, id)
				}
			}
			if len(pq.Phrases) == 0 && len(src.calls[0]) > chunkSessions(q.Limit) {
				t.Errorf("%+v: source asked for %d sessions, more than %d", q, len(src.calls[0]), chunkSessions(q.Limit))
			}
		} else if !whole && !reflect.DeepEqual(sorted(src.calls[0]), sorted(sessions)) {
			t.Errorf("%+v: source asked for %v, want the hits' sessions %v", q, src.calls[0], sessions)
		}
	}

	// Without Explain the source is not asked.
	src.calls = nil
	if hits := search(t, ix, Query{UserID: "u", Text: "config"}); len(hits) == 0 || hits[0].Snippet != "" || len(src.calls) != 0 {
		t.Errorf("search without Explain: hits %+v, %d source calls", hits, len(src.calls))
	}
	// A session gone from the source (deleted, not yet out of the index)
	// is still a hit, without a snippet.
	delete(src.sessions, "u/title-only")
	for _, h := range search(t, ix, Query{UserID: "u", Text: "loader", Explain: true}) {
		if h.SessionID == "title-only" && (h.Snippet != "" || h.MatchedIn != nil) {
			t.Errorf("hit of a session the source lacks: %+v", h)
		}
	}
	// The source failing fails the search.
	src.err = errors.New("records unavailable")
	if _, err := ix.Search(context.Background(), Query{UserID: "u", Text: "config", Explain: true}); !errors.Is(err, src.err) {
		t.Errorf("search with a failing source: %v", err)
	}
}
