package index

import (
	"cmp"
	"context"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/hindsight-dev/hindsight/topk"
)

// lookUpWords opens, in every segment, the user's posting list and that of
// each of the user's terms (textTerm), and computes the user's statistics
// from them and the number fields' dictionaries: the user's live
// documents and their length totals, and by term the user's live
// documents holding it.
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
		mine := postingsBitmap(ws.users[i])
		if !mine.IsEmpty() {
			lt, err := countLengths(s.Segment(), s.Deleted(), mine)
			if err != nil {
				return nil, err
			}
			ws.lengths.add(lt)
		}
		td, err := s.Segment().Dictionary(fieldText)
		if err != nil {
			return nil, err
		}
		for j := range ws.words {
			pl, err := td.PostingsList([]byte(textTerm(userID, ws.words[j].term)), s.Deleted(), nil)
			if err != nil {
				return nil, err
			}
			ws.words[j].lists[i] = pl
			ws.words[j].df += postingsBitmap(pl).AndCardinality(mine)
		}
	}
	return ws, nil
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

// Exhaustive evaluation (evaluation.exhaustive: tests compare the pruned
// evaluation with it). Every word's postings in the candidates are decoded
// through zap and summed into an accumulator, term at a time. A query's
// segments (and, for balance, ranges of documents within a large segment)
// are independent until the final top-k merge, so a query with enough
// postings to read is spread over up to maxSearchWorkers goroutines.
const (
	maxSearchWorkers = 4
	// parallelWork is the number of postings to read below which a query
	// runs on one goroutine: ~0.4 ms of work, far above the cost of
	// starting goroutines and merging their heaps.
	parallelWork = 20_000
)

// scoreAll scores every candidate of tasks on workers goroutines (0
// chooses from the work, the postings to read).
func (ws *wordSearch) scoreAll(ctx context.Context, tasks []segTask, work uint64, workers, limit int) []partialResult {
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
	return parts
}

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
			if r.err = acc.add(w, w.lists[t.seg], t.cand, ws.avgdl); r.err != nil {
				return r
			}
		}
		r.total += acc.collect(t, &r.top)
	}
	clean = true
	return r
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
