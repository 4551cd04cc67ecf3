package index

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPruningMatchesExhaustive checks that the pruned evaluation (block
// maxima, scoreBest) changes nothing: on the load bench's corpus and query
// mix, the top 100 of every query, on one goroutine and on several, are
// the documents, in the same order, with the same scores (compared with
// ==) and the same total as the exhaustive evaluation's.
//
// The corpus spans several segments and four users. Some queries get a
// phrase or an exclusion. Halfway through, the best hits of earlier
// queries are deleted (the cached blocks, built before, then hold deleted
// postings and were computed at another mean length) and the block cache
// is shrunk so that it evicts and rebuilds as it goes. At full size
// (fullSize) it runs on 10,000 sessions and 1,000 queries; under -short on
// 1,500 sessions and 120 queries; not under the race detector
// (skipUnderRace).
func TestPruningMatchesExhaustive(t *testing.T) {
	skipUnderRace(t)
	sessions, queries := 10_000, 1000
	if !fullSize() {
		sessions, queries = 1500, 120
	}
	start := time.Now()
	ix := openTest(t, "")
	users, titles := putLoadCorpus(t, ix, sessions)
	t.Logf("%d sessions written in %v", sessions, time.Since(start).Round(time.Millisecond))
	if n := segmentCount(t, ix); n < 2 {
		t.Fatalf("the corpus is in %d segment(s): the test needs several", n)
	}

	ctx := context.Background()
	const limit = 100
	var dropped atomic.Int64 // candidates pruning did not score to the end
	pruned := 0              // queries it dropped some from
	var deleted [][2]string  // user, session
	qs := loadQueries(titles, queries)
	start = time.Now()
	for i, q := range qs {
		text := q.text
		switch i % 10 {
		case 3: // a phrase: the first two words of the query
			if w := strings.Fields(text); len(w) >= 3 {
				text = fmt.Sprintf("%q %s", w[0]+" "+w[1], strings.Join(w[2:], " "))
			}
		case 6: // an exclusion: a word of the next query
			if w := strings.Fields(qs[(i+1)%len(qs)].text); len(w) > 0 {
				text += " -" + w[0]
			}
		}
		pq, err := parseQuery(ix.analyzer, text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		user := users[i%len(users)]
		if i == queries/2 {
			for _, d := range deleted {
				if err := ix.Delete(ctx, d[0], []string{d[1]}); err != nil {
					t.Fatal(err)
				}
			}
			ix.sessionLengths.blocks.setLimit(1 << 20)
			t.Logf("deleted %d sessions; segments now %d", len(deleted), segmentCount(t, ix))
		}
		eval := func(ev evaluation) ([]docHit, uint64) {
			res, err := searchWords(ctx, ix.sessions, &ix.sessionLengths, user, pq, limit, ev)
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			return res.docs, res.total
		}
		want, wantTotal := eval(evaluation{workers: 1, exhaustive: true})
		before := dropped.Load()
		// Phrases are scored on their few candidates (scanPhraseDocs) and,
		// with phraseScan -1, through the blocks.
		for _, v := range []struct{ workers, phraseScan int }{{1, 0}, {3, 0}, {1, -1}} {
			workers := v.workers
			got, total := eval(evaluation{workers: workers, countAll: true, pruned: &dropped, phraseScan: v.phraseScan})
			if total != wantTotal {
				t.Errorf("%q (%s) workers %d phraseScan %d: total %d, want %d", text, user, workers, v.phraseScan, total, wantTotal)
			}
			if len(got) != len(want) {
				t.Errorf("%q (%s) workers %d phraseScan %d: %d hits, want %d", text, user, workers, v.phraseScan, len(got), len(want))
				continue
			}
			for k := range got {
				if got[k].id != want[k].id || got[k].score != want[k].score {
					t.Errorf("%q (%s) workers %d phraseScan %d: hit %d is %s %v, want %s %v", text, user, workers, v.phraseScan, k,
						got[k].id, got[k].score, want[k].id, want[k].score)
					break
				}
			}
		}
		if dropped.Load() > before {
			pruned++
		}
		if i < queries/2 && i%4 == 0 && len(want) > 0 {
			owner, session, ok := splitKey(want[0].id)
			if !ok {
				t.Fatalf("malformed document id %q", want[0].id)
			}
			deleted = append(deleted, [2]string{owner, session})
		}
	}
	entries, bytes, _ := ix.sessionLengths.blocks.stats()
	t.Logf("%d queries compared in %v; pruning dropped candidates in %d of them (%d in all); cache %d entries, %d bytes",
		queries, time.Since(start).Round(time.Millisecond), pruned, dropped.Load(), entries, bytes)
	// The comparison means something only if pruning happened (in 94-96%
	// of the queries at full size, about half on the race detector's
	// smaller corpus).
	if pruned < queries/4 {
		t.Errorf("pruning dropped candidates in only %d of %d queries", pruned, queries)
	}
}

// segmentCount returns the number of segments of ix's sessions index.
func segmentCount(t *testing.T, ix *Index) int {
	t.Helper()
	segs, release := snapshotSegments(t, ix)
	defer release()
	return len(segs)
}
