package index

import (
	"cmp"
	"context"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	blevesearch "github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/scorer"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/hindsight-dev/hindsight/topk"
)

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
// every step. Instead it goes in steps: look up each word's posting list in
// every segment (lookUpWords) and weigh the words (weigh); per segment,
// intersect the user's documents with the plan's words into a candidate
// bitmap (segmentCandidates); decode only the postings in it
// (candidatePostings) and accumulate their scores (bm25) in an array
// indexed by document number (scoreTasks); keep each worker's best in a
// top-k heap and merge them (mergeTop); load the winners' ids (load).
// Measured on the load bench's corpus (100,000 sessions, 4 users) this is
// 2.6 times less CPU per query, and 2.6 times less on a single-user
// synthetic corpus.
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
	ws, err := lookUpWords(snap.Segments(), userID, terms)
	if err != nil {
		return nil, 0, false, err
	}
	if ws.cardinality == 0 { // no document has any term
		return nil, 0, true, nil
	}
	// The plan sees the words in query order, before weigh sorts them.
	dfs := make([]uint64, len(ws.words))
	for j, w := range ws.words {
		dfs[j] = w.df
	}
	plan := planFromFrequencies(n, terms, dfs)
	ws.weigh(n)
	tasks, work := ws.candidates(plan)
	if workers <= 0 {
		workers = 1
		if work >= parallelWork {
			workers = min(runtime.GOMAXPROCS(0), maxSearchWorkers)
		}
	}
	if workers > 1 {
		tasks = splitTasks(tasks, workers)
	}
	parts := make([]partialResult, workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := range parts {
		wg.Go(func() { parts[k] = ws.scoreTasks(ctx, tasks, &next, limit) })
	}
	wg.Wait()
	best, total, err := mergeTop(parts, limit)
	if err != nil {
		return nil, 0, false, err
	}
	if docs, err = ws.load(best, explain); err != nil {
		return nil, 0, false, err
	}
	return docs, total, true, nil
}

