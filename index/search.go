package index

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
)

// Kind selects which documents a query searches.
type Kind int

const (
	// Sessions searches session documents (title + body); one hit per session.
	Sessions Kind = iota
	// Chunks searches the sessions' chunks; a session may have several hits.
	Chunks
)

func (k Kind) String() string {
	switch k {
	case Sessions:
		return "sessions"
	case Chunks:
		return "chunks"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Limits of Query.Limit.
const (
	DefaultLimit = 20
	MaxLimit     = 1000
)

// Query is one full-text search of one user's documents.
type Query struct {
	// UserID is required: only this user's documents can match.
	UserID string
	// Text is what the user typed; not Bleve query syntax. Words are OR'ed
	// and ranked by BM25, "quoted phrases" must match (in order, within the
	// title or within one message), -word and -"phrase" exclude. Other
	// punctuation is ignored. See MaxQueryTerms.
	Text string
	Kind Kind
	// Limit is the number of hits wanted: 0 means DefaultLimit, larger
	// than MaxLimit means MaxLimit.
	Limit int
	// Explain fills Hit.Snippet and Hit.MatchedIn. It reads the hits' text,
	// so it costs more than a plain search.
	Explain bool
}

// Hit is one search result.
type Hit struct {
	SessionID string
	Ordinal   int // chunk ordinal for Kind Chunks, -1 for sessions
	Score     float64
	// Snippet (Explain only) is a fragment of the matched text, HTML-escaped,
	// with <mark>...</mark> around the words that match the query. It is safe
	// to insert into HTML as is.
	Snippet string
	// MatchedIn (Explain only) lists where query words occur: "title" and/or
	// "messages" for sessions, "messages" for chunks.
	MatchedIn []string
}

// Search returns the best-scoring sessions (or chunks) of q.UserID, best
// first (equal scores by session id, then ordinal). It returns an error
// wrapping ErrBadQuery when q.Text has nothing to search for, and the hits
// it found with ErrPartial when it stopped at its budget before it could
// check every candidate of a phrase (see maxChecked): those are the only
// hits returned with an error.
//
// The hits and their scores depend on the user's live documents only: the
// BM25 statistics are the user's (scoring.go).
//
// Sessions are evaluated on the index segments directly (searchWords);
// phrases of more than two words and such exclusions are then checked on
// the hits' text (searchSessions). Chunks are scored from the text of the best sessions
// (searchChunks).
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	return ix.search(ctx, q, evaluation{})
}

// search is Search with the evaluation ev (tests turn pruning off).
func (ix *Index) search(ctx context.Context, q Query, ev evaluation) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.UserID == "" {
		return nil, errors.New("index: search: user id is required")
	}
	if q.Kind != Sessions && q.Kind != Chunks {
		return nil, fmt.Errorf("index: search: unknown kind %d", int(q.Kind))
	}
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	pq, err := parseQuery(ix.analyzer, q.Text)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var hits []Hit
	var total uint64
	var partial bool
	if q.Kind == Chunks {
		hits, total, partial, err = ix.searchChunks(ctx, q, pq, limit, ev)
	} else {
		hits, total, partial, err = ix.searchSessions(ctx, q, pq, limit, ev)
	}
	if err != nil {
		return nil, ix.searchErr(ctx, q.Kind, err)
	}
	SortHits(hits)
	ix.log.Debug().Stringer("kind", q.Kind).Int("hits", len(hits)).Uint64("total", total).
		Bool("partial", partial).Dur("took", time.Since(start)).Msg("index: search")
	if partial {
		return hits, ErrPartial
	}
	return hits, nil
}

// sortHits orders hits best first: score, then session id, then ordinal.
func SortHits(hits []Hit) {
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if a.SessionID != b.SessionID {
			return a.SessionID < b.SessionID
		}
		return a.Ordinal < b.Ordinal
	})
}

// Phrase checks. The pairs and their positions decide a phrase (and an
// exclusion) in searchWords, except one with a gap: a token the analyzer
// drops (a lone "_", a blob) inside it leaves a position without terms,
// and a word with no neighbouring word cannot be placed by pairs
// (phrase.exact). Such a query is decided by the text: searchWords
// narrows it to the documents holding its pairs and words, and the best of
// them are checked on their text, message by message (sessionMatches);
// when fewer than the limit pass, the search is run again for checkGrowth
// times as many. A search reads the text of at most maxChecked sessions:
// one that would need more stops and returns what passed with ErrPartial.
const (
	checkGrowth = 4
	maxChecked  = MaxLimit
)

