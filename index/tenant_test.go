package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// tenantUser is the user whose results TestTenantStatistics compares.
const tenantUser = "alice"

// tenantStep is one write of the tenant corpus: sessions to put, or
// sessions of one user to delete.
type tenantStep struct {
	put       []Session
	delUser   string
	delete    []string
	checkHere bool // compare the results after this step
}

// tenantCorpus returns, seeded, the writes of tenantUser's sessions and
// of three other users', interleaved: batches of sessions of every user,
// then rewrites (which leave deleted documents in older segments) and
// deletions of every user. The others write the same vocabulary in other
// proportions, so that any statistic counted over their documents would
// change tenantUser's: bob's sessions are short and stuffed with
// mid-frequency words, carol's are long, and dave writes a handful of
// words tenantUser uses in a few percent of her sessions into every one of
// his (the case: a word another user wrote into 1,200 sessions).
//
// tenantUser's live sessions have distinct lengths (a few words "padword"
// are appended where needed), so that two of her documents rarely tie on
// a query: a limit that cuts through equal scores may keep either, by
// their order in the index (within a batch, Bleve's order is a map's), so
// the test leaves out the few queries where two of her documents tie.
func tenantCorpus(a *Index, alice, bob, carol, dave int) (steps []tenantStep, queries []string) {
	s := newSynth(11)
	rng := rand.New(rand.NewPCG(11, 3))
	used := map[int]string{} // tenantUser's session lengths -> session
	length := func(se Session) int { return len(a.analyzer.Analyze([]byte(sessionText(se, a.repeat)))) }
	pad := func(se *Session) {
		n := length(*se)
		if old, ok := used[n]; ok && old != se.SessionID {
			k := 1
			for {
				if old, ok := used[n+k]; !ok || old == se.SessionID {
					break
				}
				k++
			}
			extra := strings.Repeat(" padword", k)
			se.Body += extra
			se.Chunks[len(se.Chunks)-1].Text += extra
			n += k
		}
		for l, id := range used {
			if id == se.SessionID {
				delete(used, l)
			}
		}
		used[n] = se.SessionID
	}
	dense := make([]string, 4) // what dave writes everywhere
	for i := range dense {
		dense[i] = s.pick(200, 400)
	}
	gen := func(user string, i, version int) Session {
		se := Session{UserID: user, SessionID: fmt.Sprintf("%s-%05d", user, i), Title: s.message(5)}
		var msgs []string
		switch user {
		case tenantUser:
			for range 1 + (i+version)%6 {
				msgs = append(msgs, s.message(30))
			}
			if i%13 == 0 {
				msgs = append(msgs, "see parse-config-file and src/index/words.go")
			}
		case "bob":
			for range 1 + i%2 {
				var b strings.Builder
				b.WriteString(s.message(8))
				for range 6 {
					b.WriteString(" " + s.pick(20, 400))
				}
				msgs = append(msgs, b.String())
			}
		case "carol":
			for range 3 + i%4 {
				msgs = append(msgs, s.message(150))
			}
		case "dave":
			msgs = append(msgs, s.message(6)+" "+strings.Join(dense, " "))
		}
		se.Body = strings.Join(msgs, "\n\n")
		for j, m := range msgs {
			se.Chunks = append(se.Chunks, Chunk{Ordinal: j, Text: m})
		}
		if user == tenantUser {
			pad(&se)
		}
		return se
	}
	// Written in batches of 250 sessions (fewer in a small corpus: six
	// batches at least, so that there are several segments), each user's
	// share of a batch that of the sessions the user has left to write.
	users := []struct {
		name string
		n    int
	}{{tenantUser, alice}, {"bob", bob}, {"carol", carol}, {"dave", dave}}
	next := make([]int, len(users))
	left := alice + bob + carol + dave
	size := min(250, left/6)
	for left > 0 {
		var batch []Session
		for ; len(batch) < size && left > 0; left-- {
			x := rng.IntN(left)
			k := 0
			for ; x >= users[k].n-next[k]; k++ {
				x -= users[k].n - next[k]
			}
			batch = append(batch, gen(users[k].name, next[k], 0))
			next[k]++
		}
		steps = append(steps, tenantStep{put: batch})
	}
	steps[len(steps)-1].checkHere = true
	// Rewrites of every user, then deletions.
	var rewrites []Session
	for k, u := range users {
		for i := k; i < u.n; i += 7 {
			rewrites = append(rewrites, gen(u.name, i, 1))
		}
	}
	rng.Shuffle(len(rewrites), func(i, j int) { rewrites[i], rewrites[j] = rewrites[j], rewrites[i] })
	steps = append(steps, tenantStep{put: rewrites[:len(rewrites)/2]}, tenantStep{put: rewrites[len(rewrites)/2:]})
	for k, u := range users {
		var ids []string
		for i := 3 + k; i < u.n; i += 19 {
			ids = append(ids, fmt.Sprintf("%s-%05d", u.name, i))
			if u.name == tenantUser {
				for l, id := range used {
					if id == ids[len(ids)-1] {
						delete(used, l)
					}
				}
			}
		}
		steps = append(steps, tenantStep{delUser: u.name, delete: ids})
	}
	steps[len(steps)-1].checkHere = true

	// Phrases of two words that follow each other in one of her sessions,
	// so that they match and are checked on few texts.
	var hers []string
	for _, st := range steps {
		for _, se := range st.put {
			if se.UserID == tenantUser && len(hers) < 200 {
				hers = append(hers, se.Body)
			}
		}
	}
	phrase := func() string {
		w := strings.Fields(hers[rng.IntN(len(hers))])
		j := rng.IntN(len(w) - 1)
		return `"` + w[j] + " " + w[j+1] + `"`
	}
	queries = s.queries(24)
	for i := range 8 {
		queries = append(queries,
			dense[i%len(dense)]+" "+s.pick(1000, 20000), // selective for her, frequent over everyone
			dense[i%len(dense)]+" "+s.pick(20, 200)+" "+s.pick(0, 20),
			s.pick(0, 20)+" "+s.pick(0, 20)+" "+s.pick(1000, 5000), // frequent for her
			s.pick(0, 30)+" -"+s.pick(0, 30),
			s.identifier()+" "+s.pick(20, 3000))
		if i%2 == 0 { // phrases are checked on the text: fewer
			queries = append(queries, phrase()+" "+s.pick(20, 400), s.pick(0, 20)+` -"`+s.pick(0, 10)+" "+s.pick(0, 10)+`"`)
		}
	}
	queries = append(queries, "parse-config-file", `"parse-config-file" words`, "padword", strings.Join(dense, " "))
	return steps, queries
}

