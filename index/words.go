package index

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
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
	"github.com/blevesearch/bleve/v2/search/query"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/hindsight-dev/hindsight/topk"
)

// searchWords evaluates a parsed query on the index's segments directly,
// with the scoring function of scoring.go (textbook BM25). Plain words
// are the common case; phrases and exclusions only narrow the candidates:
// Bleve's searchers find the documents that hold every phrase (and those
// that hold an excluded one) on the same snapshot (phraseFilter), and the
// words and the phrases' words are then scored like plain words.
//
// Bleve's own scorer is not used: it takes sqrt(tf), weights each term by
// idf twice (BM25 idf times idf·queryNorm), multiplies by a coordination
// factor, and divides lengths by an "average" that is the number of
// distinct terms per document (its field cardinality), about a tenth of
// the true mean on SciFact; see doc.go for what each of these cost.
//
// The evaluation goes in steps: look up each term's posting list in every
// segment (lookUpWords) and weigh the terms (weigh); per segment,
// intersect the user's documents with the plan's words and the phrase
// filter into a candidate bitmap (segmentCandidates); decode only the
// postings in it (candidatePostings) and accumulate their scores in an
// array indexed by document number (scoreTasks); keep each worker's best
// in a top-k heap and merge them (mergeTop); load the winners' ids (load).
// Ties are broken by index order.
//
// Documents that cannot enter the top limit are not scored to the end
// (see narrow): the result is the exhaustive evaluation's, to the bit.
// total is the number of the user's documents that match, or with
// pruning and without ev.countAll those scored to the end (fewer).
func searchWords(ctx context.Context, idx bleve.Index, lengths *lengthCache, userID string, pq parsedQuery, limit int, explain bool, ev evaluation) (docs []docHit, total uint64, err error) {
	adv, err := idx.Advanced()
	if err != nil {
		return nil, 0, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, 0, err
	}
	defer func() {
		if cerr := r.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return nil, 0, fmt.Errorf("index is %T, not a scorch index", r)
	}
	n, err := snap.DocCount()
	if err != nil || n == 0 {
		return nil, 0, err
	}
	terms := pq.scoredTerms()
	ws, err := lookUpWords(snap.Segments(), userID, terms)
	if err != nil {
		return nil, 0, err
	}
	var plan wordsPlan
	if len(pq.Phrases) == 0 {
		// The plan sees the plain words in query order, before weigh sorts
		// them (they come first in terms).
		dfs := make([]uint64, len(pq.Terms))
		for j := range pq.Terms {
			dfs[j] = ws.words[j].df
		}
		plan = planFromFrequencies(n, pq.Terms, dfs)
	}
	if ws.filter, err = phraseFilter(ctx, snap, idx, userID, pq); err != nil {
		return nil, 0, err
	}
	avgdl, err := lengths.avgLength(ws.segs)
	if err != nil {
		return nil, 0, err
	}
	ws.weigh(n, avgdl)
	ws.prune, ws.countAll, ws.narrowed = !ev.exhaustive && limit > 0, ev.countAll, ev.narrowed
	tasks, work := ws.candidates(plan)
	if len(tasks) == 0 {
		return nil, 0, nil
	}
	workers := ev.workers
	if workers <= 0 {
		workers = 1
		if work >= parallelWork {
			workers = min(runtime.GOMAXPROCS(0), maxSearchWorkers)
		}
	}
	if workers > 1 {
		tasks = splitTasks(tasks, workers)
	} else if ws.prune {
		tasks = probeFirst(tasks)
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
		return nil, 0, err
	}
	if docs, err = ws.load(best, explain); err != nil {
		return nil, 0, err
	}
	return docs, total, nil
}

// evaluation tunes how searchWords evaluates a query, not what it
// returns: workers is how many goroutines score it (0 chooses: one for a
// small query, else up to GOMAXPROCS; tests force more), exhaustive
// turns pruning off, for tests that compare the two, countAll makes the
// total count the matches pruning skipped too (it costs a union of the
// words' posting bitmaps), and narrowed (when not nil) counts the tasks
// pruning narrowed.
type evaluation struct {
	workers    int
	exhaustive bool
	countAll   bool
	narrowed   *atomic.Int64
}

