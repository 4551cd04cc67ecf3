package index

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
	segment "github.com/blevesearch/scorch_segment_api/v2"
)

// Block maxima. Zap cannot jump to a posting's frequency and norm: they
// are varints in chunks of about 1,024 postings, read from the chunk's
// start, so any evaluation over zap iterators reads every posting of a
// common word. termBlocks is a term's postings in one segment decoded once
// into a form that can be read anywhere: the postings cut into blocks of
// blockSize document numbers, each with the largest term-frequency part
// of BM25 its postings reach (its block maximum) and a mask of the
// documents that hold the term. Queries (scoreBest) then score only the
// blocks whose maxima can still reach the limit-th score, the most
// promising first, and find a document's posting in a block with a bit
// test and a count of the bits below it.
//
// A query reads only its user's documents, so blocks are cut in each
// user's view of a segment (userDocs): the user's documents numbered by
// rank, 64 of the user's own to a block, whatever the other users wrote
// between them. With U users sharing an index a query then goes through
// U times fewer blocks, each as dense in candidates as if the user were
// alone, and bounded by the user's postings only.
//
// Segments are immutable (deletions only hide documents, so a maximum over
// all of a segment's postings still bounds the live ones), so the blocks
// are built on a term's first query by a user in a segment and kept in a
// blockCache, bounded in bytes, until they are the least recently used.
// So are each segment's document lengths and chunk counts, each user's
// view of it with the user's length totals, and, in a segment with
// deletions, the user's live documents and their totals: a query on warm
// caches reads no dictionary and decodes no posting list. The BM25
// statistics are the user's own (scoring.go), and all of them come from
// these entries: N and the length totals from the views, a term's
// document frequency from its blocks (termBlocks.liveDocs).
const (
	// A block is one uint64 of a bitmap: its masks are single words.
	blockShift = 6
	blockSize  = 1 << blockShift
	blockMask  = blockSize - 1
	// blockCacheBytes bounds the memory of one index's cached blocks.
	blockCacheBytes = 128 << 20
	// denseShare: a term with postings in at least this share of a
	// segment's blocks keeps an entry for every block (read by index);
	// rarer ones keep only their blocks, found by binary search.
	denseShare = 0.25
	// boundDrift is how far the mean length may grow past the one a term's
	// maxima were computed with before they are recomputed (see scaleAt).
	boundDrift = 1.1
)

// A block's maximum covers 64 documents, and a query's bound for it sums
// its words' maxima, reached by different documents: with words that most
// documents hold, nearly every block's bound reaches θ. Each part of a
// block (partSize documents, an eighth) therefore keeps its own maximum
// too, as a share of the block's in 255ths, rounded up: a byte each, and
// the bound of a handful of documents, tight enough to pass over most of
// them (scoreBlock).
const (
	partShift = 3
	partSize  = 1 << partShift
	parts     = blockSize / partSize
	partMask  = 1<<partSize - 1
	partScale = math.MaxUint8
)

// blockInfo is what a term holds in one block.
type blockInfo struct {
	mask  uint64  // the block's documents with a posting
	first uint32  // the block's first posting
	bound float32 // the largest bm25TF of its postings at avgdl0, rounded up
}

// blockParts holds, by part of a block, the largest bm25TF of its
// postings as a share of the block's bound, in 255ths rounded up:
// bound·part[e]/255 bounds them. They are kept apart from the blockInfo,
// which every query reads for every block, and read for the blocks it
// scores.
type blockParts [parts]uint8

// termBlocks is one term's postings in one user's documents of a segment
// (userDocs), deleted ones included, in blocks of blockSize ranks.
type termBlocks struct {
	// blk holds by block (dense: ids nil) or by ids index (sparse: ids
	// lists the blocks with postings, ascending) what the term holds there.
	blk  []blockInfo
	part []blockParts // by the index of blk
	ids  []uint32
	tf   []uint8 // by posting: its term frequency, or 255: see big
	big  map[uint32]uint32
	// lens is nil when the segment's length field gives every posting's
	// document length (documentValues); otherwise it holds them by posting.
	lens   []float64
	avgdl0 float64
	// live caches liveDocs: the segment's deletions it was counted with
	// (their number, which only grows) in the high 32 bits, the count in
	// the low ones; 0 when not yet counted.
	live atomic.Uint64
}

