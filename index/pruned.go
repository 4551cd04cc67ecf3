package index

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	segment "github.com/blevesearch/scorch_segment_api/v2"

	"github.com/hindsight-dev/hindsight/topk"
)

// lookUpBlocks reads, in every segment, the user's documents and each
// term's blocks in them, all from the block cache (built on a miss), and
// adds up the user's statistics: the length totals of the user's live
// documents (userDocs.whole, or liveDocs in a segment with deletions),
// then, the term blocks being built at the user's mean length, each term's
// live documents among them (termBlocks.liveDocs).
func lookUpBlocks(cache *blockCache, segs []*scorch.SegmentSnapshot, userID string, terms []string) (*wordSearch, error) {
	ws, lds, err := lookUpViews(cache, segs, userID, terms)
	if err != nil {
		return nil, err
	}
	avgdl := ws.lengths.meanLength()
	for i, s := range segs {
		if len(ws.views[i].docs) == 0 {
			continue // none of the user's documents: nothing to read
		}
		for j := range ws.words {
			w := &ws.words[j]
			tb, err := cache.termBlocks(s.Segment(), userID, ws.views[i], w.term, avgdl)
			if err != nil {
				return nil, fmt.Errorf("blocks of %q: %w", w.term, err)
			}
			w.df += tb.liveDocs(lds[i])
			if tb.postings() > 0 {
				w.blocks[i] = tb
			}
		}
	}
	return ws, nil
}

// lookUpLists is lookUpBlocks for a search that scores a few candidates
// on the words' posting lists (scanPhraseDocs): the same views and
// statistics from the block cache, but the posting list of each of the
// user's terms (textTerm) in every segment where the user has documents,
// its live documents counted on the list, and no block built.
func lookUpLists(cache *blockCache, segs []*scorch.SegmentSnapshot, userID string, terms []string) (*wordSearch, error) {
	ws, _, err := lookUpViews(cache, segs, userID, terms)
	if err != nil {
		return nil, err
	}
	for j := range ws.words {
		ws.words[j].lists = make([]segment.PostingsList, len(segs))
	}
	for i, s := range segs {
		ws.maxDocs = max(ws.maxDocs, int(s.Segment().Count()))
		u := ws.views[i]
		if len(u.docs) == 0 {
			continue
		}
		d, err := s.Segment().Dictionary(fieldText)
		if err != nil {
			return nil, err
		}
		for j := range ws.words {
			w := &ws.words[j]
			pl, err := d.PostingsList([]byte(textTerm(userID, w.term)), s.Deleted(), nil)
			if err != nil {
				return nil, fmt.Errorf("postings of %q: %w", w.term, err)
			}
			w.lists[i] = pl
			w.df += pl.Count() // the user's live documents: the list is the user's term's
		}
	}
	return ws, nil
}

// lookUpViews reads the user's view of every segment from the block cache
// and adds up the length totals of the user's live documents; lds holds,
// by segment, the live documents of a segment with deletions (nil
// without).
func lookUpViews(cache *blockCache, segs []*scorch.SegmentSnapshot, userID string, terms []string) (ws *wordSearch, lds []*liveDocs, err error) {
	live := make([]segment.Segment, len(segs))
	for i, s := range segs {
		live[i] = s.Segment()
	}
	cache.retain(live)
	ws = &wordSearch{segs: segs, views: make([]*userDocs, len(segs)), live: make([][]uint64, len(segs)), words: make([]wordPostings, len(terms))}
	for j, t := range terms {
		ws.words[j] = wordPostings{term: t, blocks: make([]*termBlocks, len(segs))}
	}
	lds = make([]*liveDocs, len(segs))
	for i, s := range segs {
		seg := s.Segment()
		u, err := cache.userDocs(seg, userID)
		if err != nil {
			return nil, nil, err
		}
		ws.views[i] = u
		if del := s.Deleted(); del != nil && !del.IsEmpty() && len(u.docs) > 0 {
			if lds[i], err = cache.liveDocs(seg, userID, u, del); err != nil {
				return nil, nil, err
			}
			ws.live[i] = lds[i].masks
			ws.lengths.add(lds[i].totals)
		} else {
			ws.live[i] = u.full
			ws.lengths.add(u.whole)
		}
	}
	return ws, lds, nil
}

// denseMasks returns the documents of bm, a word per block of blocks
// (bm holds no document beyond them).
func denseMasks(bm *roaring.Bitmap, blocks int) []uint64 {
	masks := make([]uint64, blocks)
	bm.WriteDenseTo(masks)
	return masks
}