// wordSearch is what searchWords reads from one index snapshot.
type wordSearch struct {
	segs   []*scorch.SegmentSnapshot
	users  []segment.PostingsList // the user's documents, by segment
	words  []wordPostings
	filter *docFilter // nil: no phrase or exclusion
	// maxDocs is the largest segment's document count.
	maxDocs int
	avgdl   float64 // set by weigh
	// rest[j] bounds what the words from j on can add to a score (set by
	// weigh); rest[0] bounds a whole score.
	rest     []float64
	prune    bool // skip the documents that cannot enter the top (narrow)
	countAll bool // total counts the documents pruning skipped
	narrowed *atomic.Int64
	// floor is the highest limit-th score a worker's heap has reached
	// (float64 bits; scores are positive, so their bits order like them):
	// every worker may prune below it.
	floor atomic.Uint64
}

// wordPostings is one query term: its posting list in each segment and
// its idf.
type wordPostings struct {
	term  string
	lists []segment.PostingsList // by segment
	df    uint64                 // document frequency over all segments
	idf   float64
}

// lookUpWords opens, in every segment, the user's posting list and each
// term's, and adds up the document frequencies.
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
	ws.rest = make([]float64, len(words)+1)
	for j := len(words) - 1; j >= 0; j-- {
		ws.rest[j] = ws.rest[j+1] + words[j].idf*(bm25K1+1)
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
	if ws.filter != nil {
		if cand = ws.filter.apply(i, cand); cand.IsEmpty() {
			return nil
		}
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
		if r.err = ws.scoreTask(ctx, tasks[k], acc, &r, limit); r.err != nil {
			return r
		}
		if r.top.Len() == limit {
			ws.raiseFloor(r.top.Items()[0].score)
		}
	}
	clean = true
	return r
}

// scoreTask scores one task's candidates into r. The words come rarest
// first, the order their contributions are summed in; before each word
// after the first, narrow may drop the candidates that can no longer
// enter the top limit, so that the common words' postings are decoded
// only for the documents still in the running.
func (ws *wordSearch) scoreTask(ctx context.Context, t segTask, acc *accumulator, r *partialResult, limit int) error {
	cand := t.cand
	narrowed := false
	for j, w := range ws.words {
		if err := ctx.Err(); err != nil {
			return err
		}
		if ws.prune && j > 0 {
			if kept, ok := ws.narrow(t.seg, j, cand, acc, &r.top, limit); ok {
				if !narrowed {
					if ws.countAll {
						r.total += ws.matches(t)
					}
					narrowed = true
					if ws.narrowed != nil {
						ws.narrowed.Add(1)
					}
				}
				cand = kept
			}
		}
		if err := acc.add(w, w.lists[t.seg], cand, ws.avgdl); err != nil {
			return err
		}
	}
	matched := acc.collect(segTask{seg: t.seg, cand: cand}, &r.top)
	if !narrowed || !ws.countAll {
		r.total += matched
	}
	return nil
}

// Pruning (MaxScore, term at a time). A word's contribution to a score is
// below idf·(k1+1), so once the words before j are summed, a document can
// gain at most rest[j]. Let θ be the limit-th best of the scores known to
// be reached: the partial sums so far (scores only grow) and the final
// scores of the worker's earlier tasks. A document whose partial sum plus
// rest[j] is below θ cannot enter the top limit; nor can one no word
// before j holds, once rest[j] is below θ. Only the others are scored on.
//
// The comparisons are strict and the bounds carry a margin (pruneSlack)
// far above the rounding of a sum of at most MaxQueryTerms terms, so a
// document that could tie with the limit-th is kept, and every document
// of the top is scored with every word in the same order as without
// pruning: the result is the exhaustive one, bit for bit, ties included.
const pruneSlack = 1e-9