// apply writes step into ix, only tenantUser's part when alone, and into
// ref unless it is nil.
func (st tenantStep) apply(t *testing.T, ix *Index, ref *refIndex, alone bool) {
	t.Helper()
	ctx := context.Background()
	if st.delUser != "" {
		if alone && st.delUser != tenantUser {
			return
		}
		if err := ix.Delete(ctx, st.delUser, st.delete); err != nil {
			t.Fatal(err)
		}
		for _, id := range st.delete {
			if ref != nil {
				ref.delete(st.delUser, id)
			}
		}
		return
	}
	batch := st.put
	if alone {
		batch = slices.DeleteFunc(slices.Clone(batch), func(s Session) bool { return s.UserID != tenantUser })
	}
	if err := ix.Put(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for _, s := range batch {
		if ref != nil {
			ref.put(s)
		}
	}
	waitPersisted(t, ix)
}

// waitPersisted waits until every segment of ix is written out: Bleve
// merges the segments of batches still in memory when it writes them, so
// that without merges (openSegmented) a batch written after this stays a
// segment of its own.
func waitPersisted(t *testing.T, ix *Index) {
	t.Helper()
	for {
		segs, release := snapshotSegments(t, ix)
		inMemory := slices.ContainsFunc(segs, func(s *scorch.SegmentSnapshot) bool {
			_, ok := s.Segment().(segment.PersistedSegment)
			return !ok
		})
		release()
		if !inMemory {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTenantStatistics is the acceptance test of per-user statistics: a
// user's results are the same, ids and scores to the bit (==), whether
// her sessions are alone in the index or beside other users' (thousands
// of sessions, rewrites and deletions, several segments): for sessions and
// chunks, with pruning (Search) and without (the exhaustive evaluation),
// limits 10 and 100, and with Explain (scores, snippets and matchedIn).
// The frequent-word plan is included: dave writes words she uses in a few
// percent of her sessions into 1,200 of his.
//
// The results are also compared with the reference model (refIndex),
// whose statistics the test computes from the sessions' text over her
// sessions, and the pruned evaluation with the exhaustive one, to the bit.
// Results are compared after the sessions are written and again after
// rewrites and deletions, once the caches hold the earlier statistics.
// The indexes never merge segments (openSegmented): a batch is a segment.
// Queries where two of her documents tie are left out (at most one in
// twenty; see tenantCorpus).
//
// Not under the race detector (skipUnderRace); under -short on a small
// corpus, below the frequent-word plan's threshold.
func TestTenantStatistics(t *testing.T) {
	skipUnderRace(t)
	alice, bob, carol, dave := 1500, 1500, 800, 1200
	if !fullSize() { // below minDocsForFrequent: the plan is left to the full size
		alice, bob, carol, dave = 400, 150, 100, 150
	}
	ctx := context.Background()
	alone, beside := openSegmented(t), openSegmented(t)
	// One reference, beside the others: results alone are compared with
	// results beside, those with the reference.
	refBeside := newRefIndex(beside.analyzer, beside.repeat)
	start := time.Now()
	steps, texts := tenantCorpus(beside, alice, bob, carol, dave)
	// Half the queries at full size (a quarter ran under the race detector
	// before this test moved out of it), an eighth under -short: of every
	// kind, since tenantCorpus draws them in turn.
	stride := 2
	if !fullSize() {
		stride = 8
	}
	var some []string
	for i := 0; i < len(texts); i += stride {
		some = append(some, texts[i])
	}
	texts = some
	t.Logf("corpus generated in %v", time.Since(start).Round(time.Millisecond))
	compared, tied := 0, 0
	for _, st := range steps {
		st.apply(t, alone, nil, true)
		st.apply(t, beside, refBeside, false)
		if !st.checkHere {
			continue
		}
		n, _, _, _ := refBeside.stats(tenantUser)
		t.Logf("%v: %d of her sessions among %d; segments: %d alone, %d beside", time.Since(start).Round(time.Millisecond),
			n, len(refBeside.docs), segmentCount(t, alone), segmentCount(t, beside))
		if segmentCount(t, beside) < 5 || segmentCount(t, alone) < 5 {
			t.Fatal("the test needs several segments")
		}
		for _, text := range texts {
			pq, err := parseQuery(beside.analyzer, text)
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			words := parsedQuery{Terms: pq.Terms, Phrases: pq.Phrases} // the sessions chunks are read from
			if refScoresTie(refBeside.search(pq, tenantUser, true, exact)) || refScoresTie(refBeside.search(words, tenantUser, true, presence)) {
				tied++
				continue
			}
			for _, kind := range []Kind{Sessions, Chunks} {
				for _, limit := range []int{10, 100} {
					q := Query{UserID: tenantUser, Text: text, Kind: kind, Limit: limit, Explain: limit == 10}
					var got [2][2][]Hit // [alone, beside][pruned, exhaustive]
					for i, ix := range []*Index{alone, beside} {
						for j, ev := range []evaluation{{}, {exhaustive: true}} {
							hits, err := ix.search(ctx, q, ev)
							if err != nil {
								t.Fatalf("%q: %v", text, err)
							}
							got[i][j] = hits
						}
					}
					name := fmt.Sprintf("%q %s limit %d", text, kind, limit)
					for j, eval := range []string{"pruned", "exhaustive"} {
						if err := identicalHits(got[1][j], got[0][j]); err != nil {
							t.Errorf("%s %s: beside others vs alone: %v", name, eval, err)
						}
					}
					if err := identicalHits(got[1][0], got[1][1]); err != nil {
						t.Errorf("%s: pruned vs exhaustive: %v", name, err)
					}
					var want []Hit
					if kind == Sessions {
						want = refBeside.search(pq, tenantUser, true, exact)
					} else {
						want, _ = refBeside.chunks(pq, tenantUser, limit)
					}
					if err := sameHits(got[1][0], want, limit); err != nil {
						t.Errorf("%s: against the reference: %v", name, err)
					}
					compared++
				}
			}
		}
	}
	t.Logf("%d searches compared in %v; %d queries of %d left out where two of her documents tie", compared,
		time.Since(start).Round(time.Millisecond), tied, 2*len(texts))
	if tied > 2*len(texts)/20 {
		t.Errorf("%d of %d queries left out: the corpus should keep lengths apart (tenantCorpus)", tied, 2*len(texts))
	}
}

// openSegmented opens an index in a temporary directory, closed at the
// end of the test, whose segments are never merged on disk: a batch
// stays a segment, unless Bleve merges it with the next in memory (see
// waitPersisted).
func openSegmented(t *testing.T) *Index {
	t.Helper()
	ix, err := open(t.TempDir(), Options{}, map[string]any{
		// A tier as large as the smallest segment, and room in it for
		// every segment: the plan's budget is never exceeded.
		"scorchMergePlanOptions": map[string]any{"MaxSegmentsPerTier": 1 << 20, "FloorSegmentSize": 1, "FloorSegmentFileSize": 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Error(err)
		}
	})
	return ix
}

// identicalHits reports how got differs from want: ids, scores (==),
// snippets and matchedIn.
func identicalHits(got, want []Hit) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d hits, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.SessionID != w.SessionID || g.Ordinal != w.Ordinal || g.Score != w.Score {
			return fmt.Errorf("hit %d is %s #%d %v, want %s #%d %v", i, g.SessionID, g.Ordinal, g.Score, w.SessionID, w.Ordinal, w.Score)
		}
		if g.Snippet != w.Snippet || !slices.Equal(g.MatchedIn, w.MatchedIn) {
			return fmt.Errorf("hit %d: snippet %q %v, want %q %v", i, g.Snippet, g.MatchedIn, w.Snippet, w.MatchedIn)
		}
	}
	return nil
}

// refScoresTie reports whether two of the reference's hits have scores
// within rounding of each other.
func refScoresTie(hits []Hit) bool {
	for i := 1; i < len(hits); i++ {
		if a, b := hits[i-1].Score, hits[i].Score; a-b <= 1e-9*a {
			return true
		}
	}
	return false
}

// TestTenantFrequentWords checks that which words count as frequent is
// decided on the querying user's documents, both ways: a word another
// user wrote into 1,200 sessions still does not restrict her query (the
// issue's case, where it lost her the sessions holding only that word),
// and a word frequent among her sessions restricts it however rare it is
// over everyone's.
func TestTenantFrequentWords(t *testing.T) {
	var mine []Session
	for i := range 1200 {
		words := []string{"filler"}
		if i%240 == 7 {
			words = append(words, "alpha") // 5 sessions, none holding beta or gamma
		}
		if i%12 == 0 {
			words = append(words, "beta") // 100: 8%, not frequent
		}
		if i%4 == 1 {
			words = append(words, "gamma") // 300: 25%, frequent
		}
		if i%5 == 2 {
			words = append(words, "delta") // 240: 20%, frequent
		}
		mine = append(mine, Session{UserID: "u", SessionID: fmt.Sprintf("s%04d", i), Body: strings.Join(words, " ")})
	}
	var theirs []Session
	for i := range 1200 {
		theirs = append(theirs, Session{UserID: "v", SessionID: fmt.Sprintf("b%04d", i), Body: "beta other words"})
	}
	for i := range 3000 {
		theirs = append(theirs, Session{UserID: "w", SessionID: fmt.Sprintf("w%04d", i), Body: "nothing alike"})
	}
	alone, beside := openTest(t, ""), openTest(t, "")
	put(t, alone, mine...)
	put(t, beside, mine...)
	put(t, beside, theirs...)
	for _, tt := range []struct {
		text string
		hits int // her sessions the query matches, with the plan her statistics give
	}{
		{"alpha beta", 105},  // neither frequent for her: every session holding either
		{"gamma alpha", 5},   // gamma frequent for her: only those holding alpha
		{"gamma beta", 100},  // only those holding beta
		{"alpha gamma", 5},   // the order does not matter
		{"beta", 100},        // one word: no plan
		{"gamma delta", 480}, // all frequent: no plan
	} {
		for _, ev := range []evaluation{{}, {exhaustive: true}} {
			q := Query{UserID: "u", Text: tt.text, Limit: MaxLimit}
			want, err := alone.search(context.Background(), q, ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := beside.search(context.Background(), q, ev)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != tt.hits {
				t.Errorf("%q (exhaustive %v) alone: %d hits, want %d", tt.text, ev.exhaustive, len(want), tt.hits)
			}
			if err := identicalHits(got, want); err != nil {
				t.Errorf("%q (exhaustive %v) beside others vs alone: %v", tt.text, ev.exhaustive, err)
			}
		}
	}
}

// TestTenantExplainScores is the side channel, as a user sees
// it: the scores explain shows for a word do not move when another user
// writes sessions holding it (5, then 1,200), for sessions and chunks.
func TestTenantExplainScores(t *testing.T) {
	ix := openTest(t, "")
	put(t, ix,
		chunked("u", "a", "Deploy notes", "the canary rollout stalled", "rolled back the canary"),
		chunked("u", "b", "Lunch", "nothing about it here"),
		chunked("u", "c", "Cache", "warm the cache before the canary goes out"))
	scores := func() (out [][]Hit) {
		for _, kind := range []Kind{Sessions, Chunks} {
			hits := search(t, ix, Query{UserID: "u", Text: "canary rollout", Kind: kind, Explain: true})
			if len(hits) == 0 || hits[0].Snippet == "" {
				t.Fatalf("%s: hits %+v", kind, hits)
			}
			out = append(out, hits)
		}
		return out
	}
	want := scores()
	var theirs []Session
	for i := range 1200 {
		theirs = append(theirs, chunked("v", fmt.Sprintf("s%04d", i), "", "canary "+strings.Repeat("filler ", i%50)))
		if i == 4 || i == 1199 {
			put(t, ix, theirs...)
			theirs = theirs[:0]
			if got := scores(); !reflect.DeepEqual(got, want) {
				t.Errorf("after another user's %d sessions: %+v, want %+v", i+1, got, want)
			}
		}
	}
}
