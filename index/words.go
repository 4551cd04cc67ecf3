package index

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/hindsight-dev/hindsight/topk"
)

// searchWords evaluates a parsed query on the index's segments directly,
// with the scoring function of scoring.go (textbook BM25). Plain words
// are the common case; phrases and exclusions only narrow the candidates:
// the documents that hold every phrase (and those that hold an exclusion)
// are found on the same snapshot by the phrases' word pairs and their
// positions (phraseFilter, phrases.go), and the words and the phrases'
// words are then scored like plain words. Only a phrase with a gap (a
// dropped token) is left to the caller to check on the text (see
// parsedQuery.needsCheck).
//
// Bleve's own scorer is not used: it takes sqrt(tf), weights each term by
// idf twice (BM25 idf times idf·queryNorm), multiplies by a coordination
// factor, and divides lengths by an "average" that is the number of
// distinct terms per document (its field cardinality), about a tenth of
// the true mean on SciFact; see docs/index.md for what each of these cost.
//
// The BM25 statistics (N, df, avgdl) and the frequent-word plan are the
// user's: computed over the user's live documents only, so that no other
// user's documents change a user's results or scores (scoring.go). Both
// evaluations compute them, each its own way: the pruned one from the
// block cache's views and blocks, the exhaustive one from Bleve's
// dictionaries and posting lists, so that tests comparing the two compare
// the statistics too.
//
// Normally (scoreBest, pruned.go) the evaluation reads no posting list: each term's
// postings in the user's documents of a segment, decoded once into blocks
// of the user's documents with their BM25 maxima and document masks, and
// the user's view of the segment with its length totals come from the
// block cache (lookUpBlocks, blockmax.go). It weighs the terms (weigh);
// goes through each segment block by block, narrowing the user's live
// documents by the phrase filter and the plan into candidates and
// bounding each block by the words its candidates hold (segmentBlocks);
// and scores the blocks, best bound first, then in index order, until no
// block left can reach the limit-th score (scoreQueue). Exhaustively
// (scoreAll, exhaustive.go; tests), it looks up each term's posting list in every
// segment (lookUpWords), intersects the user's documents with the plan's
// words and the filter into a candidate bitmap (segmentCandidates),
// decodes the candidates' postings through zap (candidatePostings) and
// accumulates their scores in an array indexed by document number
// (scoreTasks). Each worker keeps its best in a top-k heap; they are
// merged (mergeTop) and the winners' ids loaded (load). Ties are broken
// by index order.
//
// The pruned result is the exhaustive evaluation's, to the bit (see
// pruneSlack).
func searchWords(ctx context.Context, idx bleve.Index, lengths *lengthCache, userID string, pq parsedQuery, limit int, ev evaluation) (res wordsResult, err error) {
	adv, err := idx.Advanced()
	if err != nil {
		return res, err
	}
	r, err := adv.Reader()
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return res, fmt.Errorf("index is %T, not a scorch index", r)
	}
	terms := pq.scoredTerms()
	segs := snap.Segments()
	exhaustive := ev.exhaustive || limit <= 0
	// A pruned search for a few hits checks its phrases' positions on
	// its best documents only (bestChecked); the exhaustive one, a count
	// of every match and a search for many check them on every document.
	lazy := !exhaustive && !ev.countAll && limit < maxLazyFetch
	// A pruned search with phrases looks their pairs up first: when few
	// of the user's documents hold them (scanPhraseDocs), those are
	// checked and scored one by one, and no word's blocks are built.
	var filter *docFilter
	scan := false
	if !exhaustive && len(pq.Phrases) > 0 {
		if filter, err = phraseFilter(ctx, &lengths.blocks, segs, userID, pq, true); err != nil {
			return res, err
		}
		if scan = filter.candidates() <= ev.phraseScanLimit(); scan || !lazy {
			if filter, err = filter.checkAll(ctx); err != nil {
				return res, err
			}
		}
	}
	var ws *wordSearch
	switch {
	case exhaustive:
		ws, err = lookUpWords(segs, userID, terms)
	case scan:
		ws, err = lookUpLists(&lengths.blocks, segs, userID, terms)
	default:
		ws, err = lookUpBlocks(&lengths.blocks, segs, userID, terms)
	}
	if err != nil {
		return res, err
	}
	// The statistics, with the words in scoredTerms' order, before weigh
	// sorts them.
	res.lengths, res.df = ws.lengths, make([]uint64, len(terms))
	for j := range terms {
		res.df[j] = ws.words[j].df
	}
	n := ws.lengths.docs
	if n == 0 {
		return res, nil
	}
	var plan wordsPlan
	if len(pq.Phrases) == 0 {
		// The plain words come first in terms, in query order.
		plan = planFromFrequencies(n, pq.Terms, res.df[:len(pq.Terms)])
	}
	if filter == nil {
		if filter, err = phraseFilter(ctx, &lengths.blocks, segs, userID, pq, lazy); err != nil {
			return res, err
		}
	}
	ws.filter = filter
	ws.weigh(n, ws.lengths.meanLength())
	ws.countAll, ws.pruned = ev.countAll, ev.pruned
	var best []scoredDoc
	var total uint64
	switch {
	case exhaustive:
		tasks, work := ws.candidates(plan)
		if len(tasks) == 0 {
			return res, nil
		}
		best, total, err = mergeTop(ws.scoreAll(ctx, tasks, work, ev.workers, limit), limit)
	case scan:
		tasks := filter.tasks()
		if len(tasks) == 0 {
			return res, nil
		}
		best, total, err = mergeTop(ws.scoreAll(ctx, tasks, 0, ev.workers, limit), limit)
	default:
		best, total, err = ws.bestChecked(ctx, plan, ev.workers, limit)
	}
	if err != nil {
		return res, err
	}
	res.total = total
	if res.docs, err = ws.load(best); err != nil {
		return res, err
	}
	return res, nil
}