// narrow returns the candidates of segment seg still in the running
// before word j, with the accumulator entries of the others cleared, or
// false when it cannot drop any (or would cost more than it saves).
func (ws *wordSearch) narrow(seg, j int, cand *roaring.Bitmap, acc *accumulator, top *topk.Heap[scoredDoc], limit int) (*roaring.Bitmap, bool) {
	rest := ws.rest[j] * (1 + pruneSlack)
	// θ is at most the bound of the words summed so far, unless a heap
	// (this worker's or, through floor, another's) is already above it.
	known := math.Float64frombits(ws.floor.Load())
	if top.Len() == limit {
		known = max(known, top.Items()[0].score)
	}
	if rest >= max(known, ws.rest[0]-ws.rest[j]) {
		return nil, false
	}
	// Finding θ costs two passes over the candidates: worth it only when
	// the words left have several times more postings to read.
	var work uint64
	for _, w := range ws.words[j:] {
		work += w.lists[seg].Count()
	}
	if work < 4*cand.GetCardinality() {
		return nil, false
	}
	best := topk.New(limit, func(a, b float64) bool { return a < b })
	for _, d := range top.Items() {
		best.Push(d.score)
	}
	it := cand.ManyIterator()
	buf := make([]uint32, 256)
	for {
		k := it.NextMany(buf)
		if k == 0 {
			break
		}
		for _, d := range buf[:k] {
			if acc.count[d] > 0 {
				best.Push(acc.sum[d])
			}
		}
	}
	theta := known
	if best.Len() == limit {
		theta = max(theta, best.Items()[0])
	}
	if theta <= 0 || rest >= theta {
		return nil, false
	}
	var kept []uint32
	it = cand.ManyIterator()
	for {
		k := it.NextMany(buf)
		if k == 0 {
			break
		}
		for _, d := range buf[:k] {
			if acc.count[d] == 0 {
				continue
			}
			if (acc.sum[d]+ws.rest[j])*(1+pruneSlack) < theta {
				acc.sum[d], acc.count[d] = 0, 0
				continue
			}
			kept = append(kept, d)
		}
	}
	return roaring.BitmapOf(kept...), true
}

// raiseFloor makes score the floor if it is higher.
func (ws *wordSearch) raiseFloor(score float64) {
	for {
		old := ws.floor.Load()
		if score <= math.Float64frombits(old) || ws.floor.CompareAndSwap(old, math.Float64bits(score)) {
			return
		}
	}
}

// probeFirst cuts the first eighth of the candidates off the largest task
// and scores it first, on its own: its top gives the pruning of the rest a
// floor (narrow) from the start. Zap walks a posting list from its start
// to reach a range, so the cut costs the rest only that eighth again.
func probeFirst(tasks []segTask) []segTask {
	if len(tasks) == 0 {
		return tasks
	}
	big := 0
	for k, t := range tasks {
		if t.cand.GetCardinality() > tasks[big].cand.GetCardinality() {
			big = k
		}
	}
	t := tasks[big]
	n := t.cand.GetCardinality()
	if n < 4096 { // a small query: the cut would cost more than it saves
		return tasks
	}
	x, err := t.cand.Select(uint32(n / 8))
	if err != nil {
		return tasks
	}
	probe, rest := t.cand.Clone(), t.cand.Clone()
	probe.RemoveRange(uint64(x), uint64(math.MaxUint32)+1)
	rest.RemoveRange(0, uint64(x))
	out := []segTask{{seg: t.seg, cand: probe}, {seg: t.seg, cand: rest}}
	for k, o := range tasks {
		if k != big {
			out = append(out, o)
		}
	}
	return out
}

// matches counts the candidates of t that hold any of the words.
func (ws *wordSearch) matches(t segTask) uint64 {
	lists := make([]*roaring.Bitmap, len(ws.words))
	for k, w := range ws.words {
		lists[k] = postingsBitmap(w.lists[t.seg])
	}
	return roaring.FastOr(lists...).AndCardinality(t.cand)
}

// accumulator holds the partial scores of one segment's documents, by
// document number; every entry is zero between uses.
type accumulator struct {
	sum   []float64
	count []uint8 // terms matched (0: not a match); MaxQueryTerms fits
}

var accumulators = sync.Pool{New: func() any { return new(accumulator) }}

func (a *accumulator) grow(n int) {
	if len(a.sum) < n {
		a.sum = make([]float64, n)
		a.count = make([]uint8, n)
	}
}

// add scores the postings of w in one segment that fall in cand.
func (a *accumulator) add(w wordPostings, pl segment.PostingsList, cand *roaring.Bitmap, avgdl float64) error {
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
		a.sum[d] += w.idf * bm25TF(float64(p.Frequency()), postingLength(p.Norm()), avgdl)
		a.count[d]++
	}
}