// Pruned evaluation (block-max MaxScore, document at a time). The
// candidates of every segment are grouped by block (blockSize of the
// user's documents, by rank); a block's bound is the sum over the words
// its candidates hold of idf times the word's block maximum there
// (termBlocks). Let θ be the limit-th best score a worker knows is reached
// (its own heap's, or the highest another worker's heap has reached:
// floor); a block whose bound is below θ cannot hold a document of the
// top. The blocks with the best bounds are
// scored first, from a queue the workers share, so that θ rises early;
// when the best bound left is below θ the query ends there. The others
// are then gone through in index order, where reading the blocks'
// postings one after the other is several times faster than jumping
// between them, and those still above θ scored (scoreBlock: those with
// many candidates a part at a time, against the parts' maxima).
// Within a block, a candidate whose own words' maxima sum below θ is
// dropped before any posting is read; the others' words are summed rarest
// first, and a document is dropped as soon as its partial sum plus the
// maxima of its words left is below θ.
//
// The comparisons are strict and the bounds carry a margin (pruneSlack)
// far above the rounding of a sum of at most MaxQueryTerms terms, so a
// document that could tie with the limit-th is kept, and every document
// of the top is summed with the same terms in the same order as in the
// exhaustive evaluation: the result is that evaluation's, bit for bit,
// ties included.
const pruneSlack = 1e-9

// blockRef is block b of segment seg, with the bound of its scores.
type blockRef struct {
	ub  float64
	seg int32
	b   int32
}

// blockSearch is what the pruned evaluation reads, by segment, and the
// blocks it goes through.
type blockSearch struct {
	terms [][]*termBlocks // by segment, by word; nil: none of the user's postings there
	coef  [][]float64     // by segment, by word: idf times termBlocks.scaleAt
	views []*userDocs     // by segment: the user's documents
	masks [][]uint64      // by segment: the candidates, a bit per document (a word per block)

	blocks []blockRef // the blocks with candidates, in index order
	lo, hi float64    // the least and greatest of their bounds
	count  bool       // count the candidates of the blocks passed over
	*arena

	next    atomic.Int64 // the next of blocks to hand out in index order
	done    atomic.Bool  // no block left can hold a document of the top
	inOrder atomic.Bool  // the probes are over: blocks go in index order

	mu sync.Mutex
	// taken marks the blocks taken from the queue. It is written under mu
	// before inOrder is set, and read without the lock only after.
	taken []bool
	queue []queued // blocks to take best bound first, best last
	// all: queue holds every block left above the θ it was filled at,
	// not only the best probes.
	all bool
}

// arena is the memory of one pruned query, kept in a pool: a query on a
// large index would otherwise allocate (and clear) a few hundred kilobytes.
type arena struct {
	blocks []blockRef
	taken  []bool
	cand   []uint64 // every segment's candidates, one after the other
}

var arenas = sync.Pool{New: func() any { return new(arena) }}

// queued is blocks[k] in the queue, with its bound.
type queued struct {
	ub float64
	k  int32
}

// probeShare is the share of the blocks scored best bound first (at least
// minProbes) before the rest are gone through in index order, unless
// fewer than one block in inOrderShare is left that θ does not rule out.
const (
	probeShare   = 1.0 / 32
	minProbes    = 32
	inOrderShare = 8
)

// scoreBest scores the candidates the plan leaves that may enter the top
// limit, on workers goroutines (0: one); nil when there are none.
func (ws *wordSearch) scoreBest(ctx context.Context, plan wordsPlan, workers, limit int) []partialResult {
	bs, total := ws.prepareBlocks(plan)
	defer arenas.Put(bs.arena)
	if len(bs.blocks) == 0 {
		return nil
	}
	workers = max(workers, 1)
	parts := make([]partialResult, workers)
	if workers == 1 {
		parts[0] = ws.scoreQueue(ctx, bs, limit) // no goroutine to start and wake
	} else {
		var wg sync.WaitGroup
		for k := range parts {
			wg.Go(func() { parts[k] = ws.scoreQueue(ctx, bs, limit) })
		}
		wg.Wait()
	}
	if ws.countAll {
		for k := range parts {
			parts[k].total = 0
		}
		parts[0].total = total
	}
	return parts
}