// budget is the number of sessions a search may read to check phrases:
// maxChecked, or a test's checkBudget.
func (ix *Index) budget() int {
	if ix.checkBudget > 0 {
		return ix.checkBudget
	}
	return maxChecked
}

// ErrPartial is returned by Search, with the hits it found, when it
// stopped at its budget (maxChecked sessions' text read) before it could
// tell whether more of the user's sessions hold the query's phrases: the
// hits are right but there may be more, or better ones. Callers must say
// so to the user.
var ErrPartial = errors.New("index: search stopped at its budget of text checks; results may be incomplete")

// searchSessions returns the best sessions of pq, checked and explained;
// partial when the checks ran out of budget.
func (ix *Index) searchSessions(ctx context.Context, q Query, pq parsedQuery, limit int, ev evaluation) (hits []Hit, total uint64, partial bool, err error) {
	check := pq.needsCheck()
	fetch := limit
	// The total is for the debug log only: counting the documents pruning
	// skipped costs a union of posting bitmaps.
	debug := ix.log.Debug()
	ev.countAll = debug.Enabled()
	debug.Discard()
	checked := make(map[string]bool) // session id: holds the phrases
	texts := make(map[string]Session)
	for {
		res, err := ix.searchBest(ctx, q.UserID, pq, fetch, ev)
		if err != nil {
			return nil, 0, false, err
		}
		docs, total := res.docs, res.total
		hits, err := sessionHits(q.UserID, docs)
		if err != nil {
			return nil, 0, false, err
		}
		if !check && !q.Explain {
			return hits, total, false, nil
		}
		// A snippet reads no further into the body than this (see
		// findMatches and fragment); a check reads all of it.
		bodyBytes := maxScanBytes + snippetBytes + utf8.UTFMax
		if check {
			bodyBytes = 0
		}
		var unread []Hit
		for _, h := range hits {
			if _, ok := texts[h.SessionID]; !ok && !checked[h.SessionID] {
				unread = append(unread, h)
			}
		}
		if ms, ok := ix.text.(MessageSource); ok && check && !q.Explain {
			// Text a message at a time, up to the one that decides.
			if err := ix.checkMessages(ctx, ms, q.UserID, pq, unread, checked); err != nil {
				return nil, 0, false, err
			}
			unread = nil
		}
		read, err := ix.texts(ctx, q.UserID, unread, bodyBytes)
		if err != nil {
			return nil, 0, false, err
		}
		for _, h := range unread {
			s, ok := read[h.SessionID]
			if check {
				checked[h.SessionID] = ok && sessionMatches(ix.analyzer, pq, s)
				if !checked[h.SessionID] {
					continue
				}
			}
			texts[h.SessionID] = s
		}
		kept := hits[:0]
		for _, h := range hits {
			if check && !checked[h.SessionID] {
				continue
			}
			kept = append(kept, h)
		}
		if !check || len(kept) >= limit || len(docs) < fetch {
			kept = kept[:min(limit, len(kept))]
			return ix.explainHits(ctx, q, pq, kept, texts), total, false, ctx.Err()
		}
		if fetch >= ix.budget() {
			return ix.explainHits(ctx, q, pq, kept, texts), total, true, ctx.Err()
		}
		fetch = min(checkGrowth*fetch, ix.budget())
	}
}

// checkMessages checks the hits' sessions on their text read from ms a
// message at a time (as sessionMatches checks a session), recording in
// checked whether each holds the query's phrases and none of its
// exclusions; a session ms does not have does not.
func (ix *Index) checkMessages(ctx context.Context, ms MessageSource, userID string, pq parsedQuery, hits []Hit, checked map[string]bool) error {
	if len(hits) == 0 {
		return nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.SessionID
		checked[h.SessionID] = false
	}
	var cur string
	var m *textMatcher
	finish := func() {
		if m != nil {
			checked[cur] = m.matches()
		}
	}
	err := ms.EachText(ctx, userID, ids, func(id, text string) bool {
		if id != cur || m == nil {
			finish()
			cur, m = id, newTextMatcher(pq)
		}
		if text != "" {
			m.add(ix.analyzer.Analyze([]byte(text)))
		}
		return !m.decided()
	})
	finish()
	if err != nil {
		return fmt.Errorf("text of the hits: %w", err)
	}
	return nil
}

