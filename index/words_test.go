package index

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
)

// TestSearchWordsMatchesBleve checks the direct evaluation of plain-word
// queries (searchWords) against the Bleve query it replaces, on an index
// with several users, several segments, updated and deleted documents and
// documents with equal scores: the same documents in the same order with
// the same scores, for both kinds and with Explain.
func TestSearchWordsMatchesBleve(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	s := newSynth(5)
	users := []string{"alice", "bob", "carol"}
	session := func(i int) Session {
		se := Session{UserID: users[i%len(users)], SessionID: fmt.Sprintf("s%05d", i), Title: s.message(5)}
		var msgs []string
		for range 1 + i%5 {
			msgs = append(msgs, s.message(30))
		}
		se.Body = strings.Join(msgs, "\n\n")
		for j, m := range msgs {
			se.Chunks = append(se.Chunks, Chunk{Ordinal: j, Text: m})
		}
		return se
	}
	texts := s.queries(40)
	texts = append(texts, "zebra", "zebra crossing", "twin zebra", "nowhereword", "nowhereword zebra",
		s.pick(0, 5), s.pick(0, 3)+" "+s.pick(3, 6), s.identifier()+" "+s.identifier())
	var long []string // more words than Bleve's slice disjunction takes
	for range 14 {
		long = append(long, s.pick(0, 400))
	}
	texts = append(texts, strings.Join(long, " "))
	// snapshot returns idx's current snapshot. Scores depend on it (Bleve's
	// average document length counts terms per segment, so it moves when
	// segments merge): the two evaluations are compared only when they ran
	// on the same one.
	snapshot := func(idx bleve.Index) *scorch.IndexSnapshot {
		adv, err := idx.Advanced()
		if err != nil {
			t.Fatal(err)
		}
		r, err := adv.Reader()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		return r.(*scorch.IndexSnapshot)
	}
	// check compares the two evaluations. It runs right after writes,
	// before Bleve's background merges, so that it sees several segments
	// and deleted documents.
	check := func(stage string) {
		var segs, deleted uint64
		for _, s := range snapshot(ix.sessions).Segments() {
			segs++
			if s.Deleted() != nil {
				deleted += s.Deleted().GetCardinality()
			}
		}
		t.Logf("%s: %d session segments, %d deleted documents", stage, segs, deleted)
		for _, text := range texts {
			pq, err := parseQuery(ix.analyzer, text)
			if err != nil {
				continue
			}
			for _, kind := range []Kind{Sessions, Chunks} {
				idx := ix.sessions
				if kind == Chunks {
					idx = ix.chunks
				}
				for k, user := range users {
					// Every user's queries run on one goroutine and on several
					// (the work split by segment and document range).
					workers := 1 + 2*(k%2)
					for _, limit := range []int{3, 20, 1000} {
						explain := limit == 3
						var got, want []docHit
						var total, wantTotal uint64
						for {
							before := snapshot(idx)
							var done bool
							got, total, done, err = searchWords(ctx, idx, user, pq.Terms, limit, explain, workers)
							if err != nil || !done {
								t.Fatalf("searchWords(%q): done=%v, %v", text, done, err)
							}
							if want, wantTotal, err = searchBleve(ctx, idx, user, pq, limit, explain); err != nil {
								t.Fatal(err)
							}
							if snapshot(idx) == before {
								break
							}
						}
						if total != wantTotal || !sameDocs(got, want, len(pq.Terms) > 10) {
							t.Errorf("%s: %q %s %s limit %d: searchWords gives (total %d)\n%v\nBleve (total %d)\n%v",
								stage, text, kind, user, limit, total, got, wantTotal, want)
						}
					}
				}
			}
		}
	}

	const n = 1500 // above minDocsForFrequent, so that plans apply
	for i := 0; i < n; i += 250 {
		var batch []Session
		for j := i; j < min(i+250, n); j++ {
			batch = append(batch, session(j))
		}
		if err := ix.Put(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	check("written")
	// Rewritten sessions leave deleted documents in older segments.
	var batch []Session
	for j := 0; j < n; j += 7 {
		batch = append(batch, session(j))
	}
	if err := ix.Put(ctx, batch); err != nil {
		t.Fatal(err)
	}
	check("rewritten")
	if err := ix.Delete(ctx, "alice", []string{"s00003", "s00030", "s00300"}); err != nil {
		t.Fatal(err)
	}
	// Identical documents: the limit cuts through a run of equal scores.
	var twins []Session
	for j := range 30 {
		twins = append(twins, Session{UserID: "bob", SessionID: fmt.Sprintf("twin%02d", j), Title: "twin", Body: "zebra crossing zebra"})
	}
	if err := ix.Put(ctx, twins); err != nil {
		t.Fatal(err)
	}
	check("deleted, twins")
}

// sameDocs compares two results. With roundoff set, scores may
// differ in the last bits (Bleve's heap disjunction, used for more than
// ten words, sums in an order of its own), and documents whose scores are
// that close may swap.
func sameDocs(a, b []docHit, roundoff bool) bool {
	if !roundoff {
		return reflect.DeepEqual(a, b)
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i].score-b[i].score) > 1e-12*math.Abs(b[i].score) {
			return false
		}
		if a[i].id != b[i].id && math.Abs(a[i].score-a[min(i+1, len(a)-1)].score) > 1e-12*a[i].score &&
			math.Abs(a[i].score-a[max(i-1, 0)].score) > 1e-12*a[i].score {
			return false
		}
	}
	return true
}