// size is the memory tb holds, in bytes.
func (tb *termBlocks) size() int64 {
	return int64(len(tb.tf)) + int64(unsafe.Sizeof(blockInfo{})+parts)*int64(len(tb.blk)) + 4*int64(len(tb.ids)) +
		8*int64(len(tb.lens)) + 16*int64(len(tb.big)) + 128
}

// postings returns the number of the user's postings, deleted documents'
// included.
func (tb *termBlocks) postings() int { return len(tb.tf) }

// liveDocs returns the number of the user's live documents holding the
// term: its document frequency in the segment. ld is the user's live
// documents in the segment, nil when the segment has no deletions.
func (tb *termBlocks) liveDocs(ld *liveDocs) uint64 {
	if ld == nil || ld.gone == 0 {
		return uint64(len(tb.tf))
	}
	if v := tb.live.Load(); v != 0 && v>>32 == ld.deleted {
		return v & math.MaxUint32
	}
	var n uint64
	for i, bi := range tb.blk {
		b := i
		if tb.ids != nil {
			b = int(tb.ids[i])
		}
		n += uint64(bits.OnesCount64(bi.mask & ld.masks[b]))
	}
	tb.live.Store(ld.deleted<<32 | n)
	return n
}

// index returns where blk and part hold block b, false when the term has
// no posting there (sparse).
func (tb *termBlocks) index(b int) (int, bool) {
	if tb.ids == nil {
		return b, true
	}
	return slices.BinarySearch(tb.ids, uint32(b))
}

// freq returns the term frequency of posting k.
func (tb *termBlocks) freq(k uint32) float64 {
	if f := tb.tf[k]; f < math.MaxUint8 {
		return float64(f)
	}
	return float64(tb.big[k])
}

// scaleAt returns the factor that turns the maxima into bounds at mean
// length avgdl. bm25TF grows with the mean length: with A above A0, its
// length term k1·b·|d|/A is that at A0 times A0/A, so the whole
// denominator is at least A0/A of its value at A0, and bm25TF at most
// A/A0 times its value there. A smaller mean only lowers bm25TF.
func (tb *termBlocks) scaleAt(avgdl float64) float64 {
	return max(1, avgdl/tb.avgdl0)
}

// buildTermBlocks decodes term's postings in the documents of user (u,
// the user's view of seg): the posting list of the user's term
// (textTerm), which holds the user's documents only, so that the build
// decodes the user's postings of the word and no other user's, however
// many hold it in seg. avgdl is the mean length the maxima are computed
// at. A term the user's documents lack gets empty blocks. It also returns
// the postings it decoded: every posting of the list (zap decodes a
// list's frequencies and norms from the start of each chunk, so reading
// any part of a list decodes the postings before it in the chunk).
func buildTermBlocks(seg segment.Segment, user string, u *userDocs, term string, avgdl float64) (*termBlocks, int, error) {
	pl, err := postingsOf(seg, fieldText, textTerm(user, term))
	if err != nil {
		return nil, 0, err
	}
	blocks := u.blocks()
	tb := &termBlocks{ids: []uint32{}, avgdl0: avgdl}
	var maximum float64        // of the last block
	var partMax [parts]float64 // of the last block's parts
	closeBlock := func() {
		bi := &tb.blk[len(tb.blk)-1]
		bi.bound = roundUp32(maximum)
		var part blockParts
		for e, m := range partMax {
			part[e] = partShare(m, float64(bi.bound))
		}
		tb.part = append(tb.part, part)
	}
	var lens []float64
	agree := true // every length equals the length field's
	it := pl.Iterator(true, true, false, nil)
	decoded := 0
	for {
		p, err := it.Next()
		if err != nil {
			return nil, decoded, err
		}
		if p == nil {
			break
		}
		decoded++
		d := p.Number()
		if d >= seg.Count() {
			return nil, decoded, fmt.Errorf("term %q: posting of document %d beyond the segment's %d", term, d, seg.Count())
		}
		r, ok := u.rank(uint32(d))
		if !ok {
			return nil, decoded, fmt.Errorf("term %q of %q: posting of document %d, not the user's", term, user, d)
		}
		b := r >> blockShift
		k := uint32(len(tb.tf))
		if last := len(tb.ids) - 1; last < 0 || tb.ids[last] != b {
			if last >= 0 {
				closeBlock()
			}
			tb.ids = append(tb.ids, b)
			tb.blk = append(tb.blk, blockInfo{first: k})
			maximum, partMax = 0, [parts]float64{}
		}
		tb.blk[len(tb.blk)-1].mask |= 1 << (r & blockMask)
		f := p.Frequency()
		if f < math.MaxUint8 {
			tb.tf = append(tb.tf, uint8(f))
		} else {
			tb.tf = append(tb.tf, math.MaxUint8)
			if tb.big == nil {
				tb.big = make(map[uint32]uint32)
			}
			tb.big[k] = uint32(min(f, math.MaxUint32))
		}
		l := postingLength(p.Norm())
		lens = append(lens, l)
		agree = agree && float64(u.lens[r]) == l
		x := bm25TF(tb.freq(k), l, avgdl)
		maximum = max(maximum, x)
		e := (r & blockMask) >> partShift
		partMax[e] = max(partMax[e], x)
	}
	if len(tb.blk) > 0 {
		closeBlock()
	}
	tb.setForm(blocks, float64(len(tb.ids)) >= denseShare*float64(blocks))
	if !agree {
		tb.lens = lens
	}
	return tb, decoded, nil
}