// textMatcher decides, a text at a time (the title, each message), whether
// a session holds every phrase of a query within one text and no
// exclusion in any.
type textMatcher struct {
	pq       parsedQuery
	found    []bool
	left     int
	excluded bool
}

func newTextMatcher(pq parsedQuery) *textMatcher {
	return &textMatcher{pq: pq, found: make([]bool, len(pq.Phrases)), left: len(pq.Phrases)}
}

// add reads one text's tokens.
func (m *textMatcher) add(tokens analysis.TokenStream) {
	for i, ph := range m.pq.Phrases {
		if !m.found[i] && phraseIn(tokens, ph) {
			m.found[i] = true
			m.left--
		}
	}
	for _, ph := range m.pq.Exclude {
		if !m.excluded && phraseIn(tokens, ph) {
			m.excluded = true
		}
	}
}

// decided reports whether more text cannot change matches.
func (m *textMatcher) decided() bool {
	return m.excluded || (m.left == 0 && len(m.pq.Exclude) == 0)
}

// matches reports the verdict on the texts read.
func (m *textMatcher) matches() bool { return !m.excluded && m.left == 0 }

// explainHits fills the hits' snippets and matchedIn from their texts when
// q asks for them.
func (ix *Index) explainHits(ctx context.Context, q Query, pq parsedQuery, hits []Hit, texts map[string]Session) []Hit {
	if !q.Explain {
		return hits
	}
	terms := pq.matchTerms()
	for i, h := range hits {
		if ctx.Err() != nil {
			return hits
		}
		s := texts[h.SessionID]
		hits[i].Snippet, hits[i].MatchedIn = explain(ix.analyzer, terms, s.Title, s.Body)
	}
	return hits
}

// searchBest is searchWords over sessions: the best limit sessions of the
// user, each once, as the document of its best volume (volumes.go), best
// first; fewer only when the user has no more that match (limit <= 0:
// all). Documents are fetched until limit distinct sessions are among
// them: a session's volumes after its best cannot displace another
// session, so the sessions are those the documents of every session
// collapsed to its best would give, and pruned and exhaustive
// evaluations, which give the same documents, give the same sessions.
func (ix *Index) searchBest(ctx context.Context, userID string, pq parsedQuery, limit int, ev evaluation) (wordsResult, error) {
	fetch := limit
	for {
		res, err := searchWords(ctx, ix.sessions, &ix.sessionLengths, userID, pq, fetch, ev)
		if err != nil {
			return res, err
		}
		docs, volumes := bestVolumes(res.docs)
		if volumes == 0 || limit <= 0 || len(docs) >= limit || len(res.docs) < fetch {
			if limit > 0 {
				docs = docs[:min(limit, len(docs))]
			}
			res.docs = docs
			return res, nil
		}
		// Each session left out has at least one more document: fetch as
		// many more as the volumes that took places, and at least double.
		fetch = max(2*fetch, fetch+volumes)
	}
}

// bestVolumes keeps the first (best) document of each session in docs,
// in order, and returns how many it dropped.
func bestVolumes(docs []docHit) ([]docHit, int) {
	seen := make(map[string]bool, len(docs))
	out := docs[:0:0]
	for _, d := range docs {
		owner, sessionID, ok := splitKey(d.id)
		if !ok {
			out = append(out, d) // sessionHits reports it
			continue
		}
		k := owner + "\x00" + sessionOfVolume(sessionID)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, d)
	}
	return out, len(docs) - len(out)
}

// sessionHits turns documents into session hits, checking their owner.
func sessionHits(userID string, docs []docHit) ([]Hit, error) {
	hits := make([]Hit, 0, len(docs))
	for _, d := range docs {
		owner, sessionID, ok := splitKey(d.id)
		if !ok {
			return nil, fmt.Errorf("malformed document id %q", d.id)
		}
		if owner != userID { // cannot happen: searchWords matches only the user's documents
			return nil, errors.New("a document of another user matched")
		}
		hits = append(hits, Hit{SessionID: sessionOfVolume(sessionID), Ordinal: -1, Score: d.score})
	}
	return hits, nil
}