// wordsResult is what searchWords returns: the best documents, best first;
// total, the number of the user's documents that match (with pruning and
// without evaluation.countAll, those scored to the end: fewer); and the
// user's statistics the scores were computed with: the length totals of
// the user's live documents and, by term of parsedQuery.scoredTerms, the
// number of them holding it.
type wordsResult struct {
	docs    []docHit
	total   uint64
	lengths lengthTotals
	df      []uint64
}

// evaluation tunes how searchWords evaluates a query, not what it
// returns: workers is how many goroutines score it (0 chooses: one for a
// pruned query; for an exhaustive one, one for a small query, else up to
// GOMAXPROCS; tests force more), exhaustive turns pruning off, for tests
// that compare the two, countAll makes the total count the matches
// pruning skipped too (it costs a union of the words' posting bitmaps),
// and pruned (when not nil) counts the candidates pruning did not score
// to the end.
type evaluation struct {
	workers    int
	exhaustive bool
	countAll   bool
	pruned     *atomic.Int64
	// phraseScan is the number of documents holding a query's phrases'
	// pairs up to which they are scored one by one (scanPhraseDocs when
	// 0; below 0, never: tests that compare the block evaluation of
	// phrases with the exhaustive one).
	phraseScan int
}

// scanPhraseDocs is the number of a user's documents holding a query's
// phrases' pairs up to which a pruned search checks and scores them one
// by one, reading each word's postings at those documents only, rather
// than going through the words' blocks. A phrase is mostly rare while
// its words are not: building a common word's blocks walks all of its
// postings, which costs a phrase's first query far more than reading a
// few hundred documents' postings, and those blocks would serve plain
// queries of the word only.
const scanPhraseDocs = 1024

func (ev evaluation) phraseScanLimit() uint64 {
	switch {
	case ev.phraseScan < 0:
		return 0
	case ev.phraseScan == 0:
		return scanPhraseDocs
	}
	return uint64(ev.phraseScan)
}

// wordSearch is what searchWords reads from one index snapshot.
type wordSearch struct {
	segs []*scorch.SegmentSnapshot
	// lengths is the length totals of the user's live documents.
	lengths lengthTotals
	users   []segment.PostingsList // the user's documents, by segment (exhaustive)
	// views holds, by segment, the user's documents by rank (userDocs),
	// and live the live ones, a word per block (pruned: lookUpBlocks).
	views  []*userDocs
	live   [][]uint64
	words  []wordPostings
	filter *docFilter // nil: no phrase or exclusion
	// maxDocs is the largest segment's document count.
	maxDocs  int
	avgdl    float64 // set by weigh
	countAll bool    // total counts the documents pruning skipped
	pruned   *atomic.Int64
	// floor is the highest limit-th score a worker's heap has reached
	// (float64 bits; scores are positive, so their bits order like them):
	// every worker may prune below it.
	floor atomic.Uint64
}

// wordPostings is one query term: its posting list (exhaustive) or its
// blocks (pruned) in each segment, and its idf.
type wordPostings struct {
	term   string
	lists  []segment.PostingsList // by segment
	blocks []*termBlocks          // by segment; nil: none of the user's postings there
	df     uint64                 // the user's live documents holding the term
	idf    float64
}

// weigh sets the BM25 statistics for an index of n documents with mean
// length avgdl, and orders the terms by document frequency (rarest
// first), the order their scores are summed in.
func (ws *wordSearch) weigh(n uint64, avgdl float64) {
	ws.avgdl = avgdl
	words := ws.words
	sort.SliceStable(words, func(a, b int) bool { return words[a].df < words[b].df })
	for j := range words {
		words[j].idf = bm25IDF(n, words[j].df)
	}
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

// partialResult is one worker's share of a query.
type partialResult struct {
	top   topk.Heap[scoredDoc]
	total uint64
	err   error
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

// mergeTop merges the workers' top-k heaps into the limit best documents,
// best first, and adds up how many documents matched.
func mergeTop(parts []partialResult, limit int) ([]scoredDoc, uint64, error) {
	top := topk.New(limit, scoredDoc.worse)
	var total uint64
	for _, p := range parts {
		if p.err != nil {
			return nil, 0, p.err
		}
		total += p.total
		for _, d := range p.top.Items() {
			top.Push(d)
		}
	}
	return top.Sorted(), total, nil
}

// load turns the best documents into hits: their ids and scores.
func (ws *wordSearch) load(best []scoredDoc) ([]docHit, error) {
	docs := make([]docHit, len(best))
	for k, sd := range best {
		id, err := ws.segs[sd.seg].DocID(uint64(sd.doc))
		if err != nil {
			return nil, err
		}
		docs[k] = docHit{id: string(id), score: sd.score}
	}
	return docs, nil
}
