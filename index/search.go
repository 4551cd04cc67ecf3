package index

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	blevesearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/query"
	"github.com/blevesearch/bleve/v2/search/scorer"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Kind selects which documents a query searches.
type Kind int

const (
	// Sessions searches session documents (title + body); one hit per session.
	Sessions Kind = iota
	// Chunks searches chunk documents; a session may have several hits.
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
	// and ranked by BM25, "quoted phrases" must match, -word and -"phrase"
	// exclude. Other punctuation is ignored. See MaxQueryTerms.
	Text string
	Kind Kind
	// Limit is the number of hits wanted: 0 means DefaultLimit, larger
	// than MaxLimit means MaxLimit.
	Limit int
	// Explain fills Hit.Snippet and Hit.MatchedIn. It loads the hits' stored
	// text, so it costs more than a plain search.
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

// Search returns the best-scoring documents of q.Kind owned by q.UserID,
// best first (equal scores by session id, then ordinal). It returns an error
// wrapping ErrBadQuery when q.Text has nothing to search for.
//
// A search does not read stored fields unless q.Explain is set: session id
// and ordinal are decoded from the document id. Plain words are evaluated
// directly on the index segments (searchWords); phrases and exclusions go
// through Bleve's query (searchBleve). Both rank the same way.
func (ix *Index) Search(ctx context.Context, q Query) ([]Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.UserID == "" {
		return nil, errors.New("index: search: user id is required")
	}
	var idx bleve.Index
	switch q.Kind {
	case Sessions:
		idx = ix.sessions
	case Chunks:
		idx = ix.chunks
	default:
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
	var docs []docHit
	var total uint64
	done := false
	if len(pq.Phrases) == 0 && len(pq.Exclude) == 0 {
		docs, total, done, err = searchWords(ctx, idx, q.UserID, pq.Terms, limit, q.Explain, 0)
		if err != nil {
			return nil, ix.searchErr(ctx, q.Kind, err)
		}
	}
	if !done {
		if docs, total, err = searchBleve(ctx, idx, q.UserID, pq, limit, q.Explain); err != nil {
			return nil, ix.searchErr(ctx, q.Kind, err)
		}
	}
	var terms map[string]struct{}
	if q.Explain {
		terms = pq.matchTerms()
	}
	hits := make([]Hit, 0, len(docs))
	for _, d := range docs {
		key, ord := d.id, -1
		if q.Kind == Chunks {
			var ok bool
			if key, ord, ok = splitChunkID(d.id); !ok {
				return nil, fmt.Errorf("index: search: malformed document id %q", d.id)
			}
		}
		owner, sessionID, ok := splitKey(key)
		if !ok {
			return nil, fmt.Errorf("index: search: malformed document id %q", d.id)
		}
		if owner != q.UserID { // cannot happen: both paths match only the user's documents
			return nil, errors.New("index: search: a document of another user matched")
		}
		hit := Hit{SessionID: sessionID, Ordinal: ord, Score: d.score}
		if q.Explain {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			hit.Snippet, hit.MatchedIn = explain(ix.analyzer, terms, d.title, d.body)
		}
		hits = append(hits, hit)
	}
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
	ix.log.Debug().Stringer("kind", q.Kind).Int("hits", len(hits)).Uint64("total", total).
		Dur("took", time.Since(start)).Msg("index: search")
	return hits, nil
}

// docHit is one document of a result, as the two evaluation paths return
// it: the Bleve document id, the score, and the stored text when asked for.
type docHit struct {
	id          string
	score       float64
	title, body string
}

// searchBleve runs the query through Bleve's searchers: the general path,
// for phrases and exclusions (and whenever searchWords declines). Its
// results define what searchWords must return.
func searchBleve(ctx context.Context, idx bleve.Index, userID string, pq parsedQuery, limit int, explain bool) ([]docHit, uint64, error) {
	var plan wordsPlan
	if len(pq.Phrases) == 0 {
		var err error
		if plan, err = planWords(ctx, idx, pq.Terms); err != nil {
			return nil, 0, err
		}
	}
	// The user clause has boost 0: it restricts the result set without
	// adding to the score or to the query norm. A conjunction (rather than a
	// post-filter) lets Bleve skip through whichever posting list is shorter.
	user := termQuery(fieldUser, userID)
	user.SetBoost(0)
	req := bleve.NewSearchRequestOptions(query.NewConjunctionQuery([]query.Query{user, pq.textQuery(fieldText, plan)}), limit, 0, false)
	if explain {
		req.Fields = []string{fieldTitle, fieldBody}
	}
	res, err := idx.SearchInContext(ctx, req)
	if err != nil {
		return nil, 0, err
	}
	docs := make([]docHit, len(res.Hits))
	for i, h := range res.Hits {
		docs[i] = docHit{id: h.ID, score: h.Score}
		if explain {
			docs[i].title, _ = h.Fields[fieldTitle].(string)
			docs[i].body, _ = h.Fields[fieldBody].(string)
		}
	}
	return docs, res.Total, nil
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

// frequentTermShare is the share of an index's documents above which a
// query term counts as frequent (see wordsQuery). Measured on SciFact and
// CoSQA, where 0.1 leaves nDCG@10 unchanged. Indexes under
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

// planWords looks up the document frequency of each term and, when the
// terms mix frequent ones (in more than frequentTermShare of idx's
// documents) and selective ones (present, but not frequent), requires a
// selective one. Frequencies are over all users, like the BM25 statistics.
// It reads its own snapshot of the index; a concurrent write can only
// change the plan, never which user's documents can match. searchWords
// takes the same decision (planFromFrequencies) from the posting lists it
// opens anyway, so its plan costs no look-up.
//
// Queries whose words are all frequent get no plan: requiring all of them
// was measured, and intersecting lists that each cover most of the index
// costs as much as scoring their union.
func planWords(ctx context.Context, idx bleve.Index, terms []string) (wordsPlan, error) {
	if len(terms) < 2 {
		return wordsPlan{}, nil
	}
	adv, err := idx.Advanced()
	if err != nil {
		return wordsPlan{}, err
	}
	r, err := adv.Reader()
	if err != nil {
		return wordsPlan{}, err
	}
	defer r.Close()
	n, err := r.DocCount()
	if err != nil || n < minDocsForFrequent {
		return wordsPlan{}, err
	}
	dfs := make([]uint64, len(terms))
	for i, t := range terms {
		tfr, err := r.TermFieldReader(ctx, []byte(t), fieldText, false, false, false)
		if err != nil {
			return wordsPlan{}, err
		}
		dfs[i] = tfr.Count()
		if err := tfr.Close(); err != nil {
			return wordsPlan{}, err
		}
	}
	return planFromFrequencies(n, terms, dfs), nil
}

// planFromFrequencies is planWords' decision, given the number of
// documents n and each term's document frequency.
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

// searchWords evaluates a query of plain words (no phrase, no exclusion)
// on the index's segments directly, and reports done=false, without
// error, when it cannot (the index is not a scorch index); the caller then
// runs the same query through Bleve.
//
// It computes what searchBleve's query computes, score for score: Bleve's
// BM25 variant with its statistics, the query norm, the coordination
// factor, the same plan (planFromFrequencies), and sums in the order
// Bleve's disjunction sums them (document frequency, ascending), so for up
// to ten words the scores are equal bit for bit; it breaks ties the way
// Bleve's collector does (index order). Above ten words Bleve switches to a
// heap disjunction whose summation order follows the heap, so scores may
// differ in the last bit and documents that close may swap.
// TestSearchWordsMatchesBleve holds the two together.
//
// What it saves is Bleve's per-posting machinery, which dominates when the
// words are common (each costs the whole of its posting list): a searcher,
// a scorer and a pooled match object per posting, a conjunction that
// leapfrogs the user's posting list against the disjunction, and a
// TermFieldReader that maps document numbers between segment and index on
// every step. Instead, per segment, the user's documents (a bitmap) are
// intersected with each word's posting bitmap, the iterator decodes only
// the postings in that intersection, and scores are accumulated word by
// word in an array indexed by document number. Measured on the load
// bench's corpus (100,000 sessions, 4 users) this is 2.6 times less CPU
// per query, and 2.6 times less on a single-user synthetic corpus.
//
// workers is how many goroutines score it: 0 chooses (one for a small
// query, else up to GOMAXPROCS); tests force more.
func searchWords(ctx context.Context, idx bleve.Index, userID string, terms []string, limit int, explain bool, workers int) (docs []docHit, total uint64, done bool, err error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, 0, false, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, false, err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok || len(terms) == 0 {
		return nil, 0, false, nil
	}
	n, err := snap.DocCount()
	if err != nil {
		return nil, 0, false, err
	}
	if n == 0 {
		return nil, 0, true, nil
	}

	segs := snap.Segments()
	words := make([]wordPostings, len(terms))
	for j, t := range terms {
		words[j] = wordPostings{term: t, lists: make([]segment.PostingsList, len(segs))}
	}
	users := make([]segment.PostingsList, len(segs))
	maxDocs := uint64(0)
	// The sum of the dictionary sizes is what snap.FieldCardinality
	// computes, without the field dictionary it builds (once per snapshot,
	// about a millisecond at 100,000 sessions: every write makes one).
	card := 0
	for i, s := range segs {
		maxDocs = max(maxDocs, s.Segment().Count())
		ud, err := s.Segment().Dictionary(fieldUser)
		if err != nil {
			return nil, 0, false, err
		}
		if users[i], err = ud.PostingsList([]byte(userID), s.Deleted(), nil); err != nil {
			return nil, 0, false, err
		}
		td, err := s.Segment().Dictionary(fieldText)
		if err != nil {
			return nil, 0, false, err
		}
		card += td.Cardinality()
		for j := range words {
			pl, err := td.PostingsList([]byte(words[j].term), s.Deleted(), nil)
			if err != nil {
				return nil, 0, false, err
			}
			words[j].lists[i] = pl
			words[j].df += pl.Count()
		}
	}

	if card == 0 { // no document has any term
		return nil, 0, true, nil
	}
	// Bleve's BM25 statistics (searcher.bm25ScoreMetrics): the "average
	// document length" is the field's dictionary sizes summed over
	// segments, per document.
	avgDocLength := math.Ceil(float64(card) / float64(n))

	dfs := make([]uint64, len(words))
	for j, w := range words {
		dfs[j] = w.df
	}
	plan := planFromFrequencies(n, terms, dfs)

	// Bleve's disjunction visits its term searchers ordered by document
	// frequency (a stable insertion sort for up to 12) and sums their
	// scores in that order; summing in the same order keeps every score
	// bit for bit.
	sort.SliceStable(words, func(a, b int) bool { return words[a].df < words[b].df })
	sumOfSquaredWeights := 0.0
	for j := range words {
		w := &words[j]
		w.idf = math.Log(1 + (float64(n)-float64(w.df)+0.5)/(float64(w.df)+0.5))
		sumOfSquaredWeights += w.idf * w.idf
	}
	queryNorm := 1.0 / math.Sqrt(sumOfSquaredWeights)
	for j := range words {
		words[j].queryWeight = words[j].idf * queryNorm
	}

	// The candidates of each segment: the user's documents, narrowed by
	// the plan.
	var tasks []segTask
	var candidates, work uint64
	for i := range segs {
		cand := postingsBitmap(users[i])
		if cand.IsEmpty() {
			continue
		}
		if plan.selective != nil {
			sel := roaring.New()
			for _, w := range words {
				if plan.selective[w.term] {
					sel.Or(postingsBitmap(w.lists[i]))
				}
			}
			if cand = roaring.And(cand, sel); cand.IsEmpty() {
				continue
			}
		}
		tasks = append(tasks, segTask{seg: i, cand: cand})
		candidates += cand.GetCardinality()
		// Reading a word's postings costs about as much for those skipped
		// within a chunk as for those scored: with candidates spread over
		// the segment, that is its whole posting list.
		for _, w := range words {
			work += w.lists[i].Count()
		}
	}
	if workers <= 0 {
		workers = 1
		if work >= parallelWork {
			workers = min(runtime.GOMAXPROCS(0), maxSearchWorkers)
		}
	}
	if workers > 1 {
		tasks = splitTasks(tasks, candidates, workers)
	}
	parts := make([]partialResult, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[k] = scoreTasks(ctx, tasks, &next, words, limit, int(maxDocs), avgDocLength)
		}()
	}
	wg.Wait()
	top := topDocs{limit: limit}
	for _, p := range parts {
		if p.err != nil {
			return nil, 0, false, p.err
		}
		total += p.total
		for _, d := range p.top.heap {
			top.add(d)
		}
	}

	best := top.sorted()
	docs = make([]docHit, len(best))
	for k, sd := range best {
		s := segs[sd.seg]
		id, err := s.DocID(uint64(sd.doc))
		if err != nil {
			return nil, 0, false, err
		}
		docs[k] = docHit{id: string(id), score: sd.score}
		if explain {
			h := &docs[k]
			err := s.VisitDocument(uint64(sd.doc), func(field string, _ byte, value []byte, _ []uint64) bool {
				switch field {
				case fieldTitle:
					h.title = string(value)
				case fieldBody:
					h.body = string(value)
				}
				return true
			})
			if err != nil {
				return nil, 0, false, err
			}
		}
	}
	return docs, total, true, nil
}

// Parallel evaluation. A query's segments (and, for balance, ranges of
// documents within a large segment) are independent until the final top-k
// merge, so a query with enough postings to read is spread over up to
// maxSearchWorkers goroutines. Latency, not throughput, is what this buys:
// the load bench's heaviest queries read ~360,000 postings (~7 ms on one
// core); concurrent queries compete for the same cores either way.
const (
	maxSearchWorkers = 4
	// parallelWork is the number of postings to read below which a query
	// runs on one goroutine: ~0.4 ms of work, far above the cost of
	// starting goroutines and merging their heaps.
	parallelWork = 20_000
)

// segTask is the candidate documents of one segment (or of a range of it).
type segTask struct {
	seg  int
	cand *roaring.Bitmap
}

// splitTasks cuts tasks holding more than a fair share (half a worker's)
// of all candidates into ranges of document numbers, so that workers
// goroutines finish together, and orders them largest first.
func splitTasks(tasks []segTask, candidates uint64, workers int) []segTask {
	share := max(candidates/uint64(workers*2), 1)
	var out []segTask
	for _, t := range tasks {
		n := t.cand.GetCardinality()
		pieces := (n + share - 1) / share
		if pieces <= 1 {
			out = append(out, t)
			continue
		}
		lo := uint64(0)
		for p := uint64(1); p <= pieces; p++ {
			hi := uint64(math.MaxUint32) + 1
			if p < pieces {
				x, err := t.cand.Select(uint32(p * n / pieces))
				if err != nil {
					break
				}
				hi = uint64(x)
			}
			part := t.cand.Clone()
			part.RemoveRange(0, lo)
			part.RemoveRange(hi, uint64(math.MaxUint32)+1)
			if !part.IsEmpty() {
				out = append(out, segTask{seg: t.seg, cand: part})
			}
			lo = hi
		}
	}
	slices.SortStableFunc(out, func(a, b segTask) int { return cmp.Compare(b.cand.GetCardinality(), a.cand.GetCardinality()) })
	return out
}

// partialResult is one worker's share of a query.
type partialResult struct {
	top   topDocs
	total uint64
	err   error
}

// scoreTasks takes tasks in turn (next is shared by the workers) and
// scores their candidates: every word's postings summed into an
// accumulator, then the candidates that matched collected into a top-k.
func scoreTasks(ctx context.Context, tasks []segTask, next *atomic.Int64, words []wordPostings, limit, maxDocs int, avgDocLength float64) (r partialResult) {
	r.top = topDocs{limit: limit}
	acc := accumulators.Get().(*accumulator)
	acc.grow(maxDocs)
	clean := false // every entry back to zero: it may go back to the pool
	defer func() {
		if clean {
			accumulators.Put(acc)
		}
	}()
	numTerms := float64(len(words))
	for {
		k := int(next.Add(1) - 1)
		if k >= len(tasks) {
			break
		}
		t := tasks[k]
		for _, w := range words {
			if r.err = ctx.Err(); r.err != nil {
				return r
			}
			if r.err = acc.add(w, w.lists[t.seg], t.cand, avgDocLength); r.err != nil {
				return r
			}
		}
		it := t.cand.Iterator()
		for it.HasNext() {
			d := it.Next()
			c := acc.count[d]
			if c == 0 {
				continue
			}
			score := acc.sum[d] * (float64(c) / numTerms)
			acc.sum[d], acc.count[d] = 0, 0
			r.total++
			r.top.add(scoredDoc{score: score, seg: t.seg, doc: d})
		}
	}
	clean = true
	return r
}

// wordPostings is one query word: its posting list in each segment and
// its BM25 weights.
type wordPostings struct {
	term        string
	lists       []segment.PostingsList // by segment
	df          uint64                 // document frequency over all segments
	idf         float64
	queryWeight float64 // idf times the query norm (the word's boost is 1)
}

// postingsBitmap returns the documents of a posting list (deleted ones
// excluded) as a bitmap the caller must not modify.
func postingsBitmap(pl segment.PostingsList) *roaring.Bitmap {
	it := pl.Iterator(false, false, false, nil)
	if o, ok := it.(segment.OptimizablePostingsIterator); ok {
		if bm := o.ActualBitmap(); bm != nil {
			return bm
		}
		if d, ok := o.DocNum1Hit(); ok {
			return roaring.BitmapOf(uint32(d))
		}
	}
	bm := roaring.New()
	for {
		p, err := it.Next()
		if err != nil || p == nil {
			return bm
		}
		bm.Add(uint32(p.Number()))
	}
}

// accumulator holds the partial scores of one segment's documents, by
// document number; every entry is zero between uses.
type accumulator struct {
	sum   []float64
	count []uint8 // words matched; MaxQueryTerms fits
}

var accumulators = sync.Pool{New: func() any { return new(accumulator) }}

func (a *accumulator) grow(n int) {
	if len(a.sum) < n {
		a.sum = make([]float64, n)
		a.count = make([]uint8, n)
	}
}

// add scores the postings of w in one segment that fall in cand, the way
// Bleve's TermQueryScorer does with a boost of 1.
func (a *accumulator) add(w wordPostings, pl segment.PostingsList, cand *roaring.Bitmap, avgDocLength float64) error {
	it := pl.Iterator(true, true, false, nil)
	filter := true
	if o, ok := it.(segment.OptimizablePostingsIterator); ok {
		if bm := o.ActualBitmap(); bm != nil {
			filter = false
			// With a smaller bitmap the iterator decodes only the postings
			// of cand, stepping over the others; when cand holds them all
			// (a single user), the untouched iterator is the faster one.
			if in := roaring.And(bm, cand); in.GetCardinality() < bm.GetCardinality() {
				o.ReplaceActual(in)
			}
		}
	}
	for {
		p, err := it.Next()
		if err != nil {
			return err
		}
		if p == nil {
			return nil
		}
		d := uint32(p.Number())
		if filter && !cand.Contains(d) {
			continue
		}
		freq := p.Frequency()
		var tf float64
		if freq < scorer.MaxSqrtCache {
			tf = scorer.SqrtCache[int(freq)]
		} else {
			tf = math.Sqrt(float64(freq))
		}
		norm := p.Norm()
		fieldLength := 1 / (norm * norm)
		score := w.idf * (tf * blevesearch.BM25_k1) /
			(tf + blevesearch.BM25_k1*(1-blevesearch.BM25_b+(blevesearch.BM25_b*fieldLength/avgDocLength)))
		if w.queryWeight != 1.0 {
			score = score * w.queryWeight
		}
		a.sum[d] += score
		a.count[d]++
	}
}

// scoredDoc is a document of segment seg with its final score.
type scoredDoc struct {
	score float64
	seg   int
	doc   uint32
}

// worse reports whether a ranks below b: lower score, or the same score
// and later in the index (Bleve's collector breaks ties by index order).
func (a scoredDoc) worse(b scoredDoc) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if a.seg != b.seg {
		return a.seg > b.seg
	}
	return a.doc > b.doc
}

// topDocs keeps the limit best documents: a heap with the worst on top.
type topDocs struct {
	limit int
	heap  []scoredDoc
}

func (t *topDocs) add(d scoredDoc) {
	h := t.heap
	if len(h) == t.limit {
		if !h[0].worse(d) {
			return
		}
		h[0] = d
		t.down(0)
		return
	}
	h = append(h, d)
	t.heap = h
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].worse(h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (t *topDocs) down(i int) {
	h := t.heap
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r].worse(h[l]) {
			m = r
		}
		if !h[m].worse(h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// sorted returns the documents best first.
func (t *topDocs) sorted() []scoredDoc {
	out := slices.Clone(t.heap)
	slices.SortFunc(out, func(a, b scoredDoc) int {
		switch {
		case b.worse(a):
			return -1
		case a.worse(b):
			return 1
		}
		return 0
	})
	return out
}