// texts asks the TextSource for the hits' sessions, in one call.
func (ix *Index) texts(ctx context.Context, userID string, hits []Hit, bodyBytes int) (map[string]Session, error) {
	if len(hits) == 0 {
		return map[string]Session{}, nil
	}
	ids := make([]string, 0, len(hits))
	seen := make(map[string]bool, len(hits))
	for _, h := range hits {
		if !seen[h.SessionID] {
			seen[h.SessionID] = true
			ids = append(ids, h.SessionID)
		}
	}
	texts, err := ix.text.SessionText(ctx, userID, ids, bodyBytes)
	if err != nil {
		return nil, fmt.Errorf("text of the hits: %w", err)
	}
	if texts == nil {
		texts = map[string]Session{}
	}
	return texts, nil
}

// Chunk search. There are no chunk documents: the best sessions for the
// query's words (and phrases' words) are found in the index, and their
// chunks, read from the TextSource, are analysed and scored with BM25:
// the terms' idf over the user's live sessions and the mean length of
// their chunks (fieldChunkLength / fieldChunks), the statistics the
// session search computed on the same snapshot. Phrases and exclusions are
// checked per chunk, each message of a chunk on its own (Chunk.Breaks).
// Without a phrase, a chunk outside the best sessions is not found:
// chunkSessions(limit) sessions are read, enough for the context endpoint,
// which returns a few sessions by their best chunk. Reading them costs a
// few milliseconds; an index of chunk documents cost more than twice the
// text it indexed. With a phrase, every session holding its pairs is read
// (up to maxChecked, past which the result is partial), so that every
// chunk holding the phrase is a candidate.
func chunkSessions(limit int) int {
	return min(max((limit+3)/4, 10), 50)
}

// searchChunks returns the best chunks of pq among the best sessions;
// partial when a phrase's candidate sessions were more than maxChecked.
func (ix *Index) searchChunks(ctx context.Context, q Query, pq parsedQuery, limit int, ev evaluation) ([]Hit, uint64, bool, error) {
	// Exclusions apply to chunks, not to their sessions, and a session
	// need only hold a phrase's pairs: the chunks are checked below.
	sq := parsedQuery{Terms: pq.Terms, Phrases: pq.Phrases}
	fetch, partial := chunkSessions(limit), false
	if len(pq.Phrases) > 0 {
		fetch = ix.budget() + 1
	}
	res, err := ix.searchBest(ctx, q.UserID, sq, fetch, ev)
	if err != nil || len(res.docs) == 0 {
		return nil, 0, false, err
	}
	if len(res.docs) > ix.budget() {
		res.docs, partial = res.docs[:ix.budget()], true
	}
	sessions, err := sessionHits(q.UserID, res.docs)
	if err != nil {
		return nil, 0, false, err
	}
	texts, err := ix.texts(ctx, q.UserID, sessions, 0)
	if err != nil {
		return nil, 0, false, err
	}
	terms := sq.scoredTerms() // res.df's order
	w := chunkWeights(res)
	slot := make(map[string]int, len(terms))
	for j, t := range terms {
		slot[t] = j
	}
	check := len(pq.Phrases) > 0 || len(pq.Exclude) > 0
	marked := pq.matchTerms()
	tf := make([]float64, len(terms))
	var hits []Hit
	var total uint64
	for _, sh := range sessions {
		if err := ctx.Err(); err != nil {
			return nil, 0, false, err
		}
		for _, c := range texts[sh.SessionID].Chunks {
			tokens := ix.analyzer.Analyze([]byte(c.Text))
			if check && !matchesTokens(pq, splitMessages(tokens, c.Breaks)...) {
				continue
			}
			clear(tf)
			for _, t := range tokens {
				if j, ok := slot[string(t.Term)]; ok {
					tf[j]++
				}
			}
			score, length := 0.0, float64(lengthOf(tokens))
			for j, f := range tf {
				if f > 0 {
					score += w.idf[j] * bm25TF(f, length, w.avgdl)
				}
			}
			if score == 0 {
				continue
			}
			total++
			h := Hit{SessionID: sh.SessionID, Ordinal: c.Ordinal, Score: score}
			if q.Explain {
				h.Snippet, h.MatchedIn = explain(ix.analyzer, marked, "", c.Text)
			}
			hits = append(hits, h)
		}
	}
	SortHits(hits)
	return hits[:min(limit, len(hits))], total, partial, nil
}

