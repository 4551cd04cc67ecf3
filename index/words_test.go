package index

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
)

// refIndex is the reference model of what Search computes, written from
// the definition (scoring.go, searchChunks) and nothing of the evaluation:
// sessions are kept as analysed token streams, and every query is answered
// by looking at every session of the index. Its statistics are computed
// here, from the text, over the querying user's sessions (stats).
type refIndex struct {
	a      analysis.Analyzer
	repeat int
	docs   map[string]*refDoc  // by session key, all users
	stat   map[string]refStats // by user, until the next put or delete
}

// refStats is what stats returns.
type refStats struct {
	n                 uint64
	df                map[string]uint64
	avgdl, chunkAvgdl float64
}

type refDoc struct {
	user, session string
	text          refText   // the scored text: title repeat times, then body
	title         refText   // for phrases
	messages      []refText // for phrases: the body cut at its breaks, each on its own
	chunks        []refText // with their ordinals
	chunkMessages [][]refText
}

// hasPhraseIn reports whether one of texts holds ph.
func hasPhraseIn(texts []refText, ph phrase) bool {
	return slices.ContainsFunc(texts, func(t refText) bool { return t.hasPhrase(ph) })
}

// messages cuts text at breaks (Session.Breaks, Chunk.Breaks).
func messages(text string, breaks []int) []string {
	var out []string
	at := 0
	for _, b := range breaks {
		out = append(out, text[at:b])
		at = b
	}
	return append(out, text[at:])
}

// refText is one analysed text.
type refText struct {
	ordinal int
	tf      map[string]int
	at      map[int][]string // terms by position
	length  int
}

func (r *refIndex) analyse(ordinal int, text string) refText {
	t := refText{ordinal: ordinal, tf: map[string]int{}, at: map[int][]string{}}
	for _, tok := range r.a.Analyze([]byte(text)) {
		t.tf[string(tok.Term)]++
		t.at[tok.Position] = append(t.at[tok.Position], string(tok.Term))
		t.length++
	}
	return t
}

func newRefIndex(a analysis.Analyzer, repeat int) *refIndex {
	return &refIndex{a: a, repeat: repeat, docs: map[string]*refDoc{}}
}

// put mirrors Index.Put. A text that is at once a message, a chunk and
// a chunk's message (as most are) is analysed once: the refTexts share
// their maps, which nothing writes after analyse.
func (r *refIndex) put(s Session) {
	analysed := map[string]refText{}
	analyse := func(ordinal int, text string) refText {
		t, ok := analysed[text]
		if !ok {
			t = r.analyse(ordinal, text)
			analysed[text] = t
		}
		t.ordinal = ordinal
		return t
	}
	d := &refDoc{user: s.UserID, session: s.SessionID, text: r.analyse(-1, sessionText(s, r.repeat)),
		title: analyse(-1, s.Title)}
	for _, m := range messages(s.Body, s.Breaks) {
		d.messages = append(d.messages, analyse(-1, m))
	}
	for _, c := range s.Chunks {
		d.chunks = append(d.chunks, analyse(c.Ordinal, c.Text))
		var ms []refText
		for _, m := range messages(c.Text, c.Breaks) {
			ms = append(ms, analyse(c.Ordinal, m))
		}
		d.chunkMessages = append(d.chunkMessages, ms)
	}
	r.docs[docKey(s.UserID, s.SessionID)] = d
	r.stat = nil
}

func (r *refIndex) delete(user, session string) {
	delete(r.docs, docKey(user, session))
	r.stat = nil
}

