package index

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
)

// refIndex is the reference model of what Search computes, written from
// the definition (scoring.go) and nothing of the evaluation: documents
// are kept as analysed token streams, and every query is answered by
// looking at every document of the index.
type refIndex struct {
	a      analysis.Analyzer
	repeat int
	docs   map[string]*refDoc // by Bleve document id, all users
}

type refDoc struct {
	user, session string
	ordinal       int
	tf            map[string]int
	at            map[int][]string // terms by position
	length        int
}

func newRefIndex(a analysis.Analyzer, repeat int) *refIndex {
	return &refIndex{a: a, repeat: repeat, docs: map[string]*refDoc{}}
}

func (r *refIndex) add(id, user, session string, ordinal int, text string) {
	d := &refDoc{user: user, session: session, ordinal: ordinal, tf: map[string]int{}, at: map[int][]string{}}
	for _, tok := range r.a.Analyze([]byte(text)) {
		d.tf[string(tok.Term)]++
		d.at[tok.Position] = append(d.at[tok.Position], string(tok.Term))
		d.length++
	}
	r.docs[id] = d
}

// put mirrors Index.Put for one kind: kind Sessions keeps session
// documents, Chunks chunk documents.
func (r *refIndex) put(kind Kind, s Session) {
	key := docKey(s.UserID, s.SessionID)
	if kind == Sessions {
		r.add(key, s.UserID, s.SessionID, -1, sessionText(s, r.repeat))
		return
	}
	r.delete(s.UserID, s.SessionID)
	for _, c := range s.Chunks {
		r.add(chunkID(key, c.Ordinal), s.UserID, s.SessionID, c.Ordinal, c.Text)
	}
}

func (r *refIndex) delete(user, session string) {
	for id, d := range r.docs {
		if d.user == user && d.session == session {
			delete(r.docs, id)
		}
	}
}

