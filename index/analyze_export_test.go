package index

import (
	"context"
	"testing"
)

// TestAnalyzerMatchesLikeSearch: Analyzer.Matches accepts exactly the
// documents Search returns for phrase and exclusion queries, so an index
// kept elsewhere that checks phrases with it filters as Bleve does.
func TestAnalyzerMatchesLikeSearch(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	docs := []Session{
		{UserID: "u", SessionID: "a", Title: "Parse config", Body: "call parseConfigFile before the server starts"},
		{UserID: "u", SessionID: "b", Title: "Files", Body: "the config file of the server, then parse it"},
		{UserID: "u", SessionID: "c", Title: "Other", Body: "server starts slowly; a file is missing"},
	}
	if err := ix.Put(ctx, docs); err != nil {
		t.Fatal(err)
	}
	an, err := NewAnalyzer()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`"config file"`, `"parse config file"`, `"server starts"`, `server -"config file"`,
		`"the server"`, `file -missing`, `"starts before"`, `"parse-config-file"`} {
		hits, err := ix.Search(ctx, Query{UserID: "u", Text: q, Kind: Sessions})
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, h := range hits {
			found[h.SessionID] = true
		}
		pq, err := an.Parse(q)
		if err != nil {
			t.Fatal(err)
		}
		terms := map[string]bool{}
		for _, t := range pq.Terms() {
			terms[t] = true
		}
		for _, d := range docs {
			// Search also needs a term to occur; Matches checks only the
			// phrases and exclusions.
			has := false
			for _, tm := range an.Terms(d.Title + "\n" + d.Body) {
				has = has || terms[tm]
			}
			if got := has && an.MatchesMessages(pq, d.Title, d.Body, d.Breaks); got != found[d.SessionID] {
				t.Errorf("%s on %s: Matches %v, Search found it: %v", q, d.SessionID, got, found[d.SessionID])
			}
		}
	}
}
