package httpd_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/hindsight-dev/hindsight/httpd"
	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/ranking"
)

// budgetText is a text index whose every search stopped at its budget.
type budgetText struct{ partial bool }

func (b budgetText) Search(context.Context, index.Query) ([]index.Hit, error) {
	if b.partial {
		return nil, index.ErrPartial
	}
	return nil, nil
}

// TestSearchSaysPartial: a search or context answer whose full-text search
// stopped at its budget says so, in the body and in a header; a complete
// one carries neither.
func TestSearchSaysPartial(t *testing.T) {
	for _, partial := range []bool{true, false} {
		a := newApp(t, options{search: ranking.New(budgetText{partial}, nil, nil, ranking.Options{})})
		key := a.user("ann")
		for _, path := range []string{`/api/search?q="x+y+z"`, `/api/context?q="x+y+z"`, `/api/context?format=messages&q="x+y+z"`} {
			r := a.req(http.MethodGet, path, key, nil)
			if r.status != http.StatusOK {
				t.Fatalf("%s: status %d\n%s", path, r.status, r.body)
			}
			body := r.json(t)
			got, _ := body["partial"].(bool)
			_, present := body["partial"]
			if got != partial || (!partial && present) || (r.header.Get(httpd.PartialHeader) == "true") != partial {
				t.Errorf("partial search, %v: %s says partial %v (in body: %v), header %q", partial, path, got, present, r.header.Get(httpd.PartialHeader))
			}
		}
	}
}