// hasPhrase reports whether d holds ph: some position p where every
// non-empty slot i has one of its alternatives at p+i.
func (d *refDoc) hasPhrase(ph phrase) bool {
	first := slices.IndexFunc(ph, func(alts []string) bool { return len(alts) > 0 })
	if first < 0 {
		return false
	}
	for pos := range d.at {
		start := pos - first
		all := true
		for i, alts := range ph {
			if len(alts) == 0 {
				continue
			}
			if !slices.ContainsFunc(d.at[start+i], func(t string) bool { return slices.Contains(alts, t) }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// search returns every hit of pq for user, best first (ties by session
// id, then ordinal), scored by the definition; withPlan applies the
// frequent-word plan, as Search does.
func (r *refIndex) search(pq parsedQuery, user string, withPlan bool) []Hit {
	n := uint64(len(r.docs))
	var total float64
	df := map[string]uint64{}
	for _, d := range r.docs {
		total += float64(d.length)
		for t := range d.tf {
			df[t]++
		}
	}
	avgdl := total / float64(n)
	var plan wordsPlan
	if withPlan && len(pq.Phrases) == 0 {
		dfs := make([]uint64, len(pq.Terms))
		for i, t := range pq.Terms {
			dfs[i] = df[t]
		}
		plan = planFromFrequencies(n, pq.Terms, dfs)
	}
	var hits []Hit
	for _, d := range r.docs {
		if d.user != user {
			continue
		}
		ok := len(pq.Phrases) > 0 || slices.ContainsFunc(pq.Terms, func(t string) bool { return d.tf[t] > 0 })
		for _, ph := range pq.Phrases {
			ok = ok && d.hasPhrase(ph)
		}
		for _, ph := range pq.Exclude {
			ok = ok && !d.hasPhrase(ph)
		}
		if plan.selective != nil {
			ok = ok && slices.ContainsFunc(pq.Terms, func(t string) bool { return plan.selective[t] && d.tf[t] > 0 })
		}
		if !ok {
			continue
		}
		var score float64
		for _, t := range pq.scoredTerms() {
			if tf := float64(d.tf[t]); tf > 0 {
				idf := math.Log(1 + (float64(n)-float64(df[t])+0.5)/(float64(df[t])+0.5))
				score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(d.length)/avgdl))
			}
		}
		hits = append(hits, Hit{SessionID: d.session, Ordinal: d.ordinal, Score: score})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(a.SessionID, b.SessionID); c != 0 {
			return c
		}
		return cmp.Compare(a.Ordinal, b.Ordinal)
	})
	return hits
}

// sameHits compares Search's hits with limit with all the reference's:
// the best limit documents with the same scores up to rounding (sums in
// another order), in the same order except where scores are that close (a
// cut through equal scores may take any of them).
func sameHits(got, want []Hit, limit int) error {
	if len(got) != min(limit, len(want)) {
		return fmt.Errorf("%d hits, want %d", len(got), min(limit, len(want)))
	}
	close := func(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }
	type key struct {
		s string
		o int
	}
	scores := make(map[key]float64, len(want))
	for _, h := range want {
		scores[key{h.SessionID, h.Ordinal}] = h.Score
	}
	for i, h := range got {
		s, ok := scores[key{h.SessionID, h.Ordinal}]
		if !ok {
			return fmt.Errorf("hit %d (%s #%d) is not a reference hit", i, h.SessionID, h.Ordinal)
		}
		if !close(s, h.Score) {
			return fmt.Errorf("hit %d (%s #%d): score %v, want %v", i, h.SessionID, h.Ordinal, h.Score, s)
		}
		if (h.SessionID != want[i].SessionID || h.Ordinal != want[i].Ordinal) && !close(h.Score, want[i].Score) {
			return fmt.Errorf("hit %d is %s #%d (%v), want %s #%d (%v)", i, h.SessionID, h.Ordinal, h.Score,
				want[i].SessionID, want[i].Ordinal, want[i].Score)
		}
	}
	return nil
}

// TestSearchMatchesReference pins the scoring function: on an index with
// several users, several segments, rewritten and deleted documents and
// documents with equal scores, Search returns for plain words, phrases and
// exclusions, on one goroutine and several, exactly the documents and
// scores of the reference model (refIndex), which computes the definition
// of scoring.go over every document.
func TestSearchMatchesReference(t *testing.T) {
	ctx := context.Background()
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ref := map[Kind]*refIndex{Sessions: newRefIndex(ix.analyzer, ix.repeat), Chunks: newRefIndex(ix.analyzer, ix.repeat)}
	s := newSynth(5)
	users := []string{"alice", "bob", "carol"}
	session := func(i int) Session {
		se := Session{UserID: users[i%len(users)], SessionID: fmt.Sprintf("s%05d", i), Title: s.message(5)}
		var msgs []string
		for range 1 + i%5 {
			msgs = append(msgs, s.message(30))
		}
		if i%11 == 0 {
			msgs = append(msgs, "see parse-config-file and src/index/words.go")
		}
		se.Body = strings.Join(msgs, "\n\n")
		for j, m := range msgs {
			se.Chunks = append(se.Chunks, Chunk{Ordinal: j, Text: m})
		}
		return se
	}
	put := func(batch []Session) {
		if err := ix.Put(ctx, batch); err != nil {
			t.Fatal(err)
		}
		for _, se := range batch {
			ref[Sessions].put(Sessions, se)
			ref[Chunks].put(Chunks, se)
		}
	}
	texts := s.queries(30)
	texts = append(texts, s.phraseQueries(6)...)
	texts = append(texts, "zebra", "zebra crossing", "twin zebra", "nowhereword", "nowhereword zebra",
		s.pick(0, 5), s.pick(0, 3)+" "+s.pick(3, 6), s.identifier()+" "+s.identifier(),
		`"`+s.pick(0, 3)+" "+s.pick(0, 3)+`" `+s.pick(10, 50), s.pick(0, 5)+" -"+s.pick(0, 5),
		s.pick(0, 20)+` -"`+s.pick(0, 5)+" "+s.pick(0, 5)+`"`, "parse-config-file", `"parse-config-file" words`)
	var long []string
	for range 14 {
		long = append(long, s.pick(0, 400))
	}
	texts = append(texts, strings.Join(long, " "))

	check := func(stage string) {
		for _, text := range texts {
			pq, err := parseQuery(ix.analyzer, text)
			if err != nil {
				continue
			}
			for _, kind := range []Kind{Sessions, Chunks} {
				idx, lengths := ix.sessions, &ix.sessionLengths
				if kind == Chunks {
					idx, lengths = ix.chunks, &ix.chunkLengths
				}
				for k, user := range users {
					want := ref[kind].search(pq, user, true)
					// Every user's queries run on one goroutine and on
					// several (the work split by segment and document range).
					docs, total, err := searchWords(ctx, idx, lengths, user, pq, MaxLimit, false, evaluation{workers: 1 + 2*(k%2), countAll: true})
					if err != nil {
						t.Fatal(err)
					}
					if total != uint64(len(want)) {
						t.Errorf("%s: %q %s %s: total %d, want %d", stage, text, kind, user, total, len(want))
					}
					got := search(t, ix, Query{UserID: user, Text: text, Kind: kind, Limit: MaxLimit})
					if err := sameHits(got, want, MaxLimit); err != nil {
						t.Errorf("%s: %q %s %s: %v", stage, text, kind, user, err)
					}
					if len(docs) != len(got) {
						t.Errorf("%s: %q %s %s: searchWords gives %d documents, Search %d", stage, text, kind, user, len(docs), len(got))
					}
					// A limit cuts the same ranking.
					cut := search(t, ix, Query{UserID: user, Text: text, Kind: kind, Limit: 3, Explain: true})
					if err := sameHits(cut, want, 3); err != nil {
						t.Errorf("%s: %q %s %s limit 3: %v", stage, text, kind, user, err)
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
		put(batch)
	}
	check("written")
	// Rewritten sessions leave deleted documents in older segments.
	var batch []Session
	for j := 0; j < n; j += 7 {
		batch = append(batch, session(j))
	}
	put(batch)
	check("rewritten")
	if err := ix.Delete(ctx, "alice", []string{"s00003", "s00030", "s00300"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s00003", "s00030", "s00300"} {
		ref[Sessions].delete("alice", id)
		ref[Chunks].delete("alice", id)
	}
	// Identical documents: the limit cuts through a run of equal scores.
	var twins []Session
	for j := range 30 {
		twins = append(twins, Session{UserID: "bob", SessionID: fmt.Sprintf("twin%02d", j), Title: "twin", Body: "zebra crossing zebra",
			Chunks: []Chunk{{Ordinal: 0, Text: "zebra crossing zebra"}}})
	}
	put(twins)
	check("deleted, twins")
}

func TestLengthCache(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "")
	put(t, ix, chunked("u", "a", "", "one two three"), chunked("u", "b", "", "one two three four five six seven"))
	avg := func() float64 {
		segs, release := snapshotSegments(t, ix)
		defer release()
		got, err := ix.sessionLengths.avgLength(segs)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := avg(); got != 5 {
		t.Errorf("average length %v, want 5", got)
	}
	if err := ix.Delete(ctx, "u", []string{"b"}); err != nil {
		t.Fatal(err)
	}
	if got := avg(); got != 3 {
		t.Errorf("after a deletion: average length %v, want 3", got)
	}
}