// setForm keeps tb's blocks dense (an entry for each of the segment's
// blocks) or sparse (only those with postings).
func (tb *termBlocks) setForm(blocks int, dense bool) {
	switch {
	case dense && tb.ids != nil:
		all, part := make([]blockInfo, blocks), make([]blockParts, blocks)
		for i, b := range tb.ids {
			all[b], part[b] = tb.blk[i], tb.part[i]
		}
		tb.blk, tb.part, tb.ids = all, part, nil
	case !dense && tb.ids == nil:
		var blk []blockInfo
		var part []blockParts
		ids := []uint32{}
		for b, bi := range tb.blk {
			if bi.mask != 0 {
				blk, part, ids = append(blk, bi), append(part, tb.part[b]), append(ids, uint32(b))
			}
		}
		tb.blk, tb.part, tb.ids = blk, part, ids
	default:
		tb.blk, tb.part, tb.ids = slices.Clip(tb.blk), slices.Clip(tb.part), slices.Clip(tb.ids)
	}
}

// partShare returns x as a share of bound (x ≤ bound) in 255ths, rounded
// up, so that bound·share/255 is not below x (but for the rounding of
// floating point, which pruneSlack allows for).
func partShare(x, bound float64) uint8 {
	if x <= 0 || bound <= 0 {
		return 0
	}
	return uint8(min(partScale, math.Ceil(x/bound*partScale)))
}

// roundUp32 returns the smallest float32 not below x.
func roundUp32(x float64) float32 {
	f := float32(x)
	if float64(f) < x {
		f = math.Nextafter32(f, float32(math.Inf(1)))
	}
	return f
}

// userDocs is one user's view of a segment: the user's documents (deleted
// ones included) numbered by rank, in the segment's order.
type userDocs struct {
	docs []uint32 // by rank: the document's number in the segment
	lens []uint32 // by rank: the document's length
	// whole is the length totals of the user's documents, deleted ones
	// included: the user's statistics in a segment without deletions.
	whole lengthTotals
	// masks holds the user's documents by segment block, and ranks the
	// rank of each segment block's first one: rank looks a number up.
	masks []uint64
	ranks []uint32
	full  []uint64 // every rank, a word per block: see live
}

