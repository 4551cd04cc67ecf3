package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
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
// are appended where needed), so that no two of her documents tie on any
// query and the limit never cuts through equal scores: which of two equal
// documents a cut keeps depends on their order in the index, which differs
// between an index of her sessions alone and one shared with others.
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
	// Written in batches of 250 sessions, each user's share of a batch
	// that of the sessions the user has left to write.
	users := []struct {
		name string
		n    int
	}{{tenantUser, alice}, {"bob", bob}, {"carol", carol}, {"dave", dave}}
	next := make([]int, len(users))
	left := alice + bob + carol + dave
	for left > 0 {
		var batch []Session
		for ; len(batch) < 250 && left > 0; left-- {
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

	queries = s.queries(40)
	queries = append(queries, s.phraseQueries(6)...)
	for i := range 12 {
		queries = append(queries,
			dense[i%len(dense)]+" "+s.pick(1000, 20000), // selective for her, frequent over everyone
			dense[i%len(dense)]+" "+s.pick(20, 200)+" "+s.pick(0, 20),
			s.pick(0, 20)+" "+s.pick(0, 20)+" "+s.pick(1000, 5000), // frequent for her
			s.pick(0, 30)+" -"+s.pick(0, 30),
			`"`+s.pick(0, 50)+" "+s.pick(0, 50)+`" `+s.pick(20, 400),
			s.pick(0, 20)+` -"`+s.pick(0, 10)+" "+s.pick(0, 10)+`"`,
			s.identifier()+" "+s.pick(20, 3000))
	}
	queries = append(queries, "parse-config-file", `"parse-config-file" words`, "padword", strings.Join(dense, " "))
	return steps, queries
}

// apply writes step into ix, only tenantUser's part when alone.
func (st tenantStep) apply(t testing.TB, ix *Index, ref *refIndex, alone bool) {
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
			ref.delete(st.delUser, id)
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
		ref.put(s)
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
func TestTenantStatistics(t *testing.T) {
	alice, bob, carol, dave := 1500, 1500, 800, 1200
	if raceEnabled {
		alice, bob, carol, dave = 1100, 300, 200, 1200
	}
	ctx := context.Background()
	alone, beside := openTest(t, ""), openTest(t, "")
	refAlone, refBeside := newRefIndex(alone.analyzer, alone.repeat), newRefIndex(beside.analyzer, beside.repeat)
	start := time.Now()
	steps, texts := tenantCorpus(beside, alice, bob, carol, dave)
	t.Logf("corpus generated in %v", time.Since(start).Round(time.Millisecond))
	compared := 0
	for _, st := range steps {
		st.apply(t, alone, refAlone, true)
		st.apply(t, beside, refBeside, false)
		if !st.checkHere {
			continue
		}
		n, _, _, _ := refBeside.stats(tenantUser)
		t.Logf("%v: %d of her sessions among %d; segments: %d alone, %d beside", time.Since(start).Round(time.Millisecond),
			n, len(refBeside.docs), segmentCount(t, alone), segmentCount(t, beside))
		if segmentCount(t, beside) < 2 {
			t.Fatal("the test needs several segments in the shared index")
		}
		for _, text := range texts {
			pq, err := parseQuery(beside.analyzer, text)
			if err != nil {
				t.Fatalf("%q: %v", text, err)
			}
			if refScoresTie(refBeside.search(pq, tenantUser, true, exact)) {
				t.Fatalf("%q: two of her documents tie: the corpus must not allow it (see tenantCorpus)", text)
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
	t.Logf("%d searches compared in %v", compared, time.Since(start).Round(time.Millisecond))
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
