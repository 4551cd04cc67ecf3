package weaviatetext_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/hindsight-dev/hindsight/index"
	"github.com/hindsight-dev/hindsight/index/weaviatetext"
)

// TestTenantStatistics checks, against the real server, that Weaviate's
// BM25 statistics are per tenant (each tenant is a shard of its own, with
// its own document count, frequencies and mean length), so that the text
// index, one tenant per user, gives a user the same answers, ids and
// scores (==), whether the user's sessions are alone in the collections or
// beside other users' (who write the same words in other proportions,
// and delete some of them): for sessions and chunks. And that her session hits are
// those Bleve mode gives her in an index shared with the same other
// users: the same ids, scores in Weaviate's own scale (Bleve's divided by
// k1+1), which holds only because both modes compute a user's statistics
// over her own sessions.
//
// Both are asserted at a limit that reaches all her documents, where
// Weaviate's BlockMax WAND drops nothing. At limit 10 (a fetch of
// minFetch) its pruning is not exact (see the package doc): it left out
// documents of the first ten in a quarter of the session queries here,
// differently in two tenants holding the same documents, so the test only
// counts and logs those differences.
//
// Her sessions and chunks have distinct lengths, so that none of her
// documents tie and every comparison is exact.
//
// She only writes new sessions: her own deletions would make her scores
// depend on the timing of her tenant's memtable flushes and compactions,
// which differs between two tenants given the same writes. Weaviate 1.35's
// BM25 (BlockMax WAND) counts a deleted document's length in the mean
// length until a compaction merges its tombstone with the segment holding
// it, and not at all when the put and the delete met in one memtable; a
// flush comes after an idle or dirty interval, so on a loaded machine the
// "alone" and "beside" tenants split the same operations into segments
// differently, and her scores differ. That is her own
// history, never another user's data; the other users' deletions stay.
// Her "alone" tenant is settled once part-way through her writes and the
// other is not, so the comparison also shows that with writes only the
// segment boundaries change nothing.
func TestTenantStatistics(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(25, 1))
	vocab := make([]string, 300)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i) // words the analyser keeps as they are
	}
	word := func() string { // skewed: low indexes are common
		return vocab[int(float64(len(vocab))*rng.Float64()*rng.Float64())]
	}
	words := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = word()
		}
		return strings.Join(ws, " ")
	}
	session := func(user string, i int, chunkWords ...int) index.Session {
		s := index.Session{UserID: user, SessionID: fmt.Sprintf("%s-%04d", user, i), Title: words(3)}
		var body []string
		for j, n := range chunkWords {
			c := words(n)
			body = append(body, c)
			s.Chunks = append(s.Chunks, index.Chunk{Ordinal: j, Text: c})
		}
		s.Body = strings.Join(body, "\n\n")
		return s
	}
	const mine = 300
	var alice, others []index.Session
	for i := range mine {
		// Chunk j is 5+3i+j words: every chunk of hers has its own
		// length, and so has every session (6 title words and 1 to 3
		// chunks: see the test's doc).
		var chunks []int
		for j := range 1 + i%3 {
			chunks = append(chunks, 5+3*i+j)
		}
		alice = append(alice, session("alice", i, chunks...))
	}
	for i := range 400 {
		s := session("bob", i, 4) // short, on the commonest words
		s.Body += " " + strings.Join(vocab[:8], " ")
		s.Chunks[0].Text = s.Body
		others = append(others, s)
	}
	for i := range 150 {
		others = append(others, session("carol", i, 300, 250)) // long
	}
	for i := range 300 {
		s := session("dave", i, 6) // her rarer words, everywhere
		s.Body += " " + strings.Join(vocab[200:210], " ")
		s.Chunks[0].Text = s.Body
		others = append(others, s)
	}
	// Interleaved in batches, as a shared server receives them.
	all := slices.Clone(alice)
	all = append(all, others...)
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })

	aloneW, aloneSrc := open(t, "TTenantAlone")
	besideW, besideSrc := open(t, "TTenantBeside")
	besideB, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer besideB.Close()
	aloneSrc.put(alice...)
	besideSrc.put(all...)
	batch := 0
	for b := range slices.Chunk(all, 100) {
		hers := slices.DeleteFunc(slices.Clone(b), func(s index.Session) bool { return s.UserID != "alice" })
		if err := aloneW.Put(ctx, hers); err != nil {
			t.Fatal(err)
		}
		if batch++; batch == 4 {
			// Her "alone" tenant's memtables written out a third of the way
			// through, the other's not: with writes only, where the
			// segments split must not change a score.
			if err := aloneW.Settle(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if err := besideW.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := besideB.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// Deletions of every other user (see the test's doc for why not hers).
	for _, user := range []string{"bob", "carol", "dave"} {
		var ids []string
		for i := 2; i < 400; i += 17 {
			ids = append(ids, fmt.Sprintf("%s-%04d", user, i))
		}
		for _, x := range []interface {
			Delete(context.Context, string, []string) error
		}{besideW, besideB} {
			if err := x.Delete(ctx, user, ids); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, wx := range []*weaviatetext.Index{aloneW, besideW} {
		if err := wx.Settle(ctx); err != nil {
			t.Fatal(err)
		}
	}

	var queries []string
	for i := range 40 {
		switch i % 4 {
		case 0:
			queries = append(queries, vocab[rng.IntN(10)]+" "+vocab[200+rng.IntN(10)]) // common and, for her, rare
		case 1:
			queries = append(queries, vocab[rng.IntN(30)])
		case 2:
			queries = append(queries, vocab[rng.IntN(8)]+" "+vocab[30+rng.IntN(100)]+" "+vocab[150+rng.IntN(150)])
		default:
			queries = append(queries, vocab[200+rng.IntN(100)])
		}
	}
	compared, unequal, pruned := 0, 0, 0
	for _, text := range queries {
		for _, kind := range []index.Kind{index.Sessions, index.Chunks} {
			for _, limit := range []int{10, 4 * mine} { // 4*mine: all her sessions and chunks
				q := index.Query{UserID: "alice", Text: text, Kind: kind, Limit: limit}
				want, err := aloneW.Search(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got, err := besideW.Search(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(want) == 0 {
					t.Fatalf("%q %s: no hits: the query tests nothing", text, kind)
				}
				if limit < 2*mine {
					if !identical(got, want) {
						unequal++
					}
					continue
				}
				if !slices.Equal(ids(got), ids(want)) {
					t.Errorf("%q %s limit %d: weaviate beside others %v, alone %v", text, kind, limit, ids(got), ids(want))
					continue
				}
				for i := range got {
					if got[i].Score != want[i].Score {
						t.Errorf("%q %s limit %d: hit %d (%s) scores %v beside others, %v alone", text, kind, limit, i,
							ids(got[i:i+1]), got[i].Score, want[i].Score)
					}
				}
				compared++
				if kind != index.Sessions {
					continue // Bleve scores chunks with the sessions' idf: another model
				}
				bleve, err := besideB.Search(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if small, err := besideB.Search(ctx, index.Query{UserID: "alice", Text: text, Limit: 10}); err != nil {
					t.Fatal(err)
				} else if top, err := besideW.Search(ctx, index.Query{UserID: "alice", Text: text, Limit: 10}); err != nil {
					t.Fatal(err)
				} else if !slices.Equal(ids(top), ids(small)) {
					pruned++
				}
				// The same hits, each scored alike, and at each rank
				// alike: the two orders may differ only among hits
				// whose scores agree to the tolerance (the two engines
				// round differently).
				if !sameIDs(got, bleve) {
					t.Errorf("%q: weaviate %v, bleve %v", text, ids(got), ids(bleve))
					continue
				}
				bleveScore := make(map[string]float64, len(bleve))
				for _, h := range bleve {
					bleveScore[h.SessionID] = h.Score
				}
				near := func(w, b float64) bool { return math.Abs(w*(1+weaviatetext.BM25K1)-b) <= 1e-3*b }
				for i := range got {
					if w, b := got[i].Score, bleveScore[got[i].SessionID]; !near(w, b) {
						t.Errorf("%q: %s scores %.5f in weaviate (times k1+1), %.5f in bleve", text, got[i].SessionID, w*(1+weaviatetext.BM25K1), b)
					}
					if w, b := got[i].Score, bleve[i].Score; !near(w, b) {
						t.Errorf("%q: hit %d scores %.5f in weaviate (times k1+1) (%s), %.5f in bleve (%s): the orders differ beyond a near tie",
							text, i, w*(1+weaviatetext.BM25K1), got[i].SessionID, b, bleve[i].SessionID)
					}
				}
			}
		}
	}
	if compared != 2*len(queries) {
		t.Errorf("%d searches compared at the full limit, want %d", compared, 2*len(queries))
	}
	t.Logf("%d searches compared at the full limit. At limit 10 (Weaviate's pruning): %d of %d searches differ between the two tenants, "+
		"and the first ten of %d of %d session queries differ from Bleve's", compared, unequal, 2*len(queries), pruned, len(queries))
}

// sameIDs reports whether two searches gave the same hits, in any order.
func sameIDs(a, b []index.Hit) bool {
	x, y := ids(a), ids(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// identical reports whether two searches gave the same hits with the same
// scores.
func identical(a, b []index.Hit) bool {
	return slices.EqualFunc(a, b, func(x, y index.Hit) bool {
		return x.SessionID == y.SessionID && x.Ordinal == y.Ordinal && x.Score == y.Score
	})
}
