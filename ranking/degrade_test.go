package ranking

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hindsight-dev/hindsight/index"
)

// failingVec is a vector store that is down.
type failingVec struct{}

func (failingVec) Nearest(context.Context, string, []float32, int) ([]VectorHit, error) {
	return nil, errors.New("connection refused")
}

// waitError is a provider error that asks for a wait, as
// *vectors.ProviderError does with Retry-After.
type waitError struct{ d time.Duration }

func (e waitError) Error() string             { return "rate limited" }
func (e waitError) RetryDelay() time.Duration { return e.d }

// TestOneRuleForAFailingDependency: whichever dependency fails (the
// embedding provider or the vector store), hybrid and context answer from
// full-text and say so, semantic fails with an *UnavailableError naming the
// dependency and the wait (the provider's, else DefaultRetryAfter); each is
// counted, and the log has one line when the failure starts and one when it
// ends, however many queries meet it.
func TestOneRuleForAFailingDependency(t *testing.T) {
	text := fakeText{hits: map[string][]index.Hit{"q": {{SessionID: "t1", Score: 3}, {SessionID: "t2", Score: 2}}}}
	good := fakeVec{hits: []VectorHit{{SessionID: "v1", Score: 0.9}}}
	tests := []struct {
		name      string
		vec       VectorSearcher
		emb       Embedder
		dep       string
		wantRetry time.Duration
	}{
		{"provider down", good, fakeEmb{err: errors.New("provider down")}, DepProvider, DefaultRetryAfter},
		{"provider rate-limited", good, fakeEmb{err: waitError{3 * time.Second}}, DepProvider, 3 * time.Second},
		{"vector store down", failingVec{}, fakeEmb{}, DepVectorStore, DefaultRetryAfter},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			degraded, unavailable := map[string]int{}, map[string]int{}
			e := New(text, tt.vec, tt.emb, Options{Logger: zerolog.New(&logs),
				OnDegraded:    func(dep string) { degraded[dep]++ },
				OnUnavailable: func(dep string) { unavailable[dep]++ }})
			for range 3 {
				res, err := e.Search(ctx, Query{UserID: "u", Text: "q", Mode: Hybrid, Limit: 5})
				if err != nil || res.Degraded != "semantic" || res.Cause != tt.dep || ids(res.Results) != "t1,t2" {
					t.Errorf("hybrid: %q %v degraded=%q cause=%q", ids(res.Results), err, res.Degraded, res.Cause)
				}
				hits, deg, _, err := e.ContextHits(ctx, "u", "q", 5)
				if err != nil || deg != "semantic" || len(hits) != 2 {
					t.Errorf("context: %+v %q %v", hits, deg, err)
				}
				_, err = e.Search(ctx, Query{UserID: "u", Text: "q", Mode: Semantic, Limit: 5})
				var ue *UnavailableError
				if !errors.As(err, &ue) || ue.Dependency != tt.dep || ue.RetryAfter != tt.wantRetry {
					t.Errorf("semantic: %v; want an UnavailableError for %s, retry after %s", err, tt.dep, tt.wantRetry)
				}
			}
			if degraded[tt.dep] != 6 || unavailable[tt.dep] != 3 || len(degraded) != 1 || len(unavailable) != 1 {
				t.Errorf("counted degraded %v unavailable %v; want 6 and 3 for %s", degraded, unavailable, tt.dep)
			}
			if n := strings.Count(logs.String(), "semantic search degraded"); n != 1 {
				t.Errorf("the failure was logged %d times over 9 queries, want once:\n%s", n, logs.String())
			}
		})
	}

	// Recovery is logged once, and the next failure again.
	var logs bytes.Buffer
	emb := &switchEmb{}
	e := New(text, good, emb, Options{Logger: zerolog.New(&logs)})
	for _, fail := range []bool{true, true, false, false, true} {
		emb.err = nil
		if fail {
			emb.err = errors.New("down")
		}
		e.Search(ctx, Query{UserID: "u", Text: "q", Mode: Hybrid})
	}
	if d, r := strings.Count(logs.String(), "semantic search degraded"), strings.Count(logs.String(), "semantic search recovered"); d != 2 || r != 1 {
		t.Errorf("logged %d failures and %d recoveries, want 2 and 1:\n%s", d, r, logs.String())
	}

	// The caller's own cancellation is not a dependency failing.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	down := New(text, good, fakeEmb{err: context.Canceled}, Options{})
	if _, err := down.Search(cancelled, Query{UserID: "u", Text: "q", Mode: Semantic}); !errors.Is(err, context.Canceled) {
		t.Errorf("semantic with the request cancelled: %v", err)
	}
}

type switchEmb struct{ err error }

func (s *switchEmb) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return fakeEmb{err: s.err}.Embed(ctx, texts)
}