// buildUserDocs returns the view of seg of the user whose documents are
// bm; vals are seg's document values (documentValues).
func buildUserDocs(seg segment.Segment, vals *docValues, bm *roaring.Bitmap) *userDocs {
	if bm.IsEmpty() { // the user has no document here: no masks to keep
		return &userDocs{}
	}
	blocks := (int(seg.Count()) + blockMask) >> blockShift
	u := &userDocs{docs: bm.ToArray(), masks: denseMasks(bm, blocks), ranks: make([]uint32, blocks)}
	u.lens = make([]uint32, len(u.docs))
	u.whole.docs = uint64(len(u.docs))
	for r, d := range u.docs {
		u.lens[r] = vals.at(vals.lens, d)
		u.whole.total += uint64(u.lens[r])
		u.whole.chunks += uint64(vals.at(vals.chunks, d))
		u.whole.chunkTotal += uint64(vals.at(vals.chunkLens, d))
	}
	var n uint32
	for b, m := range u.masks {
		u.ranks[b] = n
		n += uint32(bits.OnesCount64(m))
	}
	u.full = make([]uint64, u.blocks())
	for b := range u.full {
		u.full[b] = ^uint64(0)
	}
	if tail := len(u.docs) & blockMask; tail != 0 {
		u.full[len(u.full)-1] = 1<<tail - 1
	}
	return u
}

// rank returns the rank of document d among the user's, false when d is
// not the user's.
func (u *userDocs) rank(d uint32) (uint32, bool) {
	b := int(d >> blockShift)
	if b >= len(u.masks) {
		return 0, false
	}
	bit := uint64(1) << (d & blockMask)
	m := u.masks[b]
	if m&bit == 0 {
		return 0, false
	}
	return u.ranks[b] + uint32(bits.OnesCount64(m&(bit-1))), true
}

// blocks returns the number of blocks the user's documents fill.
func (u *userDocs) blocks() int { return (len(u.docs) + blockMask) >> blockShift }

// rankMasks returns those of the documents of bm that are the user's, by
// rank, a word per block.
func (u *userDocs) rankMasks(bm *roaring.Bitmap) []uint64 {
	masks := make([]uint64, u.blocks())
	set := func(r uint32) { masks[r>>blockShift] |= 1 << (r & blockMask) }
	if bm.IsEmpty() {
		return masks
	}
	if int(bm.Maximum()) >= len(u.masks)<<blockShift { // not the segment's
		it := bm.Iterator()
		for it.HasNext() {
			if r, ok := u.rank(it.Next()); ok {
				set(r)
			}
		}
		return masks
	}
	for b, m := range denseMasks(bm, len(u.masks)) {
		mine := u.masks[b]
		for m &= mine; m != 0; m &= m - 1 {
			low := m & -m
			set(u.ranks[b] + uint32(bits.OnesCount64(mine&(low-1))))
		}
	}
	return masks
}

// live returns the user's documents not in deleted (nil: none), by rank,
// a word per block. The caller must not modify it.
func (u *userDocs) live(deleted *roaring.Bitmap) []uint64 {
	if deleted == nil {
		return u.full
	}
	masks := slices.Clone(u.full)
	for b, m := range u.rankMasks(deleted) {
		masks[b] &^= m
	}
	return masks
}

// size is the memory u holds, in bytes.
func (u *userDocs) size() int64 {
	return 8*int64(len(u.docs)) + 12*int64(len(u.masks)) + 8*int64(len(u.full)) + 128
}

// liveDocs is a user's live documents in a segment with deletions, and
// their length totals: the user's statistics there.
type liveDocs struct {
	deleted uint64   // the segment's deletions they were counted with
	gone    uint64   // how many of them are the user's
	masks   []uint64 // the live documents by rank, a word per block
	totals  lengthTotals
}

// buildLiveDocs returns the documents of u (the user's view of seg, whose
// document values are vals) that deleted (the segment's deletions, not
// empty) leaves.
func buildLiveDocs(u *userDocs, vals *docValues, deleted *roaring.Bitmap) *liveDocs {
	ld := &liveDocs{deleted: deleted.GetCardinality(), masks: u.live(deleted), totals: u.whole}
	for b, m := range ld.masks {
		for gone := u.full[b] &^ m; gone != 0; gone &= gone - 1 {
			r := b<<blockShift | bits.TrailingZeros64(gone)
			d := u.docs[r]
			ld.gone++
			ld.totals.docs--
			ld.totals.total -= uint64(u.lens[r])
			ld.totals.chunks -= uint64(vals.at(vals.chunks, d))
			ld.totals.chunkTotal -= uint64(vals.at(vals.chunkLens, d))
		}
	}
	if ld.gone == 0 {
		ld.masks = u.full // the deletions are other users'
	}
	return ld
}