// prepareBlocks marks the candidates of every segment by block and lists
// the blocks with candidates and their bounds. With ws.countAll it also
// counts the candidates that hold a word (total).
func (ws *wordSearch) prepareBlocks(plan wordsPlan) (bs *blockSearch, total uint64) {
	n := len(ws.segs)
	bs = &blockSearch{terms: make([][]*termBlocks, n), coef: make([][]float64, n), views: ws.views, masks: make([][]uint64, n),
		count: ws.pruned != nil, arena: arenas.Get().(*arena)}
	blocks := 0
	for _, live := range ws.live {
		blocks += len(live)
	}
	a := bs.arena
	a.blocks, a.cand = a.blocks[:0], slices.Grow(a.cand[:0], blocks)[:blocks]
	bs.lo, bs.hi = math.Inf(1), 0
	off := 0
	for i := range ws.segs {
		cand := a.cand[off : off+len(ws.live[i])]
		off += len(cand)
		bs.terms[i] = make([]*termBlocks, len(ws.words))
		bs.coef[i] = make([]float64, len(ws.words))
		for j, w := range ws.words {
			if tb := w.blocks[i]; tb != nil {
				bs.terms[i][j], bs.coef[i][j] = tb, w.idf*tb.scaleAt(ws.avgdl)
			}
		}
		total += ws.segmentBlocks(i, plan, bs, cand)
	}
	bs.blocks = a.blocks
	a.taken = slices.Grow(a.taken[:0], len(bs.blocks))[:len(bs.blocks)]
	clear(a.taken)
	bs.taken = a.taken
	bs.queue = bs.best(max(minProbes, int(float64(len(bs.blocks))*probeShare)))
	return bs, total
}

// segmentBlocks sets cand to the documents of segment i that may match, a
// word per block: the user's live ones, narrowed by the phrase filter and
// by the plan to those holding a selective word. It appends the blocks
// with candidates to bs, each with its bound: the sum, over the words a
// candidate of the block holds, of the word's block maximum times its
// coefficient. It returns the number of candidates that hold a word (for
// ws.countAll). It goes block by block, every word's entries for the
// block read together, so that the bound is summed in a register.
func (ws *wordSearch) segmentBlocks(i int, plan wordsPlan, bs *blockSearch, cand []uint64) (total uint64) {
	a := bs.arena
	live := ws.live[i]
	clear(cand)
	if !slices.ContainsFunc(live, func(m uint64) bool { return m != 0 }) {
		return 0
	}
	var required, excluded []uint64 // the phrase filter, a word per block
	if f := ws.filter; f != nil {
		if f.required != nil {
			required = ws.views[i].rankMasks(f.required[i])
		}
		if f.excluded != nil {
			excluded = ws.views[i].rankMasks(f.excluded[i])
		}
	}
	type word struct {
		tb        *termBlocks
		coef      float64
		k         int // sparse: the first of tb.ids not below the block
		selective bool
	}
	words := make([]word, 0, len(ws.words))
	for j, w := range ws.words {
		if tb := bs.terms[i][j]; tb != nil {
			words = append(words, word{tb: tb, coef: bs.coef[i][j], selective: plan.selective[w.term]})
		}
	}
	at := func(w *word, b int) blockInfo {
		ids := w.tb.ids
		if ids == nil {
			return w.tb.blk[b]
		}
		for w.k < len(ids) && int(ids[w.k]) < b {
			w.k++
		}
		if w.k < len(ids) && int(ids[w.k]) == b {
			return w.tb.blk[w.k]
		}
		return blockInfo{}
	}
	for b, cm := range live {
		if cm == 0 {
			continue
		}
		if required != nil {
			cm &= required[b]
		}
		if excluded != nil {
			cm &^= excluded[b]
		}
		if plan.selective != nil {
			var sel uint64 // the documents holding a selective word
			for t := range words {
				if w := &words[t]; w.selective {
					sel |= at(w, b).mask
				}
			}
			if cm &= sel; cm == 0 {
				continue
			}
		}
		var ub float64
		var held uint64 // the documents holding a word
		for t := range words {
			w := &words[t]
			bi := at(w, b)
			held |= bi.mask
			x := w.coef * float64(bi.bound)
			if bi.mask&cm == 0 {
				x = 0 // a conditional move: the data would mispredict a branch
			}
			ub += x
		}
		if cm == 0 || ub <= 0 {
			continue
		}
		cand[b] = cm
		a.blocks = append(a.blocks, blockRef{ub: ub, seg: int32(i), b: int32(b)})
		bs.lo, bs.hi = min(bs.lo, ub), max(bs.hi, ub)
		total += uint64(bits.OnesCount64(held & cm))
	}
	bs.masks[i] = cand
	return total
}

