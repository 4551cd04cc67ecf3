package ranking

import (
	"context"
	"errors"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
)

// partialText answers every query with its hits and index.ErrPartial, as
// the index does when a phrase's checks ran out of budget.
type partialText struct{ hits []index.Hit }

func (p partialText) Search(context.Context, index.Query) ([]index.Hit, error) {
	return p.hits, index.ErrPartial
}

// TestPartialIsSaid: a full-text answer the index marked partial keeps its
// hits and says so, in full-text, hybrid and context; a complete one does
// not.
func TestPartialIsSaid(t *testing.T) {
	ctx := context.Background()
	hits := []index.Hit{{SessionID: "a", Ordinal: 0, Score: 2}, {SessionID: "b", Ordinal: 1, Score: 1}}
	vec := fakeVec{hits: []VectorHit{{SessionID: "c", Score: 0.9}}}
	for _, tt := range []struct {
		name    string
		text    TextSearcher
		partial bool
	}{
		{"partial", partialText{hits}, true},
		{"complete", fakeText{hits: map[string][]index.Hit{`"x y z"`: hits}}, false},
	} {
		e := New(tt.text, vec, fakeEmb{}, Options{})
		for _, mode := range []Mode{FullText, Hybrid} {
			res, err := e.Search(ctx, Query{UserID: "u", Text: `"x y z"`, Mode: mode, Limit: 10})
			if err != nil {
				t.Fatalf("%s %s: %v", tt.name, mode, err)
			}
			if res.Partial != tt.partial || len(res.Results) < 2 {
				t.Errorf("%s %s: partial %v with %d results, want %v with the hits", tt.name, mode, res.Partial, len(res.Results), tt.partial)
			}
		}
		got, _, partial, err := e.ContextHits(ctx, "u", `"x y z"`, 5)
		if err != nil || partial != tt.partial || len(got) < 2 {
			t.Errorf("%s context: %v sessions, partial %v, err %v; want the hits, partial %v", tt.name, len(got), partial, err, tt.partial)
		}
	}
	// Any other error is still an error.
	e := New(errText{}, nil, nil, Options{})
	if _, err := e.Search(ctx, Query{UserID: "u", Text: "x"}); err == nil {
		t.Error("a failing index gave no error")
	}
}

type errText struct{}

func (errText) Search(context.Context, index.Query) ([]index.Hit, error) {
	return nil, errors.New("broken")
}
