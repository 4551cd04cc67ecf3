package index

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestPruningMatchesExhaustive checks that pruning (narrow) changes
// nothing: on the load bench's corpus and query mix, the top 100 of every
// query, on one goroutine and on several, are the documents, in the same
// order, with the same scores (compared with ==) and the same total as the
// exhaustive evaluation's. Without the race detector it runs at full size,
// 10,000 sessions and 1,000 queries; with it (slower by an order of
// magnitude) on 2,000 sessions and 300 queries.
func TestPruningMatchesExhaustive(t *testing.T) {
	sessions, queries := 10_000, 1000
	if raceEnabled {
		sessions, queries = 2000, 300
	}
	start := time.Now()
	ix := openTest(t, "")
	users, titles := putGenCorpus(t, ix, sessions)
	t.Logf("%d sessions written in %v", sessions, time.Since(start).Round(time.Millisecond))

	ctx := context.Background()
	const limit = 100
	var narrowed atomic.Int64
	pruned := 0 // queries whose evaluation pruning narrowed
	start = time.Now()
	for i, q := range searchperfQueries(titles, queries) {
		pq, err := parseQuery(ix.analyzer, q.text)
		if err != nil {
			t.Fatalf("%q: %v", q.text, err)
		}
		user := users[i%len(users)]
		eval := func(ev evaluation) ([]docHit, uint64) {
			docs, total, err := searchWords(ctx, ix.sessions, &ix.sessionLengths, user, pq, limit, false, ev)
			if err != nil {
				t.Fatalf("%q: %v", q.text, err)
			}
			return docs, total
		}
		want, wantTotal := eval(evaluation{workers: 1, exhaustive: true})
		before := narrowed.Load()
		for _, workers := range []int{1, 3} {
			got, total := eval(evaluation{workers: workers, countAll: true, narrowed: &narrowed})
			if total != wantTotal {
				t.Errorf("%q (%s) workers %d: total %d, want %d", q.text, user, workers, total, wantTotal)
			}
			if len(got) != len(want) {
				t.Errorf("%q (%s) workers %d: %d hits, want %d", q.text, user, workers, len(got), len(want))
				continue
			}
			for k := range got {
				if got[k].id != want[k].id || got[k].score != want[k].score {
					t.Errorf("%q (%s) workers %d: hit %d is %s %v, want %s %v", q.text, user, workers, k,
						got[k].id, got[k].score, want[k].id, want[k].score)
					break
				}
			}
		}
		if narrowed.Load() > before {
			pruned++
		}
	}
	t.Logf("%d queries compared in %v; pruning narrowed %d of them (%d tasks)", queries,
		time.Since(start).Round(time.Millisecond), pruned, narrowed.Load())
	// The comparison means something only if pruning happened.
	if pruned < queries/10 {
		t.Errorf("pruning narrowed only %d of %d queries", pruned, queries)
	}
}