// best returns the p blocks with the best bounds, best last. A histogram
// of the bounds finds the cut; only the blocks above it are sorted.
func (bs *blockSearch) best(p int) []queued {
	if len(bs.blocks) == 0 {
		return nil
	}
	const buckets = 1024
	scale := 0.0
	if bs.hi > bs.lo {
		scale = buckets / (bs.hi - bs.lo)
	}
	bucket := func(ub float64) int { return min(buckets-1, int((ub-bs.lo)*scale)) }
	var hist [buckets]int32
	for _, ref := range bs.blocks {
		hist[bucket(ref.ub)]++
	}
	cut, n := buckets-1, 0
	for ; cut > 0; cut-- {
		if n += int(hist[cut]); n >= p {
			break
		}
	}
	q := make([]queued, 0, n)
	for k, ref := range bs.blocks {
		if bucket(ref.ub) >= cut {
			q = append(q, queued{ub: ref.ub, k: int32(k)})
		}
	}
	sortQueue(q)
	return q[max(0, len(q)-p):]
}

// sortQueue orders q best last, the order the queue is taken in.
func sortQueue(q []queued) {
	slices.SortFunc(q, func(a, b queued) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
}

// before reports whether q comes out of the queue after o: a lower bound,
// or the same bound and later in the index.
func (q queued) before(o queued) bool {
	if q.ub != o.ub {
		return q.ub < o.ub
	}
	return q.k > o.k
}

// inOrderChunk is how many blocks a worker takes at a time in index order.
const inOrderChunk = 16

// cursor is a worker's share of the blocks in index order: k up to end.
type cursor struct{ k, end int }

// take returns the index of the next block to score, or false when there
// is none left that can hold a document of the top (theta is the caller's
// θ). With bs.count it counts the candidates of the blocks it passes over
// in dropped.
func (bs *blockSearch) take(theta float64, dropped *int, c *cursor) (int, bool) {
	if bs.done.Load() {
		return 0, false
	}
	if k, ok, more := bs.probe(theta, dropped); !more {
		return k, ok
	}
	for {
		if c.k == c.end {
			start := int(bs.next.Add(inOrderChunk)) - inOrderChunk
			if start >= len(bs.blocks) {
				return 0, false
			}
			c.k, c.end = start, min(start+inOrderChunk, len(bs.blocks))
		}
		k := c.k
		c.k++
		if bs.taken[k] {
			continue // scored as a probe
		}
		if theta > 0 && bs.blocks[k].ub*(1+pruneSlack) < theta {
			if bs.count {
				*dropped += bs.candidates(k)
			}
			continue
		}
		return k, true
	}
}

// probe takes the block with the best bound off the queue, which holds
// at first the best probes (more false), unless that bound is below theta:
// then every block left is, and the query is done. When the probes run
// out with few blocks left above theta, they are queued and taken best
// bound first to the end; otherwise the caller goes through the blocks in
// index order (more).
func (bs *blockSearch) probe(theta float64, dropped *int) (k int, ok, more bool) {
	if bs.inOrder.Load() {
		return 0, false, true
	}
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for {
		switch {
		case bs.done.Load():
			return 0, false, false
		case bs.inOrder.Load():
			return 0, false, true
		case len(bs.queue) == 0 && bs.all:
			bs.drop(dropped)
			return 0, false, false
		case len(bs.queue) == 0:
			if bs.queue = bs.above(theta); bs.queue == nil {
				bs.inOrder.Store(true)
				return 0, false, true
			}
			bs.all = true
			continue
		}
		last := len(bs.queue) - 1
		q := bs.queue[last]
		if theta > 0 && q.ub*(1+pruneSlack) < theta {
			bs.drop(dropped)
			return 0, false, false
		}
		bs.queue = bs.queue[:last]
		if !bs.taken[q.k] {
			bs.taken[q.k] = true
			return int(q.k), true, false
		}
	}
}

// above returns the blocks not yet taken whose bound theta does not rule
// out, best last, when they are fewer than one block in inOrderShare;
// otherwise nil. bs.mu is held.
func (bs *blockSearch) above(theta float64) []queued {
	if theta <= 0 {
		return nil
	}
	var q []queued
	for k, ref := range bs.blocks {
		if ref.ub*(1+pruneSlack) >= theta && !bs.taken[k] {
			if q = append(q, queued{ub: ref.ub, k: int32(k)}); len(q)*inOrderShare >= len(bs.blocks) {
				return nil
			}
		}
	}
	if q == nil {
		q = []queued{} // none above: not nil, which would mean too many
	}
	sortQueue(q)
	return q
}

// drop ends the query: every block not yet taken is below θ. bs.mu is
// held.
func (bs *blockSearch) drop(dropped *int) {
	if bs.count {
		for k, taken := range bs.taken {
			if !taken {
				bs.taken[k] = true
				*dropped += bs.candidates(k)
			}
		}
	}
	bs.queue = nil
	bs.done.Store(true)
}

// candidates counts the candidates of blocks[k].
func (bs *blockSearch) candidates(k int) int {
	ref := bs.blocks[k]
	return bits.OnesCount64(bs.masks[ref.seg][ref.b])
}

// theta returns the limit-th best score known to be reached, or 0.
func (ws *wordSearch) theta(top *topk.Heap[scoredDoc], limit int) float64 {
	theta := math.Float64frombits(ws.floor.Load())
	if top.Len() == limit {
		theta = max(theta, top.Items()[0].score)
	}
	return theta
}

// scoreQueue scores the blocks one at a time until none is left that can
// hold a document of the top.
func (ws *wordSearch) scoreQueue(ctx context.Context, bs *blockSearch, limit int) (r partialResult) {
	r.top = topk.New(limit, scoredDoc.worse)
	sc := ws.newBlockScratch()
	var c cursor
	raised := 0.0 // the floor this worker last raised
	for n := 0; ; n++ {
		if n%64 == 0 {
			if r.err = ctx.Err(); r.err != nil {
				return r
			}
		}
		dropped := 0
		k, ok := bs.take(ws.theta(&r.top, limit), &dropped, &c)
		if ws.pruned != nil && dropped > 0 {
			ws.pruned.Add(int64(dropped))
		}
		if !ok {
			return r
		}
		ws.scoreBlock(bs, bs.blocks[k], sc, &r, limit)
		if r.top.Len() == limit {
			if s := r.top.Items()[0].score; s > raised {
				ws.raiseFloor(s)
				raised = s
			}
		}
	}
}

// minPartCandidates is the fewest candidates of a block for which
// scoreBlock bounds them by part.
const minPartCandidates = 12

// blockScratch is a worker's scratch space for scoreBlock, by word.
type blockScratch struct {
	idf   []float64
	mask  []uint64     // the word's documents in the block
	first []uint32     // the word's first posting in the block
	unit  []float64    // the word's bound in the block, over partScale
	part  []blockParts // the word's parts' bounds, in units
	ub    []float64    // the word's bound in the part
	rest  []float64    // a document's bounds of its words from this one on (one more)
}

func (ws *wordSearch) newBlockScratch() *blockScratch {
	n := len(ws.words)
	sc := &blockScratch{idf: make([]float64, n), mask: make([]uint64, n), first: make([]uint32, n),
		unit: make([]float64, n), part: make([]blockParts, n), ub: make([]float64, n), rest: make([]float64, n+1)}
	for j, w := range ws.words {
		sc.idf[j] = w.idf
	}
	return sc
}

// scoreBlock scores the candidates of one block into res; those of a
// block with many, a part at a time: a part is passed over when the
// bounds its words reach there (blockParts) sum below θ. A candidate's
// bound is the sum of the bounds of the words it holds (the masks tell
// which, without reading a posting) in its part, or in its block; it is
// scored only while that bound, less what its words scored below theirs,
// can reach θ.
func (ws *wordSearch) scoreBlock(bs *blockSearch, ref blockRef, sc *blockScratch, res *partialResult, limit int) {
	seg, b := int(ref.seg), int(ref.b)
	terms, coef, view := bs.terms[seg], bs.coef[seg], bs.views[seg]
	idf, mask, first, unit, part, ub, rest := sc.idf, sc.mask, sc.first, sc.unit, sc.part, sc.ub, sc.rest
	avgdl := ws.avgdl
	cand := bs.masks[seg][b]
	// With few candidates, reading the parts' bounds costs about what
	// scoring the candidates would: they are bounded by the block's.
	byPart := bits.OnesCount64(cand) >= minPartCandidates
	for j, tb := range terms {
		mask[j], first[j], unit[j] = 0, 0, 0
		if tb != nil {
			if i, ok := tb.index(b); ok && tb.blk[i].mask != 0 {
				bi := tb.blk[i]
				mask[j], first[j], unit[j] = bi.mask, bi.first, coef[j]*float64(bi.bound)/partScale
				if byPart {
					part[j] = tb.part[i]
				}
			}
		}
	}
	n := len(terms)
	rest[n] = 0
	theta := ws.theta(&res.top, limit)
	base := uint32(b) << blockShift
	for left := cand; left != 0; {
		em := left // the candidates of this round: a part's, or all
		if byPart {
			e := bits.TrailingZeros64(left) >> partShift
			em &= partMask << (e << partShift)
			for j := range ub {
				ub[j] = unit[j] * float64(part[j][e])
			}
		} else {
			for j := range ub {
				ub[j] = unit[j] * partScale
			}
		}
		left &^= em
		var eub float64 // the round's bound
		var held uint64 // its candidates holding a word
		for j := range ub {
			if mask[j]&em != 0 {
				eub += ub[j]
				held |= mask[j] & em
			}
		}
		if theta > 0 && eub*(1+pruneSlack) < theta {
			if ws.pruned != nil {
				ws.pruned.Add(int64(bits.OnesCount64(held)))
			}
			continue
		}
		for m := held; m != 0; m &= m - 1 {
			low := uint(bits.TrailingZeros64(m))
			bit := uint64(1) << low
			r := base | uint32(low) // the document's rank
			for j := n - 1; j >= 0; j-- {
				rest[j] = rest[j+1]
				if mask[j]&bit != 0 {
					rest[j] += ub[j]
				}
			}
			if theta > 0 && rest[0]*(1+pruneSlack) < theta {
				if ws.pruned != nil {
					ws.pruned.Add(1)
				}
				continue
			}
			docNorm := -1.0 // bm25Norm of the document's length, once needed
			var score float64
			matched := true
			for j, tm := range mask {
				if tm&bit == 0 {
					continue
				}
				tb := terms[j]
				k := first[j] + uint32(bits.OnesCount64(tm&(bit-1)))
				var norm float64
				if tb.lens != nil {
					norm = bm25Norm(tb.lens[k], avgdl)
				} else {
					if docNorm < 0 {
						docNorm = bm25Norm(float64(view.lens[r]), avgdl)
					}
					norm = docNorm
				}
				score += idf[j] * bm25Sat(tb.freq(k), norm)
				if theta > 0 && (score+rest[j+1])*(1+pruneSlack) < theta {
					if ws.pruned != nil {
						ws.pruned.Add(1)
					}
					matched = false
					break
				}
			}
			if !matched {
				continue
			}
			res.top.Push(scoredDoc{score: score, seg: seg, doc: view.docs[r]})
			res.total++
			if res.top.Len() == limit {
				theta = max(theta, res.top.Items()[0].score)
			}
		}
	}
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

// Lazy phrase checks (phrases.go): a search for fewer than maxLazyFetch
// hits fetches lazyGrowth times as many documents holding the phrases'
// pairs while fewer than the limit hold the phrases, up to maxLazyFetch,
// then checks the positions of every document holding the pairs.
const (
	lazyGrowth   = 4
	maxLazyFetch = MaxLimit
)

// bestChecked is the pruned evaluation: the best limit documents of the
// candidates, merged from the workers, with the phrases the filter left
// unchecked checked on the best of them. The documents holding a phrase
// are among those holding its pairs and keep their scores, so the best
// that pass among the best fetched are the best of all once limit of them
// pass or the candidates run out.
func (ws *wordSearch) bestChecked(ctx context.Context, plan wordsPlan, workers, limit int) ([]scoredDoc, uint64, error) {
	fetch := limit
	for {
		ws.floor.Store(0)
		parts := ws.scoreBest(ctx, plan, workers, fetch)
		if parts == nil {
			return nil, 0, nil
		}
		best, total, err := mergeTop(parts, fetch)
		if err != nil || ws.filter == nil || len(ws.filter.unchecked) == 0 {
			return best, total, err
		}
		kept, err := ws.filter.verify(ctx, best)
		if err != nil {
			return nil, 0, err
		}
		if len(kept) >= limit || len(best) < fetch {
			return kept[:min(limit, len(kept))], total, nil
		}
		if fetch < maxLazyFetch {
			fetch = min(lazyGrowth*fetch, maxLazyFetch)
			continue
		}
		// Past maxLazyFetch: check every document holding the pairs.
		checked, err := ws.filter.checkAll(ctx)
		if err != nil {
			return nil, 0, err
		}
		ws.filter, fetch = checked, limit
	}
}
