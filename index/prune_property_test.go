package index

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var pruneSeed = flag.Uint64("prune.seed", 0, "TestPrunedEqualsExhaustiveRandom: run this corpus seed only (0: the fixed seeds and one drawn from the clock)")

// TestPrunedEqualsExhaustiveRandom is the property behind block-max
// pruning, on random corpora: for any corpus and query, the pruned
// evaluation (on one goroutine and on several) returns the exhaustive
// evaluation's documents, in its order, with its scores (==) and its
// total. TestPruningMatchesExhaustive checks it on the load bench's
// corpus; here the corpora are drawn to reach what that one does not:
// a small vocabulary (so words collide and blocks hold many candidates),
// lengths from a word to hundreds (the length part of BM25 moves
// block bounds), repeated words (large term frequencies), several users
// sharing segments, rewrites and deletions after the blocks are cached,
// and a block cache small enough to evict. Queries mix one to six words,
// phrases and exclusions, with limits from 1 to 100.
//
// Each run checks fixed seeds and one drawn from the clock (under -short
// and the race detector, only that one, on a smaller corpus), logged: a
// failure names its seed, which -prune.seed=N runs alone
// (go test ./index -run PrunedEqualsExhaustiveRandom -prune.seed=N).
func TestPrunedEqualsExhaustiveRandom(t *testing.T) {
	t.Parallel() // beside the other data-correctness tests (see skipUnderRace)
	seeds := []uint64{1, 2, 3, uint64(time.Now().UnixNano())}
	if *pruneSeed != 0 {
		seeds = []uint64{*pruneSeed}
	}
	sessions, queries := 600, 120
	if !fullSize() || raceEnabled { // one seed, the clock's, on a small corpus
		seeds, sessions, queries = seeds[len(seeds)-1:], 200, 40
	}
	var pruned, compared atomic.Int64
	t.Run("seeds", func(t *testing.T) {
		for _, seed := range seeds {
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
				t.Parallel()
				t.Logf("seed %d (rerun alone with -prune.seed=%d)", seed, seed)
				p, c := checkPrunedRandom(t, seed, sessions, queries)
				pruned.Add(p)
				compared.Add(c)
			})
		}
	})
	t.Logf("%d queries compared; pruning dropped candidates in %d", compared.Load(), pruned.Load())
	// The property means something only where pruning happened.
	if !t.Failed() && pruned.Load() < compared.Load()/10 {
		t.Errorf("pruning dropped candidates in only %d of %d queries: the corpora no longer exercise it", pruned.Load(), compared.Load())
	}
}

// checkPrunedRandom writes a random corpus of about n sessions drawn from
// seed and compares the evaluations on q random queries, half before and
// half after rewrites and deletions. It returns the queries compared and
// those where pruning dropped candidates.
func checkPrunedRandom(t *testing.T, seed uint64, n, q int) (pruned, compared int64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b9))
	ix := openTest(t, "")
	vocab := make([]string, 40+rng.IntN(400))
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx%d", i, rng.IntN(10))
	}
	zipf := rand.NewZipf(rng, 1.05+rng.Float64(), 1, uint64(len(vocab)-1))
	word := func() string { return vocab[zipf.Uint64()] }
	users := []string{"ann", "bob", "cy"}[:1+rng.IntN(3)]
	text := func() string {
		var words []string
		switch rng.IntN(4) {
		case 0: // short
			for range 1 + rng.IntN(6) {
				words = append(words, word())
			}
		case 1: // long
			for range 150 + rng.IntN(600) {
				words = append(words, word())
			}
		case 2: // one word many times
			w := word()
			for range 1 + rng.IntN(60) {
				words = append(words, w)
			}
			words = append(words, word())
		default:
			for range 10 + rng.IntN(80) {
				words = append(words, word())
			}
		}
		return strings.Join(words, " ")
	}
	session := func(user string, i int) Session {
		s := Session{UserID: user, SessionID: fmt.Sprintf("s%05d", i)}
		if rng.IntN(3) > 0 {
			s.Title = word() + " " + word()
		}
		var msgs []string
		for range 1 + rng.IntN(4) {
			msgs = append(msgs, text())
		}
		s.Body = strings.Join(msgs, "\n\n")
		for j, m := range msgs {
			s.Chunks = append(s.Chunks, Chunk{Ordinal: j, Text: m})
		}
		return s
	}
	written := map[string][]int{} // user -> session numbers
	for i := 0; i < n; {
		var batch []Session
		for range 1 + rng.IntN(n/3) {
			u := users[rng.IntN(len(users))]
			batch = append(batch, session(u, i))
			written[u] = append(written[u], i)
			i++
		}
		put(t, ix, batch...)
	}
	query := func() string {
		var w []string
		for range 1 + rng.IntN(6) {
			w = append(w, word())
		}
		switch rng.IntN(8) {
		case 0:
			if len(w) >= 2 {
				w[0] = `"` + w[0]
				w[1] += `"`
			}
		case 1:
			w = append(w, "-"+word())
		}
		return strings.Join(w, " ")
	}
	check := func(stage string) {
		for range q / 2 {
			text := query()
			user := users[rng.IntN(len(users))]
			limit := []int{1, 3, 10, 20, 100}[rng.IntN(5)]
			pq, err := parseQuery(ix.analyzer, text)
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			var dropped atomic.Int64
			eval := func(ev evaluation) ([]docHit, uint64) {
				res, err := searchWords(ctx, ix.sessions, &ix.sessionLengths, user, pq, limit, ev)
				if err != nil {
					t.Fatalf("%s: %q: %v", stage, text, err)
				}
				return res.docs, res.total
			}
			want, wantTotal := eval(evaluation{workers: 1, exhaustive: true})
			// Phrases are scored on their few candidates (scanPhraseDocs) and,
			// with phraseScan -1, through the blocks.
			for _, v := range []struct{ workers, phraseScan int }{{1, 0}, {3, 0}, {1, -1}} {
				workers := v.workers
				got, total := eval(evaluation{workers: workers, countAll: true, pruned: &dropped, phraseScan: v.phraseScan})
				name := fmt.Sprintf("seed %d, %s: %q (%s) limit %d workers %d phraseScan %d", seed, stage, text, user, limit, workers, v.phraseScan)
				if total != wantTotal {
					t.Errorf("%s: total %d, want %d", name, total, wantTotal)
				}
				if len(got) != len(want) {
					t.Errorf("%s: %d hits, want %d", name, len(got), len(want))
					continue
				}
				for k := range got {
					if got[k] != want[k] {
						t.Errorf("%s: hit %d is %s %v, want %s %v", name, k, got[k].id, got[k].score, want[k].id, want[k].score)
						break
					}
				}
			}
			compared++
			if dropped.Load() > 0 {
				pruned++
			}
		}
	}
	check("written")
	// Rewrites and deletions leave deleted documents under cached blocks
	// computed at another mean length; a small cache evicts as it goes.
	var rewrites []Session
	for _, u := range users {
		var deleted []string
		for _, i := range written[u] {
			switch rng.IntN(5) {
			case 0:
				rewrites = append(rewrites, session(u, i))
			case 1:
				deleted = append(deleted, fmt.Sprintf("s%05d", i))
			}
		}
		if err := ix.Delete(ctx, u, deleted); err != nil {
			t.Fatal(err)
		}
	}
	put(t, ix, rewrites...)
	ix.sessionLengths.blocks.setLimit(64 << 10)
	check("rewritten and deleted")
	return pruned, compared
}