// docValues is a segment's number fields by document (deleted ones
// included): the length BM25 reads (fieldLength) and the chunks and their
// total length (fieldChunks, fieldChunkLength); 0 where a document has
// none.
type docValues struct {
	lens, chunks, chunkLens []uint32
}

// at returns vals[d], 0 beyond it.
func (*docValues) at(vals []uint32, d uint32) uint32 {
	if int(d) < len(vals) {
		return vals[d]
	}
	return 0
}

// size is the memory v holds, in bytes.
func (v *docValues) size() int64 {
	return 4*int64(len(v.lens)+len(v.chunks)+len(v.chunkLens)) + 128
}

// documentValues reads seg's number fields by document.
func documentValues(seg segment.Segment) (*docValues, error) {
	v := &docValues{}
	var err error
	if v.lens, err = numberValues(seg, fieldLength); err != nil {
		return nil, err
	}
	if v.chunks, err = numberValues(seg, fieldChunks); err != nil {
		return nil, err
	}
	if v.chunkLens, err = numberValues(seg, fieldChunkLength); err != nil {
		return nil, err
	}
	return v, nil
}

// numberValues returns the value of each of seg's documents (deleted ones
// included) in the number field name from its dictionary; 0 where a
// document has none.
func numberValues(seg segment.Segment, name string) ([]uint32, error) {
	lens := make([]uint32, seg.Count())
	d, err := seg.Dictionary(name)
	if err != nil {
		return nil, err
	}
	err = eachTerm(d, func(term string) error {
		length, err := strconv.ParseUint(term, 10, 32)
		if err != nil {
			return nil // not written by this package
		}
		pl, err := d.PostingsList([]byte(term), nil, nil)
		if err != nil {
			return err
		}
		pi := pl.Iterator(false, false, false, nil)
		for {
			p, err := pi.Next()
			if err != nil {
				return err
			}
			if p == nil {
				return nil
			}
			if n := p.Number(); n < uint64(len(lens)) {
				lens[n] = uint32(length)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return lens, nil
}

// eachTerm calls fn with every term of d, in order, until fn returns an
// error, which it returns.
func eachTerm(d segment.TermDictionary, fn func(term string) error) error {
	it := d.AutomatonIterator(nil, nil, nil)
	for {
		e, err := it.Next()
		if err != nil || e == nil {
			return err
		}
		if err := fn(e.Term); err != nil {
			return err
		}
	}
}

// blockCache keeps the termBlocks (and the users' views and the document
// values) of an index's segments, at most blockCacheBytes of them,
// dropping the least recently used first. Concurrent queries that need
// the same blocks build them once. It is safe for concurrent use; the zero value is ready.
type blockCache struct {
	mu      sync.Mutex
	entries map[blockKey]*blockEntry
	segs    map[segment.Segment]int // entries by segment
	bytes   int64
	tick    uint64
	limit   int64           // 0: blockCacheBytes (tests set less)
	built   map[keyKind]int // entries built, by kind (tests)
	// decoded counts the postings the builds of term blocks decoded
	// (buildTermBlocks): what the first queries of words cost.
	decoded atomic.Int64
}

// blockKey names a term's blocks in a user's documents of a segment (kind
// keyTerm, name the term), the segment's document values (keyValues), a
// user's view of it (keyUser), the user's live documents in it (keyLive)
// or the positions of one of the user's pair terms in it (keyPairs, name
// the pair term; phrases.go).
type blockKey struct {
	seg  segment.Segment
	name string
	user string
	kind keyKind
}

type keyKind uint8

const (
	keyTerm keyKind = iota
	keyValues
	keyUser
	keyLive
	keyPairs
)

type blockEntry struct {
	done chan struct{} // closed when val and err are set
	val  any           // *termBlocks, *docValues, *userDocs, *liveDocs or *pairPositions
	err  error
	size int64
	used uint64 // tick of the last use
}

// get returns the cached value of key, building it with build when it is
// missing or stale says it no longer serves.
func (c *blockCache) get(key blockKey, stale func(any) bool, build func() (any, int64, error)) (any, error) {
	return c.getUsed(key, stale, 0, build)
}

// getUsed is get, but with used > 0 it leaves an entry's recency as it is
// and gives one it builds the recency used (the warmer's builds, warm.go,
// keep the recency of the blocks they copy: they do not make a word look
// asked for).
func (c *blockCache) getUsed(key blockKey, stale func(any) bool, used uint64, build func() (any, int64, error)) (any, error) {
	c.mu.Lock()
	if c.entries == nil {
		c.entries = make(map[blockKey]*blockEntry)
		c.segs = make(map[segment.Segment]int)
	}
	c.tick++
	e := c.entries[key]
	if e != nil && stale != nil {
		select {
		case <-e.done:
			if e.err == nil && stale(e.val) {
				c.remove(key, e)
				e = nil
			}
		default:
		}
	}
	if e != nil {
		if used == 0 {
			e.used = c.tick
		}
		c.mu.Unlock()
		<-e.done
		return e.val, e.err
	}
	if used == 0 {
		used = c.tick
	}
	e = &blockEntry{done: make(chan struct{}), used: used}
	c.entries[key] = e
	if c.built == nil {
		c.built = make(map[keyKind]int)
	}
	c.built[key.kind]++
	c.segs[key.seg]++
	c.mu.Unlock()

	val, size, err := build()
	c.mu.Lock()
	e.val, e.err = val, err
	if err != nil {
		c.remove(key, e)
	} else {
		e.size = size
		c.bytes += size
		c.evict()
	}
	c.mu.Unlock()
	close(e.done)
	return val, err
}

// remove drops e, if it is still key's entry. c.mu is held.
func (c *blockCache) remove(key blockKey, e *blockEntry) {
	if c.entries[key] == e {
		delete(c.entries, key)
		c.bytes -= e.size
		if c.segs[key.seg]--; c.segs[key.seg] == 0 {
			delete(c.segs, key.seg)
		}
	}
}

// evict drops entries until the cache holds at most three quarters of
// its limit, when it holds more than the limit. It is fair between users:
// each entry it drops is the least recently used of the user whose
// entries take the most bytes (the segments' document values, which serve
// everyone, count as one more user), so one user's many queries evict
// their own blocks before anyone else's. c.mu is held.
func (c *blockCache) evict() {
	limit := c.limit
	if limit == 0 {
		limit = blockCacheBytes
	}
	if c.bytes <= limit {
		return
	}
	type aged struct {
		key blockKey
		e   *blockEntry
	}
	// Each user's entries, least recently used first, and their bytes.
	type owner struct {
		entries []aged
		bytes   int64
	}
	owners := make(map[string]*owner)
	for k, e := range c.entries {
		if e.size > 0 {
			o := owners[k.user]
			if o == nil {
				o = &owner{}
				owners[k.user] = o
			}
			o.entries = append(o.entries, aged{k, e})
			o.bytes += e.size
		}
	}
	heaviest := make([]*owner, 0, len(owners))
	for _, o := range owners {
		slices.SortFunc(o.entries, func(a, b aged) int { return cmp.Compare(b.e.used, a.e.used) }) // oldest last
		heaviest = append(heaviest, o)
	}
	for c.bytes > limit/4*3 && len(heaviest) > 0 {
		top := 0
		for i, o := range heaviest {
			if o.bytes > heaviest[top].bytes {
				top = i
			}
		}
		o := heaviest[top]
		a := o.entries[len(o.entries)-1]
		o.entries = o.entries[:len(o.entries)-1]
		o.bytes -= a.e.size
		c.remove(a.key, a.e)
		if len(o.entries) == 0 {
			heaviest = slices.Delete(heaviest, top, top+1)
		}
	}
}

// stats returns the cached entries, their bytes, and the postings the
// cached termBlocks hold.
func (c *blockCache) stats() (entries int, bytes, postings int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if tb, ok := e.val.(*termBlocks); ok && e.size > 0 {
			postings += int64(len(tb.tf))
		}
	}
	return len(c.entries), c.bytes, postings
}

// values returns seg's document values (documentValues), cached.
func (c *blockCache) values(seg segment.Segment) (*docValues, error) {
	v, err := c.get(blockKey{seg: seg, kind: keyValues}, nil, func() (any, int64, error) {
		vals, err := documentValues(seg)
		if err != nil {
			return nil, 0, err
		}
		return vals, vals.size(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*docValues), nil
}

// termBlocks returns term's blocks in user's documents of seg (u), cached.
func (c *blockCache) termBlocks(seg segment.Segment, user string, u *userDocs, term string, avgdl float64) (*termBlocks, error) {
	return c.termBlocksUsed(seg, user, u, term, avgdl, 0)
}

// termBlocksUsed is termBlocks with getUsed's used.
func (c *blockCache) termBlocksUsed(seg segment.Segment, user string, u *userDocs, term string, avgdl float64, used uint64) (*termBlocks, error) {
	stale := func(v any) bool { return avgdl > v.(*termBlocks).avgdl0*boundDrift }
	v, err := c.getUsed(blockKey{seg: seg, name: term, user: user}, stale, used, func() (any, int64, error) {
		tb, decoded, err := buildTermBlocks(seg, user, u, term, avgdl)
		c.decoded.Add(int64(decoded))
		if err != nil {
			return nil, 0, err
		}
		return tb, tb.size(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*termBlocks), nil
}

// userDocs returns user's view of seg (deleted documents included),
// cached.
func (c *blockCache) userDocs(seg segment.Segment, user string) (*userDocs, error) {
	v, err := c.get(blockKey{seg: seg, user: user, kind: keyUser}, nil, func() (any, int64, error) {
		vals, err := c.values(seg)
		if err != nil {
			return nil, 0, err
		}
		bm, err := termDocs(seg, fieldUser, user)
		if err != nil {
			return nil, 0, err
		}
		u := buildUserDocs(seg, vals, bm)
		return u, u.size(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*userDocs), nil
}

// liveDocs returns the live documents of user in seg, whose view is u,
// given the segment's deletions (not empty), cached until the segment has
// lost more documents.
func (c *blockCache) liveDocs(seg segment.Segment, user string, u *userDocs, deleted *roaring.Bitmap) (*liveDocs, error) {
	n := deleted.GetCardinality()
	stale := func(v any) bool { return v.(*liveDocs).deleted != n }
	v, err := c.get(blockKey{seg: seg, user: user, kind: keyLive}, stale, func() (any, int64, error) {
		vals, err := c.values(seg)
		if err != nil {
			return nil, 0, err
		}
		ld := buildLiveDocs(u, vals, deleted)
		return ld, 8*int64(len(ld.masks)) + 128, nil
	})
	if err != nil {
		return nil, err
	}
	if ld := v.(*liveDocs); ld.deleted == n {
		return ld, nil
	}
	// Built for another snapshot's deletions while this one waited.
	vals, err := c.values(seg)
	if err != nil {
		return nil, err
	}
	return buildLiveDocs(u, vals, deleted), nil
}

// termDocs returns the documents of seg whose field holds term, deleted
// ones included, in a bitmap of their own (not the segment's memory).
func termDocs(seg segment.Segment, field, term string) (*roaring.Bitmap, error) {
	pl, err := postingsOf(seg, field, term)
	if err != nil {
		return nil, err
	}
	return postingsBitmap(pl).Clone(), nil
}

// postingsOf returns term's posting list in field of seg, deleted
// documents included.
func postingsOf(seg segment.Segment, field, term string) (segment.PostingsList, error) {
	d, err := seg.Dictionary(field)
	if err != nil {
		return nil, err
	}
	return d.PostingsList([]byte(term), nil, nil)
}

// retain drops the entries of segments other than live (those merged
// away, mostly) once the cache holds entries of many more segments than
// live: a query of an older snapshot may still need them.
func (c *blockCache) retain(live []segment.Segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.segs) <= 2*len(live)+8 {
		return
	}
	keep := make(map[segment.Segment]bool, len(live))
	for _, s := range live {
		keep[s] = true
	}
	for k, e := range c.entries {
		if !keep[k.seg] {
			select {
			case <-e.done:
				c.remove(k, e)
			default: // being built: its builder adds it
			}
		}
	}
}

// setLimit sets the cache's limit in bytes (tests set less than
// blockCacheBytes) and evicts down to it.
func (c *blockCache) setLimit(bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit = bytes
	c.evict()
}