// hasPhrase reports whether t holds ph: some position p where every
// non-empty slot i has one of its alternatives at p+i.
func (t refText) hasPhrase(ph phrase) bool {
	first := slices.IndexFunc(ph, func(alts []string) bool { return len(alts) > 0 })
	if first < 0 {
		return false
	}
	for pos := range t.at {
		start := pos - first
		all := true
		for i, alts := range ph {
			if len(alts) == 0 {
				continue
			}
			if !slices.ContainsFunc(t.at[start+i], func(term string) bool { return slices.Contains(alts, term) }) {
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

// hasWords reports whether t holds one alternative of every position of
// ph, in any order: all an index without positions can tell.
func (t refText) hasWords(ph phrase) bool {
	any := false
	for _, alts := range ph {
		if len(alts) == 0 {
			continue
		}
		any = true
		if !slices.ContainsFunc(alts, func(term string) bool { return t.tf[term] > 0 }) {
			return false
		}
	}
	return any
}

// hasPair reports whether t holds one of x's alternatives at some
// position and one of y's at the next.
func (t refText) hasPair(x, y []string) bool {
	for pos, terms := range t.at {
		if slices.ContainsFunc(terms, func(a string) bool { return slices.Contains(x, a) }) &&
			slices.ContainsFunc(t.at[pos+1], func(b string) bool { return slices.Contains(y, b) }) {
			return true
		}
	}
	return false
}

// hasPairs reports whether texts (a session's title, or its messages)
// hold every pair of adjacent positions of ph, each in one of them, and
// the words of the positions in no pair: what the pairs index tells
// (pairs.go).
func hasPairs(texts []refText, ph phrase) bool {
	for i, alts := range ph {
		if len(alts) == 0 {
			continue
		}
		paired := i > 0 && len(ph[i-1]) > 0
		if i+1 < len(ph) && len(ph[i+1]) > 0 {
			paired = true
			if !slices.ContainsFunc(texts, func(t refText) bool { return t.hasPair(alts, ph[i+1]) }) {
				return false
			}
		}
		if !paired && !slices.ContainsFunc(texts, func(t refText) bool { return t.hasWords(phrase{alts}) }) {
			return false
		}
	}
	return true
}

// refMode says how the reference reads phrases and exclusions.
type refMode int

const (
	exact    refMode = iota // phrases in the title or in one message (Search)
	presence                // a phrase's words anywhere, one-word exclusions only
	pairs                   // what searchWords decides: phrases and exclusions exactly where their pairs decide them (phrase.exact), else a phrase's pairs all in the title or all in the body
)

// stats returns the BM25 statistics of user's sessions: their number, the
// document frequencies, the mean length, and the mean length of their
// chunks.
func (r *refIndex) stats(user string) (n uint64, df map[string]uint64, avgdl, chunkAvgdl float64) {
	if st, ok := r.stat[user]; ok {
		return st.n, st.df, st.avgdl, st.chunkAvgdl
	}
	defer func() {
		if r.stat == nil {
			r.stat = map[string]refStats{}
		}
		r.stat[user] = refStats{n, df, avgdl, chunkAvgdl}
	}()
	var total, chunks, chunkTotal float64
	df = map[string]uint64{}
	for _, d := range r.docs {
		if d.user != user {
			continue
		}
		n++
		total += float64(d.text.length)
		for t := range d.text.tf {
			df[t]++
		}
		for _, c := range d.chunks {
			chunks++
			chunkTotal += float64(c.length)
		}
	}
	return n, df, total / float64(n), chunkTotal / chunks
}

func refScore(terms []string, t refText, n uint64, df map[string]uint64, avgdl float64) float64 {
	var score float64
	for _, term := range terms {
		if tf := float64(t.tf[term]); tf > 0 {
			idf := math.Log(1 + (float64(n)-float64(df[term])+0.5)/(float64(df[term])+0.5))
			score += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(t.length)/avgdl))
		}
	}
	return score
}

// search returns every session hit of pq for user, best first (ties by
// session id), scored by the definition; withPlan applies the
// frequent-word plan, as Search does.
func (r *refIndex) search(pq parsedQuery, user string, withPlan bool, mode refMode) []Hit {
	n, df, avgdl, _ := r.stats(user)
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
		ok := len(pq.Phrases) > 0 || slices.ContainsFunc(pq.Terms, func(t string) bool { return d.text.tf[t] > 0 })
		for _, ph := range pq.Phrases {
			switch {
			case mode == exact || (mode == pairs && ph.exact()):
				ok = ok && (d.title.hasPhrase(ph) || hasPhraseIn(d.messages, ph))
			case mode == pairs:
				ok = ok && (hasPairs([]refText{d.title}, ph) || hasPairs(d.messages, ph))
			default:
				ok = ok && d.text.hasWords(ph)
			}
		}
		for _, ph := range pq.Exclude {
			switch {
			case mode == exact || (mode == pairs && ph.exact()):
				ok = ok && !d.title.hasPhrase(ph) && !hasPhraseIn(d.messages, ph)
			case len(ph) == 1:
				ok = ok && !d.text.hasWords(ph)
			}
		}
		if plan.selective != nil {
			ok = ok && slices.ContainsFunc(pq.Terms, func(t string) bool { return plan.selective[t] && d.text.tf[t] > 0 })
		}
		if ok {
			hits = append(hits, Hit{SessionID: d.session, Ordinal: -1, Score: refScore(pq.scoredTerms(), d.text, n, df, avgdl)})
		}
	}
	SortHits(hits)
	return hits
}

// chunks returns every chunk hit of pq for user that Search with limit
// may return: without a phrase, the chunks of the best chunkSessions(limit)
// sessions for pq's words; with one, of every session (Search reads every
// session holding the phrases' pairs, which a chunk holding them implies);
// scored with the sessions' idf and the mean chunk length, holding pq's
// phrases within one of their messages and none of its exclusions. When
// sessions tie at the cut, Search reads any of them: the chunks of them
// all are returned, and exact is false.
func (r *refIndex) chunks(pq parsedQuery, user string, limit int) (hits []Hit, exact bool) {
	n, df, _, avgdl := r.stats(user)
	best := r.search(parsedQuery{Terms: pq.Terms, Phrases: pq.Phrases}, user, true, presence)
	// Sessions tied with the last one read may be read in its place.
	cut := min(len(best), chunkSessions(limit))
	if len(pq.Phrases) > 0 {
		cut = len(best)
	}
	exact = true
	for cut > 0 && cut < len(best) && math.Abs(best[cut].Score-best[cut-1].Score) <= 1e-9*best[cut-1].Score {
		cut++
		exact = false
	}
	for _, sh := range best[:cut] {
		d := r.docs[docKey(user, sh.SessionID)]
		for i, c := range d.chunks {
			ok := true
			for _, ph := range pq.Phrases {
				ok = ok && hasPhraseIn(d.chunkMessages[i], ph)
			}
			for _, ph := range pq.Exclude {
				ok = ok && !hasPhraseIn(d.chunkMessages[i], ph)
			}
			if score := refScore(pq.scoredTerms(), c, n, df, avgdl); ok && score > 0 {
				hits = append(hits, Hit{SessionID: sh.SessionID, Ordinal: c.ordinal, Score: score})
			}
		}
	}
	SortHits(hits)
	return hits, exact
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
// of scoring.go over every document of the querying user. Not under the
// race detector (skipUnderRace); under -short on a small corpus.
func TestSearchMatchesReference(t *testing.T) {
	skipUnderRace(t)
	ctx := context.Background()
	ix, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ref := newRefIndex(ix.analyzer, ix.repeat)
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
			ref.put(se)
		}
	}
	// At full size (fullSize) 1,500 sessions, above minDocsForFrequent, so
	// that plans apply, and 36 random queries; else 450 sessions and 12.
	// The hand-written queries below run at both.
	n, random, phrases := 1500, 30, 6
	if !fullSize() {
		n, random, phrases = 450, 10, 2
	}
	texts := s.queries(random)
	texts = append(texts, s.phraseQueries(phrases)...)
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
			for k, user := range users {
				// searchWords reads phrases as their words: every user's
				// queries run on one goroutine and on several (the work
				// split by segment and document range).
				words := ref.search(pq, user, true, pairs)
				res, err := searchWords(ctx, ix.sessions, &ix.sessionLengths, user, pq, MaxLimit, evaluation{workers: 1 + 2*(k%2), countAll: true})
				if err != nil {
					t.Fatal(err)
				}
				docs, total := res.docs, res.total
				if total != uint64(len(words)) {
					t.Errorf("%s: %q %s: searchWords total %d, want %d", stage, text, user, total, len(words))
				}
				if len(docs) != min(len(words), MaxLimit) {
					t.Errorf("%s: %q %s: searchWords gives %d documents, want %d", stage, text, user, len(docs), len(words))
				}
				want := ref.search(pq, user, true, exact)
				got := search(t, ix, Query{UserID: user, Text: text, Limit: MaxLimit})
				if err := sameHits(got, want, MaxLimit); err != nil {
					t.Errorf("%s: %q sessions %s: %v", stage, text, user, err)
				}
				// A limit cuts the same ranking.
				cut := search(t, ix, Query{UserID: user, Text: text, Limit: 3, Explain: true})
				if err := sameHits(cut, want, 3); err != nil {
					t.Errorf("%s: %q sessions %s limit 3: %v", stage, text, user, err)
				}
				for _, limit := range []int{3, MaxLimit} {
					got := search(t, ix, Query{UserID: user, Text: text, Kind: Chunks, Limit: limit})
					want, exact := ref.chunks(pq, user, limit)
					if !exact && len(got) < min(limit, len(want)) {
						want = slices.DeleteFunc(slices.Clone(want), func(w Hit) bool {
							return !slices.ContainsFunc(got, func(g Hit) bool { return g.SessionID == w.SessionID && g.Ordinal == w.Ordinal })
						})
					}
					if err := sameHits(got, want, limit); err != nil {
						t.Errorf("%s: %q chunks %s limit %d: %v", stage, text, user, limit, err)
					}
				}
			}
		}
	}

	for i := 0; i < n; i += n / 6 {
		var batch []Session
		for j := i; j < min(i+n/6, n); j++ {
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
		ref.delete("alice", id)
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

// TestUserLengths checks the length statistics both evaluations compute
// (lookUpBlocks and lookUpWords): the user's live documents, their mean
// length and their chunks' mean length, another user's documents left
// out, and after deletions in a segment whose statistics are cached.
func TestUserLengths(t *testing.T) {
	ctx := context.Background()
	ix := openTest(t, "")
	put(t, ix, chunked("u", "a", "", "one two three"), chunked("u", "b", "", "one two three four five six seven", "eight nine"),
		chunked("v", "c", "", strings.Repeat("word ", 100), "x", "y", "one"), chunked("u", "d", "", "one"))
	pq, err := parseQuery(ix.analyzer, "one")
	if err != nil {
		t.Fatal(err)
	}
	check := func(user string, docs, df uint64, mean, chunkMean float64) {
		t.Helper()
		segs, release := snapshotSegments(t, ix)
		defer release()
		blocks, err := lookUpBlocks(&ix.sessionLengths.blocks, segs, user, pq.Terms)
		if err != nil {
			t.Fatal(err)
		}
		words, err := lookUpWords(segs, user, pq.Terms)
		if err != nil {
			t.Fatal(err)
		}
		for name, ws := range map[string]*wordSearch{"blocks": blocks, "words": words} {
			l := ws.lengths
			if l.docs != docs || ws.words[0].df != df || l.meanLength() != mean || l.meanChunkLength() != chunkMean {
				t.Errorf("%s %s: %d documents, df %d, mean length %v, chunks' %v; want %d, %d, %v, %v", name, user, l.docs,
					ws.words[0].df, l.meanLength(), l.meanChunkLength(), docs, df, mean, chunkMean)
			}
		}
	}
	// u: a (3 words, 1 chunk of 3), b (9 words, chunks of 7 and 2), d (1
	// word); v: c (103 words in 4 chunks).
	check("u", 3, 3, 13.0/3, 13.0/4)
	check("v", 1, 1, 103, 103.0/4)
	check("nobody", 0, 0, 1, 1)
	if err := ix.Delete(ctx, "u", []string{"b"}); err != nil {
		t.Fatal(err)
	}
	check("u", 2, 2, 2, 2)
	check("v", 1, 1, 103, 103.0/4)
	if err := ix.Delete(ctx, "u", []string{"a"}); err != nil {
		t.Fatal(err)
	}
	check("u", 1, 1, 1, 1)
}