// collect moves the scores of t's candidates that matched a term into
// top, leaves their entries zero, and returns how many matched.
func (a *accumulator) collect(t segTask, top *topk.Heap[scoredDoc]) (matched uint64) {
	it := t.cand.Iterator()
	for it.HasNext() {
		d := it.Next()
		if a.count[d] == 0 {
			continue
		}
		score := a.sum[d]
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

// postingLength is the document length a posting's norm encodes. Zap
// stores the length itself and hands out 1/sqrt(length) as a float32;
// rounding undoes the float32's error (exact far beyond any session's
// length).
func postingLength(norm float64) float64 {
	return math.Round(1 / (norm * norm))
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

// docFilter is what a query's phrases and exclusions leave of each
// segment's documents: those in every phrase (required, when there are
// phrases) and not in any excluded one (excluded).
type docFilter struct {
	required []*roaring.Bitmap // by segment; nil slice: no phrase
	excluded []*roaring.Bitmap // by segment; nil slice: no exclusion
}

// apply narrows segment i's candidates; cand is not modified.
func (f *docFilter) apply(i int, cand *roaring.Bitmap) *roaring.Bitmap {
	if f.required != nil {
		cand = roaring.And(cand, f.required[i])
	}
	if f.excluded != nil {
		cand = roaring.AndNot(cand, f.excluded[i])
	}
	return cand
}

// phraseFilter finds, with Bleve's searchers on snap (unscored), the
// user's documents that hold every phrase of pq and those that hold any
// excluded phrase; nil when pq has neither.
func phraseFilter(ctx context.Context, snap *scorch.IndexSnapshot, idx bleve.Index, userID string, pq parsedQuery) (*docFilter, error) {
	if len(pq.Phrases) == 0 && len(pq.Exclude) == 0 {
		return nil, nil
	}
	f := &docFilter{}
	var err error
	if len(pq.Phrases) > 0 {
		qs := []query.Query{termQuery(fieldUser, userID)}
		for _, ph := range pq.Phrases {
			qs = append(qs, ph.query(fieldText))
		}
		if f.required, err = matching(ctx, snap, idx, query.NewConjunctionQuery(qs)); err != nil {
			return nil, err
		}
	}
	if len(pq.Exclude) > 0 {
		qs := make([]query.Query, len(pq.Exclude))
		for i, ph := range pq.Exclude {
			qs[i] = ph.query(fieldText)
		}
		q := query.NewConjunctionQuery([]query.Query{termQuery(fieldUser, userID), query.NewDisjunctionQuery(qs)})
		if f.excluded, err = matching(ctx, snap, idx, q); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// matching returns the documents of snap that match q, as a bitmap of
// document numbers per segment.
func matching(ctx context.Context, snap *scorch.IndexSnapshot, idx bleve.Index, q query.Query) ([]*roaring.Bitmap, error) {
	segs := snap.Segments()
	out := make([]*roaring.Bitmap, len(segs))
	offsets := make([]uint64, len(segs)) // first global document number of each segment
	var running uint64
	for i, s := range segs {
		out[i] = roaring.New()
		offsets[i] = running
		running += s.Segment().Count()
	}
	s, err := q.Searcher(ctx, snap, idx.Mapping(), blevesearch.SearcherOptions{Score: "none"})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	sctx := &blevesearch.SearchContext{DocumentMatchPool: blevesearch.NewDocumentMatchPool(s.DocumentMatchPoolSize(), 0)}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		dm, err := s.Next(sctx)
		if err != nil {
			return nil, err
		}
		if dm == nil {
			return out, nil
		}
		if len(dm.IndexInternalID) != 8 { // scorch's encoding: the number, big-endian
			return nil, fmt.Errorf("unexpected internal document id %x", dm.IndexInternalID)
		}
		num := binary.BigEndian.Uint64(dm.IndexInternalID)
		i := sort.Search(len(offsets), func(x int) bool { return offsets[x] > num }) - 1
		out[i].Add(uint32(num - offsets[i]))
		sctx.DocumentMatchPool.Put(dm)
	}
}