// wordSearch is what searchWords reads from one index snapshot.
type wordSearch struct {
	segs  []*scorch.SegmentSnapshot
	users []segment.PostingsList // the user's documents, by segment
	words []wordPostings
	// cardinality is the sum of the text field's dictionary sizes over the
	// segments, maxDocs the largest segment's document count.
	cardinality  int
	maxDocs      int
	avgDocLength float64 // set by weigh
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

// lookUpWords opens, in every segment, the user's posting list and each
// term's, and adds up the statistics BM25 needs. The sum of the dictionary
// sizes is what snap.FieldCardinality computes, without the field
// dictionary it builds (once per snapshot, about a millisecond at 100,000
// sessions: every write makes one).
func lookUpWords(segs []*scorch.SegmentSnapshot, userID string, terms []string) (*wordSearch, error) {
	ws := &wordSearch{segs: segs, users: make([]segment.PostingsList, len(segs)), words: make([]wordPostings, len(terms))}
	for j, t := range terms {
		ws.words[j] = wordPostings{term: t, lists: make([]segment.PostingsList, len(segs))}
	}
	for i, s := range segs {
		ws.maxDocs = max(ws.maxDocs, int(s.Segment().Count()))
		ud, err := s.Segment().Dictionary(fieldUser)
		if err != nil {
			return nil, err
		}
		if ws.users[i], err = ud.PostingsList([]byte(userID), s.Deleted(), nil); err != nil {
			return nil, err
		}
		td, err := s.Segment().Dictionary(fieldText)
		if err != nil {
			return nil, err
		}
		ws.cardinality += td.Cardinality()
		for j := range ws.words {
			pl, err := td.PostingsList([]byte(ws.words[j].term), s.Deleted(), nil)
			if err != nil {
				return nil, err
			}
			ws.words[j].lists[i] = pl
			ws.words[j].df += pl.Count()
		}
	}
	return ws, nil
}

// weigh sets Bleve's BM25 statistics (searcher.bm25ScoreMetrics) for an
// index of n documents: the "average document length" is the field's
// dictionary sizes summed over segments, per document. It orders the
// words as Bleve's disjunction visits its term searchers, by document
// frequency (a stable insertion sort for up to 12), because scores are
// summed in that order: the same order keeps every score bit for bit.
func (ws *wordSearch) weigh(n uint64) {
	ws.avgDocLength = math.Ceil(float64(ws.cardinality) / float64(n))
	words := ws.words
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
}

// segTask is the candidate documents of one segment (or of a range of it).
type segTask struct {
	seg  int
	cand *roaring.Bitmap
}

// candidates returns a task for every segment with candidates, and the
// work the query will cost: the postings its words hold in those segments.
// Reading a word's postings costs about as much for those skipped within a
// chunk as for those scored: with candidates spread over the segment, that
// is its whole posting list.
func (ws *wordSearch) candidates(plan wordsPlan) (tasks []segTask, work uint64) {
	for i := range ws.segs {
		cand := ws.segmentCandidates(i, plan)
		if cand == nil {
			continue
		}
		tasks = append(tasks, segTask{seg: i, cand: cand})
		for _, w := range ws.words {
			work += w.lists[i].Count()
		}
	}
	return tasks, work
}

// segmentCandidates returns the documents of segment i that may match:
// the user's, narrowed by the plan to those holding a selective word; nil
// when there are none. The bitmap may belong to a posting list: it must
// not be modified.
func (ws *wordSearch) segmentCandidates(i int, plan wordsPlan) *roaring.Bitmap {
	cand := postingsBitmap(ws.users[i])
	if cand.IsEmpty() {
		return nil
	}
	if plan.selective != nil {
		sel := roaring.New()
		for _, w := range ws.words {
			if plan.selective[w.term] {
				sel.Or(postingsBitmap(w.lists[i]))
			}
		}
		if cand = roaring.And(cand, sel); cand.IsEmpty() {
			return nil
		}
	}
	return cand
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

// splitTasks cuts tasks holding more than a fair share (half a worker's)
// of all candidates into ranges of document numbers, so that workers
// goroutines finish together, and orders them largest first.
func splitTasks(tasks []segTask, workers int) []segTask {
	var candidates uint64
	for _, t := range tasks {
		candidates += t.cand.GetCardinality()
	}
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
	top   topk.Heap[scoredDoc]
	total uint64
	err   error
}

// scoreTasks takes tasks in turn (next is shared by the workers) and
// scores their candidates: every word's postings summed into an
// accumulator, then the candidates that matched collected into a top-k.
func (ws *wordSearch) scoreTasks(ctx context.Context, tasks []segTask, next *atomic.Int64, limit int) (r partialResult) {
	r.top = topk.New(limit, scoredDoc.worse)
	acc := accumulators.Get().(*accumulator)
	acc.grow(ws.maxDocs)
	clean := false // every entry back to zero: it may go back to the pool
	defer func() {
		if clean {
			accumulators.Put(acc)
		}
	}()
	for {
		k := int(next.Add(1) - 1)
		if k >= len(tasks) {
			break
		}
		t := tasks[k]
		for _, w := range ws.words {
			if r.err = ctx.Err(); r.err != nil {
				return r
			}
			if r.err = acc.add(w, w.lists[t.seg], t.cand, ws.avgDocLength); r.err != nil {
				return r
			}
		}
		r.total += acc.collect(t, len(ws.words), &r.top)
	}
	clean = true
	return r
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

// add scores the postings of w in one segment that fall in cand.
func (a *accumulator) add(w wordPostings, pl segment.PostingsList, cand *roaring.Bitmap, avgDocLength float64) error {
	it, filter := candidatePostings(pl, cand)
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
		a.sum[d] += w.bm25(p.Frequency(), p.Norm(), avgDocLength)
		a.count[d]++
	}
}

// collect moves the scores of t's candidates that matched a word into top
// (Bleve's coordination factor applied: the share of the numTerms words a
// document matched), leaves their entries zero, and returns how many
// matched.
func (a *accumulator) collect(t segTask, numTerms int, top *topk.Heap[scoredDoc]) (matched uint64) {
	it := t.cand.Iterator()
	for it.HasNext() {
		d := it.Next()
		c := a.count[d]
		if c == 0 {
			continue
		}
		score := a.sum[d] * (float64(c) / float64(numTerms))
		a.sum[d], a.count[d] = 0, 0
		matched++
		top.Push(scoredDoc{score: score, seg: t.seg, doc: d})
	}
	return matched
}

// candidatePostings returns an iterator over pl's postings with their
// frequencies and norms that decodes only those in cand where the segment
// allows it (filter false); with filter true the caller must skip the
// postings outside cand itself.
func candidatePostings(pl segment.PostingsList, cand *roaring.Bitmap) (it segment.PostingsIterator, filter bool) {
	it = pl.Iterator(true, true, false, nil)
	o, ok := it.(segment.OptimizablePostingsIterator)
	if !ok {
		return it, true
	}
	bm := o.ActualBitmap()
	if bm == nil {
		return it, true
	}
	// With a smaller bitmap the iterator decodes only the postings of cand,
	// stepping over the others; when cand holds them all (a single user),
	// the untouched iterator is the faster one.
	if in := roaring.And(bm, cand); in.GetCardinality() < bm.GetCardinality() {
		o.ReplaceActual(in)
	}
	return it, false
}

// bm25 is the score of one posting of w, with frequency freq in a field of
// the given norm, the way Bleve's TermQueryScorer computes it with a boost
// of 1 (same operations in the same order, so the same bits).
func (w *wordPostings) bm25(freq uint64, norm float64, avgDocLength float64) float64 {
	var tf float64
	if freq < scorer.MaxSqrtCache {
		tf = scorer.SqrtCache[int(freq)]
	} else {
		tf = math.Sqrt(float64(freq))
	}
	fieldLength := 1 / (norm * norm)
	score := w.idf * (tf * blevesearch.BM25_k1) /
		(tf + blevesearch.BM25_k1*(1-blevesearch.BM25_b+(blevesearch.BM25_b*fieldLength/avgDocLength)))
	if w.queryWeight != 1.0 {
		score = score * w.queryWeight
	}
	return score
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

// load turns the best documents into hits: their ids and, with explain,
// their stored title and body.
func (ws *wordSearch) load(best []scoredDoc, explain bool) ([]docHit, error) {
	docs := make([]docHit, len(best))
	for k, sd := range best {
		s := ws.segs[sd.seg]
		id, err := s.DocID(uint64(sd.doc))
		if err != nil {
			return nil, err
		}
		docs[k] = docHit{id: string(id), score: sd.score}
		if !explain {
			continue
		}
		h := &docs[k]
		err = s.VisitDocument(uint64(sd.doc), func(field string, _ byte, value []byte, _ []uint64) bool {
			switch field {
			case fieldTitle:
				h.title = string(value)
			case fieldBody:
				h.body = string(value)
			}
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return docs, nil
}