// chunkScoring is what chunk scores need: each term's idf and the mean
// chunk length.
type chunkScoring struct {
	idf   []float64 // by term of scoredTerms
	avgdl float64
}

// chunkWeights returns the chunk statistics of the user's live sessions
// that the session search res was computed with: each term's idf over the
// sessions, and their chunks' mean length.
func chunkWeights(res wordsResult) chunkScoring {
	w := chunkScoring{idf: make([]float64, len(res.df)), avgdl: res.lengths.meanChunkLength()}
	for j, df := range res.df {
		w.idf[j] = bm25IDF(res.lengths.docs, df)
	}
	return w
}

// sessionMatches reports whether session s satisfies the query's phrases
// and exclusions: a phrase matches within the title or within one message
// of the body (s.Breaks), never across two. Each text is analysed on its
// own (its tokens are those it has in the body, see compose.go), the title
// first, and the check stops at the text that decides it.
func sessionMatches(a analysis.Analyzer, pq parsedQuery, s Session) bool {
	if len(pq.Phrases) == 0 && len(pq.Exclude) == 0 {
		return true
	}
	m := newTextMatcher(pq)
	if s.Title != "" {
		m.add(a.Analyze([]byte(s.Title)))
	}
	at := 0
	for _, b := range append(slices.Clip(s.Breaks), len(s.Body)) {
		if m.decided() {
			break
		}
		m.add(a.Analyze([]byte(s.Body[at:b])))
		at = b
	}
	return m.matches()
}

// matchesTokens reports whether a document of the given analysed texts
// satisfies the query's phrases and exclusions (plain words only rank):
// every phrase occurs in one of texts, and no exclusion occurs in any.
func matchesTokens(pq parsedQuery, streams ...analysis.TokenStream) bool {
	in := func(ph phrase) bool {
		for _, s := range streams {
			if phraseIn(s, ph) {
				return true
			}
		}
		return false
	}
	for _, ph := range pq.Phrases {
		if !in(ph) {
			return false
		}
	}
	for _, ph := range pq.Exclude {
		if in(ph) {
			return false
		}
	}
	return true
}

// docHit is one document of a result: the Bleve document id and the score.
type docHit struct {
	id    string
	score float64
}

func (ix *Index) searchErr(ctx context.Context, kind Kind, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, bleve.ErrorIndexClosed) {
		return ErrClosed
	}
	return fmt.Errorf("index: search %s: %w", kind, err)
}

// frequentTermShare is the share of a user's documents above which a
// query term counts as frequent (see wordsPlan). Measured on SciFact and
// CoSQA, where 0.1 leaves nDCG@10 unchanged. Users with fewer than
// minDocsForFrequent documents are fast enough without a plan.
const (
	frequentTermShare  = 0.1
	minDocsForFrequent = 1000
)

// wordsPlan says which documents the plain words may match beyond "any of
// them" (see wordsQuery). The zero value restricts nothing.
type wordsPlan struct {
	selective map[string]bool // non-nil: a document must contain one of these terms
}

// planFromFrequencies decides the plan from the number of the user's
// live documents n and each plain word's document frequency among them
// (the user's, like the BM25 statistics, so that no other user's
// documents change which of the user's documents match): when the words mix frequent ones (in more than
// frequentTermShare of the documents) and selective ones (present, but not
// frequent), a document must hold a selective one. Queries whose words are
// all frequent get no plan: requiring all of them was measured, and
// intersecting lists that each cover most of the index costs as much as
// scoring their union.
func planFromFrequencies(n uint64, terms []string, dfs []uint64) wordsPlan {
	if len(terms) < 2 || n < minDocsForFrequent {
		return wordsPlan{}
	}
	limit := uint64(frequentTermShare * float64(n))
	selective := make(map[string]bool)
	var anyFrequent bool
	for i, t := range terms {
		switch df := dfs[i]; {
		case df > limit:
			anyFrequent = true
		case df > 0:
			selective[t] = true
		}
	}
	if !anyFrequent || len(selective) == 0 {
		return wordsPlan{}
	}
	return wordsPlan{selective: selective}
}
