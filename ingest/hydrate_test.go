package ingest_test

import (
	"testing"

	"github.com/hindsight-dev/hindsight/contextanswer"
	"github.com/hindsight-dev/hindsight/ingest"
	"github.com/hindsight-dev/hindsight/kv"
	"github.com/hindsight-dev/hindsight/ranking"
)

// TestHydrateHits: search results come back with their sessions in the
// ranking's order and with the ranking's fields; a deleted session, an id
// that names nothing and another user's session are left out.
func TestHydrateHits(t *testing.T) {
	f := newFixture(t)
	a := f.session(`{"externalId":"a","title":"Alpha","projectPath":"/src/web"}`)
	b := f.session(`{"externalId":"b","title":"Beta","projectName":"api"}`)
	gone := f.session(`{"externalId":"c","title":"Gone"}`)
	if err := f.svc.DeleteSession(ctx, f.user, gone); err != nil {
		t.Fatal(err)
	}
	otherUser := f.newUser("bob")
	results := []ranking.Result{
		{SessionID: b, Score: 3, Snippet: "<mark>beta</mark>", MatchedIn: []string{"title"}},
		{SessionID: gone, Score: 2},
		{SessionID: "nosuchsession000", Score: 1.5},
		{SessionID: a, Score: 1, Text: &ranking.Leg{Rank: 1, Score: 0.5}},
	}
	hydrate := func(user string) []ingest.Hit[ranking.Result] {
		t.Helper()
		var hits []ingest.Hit[ranking.Result]
		if err := f.st.View(ctx, func(tx *kv.Tx) error {
			var err error
			hits, err = ingest.HydrateHits(tx, user, results, ranking.SessionOf)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return hits
	}
	hits := hydrate(f.user)
	if len(hits) != 2 || hits[0].Session.ID != b || hits[1].Session.ID != a {
		t.Fatalf("hits = %+v, want b then a", hits)
	}
	if hits[0].Result.Score != 3 || hits[0].Result.Snippet != "<mark>beta</mark>" || hits[0].Result.MatchedIn[0] != "title" || hits[0].Session.Title != "Beta" {
		t.Errorf("hit b lost the ranking's fields or its record: %+v", hits[0])
	}
	if hits[1].Result.Text == nil || hits[1].Result.Text.Rank != 1 || hits[1].Session.ProjectPath != "/src/web" {
		t.Errorf("hit a lost its explain leg or its record: %+v", hits[1])
	}
	if got := hydrate(otherUser); len(got) != 0 {
		t.Errorf("another user hydrated %d of ann's sessions", len(got))
	}
}

// TestHydrateContext: a context hit's session comes with its display title
// and project label (the rules of kv.Session), and the exchanges of its
// chunks, each once; a deleted session and out-of-range ordinals are left
// out.
func TestHydrateContext(t *testing.T) {
	f := newFixture(t)
	untitled := f.session(`{"externalId":"u","title":"  ","projectPath":"/src/tool"}`)
	f.message(`{"externalId":"m1","sessionExternalId":"u","role":"user","textContent":"why is the build slow"}`)
	f.message(`{"externalId":"m2","sessionExternalId":"u","role":"assistant","textContent":"the cache is cold"}`)
	gone := f.session(`{"externalId":"g","title":"Gone"}`)
	if err := f.svc.DeleteSession(ctx, f.user, gone); err != nil {
		t.Fatal(err)
	}
	var got []contextanswer.Session
	if err := f.st.View(ctx, func(tx *kv.Tx) error {
		var err error
		got, err = ingest.HydrateContext(tx, f.user, []contextanswer.Hit{
			{SessionID: gone, Ordinals: []int{0}},
			{SessionID: untitled, Ordinals: []int{0, 0, 7}},
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d sessions, want the live one: %+v", len(got), got)
	}
	cs := got[0]
	if cs.SessionID != untitled || cs.Title != kv.Untitled || cs.Project != "/src/tool" {
		t.Errorf("session = %q %q %q, want the id, %q and the project path", cs.SessionID, cs.Title, cs.Project, kv.Untitled)
	}
	if len(cs.Exchanges) != 1 || len(cs.Exchanges[0].Turns) != 2 || cs.Exchanges[0].Turns[1].Content != "the cache is cold" {
		t.Errorf("exchanges = %+v, want the one exchange once", cs.Exchanges)
	}
}
