package dashboard

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/ranking"
)

// downSearcher is a search engine whose semantic dependency is down:
// semantic fails as ranking fails it, full-text answers.
type downSearcher struct{ results []ranking.Result }

func (d *downSearcher) Semantic() bool { return true }
func (d *downSearcher) Search(_ context.Context, q ranking.Query) (ranking.Response, error) {
	switch q.Mode {
	case ranking.Semantic:
		return ranking.Response{}, &ranking.UnavailableError{Dependency: ranking.DepVectorStore, Err: context.DeadlineExceeded}
	case ranking.Hybrid:
		return ranking.Response{Results: d.results, Degraded: "semantic", Cause: ranking.DepVectorStore}, nil
	}
	return ranking.Response{Results: d.results}, nil
}

// TestDegradedNotice: with a dependency of semantic search down, a semantic
// or hybrid search shows full-text results under a notice naming the
// dependency, not an error page.
func TestDegradedNotice(t *testing.T) {
	ds := &downSearcher{}
	f := newFixture(t, Config{Search: ds})
	alice, _ := seed(t, f)
	ds.results = []ranking.Result{{SessionID: f.sessionID(alice, "s1"), Score: 2}}
	b := f.browser()
	b.signIn("alice")
	for _, mode := range []string{"semantic", "hybrid"} {
		p := b.get("/sessions?q=anything&mode="+mode).want(t, http.StatusOK)
		if got := rowTitles(t, p); len(got) != 1 {
			t.Errorf("%s: rows %q, want the full-text result", mode, got)
		}
		notes := texts(t, p.doc, "p.note")
		if len(notes) != 1 || !strings.Contains(notes[0], "the vector store is failing") || !strings.Contains(notes[0], "full-text results") {
			t.Errorf("%s: notice %q, want one naming the vector store", mode, notes)
		}
	}
}
